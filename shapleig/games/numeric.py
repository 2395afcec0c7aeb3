"""Numeric range of a game's values: what float64 can resolve, checked after every estimate.

Shapley values are built from differences of values. In float64 a value of magnitude ``M`` is
known to about ``eps * M`` (eps = 2.2e-16), so values whose spread ``D = max v - min v`` is below
``M / MAX_MAGNITUDE_TO_SPREAD`` (1e9) leave estimates with relative errors above ~1e-7 whatever
the method: ``c * v + shift`` with ``|shift| > 1e9 * c * D`` cannot be estimated to the
project's 1e-6 scale invariance. Such a run raises :class:`~shapleig.errors.NumericRangeError`
naming the range, instead of returning rounding noise. Every scale ``c`` itself is fine (the
GP path standardises by a scale-free :func:`~shapleig.gp.posterior.standardize`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shapleig.errors import NumericRangeError

# largest magnitude / spread ratio at which differences keep ~7 significant digits (1e-16 * 1e9)
MAX_MAGNITUDE_TO_SPREAD = 1e9


def power_of_two_scale(*values: Any) -> float:
    """``2**e`` with ``e`` the binary exponent of the largest finite ``|v|`` over ``values``.

    1.0 when there is none or it is 0. Dividing by it is exact in float64 (a power of two only moves
    the exponent) and brings the largest magnitude into [0.5, 1), so sums of many values and
    differences such as ``v - v(empty)`` neither overflow near 1e308 nor underflow near 1e-308. An
    estimator that computes on ``v / scale`` and multiplies its result by ``scale`` returns exactly
    what it would on ``v`` wherever that does not overflow.

    Args:
        values: floats or arrays of floats (the values an estimator combines).

    Returns:
        The power of two.

    Examples:
        >>> power_of_two_scale(3.0, [-0.5, 1e-3]), power_of_two_scale([0.0])
        (4.0, 1.0)
    """
    largest = 0.0
    for v in values:
        a = np.abs(np.asarray(v, dtype=np.float64))
        a = a[np.isfinite(a)]
        if a.size:
            largest = max(largest, float(a.max()))
    if largest == 0.0:
        return 1.0
    return math.ldexp(1.0, math.frexp(largest)[1])


def check_value_range(values: np.ndarray, method: str = "the estimate") -> None:
    """Raise :class:`NumericRangeError` when ``values`` spread over less than ``max |v| / 1e9``.

    Values that are all equal pass: a constant game (every Shapley value 0) cannot be told from one
    whose differences rounded away entirely.

    Args:
        values: float64[t], the evaluated values.
        method: who is asking, named in the error message.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return
    magnitude = float(np.max(np.abs(v)))
    spread = float(np.max(v) - np.min(v))
    if spread == 0.0 or spread * MAX_MAGNITUDE_TO_SPREAD >= magnitude:
        return
    raise NumericRangeError(
        f"{method}: the game's values spread over only {spread:.3g} while their magnitude is {magnitude:.3g} "
        f"(ratio {magnitude / spread:.2g} > {MAX_MAGNITUDE_TO_SPREAD:.0e}); float64 resolves their differences "
        f"to about {np.finfo(float).eps * magnitude / spread:.1g} relative, so the Shapley values would be "
        f"rounding noise. Subtract a constant from the game (e.g. its value at the empty coalition) so that "
        f"max |v| <= {MAX_MAGNITUDE_TO_SPREAD:.0e} * (max v - min v)."
    )
