"""Where ShaplEIG pays: its selection overhead and error against paired KernelSHAP and Leverage SHAP,
and the evaluation cost from which it is faster to a given accuracy.

Two real games with p = 10, both enumerated once so every run looks values up (the game's own cost
is then a lookup, and the measured wall time of a run is the method's overhead):

- ``diabetes-explain``: the interventional explanation game of one prediction (row 3) of a LightGBM
  regressor (50 trees) on scikit-learn's diabetes data, 50 background rows (README Task 1);
- ``bike-dv-10``: the shipped public table of the Bike Sharing data-valuation game (shapiq's
  benchmark, gradient boosting, 10 players).

For budgets 2p, 4p, 8p and seeds 0-4, ShaplEIG (the default), paired KernelSHAP and Leverage SHAP
are run; the baselines also at 16p..64p (to know what budget they need for ShaplEIG's error).
Printed:

1. per game, method and budget: overhead (median wall seconds of a run, game lookups excluded) and
   MSE (mean over seeds) against the exact values;
2. for an evaluation cost c of 1 ms, 10 ms, 100 ms, 1 s, 10 s: the wall time ``overhead + budget * c``
   of each method at each budget;
3. the break-even cost: ShaplEIG at budget B reaches MSE m; a baseline needs B' evaluations for an
   MSE <= m (its MSE interpolated log-log between its budgets); ShaplEIG is faster to that accuracy
   when ``O_gp + B c < O_b + B' c``, i.e. for c > (O_gp - O_b) / (B' - B). "> 64p" when the baseline
   does not reach m within 64p evaluations (the bound then uses B' = 64p).

    python scripts/bench/bench_breakeven.py              # about 3-6 minutes on one core
    python scripts/bench/bench_breakeven.py --quick      # 2 seeds, baselines up to 16p
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import shapleig
import shapleig_baselines as baselines
from shapleig.games.coalitions import all_coalitions

ROOT = Path(__file__).resolve().parents[2]
BIKE = ROOT / "tasks/data/games/BikeSharing_DatasetValuation_Game/10/" \
    "model_name=gradient_boosting_player_sizes=increasing_n_players=10_1.npz"
COSTS = (0.001, 0.01, 0.1, 1.0, 10.0)
METHODS = {"shapleig": lambda: shapleig.ShaplEIG(),
           "kernelshap-paired": lambda: baselines.get("kernelshap", paired=True),
           "leverage-shap": lambda: baselines.get("leverage-shap")}


class Lookup:
    """A game served from its full value table (bit order), with the time spent inside it."""

    def __init__(self, table: np.ndarray, name: str) -> None:
        self.table, self.n_players, self.name = np.asarray(table, dtype=np.float64), int(np.log2(len(table))), name
        self.seconds = 0.0

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        codes = np.asarray(Z, dtype=bool) @ (1 << np.arange(self.n_players))
        out = self.table[codes]
        self.seconds += time.perf_counter() - start
        return out

    def params(self) -> dict:
        return {"name": self.name}


def diabetes_table() -> np.ndarray:
    import lightgbm as lgb
    from sklearn.datasets import load_diabetes

    from shapleig.explanation.imputer import ImputerGame

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = lgb.LGBMRegressor(n_estimators=50, verbose=-1).fit(X, y)
    game = ImputerGame(model.predict, X.sample(50, random_state=0), X.iloc[3])
    Z = all_coalitions(10)
    codes = Z @ (1 << np.arange(10))
    table = np.empty(1 << 10)
    table[codes] = game(Z)
    return table


def bike_table() -> np.ndarray:
    from shapleig_tasks.tables import TableGame

    game = TableGame.from_npz(BIKE)
    Z = all_coalitions(game.n_players)
    table = np.empty(1 << game.n_players)
    table[Z @ (1 << np.arange(game.n_players))] = game(Z)
    return table


def run(table: np.ndarray, name: str, seeds: list[int], multiples: dict[str, list[int]]) -> dict:
    """(method, multiple) -> {"overhead": median s, "mse": mean}."""
    game = Lookup(table, name)
    p = game.n_players
    exact = shapleig.exact_shapley(game)
    out = {}
    for method, build in METHODS.items():
        for m in multiples[method]:
            walls, errors = [], []
            for seed in seeds:
                game.seconds = 0.0
                start = time.perf_counter()
                est = build().estimate(game, m * p, seed=seed)
                walls.append(time.perf_counter() - start - game.seconds)
                errors.append(float(np.mean((est.values - exact) ** 2)))
            out[method, m] = {"overhead": statistics.median(walls), "mse": float(np.mean(errors))}
            print(f"  {name} {method} {m}p: overhead {out[method, m]['overhead']:.3f} s, MSE {out[method, m]['mse']:.3g}",
                  flush=True)
    return out


def budget_for(res: dict, method: str, multiples: list[int], target: float) -> float | None:
    """The (log-log interpolated) budget multiple at which ``method``'s MSE reaches ``target``."""
    pts = [(m, res[method, m]["mse"]) for m in multiples]
    if pts[0][1] <= target:
        return float(pts[0][0])
    for (m0, e0), (m1, e1) in zip(pts, pts[1:]):
        if e1 <= target < e0:
            f = (np.log(e0) - np.log(target)) / (np.log(e0) - np.log(e1))
            return float(np.exp(np.log(m0) + f * (np.log(m1) - np.log(m0))))
    return None


def overhead_at(res: dict, method: str, multiples: list[int], m: float) -> float:
    """The baseline's overhead at a (fractional) multiple, interpolated linearly."""
    return float(np.interp(m, multiples, [res[method, k]["overhead"] for k in multiples]))


def report(name: str, res: dict, multiples: dict[str, list[int]], p: int) -> None:
    gp = multiples["shapleig"]
    print(f"\n### {name} (p = {p})\n")
    print("| budget | ShaplEIG overhead (s) | ShaplEIG MSE | KernelSHAP (paired) overhead / MSE | Leverage SHAP overhead / MSE |")
    print("|---|---:|---:|---|---|")
    for m in gp:
        ks, lev = res["kernelshap-paired", m], res["leverage-shap", m]
        print(f"| {m}p | {res['shapleig', m]['overhead']:.2f} | {res['shapleig', m]['mse']:.3g} | "
              f"{ks['overhead']:.3f} / {ks['mse']:.3g} | {lev['overhead']:.3f} / {lev['mse']:.3g} |")
    print("\nwall time (s) = overhead + budget x evaluation cost; ShaplEIG / paired KernelSHAP / Leverage SHAP:\n")
    print("| cost per evaluation | " + " | ".join(f"{m}p" for m in gp) + " |")
    print("|---|" + "---|" * len(gp))
    for c in COSTS:
        cells = []
        for m in gp:
            b = m * p
            walls = [res[k, m]["overhead"] + b * c for k in ("shapleig", "kernelshap-paired", "leverage-shap")]
            cells.append(" / ".join(f"{w:.3g}" for w in walls))
        print(f"| {c * 1000:g} ms | " + " | ".join(cells) + " |")
    print("\nbreak-even cost per evaluation above which ShaplEIG reaches its MSE sooner than the baseline:\n")
    print("| budget | ShaplEIG MSE | KernelSHAP (paired): budget for that MSE, break-even | "
          "Leverage SHAP: budget for that MSE, break-even |")
    print("|---|---:|---|---|")
    for m in gp:
        target = res["shapleig", m]["mse"]
        cells = []
        for base in ("kernelshap-paired", "leverage-shap"):
            ms = multiples[base]
            need = budget_for(res, base, ms, target)
            o_gp = res["shapleig", m]["overhead"]
            if need is None:
                top = ms[-1]
                bound = (o_gp - res[base, top]["overhead"]) / ((top - m) * p)
                cells.append(f"> {top}p, < {bound * 1000:.2g} ms")
            elif need <= m:
                cells.append(f"{need:.2g}p, never (the baseline is as accurate at this budget)")
            else:
                c = (o_gp - overhead_at(res, base, ms, need)) / ((need - m) * p)
                cells.append(f"{need:.2g}p, {c * 1000:.2g} ms")
        print(f"| {m}p | {target:.3g} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, baselines up to 16p")
    args = parser.parse_args()
    seeds = [0, 1] if args.quick else [0, 1, 2, 3, 4]
    top = [2, 4, 8, 16] if args.quick else [2, 4, 8, 16, 32, 64]
    multiples = {"shapleig": [2, 4, 8], "kernelshap-paired": top, "leverage-shap": top}
    print(f"# bench_breakeven: {platform.processor() or platform.machine()}, numpy {np.__version__}, seeds {seeds}")
    for name, make in (("diabetes-explain", diabetes_table), ("bike-dv-10", bike_table)):
        table = make()
        res = run(table, name, seeds, multiples)
        report(name, res, multiples, int(np.log2(len(table))))


if __name__ == "__main__":
    main()
