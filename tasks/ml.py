"""Real expensive games computed on the fly with LightGBM on scikit-learn's bundled data (docs/games.md §8).

Three kinds, all offline (no network) and deterministic on one machine and library versions:

- ``HPIAblationGame``: players are hyperparameters; v(S) is the mean k-fold CV score of the
  configuration that takes lambda* on S and LightGBM's default lambda0 elsewhere.
- ``FeatureImportanceGame``: players are feature groups; v(S) is the k-fold CV score of LightGBM
  retrained on the columns of S; v(empty) is the score of the constant (prevalence/mean) predictor.
- ``DataValuationGame``: players are disjoint chunks of the training split; v(S) is the holdout
  score of LightGBM trained on the union of the chunks in S (degenerate unions score as the
  constant predictor).

Constructors only store configuration: data, folds and models are touched on the first call.
``exact_values()`` enumerates all 2^p coalitions once (tqdm progress bar) and caches the table on
disk in the docs/games.md §7 format plus a JSON sidecar (params and library versions), keyed by ``params()``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from shapleig.errors import GameError
from shapleig.games.coalitions import all_coalitions, as_coalition_matrix

from .tables import TableGame, save_table

DATASETS = ("diabetes", "breast_cancer", "wine", "digits")
# Task type and the metric recommended by docs/games.md §8 (log-loss: AUC/accuracy saturate).
DATASET_TASK = {"diabetes": "regression", "breast_cancer": "binary", "wine": "multiclass", "digits": "multiclass"}
DEFAULT_METRIC = {"diabetes": "r2", "breast_cancer": "neg_log_loss", "wine": "neg_log_loss", "digits": "neg_log_loss"}
METRICS = ("r2", "neg_log_loss", "accuracy")

# Hyperparameter players: name -> (lambda0 = LightGBM default, lambda* = configuration of interest).
# Each player is a dict of LightGBM parameters so that coupled settings form one player.
HPI_SPACE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "learning_rate": ({"learning_rate": 0.1}, {"learning_rate": 0.03}),
    "n_estimators": ({"n_estimators": 100}, {"n_estimators": 300}),
    "num_leaves": ({"num_leaves": 31}, {"num_leaves": 8}),
    "max_depth": ({"max_depth": -1}, {"max_depth": 4}),
    "min_child_samples": ({"min_child_samples": 20}, {"min_child_samples": 5}),
    "min_child_weight": ({"min_child_weight": 1e-3}, {"min_child_weight": 1e-2}),
    "min_split_gain": ({"min_split_gain": 0.0}, {"min_split_gain": 0.01}),
    # bagging acts only when subsample_freq > 0, so both move together as one player
    "subsample": ({"subsample": 1.0, "subsample_freq": 0}, {"subsample": 0.7, "subsample_freq": 1}),
    "colsample_bytree": ({"colsample_bytree": 1.0}, {"colsample_bytree": 0.6}),
    "reg_alpha": ({"reg_alpha": 0.0}, {"reg_alpha": 0.1}),
    "reg_lambda": ({"reg_lambda": 0.0}, {"reg_lambda": 1.0}),
    "max_bin": ({"max_bin": 255}, {"max_bin": 63}),
    "path_smooth": ({"path_smooth": 0.0}, {"path_smooth": 1.0}),
    "extra_trees": ({"extra_trees": False}, {"extra_trees": True}),
    "min_data_in_bin": ({"min_data_in_bin": 3}, {"min_data_in_bin": 10}),
    "feature_fraction_bynode": ({"feature_fraction_bynode": 1.0}, {"feature_fraction_bynode": 0.7}),
}
# Player order: the CI set first (p = 8), then the rest of the 13-player game, then 3 extras.
HPI_CI_PLAYERS = (
    "learning_rate", "n_estimators", "num_leaves", "max_depth",
    "min_child_samples", "subsample", "colsample_bytree", "reg_lambda",
)
HPI_PLAYER_ORDER = HPI_CI_PLAYERS + (
    "min_child_weight", "min_split_gain", "reg_alpha", "max_bin", "path_smooth",
    "extra_trees", "min_data_in_bin", "feature_fraction_bynode",
)
MAX_ENUMERATED_PLAYERS = 16


def default_cache_dir() -> Path:
    """``$SHAPLEIG_CACHE`` if set, else ``~/.cache/shapleig``."""
    env = os.environ.get("SHAPLEIG_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "shapleig"


def library_versions() -> dict[str, str]:
    """Versions that can change LightGBM results; written to every table's sidecar."""
    import lightgbm
    import sklearn

    return {
        "lightgbm": lightgbm.__version__,
        "scikit-learn": sklearn.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def load_dataset(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X float64[n, d], y[n])`` of a bundled scikit-learn dataset, in its fixed row order."""
    from sklearn import datasets

    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {DATASETS}")
    x, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    return np.asarray(x, dtype=np.float64), np.asarray(y)


def score(metric: str, y_true: np.ndarray, pred: np.ndarray, classes: np.ndarray | None) -> float:
    """Score (higher is better). ``pred``: values (r2), probabilities [n, K] (log-loss, accuracy)."""
    from sklearn.metrics import log_loss, r2_score

    if metric == "r2":
        return float(r2_score(y_true, pred))
    if metric == "neg_log_loss":
        return -float(log_loss(y_true, pred, labels=classes))
    if metric == "accuracy":
        return float(np.mean(classes[np.argmax(pred, axis=1)] == y_true))
    raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")


def _constant_prediction(metric: str, y_train: np.ndarray | None, n_test: int, classes: np.ndarray | None) -> np.ndarray:
    """Predictions of the constant model: training mean / class prevalence, or (no training
    rows) zero-mean / uniform class probabilities."""
    if metric == "r2":
        return np.full(n_test, float(np.mean(y_train)) if y_train is not None and len(y_train) else 0.0)
    k = len(classes)
    if y_train is None or not len(y_train):
        prior = np.full(k, 1.0 / k)
    else:
        prior = np.array([np.mean(y_train == c) for c in classes])
    return np.tile(prior, (n_test, 1))


def _check_metric(dataset: str, metric: str | None) -> str:
    metric = DEFAULT_METRIC[dataset] if metric is None else metric
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    if (metric == "r2") != (DATASET_TASK[dataset] == "regression"):
        raise ValueError(f"metric {metric!r} does not fit the {DATASET_TASK[dataset]} dataset {dataset!r}")
    return metric


def lightgbm_model(regression: bool, params: dict[str, Any], seed: int):
    """A deterministic single-threaded LightGBM estimator (docs/games.md §8 settings) with ``params`` on top."""
    import lightgbm as lgb

    cls = lgb.LGBMRegressor if regression else lgb.LGBMClassifier
    fixed = dict(deterministic=True, force_row_wise=True, n_jobs=1, random_state=seed, verbose=-1)
    return cls(**{**params, **fixed})


def cv_folds(x: np.ndarray, y: np.ndarray, regression: bool, n_folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_folds`` shuffled (train, test) index splits seeded by ``seed``; stratified for classes."""
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter = (KFold if regression else StratifiedKFold)(n_folds, shuffle=True, random_state=seed)
    return [(tr, te) for tr, te in splitter.split(x, y)]


class MLGame:
    """Base: lazy data, deterministic LightGBM fits, enumeration with an on-disk cached table.

    Subclasses set ``kind``, ``folder_kind`` (the cache folder is ``LightGBM_<folder_kind>_<dataset>_Game``,
    docs/games.md §8 layout), ``n_players``, ``dataset``, ``seed``, ``metric``, list their other parameters in
    ``_game_params()`` and implement ``_setup()`` and ``_evaluate(row: bool[p]) -> float``.
    """

    kind: str = ""
    folder_kind: str = ""
    n_players: int
    dataset: str
    seed: int
    metric: str

    def __init__(self, *, cache_dir: str | os.PathLike | None = None, progress: bool = True):
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.progress = progress
        self.n_evaluations = 0  # coalitions evaluated by fitting models (cache hits excluded)
        self._ready = False
        self._table: TableGame | None = None

    # -- configuration ----------------------------------------------------------------------
    @property
    def folder(self) -> str:
        return f"LightGBM_{self.folder_kind}_{self.dataset}_Game"

    @property
    def name(self) -> str:
        return f"{self.folder}/{self.n_players}/seed={self.seed}"

    def params(self) -> dict[str, Any]:
        """Everything that determines the values (the cache key and the JSON sidecar)."""
        common = {"kind": self.kind, "dataset": self.dataset, "n_players": self.n_players,
                  "seed": self.seed, "metric": self.metric}
        return {**common, **self._game_params()}

    def _game_params(self) -> dict[str, Any]:
        """The subclass's parameters beyond kind, dataset, n_players, seed and metric."""
        raise NotImplementedError

    def _setup_cv(self, n_folds: int) -> None:
        """Load the dataset, its classes (None for R^2) and the ``n_folds`` CV splits."""
        self._x, self._y = load_dataset(self.dataset)
        self._classes = None if self.metric == "r2" else np.unique(self._y)
        self._fold_idx = self._folds(self._x, self._y, n_folds)

    def cache_key(self) -> str:
        """SHA-256 of the canonical JSON of ``params()`` (first 12 hex digits)."""
        blob = json.dumps(self.params(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def cache_path(self) -> Path:
        """Table path ``<cache>/<folder>/<p>/seed=<s>-<key>.npz`` (sidecar: same stem, .json)."""
        root = self.cache_dir if self.cache_dir is not None else default_cache_dir()
        return root / self.folder / str(self.n_players) / f"seed={self.seed}-{self.cache_key()}.npz"

    def _model(self, params: dict[str, Any]):
        """A deterministic LightGBM estimator (docs/games.md §8 settings) with ``params`` on top of defaults."""
        return lightgbm_model(DATASET_TASK[self.dataset] == "regression", params, self.seed)

    def _folds(self, x: np.ndarray, y: np.ndarray, n_folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return cv_folds(x, y, DATASET_TASK[self.dataset] == "regression", n_folds, self.seed)

    def _fit_score(self, params: dict[str, Any], x_tr, y_tr, x_te, y_te, classes) -> float:
        model = self._model(params)
        model.fit(x_tr, y_tr)
        if self.metric == "r2":
            pred = model.predict(x_te)
        else:
            pred = model.predict_proba(x_te)
        return score(self.metric, y_te, pred, classes)

    def _setup(self) -> None:
        raise NotImplementedError

    def _evaluate(self, row: np.ndarray) -> float:
        raise NotImplementedError

    # -- game protocol ----------------------------------------------------------------------
    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """Values ``float64[m]`` of ``bool[m, p]`` coalitions; one model fit (or CV) per row."""
        z = as_coalition_matrix(coalitions, self.n_players)
        if not self._ready:
            self._setup()
            self._ready = True
        out = np.empty(z.shape[0])
        for r, row in enumerate(z):
            out[r] = self._evaluate(row)
            self.n_evaluations += 1
        return out

    # -- ground truth -----------------------------------------------------------------------
    def table(self, *, recompute: bool = False, use_cache: bool = True, n_jobs: int = 1) -> TableGame:
        """The full value table as a :class:`TableGame`, from the disk cache or by enumeration.

        Enumeration evaluates all 2^p coalitions once (progress bar if ``self.progress``), in
        ``n_jobs`` threads when > 1 (each coalition is an independent deterministic fit,
        so the values do not depend on ``n_jobs``), and, if ``use_cache``, writes
        ``cache_path()`` and its JSON sidecar.
        """
        if self._table is not None and not recompute:
            return self._table
        if self.n_players > MAX_ENUMERATED_PLAYERS:
            raise GameError(f"exact values enumerate 2^p coalitions; p = {self.n_players} > {MAX_ENUMERATED_PLAYERS}")
        path = self.cache_path()
        if use_cache and not recompute and path.is_file():
            self._table = self._load_cached(path)
            return self._table
        z = all_coalitions(self.n_players)
        values = np.empty(z.shape[0])
        start = time.perf_counter()
        from tqdm.auto import tqdm

        bar = tqdm(total=z.shape[0], desc=self.name, disable=not self.progress, unit="coalition")
        if int(n_jobs) == 1:
            for r in range(z.shape[0]):
                values[r] = self(z[r : r + 1])[0]
                bar.update(1)
        else:
            from joblib import Parallel, delayed

            # Threads: LightGBM fits release the GIL, and threads start instantly and share the
            # loaded data. Set up once here so workers only read shared state.
            if not self._ready:
                self._setup()
                self._ready = True
            chunks = [c for c in np.array_split(np.arange(z.shape[0]), 8 * max(2, int(n_jobs))) if c.size]
            parallel = Parallel(n_jobs=int(n_jobs), backend="threading", return_as="generator")
            rows = parallel(delayed(lambda c: [self._evaluate(row) for row in z[c]])(c) for c in chunks)
            for idx, vals in zip(chunks, rows):
                values[idx] = vals
                self.n_evaluations += idx.size
                bar.update(idx.size)
        bar.close()
        seconds = time.perf_counter() - start
        self._table = TableGame(z, values, name=self.name, source=str(path) if use_cache else None)
        if use_cache:
            sidecar = {
                "name": self.name,
                "params": self.params(),
                "cache_key": self.cache_key(),
                "versions": library_versions(),
                "seconds": seconds,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "shapley_values": self._table.exact_values().tolist(),
            }
            # Sidecar first, table last: a table on disk always has its parameters next to it.
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(sidecar, indent=2, default=str))
            os.replace(tmp, path.with_suffix(".json"))
            save_table(path, z, values)
        return self._table

    def _load_cached(self, path: Path) -> TableGame:
        sidecar = path.with_suffix(".json")
        if sidecar.is_file():
            meta = json.loads(sidecar.read_text())
            # guard against a hash collision or a hand-edited file
            if json.loads(json.dumps(meta.get("params"), default=str)) != json.loads(json.dumps(self.params(), default=str)):
                raise GameError(f"cached table {path} was computed for other parameters: {meta.get('params')}")
        game = TableGame.from_npz(path, name=self.name)
        if game.n_players != self.n_players:
            raise GameError(f"cached table {path} has {game.n_players} players, expected {self.n_players}")
        return game

    def exact_values(self, *, recompute: bool = False, use_cache: bool = True, n_jobs: int = 1) -> np.ndarray:
        """Exact Shapley values ``float64[p]`` from the full table (see :meth:`table`)."""
        return self.table(recompute=recompute, use_cache=use_cache, n_jobs=n_jobs).exact_values()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


# --------------------------------------------------------------------------------------------
class HPIAblationGame(MLGame):
    """Hyperparameter-importance ablation game (HyperSHAP-style), docs/games.md §8.

    players:      hyperparameter names from :data:`HPI_SPACE`; default: the first ``n_players``
                  of :data:`HPI_PLAYER_ORDER` (8 = the CI set, 13 = the full game, up to 16).
    star:         optional overrides ``{name: {param: value}}`` of lambda* for some players.
    fixed_params: LightGBM parameters set in every configuration (e.g. fewer trees for tests);
                  they must not overlap the players' parameters.
    n_folds:      CV folds (5 in the reference setup).
    """

    kind = "hpi"
    folder_kind = "HPIAblation"

    def __init__(
        self,
        dataset: str = "diabetes",
        n_players: int = 8,
        seed: int = 0,
        *,
        players: Sequence[str] | None = None,
        star: dict[str, dict[str, Any]] | None = None,
        fixed_params: dict[str, Any] | None = None,
        n_folds: int = 5,
        metric: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        progress: bool = True,
    ):
        super().__init__(cache_dir=cache_dir, progress=progress)
        if dataset not in DATASETS:
            raise ValueError(f"unknown dataset {dataset!r}; choose one of {DATASETS}")
        if players is None:
            if not 2 <= int(n_players) <= len(HPI_PLAYER_ORDER):
                raise GameError(f"the HPI game has 2..{len(HPI_PLAYER_ORDER)} players, got {n_players}")
            players = HPI_PLAYER_ORDER[: int(n_players)]
        players = tuple(players)
        unknown = [p for p in players if p not in HPI_SPACE]
        if unknown or len(set(players)) != len(players) or len(players) < 2:
            raise ValueError(f"HPI players must be >= 2 distinct names from {sorted(HPI_SPACE)}; got {players}")
        self.players = players
        self.n_players = len(players)
        self.dataset, self.seed, self.n_folds = dataset, int(seed), int(n_folds)
        self.metric = _check_metric(dataset, metric)
        self.lambda0 = {p: dict(HPI_SPACE[p][0]) for p in players}
        self.lambda_star = {p: dict(HPI_SPACE[p][1]) for p in players}
        for p, override in (star or {}).items():
            if p not in self.lambda_star or set(override) != set(self.lambda_star[p]):
                raise ValueError(f"star override for {p!r} must set exactly {sorted(HPI_SPACE.get(p, ({}, {}))[1])}")
            self.lambda_star[p] = dict(override)
        for p in players:
            if self.lambda_star[p] == self.lambda0[p]:
                raise ValueError(f"lambda* of {p!r} equals its default; every player must differ")
        self.fixed_params = dict(fixed_params or {})
        clash = set(self.fixed_params) & {k for p in players for k in self.lambda0[p]}
        if clash:
            raise ValueError(f"fixed_params {sorted(clash)} are players' parameters")

    def _game_params(self) -> dict[str, Any]:
        return {
            "players": list(self.players),
            "lambda0": self.lambda0,
            "lambda_star": self.lambda_star,
            "fixed_params": self.fixed_params,
            "n_folds": self.n_folds,
        }

    def configuration(self, row: np.ndarray) -> dict[str, Any]:
        """LightGBM parameters of coalition ``row`` (bool[p]): lambda* on S, lambda0 elsewhere."""
        cfg = dict(self.fixed_params)
        for j, p in enumerate(self.players):
            cfg.update(self.lambda_star[p] if row[j] else self.lambda0[p])
        return cfg

    def _setup(self) -> None:
        self._setup_cv(self.n_folds)

    def _evaluate(self, row: np.ndarray) -> float:
        cfg = self.configuration(row)
        x, y = self._x, self._y
        scores = [self._fit_score(cfg, x[tr], y[tr], x[te], y[te], self._classes) for tr, te in self._fold_idx]
        return float(np.mean(scores))


# --------------------------------------------------------------------------------------------
def natural_feature_groups(dataset: str) -> list[list[int]]:
    """Feature groups: breast_cancer {i, i+10, i+20} (mean, s.e., worst of measurement i);
    digits one group per pixel row of the 8x8 image; single features otherwise."""
    if dataset == "breast_cancer":
        return [[i, i + 10, i + 20] for i in range(10)]
    if dataset == "digits":
        return [list(range(8 * r, 8 * r + 8)) for r in range(8)]
    d = {"diabetes": 10, "wine": 13}[dataset]
    return [[i] for i in range(d)]


class FeatureImportanceGame(MLGame):
    """Retraining-based feature importance (docs/games.md §8): v(S) = k-fold CV score of LightGBM trained on
    the columns of the groups in S; v(empty) = the constant (class-prevalence / mean) predictor.

    ``n_players`` groups are formed by splitting the natural groups (:func:`natural_feature_groups`,
    10 on breast_cancer) into contiguous blocks; default: one player per natural group.
    """

    kind = "feature"
    folder_kind = "FeatureImportance"

    def __init__(
        self,
        dataset: str = "breast_cancer",
        n_players: int | None = None,
        seed: int = 0,
        *,
        n_estimators: int = 100,
        n_folds: int = 5,
        metric: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        progress: bool = True,
    ):
        super().__init__(cache_dir=cache_dir, progress=progress)
        if dataset not in DATASETS:
            raise ValueError(f"unknown dataset {dataset!r}; choose one of {DATASETS}")
        natural = natural_feature_groups(dataset)
        p = len(natural) if n_players is None else int(n_players)
        if not 2 <= p <= len(natural):
            raise GameError(f"{dataset} has {len(natural)} feature groups; n_players must be 2..{len(natural)}, got {p}")
        blocks = np.array_split(np.arange(len(natural)), p)
        self.groups = [sorted(c for g in block for c in natural[g]) for block in blocks]
        self.n_players, self.dataset, self.seed = p, dataset, int(seed)
        self.n_estimators, self.n_folds = int(n_estimators), int(n_folds)
        self.metric = _check_metric(dataset, metric)

    def _game_params(self) -> dict[str, Any]:
        return {"groups": self.groups, "n_estimators": self.n_estimators, "n_folds": self.n_folds}

    def _setup(self) -> None:
        self._setup_cv(self.n_folds)

    def _evaluate(self, row: np.ndarray) -> float:
        cols = [c for j in np.flatnonzero(row) for c in self.groups[j]]
        y = self._y
        x = self._x[:, cols]
        scores = []
        for tr, te in self._fold_idx:
            if not cols:  # no features: the constant predictor fitted on the training fold
                pred = _constant_prediction(self.metric, y[tr], len(te), self._classes)
                scores.append(score(self.metric, y[te], pred, self._classes))
            else:
                scores.append(
                    self._fit_score({"n_estimators": self.n_estimators}, x[tr], y[tr], x[te], y[te], self._classes)
                )
        return float(np.mean(scores))


# --------------------------------------------------------------------------------------------
class DataValuationGame(MLGame):
    """Dataset valuation (docs/games.md §8): players are ``n_players`` disjoint chunks of the training split
    (stratified ``1 - test_size`` / ``test_size`` split); v(S) is the holdout score of LightGBM
    trained on the union of the chunks in S. Empty unions, and for classification unions missing
    a class, score as the constant predictor: R^2 = 0, uniform class probabilities for log-loss,
    accuracy 1/K (0.1 on digits).

    chunks: "random" (a seeded permutation cut into near-equal chunks) or "increasing" (chunk
    sizes proportional to 1..p).
    """

    kind = "valuation"
    folder_kind = "DatasetValuation"
    CHUNKINGS = ("random", "increasing")

    def __init__(
        self,
        dataset: str = "digits",
        n_players: int = 12,
        seed: int = 0,
        *,
        chunks: str = "random",
        test_size: float = 0.3,
        n_estimators: int = 100,
        metric: str | None = "accuracy",
        cache_dir: str | os.PathLike | None = None,
        progress: bool = True,
    ):
        super().__init__(cache_dir=cache_dir, progress=progress)
        if dataset not in DATASETS:
            raise ValueError(f"unknown dataset {dataset!r}; choose one of {DATASETS}")
        if chunks not in self.CHUNKINGS:
            raise ValueError(f"unknown chunking {chunks!r}; choose one of {self.CHUNKINGS}")
        if DATASET_TASK[dataset] == "regression" and metric == "accuracy":
            metric = None  # accuracy is meaningless for regression: use r2
        self.metric = _check_metric(dataset, metric)
        if not 2 <= int(n_players) <= 64:
            raise GameError(f"dataset valuation needs 2..64 chunks, got {n_players}")
        if not 0.0 < float(test_size) < 1.0:
            raise GameError(f"test_size must be in (0, 1), got {test_size}")
        self.n_players, self.dataset, self.seed = int(n_players), dataset, int(seed)
        self.chunks, self.test_size, self.n_estimators = chunks, float(test_size), int(n_estimators)

    def _game_params(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "test_size": self.test_size, "n_estimators": self.n_estimators}

    def _setup(self) -> None:
        from sklearn.model_selection import train_test_split

        x, y = load_dataset(self.dataset)
        stratify = None if DATASET_TASK[self.dataset] == "regression" else y
        idx_tr, idx_te = train_test_split(
            np.arange(len(y)), test_size=self.test_size, random_state=self.seed, stratify=stratify
        )
        rng = np.random.default_rng(self.seed)
        perm = rng.permutation(idx_tr)
        p = self.n_players
        if p > len(perm):
            raise GameError(f"{p} chunks but only {len(perm)} training rows")
        if self.chunks == "random":
            cuts = np.array_split(perm, p)
        else:
            # sizes proportional to 1..p, every chunk at least one row
            sizes = np.maximum(1, np.floor(np.arange(1, p + 1) / (p * (p + 1) / 2) * len(perm)).astype(int))
            sizes[-1] = len(perm) - sizes[:-1].sum()
            cuts = np.split(perm, np.cumsum(sizes)[:-1])
        self.chunk_rows = [np.sort(c) for c in cuts]
        self._x, self._y = x, y
        self._test = idx_te
        self._classes = None if self.metric == "r2" else np.unique(y)

    def _evaluate(self, row: np.ndarray) -> float:
        y_te = self._y[self._test]
        members = np.flatnonzero(row)
        rows = np.concatenate([self.chunk_rows[j] for j in members]) if members.size else np.zeros(0, int)
        rows = np.sort(rows)  # fixed row order whatever the coalition
        degenerate = rows.size == 0 or (
            self._classes is not None and np.unique(self._y[rows]).size < self._classes.size
        )
        if degenerate:
            if self.metric == "r2":
                return 0.0  # R^2 of the ideal constant predictor (the holdout mean)
            if self.metric == "accuracy":
                return 1.0 / len(self._classes)  # uniform guessing (the argmax of a tie is not)
            pred = _constant_prediction(self.metric, None, len(self._test), self._classes)
            return score(self.metric, y_te, pred, self._classes)
        return self._fit_score(
            {"n_estimators": self.n_estimators},
            self._x[rows], self._y[rows], self._x[self._test], y_te, self._classes,
        )


# --------------------------------------------------------------------------------------------
ML_KINDS = {"hpi": HPIAblationGame, "feature": FeatureImportanceGame, "valuation": DataValuationGame}


def make_ml_game(kind: str, dataset: str | None = None, n_players: int | None = None, seed: int = 0, **options: Any) -> MLGame:
    """Build an ML game: ``kind`` in {"hpi", "feature", "valuation"}; dataset and n_players
    default to the reference setups (hpi: diabetes, 8; feature: breast_cancer, 10;
    valuation: digits, 12). ``options`` go to the class (cache_dir, progress, n_folds, ...)."""
    if kind not in ML_KINDS:
        raise ValueError(f"unknown ML game kind {kind!r}; choose one of {sorted(ML_KINDS)}")
    cls = ML_KINDS[kind]
    kwargs: dict[str, Any] = dict(options)
    if dataset is not None:
        kwargs["dataset"] = dataset
    if n_players is not None:
        kwargs["n_players"] = n_players
    return cls(seed=seed, **kwargs)


__all__ = [
    "DATASETS",
    "DataValuationGame",
    "FeatureImportanceGame",
    "HPIAblationGame",
    "HPI_SPACE",
    "MLGame",
    "default_cache_dir",
    "library_versions",
    "load_dataset",
    "make_ml_game",
    "natural_feature_groups",
]
