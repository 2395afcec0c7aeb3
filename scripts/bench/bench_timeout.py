"""What an evaluation timeout costs: a timed trivial evaluation against an untimed one.

``SerialEvaluator(timeout=...)`` runs the game in a persistent worker process
(:mod:`shapleig.runs.timeout`). This script evaluates ``--evaluations`` coalitions of a trivial
game (a sum: microseconds), one ``evaluate`` call per coalition as a run with a store does
(``chunk_size=1``), with and without a timeout, and prints:

- the worker's start (a fresh interpreter loading the game: paid once per run);
- the steady per-evaluation overhead (median over the evaluations after the first, timed minus
  untimed): the promise is <= 50 ms;
- the overhead per evaluation over the whole run, start included;
- optionally (``--lightgbm``) the same with a LightGBM imputer game, checking that the timed
  values equal the untimed ones (a forked worker used to deadlock in LightGBM's OpenMP).

Usage: ``python scripts/bench/bench_timeout.py [--evaluations 50] [--repeats 3] [--lightgbm]``
(a few seconds; timings on a loaded machine are noisy: run it alone).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shapleig import FunctionGame  # noqa: E402
from shapleig.runs.evaluators import SerialEvaluator  # noqa: E402


def trivial(Z: np.ndarray) -> np.ndarray:
    return np.asarray(Z, float).sum(axis=1)


def per_call_seconds(game, coalitions: np.ndarray, timeout: float | None) -> tuple[list[float], np.ndarray]:
    """Seconds of each ``evaluate`` call (one coalition each) and the values, with a fresh evaluator."""
    evaluator = SerialEvaluator(chunk_size=1, timeout=timeout)
    seconds, values = [], []
    try:
        for row in coalitions:
            start = time.perf_counter()
            values.append(evaluator.evaluate(game, row[None, :].copy(), max_retries=0)[0])
            seconds.append(time.perf_counter() - start)
    finally:
        getattr(evaluator, "close", lambda: None)()  # (also runs on versions without a persistent worker)
    return seconds, np.array(values)


def report(name: str, game, coalitions: np.ndarray, timeout: float, repeats: int) -> None:
    first, steady, total = [], [], []
    for _ in range(repeats):
        plain, plain_values = per_call_seconds(game, coalitions, None)
        timed, timed_values = per_call_seconds(game, coalitions, timeout)
        if not np.array_equal(plain_values, timed_values):
            raise SystemExit(f"{name}: the timed values differ from the untimed ones")
        first.append(timed[0] - plain[0])
        steady.append(statistics.median(t - u for t, u in zip(timed[1:], plain[1:])))
        total.append((sum(timed) - sum(plain)) / len(timed))
    n = len(coalitions)
    print(f"{name}: {n} evaluations, one evaluate() call each, timeout {timeout:g} s, best of {repeats}")
    print(f"  worker start (first evaluation, once per run): {min(first) * 1e3:8.1f} ms")
    print(f"  steady overhead per timed evaluation (median): {min(steady) * 1e3:8.3f} ms   (promise: <= 50 ms)")
    print(f"  overhead per evaluation over the run, start included: {min(total) * 1e3:8.1f} ms")
    print("  timed values equal the untimed ones: yes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--lightgbm", action="store_true", help="also an imputer game of a LightGBM model")
    args = parser.parse_args()
    p = 12
    rng = np.random.default_rng(0)
    coalitions = rng.random((args.evaluations, p)) < 0.5
    report("trivial game (sum)", FunctionGame(trivial, p), coalitions, args.timeout, args.repeats)
    if args.lightgbm:
        import lightgbm as lgb

        from shapleig.explanation.imputer import ImputerGame

        X = rng.normal(size=(300, p))
        model = lgb.LGBMRegressor(n_estimators=50, num_leaves=15, verbose=-1, n_jobs=2).fit(X, X @ np.arange(p))
        report("LightGBM imputer game (50 background rows, n_jobs=2)", ImputerGame(model.predict, X[:50], X[-1]),
               coalitions, args.timeout, args.repeats)


if __name__ == "__main__":
    main()
