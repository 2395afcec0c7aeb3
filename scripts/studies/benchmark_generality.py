"""The default ShaplEIG on games it was not tuned on: seeded synthetic families with exact values.

Families (``tasks/generality.py``): a few dominant players, sparse high-order unanimity games,
additive plus pairwise terms, near-symmetric games, weighted voting, a strong additive part with
sparse pairs, SOUM-like unanimity sums of any order, an additive-plus-pairwise game with fresh
noise per call, ensemble selection over scikit-learn models; ``--instances`` games each
(p = 8, 12, 16 in turn; ensemble selection 8, 10, 12), methods seeded 0..S-1, budgets 2p/4p/8p. Methods: the default
(``shapleig``), its four kernels alone (shared and ARD lengthscales, each with and without the size
trend: ``shapleig:size_trend=False,surrogate=shared`` ...) and every baseline whose minimum budget
fits. Runs through the harness (``shapleig_tasks.harness``).

Prints per (family, budget) cell, for the default:
- ``vs_comp``: gm-MSE (geometric mean over instances x seeds) over the best of its kernels alone;
- ``vs_other``: gm-MSE over the best other method of the run (components included);
- ``cover``: coverage of the 95% intervals (pooled over instances, seeds, players);
- ``rms_z``: RMS of error / std (1: honest and sharp; < 1 too wide; > 1 too narrow);
- ``width``: mean width of the 95% intervals, and ``rmse`` for scale;
- ``s/run``: mean seconds until the default had its estimate at that budget;
then the summary against the issue-17 criteria.

    python scripts/studies/benchmark_generality.py --jobs 2 --ml --out generality.parquet    # ~3 min on 2 cores
    python scripts/studies/benchmark_generality.py --quick                              # smoke test, < 1 min
    python scripts/studies/benchmark_generality.py --from generality.parquet            # report again
    python scripts/studies/benchmark_generality.py --default shapleig:surrogate=bic --methods shapleig:surrogate=bic \
        shapleig:surrogate=ard shapleig:surrogate=shared permutation          # another default candidate
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from shapleig_tasks import harness  # noqa: E402
from shapleig_tasks.generality import FAMILIES, family_tasks  # noqa: E402
from shapleig_tasks.methods import GP_ARMS, GP_LEVERAGE, KERNEL_ARMS, method_names  # noqa: E402
from shapleig_tasks.metrics import geometric_mean, standardized_errors  # noqa: E402
from shapleig_tasks.paired import method_label, paired_report, with_previous  # noqa: E402

BUDGETS = ("2p", "4p", "8p")
DEFAULT = "shapleig"
COMPONENTS = KERNEL_ARMS  # the default's four kernels alone
Z95 = 1.959963984540054


def default_methods() -> list[str]:
    skip = set(GP_ARMS) | {GP_LEVERAGE}
    return [DEFAULT, *COMPONENTS] + [m for m in method_names() if m not in skip]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--instances", type=int, default=3,
                    help="games per family (p = 8, 12, 16 in turn; ensemble selection 8, 10, 12)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="player counts to cycle (default 8 12 16)")
    ap.add_argument("--seeds", default="2", help="a count or a list such as 0,1 (default 2: seeds 0-1)")
    ap.add_argument("--budgets", nargs="+", default=list(BUDGETS))
    ap.add_argument("--methods", nargs="+", default=None, help="default: the default, its components, baselines")
    ap.add_argument("--default", default=DEFAULT, help="the method label reported as the default")
    ap.add_argument("--components", nargs="+", default=list(COMPONENTS),
                    help="the default's components run alone (the 'vs_comp' column)")
    ap.add_argument("--ml", action="store_true", help="add the LightGBM game hpi-diabetes-8 (enumerated once, cached)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 2 families, 1 instance at p = 8, 1 seed, 2p/4p, 4 methods")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="benchmark_generality.parquet")
    ap.add_argument("--from", dest="reuse", default=None, help="print the report of an existing results table")
    ap.add_argument("--merge", default=None,
                    help="add the rows of an earlier results table (same tasks and seeds) for methods not run now, "
                         "e.g. the baselines, which no change of the GP arms affects")
    ap.add_argument("--compare", default=None,
                    help="a method compared with the default run for run (e.g. previous:shapleig with --previous)")
    ap.add_argument("--previous", default=None, metavar="TABLE",
                    help="a results table this script wrote on another checkout: its methods join as "
                         "'previous:<method>'")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    args.default = method_label(args.default)
    args.compare = method_label(args.compare) if args.compare else None
    if args.quick:
        args.families, args.instances, args.sizes, args.seeds = ["dominant", "voting"], 1, [8], "1"
        args.budgets = ["2p", "4p"]
        args.methods = args.methods or [args.default, *args.components, "permutation"]
    return args


gm = geometric_mean


def calibration_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Per run of a method with std: squared standardised errors, coverage and width, summed over players."""
    rows = []
    for _, r in df.iterrows():
        if r["std"] is None or r["values"] is None:
            continue
        v, s, e = (np.asarray(r[c], dtype=float) for c in ("values", "std", "exact"))
        err = np.abs(v - e)
        z = standardized_errors(v, s, e)
        z2 = z**2
        rows.append({"group": r["group"], "budget_spec": r["budget_spec"], "players": int(v.size),
                     "covered": int(np.sum(err <= Z95 * s)), "z2": float(np.sum(z2)),
                     "width": float(np.sum(2 * Z95 * s)), "se": float(np.sum(err**2)), "max_z": float(np.max(z))})
    return pd.DataFrame(rows)


def cell_table(df: pd.DataFrame, default: str, components: list[str]) -> pd.DataFrame:
    """One row per (family, budget): the default's ratios, calibration and time."""
    ok = df[df["error"] == ""]
    cells = ok.groupby(["group", "budget_spec", "method"]).mse.apply(gm).unstack("method")
    out = pd.DataFrame(index=cells.index)
    out["default"] = cells[default]
    comps = [c for c in components if c in cells]
    if comps:
        out["vs_comp"] = cells[default] / cells[comps].min(axis=1)
    others = cells.drop(columns=[default])
    if others.shape[1]:
        out["best_other"] = others.idxmin(axis=1)
        out["vs_other"] = cells[default] / others.min(axis=1)
    cal = calibration_rows(ok[ok.method == default])
    if len(cal):
        c = cal.groupby(["group", "budget_spec"])[["players", "covered", "z2", "width", "se"]].sum()
        out["cover"] = c.covered / c.players
        out["rms_z"] = np.sqrt(c.z2 / c.players)
        out["width"] = c.width / c.players
        out["rmse"] = np.sqrt(c.se / c.players)
    out["s/run"] = ok[ok.method == default].groupby(["group", "budget_spec"]).wall_s.mean()
    return out


def report(df: pd.DataFrame, default: str = DEFAULT, components: list[str] | None = None,
           compare: str | None = None) -> pd.DataFrame:
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 40)
    pd.set_option("display.max_rows", 500)
    fmt = lambda x: f"{x:.3g}"  # noqa: E731
    components = list(COMPONENTS if components is None else components)
    ok = df[df["error"] == ""]
    if default not in set(ok.method):
        raise ValueError(f"the default {default!r} is not among the methods run: {sorted(set(ok.method))}")
    cells = ok.groupby(["group", "budget_spec", "method"]).mse.apply(gm).unstack("method")
    print("gm-MSE per (family, budget) cell (geometric mean over instances x seeds)")
    print(cells.to_string(float_format=fmt))
    table = cell_table(df, default, components)
    print(f"\nthe default ({default}) per cell")
    print(table.to_string(float_format=fmt))
    print("\nsummary")
    if "vs_comp" in table:
        print(f"  default / better component: worst {table.vs_comp.max():.3g} ({table.vs_comp.idxmax()}), "
              f"geometric mean {gm(table.vs_comp):.3g}, cells above 1.25: {int((table.vs_comp > 1.25).sum())} "
              f"of {len(table)}")
    if "vs_other" in table:
        fam = table.groupby(level="group").vs_other.apply(gm)
        print("  default / best other method, geometric mean per family: "
              + ", ".join(f"{k} {v:.3g}" for k, v in fam.items())
              + f"; families above 1.5: {int((fam > 1.5).sum())} of {len(fam)}")
    if "cover" in table:
        cal = calibration_rows(ok[ok.method == default])
        pooled = cal.covered.sum() / cal.players.sum()
        inside = ((table.rms_z >= 0.5) & (table.rms_z <= 1.5)).mean()
        print(f"  coverage: pooled {pooled:.3f}, lowest cell {table.cover.min():.2f}; RMS(error/std) in "
              f"[0.5, 1.5] in {inside:.0%} of cells, range {table.rms_z.min():.2f}-{table.rms_z.max():.2f}, "
              f"pooled {np.sqrt(cal.z2.sum() / cal.players.sum()):.2f}")
        print("  runs with some |error|/std > 4 (confidently wrong), per budget: " + ", ".join(
            f"{spec} {int((g.max_z > 4).sum())} of {len(g)}" for spec, g in cal.groupby("budget_spec")))
    if compare:
        paired_report(ok, default, compare)
    runs = ok.groupby("method").wall_s.mean()
    print("  mean seconds per (run, budget): " + ", ".join(f"{m} {runs[m]:.2f}" for m in [default, *components]
                                                            if m in runs))
    return table


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reuse:
        report(with_previous(merged(pd.read_parquet(args.reuse), args.merge), args.previous), args.default,
               args.components, args.compare)
        return 0
    seeds = [int(s) for s in args.seeds.split(",") if s] if "," in args.seeds else int(args.seeds)
    sizes = tuple(args.sizes) if args.sizes else None
    tasks: list = family_tasks(args.families, args.instances, sizes)
    if args.ml:
        tasks.append("hpi-diabetes-8")
    methods = args.methods or [args.default if m == DEFAULT else m for m in default_methods()]
    if args.default not in methods:
        methods = [args.default, *methods]
    try:
        plan = harness.build_plan(tasks, methods, args.budgets, seeds, skip_small=True)
        out = harness.check_results_path(args.out)
    except ValueError as exc:
        print(f"benchmark_generality: error: {exc}", file=sys.stderr)
        return 2
    print(f"{plan.describe()}; jobs = {args.jobs}", file=sys.stderr)
    start = time.perf_counter()
    df = harness.execute_plan(plan, out=out, n_jobs=args.jobs, progress=not args.quiet, errors="record")
    print(f"{len(df)} rows in {time.perf_counter() - start:.0f} s; wrote {out}")
    bad = df[df["error"] != ""]
    if len(bad):
        print(f"{len(bad)} rows failed, first: {bad.error.iloc[0].splitlines()[0]}")
    report(with_previous(merged(df, args.merge), args.previous), args.default, args.components, args.compare)
    return 0


def merged(df: pd.DataFrame, earlier: str | None) -> pd.DataFrame:
    """``df`` plus the rows of the table ``earlier`` whose method ``df`` does not hold (same tasks)."""
    if not earlier:
        return df
    old = pd.read_parquet(earlier)
    old = old[~old.method.isin(set(df.method)) & old.task.isin(set(df.task)) & old.seed.isin(set(df.seed))]
    return pd.concat([df, old], ignore_index=True)


if __name__ == "__main__":
    sys.exit(main())
