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

import inspect
import time
from typing import Any, Callable, Mapping

import numpy as np

from shapleig import registry
from shapleig.errors import GameError
from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.efficiency import condition_on_total
from shapleig.estimation.result import ShapleyEstimate
from shapleig.explanation.cheap_exact import decide, is_gp_method
from shapleig.explanation.choose_imputer import imputer_game
from shapleig.explanation.imputer import DEFAULT_MAX_ROWS, ImputerGame, model_predict
from shapleig.games.game import check_budget
from shapleig.games.identity import opaque_parts
from shapleig.games.indices import check_index, get_index
from shapleig.runs.budget import BudgetedGame
from shapleig.runs.evaluators import with_timeout
from shapleig.seeding import UNSET, SeedLike, resolve_seed


def resolve_method(method: Any, **options: Any) -> Any:
    """An estimator from a registered method name, or an estimator object returned as it is.

    Names are those of the registry (``"shapleig"``, ``"kernelshap"``, ``"shapiq:KernelSHAP"``,
    ``"exact"``, ...), built with ``options``; an object needs ``estimate(game, budget, seed=...)``.

    Args:
        method: a registered method name, or an object with ``estimate``.
        **options: the method's constructor options (only for a method given by name).

    Returns:
        the estimator.
    """
    if hasattr(method, "estimate"):
        if options:
            raise ValueError("method options are for a method given by name; configure the estimator object instead")
        return method
    if not isinstance(method, str):
        raise GameError(f"method must be a name or an estimator object, got {type(method).__name__}")
    try:
        return registry.build(method, **options)
    except ValueError as exc:
        raise GameError(str(exc)) from None


def resolve_index_method(method: Any, options: dict[str, Any], index: str) -> Any:
    """:func:`resolve_method` for ``index``.

    A name gets the options that make it estimate the index (:func:`shapleig.registry.index_options`);
    an estimator object must already estimate it.

    Args:
        method: a registered method name, or an estimator object.
        options: the method's constructor options (only for a method given by name).
        index: the index to estimate: "SV", "BV", "k-SII", "SII", "STII" or "FSII".

    Returns:
        the estimator, estimating ``index``.
    """
    if "index" in options and options["index"] != index:
        raise ValueError(f"method_options ask for index {options['index']!r} and index= for {index!r}; "
                         f"give the index through index= only")
    if isinstance(method, str):
        return resolve_method(method, **{**options, **registry.index_options(method, index)})
    estimator = resolve_method(method, **options)
    own = getattr(estimator, "index", "SV")
    if own != check_index(index)[0]:
        raise ValueError(f"the estimator object estimates index {own!r}, not {index!r}; "
                         f"build it with index={index!r} or pass the method by name")
    return estimator


def _accepts_progress(estimator: Any) -> bool:
    """Whether ``estimator.estimate`` takes ``progress=`` (every BaseEstimator does; foreign objects may not)."""
    if isinstance(estimator, BaseEstimator):
        return True
    try:
        return "progress" in inspect.signature(estimator.estimate).parameters
    except (TypeError, ValueError):
        return False


# argument count over budget: the public one-call API: model, data, imputer, method and run options (keyword defaults)
def explain(  # noqa: PLR0913
    model: Any,
    background: Any,
    x: Any,
    *,
    budget: int | None = None,
    seed: SeedLike = UNSET,
    random_state: SeedLike = UNSET,
    method: Any = "shapleig",
    method_options: Mapping[str, Any] | None = None,
    index: str = "SV",
    store: Any = None,
    output: int | None = None,
    predict: Callable | None = None,
    feature_names: list[str] | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout: float | None = None,
    game_id: str | None = None,
    progress: bool = True,
    imputer: str = "interventional",
    imputer_options: Mapping[str, Any] | None = None,
    exact_if_cheap: bool = True,
) -> ShapleyEstimate:
    """Shapley values of one prediction ``f(x)``, by default with the interventional imputer over ``background``.

    Args:
        model: a scikit-learn or LightGBM model (``predict_proba`` positive-class column for a binary
            classifier, ``predict`` otherwise), a LightGBM ``Booster``, or any callable
            ``float[n, d] -> float[n]``; ``predict=`` overrides how it is called and ``output=``
            picks a column of a multi-output prediction.
        background: ``[n_bg, d]`` rows (array or DataFrame) standing in for "feature absent"; each
            coalition costs ``n_bg`` model rows, so 50..200 rows are typical.
        x: the explained row, ``[d]`` (array, Series or one-row DataFrame).
        budget: distinct coalitions evaluated (empty and grand included); default ``min(2^d, 8d)``
            (``2^d`` for ``"exact"``). A budget >= ``2^d`` (d <= 20) evaluates every coalition and
            returns the exact values with std 0 (``info["exact"]``, ``info["message"]``; a budget
            above ``2^d`` also warns), whatever the method.
        seed: int (default 0), None (fresh entropy) or a numpy Generator; ``random_state`` is its
            scikit-learn / shapiq alias. The seed used is in ``info["seed"]``.
        random_state: alias of ``seed``.
        method: a registered method name (:mod:`shapleig.registry`: ``"shapleig"`` (default), the GP
            arms, ``"exact"``, the baselines such as ``"kernelshap"``, ``"shapiq:<Approximator>"``),
            or any estimator object.
        method_options: constructor options of a method given by name (``{"paired": True}`` for
            ``"kernelshap"``); the CLI writes them ``--method kernelshap:paired=true``.
        index: ``"SV"`` (default), ``"BV"`` or a pairwise interaction index (``"k-SII"``, ``"SII"``,
            ``"STII"``, ``"FSII"``; docs/math.md §14): the GP arms, ``"exact"`` and
            ``"shapiq:<Approximator>"`` estimate it; other methods give the Shapley value only.
        store: an :class:`~shapleig.runs.store.EvaluationStore` (or a path) that records every
            coalition value, so a killed run resumes without re-evaluating the model. A store
            belongs to one model, background and row: another is refused naming what differed
            (the model's fitted state counts: docs/integrity.md §1).
        output: column of a multi-output prediction.
        predict: how to call the model (overrides the recognised method).
        feature_names: names for ``info["feature_names"]`` and plots (default: the frame's columns).
        max_rows: imputed rows per model call (caps one batch's memory).
        timeout: seconds per coalition evaluation; the model is then called in a worker process
            (started once per call of ``explain``), a longer evaluation is abandoned (the worker
            killed and replaced) and retried once, then the call fails naming the coalition.
        game_id: a name for the model's version, part of the store's identity. Needed with a store
            for a model whose fitted state shapleig cannot read (anything but LightGBM,
            scikit-learn, torch and Python code); give a new one whenever that model changes.
        progress: a tqdm bar of the evaluations once the run has lasted a few seconds.
        imputer: how absent features are filled (:mod:`shapleig.explanation.choose_imputer`):
            ``"interventional"`` (default, every background row), ``"baseline"`` (one reference row,
            ``imputer_options={"reference": row}``, default the background's column means) or
            ``"conditional"`` (the background rows nearest to ``x`` on the present features,
            ``imputer_options={"k": 20}``).
        imputer_options: the imputer's options.
        exact_if_cheap: for a GP method on a cheap small game, enumerate all 2^d coalitions instead
            when the measured cost of the model (per call and per row) says that costs less than the
            GP, whose own time is predicted by a measured overhead law scaled by this machine's speed
            (:mod:`shapleig.explanation.cheap_exact`); the decision, its figures, the predicted seconds
            (``predicted_s``) and the run's own (``took_s``) are in ``info["exact_if_cheap"]``. False
            keeps the requested method (bitwise reproducible).

    Returns:
        A :class:`ShapleyEstimate` in the model's output units: ``values`` (float64[d] for SV and
        BV; aligned with ``est.terms`` for interactions) sum to ``f(x) - baseline`` exactly for the
        efficient indices SV, k-SII, STII and FSII
        (:func:`~shapleig.estimation.efficiency.condition_on_total`; BV and SII are left as estimated),
        ``baseline`` is the mean prediction on the background, ``std`` / ``covariance`` the
        posterior for the GP methods; ``info`` adds ``prediction`` (f(x)), ``feature_names``,
        ``efficiency_gap`` (the method's own deviation before the correction) and ``model_calls``.

    Examples:
        >>> import numpy as np
        >>> from shapleig import explain
        >>> rng = np.random.default_rng(0)
        >>> background, x = rng.normal(size=(20, 4)), np.ones(4)
        >>> est = explain(lambda X: X @ np.array([1.0, 2.0, 0.0, -1.0]), background, x, budget=16,
        ...               method="exact", progress=False)
        >>> bool(np.allclose(est.values, [1.0, 2.0, 0.0, -1.0] * (x - background.mean(axis=0))))
        True
    """
    # every argument is checked before the model is called (ImputerGame probes it on x)
    evaluator = with_timeout(None, timeout)
    seed = resolve_seed(seed, random_state)
    estimator = resolve_index_method(method, dict(method_options or {}), index)
    if budget is not None:
        check_budget(budget)
    fn = model_predict(model, output=None, predict=predict)
    game = imputer_game(fn, background, x, imputer=imputer, imputer_options=imputer_options, output=output,
                        max_rows=max_rows, feature_names=feature_names, game_id=game_id)
    check_readable_identity(game, store, game_id)
    budget = default_budget(estimator, game.n_players) if budget is None else check_budget(budget)
    try:
        return explain_game(game, estimator, budget, seed, store=store, evaluator=evaluator, progress=progress,
                            exact_if_cheap=exact_if_cheap)
    finally:
        if evaluator is not None:
            evaluator.close()  # the worker process of a timed run


def check_readable_identity(game: ImputerGame, store: Any, game_id: str | None) -> None:
    """With a store, refuse a model whose fitted state shapleig cannot read unless ``game_id`` names it.

    Args:
        game: the imputer game of the explained row.
        store: the evaluation store, or None.
        game_id: the name of the model's version, or None.

    Raises:
        GameError: naming the unreadable parts (docs/integrity.md §1).
    """
    if store is None or game_id is not None:
        return
    opaque = opaque_parts(game.identity())
    if opaque:
        raise GameError(f"explain cannot tell this model apart from others in the evaluation store: {opaque} "
                        f"(e.g. explain(..., game_id='my-model-v1'))")


def default_budget(estimator: Any, p: int) -> int:
    """``min(2^p, 8p)``, or ``2^p`` for ``"exact"`` (8p when 2^p does not fit).

    Args:
        estimator: the estimator (``"exact"`` gets every coalition).
        p: the number of features.

    Returns:
        the default budget.
    """
    full = 1 << p if p < 63 else None
    budget = full if getattr(estimator, "name", None) == "exact" or full is None else min(full, 8 * p)
    return check_budget(budget if budget is not None else 8 * p)


def explain_game(game: ImputerGame, estimator: Any, budget: int, seed: Any, *, store: Any = None,
                 evaluator: Any = None, progress: bool = True, exact_if_cheap: bool = True) -> ShapleyEstimate:
    """Run ``estimator`` on an imputer game and make the result efficient.

    Shared by :func:`explain` and :func:`shapleig.explain_X`.

    One model call on the explained row and the background gives f(x) and the baseline, and its
    time decides ``exact_if_cheap``; then the run (budget >= 2^p: every method enumerates); then the
    efficient indices are conditioned on ``f(x) - baseline``. The caller closes ``evaluator``.

    Args:
        game: the imputer game of the explained row.
        estimator: the estimator.
        budget: distinct coalitions the run may evaluate.
        seed: the integer seed of the run.
        store: an evaluation store (or a path), or None.
        evaluator: what evaluates coalitions (e.g. with a timeout), or None; the caller closes it.
        progress: show a tqdm bar of the evaluations.
        exact_if_cheap: enumerate instead when that is expected to cost less than the GP run (GP methods
            only).

    Returns:
        the :class:`ShapleyEstimate`, efficient for the efficient indices, with ``prediction``,
        ``feature_names``, ``model_calls`` and the imputer in ``info``.
    """
    p = game.n_players
    if callable(getattr(estimator, "require_budget", None)):
        # a budget too small for the method is an input error whatever exact_if_cheap decides below
        # (a timing would otherwise decide whether the user hears of it)
        estimator.require_budget(p, budget)
    # v(empty) and v(N): one model call on 1 + n_bg rows (about one coalition's work: timed for exact_if_cheap)
    start = time.perf_counter()
    ends = game.predict_rows(np.vstack([game.x[None, :], game.background]))
    seconds = time.perf_counter() - start
    prediction, baseline = float(ends[0]), float(ends[1:].mean())
    decision = decide(game, budget, seconds, is_gp_method(estimator)) if exact_if_cheap else None
    run_budget = (1 << p) if decision is not None and decision["enumerate"] else budget
    calls_before = game.calls
    # budget >= 2^d: every method enumerates (exact values, std 0; info["message"] says so)
    kwargs = {"progress": progress} if _accepts_progress(estimator) else {}
    start = time.perf_counter()
    est = estimator.estimate(BudgetedGame(game, run_budget, store=store, evaluator=evaluator), run_budget, seed=seed,
                             **kwargs)
    took = time.perf_counter() - start
    est.baseline = baseline
    if get_index(est.index).efficient:  # the others need not sum to f(x) - baseline
        est.info["efficiency_gap"] = condition_on_total(est, prediction - baseline)
    est.info.update(prediction=prediction, feature_names=game.feature_names, model_calls=game.calls - calls_before,
                    n_background=int(game.background.shape[0]), imputer=getattr(game, "imputer", "interventional"),
                    x=game.x.copy())
    if decision is not None:
        est.info["exact_if_cheap"] = {**decision, "requested_budget": int(budget), "took_s": took}
    return est


__all__ = ["ImputerGame", "check_readable_identity", "condition_on_total", "default_budget", "explain", "explain_game", "model_predict"]
