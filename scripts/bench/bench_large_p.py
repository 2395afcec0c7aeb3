"""The default ShaplEIG at large p: seconds per acquisition and peak memory of a whole run.

One subprocess per (p, budget), so the peak RSS (``ru_maxrss``) is that run's alone. The game is the
synthetic one of scripts/bench/bench_fit.py (linear + pairwise + a three-way term, cheap to
evaluate), the estimator ``ShaplEIG()`` with its defaults (``fit_points = 512``: at p >= 512 the
design alone exceeds it, the case of issue 30). Reported: wall seconds of the run, selection
seconds (fits + candidate state + EIG, game excluded) per acquisition, wall seconds per acquisition,
refits, peak RSS.

    OMP_NUM_THREADS=1 python scripts/bench/bench_large_p.py                       # p = 1000, budget 1050
    OMP_NUM_THREADS=1 python scripts/bench/bench_large_p.py --players 600 --budget 620
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(p: int, budget: int, seed: int) -> dict:
    """One run of the default estimator: timings and peak RSS of this process."""
    from bench_fit import synthetic

    from shapleig import FunctionGame, ShaplEIG

    game = FunctionGame(lambda Z: synthetic(Z, seed), p)
    start = time.perf_counter()
    est = ShaplEIG().estimate(game, budget, seed=seed)
    wall = time.perf_counter() - start
    acquisitions = max(int(est.info["iterations"]), 1)
    return {
        "p": p, "budget": budget, "wall_s": wall, "acquisitions": acquisitions,
        "selection_s_per_acq": est.info["selection_seconds"] / acquisitions,
        "wall_s_per_acq": wall / acquisitions, "refits": est.info["n_fits"],
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--players", type=int, nargs="+", default=[1000])
    ap.add_argument("--budget", type=int, nargs="+", default=[1050], help="one per --players (or one for all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    budgets = args.budget * len(args.players) if len(args.budget) == 1 else args.budget
    if len(budgets) != len(args.players):
        ap.error("give one --budget per --players, or one for all")
    if args.child:
        print(json.dumps(measure(args.players[0], budgets[0], args.seed)))
        return 0
    print(f"{'p':>6} {'budget':>7} {'wall s':>8} {'acq':>5} {'sel s/acq':>10} {'wall s/acq':>11} {'refits':>7} "
          f"{'peak GB':>8}")
    for p, b in zip(args.players, budgets):
        out = subprocess.run([sys.executable, __file__, "--child", "--players", str(p), "--budget", str(b),
                              "--seed", str(args.seed)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['p']:>6} {r['budget']:>7} {r['wall_s']:>8.1f} {r['acquisitions']:>5} "
              f"{r['selection_s_per_acq']:>10.2f} {r['wall_s_per_acq']:>11.2f} {r['refits']:>7} "
              f"{r['peak_rss_gb']:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
