"""The gpytorch/botorch Hamming-kernel GP (the published fit route, docs/math.md §3): model, hyperparameter read-out, fit.

Imported only by the gpytorch engine and the botorch faces; the default numpy path never loads torch.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from typing import Iterator

import numpy as np

from shapleig.extras import require_torch

require_torch("the gpytorch fit engine (shapleig.gp.torch_model)")  # before importing torch: name the extra

import torch
from botorch.models.kernels.categorical import CategoricalKernel

from shapleig.gp.fit_result import FitResult
from shapleig.gp.kernels import KernelSpec, plain_hamming
from shapleig.gp.posterior import Hyperparameters, standardize
from shapleig.gp.priors import (
    MIN_FIXED_NOISE,
    initial_lengthscale,
    lengthscale_prior_params,
)

logger = logging.getLogger(__name__)
# botorch raises gpytorch's exact-Cholesky size limit to 4096; we set it explicitly above that.
_CHOLESKY_SIZE = 1 << 16


DTYPE = torch.float64


@contextlib.contextmanager
def _float64_default() -> Iterator[None]:
    """Temporarily make float64 the torch default so priors/constraints are created in float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(DTYPE)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


class HammingKernel(CategoricalKernel):
    """botorch's ``CategoricalKernel`` with a matmul forward for 0/1 inputs.

    Same kernel, same parameters/priors/constraints; only the evaluation differs. For binary
    inputs ``sum_j [z_j != z'_j] w_j = z.w + z'.w - 2 (z*w).z'`` (w = 1/l), which avoids the
    parent's ``n1 x n2 x p`` difference tensor: ~100x faster kernel + backward at p = 64, t = 256
    (measured), i.e. a p = 64 refit at t = 256 went from ~60 s to ~3 s. Non-binary inputs fall
    back to the parent's forward.
    """

    def forward(self, x1, x2, diag: bool = False, last_dim_is_batch: bool = False, **params):
        """The kernel between ``x1`` and ``x2`` (by the matmul form for 0/1 inputs, else the parent's).

        Args:
            x1: ``(..., n1, p)`` inputs.
            x2: ``(..., n2, p)`` inputs.
            diag: only the diagonal ``k(x1_i, x2_i)``.
            last_dim_is_batch: gpytorch's batch mode (falls back to the parent's forward).
            **params: gpytorch's further keywords (unused).

        Returns:
            the kernel matrix (or its diagonal), a torch tensor.
        """
        binary = bool(((x1 == 0) | (x1 == 1)).all() and ((x2 == 0) | (x2 == 1)).all())
        if last_dim_is_batch or not binary:
            return super().forward(x1, x2, diag=diag, last_dim_is_batch=last_dim_is_batch)
        w = 1.0 / self.lengthscale  # (..., 1, p)
        p = x1.shape[-1]
        if diag:
            return torch.exp(-((x1 != x2) * w).sum(-1) / p)
        xw = x1 * w
        dist = xw.sum(-1, keepdim=True) + (x2 * w).sum(-1).unsqueeze(-2) - 2.0 * xw @ x2.transpose(-1, -2)
        # rounding can leave -1e-16 for identical rows; distances are >= 0
        return torch.exp(-dist.clamp_min(0.0) / p)


def build_model(
    X: np.ndarray,
    y: np.ndarray,
    kernel: KernelSpec,
    *,
    noise_std: float,
    init: Hyperparameters | None = None,
):
    """The botorch ``SingleTaskGP`` of a plain Hamming ``kernel`` for archive ``X`` (bool[t, p]) and raw values ``y``.

    ``noise_std`` is the fixed noise variance in standardised units. ``init`` sets lengthscales,
    outputscale and mean constant (warm start); otherwise the docs/math.md §3 initial values are used.
    ``Hamming(ard=False)`` gives every player one shared lengthscale (same prior, same initial
    value): one kernel parameter instead of p, which fits far better from the few points of a small
    budget. Other kernel specs have no gpytorch model here (``ValueError``).

    Args:
        X: ``bool[t, p]``, the archive.
        y: ``float64[t]`` raw values.
        kernel: a plain :class:`~shapleig.gp.kernels.Hamming` (no ``spread``).
        noise_std: the fixed noise variance in standardised units.
        init: hyperparameters to start from (warm start); None: the initial values.

    Returns:
        the ``SingleTaskGP``, not yet fitted.
    """
    if not plain_hamming(kernel):
        raise ValueError(f"the gpytorch model is the plain Hamming kernel only, not {kernel!r}")
    ard = kernel.per_player
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch import settings as gsettings
    from gpytorch.constraints import GreaterThan, Positive
    from gpytorch.kernels import ScaleKernel
    from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
    from gpytorch.means import ConstantMean
    from gpytorch.priors import LogNormalPrior

    t, p = X.shape
    train_X = torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=DTYPE)
    # botorch's Standardize replaces a std below 1e-8 by 1 (and squares 1e154 to inf): hand it
    # values already standardised by the scale-free standardize, which it then leaves as they are,
    # so the fitted (standardised-unit) hyperparameters do not depend on the game's units
    y_tilde, y_mean, y_scale = standardize(np.asarray(y, dtype=np.float64))
    train_Y = torch.as_tensor(y_tilde, dtype=DTYPE).reshape(t, 1)
    loc, scale = lengthscale_prior_params(p)
    with _float64_default():
        prior = LogNormalPrior(torch.tensor(loc, dtype=DTYPE), torch.tensor(scale, dtype=DTYPE))
        base = HammingKernel(
            ard_num_dims=p if ard else None,
            lengthscale_prior=prior,
            lengthscale_constraint=GreaterThan(
                1e-6, initial_value=torch.tensor(initial_lengthscale(p), dtype=DTYPE)
            ),
        )
        covar = ScaleKernel(base, outputscale_constraint=Positive())
        mean = ConstantMean()
        # A likelihood built here (not from train_Yvar) keeps the standardised noise exact: going
        # through Standardize would divide 1e-6 * s_y^2 by s_y^2 and could round below the floor.
        floor = min(MIN_FIXED_NOISE, float(noise_std))
        with gsettings.min_fixed_noise(float_value=floor, double_value=floor, half_value=floor):
            likelihood = FixedNoiseGaussianLikelihood(
                noise=torch.full((t,), float(noise_std), dtype=DTYPE)
            )
        model = SingleTaskGP(
            train_X,
            train_Y,
            likelihood=likelihood,
            covar_module=covar,
            mean_module=mean,
            outcome_transform=Standardize(m=1),
        )
    # the raw units, for readers of the model's training data (botorch_acquisition.posterior_from_model)
    model.shapleig_y_mean, model.shapleig_y_scale = y_mean, y_scale
    if init is not None:
        ls = np.broadcast_to(np.asarray(init.lengthscales, dtype=np.float64), (p,))
        if not ard:  # one shared lengthscale: start from the geometric mean of the given ones
            ls = np.exp(np.log(ls).mean(keepdims=True))
        base.lengthscale = torch.as_tensor(ls.copy(), dtype=DTYPE).reshape(1, -1)
        covar.outputscale = torch.tensor(float(init.outputscale), dtype=DTYPE)
        mean.constant = torch.tensor(float(init.mean_constant), dtype=DTYPE)
    return model


def model_hyperparameters(model) -> Hyperparameters:
    """Current hyperparameters of a model from :func:`build_model` (standardised units).

    A shared lengthscale (``ard=False``) is returned repeated p times, so the Shapley algebra never
    needs to know which kernel variant was fitted.

    Args:
        model: a model from :func:`build_model`.

    Returns:
        the model's :class:`Hyperparameters`.
    """
    covar = model.covar_module
    p = model.train_inputs[0].shape[-1]
    ls = covar.base_kernel.lengthscale.detach().reshape(-1).cpu().numpy().astype(np.float64)
    return Hyperparameters.hamming(
        np.broadcast_to(ls, (p,)).copy(),
        float(covar.outputscale.detach()),
        noise=float(model.likelihood.noise.detach().reshape(-1)[0]),
        mean_constant=float(model.mean_module.constant.detach()),
        ard=ls.size > 1 or p == 1,
    )


# argument count over budget: passes fit_hyperparameters' checked arguments on to one engine
def fit_gpytorch(X, y, kernel, y_mean, y_scale, noise_std, noise_convention, seed, init, fallback,  # noqa: PLR0913
                 max_attempts, start) -> FitResult:
    """The ``engine="gpytorch"`` branch of :func:`shapleig.gp.fitting.fit_hyperparameters`.

    botorch's ``fit_gpytorch_mll`` (scipy L-BFGS-B) on gpytorch's exact marginal likelihood plus
    the lengthscale log-prior; same :class:`FitResult` contract as the numpy engine.

    Args:
        X: ``bool[t, p]``, the archive.
        y: ``float64[t]`` standardised values.
        kernel: a plain :class:`~shapleig.gp.kernels.Hamming`.
        y_mean: the archive's mean (raw units), recorded in the result.
        y_scale: the archive's scale (raw units), recorded in the result.
        noise_std: the fixed noise variance in standardised units.
        noise_convention: how the noise was derived, recorded in the result.
        seed: the seed of torch and of the retries.
        init: a warm start, or None.
        fallback: the hyperparameters kept if every attempt fails, or None.
        max_attempts: the most attempts.
        start: ``time.perf_counter()`` at the start of the fit (its timing).

    Returns:
        the :class:`FitResult`.
    """
    from botorch.exceptions.errors import ModelFittingError
    from botorch.fit import fit_gpytorch_mll
    from botorch.optim.fit import fit_gpytorch_mll_scipy
    from gpytorch import settings as gsettings
    from gpytorch.mlls import ExactMarginalLogLikelihood

    attempts = 0
    last_result: list = []

    def counting_optimizer(mll, closure=None, **kwargs):
        nonlocal attempts
        attempts += 1
        result = fit_gpytorch_mll_scipy(mll, closure=closure, **kwargs)
        last_result.append(result)
        return result

    success, message, neg_mll = True, "", float("nan")
    # threads: the caller's compute_threads (the loop's, around every step) applies
    with torch.random.fork_rng(devices=[]), \
            gsettings.max_cholesky_size(_CHOLESKY_SIZE), gsettings.cholesky_max_tries(6):
        torch.manual_seed(int(seed) % (2**63 - 1))
        model = build_model(X, y, kernel, noise_std=noise_std, init=init)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        try:
            with warnings.catch_warnings():
                # the fallback loop re-emits the warnings that triggered a retry; we log instead
                warnings.simplefilter("ignore")
                fit_gpytorch_mll(mll, optimizer=counting_optimizer, max_attempts=max_attempts)
            hyper = model_hyperparameters(model)
            if last_result:
                neg_mll = float(last_result[-1].fval)
        except (ModelFittingError, RuntimeError, ValueError) as exc:  # all attempts failed
            success, message = False, f"{type(exc).__name__}: {exc}"
            logger.warning("GP fit failed after %d attempts (%s); keeping previous hyperparameters",
                           attempts, message)
            if fallback is not None:
                hyper = fallback
            else:
                hyper = model_hyperparameters(build_model(X, y, kernel, noise_std=noise_std))
    if hyper.kernel != kernel:  # the spec fitted, whatever the model says about it
        hyper = Hyperparameters(kernel, hyper.params, hyper.noise, hyper.mean_constant)
    if hyper.noise != noise_std:
        hyper = hyper.with_noise(noise_std)
    return FitResult(
        hyper=hyper,
        attempts=attempts,
        seconds=time.perf_counter() - start,
        success=success,
        noise=noise_std,
        noise_convention=noise_convention,
        y_mean=float(y_mean),
        y_scale=float(y_scale),
        neg_mll=neg_mll,
        seed=int(seed),
        message=message,
    )


