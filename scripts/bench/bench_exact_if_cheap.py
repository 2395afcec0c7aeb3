"""explain's exact values for cheap small games: wall time and error with ``exact_if_cheap`` on
(the default: enumerate when the measured model time says that costs less than the GP) and off.

Games: a numpy model (microseconds per call) at p = 8, 10, 12, and a LightGBM regressor on the
diabetes data (p = 10, milliseconds per call), each explained at budget 4p with 50 background rows.
Printed per game: the decision, the wall time of both runs, and their MSE against enumeration.

    python scripts/bench/bench_exact_if_cheap.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import shapleig


def games():
    rng = np.random.default_rng(0)
    for p in (8, 10, 12):
        w = rng.normal(size=p)
        background, x = rng.normal(size=(50, p)), rng.normal(size=p)
        yield f"numpy p={p}", (lambda X, w=w: X @ w + 0.5 * X[:, 0] * X[:, 1]), background, x
    import lightgbm as lgb
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = lgb.LGBMRegressor(n_estimators=50, verbose=-1).fit(X, y)
    yield "LightGBM diabetes p=10", model, X.sample(50, random_state=0), X.iloc[3]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print("| game | decision (s per coalition) | wall, exact_if_cheap on | MSE on | wall, off | MSE off |")
    print("|---|---|---:|---:|---:|---:|")
    for name, model, background, x in games():
        p = background.shape[1]
        exact = shapleig.explain(model, background, x, method="exact", progress=False).values
        runs = {}
        for flag in (True, False):
            start = time.perf_counter()
            est = shapleig.explain(model, background, x, budget=4 * p, seed=0, progress=False, exact_if_cheap=flag)
            runs[flag] = (time.perf_counter() - start, float(np.mean((est.values - exact) ** 2)), est.info)
        d = runs[True][2]["exact_if_cheap"]
        print(f"| {name} | {'enumerate' if d['enumerate'] else 'GP'} ({d['seconds_per_coalition']:.2g}) | "
              f"{runs[True][0]:.2f} s | {runs[True][1]:.2g} | {runs[False][0]:.2f} s | {runs[False][1]:.2g} |")


if __name__ == "__main__":
    main()
