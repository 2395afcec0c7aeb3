"""The outcome of one MAP fit of the GP surrogate (both engines return it; docs/math.md §3).

:func:`kernel_info` gives fitted hyperparameters as the plain numbers an estimate's ``info`` reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shapleig.gp.kernels.registry import info_defaults
from shapleig.gp.posterior import Hyperparameters


@dataclass(frozen=True)
class FitResult:
    """Outcome of one MAP fit.

    Attributes:
        hyper: fitted hyperparameters (standardised units); the fallback ones if the fit failed.
        attempts: L-BFGS-B runs made (1..5); retries resample the lengthscales from their prior.
        seconds: wall time of the fit.
        success: False when every attempt failed and ``hyper`` is the fallback.
        noise: standardised noise variance used.
        noise_convention: how ``noise`` was derived (``"standardized"`` or ``"raw"``).
        y_mean: the mean of the archive's values (raw units), subtracted before the fit.
        y_scale: the scale of the archive's values (raw units), divided out before the fit.
        neg_mll: final objective (negative MLL + log prior, per observation), nan on failure.
        seed: the seed the fit used.
        message: why the fit failed or fell back (empty on success).
    """

    hyper: Hyperparameters
    attempts: int
    seconds: float
    success: bool
    noise: float
    noise_convention: str
    y_mean: float
    y_scale: float
    neg_mll: float
    seed: int
    message: str = ""


def kernel_info(hyper: Hyperparameters | None) -> dict[str, Any]:
    """The primary kernel's values for an estimate's ``info`` (all None before the first fit).

    Args:
        hyper: the fitted hyperparameters, or None (no fit yet).

    Returns:
        ``{name: value}``: the kernel's values (:meth:`Hyperparameters.describe`, e.g. lengthscales,
        outputscale, mean_constant) over the keys every kernel reports (``info_defaults``: the size
        kernel's parameters, zero without one).
    """
    if hyper is None:
        return {"lengthscales": None, "outputscale": None, "mean_constant": None, **dict.fromkeys(info_defaults())}
    return {**info_defaults(), **hyper.describe()}
