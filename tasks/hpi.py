"""Hyperparameter-importance studies from a model and a dataset: ``run_study`` and ``shapleig hpi``.

A study is one of the games of :mod:`shapleig.hpo` (ablation, tunability, sensitivity, optimizer
bias) whose objective is the k-fold cross-validation score of a model on a dataset:

- model:   ``"lightgbm"`` (default), ``"random_forest"``, or any scikit-learn estimator instance
           (its hyperparameters are set with ``set_params``; give a configuration space for it);
- dataset: a scikit-learn bundled dataset by name (diabetes, breast_cancer, wine, digits) or a CSV
           file with a target column (``target=``);
- space:   a sensible default per model family (:func:`default_space`, baseline = the library's
           defaults), a ``ConfigurationSpace``, or a path to ConfigSpace's JSON serialisation.

:func:`prepare_study` validates everything and builds the game without evaluating anything;
:meth:`Study.run` estimates the hyperparameters' Shapley values with a budget (ShaplEIG by
default, or any baseline), logging every evaluation to ``OUT/evaluations.sqlite`` so that the
same call resumes a killed study, and writes ``OUT/shapley.csv``, ``OUT/shapley.parquet``,
``OUT/shapley.png`` and ``OUT/study.json``. With ``index=`` (``--index``) it estimates the Banzhaf
values (``OUT/banzhaf.*``) or pairwise interactions (``OUT/fsii.*``, ``OUT/k-sii.*``, ...: one row
per hyperparameter and per pair).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from shapleig.estimation.result import ERROR_BAR_Z
from shapleig_tasks.ml import (
    DATASET_TASK,
    DATASETS,
    cv_folds,
    lightgbm_model,
    load_dataset,
    score,
)

MODEL_FAMILIES = ("lightgbm", "random_forest")
DEFAULT_BUDGET = "4p"
QUICK = dict(dataset="diabetes", hyperparameters=("learning_rate", "n_estimators", "num_leaves", "subsample"),
             study="tunability", budget="3p", inner_budget=4, n_folds=3)


# --------------------------------------------------------------------------------------------
# configuration spaces
def default_space(model: str = "lightgbm", hyperparameters: Sequence[str] | None = None, seed: int = 0) -> Any:
    """The default ``ConfigurationSpace`` of a model family; defaults are the library's defaults.

    lightgbm (8): learning_rate, n_estimators, num_leaves, min_child_samples, subsample,
    colsample_bytree, reg_alpha, reg_lambda. random_forest (5): n_estimators, max_features,
    min_samples_split, min_samples_leaf, bootstrap. ``hyperparameters`` keeps a subset.
    """
    from shapleig.hpo import require_configspace

    cs_mod = require_configspace()
    from ConfigSpace import Categorical, Float, Integer

    if model == "lightgbm":
        hps = [
            Float("learning_rate", (0.01, 0.3), log=True, default=0.1),
            Integer("n_estimators", (20, 300), log=True, default=100),
            Integer("num_leaves", (4, 64), log=True, default=31),
            Integer("min_child_samples", (2, 60), log=True, default=20),
            Float("subsample", (0.4, 1.0), default=1.0),
            Float("colsample_bytree", (0.4, 1.0), default=1.0),
            Float("reg_alpha", (0.0, 5.0), default=0.0),
            Float("reg_lambda", (0.0, 5.0), default=0.0),
        ]
    elif model == "random_forest":
        hps = [
            Integer("n_estimators", (10, 300), log=True, default=100),
            Float("max_features", (0.1, 1.0), default=1.0),
            Integer("min_samples_split", (2, 20), default=2),
            Integer("min_samples_leaf", (1, 20), default=1),
            Categorical("bootstrap", [True, False], default=True),
        ]
    else:
        raise ValueError(f"no default configuration space for model {model!r}; known: {MODEL_FAMILIES}")
    if hyperparameters is not None:
        known = [h.name for h in hps]
        unknown = [h for h in hyperparameters if h not in known]
        if unknown:
            raise ValueError(f"the {model} space has no hyperparameters {unknown}; it has {known}")
        hps = [h for h in hps if h.name in set(hyperparameters)]
    space = cs_mod.ConfigurationSpace(seed=seed)
    space.add(hps)
    return space


# --------------------------------------------------------------------------------------------
# data and the cross-validation objective
@dataclass(frozen=True)
class DataSpec:
    """A bundled scikit-learn dataset by ``name``, or a CSV ``path`` with a ``target`` column.

    ``regression``: None infers it (bundled: known; CSV: a numeric target with more than 10
    distinct values, or a non-integer one, is a regression target). ``digest``: SHA-256 of the CSV
    file, part of the study's identity so that an edited file does not reuse old evaluations.
    """

    name: str | None = None
    path: str | None = None
    target: str | None = None
    regression: bool | None = None
    digest: str | None = None

    @staticmethod
    def make(dataset: str, target: str | None = None, task: str | None = None) -> "DataSpec":
        if task not in (None, "regression", "classification"):
            raise ValueError(f"task must be 'regression' or 'classification', got {task!r}")
        forced = None if task is None else task == "regression"
        if dataset in DATASETS:
            if target is not None:
                raise ValueError("target= is for CSV files; bundled datasets have their own target")
            return DataSpec(name=dataset, regression=DATASET_TASK[dataset] == "regression" if forced is None else forced)
        path = Path(dataset)
        if path.suffix.lower() != ".csv" or not path.is_file():
            raise ValueError(f"dataset {dataset!r} is neither a bundled dataset {DATASETS} nor an existing .csv file")
        if not target:
            raise ValueError("a CSV dataset needs the name of its target column (target= / --target)")
        head = pd.read_csv(path, nrows=5)
        if target not in head.columns:
            raise ValueError(f"{path} has no column {target!r}; columns: {list(head.columns)}")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        spec = DataSpec(path=str(path.resolve()), target=target, regression=forced, digest=digest)
        if forced is None:
            _, y, regression = spec.load()
            spec = DataSpec(path=spec.path, target=target, regression=regression, digest=digest)
        return spec

    def load(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(X float64[n, d], y[n], regression)``; CSV categoricals are one-hot encoded."""
        if self.name is not None:
            x, y = load_dataset(self.name)
            return x, y, bool(self.regression)
        frame = pd.read_csv(self.path)
        y = frame.pop(self.target).to_numpy()
        x = pd.get_dummies(frame, dummy_na=False).to_numpy(dtype=np.float64)
        regression = self.regression
        if regression is None:
            numeric = np.issubdtype(y.dtype, np.number)
            regression = bool(numeric and (np.unique(y).size > 10 or not np.all(np.mod(y, 1) == 0)))
        return x, y, regression

    @property
    def label(self) -> str:
        return self.name if self.name is not None else Path(self.path).name


def make_estimator(model: Any, regression: bool, seed: int) -> Any:
    """A fresh, deterministic, single-threaded estimator of a family name or a clone of an instance."""
    if model == "lightgbm":
        # bagging acts only with subsample_freq > 0; at subsample = 1.0 (the default) it is a no-op
        return lightgbm_model(regression, {"subsample_freq": 1}, seed)
    if model == "random_forest":
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        return (RandomForestRegressor if regression else RandomForestClassifier)(random_state=seed, n_jobs=1)
    from sklearn.base import clone

    est = clone(model)
    if "random_state" in est.get_params():
        est.set_params(random_state=seed)
    return est


def model_label(model: Any) -> str:
    return model if isinstance(model, str) else type(model).__name__


class CVObjective:
    """``objective(config) -> mean k-fold CV score`` of a model on a dataset (higher is better).

    Deterministic: fixed folds and model seed (``seed``), single-threaded fits. Picklable and
    light (data load lazily in each process), so a worker can run a whole tuning run.
    metric: ``r2`` (regression default), ``neg_log_loss`` (classification default when the model
            has ``predict_proba``) or ``accuracy``.
    """

    def __init__(self, model: Any, data: DataSpec, *, metric: str | None = None, n_folds: int = 3, seed: int = 0):
        if not isinstance(model, str):
            if not (hasattr(model, "fit") and hasattr(model, "set_params")):
                raise ValueError(f"model must be one of {MODEL_FAMILIES} or a scikit-learn estimator, got {model!r}")
        elif model not in MODEL_FAMILIES:
            raise ValueError(f"unknown model {model!r}; choose one of {MODEL_FAMILIES} or pass an estimator")
        if int(n_folds) < 2:
            raise ValueError(f"n_folds must be >= 2, got {n_folds}")
        self.model, self.data, self.n_folds, self.seed = model, data, int(n_folds), int(seed)
        probe = make_estimator(model, bool(data.regression), self.seed)
        if metric is None:
            metric = "r2" if data.regression else ("neg_log_loss" if hasattr(probe, "predict_proba") else "accuracy")
        if (metric == "r2") != bool(data.regression) or metric not in ("r2", "neg_log_loss", "accuracy"):
            kind = "regression" if data.regression else "classification"
            raise ValueError(f"metric {metric!r} does not fit the {kind} dataset {data.label}")
        self.metric = metric
        self._loaded: tuple | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loaded": None}  # workers reload the data themselves

    def _setup(self) -> tuple:
        if self._loaded is None:
            x, y, regression = self.data.load()
            classes = None if regression else np.unique(y)
            self._loaded = (x, y, classes, cv_folds(x, y, regression, self.n_folds, self.seed))
        return self._loaded

    def __call__(self, config: Mapping[str, Any]) -> float:
        x, y, classes, folds = self._setup()
        scores = []
        for tr, te in folds:
            est = make_estimator(self.model, bool(self.data.regression), self.seed)
            est.set_params(**dict(config))
            est.fit(x[tr], y[tr])
            if self.metric == "r2":
                pred = est.predict(x[te])
            elif hasattr(est, "predict_proba"):
                pred = est.predict_proba(x[te])
            else:  # accuracy of hard predictions: one-hot "probabilities" of the predicted class
                pred = (est.predict(x[te])[:, None] == classes[None, :]).astype(float)
            scores.append(score(self.metric, y[te], pred, classes))
        return float(np.mean(scores))

    def params(self) -> dict[str, Any]:
        """What determines the scores (the objective's identity for evaluation stores): the model (a family
        name, or the estimator, read by its parameters and state), the data (a bundled dataset's name, a
        CSV file's path and digest), the metric, the folds, the seed, and the versions of the libraries
        that fit and score (an upgraded LightGBM or scikit-learn gives other scores)."""
        return {"model": self.model, "data": self.data.__dict__, "metric": self.metric,
                "n_folds": self.n_folds, "seed": self.seed, "versions": self.versions()}

    def versions(self) -> dict[str, str]:
        """``{package: "<distribution> <version>"}`` of the libraries the scores come from."""
        from shapleig.games.identity import package_version

        packages = ["numpy", "sklearn"] + (["lightgbm"] if self.model == "lightgbm" else [])
        return {p: package_version(p) for p in packages}


# --------------------------------------------------------------------------------------------
# the study
@dataclass
class StudyResult:
    """What a study produced: the table (one row per hyperparameter), the estimate, the files."""

    table: pd.DataFrame
    estimate: Any
    files: dict[str, Path]
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class Study:
    """A validated study, ready to run (nothing evaluated yet): the game, method and budget."""

    game: Any
    estimator: Any
    method: str
    budget: int
    seed: int
    out: Path
    jobs: int
    settings: dict[str, Any]

    def run(self, *, log: Any = None) -> StudyResult:
        """Estimate (resuming from ``OUT/evaluations.sqlite``), write table, plot and summary."""
        from shapleig import EvaluationStore, ExecutorEvaluator

        self.out.mkdir(parents=True, exist_ok=True)
        # the settings first, so a later study on this folder is told what differs even if this run dies
        (self.out / SETTINGS_FILE).write_text(json.dumps(self.settings, indent=2, default=str))
        store_path = study_files(self.out, self.settings["index"])["store"]
        resumed = store_path.is_file()
        start = time.perf_counter()
        with EvaluationStore(store_path) as store:
            stored_before = len(store)
            if self.jobs > 1:
                from concurrent.futures import ProcessPoolExecutor

                with ProcessPoolExecutor(self.jobs) as pool:
                    est = self.estimator.estimate(self.game, self.budget, seed=self.seed, store=store,
                                                  evaluator=ExecutorEvaluator(pool))
            else:
                est = self.estimator.estimate(self.game, self.budget, seed=self.seed, store=store)
        wall = time.perf_counter() - start
        table = shapley_table(self.game, est)
        files = {k: v for k, v in study_files(self.out, est.index).items() if k not in ("settings", "target")}
        table.to_csv(files["table"], index=False)
        table.to_parquet(files["parquet"], index=False)
        plot_shapley(table, files["plot"], title=f"{self.settings['study']}: {self.settings['model']} on "
                     f"{self.settings['dataset']} ({self.method}, {est.evaluations} evaluations)", index=est.index,
                     units=f"CV {self.settings.get('metric', 'score')}")
        summary = {
            **self.settings,
            "method": self.method,
            "budget": self.budget,
            "evaluations": int(est.evaluations),
            "from_store": int(est.info.get("n_store_hits", 0)),
            "resumed": resumed and stored_before > 0,
            "wall_s": wall,
            "v_empty": est.baseline,
            "objective_calls_this_process": int(getattr(self.game, "n_objective_calls", 0)),
            VALUE_NAMES.get(est.index, "value"): dict(zip(table.iloc[:, 0], table.iloc[:, 1])),
        }
        files["summary"].write_text(json.dumps(summary, indent=2, default=str))
        if log is not None:
            log(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
            log(f"{est.evaluations} evaluations ({summary['from_store']} from the store) in {wall:.1f} s; "
                f"wrote {', '.join(str(p) for p in files.values())}")
        return StudyResult(table, est, files, summary)


SETTINGS_FILE = "settings.json"
TARGET_FILE = "ablation_target.json"  # the ablation study's target configuration, cached


def study_files(out: Path, index: str) -> dict[str, Path]:
    """Every file a study writes in ``out``, by kind (checked before anything is evaluated).

    Args:
        out: the output folder.
        index: the index estimated (``"SV"``: ``shapley.csv`` ...; ``"FSII"``: ``fsii.csv`` ...).

    Returns:
        ``settings``, ``target`` (the ablation study's cached target), ``store``, ``table``,
        ``parquet``, ``plot`` and ``summary``.
    """
    stem = VALUE_NAMES.get(index, index.lower())
    return {"settings": out / SETTINGS_FILE, "target": out / TARGET_FILE, "store": out / "evaluations.sqlite",
            "table": out / f"{stem}.csv", "parquet": out / f"{stem}.parquet", "plot": out / f"{stem}.png",
            "summary": out / "study.json"}
# settings keys as the command line names them
_SETTING_NAMES = {"n_folds": "folds", "inner_budget": "inner budget", "target_config": "target config"}


def settings_differences(out: Path, settings: Mapping[str, Any]) -> list[str]:
    """What differs between ``settings`` and the study recorded in ``out`` (``settings.json``, or the
    ``study.json`` of a finished run), as ``"folds: 2 vs 3"`` (recorded vs now); [] when none is recorded."""
    for name in (SETTINGS_FILE, "study.json"):
        path = Path(out) / name
        if path.is_file():
            try:
                recorded = json.loads(path.read_text())
            except (OSError, ValueError):
                return []
            now = json.loads(json.dumps(dict(settings), default=str))  # as it would be written
            return [f"{_SETTING_NAMES.get(k, k.replace('_', ' '))}: {_shown(recorded.get(k))} vs {_shown(v)}"
                    for k, v in now.items() if k in recorded and recorded[k] != v]
    return []


# the name of an order-1 index's values: the result files' stem (shapley.csv) and the value column;
# interaction tables are named after the index (fsii.csv) with a "value" column
VALUE_NAMES = {"SV": "shapley", "BV": "banzhaf"}


def shapley_table(game: Any, est: Any) -> pd.DataFrame:
    """One row per hyperparameter: Shapley (or Banzhaf) value, its posterior std (NaN for methods
    without one), baseline (and target) value, rank by absolute value. For an interaction index
    one row per term: ``term`` (``"a x b"`` for a pair), ``order``, ``value``, ``std``, ``rank``."""
    values = np.asarray(est.values, dtype=np.float64)
    std = np.asarray(est.std, dtype=np.float64) if getattr(est, "std", None) is not None else np.full(values.size, np.nan)
    names = list(game.names)
    index = getattr(est, "index", "SV")
    if est.max_order > 1:
        terms = est.terms
        table = pd.DataFrame({"term": [" x ".join(names[j] for j in t) for t in terms],
                              "value": values, "std": std, "order": [len(t) for t in terms]})
        table["rank"] = (-np.abs(values)).argsort().argsort() + 1
        return table
    table = pd.DataFrame({"hyperparameter": names, VALUE_NAMES.get(index, "value"): values, "std": std})
    space = getattr(game, "space", None)
    if space is not None:
        table["baseline"] = [str(space.baseline[n]) for n in names]
    if getattr(game, "target", None) is not None:
        table["target"] = [str(game.target[n]) for n in names]
    table["rank"] = (-np.abs(values)).argsort().argsort() + 1
    return table


def plot_shapley(table: pd.DataFrame, path: str | Path, title: str = "", n_std: float = ERROR_BAR_Z,
                 index: str = "SV", max_display: int = 20, units: str = "score units") -> Path:
    """Horizontal bars of the values of :func:`shapley_table`, largest |value| on top, with
    ``± n_std`` posterior std error bars (1.96, a 95% interval, as :func:`shapleig.plot_explanation`)
    for methods that report a std, a legend saying what bars and error bars are, and ``units`` on the
    axis (the CV metric's). Interaction tables: the ``max_display`` largest terms, pairs in orange."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from shapleig.explanation.plot import error_bar_label
    from shapleig.games.indices import index_label

    label, value = table.columns[0], table.columns[1]
    t = table[table["rank"] <= max_display].sort_values("rank", ascending=False)
    fig, ax = plt.subplots(figsize=(6.5 if label == "hyperparameter" else 8.0, 0.45 * len(t) + 1.8))
    xerr = None if t["std"].isna().all() else n_std * t["std"].fillna(0.0).to_numpy()
    color = np.where(t["order"] > 1, "tab:orange", "tab:blue") if "order" in t else "tab:blue"
    ax.barh(t[label], t[value], color=color, alpha=0.8)
    handles = [Patch(color="tab:blue", label=index_label(index) if "order" not in t else "single term")]
    if "order" in t and (t["order"] > 1).any():
        handles.append(Patch(color="tab:orange", label="pair"))
    if xerr is not None:
        handles.append(ax.errorbar(t[value], t[label], xerr=xerr, fmt="none", ecolor="0.15", elinewidth=1, capsize=3,
                                   label=error_bar_label(n_std)))
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_xlabel(f"{index_label(index)} ({units})")
    ax.legend(handles=handles, loc="best", fontsize=8, framealpha=0.85)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _ablation_target(space: Any, objective: CVObjective, n_trials: int, seed: int, out: Path) -> dict[str, Any]:
    """The best configuration of a seeded random search over the whole space (the "tuned"
    configuration an ablation study explains), cached in ``OUT/ablation_target.json``."""
    from shapleig.hpo import RandomSearch

    key = hashlib.sha256(json.dumps([space.params(), objective.params(), n_trials, seed],
                                    sort_keys=True, default=str).encode()).hexdigest()[:16]
    cache = out / TARGET_FILE
    if cache.is_file():
        saved = json.loads(cache.read_text())
        if saved.get("key") == key:
            return saved["target"]
    vectors = RandomSearch(n_trials).trial_vectors(space, np.ones(space.n_players, dtype=bool), seed)
    configs = [space.from_vector(v) for v in vectors]
    scores = [objective(c) for c in configs]
    best = configs[int(np.argmax(scores))]
    out.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "target": best, "score": float(np.max(scores))}, indent=2, default=str))
    return best


def prepare_study(
    model: Any = "lightgbm",
    dataset: str = "diabetes",
    *,
    target: str | None = None,
    task: str | None = None,
    space: Any = None,
    hyperparameters: Sequence[str] | None = None,
    study: str = "tunability",
    budget: int | str | None = None,
    method: str = "shapleig",
    inner_budget: int = 10,
    tuner: str = "random",
    ensemble: Sequence[str] = ("optuna-tpe",),
    target_config: Mapping[str, Any] | None = None,
    metric: str | None = None,
    n_folds: int = 3,
    seed: int = 0,
    out: str | Path = "hpi-study",
    jobs: int = 1,
    index: str = "SV",
) -> Study:
    """Validate the inputs and build the study's game; raises ValueError/GameError/ImportError
    naming the problem before anything is evaluated (except the ablation target search).

    budget: evaluations of v (an int or a multiple of p, ``'4p'``; default ``min(4p, 2^p)``, so
    a small space is enumerated rather than refused); inner_budget: trials of each
    tuning run (tunability, optimizer bias), configurations sampled (sensitivity), or trials of
    the random search that picks the ablation target when ``target_config`` is not given.
    tuner: ``random`` or ``optuna-<tpe|random|qmc|gp>``; for optimizer bias it is the optimizer
    of interest and ``ensemble`` the other tuners. index: ``"SV"`` (default), ``"BV"`` or a pairwise
    interaction index (``"FSII"``, ``"k-SII"``, ...; the ShaplEIG arms, ``exact`` and
    ``shapiq:<Approximator>``): the table then has one row per term, singletons then pairs.
    """
    from shapleig.games.game import check_budget
    from shapleig.hpo import (
        STUDIES,
        AblationGame,
        HPSpace,
        OptimizerBiasGame,
        SensitivityGame,
        TunabilityGame,
        load_space,
        make_tuner,
    )
    from shapleig.seeding import resolve_seed
    from shapleig_tasks.harness import check_output_file, index_method_spec, parse_budgets, resolve_budget
    from shapleig_tasks.methods import parse_method

    try:  # the study's seed fixes folds, models and tuning runs: checked before any data is loaded
        seed = resolve_seed(seed)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--seed {seed!r}: the study seed must be an integer 0 <= seed < 2**63 ({exc})") from None
    if study not in STUDIES:
        raise ValueError(f"unknown study {study!r}; choose one of {STUDIES}")
    data = DataSpec.make(dataset, target, task)
    objective = CVObjective(model, data, metric=metric, n_folds=n_folds, seed=seed)
    if space is None:
        if not isinstance(model, str):
            raise ValueError(f"give a configuration space (space=) for the estimator {model_label(model)}")
        space = default_space(model, hyperparameters, seed=seed)
    elif hyperparameters is not None:
        raise ValueError("hyperparameters= selects from the default space; edit your own space instead")
    if isinstance(space, (str, Path)):
        space = load_space(str(space))
    hp_space = HPSpace(space)
    p = hp_space.n_players
    from shapleig.games.indices import check_index

    # interactions have p + C(p, 2) terms: their default budget is 8p (both capped at 2^p)
    default_budget = DEFAULT_BUDGET if check_index(index)[1] == 1 else "8p"
    (spec,) = parse_budgets([default_budget if budget is None else budget])
    n_eval = resolve_budget(spec, p)
    if budget is None:
        n_eval = min(n_eval, 2**p)  # the default never asks for more coalitions than exist
    check_budget(n_eval)
    if n_eval > 2**p:
        raise ValueError(f"budget {n_eval} exceeds the 2^{p} = {2**p} coalitions of the game")
    if isinstance(inner_budget, bool) or int(inner_budget) < 1:
        raise ValueError(f"inner_budget must be a positive number of trials, got {inner_budget!r}")
    jobs = int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    spec_m = index_method_spec(parse_method(method), index)
    if spec_m.name == "shapleig" and jobs > 1 and "batch_size" not in spec_m.options:
        spec_m = spec_m.with_options(batch_size=jobs)  # one coalition per worker per step
    estimator = spec_m.build()
    minimum = estimator.min_budget(p)
    if n_eval < minimum:
        raise ValueError(f"{spec_m.label} needs budget >= {minimum} for p = {p}; got {n_eval}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is not a folder")
    for path in study_files(out, spec_m.options.get("index", "SV")).values():
        check_output_file(path)  # a FIFO among them would block a write after the (costly) evaluations
    common = dict(seed=seed)
    if study == "tunability":
        game = TunabilityGame(hp_space, objective, make_tuner(tuner, inner_budget), **common)
    elif study == "sensitivity":
        game = SensitivityGame(hp_space, objective, inner_budget, **common)
    elif study == "optimizer-bias":
        game = OptimizerBiasGame(hp_space, objective, make_tuner(tuner, inner_budget),
                                 [make_tuner(t, inner_budget) for t in ensemble], **common)
    else:
        chosen = dict(target_config) if target_config is not None else None
        if chosen is None:
            chosen = _ablation_target(hp_space, objective, int(inner_budget), seed, out)
        game = AblationGame(hp_space, objective, chosen, **common)
    settings = {
        "study": study, "model": model_label(model), "dataset": data.label, "metric": objective.metric,
        "n_folds": objective.n_folds, "hyperparameters": hp_space.names, "inner_budget": int(inner_budget),
        "tuner": tuner, "ensemble": list(ensemble) if study == "optimizer-bias" else None, "seed": seed,
        "target_config": getattr(game, "target", None), "index": spec_m.options.get("index", "SV"),
    }
    store_path = out / "evaluations.sqlite"
    if store_path.is_file():  # a store of another study is refused now, not after the setup
        from shapleig import EvaluationStore
        from shapleig.errors import StoreMismatchError

        changed = settings_differences(out, settings)
        if changed:  # in words, before the store's digests
            raise StoreMismatchError(f"{out} holds another study ({'; '.join(changed)}); give another --out "
                                     f"folder, or the same settings to resume")
        with EvaluationStore(store_path) as store:
            store.bind(game)
    return Study(game, estimator, spec_m.label, n_eval, int(seed), out, jobs, settings)


def run_study(model: Any = "lightgbm", dataset: str = "diabetes", *, log: Any = None, **options: Any) -> StudyResult:
    """:func:`prepare_study` then :meth:`Study.run`: the hyperparameters' Shapley values with error
    bars, the table, the plot and a resumable store in ``out``. Quiet as a library call; pass
    ``log=print`` (as ``shapleig hpi`` does) for the table and the files written."""
    return prepare_study(model, dataset, **options).run(log=log)


# --------------------------------------------------------------------------------------------
# command line (``shapleig hpi``)
def add_arguments(p: argparse.ArgumentParser) -> None:
    from shapleig.hpo.games import STUDIES
    from shapleig.hpo.tuners import TUNERS

    p.add_argument("--model", default="lightgbm", choices=MODEL_FAMILIES, help="model family (default: lightgbm)")
    p.add_argument("--dataset", default="diabetes",
                   help=f"bundled dataset ({', '.join(DATASETS)}) or a .csv file (default: diabetes)")
    p.add_argument("--target", default=None, help="target column of a CSV dataset")
    p.add_argument("--task", default=None, choices=("regression", "classification"),
                   help="override the inferred task of a CSV dataset")
    p.add_argument("--space", default=None, help="configuration space as ConfigSpace JSON (default: the model's)")
    p.add_argument("--hyperparameters", nargs="+", default=None, help="keep these of the default space")
    p.add_argument("--study", default="tunability", choices=STUDIES, help="the game (default: tunability)")
    p.add_argument("--budget", default=None,
                   help="evaluations of v: an integer or a multiple of p (default: 4p, at most 2^p)")
    p.add_argument("--method", default="shapleig", help="estimator, name[:key=value,...] (default: shapleig)")
    p.add_argument("--inner-budget", type=int, default=10,
                   help="trials per tuning run / sampled configurations (default: 10)")
    p.add_argument("--tuner", default="random", choices=TUNERS, help="inner tuner (default: random)")
    p.add_argument("--ensemble", nargs="+", default=["optuna-tpe"], choices=TUNERS,
                   help="optimizer bias: the tuners compared against (default: optuna-tpe)")
    p.add_argument("--target-config", default=None,
                   help="ablation: JSON of the configuration of interest (default: best of a random search)")
    p.add_argument("--metric", default=None, choices=("r2", "neg_log_loss", "accuracy"))
    p.add_argument("--folds", type=int, default=3, help="cross-validation folds (default: 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--index", default="SV",
                   help="SV (default), BV, or a pairwise interaction index FSII, k-SII, SII, STII: the table "
                        "(fsii.csv, ...) and plot then show every hyperparameter and pair")
    p.add_argument("--out", default="hpi-study", help="output folder (default: ./hpi-study)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes, one tuning run each (default: 1)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: LightGBM on diabetes, 4 hyperparameters, tunability, budget 3p, 4 trials")


# ``--quick`` fixes these options: each given with another value than its default is refused
_QUICK_FIXES = {"dataset": "--dataset", "study": "--study", "budget": "--budget", "hyperparameters": "--hyperparameters",
                "inner_budget": "--inner-budget", "folds": "--folds", "space": "--space",
                "target": "--target", "task": "--task"}


def quick_conflicts(args: argparse.Namespace) -> list[str]:
    """The options given to ``shapleig hpi --quick`` that it would ignore (``--dataset X`` ...)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args([])
    return [f"{flag} {_shown(getattr(args, dest))}" for dest, flag in _QUICK_FIXES.items()
            if getattr(args, dest, None) != getattr(defaults, dest)]


def _shown(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def study_from_args(args: argparse.Namespace) -> Study:
    """The :class:`Study` of parsed ``shapleig hpi`` arguments (validated, nothing evaluated)."""
    options: dict[str, Any] = dict(
        target=args.target, task=args.task, space=args.space, hyperparameters=args.hyperparameters,
        study=args.study, budget=args.budget, method=args.method, inner_budget=args.inner_budget,
        tuner=args.tuner, ensemble=tuple(args.ensemble), metric=args.metric, n_folds=args.folds,
        seed=args.seed, out=args.out, jobs=args.jobs, index=args.index,
    )
    if args.target_config is not None:
        try:
            options["target_config"] = json.loads(args.target_config)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--target-config is not valid JSON: {exc}") from exc
    dataset = args.dataset
    if args.quick:
        ignored = quick_conflicts(args)
        if ignored:
            raise ValueError(f"--quick runs a fixed smoke study and would ignore {', '.join(ignored)}; "
                             f"drop --quick to run with these options")
        options.update({k: v for k, v in QUICK.items() if k != "dataset"})
        dataset = QUICK["dataset"]
    return prepare_study(args.model, dataset, **options)


__all__ = ["CVObjective", "DataSpec", "Study", "StudyResult", "default_space", "plot_shapley",
           "prepare_study", "run_study", "shapley_table"]
