"""Asynchronous against synchronous batches: how busy ``q`` workers are kept (issue 30's done-means check).

The default ``ShaplEIG(batch_size=q)`` on a p-player game (a sum of unanimity games) whose every
evaluation sleeps a lognormal time (median ``--median`` s, sd of log ``--sigma``), evaluated by
``ExecutorEvaluator(ThreadPoolExecutor(q))``, budget ``--budget``, once with ``batch_mode="async"``
(the default for a concurrent evaluator) and once with ``batch_mode="sync"`` (``--modes seq``: the
sequential run, batch_size 1, as the accuracy reference). Reported per seed:
wall seconds of the whole run (design, acquisitions, final refit), the workers' busy seconds (sum of
the game calls' seconds), the utilisation busy / (q x wall), the selection seconds of the driver and
the MSE against the exact Shapley values.

    OMP_NUM_THREADS=1 python scripts/bench/bench_async.py                      # p = 8, budget 64, q = 8
    OMP_NUM_THREADS=1 python scripts/bench/bench_async.py --seeds 0 1 2 --modes async
    python scripts/bench/bench_async.py --simulate 2000 --q 16 --budget 128 --median 1   # the ideal alone
"""

from __future__ import annotations

import argparse
import heapq
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shapleig import ExecutorEvaluator, ShaplEIG  # noqa: E402
from shapleig_tasks.synthetic import SumOfUnanimityGame  # noqa: E402


class LognormalSleepGame:
    """``inner`` whose every coalition sleeps a lognormal time (``median`` seconds, ``sigma`` the sd
    of its log) before returning; the time is a function of the coalition and ``seed``, so every
    run sees the same times. Module-level: picklable for process workers."""

    def __init__(self, inner, median: float, sigma: float, seed: int = 0):
        self.inner = inner
        self.median, self.sigma, self.seed = float(median), float(sigma), int(seed)
        self.n_players = inner.n_players

    def seconds(self, row: np.ndarray) -> float:
        code = int.from_bytes(np.packbits(np.asarray(row, dtype=bool)).tobytes(), "little")
        rng = np.random.default_rng([self.seed, code % (2**63)])
        return float(self.median * np.exp(self.sigma * rng.standard_normal()))

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        time.sleep(sum(self.seconds(row) for row in coalitions))
        return self.inner(coalitions)


def list_schedule_utilisation(durations, workers: int) -> float:
    """Busy time / (workers x makespan) when ``durations``, in this order, each go to the first free worker."""
    free = [0.0] * workers
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + float(d))
    return float(sum(durations)) / (workers * max(free))


def simulated_ideal_utilisation(workers: int, evaluations: int, median: float, sigma: float, reps: int,
                                seed: int = 0) -> float:
    """The mean utilisation of a zero-overhead scheduler over ``reps`` fresh lognormal budgets.

    What any driver could get at best with a fixed budget: the straggling last evaluations leave
    workers idle (issue 30's utilisation bars are read against it).
    """
    rng = np.random.default_rng(seed)
    return float(np.mean([list_schedule_utilisation(median * np.exp(sigma * rng.standard_normal(evaluations)),
                                                    workers) for _ in range(reps)]))


class BusyEvaluator(ExecutorEvaluator):
    """``ExecutorEvaluator`` adding up the game seconds of every attempt (``busy``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.busy = 0.0
        self.durations: list[float] = []
        self.last_done = float("nan")  # perf_counter() when the latest evaluation returned
        self._lock = threading.Lock()

    def ideal_utilisation(self, workers: int, orders: int = 200) -> float:
        """Utilisation of a driver with no overhead: these durations list-scheduled on ``workers``
        (each to the first free worker), averaged over ``orders`` random orders (the arrival order
        would put the long ones last). The straggler tail of a fixed budget bounds it below 1."""
        if not self.durations:
            return float("nan")
        rng = np.random.default_rng(0)
        return float(np.mean([list_schedule_utilisation(rng.permutation(self.durations), workers)
                              for _ in range(orders)]))

    def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
        def counted(record):
            with self._lock:
                self.busy += record.seconds
                self.durations.append(record.seconds)
                self.last_done = time.perf_counter()
            if on_result is not None:
                on_result(record)

        return super().evaluate(game, coalitions, max_retries=max_retries, on_result=counted)


def run(p: int, budget: int, q: int, mode: str, seed: int, median: float, sigma: float) -> dict:
    inner = SumOfUnanimityGame(p, n_terms=20, seed=seed)
    game = LognormalSleepGame(inner, median, sigma, seed=seed)
    with ThreadPoolExecutor(q) as pool:
        evaluator = BusyEvaluator(pool)
        start = time.perf_counter()
        estimator = ShaplEIG() if mode == "seq" else ShaplEIG.from_options(batch_size=q, batch_mode=mode)
        est = estimator.estimate(game, budget, seed=seed, evaluator=evaluator)
        wall = time.perf_counter() - start
    mse = float(np.mean((est.values - inner.exact_values()) ** 2))
    held = evaluator.last_done - start  # the workers are needed until the last evaluation returns
    return {"wall": wall, "busy": evaluator.busy, "util": evaluator.busy / (q * wall),
            "held": held, "util_held": evaluator.busy / (q * held), "after": wall - held,
            "ideal": evaluator.ideal_utilisation(q),
            "selection": est.info["selection_seconds"], "mse": mse,
            "mode": est.info.get("batch_mode_used", "sync" if mode == "sync" else "seq")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--players", type=int, default=8)
    ap.add_argument("--budget", type=int, default=64)
    ap.add_argument("--q", type=int, default=8)
    ap.add_argument("--median", type=float, default=0.2)
    ap.add_argument("--sigma", type=float, default=0.7)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--modes", nargs="+", default=["async", "sync"], choices=["async", "sync", "seq"],
                    help="seq: batch_size 1 (one evaluation at a time: the accuracy reference)")
    ap.add_argument("--simulate", type=int, default=0, metavar="REPS",
                    help="only print the zero-overhead scheduler's mean utilisation over REPS simulated budgets "
                         "(q workers, budget evaluations, fresh lognormal times)")
    ap.add_argument("--overlap", nargs="?", const="prior", default=None, choices=["prior", "pool"],
                    help="async with the design overlap (AsyncDesignLoop.overlap_design: early picks under the "
                         "prior, or 'pool': the pool's next coalitions)")
    args = ap.parse_args()
    if args.simulate:
        ideal = simulated_ideal_utilisation(args.q, args.budget, args.median, args.sigma, args.simulate)
        print(f"zero-overhead list schedule, {args.q} workers x {args.budget} evaluations, {args.simulate} draws: "
              f"mean utilisation {ideal:.3f}")
        return 0
    if args.overlap:
        from shapleig.design.async_loop import AsyncDesignLoop

        AsyncDesignLoop.overlap_design = args.overlap
    print(f"p = {args.players}, budget {args.budget}, q = {args.q} thread workers, lognormal sleep "
          f"(median {args.median} s, sd of log {args.sigma})")
    print("util: busy / (q x wall); ideal: the same evaluation times list-scheduled in random order with no "
          "driver overhead;\nheld s: from the start to the last evaluation's return (the workers are needed that "
          "long), util held = busy / (q x held s); after s: the final refit and read-out after it")
    print(f"{'mode':>6} {'seed':>5} {'wall s':>8} {'busy s':>8} {'util':>6} {'ideal':>6} {'select s':>9} "
          f"{'mse':>10} {'held s':>7} {'util held':>9} {'after s':>8}")
    for mode in args.modes:
        utils, ideals, mses, helds = [], [], [], []
        for seed in args.seeds:
            r = run(args.players, args.budget, args.q, mode, seed, args.median, args.sigma)
            utils.append(r["util"])
            ideals.append(r["ideal"])
            mses.append(r["mse"])
            helds.append(r["util_held"])
            print(f"{r['mode']:>6} {seed:>5} {r['wall']:>8.2f} {r['busy']:>8.2f} {r['util']:>6.2f} {r['ideal']:>6.2f} "
                  f"{r['selection']:>9.2f} {r['mse']:>10.2e} {r['held']:>7.2f} {r['util_held']:>9.2f} "
                  f"{r['after']:>8.2f}", flush=True)
        print(f"{mode:>6}  mean utilisation {np.mean(utils):.2f} (ideal {np.mean(ideals):.2f}; while the workers are "
              f"held {np.mean(helds):.2f}, {np.mean(helds) / np.mean(ideals):.2f}x the ideal); "
              f"gm MSE {np.exp(np.mean(np.log(mses))):.3e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
