"""Explain one prediction of a model: the interventional (marginal) imputer game and ``explain``.

A model ``f: float[n, d] -> float[n]`` and a background sample ``B`` (``float[n_bg, d]``) define,
for the instance ``x`` (``float[d]``), the game

    v(S) = mean_b f(x_S, b_{not S})

(features in ``S`` taken from ``x``, the others from each background row, averaged over the
background). ``v(empty)`` is the mean prediction on the background (the baseline) and ``v(N)`` is
``f(x)``, so efficient Shapley values split ``f(x) - baseline`` over the features.
:class:`ImputerGame` builds the ``m * n_bg`` imputed rows of ``m`` coalitions at once and calls the
model once per batch; :func:`explain` runs an estimator on it and returns a
:class:`~shapleig.estimate.ShapleyEstimate` whose values sum to ``f(x) - baseline``.

scikit-learn and LightGBM are never imported here: a model is recognised by its methods
(``predict_proba``, ``predict``) or used as a plain callable.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import BudgetError, GameError
from .estimate import ShapleyEstimate
from .game import BudgetedGame, check_budget, check_n_players
from .shapley import MAX_ENUMERATION_PLAYERS, exact_shapley
from .timeout import with_timeout

# Imputed rows per model call: caps the batch at ~ DEFAULT_MAX_ROWS * d * 8 bytes of float64.
DEFAULT_MAX_ROWS = 500_000
# The GP arms of the core that ``explain(method=...)`` accepts by name (baselines are passed as objects).
_CORE_METHODS = ("shapleig", "shapleig-uncertainty", "shapleig-random", "shapleig-leverage", "exact")


def model_predict(model: Any, output: int | None = None, predict: Callable | None = None) -> Callable:
    """The function ``float[n, d] -> float[n, ...]`` that :class:`ImputerGame` calls.

    ``predict`` wins when given. Otherwise a classifier (a model with ``predict_proba`` and
    ``classes_``, e.g. scikit-learn's or LightGBM's) uses ``predict_proba``; a binary classifier
    explains the positive class (column 1) unless ``output`` picks another column. Any other model
    uses ``predict``, and a plain callable is called as it is. Multi-output predictions need
    ``output`` (checked by :class:`ImputerGame` on the explained row).
    """
    if predict is not None:
        if not callable(predict):
            raise GameError(f"predict must be callable, got {type(predict).__name__}")
        return predict
    if hasattr(model, "predict_proba") and hasattr(model, "classes_"):
        return model.predict_proba
    if hasattr(model, "predict"):
        return model.predict
    if callable(model):
        return model
    raise GameError(
        f"cannot explain a {type(model).__name__}: pass a model with predict / predict_proba, "
        "a callable float[n, d] -> float[n], or predict=..."
    )


class ImputerGame:
    """The interventional imputer game of ``predict`` at ``x`` over a background sample.

    predict:    ``float[n, d] -> float[n]`` (or ``[n, k]`` with ``output`` choosing a column).
    background: ``[n_bg, d]`` array or pandas DataFrame (column names and dtypes are kept, so the
                model receives the same kind of input it was fitted on).
    x:          the explained instance: ``[d]``, ``[1, d]``, a pandas Series or a one-row DataFrame.
    output:     column of a multi-output prediction (a binary classifier's ``predict_proba``
                defaults to column 1, the positive class).
    max_rows:   imputed rows per model call; coalitions are batched so one call sees at most this
                many rows (at least one coalition, i.e. ``n_bg`` rows).

    ``game(Z)`` for ``Z: bool[m, d]`` returns ``float64[m]``: ``v(S) = mean_b f(x_S, b_{-S})``.
    The output is validated once on ``x`` at construction, before any coalition is evaluated.
    """

    def __init__(
        self,
        predict: Callable,
        background: Any,
        x: Any,
        *,
        output: int | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        feature_names: list[str] | None = None,
    ) -> None:
        if not callable(predict):
            raise GameError(f"predict must be callable, got {type(predict).__name__}")
        self.predict = predict
        self._columns, self._dtypes = _frame_layout(background)
        self.background = _as_matrix(background, "background")
        n_bg, d = self.background.shape
        if n_bg == 0:
            raise GameError("background needs at least one row")
        self.x = _as_row(x, d, self._columns)
        self.n_players = check_n_players(d)
        self.max_rows = max(int(max_rows), n_bg)
        self.calls = 0
        names = feature_names if feature_names is not None else self._columns
        if names is not None and len(names) != d:
            raise GameError(f"{len(names)} feature names for {d} features")
        self.feature_names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(d)]
        self.output = self._check_output(output)

    def _check_output(self, output: int | None) -> int | None:
        """Probe the model on ``x``: decide the output column and fail early on a bad shape."""
        raw = np.asarray(self.predict(self._model_input(self.x[None, :])))
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        if raw.ndim == 1 and raw.shape[0] == 1:
            if output not in (None, 0):
                raise GameError(f"output={output} given but the model returns one value per row")
            return None
        if raw.ndim != 2 or raw.shape[0] != 1:
            raise GameError(f"the model returned shape {raw.shape} for one row; expected (1,) or (1, k)")
        k = raw.shape[1]
        if output is None:
            if k != 2:
                raise GameError(f"the model returns {k} outputs per row: choose one with output=0..{k - 1}")
            output = 1  # binary classifier: probability of the positive class
        if isinstance(output, bool) or not isinstance(output, (int, np.integer)) or not 0 <= output < k:
            raise GameError(f"output must be an integer in 0..{k - 1}, got {output!r}")
        return int(output)

    def _model_input(self, rows: np.ndarray) -> Any:
        if self._columns is None:
            return rows
        import pandas as pd  # only when the background was a DataFrame

        return pd.DataFrame(rows, columns=self._columns).astype(self._dtypes)

    def predict_rows(self, rows: np.ndarray) -> np.ndarray:
        """The explained output of the model on ``rows`` (``[n, d]``): ``float64[n]``."""
        self.calls += 1
        raw = np.asarray(self.predict(self._model_input(rows)), dtype=np.float64)
        if self.output is not None:
            raw = raw[:, self.output]
        elif raw.ndim == 2:
            raw = raw[:, 0]
        return raw

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        Z = np.asarray(coalitions, dtype=bool)
        if Z.ndim != 2 or Z.shape[1] != self.n_players:
            raise GameError(f"coalitions must be bool[m, {self.n_players}], got shape {Z.shape}")
        n_bg, d = self.background.shape
        out = np.empty(Z.shape[0])
        step = max(1, self.max_rows // n_bg)
        for start in range(0, Z.shape[0], step):
            z = Z[start:start + step]
            # [m, n_bg, d]: x on the coalition's features, each background row elsewhere
            rows = np.where(z[:, None, :], self.x[None, None, :], self.background[None, :, :])
            pred = self.predict_rows(rows.reshape(-1, d))
            out[start:start + z.shape[0]] = pred.reshape(z.shape[0], n_bg).mean(axis=1)
        return out

    def identity(self) -> dict[str, str]:
        """Identity components for evaluation stores (:mod:`shapleig.identity`): the model's class,
        the output read, the background rows and the instance explained."""
        from .identity import digest_value

        model = getattr(self.predict, "__self__", self.predict)
        return {"model": f"{type(model).__module__}.{type(model).__qualname__}", "output": str(self.output),
                "background": digest_value(self.background, "background"), "x": digest_value(self.x, "x")}

    def __repr__(self) -> str:
        return f"ImputerGame(n_players={self.n_players}, n_background={self.background.shape[0]})"


def _frame_layout(data: Any) -> tuple[list[str] | None, dict | None]:
    """Column names and dtypes of a pandas DataFrame (None, None for anything else)."""
    if hasattr(data, "columns") and hasattr(data, "dtypes") and getattr(data, "ndim", 0) == 2:
        return [str(c) for c in data.columns], data.dtypes.to_dict()
    return None, None


def _as_matrix(data: Any, what: str) -> np.ndarray:
    columns, _ = _frame_layout(data)
    if columns is not None:
        from pandas.api.types import is_bool_dtype, is_numeric_dtype  # a DataFrame: pandas is loaded

        numeric = all(is_numeric_dtype(t) or is_bool_dtype(t) for t in data.dtypes)
        # categorical or string columns keep their values as objects; the dtypes are restored per call
        arr = data.to_numpy(dtype=np.float64 if numeric else object)
    else:
        arr = np.asarray(data)
        if arr.dtype != object:
            arr = arr.astype(np.float64)
    if arr.ndim != 2:
        raise GameError(f"{what} must be 2-D [rows, features], got shape {arr.shape}")
    return arr


def _as_row(x: Any, d: int, columns: list[str] | None) -> np.ndarray:
    if hasattr(x, "index") and getattr(x, "ndim", 0) == 1:  # pandas Series: align on the columns
        x = x[columns] if columns is not None else x
        x = x.to_numpy()
    elif getattr(x, "ndim", 0) == 2 and hasattr(x, "columns"):
        x = x[columns].to_numpy() if columns is not None else x.to_numpy()
    arr = np.asarray(x)
    if arr.dtype != object:
        arr = arr.astype(np.float64)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.shape != (d,):
        raise GameError(f"x must be one row of {d} features like the background, got shape {arr.shape}")
    return arr


def resolve_method(method: Any) -> Any:
    """An estimator from a core method name (``shapleig``, ``shapleig-random``, ...) or an object
    with ``estimate(game, budget, seed=...)`` (e.g. ``baselines.get("kernelshap")``)."""
    if hasattr(method, "estimate"):
        return method
    if method == "exact":
        return "exact"
    from .method import GPLeverage, ShaplEIG  # torch loads here, on first use

    if method == "shapleig":
        return ShaplEIG()
    if method in ("shapleig-uncertainty", "shapleig-random"):
        return ShaplEIG(acquisition=method.split("-", 1)[1])
    if method == "shapleig-leverage":
        return GPLeverage()
    raise GameError(
        f"unknown method {method!r}: use one of {', '.join(_CORE_METHODS)} or pass an estimator "
        "object (e.g. baselines.get('kernelshap'))"
    )


def condition_on_total(est: ShapleyEstimate, total: float) -> float:
    """Make ``est`` efficient: its values sum to ``total`` (= v(N) - v(empty)). Returns the gap.

    With a posterior covariance ``C`` this conditions the Gaussian on the exact linear observation
    ``1^T phi = total``: ``phi += C 1 (total - 1^T phi) / (1^T C 1)`` and ``C -= C 1 1^T C / (1^T C 1)``
    (the std shrinks accordingly). ShaplEIG's posterior is efficient up to the GP's interpolation
    error at the always-observed empty and grand coalitions (docs/math.md §6), so this moves it by
    that error only. Without a covariance the gap is split equally (the least-squares projection
    onto ``sum(phi) = total``). ``est.trace`` is left as the method produced it.
    """
    phi = np.asarray(est.values, dtype=np.float64)
    gap = float(total - phi.sum())
    C = est.covariance
    ones = np.ones(phi.shape[0])
    if C is not None:
        C = np.asarray(C, dtype=np.float64)
        c1 = C @ ones
        s = float(ones @ c1)
    if C is not None and np.isfinite(s) and s > 1e-12 * max(float(np.trace(C)), 1e-300):
        est.values = phi + c1 * (gap / s)
        est.covariance = C - np.outer(c1, c1) / s
        est.std = np.sqrt(np.clip(np.diag(est.covariance), 0.0, None))
    else:
        est.values = phi + gap / phi.shape[0]
    # the equal split or a rounding error in the update leaves at most ~1 ulp of the total
    est.values = est.values + (total - est.values.sum()) / phi.shape[0]
    return gap


def explain(
    model: Any,
    background: Any,
    x: Any,
    *,
    budget: int | None = None,
    seed: int = 0,
    method: Any = "shapleig",
    output: int | None = None,
    predict: Callable | None = None,
    feature_names: list[str] | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout: float | None = None,
) -> ShapleyEstimate:
    """Shapley values of one prediction ``f(x)`` with the interventional imputer over ``background``.

    model:      a scikit-learn or LightGBM model (``predict_proba`` positive-class column for a
                binary classifier, ``predict`` otherwise), a LightGBM ``Booster``, or any callable
                ``float[n, d] -> float[n]``; ``predict=`` overrides how it is called and
                ``output=`` picks a column of a multi-output prediction.
    background: ``[n_bg, d]`` rows (array or DataFrame) standing in for "feature absent"; each
                coalition costs ``n_bg`` model rows, so 50..200 rows are typical.
    x:          the explained row, ``[d]`` (array, Series or one-row DataFrame).
    budget:     distinct coalitions evaluated (empty and grand included); default ``min(2^d, 8d)``
                (``2^d`` for ``"exact"``); capped at ``2^d``.
    method:     ``"shapleig"`` (default), ``"shapleig-uncertainty"``, ``"shapleig-random"``,
                ``"shapleig-leverage"``, ``"exact"`` (all ``2^d`` coalitions, d <= 20), or any
                estimator object such as ``baselines.get("kernelshap")``.
    timeout:    seconds per coalition evaluation; a longer one is abandoned (its worker process
                killed) and retried once, then the call fails naming the coalition
                (:mod:`shapleig.timeout`). ``model_calls`` then counts only this process's calls.

    Returns a :class:`ShapleyEstimate` in the model's output units: ``values`` (float64[d]) sum to
    ``f(x) - baseline`` (exactly, see :func:`condition_on_total`), ``baseline`` is the mean
    prediction on the background, ``std`` / ``covariance`` the posterior for the GP methods;
    ``info`` adds ``prediction`` (f(x)), ``feature_names``, ``efficiency_gap`` (the method's own
    deviation from efficiency before the correction) and ``model_calls``.
    """
    evaluator = with_timeout(None, timeout)  # checked before anything is evaluated
    fn = model_predict(model, output=None, predict=predict)
    game = ImputerGame(fn, background, x, output=output, max_rows=max_rows, feature_names=feature_names)
    p = game.n_players
    full = 1 << p if p < 63 else None
    estimator = resolve_method(method)
    if budget is None:
        budget = full if estimator == "exact" or full is None else min(full, 8 * p)
        budget = budget if budget is not None else 8 * p
    budget = check_budget(budget)
    if full is not None:
        budget = min(budget, full)
    if estimator == "exact":
        if p > MAX_ENUMERATION_PLAYERS:
            raise BudgetError(f"method 'exact' enumerates 2^d coalitions; d = {p} > {MAX_ENUMERATION_PLAYERS}")
        if budget < full:
            raise BudgetError(f"method 'exact' needs budget >= 2^{p} = {full}, got {budget}")
        est = ShapleyEstimate(values=exact_shapley(game), evaluations=full, budget=budget,
                              std=np.zeros(p), covariance=np.zeros((p, p)), method="exact")
    else:
        est = estimator.estimate(BudgetedGame(game, budget, evaluator=evaluator), budget, seed=seed)
    calls = game.calls
    # v(empty) and v(N): one more model call on 1 + n_bg rows (cheap next to any coalition batch)
    ends = game.predict_rows(np.vstack([game.x[None, :], game.background]))
    prediction, baseline = float(ends[0]), float(ends[1:].mean())
    est.baseline = baseline
    est.info["efficiency_gap"] = condition_on_total(est, prediction - baseline)
    est.info.update(prediction=prediction, feature_names=game.feature_names, model_calls=calls,
                    n_background=int(game.background.shape[0]))
    return est


__all__ = ["ImputerGame", "condition_on_total", "explain", "model_predict"]
