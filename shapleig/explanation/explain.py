"""Explain one prediction of a model: the interventional (marginal) imputer game and ``explain``.

A model ``f: float[n, d] -> float[n]`` and a background sample ``B`` (``float[n_bg, d]``) define,
for the instance ``x`` (``float[d]``), the game

    v(S) = mean_b f(x_S, b_{not S})

(features in ``S`` taken from ``x``, the others from each background row, averaged over the
background). ``v(empty)`` is the mean prediction on the background (the baseline) and ``v(N)`` is
``f(x)``, so efficient Shapley values split ``f(x) - baseline`` over the features.
:class:`ImputerGame` builds the ``m * n_bg`` imputed rows of ``m`` coalitions at once and calls the
model once per batch; :func:`explain` runs an estimator on it and returns a
:class:`~shapleig.estimation.result.ShapleyEstimate` whose values sum to ``f(x) - baseline``.

scikit-learn and LightGBM are never imported here: a model is recognised by its methods
(``predict_proba``, ``predict``) or used as a plain callable.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from shapleig.errors import BudgetError, GameError
from shapleig.estimation.result import ShapleyEstimate
from shapleig.explanation.imputer import DEFAULT_MAX_ROWS, ImputerGame, model_predict
from shapleig.games.exact import MAX_ENUMERATION_PLAYERS, exact_shapley
from shapleig.games.game import check_budget
from shapleig.runs.budget import BudgetedGame

# The GP arms of the core that ``explain(method=...)`` accepts by name (baselines are passed as objects).
_CORE_METHODS = ("shapleig", "shapleig-uncertainty", "shapleig-random", "shapleig-leverage", "exact")












def resolve_method(method: Any) -> Any:
    """An estimator from a core method name (``shapleig``, ``shapleig-random``, ...) or an object
    with ``estimate(game, budget, seed=...)`` (e.g. ``baselines.get("kernelshap")``)."""
    if hasattr(method, "estimate"):
        return method
    if method == "exact":
        return "exact"
    from shapleig.design.estimators import (  # torch loads here, on first use
        GPLeverage,
        ShaplEIG,
    )

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

    Returns a :class:`ShapleyEstimate` in the model's output units: ``values`` (float64[d]) sum to
    ``f(x) - baseline`` (exactly, see :func:`condition_on_total`), ``baseline`` is the mean
    prediction on the background, ``std`` / ``covariance`` the posterior for the GP methods;
    ``info`` adds ``prediction`` (f(x)), ``feature_names``, ``efficiency_gap`` (the method's own
    deviation from efficiency before the correction) and ``model_calls``.
    """
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
        est = estimator.estimate(BudgetedGame(game, budget), budget, seed=seed)
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
