"""Efficiency of a result: condition an estimate on its known total ``v(N) - v(empty)``.

Used by ``explain`` (the total is the prediction minus the baseline) and by the shapiq bridge's
``ShapiqApproximator`` (the total from the cached empty and grand coalitions).
"""

from __future__ import annotations

import numpy as np

from shapleig.estimation.result import ShapleyEstimate


def condition_on_total(est: ShapleyEstimate, total: float) -> float:
    """Make ``est`` efficient: its values sum to ``total`` (= v(N) - v(empty)). Returns the gap.

    With a posterior covariance ``C`` this conditions the Gaussian on the exact linear observation
    ``1^T phi = total``: ``phi += C 1 (total - 1^T phi) / (1^T C 1)`` and ``C -= C 1 1^T C / (1^T C 1)``
    (the std shrinks accordingly). ShaplEIG's posterior is efficient up to the GP's interpolation
    error at the always-observed empty and grand coalitions (docs/math.md §6), so this moves it by
    that error only. Without a covariance the gap is split equally (the least-squares projection
    onto ``sum(phi) = total``). ``est.trace`` is left as the method produced it.

    Args:
        est: the estimate to condition, changed in place (values, and std and covariance when present).
        total: the known total v(N) - v(empty).

    Returns:
        the gap ``total - sum(values)`` before conditioning.
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
