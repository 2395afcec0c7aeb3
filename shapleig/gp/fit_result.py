"""The outcome of one MAP fit of the GP surrogate (both engines return it; docs/math.md §3)."""

from __future__ import annotations

from dataclasses import dataclass

from shapleig.gp.posterior import Hyperparameters


@dataclass(frozen=True)
class FitResult:
    """Outcome of one MAP fit.

    hyper:        fitted hyperparameters (standardised units); the fallback ones if the fit failed.
    attempts:     L-BFGS-B runs made (1..5); retries resample the lengthscales from their prior.
    seconds:      wall time of the fit.
    success:      False when every attempt failed and ``hyper`` is the fallback.
    noise:        standardised noise variance used; ``noise_convention`` names how it was derived.
    y_mean, y_scale: the standardisation of the archive (raw units).
    neg_mll:      final objective (negative MLL + log prior, per observation), nan on failure.
    seed:         the torch seed used.
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
