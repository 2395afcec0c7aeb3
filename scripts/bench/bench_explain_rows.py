"""Wall time of ``shapleig.explain_X`` with rows in parallel (``n_jobs``) against one row at a time.

Usage: OMP_NUM_THREADS=1 python scripts/bench/bench_explain_rows.py [--rows 8] [--budget 40] [--jobs 1 2]

A LightGBM regressor on scikit-learn's diabetes data (d = 10 features), 50 background rows, the
default ShaplEIG with ``exact_if_cheap=False`` (so every row runs the GP). Runs ``explain_X`` once
per ``--jobs`` value, in the order given, and prints each wall time, its ratio to the first and the
largest difference of its values from the first run's (0 expected: each row has its own seed). The
worker processes' start-up is part of the timed call, as a user pays it.

``--sleep S`` wraps the model so that every call also waits S seconds (a model behind a remote
service): rows then overlap their waits whatever the machine's load, which shows the parallel path at
work where the cores are shared (``--control`` near 1).

``--control`` first times a pure-Python CPU loop, 4 chunks one after another and on 2 joblib
workers: its ratio says how much parallelism the machine gives at that moment (about 0.5 on 2 idle
cores; near 1 when other jobs hold the cores, or when the scheduler groups a session's processes).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import shapleig


class SleepyPredict:
    """``model.predict`` that also waits ``seconds`` per call (module level: it travels to the workers)."""

    def __init__(self, model, seconds: float) -> None:
        self.model, self.seconds = model, float(seconds)

    def __call__(self, X):
        time.sleep(self.seconds)
        return self.model.predict(X)


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def control(n: int = 10_000_000) -> None:
    """Print the wall time of 4 CPU-bound chunks one after another and on 2 joblib workers."""
    from joblib import Parallel, delayed

    Parallel(n_jobs=2)(delayed(_spin)(1) for _ in range(2))  # start the workers first
    start = time.perf_counter()
    for _ in range(4):
        _spin(n)
    serial = time.perf_counter() - start
    start = time.perf_counter()
    Parallel(n_jobs=2)(delayed(_spin)(n) for _ in range(4))
    parallel = time.perf_counter() - start
    print(f"control (pure CPU loop): serial {serial:.2f} s, 2 workers {parallel:.2f} s, ratio {parallel / serial:.2f}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--background", type=int, default=50)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds every model call also waits")
    parser.add_argument("--control", action="store_true", help="first time a pure CPU loop serially and on 2 workers")
    args = parser.parse_args()
    if args.control:
        control()

    import lightgbm as lgb
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = lgb.LGBMRegressor(n_estimators=50, verbose=-1, n_jobs=1).fit(X, y)
    background, rows = X.sample(args.background, random_state=0), X.iloc[: args.rows]
    predict = SleepyPredict(model, args.sleep) if args.sleep > 0 else None
    first_values, first_time = None, None
    for n_jobs in args.jobs:
        start = time.perf_counter()
        res = shapleig.explain_X(model, background, rows, budget=args.budget, seed=0, n_jobs=n_jobs,
                                 exact_if_cheap=False, progress=False, predict=predict,
                                 game_id="bench" if predict is not None else None)
        seconds = time.perf_counter() - start
        if first_values is None:
            first_values, first_time = res.values, seconds
        diff = float(np.max(np.abs(res.values - first_values)))
        print(f"n_jobs={n_jobs}: {args.rows} rows, budget {args.budget}: {seconds:.2f} s wall, "
              f"{seconds / first_time:.2f}x the first, max |value difference| {diff:.3g}", flush=True)


if __name__ == "__main__":
    main()
