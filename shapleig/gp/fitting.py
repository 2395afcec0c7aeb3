"""MAP fit of the Hamming-kernel GP: validation, then the numpy (default) or gpytorch engine.

Model (docs/math.md §3): ``SingleTaskGP`` with ``ScaleKernel(CategoricalKernel(ard_num_dims=p))`` (as
the subclass ``HammingKernel``, evaluated by matrix products for 0/1 inputs),
``k(z, z') = s * exp(-(1/p) sum_j [z_j != z'_j] / l_j)``, a constant mean, a ``Standardize(m=1)``
outcome transform and a fixed observation noise (``ard=False``: one lengthscale shared by all
players instead of p). Lengthscales carry the dimension-scaled prior
``LogNormal(sqrt2 + ln(p)/2, sqrt3)`` and start at its mode; the outputscale starts at softplus(0).

Everything is built in float64: the default dtype is switched to float64 only while the modules are
created (priors, constraints and initial values would otherwise be float32-truncated) and restored
afterwards. The fitted hyperparameters are returned as :class:`shapleig.gp.posterior.Hyperparameters`,
in standardised units; the Shapley posterior is then computed by ``shapleig.gp.posterior`` without torch.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from shapleig.games.coalitions import as_coalition_matrix
from shapleig.gp.posterior import Hyperparameters, standardize
from shapleig.gp.priors import (
    DEFAULT_FIT_ENGINE,
    MAX_FIT_ATTEMPTS,
    FitResult,
    check_fit_engine,
    initial_lengthscale,
    standardized_noise,
)
from shapleig.threads import compute_threads

logger = logging.getLogger(__name__)


def fit_hyperparameters(
    X: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    noise: float = 1e-6,
    noise_convention: str = "standardized",
    warm_start: Hyperparameters | None = None,
    fallback: Hyperparameters | None = None,
    max_attempts: int = MAX_FIT_ATTEMPTS,
    threads: int | None = 1,
    ard: bool = True,
    engine: str = DEFAULT_FIT_ENGINE,
    jumps: bool = False,
    size_trend: bool = False,
    optimizer_options: dict | None = None,
) -> FitResult:
    """MAP fit of the Hamming-kernel GP to archive ``X`` (bool[t, p]) with raw values ``y`` (float64[t]).

    Objective: gpytorch's ``ExactMarginalLogLikelihood`` (plus the lengthscale log-prior), optimised
    by botorch's ``fit_gpytorch_mll`` (scipy L-BFGS-B), at most ``max_attempts`` attempts; a retry
    happens after an exception or an optimisation warning and resamples the lengthscales from the
    prior. torch is seeded with ``seed`` before the fit (inside a forked RNG, so global state is
    untouched), which makes the fit deterministic. Cold start from the docs/math.md §3 initial values unless
    ``warm_start`` is given. If every attempt fails, ``fallback`` (or the initial values) is kept,
    ``success`` is False and the failure is logged. ``threads`` limits torch/BLAS threads during
    the fit (see :func:`compute_threads`). ``ard=False`` fits one lengthscale shared by all players
    (see :func:`build_model`). ``engine="numpy"`` runs the same MAP objective in numpy/scipy with an
    analytic gradient (:mod:`shapleig.gp.numpy_fit`; retries draw from a numpy generator seeded by ``seed``).
    ``jumps``, ``size_trend``: also fit the size kernel's jumps at ∅ and N and its trend in the
    coalition size (docs/math.md §15; numpy engine only). ``optimizer_options``: L-BFGS-B options
    of the numpy engine (None: scipy's defaults, as botorch's fit).
    """
    check_fit_engine(engine)
    if (jumps or size_trend) and engine != "numpy":
        raise ValueError(f"the size kernel (jumps, size_trend) is fitted by the numpy engine only, not {engine!r}")
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a bool[t, p] coalition matrix, got shape {X.shape}")
    X = as_coalition_matrix(X, X.shape[1])
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} values")
    if not np.isfinite(y).all():
        raise ValueError("y contains non-finite values")
    if X.shape[0] < 2:
        raise ValueError(f"a GP fit needs at least 2 observations, got {X.shape[0]}")
    y_std, y_mean, y_scale = standardize(y)
    noise_std = standardized_noise(noise, y_scale, noise_convention)

    start = time.perf_counter()
    if engine == "numpy":
        return _fit_numpy(X, y_std, y_mean, y_scale, noise_std, noise_convention, seed, warm_start,
                          fallback, max_attempts, threads, ard, start, jumps, size_trend, optimizer_options)
    # botorch/gpytorch load here, only for the gpytorch engine (importing botorch takes seconds)
    from shapleig.gp.torch_model import fit_gpytorch

    return fit_gpytorch(X, y, y_mean, y_scale, noise_std, noise_convention, seed, warm_start, fallback,
                        max_attempts, threads, ard, start)


def _fit_numpy(X, y_std, y_mean, y_scale, noise_std, noise_convention, seed, warm_start, fallback,
               max_attempts, threads, ard, start, jumps=False, size_trend=False,
               optimizer_options=None) -> FitResult:
    """The ``engine="numpy"`` branch of :func:`fit_hyperparameters` (same FitResult contract)."""
    from shapleig.gp.numpy_fit import fit_map_numpy

    with compute_threads(threads):
        hyper, fit = fit_map_numpy(X, y_std, noise=noise_std, ard=ard, seed=int(seed), init=warm_start,
                                   max_attempts=max_attempts, options=optimizer_options, jumps=jumps,
                                   size_trend=size_trend)
    success, message = hyper is not None, ""
    if not success:
        message = f"L-BFGS-B failed: {fit.message}"
        logger.warning("GP fit failed after %d attempts (%s); keeping previous hyperparameters",
                       fit.attempts, message)
        if fallback is not None:
            hyper = fallback
        else:
            p = X.shape[1]
            hyper = Hyperparameters(np.full(p, initial_lengthscale(p)), math.log(2.0), noise_std, 0.0)
    if hyper.noise != noise_std:
        hyper = hyper.with_noise(noise_std)
    return FitResult(hyper=hyper, attempts=fit.attempts, seconds=time.perf_counter() - start,
                     success=success, noise=noise_std, noise_convention=noise_convention,
                     y_mean=float(y_mean), y_scale=float(y_scale), neg_mll=fit.value if success else float("nan"),
                     seed=int(seed), message=message)
