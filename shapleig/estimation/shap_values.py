"""Results as ``shap.Explanation`` (the optional extra ``shapleig[shap]``), so SHAP's plots draw them.

:func:`to_shap` (``ShapleyEstimate.to_shap()``) gives the explanation of one row and
:func:`rows_to_shap` (``explain_X(...).to_shap()``) that of many rows. ``values``, ``base_values``
(the baseline v(empty)), ``data`` (the explained row(s)) and ``feature_names`` are SHAP's; the
posterior std goes to SHAP's own field ``error_std`` and the 95% credible interval to
``lower_bounds`` / ``upper_bounds``, which SHAP keeps through slicing (``exp[0]``, ``exp[:, "bmi"]``).
SHAP holds one value per feature: an interaction estimate gives its order-1 part (the singletons of
its index, with their std) and an :class:`InteractionsLeftOutWarning` that names what was left out
(``est.get_n_order(1)`` selects the singletons without the warning). Importing this module without
SHAP raises an ``ImportError`` that names the extra.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

MISSING_EXTRA = "shap.Explanation needs SHAP, the optional extra shapleig[shap]: pip install 'shapleig[shap]'"

try:
    import shap
except ImportError as exc:  # the optional extra is missing: name it
    raise ImportError(f"shap is not installed; {MISSING_EXTRA}") from exc

INTERVAL = 0.95


class InteractionsLeftOutWarning(UserWarning):
    """``to_shap`` of an interaction estimate: SHAP holds the order-1 part only; the message names the rest."""


def _order_one(index: str, terms: list[tuple[int, ...]]) -> np.ndarray:
    """Positions of the singletons among ``terms``; warns naming the higher-order terms left out."""
    sizes = np.array([len(T) for T in terms], dtype=np.int64)
    higher = sorted(set(sizes[sizes > 1].tolist()))
    if higher:
        names = {2: "pairs", 3: "triples"}
        dropped = ", ".join(f"{int((sizes == t).sum())} {names.get(t, f'terms of order {t}')}" for t in higher)
        warnings.warn(f"a shap.Explanation holds one value per feature: this {index} estimate of order "
                      f"{max(higher)} is given as its order-1 part (its singletons); left out: {dropped} "
                      f"(est.get_n_order(1) selects the singletons without this warning)",
                      InteractionsLeftOutWarning, stacklevel=3)
    return np.flatnonzero(sizes == 1)


def _bounds(values: np.ndarray, std: np.ndarray | None) -> tuple[Any, Any]:
    if std is None:
        return None, None
    from scipy.stats import norm

    half = float(norm.ppf(0.5 + 0.5 * INTERVAL)) * std
    return values - half, values + half


def to_shap(estimate: Any, data: Any = None) -> shap.Explanation:
    """One estimate as a ``shap.Explanation`` of one row (values ``[d]``, a scalar base value).

    Args:
        estimate: a :class:`~shapleig.estimation.result.ShapleyEstimate` (of an interaction index:
            its singletons, with an :class:`InteractionsLeftOutWarning`).
        data: the explained row ``[d]`` (default: ``info["x"]``, which :func:`shapleig.explain` sets).

    Returns:
        ``shap.Explanation`` with ``error_std`` the posterior std (None without a posterior) and
        ``lower_bounds`` / ``upper_bounds`` its 95% interval.
    """
    if estimate.max_order > 1:
        _order_one(estimate.index, list(estimate.terms))  # the warning naming what is left out
        estimate = estimate.get_n_order(1)
    values = np.asarray(estimate.values, dtype=np.float64)
    std = None if estimate.std is None else np.asarray(estimate.std, dtype=np.float64)
    lower, upper = _bounds(values, std)
    names = estimate.info.get("feature_names") or [f"x{j}" for j in range(values.shape[0])]
    data = estimate.info.get("x") if data is None else data
    return shap.Explanation(
        values=values,
        base_values=0.0 if estimate.baseline is None else float(estimate.baseline),
        data=None if data is None else np.asarray(data),
        feature_names=list(names),
        error_std=std,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def rows_to_shap(rows: Any) -> shap.Explanation:
    """A :class:`~shapleig.explanation.explain_rows.RowsExplanation` as a ``shap.Explanation`` of ``n`` rows.

    Args:
        rows: the explanation of ``n`` rows (of an interaction index: the singletons' columns, with
            an :class:`InteractionsLeftOutWarning`).

    Returns:
        ``shap.Explanation`` with values ``[n, d]``, base_values ``[n]``, data ``[n, d]`` and
        ``error_std`` ``[n, d]`` (None without a posterior), with the 95% interval as bounds.
    """
    values, std = rows.values, rows.std
    if max((len(t) for t in rows.terms), default=1) > 1:
        keep = _order_one(rows.index, list(rows.terms))
        values, std = values[:, keep], (None if std is None else std[:, keep])
    lower, upper = _bounds(values, std)
    return shap.Explanation(
        values=values,
        base_values=rows.base_values,
        data=rows.data,
        feature_names=list(rows.feature_names),
        error_std=std,
        lower_bounds=lower,
        upper_bounds=upper,
    )


__all__ = ["MISSING_EXTRA", "InteractionsLeftOutWarning", "rows_to_shap", "to_shap"]
