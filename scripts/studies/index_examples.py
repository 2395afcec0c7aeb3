"""Two worked examples of ShaplEIG beyond the Shapley value, printed as Markdown tables.

1. An interaction explanation of a real model: k-SII (order 2) of one California-housing
   prediction of a gradient-boosting model (the shipped local-explanation value table, 8 features),
   at budget 8p, with 95% intervals, against the exact k-SII of the table.
2. A hyperparameter-interaction table: FSII of LightGBM's tunability on the diabetes data
   (6 hyperparameters, random search of 4 trials per coalition, 3-fold CV), at budget 8p, against
   the exact FSII from all 2^6 coalitions (enumerated once, about a minute).

    OMP_NUM_THREADS=1 python scripts/studies/index_examples.py [--skip-hpi]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

from shapleig import ShaplEIG  # noqa: E402
from shapleig_tasks.tables import SHIPPED_TABLES_DIR, TableGame  # noqa: E402

CALIFORNIA = SHIPPED_TABLES_DIR / "CaliforniaHousing_LocalExplanation_Game/8/model_name=gradient_boosting_imputer=marginal_1.npz"
CALIFORNIA_FEATURES = ["MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude",
                       "Longitude"]
HPI_HYPERPARAMETERS = ("learning_rate", "n_estimators", "num_leaves", "min_child_samples", "subsample",
                       "colsample_bytree")


def table(est, names: list[str], exact: np.ndarray, top: int) -> str:
    lo, hi = est.interval(0.95)
    order = np.argsort(-np.abs(est.values))[:top]
    lines = ["| term | estimate | 95% interval | exact |", "|---|---:|---|---:|"]
    for k in order:
        name = " x ".join(names[i] for i in est.terms[k])
        lines.append(f"| {name} | {est.values[k]:.4f} | [{lo[k]:.4f}, {hi[k]:.4f}] | {exact[k]:.4f} |")
    return "\n".join(lines)


def california(budget_mult: int, top: int) -> None:
    game = TableGame.from_npz(CALIFORNIA)
    p = game.n_players
    est = ShaplEIG(index="k-SII", max_order=2).estimate(game, budget_mult * p, seed=0)
    exact = game.exact_values(index="k-SII")
    print(f"\n### k-SII of one California-housing prediction ({est.evaluations} of {2 ** p} coalitions)\n")
    print(table(est, CALIFORNIA_FEATURES, exact, top))
    print(f"\nMSE over all {len(est.terms)} terms: {np.mean((est.values - exact) ** 2):.3g}; "
          f"wall {est.info['wall_s']:.1f} s")


def hpi(budget_mult: int, top: int) -> None:
    from shapleig.games.coalitions import all_coalitions
    from shapleig_tasks.hpi import prepare_study

    with tempfile.TemporaryDirectory() as out:
        study = prepare_study("lightgbm", "diabetes", hyperparameters=HPI_HYPERPARAMETERS, study="tunability",
                              inner_budget=4, n_folds=3, out=out)
        game = study.game
        names = list(game.names)  # the space's order (ConfigSpace sorts by name), not the order asked
        p = game.n_players
        Z = all_coalitions(p)
        full = TableGame(Z, np.asarray(game(Z), dtype=np.float64), name="hpi-diabetes")
    est = ShaplEIG(index="FSII", max_order=2).estimate(full, budget_mult * p, seed=0)
    exact = full.exact_values(index="FSII")
    print(f"\n### FSII of LightGBM's tunability on diabetes ({est.evaluations} of {2 ** p} coalitions)\n")
    print(table(est, names, exact, top))
    print(f"\nMSE over all {len(est.terms)} terms: {np.mean((est.values - exact) ** 2):.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=8, help="budget as a multiple of p (default 8)")
    parser.add_argument("--top", type=int, default=8, help="rows per table")
    parser.add_argument("--skip-hpi", action="store_true")
    args = parser.parse_args()
    california(args.budget, args.top)
    if not args.skip_hpi:
        hpi(args.budget, args.top)


if __name__ == "__main__":
    main()
