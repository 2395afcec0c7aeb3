"""Does overlapping the initial design with the first acquisitions cost accuracy? Run for run, many games.

``AsyncDesignLoop.overlap_design`` gives the workers the initial design leaves free picks chosen
under the kernel's initial hyperparameters instead of letting them wait for the first fit
(docs/benchmarks.md §4). This study runs the asynchronous default (``batch_size=q``, thread workers,
every evaluation sleeping a lognormal time that is a function of the coalition and the seed) with
and without the overlap on the first ``--tables`` table of each public and suite-B suite and on
``--instances`` games of each generality family, budgets ``--budgets`` x p, seeds ``0..S-1``, and
prints per benchmark the geometric mean over runs of MSE(overlap) / MSE(without), the cells
(suite x budget) above 1.25x, and each mode's mean utilisation busy / (q x wall) and its ratio to
the ideal list schedule of the same evaluation times (``bench_async.py``). Decisions depend on the
order of arrivals only, so a run repeats to the last digit (``--repeat`` runs the mode without the
overlap twice to show it); ``reordered`` is the mode without the overlap under other evaluation times
for the same coalitions (another arrival order, another but equally valid trajectory of the design):
the spread any change of the trajectory brings, against which the overlap's ratios are read.

    SHAPLEIG_SHARED=../shared OMP_NUM_THREADS=1 python scripts/studies/async_overlap_accuracy.py --out overlap.parquet
    python scripts/studies/async_overlap_accuracy.py --from overlap.parquet
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "scripts" / "bench", Path(__file__).resolve().parent):
    if str(path) not in sys.path:  # run as a plain script from a checkout
        sys.path.insert(0, str(path))

import benchmark_calibration as bc  # noqa: E402
from bench_async import BusyEvaluator, LognormalSleepGame  # noqa: E402

MODES = ("plain", "overlap")


def run_one(how: tuple, budget: int, q: int, seed: int, overlap: bool | str, median: float, sigma: float,
            times_seed: int = 0) -> dict:
    """One asynchronous run: MSE against the exact values, utilisation and its ideal.

    ``times_seed`` draws other evaluation times for the same coalitions (another arrival order).
    """
    from shapleig import ShaplEIG
    from shapleig.design.async_loop import AsyncDesignLoop

    game, exact = bc.make_game(how)
    slow = LognormalSleepGame(game, median, sigma, seed=seed + 1000 * times_seed)
    AsyncDesignLoop.overlap_design = overlap
    try:
        with ThreadPoolExecutor(q) as pool, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            evaluator = BusyEvaluator(pool)
            start = time.perf_counter()
            est = ShaplEIG(batch_size=q).estimate(slow, budget, seed=seed, evaluator=evaluator)
            wall = time.perf_counter() - start
    finally:
        AsyncDesignLoop.overlap_design = False
    return {"mse": float(np.mean((np.asarray(est.values) - exact) ** 2)), "util": evaluator.busy / (q * wall),
            "ideal": evaluator.ideal_utilisation(q), "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=["public", "suite-b", "families"],
                    choices=["public", "suite-b", "families"])
    ap.add_argument("--tables", type=int, default=1)
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--budgets", nargs="+", type=int, default=[4, 8], help="multiples of p (default 4 8)")
    ap.add_argument("--q", type=int, default=8)
    ap.add_argument("--median", type=float, default=0.02, help="median seconds per evaluation")
    ap.add_argument("--sigma", type=float, default=0.7)
    ap.add_argument("--repeat", action="store_true", help="run the mode without the overlap twice (it repeats)")
    ap.add_argument("--modes", nargs="+", default=["plain", "overlap", "reordered"],
                    choices=["plain", "overlap", "overlap-pool", "reordered"],
                    help="overlap: early picks under the prior; overlap-pool: the pool's next coalitions")
    ap.add_argument("--out", default="async_overlap_accuracy.parquet")
    ap.add_argument("--from", dest="reuse", default=None)
    args = ap.parse_args(argv)
    if args.reuse is None:
        known = {"plain": ("plain", False, 0), "overlap": ("overlap", True, 0),
                 "overlap-pool": ("overlap-pool", "pool", 0), "reordered": ("reordered", False, 1)}
        modes = [known[m] for m in dict.fromkeys(["plain", *args.modes])]
        if args.repeat:
            modes.append(("plain-again", False, 0))
        rows = []
        for set_name, suite, name, how in bc.game_specs(args.sets, args.tables, args.instances):
            p = bc.make_game(how)[0].n_players
            for multiple in args.budgets:
                for seed in range(args.seeds):
                    for label, overlap, times_seed in modes:
                        r = run_one(how, multiple * p, args.q, seed, overlap, args.median, args.sigma, times_seed)
                        rows.append({"set": set_name, "suite": suite, "game": name, "budget": f"{multiple}p",
                                     "seed": seed, "mode": label, **r})
                print(f"{set_name} {suite} {multiple}p done", flush=True)
        results = pd.DataFrame(rows)
        results.to_parquet(args.out)
    else:
        results = pd.read_parquet(args.reuse)
    report(results)
    return 0


def report(results: pd.DataFrame) -> None:
    """Per benchmark: gm of the run-for-run MSE ratios against ``plain``, cells above 1.25x, utilisation."""
    key = ["set", "suite", "game", "budget", "seed"]
    base = results[results["mode"] == "plain"].set_index(key)
    for mode in [m for m in results["mode"].unique() if m != "plain"]:
        other = results[results["mode"] == mode].set_index(key)
        both = base.join(other.add_suffix("_o"), how="inner")
        both["log_ratio"] = np.log(both["mse_o"] / both["mse"])
        for set_name, part in both.groupby(level="set"):
            cells = part.groupby(level=["suite", "budget"])["log_ratio"].mean().apply(np.exp)
            print(f"[{set_name}] {mode} / plain: MSE gm {np.exp(part['log_ratio'].mean()):.3f} over {len(part)} runs, "
                  f"cells above 1.25x: {int((cells > 1.25).sum())} of {len(cells)} (worst {cells.max():.2f}, "
                  f"{cells.idxmax()[0]} {cells.idxmax()[1]}); utilisation {part['util_o'].mean():.3f} "
                  f"({(part['util_o'] / part['ideal_o']).mean():.3f} of ideal) against {part['util'].mean():.3f} "
                  f"({(part['util'] / part['ideal']).mean():.3f})")


if __name__ == "__main__":
    raise SystemExit(main())
