"""Airport n = 100: MSE and wall time of the sampling baselines against docs/baselines.md §12.

Usage: python scripts/repro/svarm_airport.py [--budgets 10000 50000] [--seeds 5]

Prints, per method and budget, the mean MSE over seeds, the indicative MSE of docs/baselines.md §12
(SVARM accounting, so expect agreement within about +-50% under distinct accounting), the mean
number of draws and the mean wall time per run. The airport game is cheap, so the wall time is
the estimator's own overhead (target: well under 10 s per run at T = 50,000 on 2 cores).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from shapleig.games.game import FunctionGame
from shapleig_baselines.owen import HalvedOwenSampling, OwenSampling
from shapleig_baselines.permutation import PermutationSampling
from shapleig_baselines.svarm import SVARM, StratifiedSVARM, StratifiedSVARMPlus

COUNTS = [8, 12, 6, 14, 8, 9, 13, 10, 10, 10]
LEVEL_VALUES = [
    0.0100000000, 0.0208695652, 0.0333695652, 0.0468830787, 0.0635497454,
    0.0827805146, 0.1060363286, 0.1393696619, 0.1893696619, 0.2893696619,
]
# docs/baselines.md §12 indicative MSEs: {budget: value}
REFERENCE = {
    "permutation": {10_000: 4.6e-3, 50_000: 1.1e-3},
    "svarm": {10_000: 1.7e-3, 50_000: 6.4e-4},
    "stratified-svarm": {10_000: 1.3e-4, 50_000: 2.3e-5},
    "stratified-svarm (uniform)": {10_000: 4.3e-4, 50_000: 7.2e-5},
    "owen endpoint Q=10": {10_000: 2.7e-1, 50_000: 2.7e-1},
}


def methods():
    return [
        ("permutation", PermutationSampling()),
        ("svarm", SVARM()),
        ("stratified-svarm", StratifiedSVARM()),
        ("stratified-svarm (uniform)", StratifiedSVARM(sizes="uniform")),
        ("svarm-plus (warmup)", StratifiedSVARMPlus()),
        ("svarm-plus (drop)", StratifiedSVARMPlus(empty_strata="drop")),
        ("owen (stratified)", OwenSampling()),
        ("owen (random q)", OwenSampling(grid="random")),
        ("owen endpoint Q=10", OwenSampling(grid="endpoint", n_cells=10, draws_per_cell=None)),
        ("owen-halved (stratified)", HalvedOwenSampling()),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    costs = np.repeat(np.arange(1, 11, dtype=np.float64), COUNTS)
    exact = np.repeat(LEVEL_VALUES, COUNTS)
    game = FunctionGame(lambda z: np.where(z.any(axis=1), (z * costs).max(axis=1), 0.0), 100, name="airport")
    print(f"{'method':28s} {'T':>7s} {'MSE':>10s} {'ref':>9s} {'draws':>8s} {'s/run':>7s}")
    for label, estimator in methods():
        for budget in args.budgets:
            mses, draws, secs = [], [], []
            for seed in range(args.seeds):
                start = time.perf_counter()
                est = estimator.estimate(game, budget, seed=seed)
                secs.append(time.perf_counter() - start)
                mses.append(np.mean((est.values - exact) ** 2))
                draws.append(est.info["n_draws"])
            ref = REFERENCE.get(label, {}).get(budget)
            ref_s = f"{ref:9.1e}" if ref else f"{'-':>9s}"
            print(
                f"{label:28s} {budget:7d} {np.mean(mses):10.2e} {ref_s} "
                f"{np.mean(draws):8.0f} {np.mean(secs):7.2f}"
            )


if __name__ == "__main__":
    main()
