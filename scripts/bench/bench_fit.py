"""Speed and optimum of the MAP fit: numpy engine (shapleig.gp.numpy_fit) against the gpytorch engine.

For each (p, t) a leverage-design archive of a synthetic game (linear + pairwise + one three-way
term, as scripts/bench/bench_overhead.py) is fitted cold by both engines (ARD and shared lengthscale),
and warm-started by the numpy engine from the hyperparameters fitted on the first t - 1 points.
Columns: seconds per fit, objective (negative MLL + log prior, per observation; lower is better),
L-BFGS-B attempts. ``warm d_obj`` is the warm fit's objective minus the cold numpy fit's.

    OMP_NUM_THREADS=1 python scripts/bench/bench_fit.py                      # t in 20..500, p in 8..64
    OMP_NUM_THREADS=1 python scripts/bench/bench_fit.py --sizes 8:32 64:256 --no-gpytorch
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from shapleig.design.initial import leverage_design
from shapleig.gp.fitting import fit_hyperparameters
from shapleig.gp.kernels import Hamming
from shapleig.gp.options import GPOptions
from shapleig.threads import compute_threads


# the fit routes compared: botorch's (published) and the numpy engine, both fitting the plain kernel
# the gpytorch engine needs the torch extra: its options are built when a run uses them, so that
# --help (and the numpy-only runs) work on an install without torch
def gpytorch_options() -> GPOptions:
    return GPOptions(fit_engine="gpytorch", size_trend=False)


NUMPY = GPOptions(fit_engine="numpy", size_trend=False)


def synthetic(X: np.ndarray, seed: int = 0) -> np.ndarray:
    p = X.shape[1]
    rng = np.random.default_rng(seed)
    w = rng.normal(size=p)
    pairs = rng.normal(size=(p, p)) * 0.2 / np.sqrt(p)
    z = X.astype(np.float64)
    return z @ w + np.einsum("mi,ij,mj->m", z, pairs, z) + 0.5 * z[:, 0] * z[:, 1] * z[:, 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["8:20", "8:64", "16:64", "16:128", "32:128", "32:256",
                                                   "64:256", "64:500"], help="p:t pairs")
    ap.add_argument("--no-gpytorch", action="store_true", help="numpy engine only")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{'p':>4} {'t':>5} {'kernel':>6} | {'gpytorch s':>10} {'obj':>10} {'att':>3} | "
          f"{'numpy s':>8} {'obj':>10} {'att':>3} | {'speed-up':>8} | {'warm s':>7} {'warm d_obj':>10}")
    with compute_threads(1):
        for item in args.sizes:
            p, t = (int(v) for v in item.split(":"))
            X = leverage_design(p, np.random.default_rng(args.seed), size=t)
            y = synthetic(X, args.seed)
            for ard in (False, True):
                if args.no_gpytorch:
                    g_s, g_obj, g_att = float("nan"), float("nan"), 0
                else:
                    ref = fit_hyperparameters(X, y, Hamming(ard=ard), gpytorch_options(), seed=args.seed)
                    g_s, g_obj, g_att = ref.seconds, ref.neg_mll, ref.attempts
                new = fit_hyperparameters(X, y, Hamming(ard=ard), NUMPY, seed=args.seed)
                prev = fit_hyperparameters(X[:-1], y[:-1], Hamming(ard=ard), NUMPY, seed=args.seed)
                start = time.perf_counter()
                warm = fit_hyperparameters(X, y, Hamming(ard=ard), NUMPY, seed=args.seed, init=prev.hyper)
                w_s = time.perf_counter() - start
                print(f"{p:>4} {t:>5} {'ARD' if ard else 'shared':>6} | {g_s:>10.3f} {g_obj:>10.5f} {g_att:>3} | "
                      f"{new.seconds:>8.3f} {new.neg_mll:>10.5f} {new.attempts:>3} | {g_s / new.seconds:>7.1f}x | "
                      f"{w_s:>7.3f} {warm.neg_mll - new.neg_mll:>10.2e}", flush=True)


if __name__ == "__main__":
    main()
