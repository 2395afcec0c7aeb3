"""Asynchronous batches on a Dask cluster, end to end (issue 30): busy workers, wall time, accuracy.

The **default** ``ShaplEIG`` on the first ``--tables`` tables of ``--suite`` (ViT-16 by default),
seeds 0..``--seeds``-1, budget ``--budget`` (8p), evaluated through ``client.get_executor()`` of a
``LocalCluster`` with ``--workers`` single-threaded workers (threads: the game sleeps, so two cores
suffice, and the table game needs no pickling). Every evaluation sleeps a lognormal time (median
``--median`` s, sd of log ``--sigma``; a function of the coalition, so every mode sees the same
times). Modes (``--modes``):

- ``async``: ``batch_size = workers``, asynchronous (the default for a concurrent evaluator);
- ``sync``: ``batch_size = workers``, ``batch_mode="sync"`` (each batch awaited whole);
- ``seq``: ``batch_size = 1`` without sleep, in process: the accuracy reference.

Per mode: mean utilisation (workers' busy seconds / (workers x wall)) beside the "ideal" one (the same
evaluation times list-scheduled in random order with no driver overhead: the straggler tail of a fixed budget
bounds it), the mean "wall ratio" of wall time to
(total evaluation time / workers), and the geometric mean over (table, seed) of the MSE ratio to
``seq`` (gm-MSE ratio). Issue 30's targets for ``async``: utilisation >= 0.90, wall ratio <= 1.15,
gm-MSE ratio <= 1.1.

    OMP_NUM_THREADS=1 python scripts/bench/bench_dask.py                        # 3 tables x 3 seeds, minutes
    OMP_NUM_THREADS=1 python scripts/bench/bench_dask.py --tables 1 --seeds 1 --median 0.2
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

from bench_async import BusyEvaluator, LognormalSleepGame  # noqa: E402

from shapleig import ShaplEIG  # noqa: E402
from shapleig_tasks.catalog import resolve_task  # noqa: E402
from shapleig_tasks.harness import resolve_budget  # noqa: E402


def run(game, budget: int, mode: str, seed: int, workers: int, executor=None, median: float = 1.0,
        sigma: float = 0.7) -> dict:
    """One run; for ``async``/``sync`` on the cluster's executor with sleeping evaluations."""
    if mode == "seq":
        start = time.perf_counter()
        est = ShaplEIG().estimate(game, budget, seed=seed)
        return {"est": est, "wall": time.perf_counter() - start}
    sleepy = LognormalSleepGame(game, median, sigma, seed=seed)
    evaluator = BusyEvaluator(executor)
    start = time.perf_counter()
    est = ShaplEIG.from_options(batch_size=workers, batch_mode=mode).estimate(sleepy, budget, seed=seed, evaluator=evaluator)
    wall = time.perf_counter() - start
    return {"est": est, "wall": wall, "busy": evaluator.busy, "util": evaluator.busy / (workers * wall),
            "ideal": evaluator.ideal_utilisation(workers),
            "wall_ratio": wall / (evaluator.busy / workers)}  # wall / (total evaluation time / workers)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="vit-16")
    ap.add_argument("--budget", default="8p")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--median", type=float, default=1.0)
    ap.add_argument("--sigma", type=float, default=0.7)
    ap.add_argument("--tables", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--modes", nargs="+", default=["async", "sync"], choices=["async", "sync"],
                    help="cluster modes (seq, the reference, always runs)")
    ap.add_argument("--no-overlap", action="store_true",
                    help="async without the design overlap (AsyncDesignLoop.overlap_design = False)")
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    if args.no_overlap:
        from shapleig.design.async_loop import AsyncDesignLoop

        AsyncDesignLoop.overlap_design = False

    tasks = resolve_task(f"{args.suite}/first={args.tables}")
    games = [task.game() for task in tasks]
    p = games[0].n_players
    budget = resolve_budget(args.budget, p)
    print(f"{args.suite}: p = {p}, budget {budget}, default ShaplEIG; LocalCluster {args.workers} workers x 1 "
          f"thread; lognormal evaluation times (median {args.median} s, sd of log {args.sigma})")
    mse: dict[str, list[float]] = {m: [] for m in ["seq", *args.modes]}
    stats: dict[str, list[dict]] = {m: [] for m in args.modes}
    print("util: busy / (workers x wall); ideal: the same evaluation times list-scheduled in random order with no "
          "driver overhead")
    print(f"\n{'mode':>6} {'table':>5} {'seed':>4} {'wall s':>8} {'busy s':>8} {'util':>6} {'ideal':>6} "
          f"{'wall ratio':>10} {'mse':>10}")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = client.get_executor()
        for i, game in enumerate(games):
            truth = game.exact_values()
            for seed in range(args.seeds):
                ref = run(game, budget, "seq", seed, args.workers)
                mse["seq"].append(float(np.mean((ref["est"].values - truth) ** 2)))
                for mode in args.modes:
                    r = run(game, budget, mode, seed, args.workers, executor, args.median, args.sigma)
                    mse[mode].append(float(np.mean((r["est"].values - truth) ** 2)))
                    stats[mode].append(r)
                    print(f"{mode:>6} {i:>5} {seed:>4} {r['wall']:>8.1f} {r['busy']:>8.1f} {r['util']:>6.2f} "
                          f"{r['ideal']:>6.2f} {r['wall_ratio']:>10.2f} {mse[mode][-1]:>10.3e}", flush=True)
    ref = np.array(mse["seq"])
    print(f"\n{'mode':>6} {'util':>6} {'ideal':>6} {'wall ratio':>10} {'gm MSE':>10} {'gm ratio to seq':>16}")
    for mode in ["seq", *args.modes]:
        a = np.array(mse[mode])
        util = np.mean([s["util"] for s in stats[mode]]) if mode in stats else float("nan")
        ratio = np.mean([s["wall_ratio"] for s in stats[mode]]) if mode in stats else float("nan")
        ideal = np.mean([s["ideal"] for s in stats[mode]]) if mode in stats else float("nan")
        print(f"{mode:>6} {util:>6.2f} {ideal:>6.2f} {ratio:>10.2f} {np.exp(np.log(a).mean()):>10.3e} "
              f"{np.exp(np.log(a / ref).mean()):>16.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
