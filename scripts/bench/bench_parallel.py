"""Batch evaluation benchmark: q = 4 on 4 workers versus q = 1, on a game that sleeps per evaluation.

Two measurements:

1. Wall time to reach the budget (default 64 evaluations) with a game that sleeps ``--sleep``
   seconds (default 1 s) per coalition: q = 1 evaluates in-process one coalition at a time;
   q = 4 selects 4 coalitions per step (exact greedy batch under frozen hyperparameters) and
   evaluates them on a 4-process pool. Target: q = 4 takes at most 0.4x the time of q = 1.
2. Accuracy at equal evaluations: mean squared error of the estimate against the exact Shapley
   values, over ``--mse-seeds`` seeds, at the evaluation counts both runs pass through. The sleep
   does not change any value and the archive is kept in request order, so these runs use the same
   game without the sleep (the timed seeds are checked to give identical estimates). Target:
   q = 4's MSE at the full budget within 20% of q = 1's.

Game: the sum-of-unanimity game (svarm variant, p = 8, 20 terms, seeded), exact values known.
Usage: ``python scripts/bench/bench_parallel.py [--sleep 1.0] [--budget 64] [--mse-seeds 40]`` (about 10 min).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shapleig import DesignLoop, ExecutorEvaluator, SerialEvaluator  # noqa: E402
from shapleig_tasks.synthetic import SumOfUnanimityGame  # noqa: E402


class SleepyGame:
    """``inner`` with ``seconds`` of sleep per coalition: a stand-in for an expensive game."""

    def __init__(self, inner, seconds: float):
        self.inner = inner
        self.seconds = float(seconds)
        self.n_players = inner.n_players

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        time.sleep(self.seconds * coalitions.shape[0])
        return self.inner(coalitions)


def make_game(p: int, seed: int) -> SumOfUnanimityGame:
    return SumOfUnanimityGame(p, n_terms=20, seed=seed)


def run(game, budget: int, q: int, seed: int, refit: str, evaluator) -> tuple[object, float, float]:
    """Run the loop; return (estimate, seconds until the budget was spent, total seconds)."""
    start = time.perf_counter()
    reached: list[float] = []

    def when_spent(loop: DesignLoop) -> None:
        if loop.evaluations >= budget and not reached:
            reached.append(time.perf_counter() - start)

    loop = DesignLoop(game, budget, batch_size=q, seed=seed, refit=refit, progress=False,
                      evaluator=evaluator, callbacks=[when_spent])
    est = loop.run()
    return est, reached[0], time.perf_counter() - start


def mse_at(est, truth: np.ndarray, n: int) -> float:
    vals = dict(est.trace)
    return float(np.mean((vals[n] - truth) ** 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", type=int, default=8)
    ap.add_argument("--budget", type=int, default=64)
    ap.add_argument("--sleep", type=float, default=1.0, help="seconds per evaluation in the timed runs")
    ap.add_argument("--q", type=int, default=4)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--refit", default="every")
    ap.add_argument("--timed-seeds", type=int, default=1)
    ap.add_argument("--mse-seeds", type=int, default=40)
    args = ap.parse_args()
    p, budget, q = args.players, args.budget, args.q
    print(f"p = {p}, budget = {budget}, q = {q} on {args.workers} processes vs q = 1 in-process, "
          f"refit = {args.refit}, sleep = {args.sleep} s per evaluation")

    ctx = multiprocessing.get_context("spawn")  # torch is loaded here; do not fork it
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool:
        pool.submit(int, 0).result()  # start the workers before timing
        evaluator = ExecutorEvaluator(pool)

        print("\n-- wall time (game sleeps) --")
        timed = {}
        for seed in range(args.timed_seeds):
            game = SleepyGame(make_game(p, seed), args.sleep)
            e1, t1, w1 = run(game, budget, 1, seed, args.refit, SerialEvaluator(chunk_size=1))
            eq, tq, wq = run(game, budget, q, seed, args.refit, evaluator)
            timed[seed] = (e1, eq)
            print(f"seed {seed}: q = 1 reached {budget} evaluations in {t1:7.1f} s (run {w1:.1f} s); "
                  f"q = {q}: {tq:6.1f} s (run {wq:.1f} s); ratio {tq / t1:.3f} "
                  f"(target <= 0.4: {'PASS' if tq / t1 <= 0.4 else 'FAIL'})")

        print("\n-- MSE at equal evaluations (same games without the sleep) --")
        counts = trace_counts(p, budget, q)
        mse = {1: {n: [] for n in counts}, q: {n: [] for n in counts}}
        for seed in range(args.mse_seeds):
            game = make_game(p, seed)
            truth = game.exact_values()
            e1, _, _ = run(game, budget, 1, seed, args.refit, None)
            eq, _, _ = run(game, budget, q, seed, args.refit, evaluator)
            if seed in timed:
                same = all(np.array_equal(a.values, b.values) for a, b in zip(timed[seed], (e1, eq)))
                print(f"seed {seed}: timed (sleeping) runs give identical estimates: {same}")
            for n in counts:
                mse[1][n].append(mse_at(e1, truth, n))
                mse[q][n].append(mse_at(eq, truth, n))
        print(f"{'evaluations':>12} {'MSE q=1':>12} {'MSE q=' + str(q):>12} {'ratio':>8}   (mean over {args.mse_seeds} seeds; ± standard error)")
        for n in counts:
            a, b = np.array(mse[1][n]), np.array(mse[q][n])
            se = lambda x: x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else float("nan")  # noqa: E731
            print(f"{n:>12} {a.mean():>8.4g}±{se(a):<7.2g} {b.mean():>8.4g}±{se(b):<7.2g} {b.mean() / a.mean():>6.3f}")
        ratio = np.mean(mse[q][budget]) / np.mean(mse[1][budget])
        # Paired by seed (same game, same initial design): the per-seed log ratio is far less
        # noisy than a ratio of means, which a single hard seed can dominate.
        logr = np.log(np.array(mse[q][budget]) / np.array(mse[1][budget]))
        se = logr.std(ddof=1) / np.sqrt(len(logr)) if len(logr) > 1 else float("nan")
        print(f"\nMSE ratio q={q}/q=1 at {budget} evaluations: ratio of means {ratio:.3f} "
              f"(target <= 1.2: {'PASS' if ratio <= 1.2 else 'FAIL'}); geometric mean of per-seed "
              f"ratios {np.exp(logr.mean()):.3f} (95% CI {np.exp(logr.mean() - 1.96 * se):.3f} to "
              f"{np.exp(logr.mean() + 1.96 * se):.3f}); q={q} better on "
              f"{int((logr < 0).sum())} of {len(logr)} seeds")


def trace_counts(p: int, budget: int, q: int) -> list[int]:
    """Evaluation counts at which a q-batch run records a trace entry (q = 1 records all of them)."""
    counts = [p + 1]
    while counts[-1] < budget:
        counts.append(min(counts[-1] + q, budget))
    return counts


if __name__ == "__main__":
    main()
