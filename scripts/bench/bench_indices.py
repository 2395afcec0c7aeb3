"""Benchmark: ShaplEIG for Banzhaf values and interactions against shapiq 1.8.0's approximators.

Three parts (each single-threaded; set ``OMP_NUM_THREADS=1``):

- ``--time``: wall time of one ``ShaplEIG(index=...)`` run at budget 32p on a p = 14 table
  (AdultCensus feature selection), per index and refit schedule.
- accuracy (default): on the tables of ``shapiq-1.8.0_index_public.csv`` (first table of each
  public suite), seeds 0-2, BV at 2p/4p/8p and k-SII / FSII at 8p/16p/32p, one run per budget;
  MSE over every term of order 1..max_order against the exact index of the full table. Prints,
  per (index, game, budget) cell, the geometric mean of the MSE over seeds, the best shapiq
  method's and the ratio; per index the geometric mean of the ratios and the largest; and the
  coverage of the 95% intervals per index, suite and budget (pooled over seeds and terms).

- ``--max-order 3`` (any order k > 2, or ``--live`` at order 2 for the indices without stored anchors,
  e.g. ``--live --indices FBII BII``): shapiq has no stored anchors there, so its approximators of
  the same index and order run here, live (needs shapiq: Python >= 3.12, ``pip install
  'shapleig[shapiq]'``), beside ShaplEIG: every shapiq approximator that estimates all orders
  1..k of the index (k-SII: KernelSHAPIQ, InconsistentKernelSHAPIQ, SVARMIQ, SHAPIQ,
  PermutationSamplingSII, ProxySHAP, ProxySPEX; STII: SVARMIQ, SHAPIQ, PermutationSamplingSTII,
  ProxySHAP, ProxySPEX; FSII: RegressionFSII, ProxySHAP, ProxySPEX; FBII: RegressionFBII,
  ProxySHAP, ProxySPEX), on the tables of both anchor files (public suites and suite B), seeds 0-2,
  budgets 16p and 32p, one run per budget. MSE over every term of order 1..k against the exact
  index of the full table; per cell (index, table, budget) the geometric mean over seeds, the best
  shapiq approximator and the ratio, the cells above 1x, the geometric mean of the ratios per index
  and suite, and the pooled coverage of ShaplEIG's 95% intervals per index. ``--out`` is written
  after every run and read back by ``--resume``; ``--cells-out`` writes the per-cell summary
  (with ``--summary-from``, from a finished ``--out``). ``--games`` takes game types or
  ``<game type>/<p>`` (one table of a type).

    OMP_NUM_THREADS=1 python scripts/bench/bench_indices.py --time
    OMP_NUM_THREADS=1 python scripts/bench/bench_indices.py --refit adaptive --out /tmp/bench_indices.csv
    OMP_NUM_THREADS=1 .venv312/bin/python scripts/bench/bench_indices.py --max-order 3 --jobs 1 \
        --out /tmp/bench_order3.csv --resume
    python scripts/bench/bench_indices.py --max-order 3 --summary-from /tmp/bench_order3.csv \
        --cells-out /tmp/bench_order3_cells.csv
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from shapleig import ShaplEIG  # noqa: E402
from shapleig_tasks.tables import TableGame  # noqa: E402

SHARED = Path(os.environ.get("SHAPLEIG_SHARED") or ROOT.parent / "shared")
ANCHORS = SHARED / "data" / "anchors" / "shapiq-1.8.0_index_public.csv"
ANCHORS_B = SHARED / "data" / "anchors" / "shapiq-1.8.0_index_suites_b.csv"
GAMES = SHARED / "data" / "games"
BUDGETS = {"BV": ("2p", "4p", "8p"), "k-SII": ("8p", "16p", "32p"), "FSII": ("8p", "16p", "32p")}
TIMING_TABLE = "AdultCensus_FeatureSelection_Game/14/model_name=gradient_boosting_1.npz"


def geomean(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.exp(np.mean(np.log(x))))


ORDER_K_INDICES = ("k-SII", "STII", "FSII", "FBII")
ORDER_K_BUDGETS = ("16p", "32p")


def selected(game_type: str, p: int, games: list[str] | None) -> bool:
    """Whether ``--games`` keeps a table: no filter, its game type, or ``<game type>/<p>`` (one table of a type).

    A game type can have tables of several sizes (ImageClassifier_Game: p = 9 and p = 14), so
    ``ImageClassifier_Game/14`` names only the larger one.
    """
    return not games or game_type in games or f"{game_type}/{int(p)}" in games


def estimator(index: str, args: argparse.Namespace, acquisition: str = "eig") -> ShaplEIG:
    options = {"index": index, "acquisition": acquisition, "acquisition_index": args.acquisition_index}
    if args.max_order != 2 and index != "BV":
        options["max_order"] = args.max_order
    if args.refit is not None:
        options["refit"] = args.refit
    if args.hold_out_empty is not None:
        options["hold_out_empty"] = args.hold_out_empty == "on"
    if args.calibrate is not None:
        options["calibrate"] = {"true": True, "false": False}.get(args.calibrate, args.calibrate)
    if args.surrogate is not None:
        options["surrogate"] = args.surrogate
    for pair in args.option or ():
        key, _, text = pair.partition("=")
        try:
            options[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[key] = text  # a plain word, e.g. initial_design=uniform
    return ShaplEIG.from_options(**options)


def timing(args: argparse.Namespace) -> None:
    game = TableGame.from_npz(GAMES / TIMING_TABLE)
    p = game.n_players
    for index in args.indices:
        if index == "BV":
            continue
        start = time.perf_counter()
        est = estimator(index, args).estimate(game, 32 * p, seed=0)
        wall = time.perf_counter() - start
        mse = float(np.mean((est.values - game.exact_values(index=index)) ** 2))
        print(f"{index:6s} p={p} budget={32 * p} refit={args.refit or 'default'}: {wall:.1f} s "
              f"(fits {est.info['fit_seconds']:.1f} s, {est.info['n_fits']} fits), mse {mse:.3g}", flush=True)


def accuracy(args: argparse.Namespace) -> None:
    anchors = pd.read_csv(ANCHORS)
    tables = anchors[["game_type", "p", "table_file"]].drop_duplicates().sort_values("p", kind="stable")
    rows = []
    for index in args.indices:
        for _, t in tables.iterrows():
            if not selected(t.game_type, t.p, args.games):
                continue
            game = TableGame.from_npz(GAMES / t.game_type / str(t.p) / t.table_file)
            exact = game.exact_values(index=index)
            specs = [(spec, int(spec[:-1]) * int(t.p)) for spec in BUDGETS[index]]
            for seed in args.seeds:
                # --anytime: one run at the largest budget, smaller budgets read from its trace; a
                # budget that covers the table enumerates (no trace of smaller budgets), so it runs alone
                full = [sb for sb in specs if sb[1] >= 2 ** int(t.p)]
                part = [sb for sb in specs if sb[1] < 2 ** int(t.p)]
                runs = ([part] if part else []) + [[sb] for sb in full] if args.anytime else [[sb] for sb in specs]
                for group in runs:
                    start = time.perf_counter()
                    est = estimator(index, args, args.acquisition).estimate(game, group[-1][1], seed=seed)
                    wall = time.perf_counter() - start
                    for spec, budget in group:
                        last = budget == group[-1][1]
                        values = est.values if last else est.values_at(budget)
                        std = est.std if last else est.std_at(budget)
                        err = values - exact
                        orders = np.array([len(T) for T in est.terms])
                        z = np.abs(err) / np.maximum(std, 1e-300)
                        rows.append(dict(index=index, game_type=t.game_type, p=int(t.p), budget_spec=spec,
                                         budget=budget, seed=seed, mse=float(np.mean(err**2)),
                                         mse_order1=float(np.mean(err[orders == 1] ** 2)),
                                         covered=int(np.sum(z <= 1.959964)), n_terms=int(err.size),
                                         wall_s=wall if last else float("nan")))
                        print(f"{index} {t.game_type} {spec} seed {seed}: mse {rows[-1]['mse']:.3g} "
                              f"cover {rows[-1]['covered']}/{err.size} {wall:.1f}s", flush=True)
                    if args.out:  # after every run, so a long benchmark can be stopped and summarised
                        pd.DataFrame(rows).to_csv(args.out, index=False)
    df = pd.DataFrame(rows)
    summarise(df, anchors)


def summarise(df: pd.DataFrame, anchors: pd.DataFrame) -> None:
    df = df.assign(game=df.game_type + "/" + df.p.astype(str))
    anchors = anchors.assign(game=anchors.game_type + "/" + anchors.p.astype(str))
    keys = ["index", "game", "budget_spec"]
    ours = df.groupby(keys).mse.apply(geomean).rename("shapleig")
    per_method = anchors.groupby(keys + ["method"]).mse.apply(geomean)
    best = per_method.groupby(level=[0, 1, 2]).min().rename("best_shapiq")
    best_name = per_method.groupby(level=[0, 1, 2]).idxmin().map(lambda k: k[3]).rename("best_method")
    cells = pd.concat([ours, best, best_name], axis=1, join="inner")
    cells["ratio"] = cells.shapleig / cells.best_shapiq
    # at budget >= 2^p every method sees the whole table: both errors are rounding, the ratio is noise
    full = df.groupby(keys).apply(lambda g: bool((g.budget >= 2 ** g.p).all()))
    cells["full_table"] = full.reindex(cells.index).fillna(False).astype(bool)
    pd.set_option("display.width", 200)
    print("\nper cell (geometric mean of MSE over seeds):")
    print(cells.to_string(float_format=lambda x: f"{x:.3g}"))
    print("\nper index: geometric mean of ratio, max ratio, cells")
    for index, g in cells.groupby(level=0):
        g = g[~g.full_table]
        print(f"  {index:6s} geomean {geomean(g.ratio):.3f}  max {g.ratio.max():.3f}  cells {len(g)} "
              f"(full-table cells left out)")
    cov = df.groupby(keys)[["covered", "n_terms"]].sum()
    cov["coverage"] = cov.covered / cov.n_terms
    print("\ncoverage of 95% intervals (pooled over seeds and terms):")
    print(cov.coverage.unstack("budget_spec").to_string(float_format=lambda x: f"{x:.3f}"))
    for index, g in cov.groupby(level=0):
        print(f"  {index:6s} min {g.coverage.min():.3f}  pooled {g.covered.sum() / g.n_terms.sum():.3f}")
    walls = df.wall_s.dropna()
    print(f"\nwall per run: median {walls.median():.1f} s, max {walls.max():.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", action="store_true", help="only the timing run at 32p, p = 14")
    parser.add_argument("--max-order", type=int, default=2,
                        help="the interactions' order: 2 against the stored anchors; another k runs shapiq live")
    parser.add_argument("--indices", nargs="+", default=None,
                        help="default: BV k-SII FSII (order 2), k-SII STII FSII FBII (order k)")
    parser.add_argument("--budgets", nargs="+", default=None,
                        help="order k: the budgets run (default 16p 32p); order 2: with --summary-from, the budgets summarised")
    parser.add_argument("--methods", nargs="*", default=None,
                        help="order k only: the shapiq approximators (default: every one of the index and order)")
    parser.add_argument("--jobs", type=int, default=1, help="order k only: runs in parallel (joblib processes)")
    parser.add_argument("--resume", action="store_true", help="order k only: keep the runs already in --out")
    parser.add_argument("--live", action="store_true",
                        help="run shapiq live at order 2 too (indices without stored anchors: FBII, BII, ...)")
    parser.add_argument("--games", nargs="*", default=None, help="game types, or <game type>/<p> for one table of a type (default: every anchor table)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--refit", default=None, help="refit schedule (default: ShaplEIG's)")
    parser.add_argument("--acquisition", default="eig", help="eig, uncertainty or random (ablation arms)")
    parser.add_argument("--acquisition-index", default=None, help="acquire for another index (e.g. SV)")
    parser.add_argument("--anytime", action="store_true",
                        help="one run per seed at the largest budget, smaller budgets from its trace")
    parser.add_argument("--calibrate", default=None, help="the read-out (default: ShaplEIG's), e.g. jackknife")
    parser.add_argument("--surrogate", default=None,
                        help="the surrogate (default: ShaplEIG's), e.g. graded, graded-ard, shared")
    parser.add_argument("--hold-out-empty", choices=("on", "off"), default=None,
                        help="hold v(empty) out of the GP (default: the index's default)")
    parser.add_argument("--option", action="append", default=None, metavar="KEY=VALUE",
                        help="any other ShaplEIG option by name (repeatable), e.g. --option initial_design=uniform")
    parser.add_argument("--out", default=None, help="write the per-run rows to this CSV")
    parser.add_argument("--summary-from", default=None, help="only summarise a CSV written by --out")
    parser.add_argument("--reference-cells", default=None,
                        help="order k only: a per-cell CSV of --cells-out (e.g. docs/data/bench_order3_cells.csv) "
                             "whose best shapiq approximator stands in for cells without shapiq runs, and whose "
                             "ShaplEIG MSE is the 'previous' column")
    parser.add_argument("--cells-out", default=None,
                        help="order k only: write the per-cell summary (MSE ratio, coverage) to this CSV")
    args = parser.parse_args()
    if args.indices is None:
        args.indices = ["BV", "k-SII", "FSII"] if args.max_order == 2 and not args.live else list(ORDER_K_INDICES)
    if args.max_order != 2 or args.live:
        from bench_indices_order import order_k, summarise_order_k  # the live shapiq side (needs shapiq)

        if args.summary_from:
            summarise_order_k(pd.read_csv(args.summary_from), args.cells_out, args.reference_cells)
        else:
            order_k(args)
    elif args.summary_from:
        rows = pd.read_csv(args.summary_from)
        if args.budgets:  # summarise these budgets only (e.g. those an option changes)
            rows = rows[rows.budget_spec.isin(args.budgets)]
        summarise(rows, pd.read_csv(ANCHORS))
    elif args.time:
        timing(args)
    else:
        accuracy(args)


if __name__ == "__main__":
    main()
