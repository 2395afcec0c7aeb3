"""Time the ESP routines of shapleig.gp.esp (and one EIG step of shapleig.gp.posterior).

Usage: .venv/bin/python scripts/bench/bench_esp.py [--players 8 16 32 64 100] [--coalitions 1024] [--repeats 3]

Prints, per p, the best-of-repeats wall time of
- shapley_kernel_columns for m random coalitions (production O(p^2) route) and the integral route;
- prior_shapley_covariance (parity, O(p^3)) and prior_shapley_covariance_bivariate (O(p^4));
- one frozen-greedy step over an m-candidate pool with a (p+1)-coalition archive: eig() + condition()
  (best of max(repeats, 20) consecutive steps).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from shapleig.gp.esp import (
    prior_shapley_covariance,
    prior_shapley_covariance_bivariate,
    shapley_kernel_columns,
    shapley_kernel_columns_integral,
)
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior


def best_time(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, nargs="+", default=[8, 16, 32, 64, 100])
    parser.add_argument("--coalitions", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    steps = max(args.repeats, 20)  # eig+condition steps are short: more repeats vs noise
    if args.coalitions <= steps:  # each timed step conditions on a candidate not conditioned on before
        parser.error(f"--coalitions must exceed the {steps} timed eig+condition steps, got {args.coalitions}")
    rng = np.random.default_rng(0)
    m = args.coalitions
    print(f"{'p':>4} {'columns(m=%d)' % m:>16} {'integral':>10} {'M parity':>10} {'M bivariate':>12} {'eig+condition':>14}  (seconds)")
    for p in args.players:
        lengthscales = rng.uniform(0.05, 3.0, p)
        s = 1.0
        Z = rng.random((m, p)) < 0.5
        t_cols = best_time(lambda: shapley_kernel_columns(Z, lengthscales, s), args.repeats)
        t_int = best_time(lambda: shapley_kernel_columns_integral(Z, lengthscales, s), args.repeats)
        t_par = best_time(lambda: prior_shapley_covariance(lengthscales, s), args.repeats)
        t_biv = best_time(lambda: prior_shapley_covariance_bivariate(lengthscales, s), 1)
        X = np.vstack([np.zeros(p, bool), np.ones(p, bool), rng.random((p - 1, p)) < 0.5])
        post = ShapleyPosterior(Hyperparameters.hamming(lengthscales, s, 1e-6), X, rng.normal(size=X.shape[0]))
        cand = post.candidates(Z)

        def step() -> None:
            cand.condition(int(np.argmax(cand.eig())))

        t_step = best_time(step, steps)
        print(f"{p:>4} {t_cols:>16.4f} {t_int:>10.4f} {t_par:>10.4f} {t_biv:>12.4f} {t_step:>14.4f}")


if __name__ == "__main__":
    main()
