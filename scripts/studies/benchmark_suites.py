"""The default ShaplEIG against every other method of the project on all nine public table suites.

Suites: vit-9, vit-16, resnet-14, bike-dv-10, bike-dv-10-rf, california-dv-10, california-le-8,
bike-ge-12, adult-fs-14; the first 3 tables of each in file-name order (the tables of
``../shared/data/anchors``: seeds 1, 10, 11); seeds 0..2; budgets 2p, 4p, 8p. Methods: the default
``shapleig``, its four kernels alone (shared and ARD lengthscales, each with and without the size
trend), the previous default (``PREVIOUS``: two kernels, cold refits, jackknife read-out), the
default with adaptive refits (``refit=adaptive``), the published setting (``shapleig-published``)
and every baseline whose minimum budget fits.

Prints:
- gm-MSE (geometric mean over tables x seeds) per (suite, budget) cell and method;
- per cell, the default's ratio to the best other project method, and the summary (worst cell,
  geometric mean over cells);
- coverage of the default's 95% intervals per suite and budget (pooled over tables, seeds and
  players) and pooled over everything;
- seconds per run (anytime GP arms: one run at 8p fills every budget);
- for the cells of the shapiq 1.8.0 anchor file, the ratio of the default (on the anchor's tables
  and seeds) to the best shapiq method, and of the published setting to shapiq's ``ShaplEIG``.

    python scripts/studies/benchmark_suites.py --jobs 2 --out suites.parquet        # about 20 min on 2 cores
    python scripts/studies/benchmark_suites.py --from suites.parquet                  # print again from the table
    python scripts/studies/benchmark_suites.py --suites vit-9 california-le-8 --seeds 2 --methods shapleig shapleig-published

Needs the shared tables (``SHAPLEIG_SHARED`` / ``../shared/data/games``); exits 2 without them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from shapleig_tasks import harness  # noqa: E402
from shapleig_tasks.methods import GP_ARMS, GP_LEVERAGE, KERNEL_ARMS, method_names  # noqa: E402
from shapleig_tasks.metrics import geometric_mean, standardized_errors  # noqa: E402
from shapleig_tasks.paired import method_label, paired_report, with_previous  # noqa: E402

SUITES = ("vit-9", "vit-16", "resnet-14", "bike-dv-10", "bike-dv-10-rf", "california-dv-10",
          "california-le-8", "bike-ge-12", "adult-fs-14")
TABLE_SEEDS = (1, 10, 11)  # the first three tables in file-name order (the anchors' tables)
BUDGETS = ("2p", "4p", "8p")
DEFAULT = "shapleig"
COMPONENTS = KERNEL_ARMS  # the default's four kernels alone
PREVIOUS = "shapleig:calibrate=jackknife,refit=auto-cold,size_trend=False"
GP_METHODS = ("shapleig", *COMPONENTS, PREVIOUS, "shapleig:refit=adaptive", "shapleig-published")
# the shared data folder: SHAPLEIG_SHARED, else ../shared beside the checkout (as the tables)
ANCHOR_DIR = Path(os.environ.get("SHAPLEIG_SHARED") or ROOT.parent / "shared") / "data" / "anchors"
ANCHORS = [ANCHOR_DIR / "shapiq-1.8.0_public.csv", ANCHOR_DIR / "shapiq-1.8.0_suites_b.csv"]
# anchor (game_type, p, model family) -> suite
ANCHOR_SUITES = {
    ("ImageClassifier_Game", 9): "vit-9", ("ImageClassifier_Game", 14): "resnet-14",
    ("ImageClassifier_Game", 16): "vit-16", ("CaliforniaHousing_DatasetValuation_Game", 10): "california-dv-10",
    ("CaliforniaHousing_LocalExplanation_Game", 8): "california-le-8",
    ("BikeSharing_GlobalExplanation_Game", 12): "bike-ge-12", ("AdultCensus_FeatureSelection_Game", 14): "adult-fs-14",
    # suite B (--suites with the names of SUITE_B; its anchors are in shapiq-1.8.0_suites_b.csv)
    ("SentimentAnalysis_Game", 14): "sentiment-14", ("SOUM_Game", 15): "soum-15",
    ("AdultCensus_DataValuation_Game", 15): "adult-dv-15", ("AdultCensus_DatasetValuation_Game", 10): "adult-dsv-10-rf",
    ("CaliforniaHousing_EnsembleSelection_Game", 10): "california-es-10",
    ("BikeSharing_FeatureSelection_Game", 12): "bike-fs-12", ("AdultCensus_LocalExplanation_Game", 14): "adult-le-14",
    ("AdultCensus_UncertaintyExplanation_Game", 14): "adult-ue-14",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", nargs="+", default=list(SUITES))
    ap.add_argument("--tables", type=int, default=3, help="tables per suite, in file-name order (default 3)")
    ap.add_argument("--seeds", default="3", help="a count or a list such as 0,1 (default 3: seeds 0-2)")
    ap.add_argument("--budgets", nargs="+", default=list(BUDGETS))
    ap.add_argument("--methods", nargs="+", default=None,
                    help="default: the GP arms above and every baseline")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="benchmark_suites.parquet")
    ap.add_argument("--from", dest="reuse", default=None, help="print the report of an existing results table")
    ap.add_argument("--anchors", nargs="+", default=[str(a) for a in ANCHORS],
                    help="shapiq anchor CSVs (default: the public and suite-B files of $SHAPLEIG_SHARED or "
                         "../shared, data/anchors)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--default", default=DEFAULT, help="the method label reported as the default")
    ap.add_argument("--previous", default=None, metavar="TABLE",
                    help="a results table this script wrote on another checkout: its methods join as "
                         "'previous:<method>' (e.g. --compare previous:shapleig)")
    ap.add_argument("--compare", default=PREVIOUS,
                    help="a method compared with the default run for run (default: the previous default)")
    args = ap.parse_args(argv)
    args.default, args.compare = method_label(args.default), method_label(args.compare)
    return args


def default_methods() -> list[str]:
    skip = set(GP_ARMS) | {GP_LEVERAGE}
    return list(GP_METHODS) + [m for m in method_names() if m not in skip]


gm = geometric_mean


def suite_of_task(task: str) -> str:
    return task.split("/")[0]


def table_seed(task: str) -> int | None:
    m = re.search(r"seed=(\d+)", task)
    return int(m.group(1)) if m else None


def coverage_rows(df: pd.DataFrame, level_z: float = 1.959963984540054) -> pd.DataFrame:
    """Per run: players covered by values -/+ z * std, players counted, the sum of squared
    standardised errors (error / std)^2, the summed interval width 2 z std and the largest error / std."""
    rows = []
    for _, r in df.iterrows():
        if r["std"] is None or r["values"] is None:
            continue
        v, s, e = (np.asarray(r[c], dtype=float) for c in ("values", "std", "exact"))
        z = standardized_errors(v, s, e)
        rows.append({"group": r["group"], "budget_spec": r["budget_spec"],
                     "covered": int(np.sum(z <= level_z)), "players": int(v.size),
                     "z2": float(np.sum(z**2)), "width": float(np.sum(2 * level_z * s)), "max_z": float(np.max(z))})
    return pd.DataFrame(rows)


def anchor_report(df: pd.DataFrame, paths: list[Path], default: str = DEFAULT) -> pd.DataFrame | None:
    """Default vs best shapiq method, and published vs shapiq ShaplEIG, on the anchors' tables and seeds."""
    found = [Path(p) for p in paths if Path(p).is_file()]
    for path in set(map(Path, paths)) - set(found):
        print(f"\n(anchor file {path} not found: no comparison with shapiq there)")
    if not found:
        return None
    a = pd.concat([pd.read_csv(p) for p in found], ignore_index=True)
    a = a[a["error"].isna() | (a["error"] == "")] if "error" in a else a
    a["suite"] = [ANCHOR_SUITES.get((g, p)) for g, p in zip(a.game_type, a.p)]
    bike = a.game_type.eq("BikeSharing_DatasetValuation_Game")
    a.loc[bike, "suite"] = np.where(a.loc[bike, "table_file"].str.contains("random_forest"), "bike-dv-10-rf",
                                    "bike-dv-10")
    a["table_seed"] = a.table_file.str.extract(r"_(\d+)\.npz$")[0].astype(int)
    ours = df.assign(suite=df.task.map(suite_of_task), table_seed=df.task.map(table_seed))
    rows = []
    for (suite, spec), cell in a.groupby(["suite", "budget_spec"]):
        tables = set(cell.table_seed)
        best = cell.groupby("method").mse.apply(gm)
        mine = ours[(ours.suite == suite) & (ours.budget_spec == spec) & ours.table_seed.isin(tables)]
        row = {"suite": suite, "budget": spec, "best_shapiq": best.min(), "best_shapiq_method": best.idxmin()}
        for label, method, seeds in (("default", default, set(cell.seed)),
                                     ("published", "shapleig-published", set(cell[cell.method == "ShaplEIG"].seed))):
            m = mine[(mine.method == method) & mine.seed.isin(seeds)]
            row[label] = gm(m.mse) if len(m) else np.nan
            row[f"{label}_runs"] = len(m)
        row["default/best"] = row["default"] / row["best_shapiq"]
        row["shapiq_ShaplEIG"] = best.get("ShaplEIG", np.nan)
        row["published/shapiq_ShaplEIG"] = row["published"] / row["shapiq_ShaplEIG"]
        sh = cell[cell.method == "ShaplEIG"]
        row["shapiq_ShaplEIG_s"] = sh.wall_s.mean() if len(sh) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, anchors: Path | list[Path], default: str = DEFAULT, compare: str = PREVIOUS) -> None:
    anchors = [anchors] if isinstance(anchors, (str, Path)) else list(anchors)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 40)
    pd.set_option("display.max_rows", 500)
    fmt = lambda x: f"{x:.3g}"  # noqa: E731
    ok = df[df["error"] == ""]
    cells = ok.groupby(["group", "budget_spec", "method"]).mse.apply(gm).unstack("method")
    print("gm-MSE per (suite, budget) cell (geometric mean over tables x seeds)")
    print(cells.to_string(float_format=fmt))

    others = cells.drop(columns=[default])
    if not others.empty and not others.isna().all(axis=None):  # none when the default runs alone
        ratio = pd.DataFrame({"default": cells[default], "best_other": others.min(axis=1),
                              "best_other_method": others.idxmin(axis=1)})
        ratio["ratio"] = ratio["default"] / ratio["best_other"]
        print("\nthe default's ratio to the best other project method per cell (< 1: the default is better)")
        print(ratio.to_string(float_format=fmt))
        print(f"  worst cell {ratio.ratio.max():.3g} ({ratio.ratio.idxmax()}); geometric mean {gm(ratio.ratio):.3g}; "
              f"cells above 1.5: {int((ratio.ratio > 1.5).sum())} of {len(ratio)}")
    kernels = [c for c in COMPONENTS if c in cells]
    if kernels:
        rk = cells[default] / cells[kernels].min(axis=1)
        print(f"  against the best of its kernels alone: geometric mean {gm(rk):.3g}, worst {rk.max():.3g} "
              f"({rk.idxmax()}); below every kernel alone in {int((rk < 1).sum())} of {len(rk)} cells")
    if compare in cells:
        paired_report(ok, default, compare)

    cov = coverage_rows(ok[ok.method == default])
    if len(cov):
        c = cov.groupby(["group", "budget_spec"])[["covered", "players"]].sum()
        c = (c.covered / c.players).unstack("budget_spec")
        print("\ncoverage of the default's 95% intervals (pooled over tables, seeds, players)")
        print(c.to_string(float_format=lambda x: f"{x:.2f}"))
        print(f"  pooled over everything: {cov.covered.sum() / cov.players.sum():.3f}; "
              f"lowest cell {c.min().min():.2f}")
        print("  runs with some |error|/std > 4 (confidently wrong), per budget: " + ", ".join(
            f"{spec} {int((g.max_z > 4).sum())} of {len(g)}" for spec, g in cov.groupby("budget_spec")))
        g = cov.groupby(["group", "budget_spec"])[["z2", "players", "width"]].sum()
        rms = np.sqrt(g.z2 / g.players).unstack("budget_spec")
        print("RMS of error/std per cell (1: honest and sharp; < 1 too wide)")
        print(rms.to_string(float_format=lambda x: f"{x:.2f}"))
        inside = ((rms >= 0.5) & (rms <= 1.5)).to_numpy().mean()
        print(f"  in [0.5, 1.5] in {inside:.0%} of cells; below 0.3 in {int((rms < 0.3).to_numpy().sum())} of "
              f"{rms.size}; median {np.nanmedian(rms.to_numpy()):.2f}")
        print("mean width of the 95% intervals")
        print((g.width / g.players).unstack("budget_spec").to_string(float_format=fmt))

    runs = ok[~ok.anytime | (ok.budget == ok.groupby(["task", "method", "seed"]).budget.transform("max"))]
    timing = runs.groupby(["group", "method"]).wall_s.mean().unstack("method")
    print("\nseconds per run (anytime GP arms: one run at the largest budget)")
    print(timing.to_string(float_format=fmt))

    anchor = anchor_report(ok, [Path(a) for a in anchors], default)
    if anchor is not None and len(anchor):
        print("\nagainst shapiq 1.8.0 (anchor tables and seeds; gm-MSE)")
        print(anchor.to_string(index=False, float_format=fmt))
        r = anchor["default/best"].dropna()
        print(f"  default / best shapiq: worst {r.max():.3g}, geometric mean {gm(r):.3g}, "
              f"below 1 in {int((r < 1).sum())} and above 1.25 in {int((r > 1.25).sum())} of {len(r)} cells")
        q = anchor["published/shapiq_ShaplEIG"].dropna()
        if len(q):
            print(f"  published / shapiq ShaplEIG: range {q.min():.3g}-{q.max():.3g}, geometric mean {gm(q):.3g}")
        if default in timing and len(anchor):
            t8 = anchor[anchor.budget == "8p"].set_index("suite")["shapiq_ShaplEIG_s"]
            ours8 = timing[default].reindex(t8.index)
            print("  time per run at 8p, default / shapiq ShaplEIG (anchor wall_s; not the same run):")
            print((ours8 / t8).to_string(float_format=fmt))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reuse:
        report(with_previous(pd.read_parquet(args.reuse), args.previous), args.anchors, args.default,
               args.compare)
        return 0
    seeds = [int(s) for s in args.seeds.split(",")] if "," in args.seeds else int(args.seeds)
    tasks = [f"{s}/seed={k}" for s in args.suites for k in TABLE_SEEDS[: args.tables]]
    methods = args.methods or default_methods()
    try:
        plan = harness.build_plan(tasks, methods, args.budgets, seeds, skip_small=True)
        out = harness.check_output_path(args.out)
    except ValueError as exc:
        print(f"benchmark_suites: error: {exc}", file=sys.stderr)
        return 2
    print(f"{plan.describe()}; jobs = {args.jobs}", file=sys.stderr)
    for note in plan.skipped:
        print(f"  note: {note}", file=sys.stderr)
    start = time.perf_counter()
    df = harness.execute_plan(plan, out=out, n_jobs=args.jobs, progress=not args.quiet, errors="record")
    print(f"{len(df)} rows in {time.perf_counter() - start:.0f} s; wrote {out}")
    report(with_previous(df, args.previous), args.anchors, args.default, args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
