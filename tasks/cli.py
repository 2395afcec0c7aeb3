"""The ``shapleig`` command: list tasks and methods, run benchmarks, plot them, run the demo.

    shapleig tasks
    shapleig methods
    shapleig run --tasks wvg-7 vit-9/first=3 --methods shapleig permutation --budgets 2p 4p \
        --seeds 3 --out results.parquet [--jobs N]
    shapleig plot results.parquet --out fig.png
    shapleig ablate --tasks wvg-7 soug-8 --budgets 2p 4p --seeds 5 \
        --acquisitions eig uncertainty random my_acq.py:MyAcquisition --out ablation/
    shapleig demo [--out DIR] [--budgets ...] [--seeds N] [--quick]
    shapleig explain --model model.txt --data X.csv --row 3 --budget 40 [--plot fig.png]
    shapleig hpi [--model lightgbm] [--dataset diabetes] [--study tunability] [--budget 4p] [--quick]
    shapleig dashboard PATH... [--host 127.0.0.1] [--port 8765] [--html report.html]
    shapleig status PATH...

Bad input (unknown task or method, bad options, budgets below a method's minimum, an unwritable
output path, a corrupt table) is reported before any evaluation, with exit status 2 and one line
on stderr (argparse's own errors too: no usage block).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn, Sequence

from shapleig.errors import ShapleigError
from shapleig_tasks.cli_common import UsageError, cli_store_advice, jobs_count, print_frame

DEMO_TASK = "hpi-diabetes-8"
DEMO_QUICK_TASK = "hpi-diabetes-5"
# four baselines that all run from 2p on (svarm-plus needs 44 evaluations at p = 8)
DEMO_METHODS = ("shapleig", "permutation", "kernelshap", "leverage-shap", "regression-msr")
DEMO_BUDGETS = ("2p", "4p", "6p", "8p")


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# subcommands
def cmd_tasks(args: argparse.Namespace) -> int:
    from shapleig_tasks.catalog import describe_table_search, describe_tasks

    rows = describe_tasks()
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['kind']:<11}  {r['description']}")
    print(
        "\nfamilies: shoe-<n>, soug-<n>[/seed=k], wvg-7-q<1..10>, hpi-<dataset>-<p>; a suite takes "
        "/seed=k, /seed=a-b or /first=n"
    )
    print("\n" + "\n".join(describe_table_search()))
    return 0


def cmd_methods(args: argparse.Namespace) -> int:
    import inspect
    import textwrap

    from shapleig import registry
    from shapleig_tasks.methods import describe, shapiq_method_names

    def options(name: str) -> str:
        """``key=default`` of every constructor option a method takes (less what its name fixes)."""
        method = registry.get(name)
        params = inspect.signature(method.estimator_class()).parameters.values()
        return ", ".join(f"{q.name}={q.default!r}" for q in params if q.name not in method.fixed
                         and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD) and q.name != "self")

    def loop_options() -> str:
        """``key=default`` of every design-loop option by name, grouped as ShaplEIG groups them."""
        from shapleig.design.estimators import OPTION_GROUPS, TOP_LEVEL
        from shapleig.design.options import LoopOptions

        defaults = LoopOptions()
        parts = [", ".join(f"{k}={getattr(defaults, k)!r}" for k in TOP_LEVEL if k != "acquisition")]
        for group, kind in OPTION_GROUPS.items():
            parts.append(f"{group} ({kind.__name__}): "
                         + ", ".join(f"{k}={getattr(defaults, k)!r}" for k in kind.names()))
        return "; ".join(parts)

    def wrapped(text: str) -> str:
        return textwrap.fill(text, width=118, initial_indent="    ", subsequent_indent="    ")

    names = registry.names()  # every name run, explain and the harness accept
    width = max(len(n) for n in names)
    loop = registry.names(family="design-loop")
    for n in names:
        print(f"{n:<{width}}  {describe(n)}")
        if n not in loop:  # the GP arms share the design loop's options: listed once below
            print(wrapped(f"options: {options(n) or 'none'}"))
    print(f"\noptions of the GP arms ({', '.join(loop)}; a name fixes its acquisition), by name:")
    print(wrapped(loop_options()))
    from shapleig.design.acquisition import acquisition_names

    print(f"\nacquisitions (ShaplEIG(acquisition=...), `shapleig ablate --acquisitions`): "
          f"{', '.join(acquisition_names())}, or module:Class / file.py:Class of an Acquisition subclass")
    shapiq_names = shapiq_method_names()
    print("\nshapiq:<Approximator>  shapiq's approximators (SV, BV, and the interaction indices with --index and "
          "--max-order), options as "
          "shapiq:NAME:key=value (its constructor's): "
          + (", ".join(shapiq_names) if shapiq_names else "not available (pip install 'shapleig[shapiq]', Python >= 3.12)"))
    print("\noptions: name:key=value,key=value (e.g. shapleig:refit=decaying) or --option name:key=value")
    return 0


def _gp_options(args: argparse.Namespace) -> dict[str, Any]:
    from shapleig_tasks.methods import parse_value

    opts: dict[str, Any] = {}
    if getattr(args, "refit", None) is not None:
        opts["refit"] = parse_value(args.refit)
    if getattr(args, "pool_size", None) is not None:
        opts["pool_size"] = args.pool_size
    for name in ("tol", "rtol"):
        if getattr(args, name, None) is not None:
            opts[name] = getattr(args, name)
    return opts


def _split(items: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for item in items or []:
        out += [s for s in (x.strip() for x in item.split(",")) if s]
    return out


def _run(args: argparse.Namespace, tasks: list[str], methods: list[str], out: Path, *,
         cache: Path | None, title: str, units: str | None = None) -> Any:
    """Validate (UsageError on bad input), run, print the MSE and rank tables; return the table."""
    from shapleig_tasks.cluster import evaluation_cluster

    workers, scheduler = getattr(args, "workers", None), getattr(args, "dask_scheduler", None)
    if (workers is not None or scheduler is not None) and args.jobs != 1:
        raise UsageError("--workers / --dask-scheduler evaluate one run's games in parallel: use them with --jobs 1")
    try:
        cluster = evaluation_cluster(workers, scheduler)
        evaluator, slots = cluster.__enter__()
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    try:
        if slots > 1 and "shapleig" in methods and not any(
                o.startswith("shapleig:") and "batch_size" in o for o in args.option or ()):
            args.option = [*(args.option or ()), f"shapleig:batch_size={slots}"]  # one per worker in flight
        return _run_plan(args, tasks, methods, out, cache=cache, title=title, evaluator=evaluator, units=units)
    finally:
        cluster.__exit__(None, None, None)


def _run_plan(args: argparse.Namespace, tasks: list[str], methods: list[str], out: Path, *,
              cache: Path | None, title: str, evaluator: Any = None, units: str | None = None) -> Any:
    from shapleig_tasks import harness, plots

    try:
        from shapleig.runs.timeout import check_timeout

        eval_timeout = check_timeout(getattr(args, "eval_timeout", None), "--eval-timeout")
        plan = harness.build_plan(tasks, methods, args.budgets, args.seeds,
                                  method_options=args.option or (), gp_options=_gp_options(args),
                                  skip_small=args.skip_small, index=getattr(args, "index", "SV"),
                                  max_order=getattr(args, "max_order", None))
        out = harness.check_results_path(out)
        harness.check_output_file(harness.journal_path(out))  # the journal of finished runs beside it
        if cache is not None and any(t.expensive for t in plan.tasks):
            harness.check_output_path(cache / "probe.npz")
        store_dir = getattr(args, "store_dir", None)
        if store_dir is not None:
            harness.check_output_path(Path(store_dir) / "probe.sqlite")
    except (ValueError, ShapleigError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    if not plan.jobs:
        raise UsageError("nothing to run: every budget is below the methods' minimum budgets")
    if not args.quiet:
        _err(f"{title}: {plan.describe()}; jobs = {args.jobs}")
        for note in plan.skipped:
            _err(f"  note: {note}")
    for note in plan.notes:  # a budget that covers a game changes what is computed: always said
        _err(f"  note: {note}")
    start = time.perf_counter()
    df = harness.execute_plan(plan, out=out, n_jobs=args.jobs, cache_dir=cache, live=args.live,
                              progress=not args.quiet, errors="record" if args.keep_going else "raise",
                              log=None if args.quiet else _err, eval_timeout=eval_timeout, evaluator=evaluator,
                              store_dir=store_dir)
    failed = df[df["error"].fillna("") != ""]
    unit = f" in ({units})²" if units else ""
    print_frame(plots.mse_table(df), f"mean MSE{unit} (rows: task group, method; columns: budget)")
    if df["task"].nunique() > 0 and df["method"].nunique() > 1:
        print_frame(plots.rank_table(df), "mean rank by MSE (1 = best), per budget")
    largest = df[df["budget"] == df.groupby(["task", "method"])["budget"].transform("max")]
    timing = largest.groupby("method")[["evaluations", "wall_s", "selection_s"]].mean()
    print_frame(timing, "mean seconds per run at the largest budget (wall; of which method overhead)")
    if len(failed):
        _err(f"{len(failed)} rows failed; first error: {failed['error'].iloc[0].splitlines()[0]}")
    print(f"wrote {out} ({len(df)} rows) in {time.perf_counter() - start:.1f} s")
    return df


def cmd_run(args: argparse.Namespace) -> int:
    from shapleig_tasks.harness import check_results_path

    tasks, methods = _split(args.tasks), list(args.methods)
    try:
        check_results_path(args.out)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    _run(args, tasks, methods, Path(args.out), cache=Path(args.cache) if args.cache else None,
         title="shapleig run")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from shapleig_tasks import harness, plots

    try:
        out = harness.check_output_path(plots.check_figure_path(args.out))
        df = harness.read_results(args.results)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    if args.by not in df.columns:
        raise UsageError(f"--by {args.by!r}: the results have no such column; try group or task")
    plots.plot_mse(df, out, by=args.by, title=args.title)
    print_frame(plots.mse_table(df, by=args.by), "mean MSE")
    print_frame(plots.rank_table(df), "mean rank by MSE (1 = best), per budget")
    print(f"wrote {out}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from shapleig_tasks import plots

    if args.quick:
        args.seeds = args.seeds or ["1"]
        args.budgets = args.budgets or ["12", "16"]
        task = args.task or DEMO_QUICK_TASK
    else:
        args.seeds = args.seeds or ["3"]
        args.budgets = args.budgets or list(DEMO_BUDGETS)
        task = args.task or DEMO_TASK
    methods = list(args.methods or DEMO_METHODS)
    out_dir = Path(args.out)
    results, figure = out_dir / "results.parquet", out_dir / "mse.png"
    cache = Path(args.cache) if args.cache else out_dir / "cache"
    from shapleig_tasks.demo import prepare_exact_values, value_units, verdict

    try:
        figure = _writable(figure)
        _err(prepare_exact_values(task, cache, args.live))  # before anything runs: where the exact values come from
        units = value_units(task)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    df = _run(args, [task], methods, results, cache=cache, title=f"shapleig demo on {task}", units=units)
    plots.plot_mse(df, figure, by="task", title=f"{task}: Shapley MSE, mean +- SE over seeds ({units})²")
    print(f"wrote {figure}")
    print(verdict(df, units))
    return 0


def cmd_hpi(args: argparse.Namespace) -> int:
    from shapleig_tasks.hpi import study_from_args

    try:
        study = study_from_args(args)
    except (ValueError, ImportError, ShapleigError) as exc:
        raise UsageError(cli_store_advice(exc, "give another output folder with --out DIR")) from exc
    study.run(log=print)
    return 0


# options whose values are never negative: a value such as -2p is reported as such, instead of
# argparse taking it for an unknown option
_NON_NEGATIVE = {"--budgets": "budgets must be positive, e.g. 32 or 4p",
                 "--seeds": "seeds are non-negative integers: a count (3), a list (0,1,2) or a range (0-4)"}


def _check_negative_values(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    option = None
    for token in argv:
        if token.startswith("--"):
            option = token.split("=", 1)[0]
            value = token.split("=", 1)[1] if "=" in token else None
        else:
            value = token
        if option in _NON_NEGATIVE and value is not None and value[:1] == "-" and value[1:2].isdigit():
            parser.error(f"{option} {value}: {_NON_NEGATIVE[option]}")


def _writable(path: Path) -> Path:
    from shapleig_tasks.harness import check_output_path

    return check_output_path(path)


# --------------------------------------------------------------------------------------------
# parser
def _add_run_options(p: argparse.ArgumentParser, *, demo: bool) -> None:
    p.add_argument("--budgets", nargs="+", default=None, required=not demo,
                   help="budgets: integers or multiples of p (2p 4p); commas allowed")
    p.add_argument("--seeds", nargs="+", default=None if demo else ["3"],
                   help="a count N (seeds 0..N-1), a list 0,1,2 or a range 0-4 (default: 3)")
    p.add_argument("--jobs", type=jobs_count, default=1, help="parallel workers (joblib; default 1, -1 = all cores)")
    p.add_argument("--option", action="append", metavar="METHOD:KEY=VALUE[,KEY=VALUE]",
                   help="options for every method of that name ('gp:' = all GP arms); repeatable")
    p.add_argument("--refit", default=None,
                   help="GP arms: hyperparameter refit schedule (e.g. every, decaying, or an integer)")
    p.add_argument("--pool-size", type=int, default=None, help="GP arms: candidate pool size")
    p.add_argument("--tol", type=float, default=None,
                   help="GP arms: stop once every player's posterior std is at most TOL (game units)")
    p.add_argument("--rtol", type=float, default=None,
                   help="GP arms: stop once every posterior std is at most RTOL * |v(N) - v(empty)|")
    p.add_argument("--cache", default=None, help="folder for ground-truth tables of expensive games")
    p.add_argument("--live", action="store_true",
                   help="evaluate expensive games live instead of from the enumerated table")
    p.add_argument("--keep-going", action="store_true", help="record failing runs instead of stopping")
    p.add_argument("--store-dir", default=None, metavar="DIR",
                   help="one evaluation store per run in DIR: watch it with `shapleig dashboard DIR` (or status); "
                        "a killed run resumes its evaluations")
    p.add_argument("--eval-timeout", type=float, default=None, metavar="SECONDS",
                   help="abandon a game evaluation that takes longer than this (it runs in a worker process)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="evaluate games on N single-threaded workers (a Dask LocalCluster, or a process pool "
                        "without distributed); ShaplEIG keeps N evaluations in flight (batch_size=N)")
    p.add_argument("--dask-scheduler", default=None, metavar="ADDRESS",
                   help="evaluate games on the workers of a running Dask scheduler (tcp://host:8786)")
    p.add_argument("--skip-small", action="store_true", default=demo,
                   help="skip budgets below a method's minimum instead of failing"
                   + (" (always on in the demo)" if demo else ""))
    p.add_argument("--quiet", action="store_true", help="no progress bars or notes")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr, ``shapleig run: error: ...; see
    shapleig run --help``, with exit status 2 (argparse prints the whole usage block first).
    Sub-command parsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)}; see {self.prog} --help\n")


def _version() -> str:
    from shapleig import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="shapleig", description="Shapley values of expensive games under a small evaluation budget."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("tasks", help="list the benchmark tasks")
    p.set_defaults(func=cmd_tasks)
    p = sub.add_parser("methods", help="list the methods")
    p.set_defaults(func=cmd_methods)

    p = sub.add_parser("run", help="run methods x tasks x budgets x seeds into a parquet table")
    p.add_argument("--tasks", nargs="+", required=True, help="task names (see `shapleig tasks`)")
    p.add_argument("--methods", nargs="+", required=True,
                   help="method names, optionally name:key=value,key=value (see `shapleig methods`)")
    p.add_argument("--out", required=True, help="results file (.parquet)")
    p.add_argument("--index", default="SV",
                   help="index to estimate and score: SV (default), BV, or an interaction index k-SII, SII, STII, "
                        "FSII, FBII, BII, CHII, Moebius (order 2 unless --max-order); GP arms, exact and "
                        "shapiq:<Approximator> methods only, table tasks only")
    p.add_argument("--max-order", type=int, default=None,
                   help="the interaction index's maximal order k: every term of 1..k players is estimated and "
                        "scored (default: 2 for the interaction indices, 1 for SV and BV)")
    _add_run_options(p, demo=False)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("plot", help="plot MSE vs budget from a results table")
    p.add_argument("results", help="results parquet written by `shapleig run`")
    p.add_argument("--out", required=True, help="figure file (.png, .pdf, .svg)")
    p.add_argument("--by", default="group", help="one panel per value of this column (default: group)")
    p.add_argument("--title", default=None)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser(
        "demo",
        help="ShaplEIG vs four baselines on a LightGBM hyperparameter-importance game (p = 8)",
        description=(
            "Runs ShaplEIG and four baselines on the LightGBM hyperparameter-importance game on diabetes "
            "(p = 8) at budgets 2p..8p over 3 seeds, scored against its exact Shapley values (all 256 "
            "coalitions; shipped precomputed, so a first run takes about a minute), prints the MSE table and a "
            "verdict line, and writes DIR/results.parquet and DIR/mse.png."
        ),
    )
    p.add_argument("--out", default="shapleig-demo", help="output folder (default: ./shapleig-demo)")
    p.add_argument("--quick", action="store_true",
                   help=f"a small smoke run: {DEMO_QUICK_TASK}, budgets 12 16, one seed")
    p.add_argument("--task", default=None, help=f"game to use (default: {DEMO_TASK})")
    p.add_argument("--methods", nargs="+", default=None, help=f"default: {' '.join(DEMO_METHODS)}")
    _add_run_options(p, demo=True)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "hpi",
        help="hyperparameter importance of a model on a dataset (ablation, tunability, sensitivity, optimizer bias)",
        description=(
            "Shapley values of a model's hyperparameters for one study type, each v(S) a real "
            "cross-validated evaluation (a whole tuning run for tunability), under a budget. Writes "
            "OUT/shapley.csv, OUT/shapley.parquet, OUT/shapley.png, OUT/study.json and the resumable "
            "store OUT/evaluations.sqlite (rerun the same command to resume)."
        ),
    )
    from shapleig_tasks.hpi import add_arguments

    add_arguments(p)
    p.set_defaults(func=cmd_hpi)

    from shapleig_tasks.explain_cli import (
        add_explain_parser,  # imports this module: registered last
    )

    add_explain_parser(sub)
    from shapleig_tasks.explain_rows_cli import add_explain_rows_parser

    add_explain_rows_parser(sub)
    from shapleig_tasks.ablation_cli import add_ablate_parser

    add_ablate_parser(sub)
    from shapleig_tasks.dashboard_cli import add_dashboard_parsers

    add_dashboard_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    _check_negative_values(parser, argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        parser.exit(2, f"shapleig {args.command}: error: {_one_line(exc)}\n")
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except (RuntimeError, ShapleigError) as exc:
        _err(f"shapleig {args.command}: failed: {_one_line(exc)}")
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug or an unforeseen input: one line, not a traceback
        if os.environ.get("SHAPLEIG_DEBUG"):
            raise
        _err(f"shapleig {args.command}: failed: {type(exc).__name__}: {_one_line(exc)} "
             f"(set SHAPLEIG_DEBUG=1 for the traceback)")
        return 1
    return 0


def _one_line(exc: BaseException) -> str:
    """An error message on one line (multi-line messages joined with '; ')."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


if __name__ == "__main__":
    # `python -m shapleig_tasks.cli` runs this file as __main__, a second copy of the module: use the real
    # shapleig_tasks.cli, whose UsageError is the one the subcommand modules (explain_cli) raise
    from shapleig_tasks.cli import main as _main

    sys.exit(_main())
