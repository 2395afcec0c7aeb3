"""Accuracy and time of ``shapleig.explain`` on one LightGBM prediction, against enumeration.

Usage: python scripts/bench/bench_explain.py [--budget 40] [--background 50] [--seeds 3] [--row 3]

A LightGBM regressor on scikit-learn's diabetes data (d = 10 features). Prints the time of the
exact explanation (all 2^d coalitions), then per method: the MSE against it (mean over seeds), the
seconds per run, the model calls of the last run, the method's own efficiency gap before
``explain`` corrects it, and the share of features whose exact value lies within +- 2 posterior
std (methods with a posterior). Every method runs at the budget (``exact_if_cheap=False``): on this
cheap model ``explain``'s default would enumerate all 2^d coalitions instead of running the GP, which
``--exact-if-cheap`` shows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import shapleig
import shapleig_baselines as baselines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--background", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--row", type=int, default=3)
    parser.add_argument("--exact-if-cheap", action="store_true",
                        help="let explain enumerate a cheap game (its default) instead of comparing at the budget")
    args = parser.parse_args()

    import lightgbm as lgb
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = lgb.LGBMRegressor(n_estimators=50, verbose=-1).fit(X, y)
    background, x = X.sample(args.background, random_state=0), X.iloc[args.row]
    start = time.perf_counter()
    exact = shapleig.explain(model, background, x, method="exact")
    print(f"exact: {exact.evaluations} coalitions in {time.perf_counter() - start:.2f} s")
    methods = {"shapleig": "shapleig", "kernelshap (paired)": baselines.get("kernelshap", paired=True),
               "permutation": baselines.get("permutation")}
    for name, method in methods.items():
        errors, seconds, coverage = [], [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            est = shapleig.explain(model, background, x, budget=args.budget, seed=seed, method=method,
                                   exact_if_cheap=args.exact_if_cheap)
            seconds.append(time.perf_counter() - start)
            errors.append(float(np.mean((est.values - exact.values) ** 2)))
            if est.std is not None:
                coverage.append(float(np.mean(np.abs(est.values - exact.values) <= 2 * est.std)))
        cover = f"{np.mean(coverage):.2f}" if coverage else "-"
        print(f"{name:>20}: budget {args.budget}, MSE {np.mean(errors):.3g}, {np.mean(seconds):.2f} s/run, "
              f"{est.info['model_calls']} model calls, own efficiency gap {abs(est.info['efficiency_gap']):.2g}, "
              f"+-2 std coverage {cover}")


if __name__ == "__main__":
    main()
