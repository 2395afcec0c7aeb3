"""Fit the overhead law of ``exact_if_cheap`` and check its predictions (shapleig/explanation/cheap_exact.py).

Usage: OMP_NUM_THREADS=1 python scripts/bench/bench_overhead_model.py [--players 6 8 10 12 14 16] [--seeds 2]
       [--check]

1. Times the probe of ``machine_speed()`` (the GP's MAP objective on a fixed archive): the
   ``REFERENCE_PROBE_S`` of the fit.
2. Runs the default ``ShaplEIG`` on a free game (``bench_overhead.py``'s synthetic game) at budgets
   2p, 4p, 8p for each p, and fits ``seconds = scale * budget^a * p^b`` by least squares on the logs
   (the constants ``OVERHEAD_SCALE``, ``OVERHEAD_BUDGET_POWER``, ``OVERHEAD_PLAYERS_POWER``), and
   prints the spread of the measured seconds around the law.
3. Enumerates a free model (``explain(method="exact")``, 50 background rows, p = 8..14): the
   seconds per imputed value (``ENUMERATION_S_PER_VALUE``).

``--check`` instead runs ``explain`` with ``exact_if_cheap`` on the games of
``bench_exact_if_cheap.py`` and prints, per game, the decision, what it predicted for the path taken
and what the run took (``info["exact_if_cheap"]``), and the predicted seconds of the GP beside a GP
run's own time (``exact_if_cheap=False``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import make_game  # noqa: E402

import shapleig  # noqa: E402
from shapleig.explanation import cheap_exact  # noqa: E402


def fit_law(players: list[int], seeds: int) -> None:
    """Time the default on a free game over the grid; print the fitted law and its residuals."""
    probe = cheap_exact.probe_seconds(repeats=15)
    print(f"probe: {probe:.3e} s (REFERENCE_PROBE_S)")
    shapleig.ShaplEIG().estimate(make_game(6, 0), 10, seed=0, progress=False)  # imports before the timing
    rows = []
    for p in players:
        for k in (2, 4, 8):
            budget = k * p
            times = []
            for seed in range(seeds):
                start = time.perf_counter()
                shapleig.ShaplEIG().estimate(make_game(p, seed), budget, seed=seed, progress=False)
                times.append(time.perf_counter() - start)
            rows.append((p, budget, float(np.median(times))))
            print(f"  p={p:3d} budget={budget:4d}: {rows[-1][2]:.3f} s", flush=True)
    data = np.array(rows)
    A = np.column_stack([np.ones(len(rows)), np.log(data[:, 1]), np.log(data[:, 0])])
    coef, *_ = np.linalg.lstsq(A, np.log(data[:, 2]), rcond=None)
    print(f"OVERHEAD_SCALE = {np.exp(coef[0]):.3e}\nOVERHEAD_BUDGET_POWER = {coef[1]:.3f}\n"
          f"OVERHEAD_PLAYERS_POWER = {coef[2]:.3f}")
    pred = np.exp(A @ coef)
    ratio = data[:, 2] / pred
    print(f"measured / law: median {np.median(ratio):.2f}, range {ratio.min():.2f}..{ratio.max():.2f}")
    per_value = []
    rng = np.random.default_rng(0)
    for p in (8, 10, 12, 14):
        background, x = rng.normal(size=(50, p)), rng.normal(size=p)
        start = time.perf_counter()
        shapleig.explain(lambda X: X[:, 0], background, x, method="exact", progress=False)
        seconds = time.perf_counter() - start
        per_value.append(seconds / ((1 << p) * 50 * p))
        print(f"  enumeration p={p}: {seconds:.3f} s, {per_value[-1]:.2e} s per imputed value", flush=True)
    print(f"ENUMERATION_S_PER_VALUE = {np.median(per_value):.2e}")


def check() -> None:
    """Predicted against measured seconds of ``explain`` on the games of bench_exact_if_cheap.py."""
    from bench_exact_if_cheap import games

    print("| game | decision | speed | predicted GP s | GP run s | predicted s of the path taken | took s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, model, background, x in games():
        p = background.shape[1]
        on = shapleig.explain(model, background, x, budget=4 * p, seed=0, progress=False)
        start = time.perf_counter()
        shapleig.explain(model, background, x, budget=4 * p, seed=0, progress=False, exact_if_cheap=False)
        gp_run = time.perf_counter() - start
        d = on.info["exact_if_cheap"]
        print(f"| {name} | {'enumerate' if d['enumerate'] else 'GP'}{' (probed)' if d.get('probed') else ''} | "
              f"{d['speed']:.2f} | {d['gp_s']:.3g} | {gp_run:.3g} | {d['predicted_s']:.3g} | {d['took_s']:.3g} |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[6, 8, 10, 12, 14, 16])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        check()
    else:
        fit_law(args.players, args.seeds)


if __name__ == "__main__":
    main()
