"""Error metrics between estimated and exact Shapley values (docs/games.md §1).

MSE is ``(1/p) sum_i (est_i - exact_i)^2`` over the p players only (shapiq's benchmark metric also
counts the empty interaction and divides by p + 1; we do not). Batched inputs ``[..., p]`` give one
number per leading index (e.g. one per seed), to be averaged by the caller.
"""

from __future__ import annotations

import numpy as np


def _pair(est, exact) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``est`` (float[..., p]) against ``exact`` (float[p] or float[..., p])."""
    e = np.asarray(est, dtype=np.float64)
    x = np.asarray(exact, dtype=np.float64)
    if e.ndim == 0 or x.ndim == 0:
        raise ValueError("Shapley value vectors must have at least one dimension (players)")
    if e.shape[-1] != x.shape[-1]:
        raise ValueError(f"estimate has {e.shape[-1]} players but the exact values have {x.shape[-1]}")
    try:
        np.broadcast_shapes(e.shape, x.shape)
    except ValueError as exc:
        raise ValueError(f"estimate shape {e.shape} does not match exact shape {x.shape}") from exc
    if not np.all(np.isfinite(x)):
        raise ValueError("exact Shapley values contain non-finite entries")
    return e, x


def mse(est, exact) -> np.ndarray | float:
    """Mean squared error over players: float, or float64[...] for batched ``est[..., p]``."""
    e, x = _pair(est, exact)
    out = np.mean((e - x) ** 2, axis=-1)
    return float(out) if out.ndim == 0 else out


def max_abs_error(est, exact) -> np.ndarray | float:
    """``max_i |est_i - exact_i|``: float, or float64[...] for batched input."""
    e, x = _pair(est, exact)
    out = np.max(np.abs(e - x), axis=-1)
    return float(out) if out.ndim == 0 else out


def relative_mse(est, exact) -> np.ndarray | float:
    """MSE divided by the mean square of the exact values, ``mse / mean(exact^2)``: scale-free.

    Raises ValueError if the exact values are all zero (the ratio is undefined).
    """
    e, x = _pair(est, exact)
    scale = np.mean(x**2, axis=-1)
    if np.any(scale == 0):
        raise ValueError("relative MSE is undefined when every exact value is zero")
    out = np.mean((e - x) ** 2, axis=-1) / scale
    return float(out) if np.ndim(out) == 0 else out


def efficiency_gap(est, grand_minus_empty: float) -> np.ndarray | float:
    """``sum_i est_i - (v(N) - v(empty))``: how far an estimate is from efficiency."""
    e = np.asarray(est, dtype=np.float64)
    if e.ndim == 0:
        raise ValueError("Shapley value vectors must have at least one dimension (players)")
    out = e.sum(axis=-1) - float(grand_minus_empty)
    return float(out) if np.ndim(out) == 0 else out


def interval_coverage(est, std, exact, n_std: float = 1.96) -> np.ndarray | float:
    """Fraction of players whose exact value lies in ``est +- n_std * std``: float, or float64[...].

    ``std`` has the shape of ``est``; 1.96 std is the 95% interval of a Gaussian posterior.
    """
    e, x = _pair(est, exact)
    s = np.asarray(std, dtype=np.float64)
    if s.shape != e.shape:
        raise ValueError(f"std shape {s.shape} does not match the estimate's {e.shape}")
    out = np.mean(np.abs(e - x) <= n_std * s, axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def standardized_errors(est, std, exact) -> np.ndarray:
    """``|est_i - exact_i| / std_i``, float64[..., p]; a zero std gives 0 for a zero error, else inf.

    The calibration figures read this: ``<= 1.96`` is a covered player (the 95% interval), its mean
    square is RMS(error/std)^2 (1: honest and sharp), ``> 4`` is "confidently wrong".
    """
    e, x = _pair(est, exact)
    s = np.asarray(std, dtype=np.float64)
    if s.shape != e.shape:
        raise ValueError(f"std shape {s.shape} does not match the estimate's {e.shape}")
    err = np.abs(e - x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, err / s, np.where(err > 0, np.inf, 0.0))


def geometric_mean(x) -> float:
    """The geometric mean of positive figures (MSEs, ratios), each floored at 1e-300 so an exact 0 stays finite."""
    return float(np.exp(np.mean(np.log(np.maximum(np.asarray(x, dtype=np.float64), 1e-300)))))


__all__ = ["efficiency_gap", "geometric_mean", "interval_coverage", "max_abs_error", "mse", "relative_mse",
           "standardized_errors"]
