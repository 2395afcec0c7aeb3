"""Priors, noise conventions and the fit result of the Hamming-kernel GP (docs/math.md §3).

Shared by both fit engines (:mod:`shapleig.gp.numpy_fit`, :mod:`shapleig.gp.torch_model`) and the
dispatcher :func:`shapleig.gp.fitting.fit_hyperparameters`; imports neither numpy's nor torch's fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shapleig.extras import require_torch
from shapleig.gp.posterior import Hyperparameters

# gpytorch's float64 floor for fixed noise; the raw-units convention applies it (as the research
# code did, implicitly); the standardized convention uses the requested noise as given.
MIN_FIXED_NOISE = 1e-6
NOISE_CONVENTIONS = ("standardized", "raw")
MAX_FIT_ATTEMPTS = 5
# "gpytorch": botorch's fit_gpytorch_mll (reference); "numpy": shapleig.gp.numpy_fit (analytic gradient).
FIT_ENGINES = ("gpytorch", "numpy")
# the engine every fit uses unless told otherwise (the options object and the fit functions read it)
DEFAULT_FIT_ENGINE = "numpy"


def check_fit_engine(engine: str) -> str:
    """``engine`` if it names a fit engine (:data:`FIT_ENGINES`), else a ``ValueError`` naming it."""
    if engine not in FIT_ENGINES:
        raise ValueError(f"unknown fit engine {engine!r}; choose one of {FIT_ENGINES}")
    if engine == "gpytorch":  # the published route: fail here, before anything is evaluated, without torch
        require_torch("fit_engine='gpytorch' (the published setting, ShaplEIG.published())")
    return engine


def lengthscale_prior_params(n_players: int) -> tuple[float, float]:
    """``(loc, scale)`` of the LogNormal lengthscale prior: ``(sqrt2 + ln(p)/2, sqrt3)``."""
    return math.sqrt(2.0) + 0.5 * math.log(n_players), math.sqrt(3.0)


def initial_lengthscale(n_players: int) -> float:
    """The prior mode ``exp(loc - scale^2) = e^(sqrt2 - 3) sqrt(p)`` (~0.2048 sqrt(p))."""
    loc, scale = lengthscale_prior_params(n_players)
    return math.exp(loc - scale**2)


def standardized_noise(noise: float, y_scale: float, convention: str = "standardized") -> float:
    """Observation noise variance in standardised units under a noise convention (docs/math.md §3).

    ``"standardized"`` (shapiq, default): ``noise`` is already in standardised units and used as
    given (gpytorch's float64 floor of 1e-6 is lowered for the fit when ``noise`` is below it, so a
    tiny noise such as 1e-10 can be asked for explicitly).
    ``"raw"`` (research code): ``noise`` is in raw units, i.e. ``noise / s_y^2`` standardised, then
    floored at gpytorch's float64 minimum fixed noise 1e-6: ``max(1e-6, noise / s_y^2)``.
    """
    if convention not in NOISE_CONVENTIONS:
        raise ValueError(f"unknown noise convention {convention!r}; choose one of {NOISE_CONVENTIONS}")
    if not (isinstance(noise, (int, float, np.floating, np.integer)) and np.isfinite(noise) and noise > 0):
        raise ValueError(f"noise must be a positive finite variance, got {noise!r}")
    if convention == "standardized":
        return float(noise)
    return max(MIN_FIXED_NOISE, float(noise) / float(y_scale) / float(y_scale))  # s_y^2 overflows near 1e155


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
