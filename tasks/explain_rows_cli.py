"""``shapleig explain-rows``: explain many rows of a saved model at once (:func:`shapleig.explain_X`).

    shapleig explain-rows --model model.txt --data X.csv --drop target --rows 0-49 --budget 40 \\
        --store rows-store --out rows.parquet --plot importance.png [--jobs 2]

Every row is explained as ``shapleig explain`` explains one; ``--store`` is a folder with one
evaluation store per row, so rerunning the same command after a kill evaluates the model only where
it stopped; ``--jobs N`` explains N rows at once in worker processes, with the same values. Prints
the global importance (mean |value| per feature over the rows, with its posterior std); ``--out``
writes the per-row values (parquet, one row per explained row and feature) and ``--summary`` the
global table (csv or parquet).
"""

from __future__ import annotations

import argparse
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from shapleig_tasks.cli_common import UsageError, cli_store_advice, jobs_count, print_frame
from shapleig_tasks.explain_cli import feature_frame, load_model, load_table

MAX_ROWS_EXPLAINED = 100_000


def parse_rows(text: str, n: int) -> list[int]:
    """``'all'``, ``'0-9'``, ``'0,3,7'`` or a mix (``'0-4,10'``) -> row positions (0-based, < n, in order given).

    Examples:
        >>> parse_rows("0-2,7", 10)
        [0, 1, 2, 7]
    """
    if text.strip().lower() == "all":
        return list(range(n))
    rows: list[int] = []
    for part in filter(None, (s.strip() for s in text.split(","))):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"bad row {part!r}: write positions 0-based as 'all', '0-9', '0,3,7' or '0-4,10'")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"bad row range {part!r}: the end is before the start")
        rows += range(lo, hi + 1)
    if not rows:
        raise ValueError("no rows given")
    if len(set(rows)) != len(rows):
        raise ValueError("a row is listed twice")
    bad = [r for r in rows if r >= n]
    if bad:
        raise ValueError(f"row {bad[0]}: the data has {n} rows (0 .. {n - 1})")
    if len(rows) > MAX_ROWS_EXPLAINED:
        raise ValueError(f"{len(rows)} rows: at most {MAX_ROWS_EXPLAINED} per run")
    return rows


def cmd_explain_rows(args: argparse.Namespace) -> int:
    import shapleig
    from shapleig.errors import EvaluationFailedError, ShapleigError
    from shapleig.estimation.enumeration import BudgetCoversGameWarning
    from shapleig.explanation.choose_imputer import IMPUTERS
    from shapleig.games.indices import check_index
    from shapleig.runs.timeout import check_timeout
    from shapleig.seeding import resolve_seed
    from shapleig_tasks.harness import check_output_path, check_results_path, index_method_spec
    from shapleig_tasks.methods import parse_method

    try:  # every input is checked before the model is loaded or anything evaluated
        seed = resolve_seed(args.seed)
        timeout = check_timeout(args.eval_timeout, "--eval-timeout")
        index = check_index(args.index)[0]
        estimator = index_method_spec(parse_method(args.method), index).build()
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    if args.imputer not in IMPUTERS:
        raise UsageError(f"--imputer {args.imputer!r}: choose one of {', '.join(IMPUTERS)}")
    if args.background < 1:
        raise UsageError(f"--background must be a positive number of rows, got {args.background}")
    paths = {}
    for flag, value, check in (("--out", args.out, check_results_path), ("--plot", args.plot, check_output_path),
                               ("--summary", args.summary, check_output_path)):
        if value:
            try:
                paths[flag] = check(value)
            except ValueError as exc:
                raise UsageError(f"{flag}: {exc}") from exc
    if args.summary and Path(args.summary).suffix not in (".csv", ".parquet"):
        raise UsageError(f"--summary {args.summary}: write .csv or .parquet")
    if args.store and Path(args.store).is_file():
        raise UsageError(f"--store {args.store} is a file; give a folder (one evaluation store per row goes inside)")
    model = load_model(Path(args.model))
    data = feature_frame(load_table(Path(args.data)), model, args.drop or [])
    try:
        rows = parse_rows(args.rows, len(data))
    except ValueError as exc:
        raise UsageError(f"--rows: {exc}") from exc
    source = data if args.background_data is None else feature_frame(
        load_table(Path(args.background_data)), model, args.drop or [])
    state = seed if seed < 2**32 else np.random.default_rng(seed)
    background = source.sample(min(args.background, len(source)), random_state=state)
    try:
        with warnings.catch_warnings():  # a budget covering the game is said in each row's info
            warnings.simplefilter("ignore", BudgetCoversGameWarning)
            res = shapleig.explain_X(model, background, data.iloc[rows], budget=args.budget, seed=seed,
                                     method=estimator, index=index, output=args.output, store=args.store,
                                     timeout=timeout, imputer=args.imputer, exact_if_cheap=not args.no_exact_if_cheap,
                                     progress=not args.quiet, game_id=args.game_id, n_jobs=args.jobs)
    except EvaluationFailedError as exc:  # the run failed (exit 1), the input was fine
        if "TimeoutError" in str(exc):
            raise EvaluationFailedError(f"{exc}; a model evaluation may take at most --eval-timeout {timeout:g} s: "
                                        f"raise it if the model is that slow") from exc
        raise
    except ShapleigError as exc:
        raise UsageError(cli_store_advice(exc, "give another --store folder")) from exc
    for est, position in zip(res.estimates, rows):
        est.info["row"] = position
    exact = sum(bool(est.info.get("exact")) for est in res.estimates)
    print(f"{len(rows)} rows explained by {res.estimates[0].method} ({args.imputer} imputer, "
          f"{len(background)} background rows); {exact} of them exact (every coalition evaluated)")
    print_frame(res.summary(), title="global importance: mean |value| over the rows, with its posterior std")
    if "--out" in paths:
        frame = res.to_frame().assign(method=res.estimates[0].method, method_spec=args.method, index=res.index,
                                      seed=seed)
        frame.to_parquet(paths["--out"], index=False)
        print(f"wrote {paths['--out']}")
    if "--summary" in paths:
        table = res.summary()
        (table.to_csv(paths["--summary"], index=False) if paths["--summary"].suffix == ".csv"
         else table.to_parquet(paths["--summary"], index=False))
        print(f"wrote {paths['--summary']}")
    if "--plot" in paths:
        res.plot(args.kind, out=paths["--plot"])
        print(f"wrote {paths['--plot']}")
    return 0


def add_explain_rows_parser(sub: Any) -> None:
    """Register the ``explain-rows`` subcommand on the ``shapleig`` parser's subparsers."""
    p = sub.add_parser("explain-rows", help="Shapley values of many predictions of a saved model, and their summary",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="LightGBM text model (.txt) or pickled estimator (.joblib/.pkl)")
    p.add_argument("--data", required=True, help="rows (.csv or .parquet) holding the explained rows")
    p.add_argument("--rows", default="all", help="positions in --data (0-based): all (default), 0-9, 0,3,7")
    p.add_argument("--budget", type=int, default=None, help="coalitions per row (default min(2^d, 8d))")
    p.add_argument("--seed", type=int, default=0, help="0 <= seed < 2**63 (default 0)")
    p.add_argument("--eval-timeout", type=float, default=None, metavar="SECONDS",
                   help="abandon a model evaluation (one coalition) that takes longer than this")
    p.add_argument("--method", default="shapleig", help="any method of 'shapleig methods' (default shapleig)")
    p.add_argument("--index", default="SV", help="SV (default), BV, k-SII, SII, STII, FSII")
    p.add_argument("--imputer", default="interventional", help="interventional (default), baseline or conditional")
    p.add_argument("--no-exact-if-cheap", action="store_true",
                   help="keep the method even where enumerating every coalition would cost less")
    p.add_argument("--store", default=None, help="a folder: one evaluation store per row; a rerun resumes from it")
    p.add_argument("--jobs", type=jobs_count, default=1,
                   help="rows explained at once in worker processes (default 1, -1 = all cores); same values")
    p.add_argument("--game-id", default=None,
                   help="a name for the model's version in the stores; needed for a pickled model whose fitted "
                        "state shapleig cannot read (not LightGBM, scikit-learn or torch)")
    p.add_argument("--out", default=None, help="per-row values as parquet (.parquet)")
    p.add_argument("--summary", default=None, help="the global importance table (.csv or .parquet)")
    p.add_argument("--background", type=int, default=100, help="background rows sampled from the data (100)")
    p.add_argument("--background-data", default=None, help="sample the background from this file instead")
    p.add_argument("--drop", nargs="+", default=None, help="columns that are not features (e.g. the target)")
    p.add_argument("--output", type=int, default=None, help="column of a multi-output prediction")
    p.add_argument("--plot", default=None, help="draw the global importance to this file (.png, .pdf, .svg)")
    p.add_argument("--kind", choices=("bar", "beeswarm"), default="bar", help="plot kind (bar)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_explain_rows)


__all__ = ["add_explain_rows_parser", "cmd_explain_rows", "parse_rows"]
