"""Every method on the ViT-9, Bike dataset-valuation (p = 10) and ResNet-14 value tables.

Budgets 2p, 4p, 8p, 16p over 5 seeds; prints the mean-MSE table (task group x method x budget),
the mean rank per budget and the mean seconds per run, and writes the long results table.

By default the first 3 tables of each suite are used (``--files N``, or ``--all-files`` for all
30). The GP arms are anytime: one run at 16p per (table, seed) fills every budget. Their cost grows
with the number of GP refits, so ``--refit decaying`` (refit at every step for the first 64
acquisitions, then every 8th) is the practical setting at p = 14; the per-method timing printed
at the end says what a setting costs.

    .venv/bin/python scripts/benchmark_tables.py --refit decaying --jobs 2 --out benchmark_tables.parquet

Needs the shared tables (``SHAPLEIG_SHARED`` / ``../shared/data/games``); exits 2 without them.
Budgets below a method's fixed phase (e.g. S-SVARM+ needs 54 evaluations at p = 9) are skipped
and listed. Failing runs are recorded in the ``error`` column instead of stopping the benchmark.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from tasks import harness, plots  # noqa: E402
from tasks.methods import GP_ARMS, method_names  # noqa: E402

SUITES = ("vit-9", "bike-dv-10", "resnet-14")
BUDGETS = ("2p", "4p", "8p", "16p")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", nargs="+", default=list(SUITES), help=f"table suites (default: {' '.join(SUITES)})")
    ap.add_argument("--files", type=int, default=3, help="tables per suite, in seed order (default 3)")
    ap.add_argument("--all-files", action="store_true", help="use every table of each suite (30 each)")
    ap.add_argument("--methods", nargs="+", default=None, help="default: every method (GP arms + baselines)")
    ap.add_argument("--skip-gp", action="store_true", help="baselines only")
    ap.add_argument("--budgets", nargs="+", default=list(BUDGETS), help="default: 2p 4p 8p 16p")
    ap.add_argument("--seeds", nargs="+", default=["5"], help="a count or a list (default: 5 seeds)")
    ap.add_argument("--refit", default="every", help="GP arms' refit schedule: every | decaying | geometric | never")
    ap.add_argument("--pool-size", type=int, default=None, help="GP arms' candidate pool size")
    ap.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1)")
    ap.add_argument("--out", default="benchmark_tables.parquet", help="results parquet")
    ap.add_argument("--quiet", action="store_true")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    methods = args.methods or method_names()
    if args.skip_gp:
        methods = [m for m in methods if m.split(":")[0] not in GP_ARMS]
    selector = "" if args.all_files else f"/first={args.files}"
    tasks = [s + selector for s in args.suites]
    gp_options: dict = {"refit": args.refit}
    if args.pool_size is not None:
        gp_options["pool_size"] = args.pool_size
    try:
        plan = harness.build_plan(tasks, methods, args.budgets, args.seeds, gp_options=gp_options, skip_small=True)
        out = harness.check_output_path(args.out)
    except ValueError as exc:
        print(f"benchmark_tables: error: {exc}", file=sys.stderr)
        return 2
    print(f"{plan.describe()}; GP refit = {args.refit}; jobs = {args.jobs}", file=sys.stderr)
    for note in plan.skipped:
        print(f"  note: {note}", file=sys.stderr)
    start = time.perf_counter()
    df = harness.execute_plan(plan, out=out, n_jobs=args.jobs, progress=not args.quiet, errors="record")
    elapsed = time.perf_counter() - start

    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    fmt = lambda x: f"{x:.3g}"  # noqa: E731
    print("mean MSE over tables x seeds (rows: task group, method; columns: budget)")
    print(plots.mse_table(df).to_string(float_format=fmt))
    print("\nmean rank by MSE per budget (1 = best; ranked within each table, averaged)")
    print(plots.rank_table(df).to_string(float_format=fmt))
    ok = df[df["error"] == ""]
    # an anytime run is timed once, at its largest budget; reruns are timed at each budget
    runs = ok[~ok.anytime | (ok.budget == ok.groupby(["task", "method", "seed"]).budget.transform("max"))]
    timing = runs.groupby(["group", "method"]).agg(runs=("wall_s", "size"), wall_s=("wall_s", "mean"),
                                                   total_s=("wall_s", "sum"))
    print("\nseconds per estimator run (anytime GP arms: one run at the largest budget)")
    print(timing.to_string(float_format=fmt))
    failed = df[df["error"] != ""]
    if len(failed):
        print(f"\n{len(failed)} rows failed:")
        for (method, err), _ in failed.groupby(["method", failed["error"].str.split("\n").str[0]]):
            print(f"  {method}: {err}")
    print(f"\nwrote {out} ({len(df)} rows); total {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
