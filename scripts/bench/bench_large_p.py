"""The default ShaplEIG at large p: seconds per acquisition and peak memory of a whole run.

One subprocess per (p, budget), so the peak RSS (``ru_maxrss``) is that run's alone. The game is the
synthetic one of scripts/bench/bench_fit.py (linear + pairwise + a three-way term, cheap to
evaluate), the estimator ``ShaplEIG()`` with its defaults (``fit_points = 512``: at p >= 512 the
design alone exceeds it, the case of issue 30). Reported: wall seconds of the run, selection
seconds (fits + candidate state + EIG, game excluded) per acquisition over the run and over the steps
that end in the last tenth of the budget (``end``; the largest such step too), wall seconds per
acquisition, refits, peak RSS, and the MSE of the estimate over the variance of the exact values
(closed form, :func:`exact_shapley`) with the share of players inside their 95% interval.
``--code DIR`` imports ``shapleig`` from another checkout (the code before a change).

    OMP_NUM_THREADS=1 python scripts/bench/bench_large_p.py                       # p = 1000, budget 1050
    OMP_NUM_THREADS=1 python scripts/bench/bench_large_p.py --players 600 --budget 620
    python scripts/bench/bench_large_p.py --players 100 --budget 10000       # a large archive (about 5 min)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def exact_shapley(p: int, seed: int) -> np.ndarray:
    """The Shapley values of ``bench_fit.synthetic``, float64[p], in closed form.

    ``v(z) = z.w + z^T P z + z_0 z_1 z_2 / 2``: player j gets ``w_j + P_jj`` (``z_j^2 = z_j``), half of
    each pair term ``P_ij + P_ji`` it is in, and a third of the three-way term.
    """
    rng = np.random.default_rng(seed)
    w = rng.normal(size=p)
    pairs = rng.normal(size=(p, p)) * 0.2 / np.sqrt(p)
    sym = pairs + pairs.T
    phi = w + np.diag(pairs) + 0.5 * (sym.sum(axis=1) - np.diag(sym))
    phi[:3] += 0.5 / 3.0
    return phi


def measure(p: int, budget: int, seed: int) -> dict:
    """One run of the default estimator: timings, accuracy and peak RSS of this process."""
    from bench_fit import synthetic

    from shapleig import FunctionGame, ShaplEIG

    game = FunctionGame(lambda Z: synthetic(Z, seed), p)
    steps: list[tuple[int, float]] = []  # (evaluations, selection seconds so far) after each step

    def record(loop) -> None:
        steps.append((loop.evaluations, loop.timings["selection_s"]))

    start = time.perf_counter()
    # the defaults; the callback only reads the loop's counters
    est = ShaplEIG.from_options(callbacks=(record,)).estimate(game, budget, seed=seed)
    wall = time.perf_counter() - start
    acquisitions = max(int(est.info["iterations"]), 1)
    # selection per acquisition at the end: the steps that ended in the last tenth of the budget
    tail = [(e1 - e0, s1 - s0) for (e0, s0), (e1, s1) in zip(steps, steps[1:]) if e1 > 0.9 * budget]
    phi = exact_shapley(p, seed)
    return {
        "mse": float(np.mean((est.values - phi) ** 2)), "mse_rel": float(np.mean((est.values - phi) ** 2) / np.var(phi)),
        "coverage": float(np.mean(np.abs(est.values - phi) <= 1.96 * est.std)),
        "p": p, "budget": budget, "wall_s": wall, "acquisitions": acquisitions,
        "selection_s_per_acq": est.info["selection_seconds"] / acquisitions,
        "end_s_per_acq": sum(s for _, s in tail) / max(sum(n for n, _ in tail), 1),
        "end_max_step_s": max((s for _, s in tail), default=0.0),
        "wall_s_per_acq": wall / acquisitions, "refits": est.info["n_fits"],
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--players", type=int, nargs="+", default=[1000])
    ap.add_argument("--budget", type=int, nargs="+", default=[1050], help="one per --players (or one for all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--code", default=None, help="a checkout whose shapleig to import (default: this one)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))
    budgets = args.budget * len(args.players) if len(args.budget) == 1 else args.budget
    if len(budgets) != len(args.players):
        ap.error("give one --budget per --players, or one for all")
    if args.child:
        print(json.dumps(measure(args.players[0], budgets[0], args.seed)))
        return 0
    print(f"{'p':>6} {'budget':>7} {'wall s':>8} {'acq':>5} {'sel s/acq':>10} {'end s/acq':>10} {'end step s':>10} "
          f"{'wall s/acq':>11} {'refits':>7} {'peak GB':>8} {'MSE/var':>9} {'cover':>6}")
    for p, b in zip(args.players, budgets):
        out = subprocess.run([sys.executable, __file__, "--child", "--players", str(p), "--budget", str(b),
                              "--seed", str(args.seed), *(["--code", args.code] if args.code else [])],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['p']:>6} {r['budget']:>7} {r['wall_s']:>8.1f} {r['acquisitions']:>5} "
              f"{r['selection_s_per_acq']:>10.3f} {r['end_s_per_acq']:>10.3f} {r['end_max_step_s']:>10.2f} "
              f"{r['wall_s_per_acq']:>11.3f} {r['refits']:>7} "
              f"{r['peak_rss_gb']:>8.2f} {r['mse_rel']:>9.2e} {r['coverage']:>6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
