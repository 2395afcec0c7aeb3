"""Priors, starting values, coordinate transforms and noise conventions of the GP (docs/math.md §3, §15).

Shared by the kernel specs (:mod:`shapleig.gp.kernels`), both fit engines
(:mod:`shapleig.gp.numpy_fit`, :mod:`shapleig.gp.torch_model`) and the dispatcher
:func:`shapleig.gp.fitting.fit_hyperparameters`; imports nothing of the GP (the kernels sit above it).
"""

from __future__ import annotations

import math

import numpy as np

from shapleig.extras import require_torch

# gpytorch's float64 floor for fixed noise; the raw-units convention applies it (as the research
# code did, implicitly); the standardized convention uses the requested noise as given.
MIN_FIXED_NOISE = 1e-6
NOISE_CONVENTIONS = ("standardized", "raw")
MAX_FIT_ATTEMPTS = 5
# "gpytorch": botorch's fit_gpytorch_mll (reference); "numpy": shapleig.gp.numpy_fit (analytic gradient).
FIT_ENGINES = ("gpytorch", "numpy")
# the engine every fit uses unless told otherwise (the options object and the fit functions read it)
DEFAULT_FIT_ENGINE = "numpy"


# Lengthscales are 1e-6 + softplus(raw) (gpytorch's GreaterThan(1e-6)).
MIN_LENGTHSCALE = 1e-6
# An outputscale is softplus(raw) floored here (standardised units): far below 0, softplus underflows
# to exactly 0 and a MAP fit that drove raw there would unpack to an invalid (zero-variance) kernel.
MIN_OUTPUTSCALE = 1e-12
# The size kernel (docs/math.md §15) starts here, in standardised units: jumps of about one standard
# deviation of the values, from which the likelihood moves them either way (their profile is
# unimodal), and a size trend of half the values' variance over half the size range.
INITIAL_JUMP = 1.0
INITIAL_SIZE_VARIANCE = 0.5
INITIAL_SIZE_LENGTHSCALE = 0.5
# the trend's lengthscale (normalised size units) has a normal prior on its log: (mean, sd)
SIZE_LENGTHSCALE_PRIOR = (math.log(0.5), 1.0)


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + e^x)`` without overflow (float64, elementwise).

    Args:
        x: any real array.

    Returns:
        float64, the shape of ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    return np.logaddexp(0.0, x)


def inverse_softplus(y: np.ndarray) -> np.ndarray:
    """``log(e^y - 1)`` for y > 0, stable for large and tiny y (gpytorch's inverse transform).

    Args:
        y: positive reals.

    Returns:
        float64, the shape of ``y``.
    """
    y = np.asarray(y, dtype=np.float64)
    return y + np.log(-np.expm1(-y))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + e^-x)``, the derivative of :func:`softplus` (float64, elementwise, no overflow).

    Args:
        x: any real array.

    Returns:
        float64 in (0, 1), the shape of ``x``.
    """
    return np.exp(-np.logaddexp(0.0, -np.asarray(x, dtype=np.float64)))


def check_fit_engine(engine: str) -> str:
    """``engine`` if it names a fit engine (:data:`FIT_ENGINES`), else a ``ValueError`` naming it.

    Args:
        engine: ``"numpy"`` or ``"gpytorch"`` (the latter needs the torch stack).

    Returns:
        ``engine``.
    """
    if engine not in FIT_ENGINES:
        raise ValueError(f"unknown fit engine {engine!r}; choose one of {FIT_ENGINES}")
    if engine == "gpytorch":  # the published route: fail here, before anything is evaluated, without torch
        require_torch("fit_engine='gpytorch' (the published setting, ShaplEIG.published())")
    return engine


def lengthscale_prior_params(n_players: int) -> tuple[float, float]:
    """``(loc, scale)`` of the LogNormal lengthscale prior: ``(sqrt2 + ln(p)/2, sqrt3)``.

    Args:
        n_players: the number of players p.

    Returns:
        ``(loc, scale)``.
    """
    return math.sqrt(2.0) + 0.5 * math.log(n_players), math.sqrt(3.0)


def initial_lengthscale(n_players: int) -> float:
    """The prior mode ``exp(loc - scale^2) = e^(sqrt2 - 3) sqrt(p)`` (~0.2048 sqrt(p)).

    Args:
        n_players: the number of players p.

    Returns:
        the initial lengthscale.
    """
    loc, scale = lengthscale_prior_params(n_players)
    return math.exp(loc - scale**2)


def standardized_noise(noise: float, y_scale: float, convention: str) -> float:
    """Observation noise variance in standardised units under a noise convention (docs/math.md §3).

    ``"standardized"`` (shapiq, default): ``noise`` is already in standardised units and used as
    given (gpytorch's float64 floor of 1e-6 is lowered for the fit when ``noise`` is below it, so a
    tiny noise such as 1e-10 can be asked for explicitly).
    ``"raw"`` (research code): ``noise`` is in raw units, i.e. ``noise / s_y^2`` standardised, then
    floored at gpytorch's float64 minimum fixed noise 1e-6: ``max(1e-6, noise / s_y^2)``.

    Args:
        noise: the noise variance as given (see the conventions above).
        y_scale: the standard deviation of the archive's values (raw units).
        convention: ``"standardized"`` or ``"raw"``.

    Returns:
        the noise variance in standardised units.
    """
    if convention not in NOISE_CONVENTIONS:
        raise ValueError(f"unknown noise convention {convention!r}; choose one of {NOISE_CONVENTIONS}")
    if not (isinstance(noise, (int, float, np.floating, np.integer)) and np.isfinite(noise) and noise > 0):
        raise ValueError(f"noise must be a positive finite variance, got {noise!r}")
    if convention == "standardized":
        return float(noise)
    return max(MIN_FIXED_NOISE, float(noise) / float(y_scale) / float(y_scale))  # s_y^2 overflows near 1e155
