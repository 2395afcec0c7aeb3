"""Benchmark: a LightGBM tunability study, ShaplEIG against the baselines, on real tuning runs.

For each dataset, the game is the tunability of LightGBM's default 8-hyperparameter space
(``shapleig_tasks.hpi.default_space``): v(S) = best 3-fold CV score of a seeded random search of
``--inner-budget`` trials over the hyperparameters in S (the rest at LightGBM's defaults). Its
ground truth enumerates all 2^p coalitions once, with a progress bar, through an evaluation store
(``--cache``; a killed enumeration resumes). The methods then run on that table at budgets 2p..8p
over a few seeds (shapleig_tasks.harness), and the script prints the MSE table, the mean ranks, and the
time of one evaluation against each method's selection time per evaluation.

``--hypershap`` also compares, on the first dataset, HyperSHAP's values (a random-forest surrogate
fitted to as many true objective calls as ShaplEIG's 8p run needed, then exact Shapley values of
the same tunability game on the surrogate) with ShaplEIG's, both against the true values.

    OMP_NUM_THREADS=1 python scripts/studies/benchmark_hpi.py --jobs 2 --hypershap   # ~20 min on 2 cores, first run
    OMP_NUM_THREADS=1 python scripts/studies/benchmark_hpi.py                       # rerun: tables come from the cache
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shapleig import BudgetedGame, EvaluationStore, ExecutorEvaluator, all_coalitions  # noqa: E402
from shapleig.extras import missing_modules  # noqa: E402
from shapleig_tasks.catalog import Task  # noqa: E402
from shapleig_tasks.harness import run_benchmark  # noqa: E402
from shapleig_tasks.hpi import prepare_study  # noqa: E402
from shapleig_tasks.plots import mse_table, rank_table  # noqa: E402
from shapleig_tasks.tables import TableGame  # noqa: E402

METHODS = ("shapleig", "shapleig:surrogate=shared", "shapleig-published", "permutation", "kernelshap", "leverage-shap",
           "regression-msr")


def build_game(dataset: str, args: argparse.Namespace):
    """The tunability game of one dataset and the folder of its enumeration store (named by the
    game's fingerprint, so a changed game never meets an old store)."""
    from shapleig.runs.budget import game_fingerprint

    study = prepare_study("lightgbm", dataset, study="tunability", inner_budget=args.inner_budget,
                          n_folds=args.folds, seed=args.game_seed, budget="2p", method="permutation",
                          out=Path(args.cache))
    folder = Path(args.cache) / f"tunability-lightgbm-{dataset}-{game_fingerprint(study.game)[:10]}"
    return study.game, folder


def enumerate_game(game, folder: Path, jobs: int) -> tuple[TableGame, float]:
    """All 2^p values (resuming from the store) and the mean seconds of one evaluation."""
    from tqdm.auto import tqdm

    z = all_coalitions(game.n_players)
    with EvaluationStore(folder / "evaluations.sqlite") as store:
        pool = None
        if jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            pool = ProcessPoolExecutor(jobs)
        try:
            evaluator = ExecutorEvaluator(pool) if pool is not None else None
            budgeted = BudgetedGame(game, z.shape[0], store=store, evaluator=evaluator)
            bar = tqdm(total=z.shape[0], desc=folder.name, unit="coalition")
            values = np.empty(z.shape[0])
            step = 2 * max(jobs, 1)
            for s in range(0, z.shape[0], step):
                values[s : s + step] = budgeted(z[s : s + step])
                bar.update(min(step, z.shape[0] - s))
            bar.close()
        finally:
            if pool is not None:
                pool.shutdown()
        seconds = np.array([r.seconds for r in store.records() if r.status == "ok"])
    return TableGame(z, values, name=folder.name), float(seconds.mean())


def compare_hypershap(game, table: TableGame, df: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """HyperSHAP (surrogate fitted to as many true objective calls as ShaplEIG's largest run) vs
    ShaplEIG (true tuning runs) on the same tunability game; MSE against the exact values."""
    from ConfigSpace import Configuration
    from hypershap import ExplanationTask, HyperSHAP

    import shapleig

    exact = table.exact_values()
    p = game.n_players
    budget = 8 * p
    rows = []
    for seed in range(args.seeds):
        # ShaplEIG on the table returns what it returns on the live game (same values, same seed);
        # the objective calls it would pay are the distinct configurations of its tuning runs
        budgeted = BudgetedGame(table, budget)
        est = shapleig.ShaplEIG().estimate(budgeted, budget, seed=seed)
        rows_evaluated, _ = budgeted.history()
        calls = sum(len(np.unique(game.tuner.trial_vectors(game.space, r, game.seed), axis=0)) for r in rows_evaluated)
        cs = game.space.space
        start = time.perf_counter()
        task = ExplanationTask.from_function(cs, lambda c: game.objective(dict(c)), n_samples=calls, seed=seed)
        iv = HyperSHAP(task).tunability(Configuration(cs, values=game.space.baseline), index="SV", order=1,
                                        n_samples=game.tuner.n_trials, seed=game.seed)
        hs_s = time.perf_counter() - start
        hs = np.array([iv.dict_values.get((i,), 0.0) for i in range(p)])
        rows.append({"seed": seed, "objective_calls": calls, "shapleig_mse": float(np.mean((est.values - exact) ** 2)),
                     "hypershap_mse": float(np.mean((hs - exact) ** 2)), "hypershap_s": hs_s})
        print(f"seed {seed}: {calls} objective calls; ShaplEIG MSE {rows[-1]['shapleig_mse']:.3g}, "
              f"HyperSHAP MSE {rows[-1]['hypershap_mse']:.3g}")
        print("  exact    ", np.round(exact, 4))
        print("  ShaplEIG ", np.round(est.values, 4))
        print("  HyperSHAP", np.round(hs, 4))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["diabetes", "breast_cancer", "wine"])
    ap.add_argument("--inner-budget", type=int, default=5, help="random-search trials per tuning run")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--game-seed", type=int, default=0)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--budgets", nargs="+", default=["2p", "4p", "6p", "8p"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="workers for the enumeration and the runs")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "shapleig" / "hpi"))
    ap.add_argument("--out", default="benchmark_hpi.parquet")
    ap.add_argument("--hypershap", action="store_true", help="also compare with HyperSHAP on the first dataset")
    args = ap.parse_args(argv)
    if args.hypershap and missing_modules(("hypershap",)):  # before the (long) run, not after it
        ap.error("--hypershap needs HyperSHAP, the optional extra hypershap: pip install -e '.[hypershap]' "
                 "(it pins an older shapiq: use an environment without the shapiq extra)")

    tasks, timing, games = [], {}, {}
    for ds in args.datasets:
        game, folder = build_game(ds, args)
        start = time.perf_counter()
        table, eval_s = enumerate_game(game, folder, args.jobs)
        print(f"{ds}: p = {game.n_players}, 2^p = {2 ** game.n_players} tuning runs ready in "
              f"{time.perf_counter() - start:.0f} s; one evaluation (a {args.inner_budget}-trial tuning run) "
              f"= {eval_s:.2f} s; exact Shapley values {np.round(table.exact_values(), 4).tolist()}")
        timing[ds] = eval_s
        games[ds] = (game, table)
        tasks.append(Task(name=f"tunability-{ds}", group=f"tunability-{ds}", kind="table",
                          factory=lambda t=table: t, description=f"LightGBM tunability on {ds}"))
    df = run_benchmark(tasks, args.methods, args.budgets, args.seeds, n_jobs=args.jobs, out=args.out,
                       progress=False)
    pd.set_option("display.width", 200)
    print("\nmean MSE over seeds\n", mse_table(df).to_string(float_format=lambda x: f"{x:.3g}"))
    print("\nmean rank (1 = best)\n", rank_table(df).to_string(float_format=lambda x: f"{x:.2f}"))
    top = df[df["budget"] == df.groupby("task")["budget"].transform("max")]
    per_step = (top.assign(sel_per_eval=top["selection_s"] / top["evaluations"])
                .groupby(["task", "method"])["sel_per_eval"].mean().unstack("task"))
    per_step.loc["one evaluation (tuning run)"] = [timing[c.removeprefix("tunability-")] for c in per_step.columns]
    print("\nseconds: selection time per evaluation (largest budget) vs one evaluation\n",
          per_step.to_string(float_format=lambda x: f"{x:.3g}"))
    if args.hypershap:
        game, table = games[args.datasets[0]]
        comp = compare_hypershap(game, table, df, args)
        print("\nHyperSHAP (surrogate, exact) vs ShaplEIG (true runs, 8p), mean over seeds\n",
              comp.mean().to_string(float_format=lambda x: f"{x:.3g}"))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
