"""The Hamming-kernel GP surrogate (gpytorch/botorch): model, priors, fixed noise, MAP fit, schedules.

Model (docs/math.md §3): ``SingleTaskGP`` with ``ScaleKernel(CategoricalKernel(ard_num_dims=p))`` (as
the subclass ``HammingKernel``, evaluated by matrix products for 0/1 inputs),
``k(z, z') = s * exp(-(1/p) sum_j [z_j != z'_j] / l_j)``, a constant mean, a ``Standardize(m=1)``
outcome transform and a fixed observation noise (``ard=False``: one lengthscale shared by all
players instead of p). Lengthscales carry the dimension-scaled prior
``LogNormal(sqrt2 + ln(p)/2, sqrt3)`` and start at its mode; the outputscale starts at softplus(0).

Everything is built in float64: the default dtype is switched to float64 only while the modules are
created (priors, constraints and initial values would otherwise be float32-truncated) and restored
afterwards. The fitted hyperparameters are returned as :class:`shapleig.posterior.Hyperparameters`,
in standardised units; the Shapley posterior is then computed by ``shapleig.posterior`` without torch.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import torch
from botorch.models.kernels.categorical import CategoricalKernel

from .coalitions import as_coalition_matrix
from .posterior import Hyperparameters, standardize

logger = logging.getLogger(__name__)

DTYPE = torch.float64
# gpytorch's float64 floor for fixed noise; the raw-units convention applies it (as the research
# code did, implicitly); the standardized convention uses the requested noise as given.
MIN_FIXED_NOISE = 1e-6
NOISE_CONVENTIONS = ("standardized", "raw")
MAX_FIT_ATTEMPTS = 5
# "gpytorch": botorch's fit_gpytorch_mll (reference); "numpy": shapleig.fit (analytic gradient).
FIT_ENGINES = ("gpytorch", "numpy")


def check_fit_engine(engine: str) -> str:
    """``engine`` if it names a fit engine (:data:`FIT_ENGINES`), else a ``ValueError`` naming it."""
    if engine not in FIT_ENGINES:
        raise ValueError(f"unknown fit engine {engine!r}; choose one of {FIT_ENGINES}")
    return engine
# botorch raises gpytorch's exact-Cholesky size limit to 4096; we set it explicitly above that.
_CHOLESKY_SIZE = 1 << 16


_THREADPOOL_CONTROLLER = None


def _threadpool_limiter() -> Callable:
    """``limits -> context manager`` limiting the BLAS pools, from one cached threadpoolctl controller.

    ``threadpool_limits`` rescans the loaded shared libraries on every call (~2 ms, i.e. about half
    of a small game's whole selection time when the loop enters this twice per step); the
    controller scans once. Libraries loaded later are not seen, as with any controller.
    """
    global _THREADPOOL_CONTROLLER
    try:  # shipped with scikit-learn; without it only torch is limited
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover
        return lambda limits: contextlib.nullcontext()
    if _THREADPOOL_CONTROLLER is None:
        _THREADPOOL_CONTROLLER = ThreadpoolController()
    return lambda limits: _THREADPOOL_CONTROLLER.limit(limits=limits)


@contextlib.contextmanager
def compute_threads(n_threads: int | None = 1) -> Iterator[None]:
    """Limit torch intra-op and BLAS (threadpoolctl) threads to ``n_threads`` inside the block.

    The GP and Shapley-posterior matrices are small (t, p, pool <= a few thousand); on a shared
    machine idle-spinning thread pools made fits and triangular solves ~10x slower (measured: a
    t = 32 fit took 2.1 s with 2 torch threads, 0.22 s with 1). ``None`` leaves the pools alone.
    Previous settings are restored on exit.
    """
    if n_threads is None:
        yield
        return
    threadpool_limits = _threadpool_limiter()

    old = torch.get_num_threads()
    if old != n_threads:
        torch.set_num_threads(int(n_threads))
    try:
        with threadpool_limits(limits=int(n_threads)):
            yield
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)


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
    return max(MIN_FIXED_NOISE, float(noise) / float(y_scale) ** 2)


def build_model(
    X: np.ndarray,
    y: np.ndarray,
    *,
    noise_std: float,
    init: Hyperparameters | None = None,
    ard: bool = True,
):
    """The botorch ``SingleTaskGP`` for archive ``X`` (bool[t, p]) and raw values ``y`` (float64[t]).

    ``noise_std`` is the fixed noise variance in standardised units. ``init`` sets lengthscales,
    outputscale and mean constant (warm start); otherwise the docs/math.md §3 initial values are used.
    ``ard=False`` gives every player one shared lengthscale (same prior, same initial value): one
    kernel parameter instead of p, which fits far better from the few points of a small budget.
    """
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
    # the raw units, for readers of the model's training data (acquisition.posterior_from_model)
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
    """
    covar = model.covar_module
    p = model.train_inputs[0].shape[-1]
    ls = covar.base_kernel.lengthscale.detach().reshape(-1).cpu().numpy().astype(np.float64)
    return Hyperparameters(
        lengthscales=np.broadcast_to(ls, (p,)).copy(),
        outputscale=float(covar.outputscale.detach()),
        noise=float(model.likelihood.noise.detach().reshape(-1)[0]),
        mean_constant=float(model.mean_module.constant.detach()),
    )


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
    engine: str = "gpytorch",
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
    analytic gradient (:mod:`shapleig.fit`; retries draw from a numpy generator seeded by ``seed``).
    """
    check_fit_engine(engine)
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
                          fallback, max_attempts, threads, ard, start)
    # botorch/gpytorch load here, only for the gpytorch engine (importing botorch takes seconds)
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
    with torch.random.fork_rng(devices=[]), compute_threads(threads), \
            gsettings.max_cholesky_size(_CHOLESKY_SIZE), gsettings.cholesky_max_tries(6):
        torch.manual_seed(int(seed) % (2**63 - 1))
        model = build_model(X, y, noise_std=noise_std, init=warm_start, ard=ard)
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
                hyper = model_hyperparameters(build_model(X, y, noise_std=noise_std, ard=ard))
    if hyper.noise != noise_std:
        hyper = Hyperparameters(hyper.lengthscales, hyper.outputscale, noise_std, hyper.mean_constant)
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


def _fit_numpy(X, y_std, y_mean, y_scale, noise_std, noise_convention, seed, warm_start, fallback,
               max_attempts, threads, ard, start) -> FitResult:
    """The ``engine="numpy"`` branch of :func:`fit_hyperparameters` (same FitResult contract)."""
    from .fit import fit_map_numpy

    with compute_threads(threads):
        hyper, fit = fit_map_numpy(X, y_std, noise=noise_std, ard=ard, seed=int(seed), init=warm_start,
                                   max_attempts=max_attempts)
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
        hyper = Hyperparameters(hyper.lengthscales, hyper.outputscale, noise_std, hyper.mean_constant)
    return FitResult(hyper=hyper, attempts=fit.attempts, seconds=time.perf_counter() - start,
                     success=success, noise=noise_std, noise_convention=noise_convention,
                     y_mean=float(y_mean), y_scale=float(y_scale), neg_mll=fit.value if success else float("nan"),
                     seed=int(seed), message=message)


# -- refit schedules (docs/math.md §9) -------------------------------------------------------------

RefitSchedule = Callable[[int], bool]


def _every(it: int) -> bool:
    return True


def _decaying(it: int) -> bool:
    """Research code's ``init_64_factor_4``: every step, then every 8, 16, 32."""
    if it < 64:
        return True
    if it < 192:
        return it % 8 == 0
    if it < 448:
        return it % 16 == 0
    return it % 32 == 0


def _never(it: int) -> bool:
    return it == 0


def _geometric(hand_over: int) -> RefitSchedule:
    def schedule(it: int) -> bool:
        k = it - hand_over
        return k == 0 or (k > 0 and (k & (k - 1)) == 0)

    return schedule


@dataclass(frozen=True)
class AdaptiveRefit:
    """Evidence-triggered refits with a geometric backstop (refit schedule ``"adaptive"``).

    A refit happens at every step of the backstop (the geometric schedule: it = 0, 1, 2, 4, 8, ...)
    and whenever the points added since the last fit are poorly predicted by the hyperparameters in
    force: with ``z`` their one-step-ahead standardised residuals
    (:meth:`~shapleig.posterior.ShapleyPosterior.innovations`, i.e. their log predictive density
    under the current hyperparameters), when ``mean(z^2) > threshold`` (a calibrated model gives
    ``E[z^2] = 1``). Until bound to a loop (:meth:`bind`, done by ``DesignLoop``) it is the backstop
    alone. The decision reads only the archive and the posterior, so it is deterministic per seed.
    """

    threshold: float = 4.0
    hand_over: int = 0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"threshold must be positive and finite, got {self.threshold}")
        if int(self.hand_over) < 0:
            raise ValueError(f"hand_over must be >= 0, got {self.hand_over}")

    @property
    def __name__(self) -> str:  # the loop reports a callable schedule by its __name__
        return "adaptive"

    def __call__(self, it: int) -> bool:
        return _geometric(int(self.hand_over))(it)

    def bind(self, loop) -> RefitSchedule:
        """Schedule reading ``loop.X``, ``loop.posterior.innovations()`` and the archive size at the last fit."""
        backstop = _geometric(int(self.hand_over))

        def adaptive(it: int) -> bool:
            if backstop(it):
                return True
            t_fit, t = int(loop._fitted_on), int(loop.X.shape[0])
            if loop.posterior is None or t_fit < 0 or t <= t_fit:
                return False
            z = loop.posterior.innovations()[t_fit:t]
            return bool(np.mean(z**2) > self.threshold)

        adaptive.__name__ = "adaptive"
        return adaptive


REFIT_SCHEDULES = ("every", "decaying", "geometric", "never", "adaptive")
_ALIASES = {"every_iteration": "every", "init_64_factor_4": "decaying"}


def refit_schedule(name: str | RefitSchedule, hand_over: int = 0) -> RefitSchedule:
    """Refit schedule ``it -> bool`` by name; ``it`` counts acquisitions from 0 after the design.

    ``"every"`` (default), ``"decaying"`` (always if it < 64; it % 8 == 0 below 192; it % 16 == 0
    below 448; it % 32 == 0 after), ``"geometric"`` (it = hand_over + k with k = 0 or a power of two),
    ``"never"`` (only the initial fit at it = 0; the loop adds the final refit), ``"adaptive"``
    (:class:`AdaptiveRefit`: geometric backstop plus evidence-triggered refits; ``"adaptive:<t>"``
    sets its threshold). A callable is
    returned unchanged. The loop always fits when no hyperparameters exist yet.
    """
    if callable(name):
        return name
    if isinstance(name, str) and name.startswith("adaptive:"):
        try:
            threshold = float(name.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"bad refit schedule {name!r}: write adaptive:<threshold>, e.g. adaptive:4") from None
        return AdaptiveRefit(threshold=threshold, hand_over=int(hand_over))
    key = _ALIASES.get(name, name)
    if key == "every":
        return _every
    if key == "decaying":
        return _decaying
    if key == "never":
        return _never
    if key == "adaptive":
        return AdaptiveRefit(hand_over=int(hand_over))
    if key == "geometric":
        if int(hand_over) < 0:
            raise ValueError(f"hand_over must be >= 0, got {hand_over}")
        return _geometric(int(hand_over))
    raise ValueError(f"unknown refit schedule {name!r}; choose one of {REFIT_SCHEDULES}")
