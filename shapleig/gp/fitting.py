"""MAP fit of a GP surrogate kernel: validation, then the numpy (default) or gpytorch engine (docs/math.md §3).

The kernel is a spec (:mod:`shapleig.gp.kernels.spec`; e.g. ``Hamming(ard=True)``, the published
``ScaleKernel(CategoricalKernel(ard_num_dims=p))``, or ``Hamming(ard=False) + SizeKernel()``), with
a constant mean, a ``Standardize(m=1)`` outcome transform and a fixed observation noise. The
engine, the noise and its convention come whole from the options object
(:class:`~shapleig.gp.options.GPOptions`): this module restates none of their defaults. The numpy
engine (:mod:`shapleig.gp.numpy_fit`) fits any spec; the gpytorch engine
(:mod:`shapleig.gp.torch_model`, botorch's ``fit_gpytorch_mll``) the plain Hamming kernel only.
The fitted hyperparameters are returned as :class:`shapleig.gp.posterior.Hyperparameters`, in
standardised units; the Shapley posterior is then computed by ``shapleig.gp.posterior`` without torch.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from shapleig.games.coalitions import as_coalition_matrix
from shapleig.gp.fit_result import FitResult
from shapleig.gp.kernels import KernelSpec, plain_hamming
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters, standardize
from shapleig.gp.priors import MAX_FIT_ATTEMPTS, standardized_noise

logger = logging.getLogger(__name__)


# argument count over budget: the engines' shared public entry point (data, kernel, noise, seed, restarts)
def fit_hyperparameters(  # noqa: PLR0913
    X: np.ndarray,
    y: np.ndarray,
    kernel: KernelSpec,
    options: GPOptions,
    *,
    seed: int,
    init: Hyperparameters | None = None,
    fallback: Hyperparameters | None = None,
    optimizer_options: dict | None = None,
    max_attempts: int = MAX_FIT_ATTEMPTS,
) -> FitResult:
    """MAP fit of ``kernel`` to archive ``X`` (bool[t, p]) with raw values ``y`` (float64[t]).

    Args:
        X: the archive, bool[t, p] (t >= 2).
        y: its raw values, float64[t], finite.
        kernel: the kernel spec to fit (:mod:`shapleig.gp.kernels`).
        options: a :class:`~shapleig.gp.options.GPOptions` (or ``LoopOptions``): ``fit_engine``,
            ``noise`` and ``noise_convention`` are read from it.
        seed: seeds the fit's retries (numpy: their generator; gpytorch: torch, inside a forked RNG),
            which makes the fit deterministic.
        init: start from these hyperparameters (a warm start; None: the spec's initial values, a cold start).
        fallback: kept when every attempt fails (None: the spec's initial values); ``success`` is
            then False and the failure is logged.
        optimizer_options: L-BFGS-B options of the numpy engine (None: scipy's defaults, as botorch's fit).
        max_attempts: L-BFGS-B runs at most; a retry follows an exception or an optimisation
            failure and resamples the lengthscales from their prior.

    Returns:
        The :class:`~shapleig.gp.priors.FitResult` (hyperparameters in standardised units).
    """
    engine = options.fit_engine
    if engine == "gpytorch" and not plain_hamming(kernel):
        raise ValueError(f"the gpytorch engine fits the plain Hamming kernel only, not {kernel.name!r} "
                         f"({type(kernel).__name__}); use fit_engine='numpy'")
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
    noise_std = standardized_noise(options.noise, y_scale, options.noise_convention)

    start = time.perf_counter()
    if engine == "numpy":
        return _fit_numpy(kernel, X, y_std, y_mean, y_scale, noise_std, options.noise_convention, seed,
                          init, fallback, max_attempts, start, optimizer_options)
    # botorch/gpytorch load here, only for the gpytorch engine (importing botorch takes seconds)
    from shapleig.gp.torch_model import fit_gpytorch

    return fit_gpytorch(X, y, kernel, y_mean, y_scale, noise_std, options.noise_convention, seed, init,
                        fallback, max_attempts, start)


# argument count over budget: passes fit_hyperparameters' checked arguments on to one engine
def _fit_numpy(kernel, X, y_std, y_mean, y_scale, noise_std, noise_convention, seed, init, fallback,  # noqa: PLR0913
               max_attempts, start, optimizer_options) -> FitResult:
    """The ``engine="numpy"`` branch of :func:`fit_hyperparameters` (same FitResult contract)."""
    from shapleig.gp.numpy_fit import fit_map_numpy

    hyper, fit = fit_map_numpy(kernel, X, y_std, noise=noise_std, seed=int(seed), init=init,
                               max_attempts=max_attempts, options=optimizer_options)
    success, message = hyper is not None, ""
    if not success:
        message = f"L-BFGS-B failed: {fit.message}"
        logger.warning("GP fit failed after %d attempts (%s); keeping previous hyperparameters",
                       fit.attempts, message)
        hyper = fallback if fallback is not None else initial_hyperparameters(kernel, X.shape[1], noise_std)
    if hyper.noise != noise_std and not (success and kernel.learns_noise):  # a learned noise is kept
        hyper = hyper.with_noise(noise_std)
    return FitResult(hyper=hyper, attempts=fit.attempts, seconds=time.perf_counter() - start,
                     success=success, noise=noise_std, noise_convention=noise_convention,
                     y_mean=float(y_mean), y_scale=float(y_scale), neg_mll=fit.value if success else float("nan"),
                     seed=int(seed), message=message)


def initial_hyperparameters(kernel: KernelSpec, n_players: int, noise: float) -> Hyperparameters:
    """The hyperparameters a failed fit without a fallback keeps (:meth:`KernelSpec.fallback_params`).

    The Hamming part at its initial values (docs/math.md §3) and no size kernel.

    Args:
        kernel: the kernel spec.
        n_players: the number of players p.
        noise: the standardised noise variance.

    Returns:
        the fallback :class:`Hyperparameters` (mean constant 0).
    """
    return Hyperparameters(kernel, kernel.fallback_params(n_players), noise, 0.0)
