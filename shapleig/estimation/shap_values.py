"""Results as ``shap.Explanation`` (the optional extra ``shapleig[shap]``), so SHAP's plots draw them.

:func:`to_shap` (``ShapleyEstimate.to_shap()``) gives the explanation of one row and
:func:`rows_to_shap` (``explain_X(...).to_shap()``) that of many rows. ``values``, ``base_values``
(the baseline v(empty)), ``data`` (the explained row(s)) and ``feature_names`` are SHAP's; the
posterior std goes to SHAP's own field ``error_std`` and the 95% credible interval to
``lower_bounds`` / ``upper_bounds``, which SHAP keeps through slicing (``exp[0]``, ``exp[:, "bmi"]``).
Only the order-1 indices (SV, BV) fit SHAP's one value per feature; an interaction estimate is refused
(``est.get_n_order(1)`` selects its singletons on purpose). Importing this module without SHAP
raises an ``ImportError`` that names the extra.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MISSING_EXTRA = "shap.Explanation needs SHAP, the optional extra shapleig[shap]: pip install 'shapleig[shap]'"

try:
    import shap
except ImportError as exc:  # the optional extra is missing: name it
    raise ImportError(f"shap is not installed; {MISSING_EXTRA}") from exc

INTERVAL = 0.95


def _check_order_one(index: str, max_order: int) -> None:
    if max_order != 1:
        raise ValueError(f"a shap.Explanation holds one value per feature; this {index} estimate has pairs too "
                         f"(take its singletons on purpose with est.get_n_order(1))")


def _bounds(values: np.ndarray, std: np.ndarray | None) -> tuple[Any, Any]:
    if std is None:
        return None, None
    from scipy.stats import norm

    half = float(norm.ppf(0.5 + 0.5 * INTERVAL)) * std
    return values - half, values + half


def to_shap(estimate: Any, data: Any = None) -> shap.Explanation:
    """One estimate as a ``shap.Explanation`` of one row (values ``[d]``, a scalar base value).

    Args:
        estimate: a :class:`~shapleig.estimation.result.ShapleyEstimate` of SV or BV.
        data: the explained row ``[d]`` (default: ``info["x"]``, which :func:`shapleig.explain` sets).

    Returns:
        ``shap.Explanation`` with ``error_std`` the posterior std (None without a posterior) and
        ``lower_bounds`` / ``upper_bounds`` its 95% interval.
    """
    _check_order_one(estimate.index, estimate.max_order)
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
        rows: the explanation of ``n`` rows (SV or BV).

    Returns:
        ``shap.Explanation`` with values ``[n, d]``, base_values ``[n]``, data ``[n, d]`` and
        ``error_std`` ``[n, d]`` (None without a posterior), with the 95% interval as bounds.
    """
    _check_order_one(rows.index, max((len(t) for t in rows.terms), default=1))
    values, std = rows.values, rows.std
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


__all__ = ["MISSING_EXTRA", "rows_to_shap", "to_shap"]
