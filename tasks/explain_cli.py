"""shapleig explain: explain one row of a data file with a saved model.

    shapleig explain --model model.txt --data X.csv --row 3 --budget 40 [--plot fig.png]
        [--method kernelshap:paired=true] [--index k-SII] [--store run.sqlite] [--out values.parquet]

The model is a LightGBM text model (.txt, read as a lightgbm.Booster) or a pickled
scikit-learn / LightGBM estimator (.joblib, .pkl; only load files you trust: unpickling
runs code). Features are the model's own feature names when it records them, else every column
of the data file but those given with --drop. The background is a seeded sample of rows of the
same file (or --background-data). --method takes any name listed by "shapleig methods", with
options as name:key=value,key=value. --store records every coalition value, so a killed run
resumes; --out writes the values (one row per feature, or per term with --index k-SII and the
other interaction indices) as parquet.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from shapleig_tasks.cli_common import UsageError, cli_store_advice, print_frame

MODEL_SUFFIXES = {".txt": "lightgbm", ".model": "lightgbm", ".joblib": "pickle", ".pkl": "pickle",
                  ".pickle": "pickle"}


def load_model(path: Path) -> Any:
    """A LightGBM ``Booster`` from a text model, or the object in a joblib / pickle file."""
    if not path.is_file():
        raise UsageError(f"model file {path} does not exist")
    kind = MODEL_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"model file {path}: unknown suffix {path.suffix!r}; use one of {sorted(MODEL_SUFFIXES)}")
    try:
        if kind == "lightgbm":
            import lightgbm

            return lightgbm.Booster(model_file=str(path))
        import joblib

        return joblib.load(path)
    except Exception as exc:  # noqa: BLE001 - LightGBM and pickle raise many types for bad files
        raise UsageError(f"model file {path} could not be read: {type(exc).__name__}: {exc}") from exc


def load_table(path: Path) -> Any:
    """A pandas DataFrame from ``.csv`` or ``.parquet``."""
    import pandas as pd

    if not path.is_file():
        raise UsageError(f"data file {path} does not exist")
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"data file {path} could not be read as a table: {exc}") from exc


def model_features(model: Any) -> list[str] | None:
    """The feature names a fitted model records (LightGBM Booster / estimator, scikit-learn)."""
    names = getattr(model, "feature_names_in_", None)
    if names is None and callable(getattr(model, "feature_name", None)):  # lightgbm.Booster
        names = model.feature_name()
    if names is None:
        names = getattr(model, "feature_name_", None)
    if names is None:
        return None
    names = [str(n) for n in names]
    # LightGBM names columns Column_0.. when fitted on an array: no usable names
    return None if all(n == f"Column_{i}" for i, n in enumerate(names)) else names


def feature_frame(df: Any, model: Any, drop: list[str]) -> Any:
    """The columns the model was fitted on, in its order (or all but ``drop``)."""
    missing = [c for c in drop if c not in df.columns]
    if missing:
        raise UsageError(f"--drop: no such columns {missing}")
    names = model_features(model)
    if names is None:
        return df.drop(columns=drop)
    absent = [n for n in names if n not in df.columns]
    if absent:
        raise UsageError(f"the data lacks the model's features {absent}")
    return df[names]


def cmd_explain(args: argparse.Namespace) -> int:
    import shapleig
    from shapleig.errors import (
        BudgetError,
        CoalitionError,
        EvaluationFailedError,
        GameError,
        StoreError,
        StoreMismatchError,
    )
    from shapleig.estimation.enumeration import BudgetCoversGameWarning
    from shapleig.runs.timeout import check_timeout
    from shapleig.seeding import resolve_seed

    try:  # every input is checked before the model is loaded or anything evaluated
        seed = resolve_seed(args.seed)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--seed {args.seed}: {exc}") from exc
    try:
        timeout = check_timeout(args.eval_timeout, "--eval-timeout")
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    from shapleig_tasks.harness import check_output_path, check_results_path
    from shapleig_tasks.methods import parse_method

    if args.row < 0:
        raise UsageError(f"--row {args.row}: give a row position 0 .. n-1 (negative rows are not counted from the end)")
    from shapleig.games.indices import check_index, get_index
    from shapleig_tasks.harness import index_method_spec

    try:
        index = check_index(args.index)[0]
    except ValueError as exc:
        raise UsageError(f"--index: {exc}") from exc
    if args.plot and args.kind == "waterfall" and not get_index(index).efficient:
        raise UsageError(f"--kind waterfall: the {index} terms do not sum to the prediction; use --kind bar")
    try:
        estimator = index_method_spec(parse_method(args.method), index).build()
    except ValueError as exc:
        raise UsageError(f"--method: {exc}") from exc
    out = None
    if args.out:
        try:
            out = check_results_path(args.out)
        except ValueError as exc:
            raise UsageError(f"--out: {exc}") from exc
    plot = None
    if args.plot:  # a format matplotlib cannot write is refused now, not after the run
        from shapleig.explanation.plot import check_figure_path

        try:
            plot = check_output_path(check_figure_path(args.plot))
        except ValueError as exc:
            raise UsageError(f"--plot: {exc}") from exc
    model = load_model(Path(args.model))
    data = feature_frame(load_table(Path(args.data)), model, args.drop or [])
    if args.row >= len(data):
        raise UsageError(f"--row {args.row}: the data has {len(data)} rows (0 .. {len(data) - 1})")
    if args.background < 1:
        raise UsageError(f"--background must be a positive number of rows, got {args.background}")
    source = data if args.background_data is None else feature_frame(
        load_table(Path(args.background_data)), model, args.drop or [])
    # pandas' own integer seeds stop at 2**32, the project's at 2**63: a Generator beyond that
    state = seed if seed < 2**32 else np.random.default_rng(seed)
    background = source.sample(min(args.background, len(source)), random_state=state)
    try:
        with warnings.catch_warnings():  # a budget covering the game is said on stdout below
            warnings.simplefilter("ignore", BudgetCoversGameWarning)
            est = shapleig.explain(model, background, data.iloc[args.row], budget=args.budget, seed=seed,
                                   method=estimator, index=index, output=args.output, store=args.store,
                                   timeout=timeout, game_id=args.game_id, imputer=args.imputer,
                                   exact_if_cheap=not args.no_exact_if_cheap)
    except EvaluationFailedError as exc:  # the run failed (exit 1), the input was fine
        if "TimeoutError" in str(exc):
            raise EvaluationFailedError(f"{exc}; a model evaluation may take at most --eval-timeout {timeout:g} s: "
                                        f"raise it if the model is that slow") from exc
        raise
    except (GameError, BudgetError, CoalitionError, StoreError, StoreMismatchError) as exc:  # bad input
        raise UsageError(cli_store_advice(exc, "give another --store file")) from exc
    est.info["row"] = args.row
    # one row per feature (SV, BV) or per term of an interaction index ("a x b" for a pair)
    table = est.to_frame().rename(columns={"player": "feature" if est.max_order == 1 else "term"})
    table = table.reindex(table["value"].abs().sort_values(ascending=False).index).reset_index(drop=True)
    print(f"row {args.row}: prediction {est.info['prediction']:.6g} = baseline {est.baseline:.6g} "
          f"(mean over {len(background)} background rows) + sum of the values below")
    if est.info.get("exact"):
        print(est.info["message"])
    print(f"{est.method}, {est.evaluations} coalitions evaluated, {est.info['model_calls']} model calls")
    print_frame(table)
    if out is not None:
        write_values(table, est, args, out)
        print(f"wrote {out}")
    if plot is not None:
        shapleig.plot_explanation(est, kind=args.kind, out=plot)
        print(f"wrote {plot}")
    return 0


def write_values(table: Any, est: Any, args: argparse.Namespace, out: Path) -> None:
    """The explanation as parquet: one row per feature or term (feature / term, value, std) plus the run's
    row, prediction, baseline, method, budget, evaluations and seed."""
    frame = table.assign(row=args.row, prediction=est.info["prediction"], baseline=est.baseline,
                         method=est.method, method_spec=args.method, index=est.index, budget=est.budget,
                         evaluations=est.evaluations, seed=est.info.get("seed"))
    frame.to_parquet(out, index=False)


def add_explain_parser(sub: Any) -> None:
    """Register the ``explain`` subcommand on the ``shapleig`` parser's subparsers."""
    p = sub.add_parser("explain", help="Shapley values of one prediction of a saved model",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="LightGBM text model (.txt) or pickled estimator (.joblib/.pkl)")
    p.add_argument("--data", required=True, help="rows (.csv or .parquet) holding the explained row")
    p.add_argument("--row", type=int, required=True, help="position of the explained row in --data (0-based)")
    p.add_argument("--budget", type=int, default=None, help="coalitions to evaluate (default min(2^d, 8d))")
    p.add_argument("--seed", type=int, default=0, help="0 <= seed < 2**63 (default 0)")
    p.add_argument("--eval-timeout", type=float, default=None, metavar="SECONDS",
                   help="abandon a model evaluation (one coalition) that takes longer than this")
    p.add_argument("--method", default="shapleig",
                   help="any method listed by 'shapleig methods' (default shapleig), e.g. exact, kernelshap, "
                        "shapiq:KernelSHAP; options as name:key=value, e.g. kernelshap:paired=true")
    p.add_argument("--store", default=None,
                   help="evaluation store (SQLite file): records every coalition value; a rerun resumes from it "
                        "(another model, background or row is refused)")
    p.add_argument("--game-id", default=None,
                   help="a name for the model's version in the store; needed for a pickled model whose fitted "
                        "state shapleig cannot read (not LightGBM, scikit-learn or torch)")
    p.add_argument("--imputer", default="interventional", choices=("interventional", "baseline", "conditional"),
                   help="how absent features are filled: interventional (default), baseline or conditional")
    p.add_argument("--no-exact-if-cheap", action="store_true",
                   help="keep the method even where enumerating every coalition would cost less")
    p.add_argument("--out", default=None, help="write the values as parquet (.parquet)")
    p.add_argument("--background", type=int, default=100, help="background rows sampled from the data (100)")
    p.add_argument("--background-data", default=None, help="sample the background from this file instead")
    p.add_argument("--drop", nargs="+", default=None, help="columns that are not features (e.g. the target)")
    p.add_argument("--output", type=int, default=None, help="column of a multi-output prediction")
    p.add_argument("--index", default="SV",
                   help="SV (default), BV, or a pairwise interaction index k-SII, SII, STII, FSII "
                        "(the ShaplEIG arms, exact and shapiq:<Approximator>)")
    p.add_argument("--plot", default=None,
                   help="also draw the explanation to this file (.png, .pdf, .svg, ...: a format matplotlib writes)")
    p.add_argument("--kind", choices=("bar", "waterfall"), default="bar", help="plot kind (bar)")
    p.set_defaults(func=cmd_explain)


__all__ = ["add_explain_parser", "cmd_explain", "feature_frame", "load_model", "model_features", "write_values"]
