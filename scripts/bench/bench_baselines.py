"""Time every registered baseline on a free game with known Shapley values and print a table.

Default: the standard airport game (p = 100, closed-form Shapley values) at T = 50,000 distinct
evaluations, one seed, BLAS limited to one thread. The game costs microseconds per coalition, so
the wall time is the method's own overhead (sampling, bookkeeping, regression, surrogate fit).
Accuracy columns (MSE, max deviation, |sum - (v(N) - v(0))|) are for orientation only.

    .venv/bin/python scripts/bench/bench_baselines.py
    .venv/bin/python scripts/bench/bench_baselines.py --players 50 --budget 5000 --seeds 3 \
        --methods leverage-shap regression-msr
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Single-threaded BLAS (set before numpy loads): every method is timed on one core, and shared
# machines do not thrash on oversubscribed BLAS threads. Override from the environment if wanted.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

# Run from a plain checkout too: put the repository root ahead of any stale installed copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shapleig_baselines as baselines  # noqa: E402
from shapleig_tasks.synthetic import AirportGame  # noqa: E402


def make_game(kind: str, p: int, seed: int):
    """A free game and its exact Shapley values: ``(game, float64[p])``."""
    if kind == "airport":
        game = AirportGame() if p == 100 else AirportGame(np.random.default_rng(seed).integers(1, 11, p))
        return game, game.exact_values()
    if kind == "additive":
        weights = np.random.default_rng(seed).random(p)

        class Additive:
            n_players = p

            def __call__(self, z: np.ndarray) -> np.ndarray:
                return np.asarray(z, dtype=np.float64) @ weights

        return Additive(), weights
    raise ValueError(f"unknown game {kind!r}; choose airport or additive")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=100)
    parser.add_argument("--budget", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--game", default="airport", choices=("airport", "additive"))
    parser.add_argument("--methods", nargs="*", default=list(baselines.NAMES))
    args = parser.parse_args(argv)

    game, exact = make_game(args.game, args.players, seed=0)
    print(f"game={args.game} p={args.players} T={args.budget} seeds={args.seeds} accounting=distinct")
    header = f"{'method':<22}{'wall s':>9}{'evals':>9}{'MSE':>12}{'max dev':>11}{'sum err':>11}"
    print(header)
    print("-" * len(header))
    for name in args.methods:
        try:
            estimator = baselines.get(name)
        except (ImportError, AttributeError) as exc:
            print(f"{name:<22}  not available: {exc}")
            continue
        # Untimed warm-up at a small budget: module imports (LightGBM pulls in scikit-learn,
        # seconds on a busy disk) and first-call costs are not the method's per-run time.
        estimator.estimate(game, max(estimator.min_budget(args.players), 2 * args.players + 2), seed=0)
        walls, mses, devs, evals, sum_errs = [], [], [], [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            est = estimator.estimate(game, args.budget, seed=seed)
            walls.append(time.perf_counter() - start)
            err = est.values - exact
            mses.append(float(np.mean(err**2)))
            devs.append(float(np.max(np.abs(err))))
            evals.append(est.evaluations)
            sum_errs.append(abs(float(est.values.sum() - exact.sum())))
        print(
            f"{name:<22}{np.mean(walls):>9.2f}{int(np.mean(evals)):>9d}{np.mean(mses):>12.3e}"
            f"{np.mean(devs):>11.3e}{np.mean(sum_errs):>11.1e}"
        )


if __name__ == "__main__":
    main()
