"""MAP fit of a GP surrogate in numpy/scipy with an analytic gradient (docs/math.md §3, §15).

Same model and objective as the gpytorch fit of :mod:`shapleig.gp.torch_model` for the plain
Hamming kernel, and the same for any kernel spec (:mod:`shapleig.gp.kernels.spec`):

- the kernel is the spec's (e.g. ``k(z, z') = s exp(-(1/p) sum_j [z_j != z'_j] / l_j)`` with p
  lengthscales or one shared, plus the size kernel), each part with its own coordinates, priors
  and starting values (:class:`~shapleig.gp.kernels.spec.FitTerms`), and a free constant mean c;
- y standardised as botorch ``Standardize(m=1)``, fixed noise sigma^2 in standardised units;
- objective ``(-log N(y~; c, K + sigma^2 I) - sum of the parts' log priors) / t`` (the lengthscale
  prior ``LogNormal(sqrt2 + ln(p)/2, sqrt3)`` is evaluated on l, no Jacobian of the softplus);
- L-BFGS-B (scipy defaults, as botorch's ``fit_gpytorch_mll_scipy``) from the spec's initial values
  (or a warm start); a run that ends in a failure status or a non-positive-definite matrix is
  retried from the initial values with the lengthscales resampled from their prior, at most
  ``max_attempts`` runs (botorch's fallback).

The gradient comes from one Cholesky factor and ``K^-1`` (``dpotri``):
``d log N / d theta = 0.5 tr(W dK/dtheta)`` with ``W = alpha alpha^T - K^-1``, which every part
contracts with its own ``dK`` (the Hamming part in one ``t x t`` by ``t x p`` product,
:class:`~shapleig.gp.kernels.HammingFit`). A fit step costs O(t^3 / 3) (Cholesky) + O(t^3 / 3)
(inverse) + O(t^2 p).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import lapack
from scipy.optimize import minimize

from shapleig.gp.kernels import FitTerms, KernelSpec, LearnedNoise
from shapleig.gp.posterior import Hyperparameters
from shapleig.gp.priors import MAX_FIT_ATTEMPTS

_LOG_2PI = math.log(2.0 * math.pi)
# gpytorch's psd_safe_cholesky for float64: jitter 1e-8, tenfold per failure; the surrogate raises
# the number of tries to 6.
_JITTER0 = 1e-8
_JITTER_TRIES = 6
# scipy messages of an L-BFGS-B run stopped by its iteration/evaluation limits (botorch's regex,
# both scipy spellings): botorch treats these as a (stopped) success, any other failure retries.
_STOPPED = re.compile("TOTAL NO. (of|OF) (ITERATIONS REACHED LIMIT|(f AND g|F,G) EVALUATIONS EXCEEDS LIMIT)")


@functools.lru_cache(maxsize=8)
def _lower_mask(t: int) -> np.ndarray:
    """bool[t, t], True on and below the diagonal (read-only)."""
    mask = np.tril(np.ones((t, t), dtype=bool))
    mask.setflags(write=False)
    return mask


class NotPositiveDefinite(np.linalg.LinAlgError):
    """``K + sigma^2 I`` stayed indefinite after every jitter attempt."""


def _cholesky(K: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor (Fortran order, upper triangle garbage) and the jitter added."""
    jitter = 0.0
    for attempt in range(_JITTER_TRIES + 1):
        A = np.array(K, order="F", copy=True)
        if jitter:
            A[np.diag_indices_from(A)] += jitter
        L, info = lapack.dpotrf(A, lower=1, clean=0, overwrite_a=1)
        if info == 0:
            return L, jitter
        jitter = _JITTER0 * 10.0**attempt
    raise NotPositiveDefinite(f"kernel matrix of size {K.shape[0]} not positive definite with jitter {jitter:.1e}")


@dataclass(frozen=True)
class MapProblem:
    """The MAP objective of a kernel spec on one archive: ``X`` (float64[t, p] of 0/1), standardised ``y``.

    ``theta = (c, part 0's coordinates, part 1's, ...)``: the constant mean first, then each part of
    ``kernel`` (:attr:`~shapleig.gp.kernels.spec.KernelSpec.parts`) owns the slice ``blocks[i]``
    (:class:`~shapleig.gp.kernels.spec.FitTerms`). ``noise``: the fixed sigma^2 (standardised), or,
    when the kernel learns it (:attr:`KernelSpec.learned_noise`), the start of a last coordinate
    ``eta`` whose value, prior and gradient the kernel's :class:`~shapleig.gp.kernels.noise.LearnedNoise`
    gives (``noise_model``).
    The kernel matrix is the first part's, plus the noise on the diagonal, plus the other parts'
    (this order of additions is kept from the first implementation, so fits stay bit-identical).

    Attributes:
        kernel: the kernel spec.
        X: ``float64[t, p]`` of 0/1, the archive.
        y: ``float64[t]`` standardised values.
        noise: the fixed noise variance sigma^2 (standardised).
        terms: each part's :class:`~shapleig.gp.kernels.spec.FitTerms`.
        blocks: each part's slice of ``theta``.
        noise_model: the kernel's learned noise, the last coordinate of theta (None: the noise is fixed).
    """

    kernel: KernelSpec
    X: np.ndarray
    y: np.ndarray
    noise: float
    terms: tuple[FitTerms, ...]
    blocks: tuple[slice, ...]
    noise_model: LearnedNoise | None = None

    @classmethod
    def build(cls, kernel: KernelSpec, X: np.ndarray, y_std: np.ndarray, noise: float) -> "MapProblem":
        """The problem of ``kernel`` on archive ``X`` and standardised values ``y_std``.

        Args:
            kernel: the kernel spec.
            X: ``bool[t, p]``, the archive.
            y_std: ``float64[t]`` standardised values.
            noise: the fixed noise variance (standardised).

        Returns:
            the :class:`MapProblem`.
        """
        Xf = np.ascontiguousarray(X, dtype=np.float64)
        terms = tuple(part.fit_terms(X) for part in kernel.parts)
        blocks, start = [], 1
        for term in terms:
            blocks.append(slice(start, start + term.n_params))
            start += term.n_params
        return cls(kernel, Xf, np.asarray(y_std, dtype=np.float64), float(noise), terms, tuple(blocks),
                   kernel.learned_noise)

    @property
    def learn_noise(self) -> bool:
        """Whether the noise is a last coordinate of theta, fitted with its prior (:attr:`noise_model`)."""
        return self.noise_model is not None

    @property
    def n_params(self) -> int:
        """Coordinates of theta: the mean constant, every part's and the learned noise's.

        The BIC's count, docs/math.md §13.
        """
        return 1 + sum(term.n_params for term in self.terms) + int(self.learn_noise)

    def noise_at(self, theta: np.ndarray) -> float:
        """sigma^2 at ``theta``: the fixed noise, or the learned one (its last coordinate).

        Args:
            theta: the optimiser's vector.

        Returns:
            sigma^2, standardised.
        """
        if self.noise_model is None:
            return self.noise
        return self.noise_model.value(theta[-1])

    def lengthscale_block(self) -> slice:
        """The slice of theta holding the first part's lengthscale coordinates that carry a LogNormal prior.

        :attr:`FitTerms.lengthscales`; the Laplace evidence integrates them (:mod:`shapleig.gp.evidence`).

        Returns:
            the slice.
        """
        for term, block in zip(self.terms, self.blocks):
            if term.lengthscales is not None:
                return slice(block.start + term.lengthscales.start, block.start + term.lengthscales.stop)
        raise ValueError(f"kernel {self.kernel.name!r} has no part with lengthscales")

    def pack(self, mean: float, params: Any, noise_start: float | None = None) -> np.ndarray:
        """``theta`` from the mean constant and the kernel's params (structured as the spec says).

        Args:
            mean: the mean constant c.
            params: the kernel's params (a tuple for a sum).
            noise_start: where a learned noise starts (None: the problem's ``noise``).

        Returns:
            ``theta``, float64.
        """
        parts = params if len(self.terms) > 1 else (params,)
        theta = np.concatenate([[float(mean)], *(term.pack(prm) for term, prm in zip(self.terms, parts))])
        if self.noise_model is None:
            return theta
        return np.append(theta, self.noise_model.coordinate(self.noise if noise_start is None else noise_start))

    def unpack(self, theta: np.ndarray) -> tuple[float, Any]:
        """``(c, params)`` from ``theta``.

        Args:
            theta: the optimiser's vector.

        Returns:
            ``(c, params)``.
        """
        parts = tuple(term.unpack(theta[block]) for term, block in zip(self.terms, self.blocks))
        return float(theta[0]), parts if len(parts) > 1 else parts[0]

    def hyperparameters(self, theta: np.ndarray) -> Hyperparameters:
        """The :class:`Hyperparameters` at ``theta`` (with the problem's noise).

        Args:
            theta: the optimiser's vector.

        Returns:
            the hyperparameters.
        """
        mean, params = self.unpack(theta)
        return Hyperparameters(self.kernel, params, self.noise_at(theta), mean)

    def resample(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``theta`` with each part's prior-carrying coordinates redrawn from their prior (a retry).

        Args:
            theta: the optimiser's vector.
            rng: the random generator.

        Returns:
            the new ``theta``.
        """
        out = theta.copy()
        for term, block in zip(self.terms, self.blocks):
            out[block] = term.resample(theta[block], rng)
        return out

    def _kernel_matrix(self, theta: np.ndarray) -> tuple[np.ndarray, list[Any], list[float]]:
        """The kernel matrix with the noise, each part's state and log prior at ``theta``.

        The first part's matrix, plus the noise on the diagonal, plus the other parts' (this order
        of additions keeps the fits bit-identical to the first implementation).
        """
        t = self.y.shape[0]
        K = None
        noise = self.noise_at(theta)
        states, log_priors = [], []
        for term, block in zip(self.terms, self.blocks):
            Kp, lp, state = term.evaluate(theta[block])
            states.append(state)
            log_priors.append(lp)
            if Kp is None:
                continue
            if K is None:
                K = np.array(Kp, dtype=np.float64)
                K[np.diag_indices(t)] += noise
            else:
                K += Kp
        if K is None:
            K = noise * np.eye(t)
        return K, states, log_priors

    def objective(self, theta: np.ndarray, grad: bool = True) -> tuple[float, np.ndarray | None]:
        """``(-log marginal likelihood - log prior) / t`` and its gradient wrt ``theta``.

        Args:
            theta: the optimiser's vector.
            grad: also compute the gradient.

        Returns:
            ``(value, gradient or None)``.
        """
        y = self.y
        t = y.shape[0]
        c = float(theta[0])
        K, states, log_priors = self._kernel_matrix(theta)
        if self.noise_model is not None:
            log_priors.append(self.noise_model.log_prior(theta[-1])[0])
        L, _ = _cholesky(K)
        r = y - c
        alpha, info = lapack.dpotrs(L, r, lower=1)
        logdet = 2.0 * np.log(np.diag(L)).sum()
        value = 0.5 * r @ alpha + 0.5 * logdet + 0.5 * t * _LOG_2PI
        for lp in log_priors:
            value = value - lp
        value = value / t
        if not grad:
            return float(value), None
        Kinv, info = lapack.dpotri(L, lower=1)
        if info != 0:
            raise NotPositiveDefinite(f"dpotri failed (info={info})")
        # dpotri fills the lower triangle; mirror it (one pass, mask cached per archive size)
        Kinv = np.where(_lower_mask(t), Kinv, Kinv.T)
        # d(-log N)/dK_ab = -W_ab / 2 with W = alpha alpha^T - K^-1; each part takes it from here
        W = np.outer(alpha, alpha) - Kinv
        g = np.empty(theta.shape[0])
        g[0] = -alpha.sum()  # d(-log N)/dc = -1^T alpha
        for term, block, state in zip(self.terms, self.blocks, states):
            g[block] = term.gradient(theta[block], W, state)
        if self.noise_model is not None:
            g[-1] = self.noise_model.gradient(theta[-1], float(np.trace(W)))
        return float(value), g / t


@dataclass(frozen=True)
class MapFit:
    """Result of :func:`map_fit`: ``theta`` (c, then each part's coordinates), objective value, runs made, success.

    Attributes:
        theta: the optimum (c, then each part's coordinates).
        value: the objective there (nan on failure).
        attempts: L-BFGS-B runs made.
        success: whether a run succeeded.
        message: the optimiser's last message.
        n_evaluations: objective evaluations over all runs.
    """

    theta: np.ndarray
    value: float
    attempts: int
    success: bool
    message: str
    n_evaluations: int


def _run(problem: MapProblem, theta0: np.ndarray, options: dict | None) -> tuple[np.ndarray, float, bool, str, int]:
    res = minimize(problem.objective, theta0, jac=True, method="L-BFGS-B", options=options)
    msg = res.message if isinstance(res.message, str) else res.message.decode("ascii")
    ok = bool(res.success) or _STOPPED.search(msg) is not None
    if not np.all(np.isfinite(res.x)) or not np.isfinite(res.fun):
        ok = False
    return np.asarray(res.x, dtype=np.float64), float(res.fun), ok, msg, int(res.nfev)


def map_fit(
    problem: MapProblem,
    theta0: np.ndarray,
    rng: np.random.Generator,
    max_attempts: int = MAX_FIT_ATTEMPTS,
    options: dict | None = None,
) -> MapFit:
    """L-BFGS-B from ``theta0``, retried on a failure status or an indefinite matrix.

    A retry starts from ``theta0`` with the prior-carrying coordinates (the lengthscales) resampled
    from their prior (``rng``), at most ``max_attempts`` runs.

    Args:
        problem: the MAP problem.
        theta0: the starting vector.
        rng: the random generator of the retries.
        max_attempts: the most L-BFGS-B runs.
        options: L-BFGS-B options (None: scipy's defaults).

    Returns:
        the :class:`MapFit`.
    """
    theta = np.asarray(theta0, dtype=np.float64).copy()
    last_msg, n_eval = "", 0
    for attempt in range(1, int(max_attempts) + 1):
        if attempt > 1:
            theta = problem.resample(theta0, rng)
        try:
            x, value, ok, msg, nfev = _run(problem, theta, options)
        except np.linalg.LinAlgError as exc:
            last_msg, ok = f"{type(exc).__name__}: {exc}", False
            continue
        n_eval += nfev
        last_msg = msg
        if ok:
            return MapFit(x, value, attempt, True, msg, n_eval)
    return MapFit(theta0, float("nan"), int(max_attempts), False, last_msg, n_eval)


def fit_map_numpy(
    kernel: KernelSpec,
    X: np.ndarray,
    y_std: np.ndarray,
    *,
    noise: float,
    seed: int,
    init: Hyperparameters | None = None,
    max_attempts: int = MAX_FIT_ATTEMPTS,
    options: dict | None = None,
) -> tuple[Hyperparameters | None, MapFit]:
    """MAP hyperparameters of ``kernel`` for bool[t, p] archive ``X`` and standardised values ``y_std``.

    Starts from the spec's initial values (docs/math.md §3, §15), or from ``init`` (a warm start:
    :meth:`~shapleig.gp.kernels.spec.KernelSpec.warm_params`, e.g. a shared kernel starts from the
    geometric mean of ``init``'s lengthscales).

    Args:
        kernel: the kernel spec.
        X: ``bool[t, p]``, the archive.
        y_std: ``float64[t]`` standardised values.
        noise: the fixed noise variance sigma^2 (standardised).
        seed: the seed of the retries' resampling.
        init: a warm start (None: the spec's initial values).
        max_attempts: the most L-BFGS-B runs.
        options: L-BFGS-B options (None: scipy's defaults, as botorch's fit).

    Returns:
        ``(hyper or None on failure, MapFit)``; shared lengthscales are returned repeated p times.
    """
    p = X.shape[1]
    problem = MapProblem.build(kernel, X, y_std, noise)
    start = kernel.initial_params(p) if init is None else kernel.warm_params(init.params, p)
    theta0 = problem.pack(0.0 if init is None else init.mean_constant, start,
                          None if init is None or not problem.learn_noise else init.noise)
    fit = map_fit(problem, theta0, np.random.default_rng(int(seed)), max_attempts, options)
    if not fit.success:
        return None, fit
    return problem.hyperparameters(fit.theta), fit
