"""The order-k part of bench_indices.py: ShaplEIG against shapiq's approximators of the same index and order.

shapiq has no stored anchors above order 2, so its approximators run here, live, on the same tables,
budgets and seeds (needs shapiq, Python >= 3.12). Run through bench_indices.py (``--max-order 3``)
or directly with the same options:

    OMP_NUM_THREADS=1 .venv312/bin/python scripts/bench/bench_indices.py --max-order 3 --jobs 1 \\
        --out /tmp/bench_order3.csv --resume
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bench_indices import ANCHORS, ANCHORS_B, GAMES, ORDER_K_BUDGETS, estimator, geomean, selected  # noqa: E402

from shapleig_tasks.tables import TableGame  # noqa: E402

SUITES = {"public": ANCHORS, "suite B": ANCHORS_B}
KEYS = ["index", "suite", "game", "budget_spec"]


def tables() -> pd.DataFrame:
    """The first table of every suite in the two index anchor files (the order-2 benchmark's tables)."""
    out = []
    for suite, path in SUITES.items():
        anchors = pd.read_csv(path)
        t = anchors[["game_type", "p", "table_file"]].drop_duplicates().assign(suite=suite)
        out.append(t)
    return pd.concat(out).sort_values(["p", "suite"], kind="stable").reset_index(drop=True)


def shapiq_methods(index: str, order: int, wanted: list[str] | None) -> list[str]:
    """Every shapiq approximator that estimates all orders 1..order of ``index`` (the others are refused)."""
    if wanted == []:
        return []  # ``--methods`` with no names: ShaplEIG alone (no shapiq needed, any Python)
    from shapleig_baselines.shapiq_methods import ShapiqMethod, shapiq_approximators

    names = []
    for name in sorted(shapiq_approximators(index)):
        if wanted is not None and name not in wanted:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ShapiqMethod(name, options={"index": index, "max_order": order})
        except (ValueError, ImportError):
            continue  # RegressionMSR (SV/BV only), SHAPIQ / SVARMIQ of FSII and FBII (top order only)
        names.append(name)
    return names


def _run_one(job: tuple, args: argparse.Namespace) -> dict:
    """One run: ShaplEIG or one shapiq approximator on one (table, index, budget, seed)."""
    suite, game_type, p, table_file, index, spec, budget, seed, method = job
    game = TableGame.from_npz(GAMES / game_type / str(p) / table_file)
    exact = game.exact_values(index=index, max_order=args.max_order)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "ShaplEIG":
            est = estimator(index, args, args.acquisition).estimate(game, budget, seed=seed)
        else:
            from shapleig_baselines.shapiq_methods import ShapiqMethod

            est = ShapiqMethod(method, options={"index": index, "max_order": args.max_order}).estimate(
                game, budget, seed=seed)
    wall = time.perf_counter() - start
    err = np.asarray(est.values) - exact
    orders = np.array([len(T) for T in est.terms])
    row = dict(suite=suite, game_type=game_type, p=int(p), table_file=table_file, index=index, order=args.max_order,
               method=method, budget_spec=spec, budget=int(budget), seed=int(seed), mse=float(np.mean(err**2)),
               evaluations=int(est.evaluations), wall_s=wall, n_terms=int(err.size))
    for t in range(1, args.max_order + 1):
        row[f"mse_order{t}"] = float(np.mean(err[orders == t] ** 2))
    if est.std is not None:
        z = np.abs(err) / np.maximum(np.asarray(est.std), 1e-300)
        row["covered"] = int(np.sum(z <= 1.959964))
    return row


def _jobs(args: argparse.Namespace) -> list[tuple]:
    budgets = args.budgets or list(ORDER_K_BUDGETS)
    out = []
    for _, t in tables().iterrows():
        if not selected(t.game_type, t.p, args.games):
            continue
        for index in args.indices:
            methods = ["ShaplEIG"] + shapiq_methods(index, args.max_order, args.methods)
            for seed in args.seeds:
                for spec in budgets:
                    budget = int(spec[:-1]) * int(t.p) if spec.endswith("p") else int(spec)
                    out += [(t.suite, t.game_type, int(t.p), t.table_file, index, spec, budget, seed, m)
                            for m in methods]
    return out


def _done(path: str | None) -> tuple[list[dict], set]:
    if not path or not Path(path).is_file():
        return [], set()
    df = pd.read_csv(path)
    keys = set(zip(df.game_type, df.p, df.table_file, df["index"], df.budget_spec, df.seed, df.method))
    return df.to_dict("records"), keys


def order_k(args: argparse.Namespace) -> None:
    """Run every (table, index, budget, seed, method) not yet in ``--out`` (with ``--resume``), then summarise."""
    rows, done = _done(args.out) if args.resume else ([], set())
    jobs = [j for j in _jobs(args) if (j[1], j[2], j[3], j[4], j[5], j[7], j[8]) not in done]
    print(f"{len(jobs)} runs to do ({len(done)} read from {args.out})", flush=True)
    if args.jobs > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=args.jobs, return_as="generator")(delayed(_run_one)(j, args) for j in jobs)
    else:
        results = (_run_one(j, args) for j in jobs)
    for row in results:
        rows.append(row)
        cover = f" cover {row['covered']}/{row['n_terms']}" if "covered" in row else ""
        print(f"{row['index']} {row['suite']} {row['game_type']}/{row['p']} {row['budget_spec']} seed {row['seed']} "
              f"{row['method']}: mse {row['mse']:.3g}{cover} {row['wall_s']:.1f}s", flush=True)
        if args.out:  # after every run, so a long benchmark can be stopped and resumed
            pd.DataFrame(rows).to_csv(args.out, index=False)
    summarise_order_k(pd.DataFrame(rows), args.cells_out, getattr(args, "reference_cells", None))


def summarise_order_k(df: pd.DataFrame, cells_out: str | None = None, reference: str | None = None) -> pd.DataFrame:
    """Per cell: ShaplEIG's MSE (geometric mean over seeds) over the best shapiq approximator's; coverage.

    Args:
        df: the per-run rows written by ``--out``.
        cells_out: if given, the per-cell table is also written to this CSV.
        reference: a per-cell CSV written by ``--cells-out`` (e.g. ``docs/data/bench_order3_cells.csv``):
            cells without shapiq rows in ``df`` take its best shapiq approximator (so ShaplEIG alone,
            ``--methods`` with no names, is compared with stored shapiq runs), and every cell gains
            ``previous`` (its ShaplEIG MSE) and ``vs_previous`` (this run's over it: the same seeds,
            so a paired ratio when they match).

    Returns:
        One row per cell (index, suite, game, budget_spec): ``shapleig`` and ``best_shapiq`` (geometric
        means of the MSE over seeds), ``best_method``, ``ratio``, ``full_table``, ``seeds`` (ShaplEIG's
        runs) and ``coverage`` (ShaplEIG's 95% intervals, pooled over seeds and terms).
    """
    df = df.assign(game=df.game_type + "/" + df.p.astype(str))
    per_method = df.groupby(KEYS + ["method"]).mse.apply(geomean)
    ours = per_method.xs("ShaplEIG", level="method").rename("shapleig")
    theirs = per_method.drop("ShaplEIG", level="method")
    best = theirs.groupby(level=KEYS).min().rename("best_shapiq")
    best_name = theirs.groupby(level=KEYS).idxmin().map(lambda k: k[-1]).rename("best_method")
    stored = None
    if reference:
        stored = pd.read_csv(reference).set_index(KEYS)
        missing = stored.index.difference(best.index)
        best = pd.concat([best, stored.loc[missing, "best_shapiq"]])
        best_name = pd.concat([best_name, stored.loc[missing, "best_method"]])
    cells = pd.concat([ours, best, best_name], axis=1, join="inner")
    if stored is not None:
        cells["previous"] = stored.shapleig.reindex(cells.index)
        cells["vs_previous"] = cells.shapleig / cells.previous
    cells["ratio"] = cells.shapleig / cells.best_shapiq
    # the mean square of the exact terms is not stored: the MSE relative to the best method's is the ratio;
    # at budget >= 2^p every method sees the whole table: both errors are rounding, the ratio is noise
    full = df.groupby(KEYS).apply(lambda g: bool((g.budget >= 2 ** g.p).all()))
    cells["full_table"] = full.reindex(cells.index).fillna(False).astype(bool)
    mine = df[df.method == "ShaplEIG"]
    cells["seeds"] = mine.groupby(KEYS).seed.nunique().reindex(cells.index)
    if "covered" in mine:
        pooled = mine.groupby(KEYS)[["covered", "n_terms"]].sum()
        cells["coverage"] = (pooled.covered / pooled.n_terms).reindex(cells.index)
    if cells_out:
        cells.to_csv(cells_out)
    table = cells
    pd.set_option("display.width", 220)
    print("\nper cell (geometric mean of MSE over seeds):")
    print(cells.to_string(float_format=lambda x: f"{x:.3g}"))
    cells = cells[~cells.full_table]
    print(f"\n(cells with budget >= 2^p left out below: {int(full.sum())})")
    print("\ngeometric mean of the ratio to the best shapiq approximator, max ratio, cells above 1x:")
    for level in (["index"], ["index", "suite"]):
        for key, g in cells.groupby(level=level):
            name = " / ".join(key) if isinstance(key, tuple) else key
            print(f"  {name:22s} geomean {geomean(g.ratio):.3f}  max {g.ratio.max():.3f}  "
                  f"above 1x {int((g.ratio > 1).sum())}/{len(g)}")
    print(f"  {'all':22s} geomean {geomean(cells.ratio):.3f}  max {cells.ratio.max():.3f}  "
          f"above 1x {int((cells.ratio > 1).sum())}/{len(cells)}")
    if stored is not None:
        print("\nthis run's MSE over the reference's ShaplEIG (per cell; geometric mean, max, cells above 1x):")
        for index, g in cells.dropna(subset=["vs_previous"]).groupby(level="index"):
            print(f"  {index:22s} geomean {geomean(g.vs_previous):.3f}  max {g.vs_previous.max():.3f}  "
                  f"above 1x {int((g.vs_previous > 1).sum())}/{len(g)}")
    if "covered" in mine:
        cov = mine.groupby(["index", "suite", "budget_spec"])[["covered", "n_terms"]].sum()
        cov["coverage"] = cov.covered / cov.n_terms
        print("\ncoverage of ShaplEIG's 95% intervals (pooled over tables, seeds and terms):")
        print(cov.coverage.unstack("budget_spec").to_string(float_format=lambda x: f"{x:.3f}"))
        for index, g in mine.groupby("index"):
            print(f"  {index:6s} pooled {g.covered.sum() / g.n_terms.sum():.3f}")
    print(f"\nwall per run (ShaplEIG): median {mine.wall_s.median():.1f} s, max {mine.wall_s.max():.1f} s")
    return table


if __name__ == "__main__":
    from bench_indices import main

    if "--max-order" not in sys.argv and not any(a.startswith("--max-order=") for a in sys.argv):
        sys.argv[1:1] = ["--max-order", "3"]
    main()
