"""Reproduce the LSS paper's airport results (Pollmann & Staudacher, Table 7; docs/baselines.md §12).

Airport game, n = 100 players, T = 50,000, ``draws`` accounting as in the paper (tau = T draws,
v(empty) = 0 not counted, v(N) not counted; S-LSS and SRS-LSS overshoot T by their allocation).
Each estimator gets a BudgetedGame with room for every distinct coalition its draws can need
(T + n^2 + 2), so the budget never cuts the paper's draw counts; the distinct evaluations used
are reported alongside.

Usage (from the repository root)::

    .venv/bin/python scripts/repro/lss_airport.py --runs 30
    .venv/bin/python scripts/repro/lss_airport.py --runs 5 --accounting distinct   # project rule

The last column is the wall time per run (a speed benchmark at n = 100, T = 50,000).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# run from anywhere: the repository root first on the path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shapleig_baselines as baselines  # noqa: E402
from shapleig.seeding import spawn_seeds  # noqa: E402

# Table 7 of the paper: mean MSE over 1000 runs and its 95% CI; mean max deviation
PAPER_TABLE7 = {
    "unbiased-kernelshap": (0.01993, 0.01976, 0.02011, 0.38747),
    "lss": (0.01821, 0.01805, 0.01837, 0.37076),
    "s-lss": (0.00160, 0.00158, 0.00162, 0.12253),
    "srs-lss": (8.36e-5, 8.27e-5, 8.45e-5, 0.03017),
    "kernelshap": (0.00627, 0.00622, 0.00633, 0.21693),
}
LABELS = {"unbiased-kernelshap": "UKS", "lss": "LSS", "s-lss": "S-LSS", "srs-lss": "SRS-LSS", "kernelshap": "KS"}

AIRPORT_LEVELS = ((1, 8), (2, 12), (3, 6), (4, 14), (5, 8), (6, 9), (7, 13), (8, 10), (9, 10), (10, 10))


def airport_game():
    """The standard 100-player airport game: shapleig_tasks.synthetic.AirportGame, else a local copy."""
    try:
        from shapleig_tasks.synthetic import AirportGame

        game = AirportGame()
        return game, game.exact_values()
    except ImportError:  # the games module is optional for this script
        from shapleig.games.game import FunctionGame

        costs = np.concatenate([np.full(k, float(c)) for c, k in AIRPORT_LEVELS])
        n = costs.shape[0]
        order = np.argsort(costs, kind="stable")
        inc = np.diff(np.concatenate([[0.0], costs[order]])) / (n - np.arange(n))
        phi = np.empty(n)
        phi[order] = np.cumsum(inc)
        game = FunctionGame(lambda z: np.max(np.where(z, costs[None, :], 0.0), axis=1, initial=0.0), n, "airport")
        return game, phi


def run_reproduction(
    runs: int = 30, draws: int = 50_000, seed: int = 0, methods=tuple(PAPER_TABLE7), accounting: str = "draws"
) -> dict:
    """MSE and max deviation per run for each method: ``{name: dict(mse=float[runs], maxdev=..., ...)}``.

    ``accounting="draws"``: the paper's rule (T = ``draws`` draws, room for every distinct
    coalition). ``"distinct"``: the project rule with budget ``draws`` distinct coalitions.
    """
    game, phi = airport_game()
    n = game.n_players
    budget = draws + n * n + 2 if accounting == "draws" else draws
    seeds = spawn_seeds(seed, runs)
    out = {}
    for name in methods:
        if accounting == "draws":
            est = baselines.get(name, accounting="draws", draws=draws)
        else:
            est = baselines.get(name)
        mse, maxdev, n_draws, n_evals, wall = [], [], [], [], []
        for s in seeds:
            t0 = time.perf_counter()
            r = est.estimate(game, budget, seed=s)
            wall.append(time.perf_counter() - t0)
            err = r.values - phi
            mse.append(float(np.mean(err**2)))
            maxdev.append(float(np.max(np.abs(err))))
            n_draws.append(r.info["n_draws"])
            n_evals.append(r.evaluations)
            if r.info.get("truncated"):
                raise RuntimeError(f"{name}: the budget cut the draws short")
        out[name] = {
            "mse": np.array(mse),
            "maxdev": np.array(maxdev),
            "n_draws": np.array(n_draws),
            "n_evaluations": np.array(n_evals),
            "wall_s": np.array(wall),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--draws", type=int, default=50_000, help="the paper's T")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", nargs="*", default=list(PAPER_TABLE7))
    ap.add_argument(
        "--accounting",
        choices=("draws", "distinct"),
        default="draws",
        help="draws: the paper's rule (reproduction); distinct: the project rule, budget = T distinct coalitions",
    )
    args = ap.parse_args(argv)
    res = run_reproduction(args.runs, args.draws, args.seed, tuple(args.methods), args.accounting)
    print(f"airport n=100, T={args.draws}, {args.accounting} accounting, {args.runs} runs (paper: 1000 runs, draws accounting)")
    header = f"{'method':8s} {'MSE':>10s} {'+-SE':>9s} {'paper MSE':>10s} {'ratio':>6s} {'maxdev':>8s} {'paper':>8s} {'draws':>7s} {'distinct':>8s} {'s/run':>6s}"
    print(header)
    for name, r in res.items():
        paper = PAPER_TABLE7.get(name)
        m = r["mse"].mean()
        se = r["mse"].std(ddof=1) / np.sqrt(len(r["mse"])) if len(r["mse"]) > 1 else float("nan")
        ratio = m / paper[0] if paper else float("nan")
        print(
            f"{LABELS.get(name, name):8s} {m:10.3e} {se:9.1e} {paper[0] if paper else float('nan'):10.3e} {ratio:6.3f} "
            f"{r['maxdev'].mean():8.5f} {paper[3] if paper else float('nan'):8.5f} {int(r['n_draws'].mean()):7d} "
            f"{int(r['n_evaluations'].mean()):8d} {r['wall_s'].mean():6.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
