"""Batches on a Dask cluster, end to end: wall time against q, and the accuracy cost of q > 1.

1. Wall time: a table game (first ViT-9 table by default) that sleeps ``--sleep`` seconds per
   evaluation, evaluated through ``client.get_executor()`` of a ``LocalCluster`` with ``--workers``
   single-threaded workers (threads, not processes: the sleep releases the GIL and the game needs
   no pickling), for q in ``--q`` (q coalitions selected per step, exact greedy batch under frozen
   hyperparameters). Reports seconds until the budget was spent, of which game and selection.
2. Accuracy at equal budget: the same configuration without sleep on the first ``--tables`` tables
   of the suite, seeds 0..``--seeds``-1: mean squared error of the final estimate against the exact
   Shapley values, and the geometric mean of the per-(table, seed) MSE ratio q / q=1.

The ShaplEIG configuration is ``--method-options`` (default: shared lengthscale, adaptive refits,
numpy fit engine).

    OMP_NUM_THREADS=1 python scripts/bench/bench_dask.py                    # ~5 min
    OMP_NUM_THREADS=1 python scripts/bench/bench_dask.py --q 1 4 --sleep 0.5 --budget 8p
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_parallel import SleepyGame  # noqa: E402

from shapleig import DesignLoop, ExecutorEvaluator  # noqa: E402
from shapleig_tasks.catalog import resolve_task  # noqa: E402
from shapleig_tasks.harness import resolve_budget  # noqa: E402
from shapleig_tasks.methods import parse_options  # noqa: E402


def run(game, budget: int, q: int, seed: int, options: dict, evaluator=None):
    loop = DesignLoop(game, budget, batch_size=q, seed=seed, progress=False, evaluator=evaluator, **options)
    start = time.perf_counter()
    est = loop.run()
    return est, time.perf_counter() - start, loop.timings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="vit-9")
    ap.add_argument("--budget", default="8p")
    ap.add_argument("--q", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--tables", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--method-options", default="ard=false,refit=adaptive,fit_engine=numpy")
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    options = parse_options(args.method_options)
    tasks = resolve_task(f"{args.suite}/first={args.tables}")
    games = [task.game() for task in tasks]
    p = games[0].n_players
    budget = resolve_budget(args.budget, p)
    print(f"{args.suite}: p = {p}, budget = {budget}, options {options}; LocalCluster {args.workers} workers "
          f"x 1 thread; sleep {args.sleep} s per evaluation")

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        evaluator = ExecutorEvaluator(client.get_executor())
        print(f"\n{'q':>3} {'wall s':>8} {'game s':>8} {'selection s':>11} {'speed-up':>8}")
        base = None
        for q in args.q:
            _, wall, timings = run(SleepyGame(games[0], args.sleep), budget, q, 0, options, evaluator)
            base = wall if base is None else base
            print(f"{q:>3} {wall:>8.1f} {timings['game_s']:>8.1f} {timings['selection_s']:>11.2f} "
                  f"{base / wall:>7.2f}x", flush=True)

    print(f"\nMSE at {budget} evaluations ({len(games)} tables x {args.seeds} seeds, no sleep)")
    mse = {q: [] for q in args.q}
    for game in games:
        truth = game.exact_values()
        for seed in range(args.seeds):
            for q in args.q:
                est, _, _ = run(game, budget, q, seed, options)
                mse[q].append(float(np.mean((est.values - truth) ** 2)))
    ref = np.array(mse[args.q[0]])
    print(f"{'q':>3} {'mean MSE':>10} {'gm MSE':>10} {'gm ratio to q=' + str(args.q[0]):>16}")
    for q in args.q:
        a = np.array(mse[q])
        print(f"{q:>3} {a.mean():>10.3e} {np.exp(np.log(a).mean()):>10.3e} {np.exp(np.log(a / ref).mean()):>16.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
