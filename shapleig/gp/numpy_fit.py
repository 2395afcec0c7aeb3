"""MAP fit of the Hamming-kernel GP in numpy/scipy with an analytic gradient (docs/math.md §3).

Same model and objective as the gpytorch fit in :mod:`shapleig.gp.fitting` (``engine="gpytorch"``):

- ``k(z, z') = s exp(-(1/p) sum_j [z_j != z'_j] / l_j)`` with p lengthscales (ARD) or one shared;
- ``l = 1e-6 + softplus(raw_l)``, ``s = softplus(raw_s)``, a free constant mean c;
- y standardised as botorch ``Standardize(m=1)``, fixed noise sigma^2 in standardised units;
- objective ``(-log N(y~; c, K + sigma^2 I) - log prior(l)) / t`` with the prior
  ``LogNormal(sqrt2 + ln(p)/2, sqrt3)`` evaluated on l (no Jacobian of the softplus);
- L-BFGS-B (scipy defaults, as botorch's ``fit_gpytorch_mll_scipy``) over
  ``theta = (c, raw_s, raw_l)`` from the docs/math.md §3 initial values (or a warm start); a run that ends in a
  failure status or a non-positive-definite matrix is retried from the initial values with the
  lengthscales resampled from their prior, at most ``max_attempts`` runs (botorch's fallback).

The gradient comes from one Cholesky factor and ``K^-1`` (``dpotri``):
``d log N / d theta = 0.5 tr((alpha alpha^T - K^-1) dK/dtheta)``. For the lengthscales the Hamming
structure gives ``dK/dl_j = K_s o [z_j != z'_j] / (p l_j^2)`` (``K_s`` the noise-free kernel), so with
``G = (alpha alpha^T - K^-1) o K_s`` (symmetric) all p lengthscale derivatives need
``sum_ab G_ab [x_aj != x_bj] = 2 x_j^T (G 1) - 2 (X^T G X)_jj``: one ``t x t`` by ``t x p`` product.
A fit step costs O(t^3 / 3) (Cholesky) + O(t^3 / 3) (inverse) + O(t^2 p); the shared kernel reuses
the integer Hamming distance matrix, O(t^2) per step on top of the factorisations.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack
from scipy.optimize import minimize

from shapleig.gp.posterior import Hyperparameters

_LOG_2PI = math.log(2.0 * math.pi)
_MIN_LENGTHSCALE = 1e-6
# The size kernel (docs/math.md §15) starts here, in standardised units: jumps of about one standard
# deviation of the values, from which the likelihood moves them either way (their profile is
# unimodal), and a size trend of half the values' variance over half the size range.
INITIAL_JUMP = 1.0
INITIAL_SIZE_VARIANCE = 0.5
INITIAL_SIZE_LENGTHSCALE = 0.5
# the trend's lengthscale (normalised size units) has a normal prior on its log: (mean, sd)
SIZE_LENGTHSCALE_PRIOR = (math.log(0.5), 1.0)
# |log(size_lengthscale)| is clipped here (e^8 ~ 3000 size ranges: flat; e^-8: white noise over
# sizes), so a line search that strays far cannot overflow
_LOG_SIZE_BOUND = 8.0
# a warm start from a (near) zero variance packs this instead: softplus never reaches 0, and from far
# below it the gradient in the raw coordinate (the sigmoid) is too small to move it again
_MIN_SIZE_VARIANCE = 1e-3
# gpytorch's psd_safe_cholesky for float64: jitter 1e-8, tenfold per failure; the surrogate raises
# the number of tries to 6.
_JITTER0 = 1e-8
_JITTER_TRIES = 6
# scipy messages of an L-BFGS-B run stopped by its iteration/evaluation limits (botorch's regex,
# both scipy spellings): botorch treats these as a (stopped) success, any other failure retries.
_STOPPED = re.compile("TOTAL NO. (of|OF) (ITERATIONS REACHED LIMIT|(f AND g|F,G) EVALUATIONS EXCEEDS LIMIT)")


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + e^x)`` without overflow (float64, elementwise)."""
    x = np.asarray(x, dtype=np.float64)
    return np.logaddexp(0.0, x)


def inverse_softplus(y: np.ndarray) -> np.ndarray:
    """``log(e^y - 1)`` for y > 0, stable for large and tiny y (gpytorch's inverse transform)."""
    y = np.asarray(y, dtype=np.float64)
    return y + np.log(-np.expm1(-y))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -np.asarray(x, dtype=np.float64)))


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
    """The MAP objective on one archive: ``X`` (float64[t, p] of 0/1), standardised ``y`` (float64[t]).

    ``ard``: p lengthscales (True) or one shared (False); ``noise``: fixed sigma^2 (standardised).
    ``hamming`` (shared kernel only): float64[t, t] integer mismatch counts, computed once.
    ``spread`` (ARD only): None for independent LogNormal lengthscales; a positive s adds the
    shrinkage factor ``exp(-sum_j (log l_j - mean log l)^2 / (2 s^2))`` to the prior (normalised:
    docs/math.md §13), which pulls the lengthscales toward their geometric mean; s -> 0 is the
    shared kernel, s -> inf free ARD.
    """

    X: np.ndarray
    y: np.ndarray
    noise: float
    ard: bool
    prior_loc: float
    prior_scale: float
    hamming: np.ndarray | None
    spread: float | None = None
    # the size kernel (docs/math.md §15): the extremes (0 for ∅, 1 for N) in the archive whose jump
    # variance is fitted, whether the size trend (variance and lengthscale) is, and the flat index
    # |x_a| (p+1) + |x_b| of every pair of archive rows, int64[t*t] (None without a size kernel)
    jump_kinds: tuple[int, ...] = ()
    size_trend: bool = False
    sizes: np.ndarray | None = None

    @classmethod
    def build(cls, X: np.ndarray, y_std: np.ndarray, noise: float, ard: bool,
              spread: float | None = None, jumps: bool = False, size_trend: bool = False) -> "MapProblem":
        from shapleig.gp.priors import lengthscale_prior_params

        Xf = np.ascontiguousarray(X, dtype=np.float64)
        t, p = Xf.shape
        loc, scale = lengthscale_prior_params(p)
        hamming = None
        if not ard:
            hamming = Xf @ (1.0 - Xf).T
            hamming += hamming.T
        if spread is not None and not (ard and np.isfinite(spread) and spread > 0):
            raise ValueError(f"spread must be a positive finite number and needs ard=True, got {spread!r}")
        size = np.asarray(X, dtype=bool).sum(axis=1)
        # an extreme that is not in the archive has no jump to fit
        kinds = tuple(k for k, m in ((0, 0), (1, p)) if jumps and np.any(size == m))
        pairs = None
        if kinds or size_trend:
            pairs = (size[:, None] * (p + 1) + size[None, :]).ravel()
        return cls(Xf, np.asarray(y_std, dtype=np.float64), float(noise), bool(ard), loc, scale, hamming,
                   None if spread is None else float(spread), kinds, bool(size_trend), pairs)

    @property
    def n_lengthscales(self) -> int:
        return self.X.shape[1] if self.ard else 1

    @property
    def n_size_params(self) -> int:
        """Fitted parameters of the size kernel: variance and lengthscale of the trend, the jumps."""
        return 2 * int(self.size_trend) + len(self.jump_kinds)

    @property
    def n_params(self) -> int:
        return 2 + self.n_lengthscales + self.n_size_params

    def unpack(self, theta: np.ndarray) -> tuple[float, float, np.ndarray]:
        """``(c, s, l)`` from ``theta = (c, raw_s, raw_l, size parameters)``; l has 1 (shared) or p entries."""
        k = self.n_lengthscales
        return float(theta[0]), float(softplus(theta[1])), _MIN_LENGTHSCALE + softplus(theta[2 : 2 + k])

    def unpack_size(self, theta: np.ndarray) -> tuple[float, float, float, float]:
        """``(empty_jump, grand_jump, size_variance, size_lengthscale)`` from ``theta`` (zeros, and the
        initial lengthscale, for what is not fitted). Layout after the lengthscales:
        ``(raw_variance, log_lengthscale)`` of the trend, then the raw jumps (softplus)."""
        rest = theta[2 + self.n_lengthscales:]
        variance, length = 0.0, INITIAL_SIZE_LENGTHSCALE
        if self.size_trend:
            variance, length = float(softplus(rest[0])), float(math.exp(min(max(rest[1], -_LOG_SIZE_BOUND),
                                                                            _LOG_SIZE_BOUND)))
            rest = rest[2:]
        jumps = [0.0, 0.0]
        for kind, raw in zip(self.jump_kinds, rest):
            jumps[kind] = float(softplus(raw))
        return jumps[0], jumps[1], variance, length

    def pack(self, mean: float, outputscale: float, lengthscales: np.ndarray,
             size: tuple[float, float, float, float] | None = None) -> np.ndarray:
        """``theta`` from values; ``size``: ``(empty_jump, grand_jump, size_variance, size_lengthscale)``
        (None: the initial values). Near-zero variances pack as ``_MIN_SIZE_VARIANCE``."""
        ls = np.asarray(lengthscales, dtype=np.float64).reshape(-1)
        raw_l = inverse_softplus(np.maximum(ls - _MIN_LENGTHSCALE, 1e-300))
        if size is None:
            size = (INITIAL_JUMP, INITIAL_JUMP, INITIAL_SIZE_VARIANCE, INITIAL_SIZE_LENGTHSCALE)
        raw = []
        if self.size_trend:
            raw += [float(inverse_softplus(max(float(size[2]), _MIN_SIZE_VARIANCE))), math.log(float(size[3]))]
        raw += [float(inverse_softplus(max(float(size[kind]), _MIN_SIZE_VARIANCE))) for kind in self.jump_kinds]
        return np.concatenate([[float(mean)], [float(inverse_softplus(outputscale))], raw_l, raw])

    def _size_kernel(self, size: tuple[float, float, float, float]
                     ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, float]:
        """The size kernel over sizes (float64[p+1, p+1]) of ``size`` (:meth:`unpack_size`), the
        trend's correlation R and squared scaled size differences D2 (None without a trend), and the
        log prior of the trend's lengthscale."""
        from shapleig.gp.posterior import size_kernel_matrix

        p = self.X.shape[1]
        ej, gj, sv, sl = size
        KS = size_kernel_matrix(p, ej, gj, 0.0, sl)
        R = D2 = None
        lp = 0.0
        if self.size_trend:
            sizes = np.arange(p + 1, dtype=np.float64)
            D2 = ((sizes[:, None] - sizes[None, :]) / (sl * p)) ** 2
            R = np.exp(-0.5 * D2)
            KS = KS + sv * R
            z = (math.log(sl) - SIZE_LENGTHSCALE_PRIOR[0]) / SIZE_LENGTHSCALE_PRIOR[1]
            lp = -0.5 * z**2  # normal prior on log(size_lengthscale), up to a constant
        return KS, R, D2, lp

    def _distance(self, ls: np.ndarray) -> np.ndarray:
        """``(1/p) sum_j [x_aj != x_bj] / l_j``, float64[t, t]."""
        p = self.X.shape[1]
        if not self.ard:
            return self.hamming * (1.0 / (p * ls[0]))
        w = 1.0 / (p * ls)
        Xw = self.X * w
        d = Xw @ (1.0 - self.X).T
        return d + d.T

    def log_prior(self, ls: np.ndarray) -> tuple[float, np.ndarray]:
        """Log density of the lengthscales (over l, summed) and its derivative wrt each l.

        Independent LogNormal(loc, scale) per lengthscale; with a ``spread`` s the density over
        u = log l becomes Gaussian with precision ``I / scale^2 + (I - 11^T / p) / s^2``, whose
        normaliser exceeds the independent one by ``((p - 1) / 2) log(1 + scale^2 / s^2)``.
        """
        u = np.log(ls)
        z = (u - self.prior_loc) / self.prior_scale
        logp = float(np.sum(-0.5 * z**2 - u - math.log(self.prior_scale) - 0.5 * _LOG_2PI))
        dlogp = -(z / self.prior_scale + 1.0) / ls
        if self.spread is not None and ls.size > 1:
            dev = u - u.mean()
            s2 = self.spread**2
            logp += float(-0.5 * np.sum(dev**2) / s2
                          + 0.5 * (ls.size - 1) * math.log1p(self.prior_scale**2 / s2))
            # the mean's own derivative cancels: sum_j dev_j = 0
            dlogp = dlogp - dev / (s2 * ls)
        return logp, dlogp

    def objective(self, theta: np.ndarray, grad: bool = True) -> tuple[float, np.ndarray | None]:
        """``(-log marginal likelihood - log prior) / t`` and its gradient wrt ``theta``."""
        X, y = self.X, self.y
        t, p = X.shape
        c, s, ls = self.unpack(theta)
        k = self.n_lengthscales
        E = np.exp(-self._distance(ls))
        Ks = s * E
        K = Ks.copy()
        K[np.diag_indices(t)] += self.noise
        size_lp = 0.0
        if self.sizes is not None:
            size = self.unpack_size(theta)
            KS, R, D2, size_lp = self._size_kernel(size)
            K += KS.ravel()[self.sizes].reshape(t, t)
        L, _ = _cholesky(K)
        r = y - c
        alpha, info = lapack.dpotrs(L, r, lower=1)
        logdet = 2.0 * np.log(np.diag(L)).sum()
        lp, dlp = self.log_prior(ls)
        value = (0.5 * r @ alpha + 0.5 * logdet + 0.5 * t * _LOG_2PI - lp - size_lp) / t
        if not grad:
            return float(value), None
        Kinv, info = lapack.dpotri(L, lower=1)
        if info != 0:
            raise NotPositiveDefinite(f"dpotri failed (info={info})")
        # dpotri fills the lower triangle; mirror it (one pass, mask cached per archive size)
        Kinv = np.where(_lower_mask(t), Kinv, Kinv.T)
        # G = (alpha alpha^T - K^-1) o K_s: d(log N)/d(anything in K_s) = 0.5 sum G o dlog(K_s)
        W = np.outer(alpha, alpha) - Kinv
        GE = W * E
        G = s * GE
        g = np.empty(theta.shape[0])
        g[0] = -alpha.sum()  # d(-log N)/dc = -1^T alpha
        g[1] = -0.5 * GE.sum() * _sigmoid(theta[1])  # dK_s/ds = K_s / s = E (no division: s may underflow)
        if self.ard:
            # sum_ab G_ab [x_aj != x_bj] = 2 x_j^T (G 1) - 2 (X^T G X)_jj
            mismatch = 2.0 * (X.T @ G.sum(axis=1)) - 2.0 * np.einsum("aj,aj->j", G @ X, X)
        else:
            mismatch = np.array([np.einsum("ab,ab->", G, self.hamming)])
        dlog_l = -0.5 * mismatch / (p * ls**2)  # d(-log N)/dl_j
        g[2 : 2 + k] = (dlog_l - dlp) * _sigmoid(theta[2 : 2 + k])
        if self.sizes is not None:
            # d(-log N)/d(size kernel entry (a, b)) = -0.5 [S^T (alpha alpha^T - K^-1) S]_ab, S the
            # one-hot sizes: W summed over the row pairs of each size pair
            q = p + 1
            Ws = np.bincount(self.sizes, weights=W.ravel(), minlength=q * q).reshape(q, q)
            i = 2 + k
            if self.size_trend:
                sv = softplus(theta[i])
                g[i] = -0.5 * float(np.sum(Ws * R)) * _sigmoid(theta[i])
                # d/d log(sl) of sv R = sv R o D2; the prior adds -z / sd
                z = (math.log(size[3]) - SIZE_LENGTHSCALE_PRIOR[0]) / SIZE_LENGTHSCALE_PRIOR[1]
                inside = abs(theta[i + 1]) < _LOG_SIZE_BOUND  # clipped beyond: a flat objective
                g[i + 1] = (-0.5 * sv * float(np.sum(Ws * R * D2)) + z / SIZE_LENGTHSCALE_PRIOR[1]) * inside
                i += 2
            for kind in self.jump_kinds:
                m = 0 if kind == 0 else p
                g[i] = -0.5 * Ws[m, m] * _sigmoid(theta[i])
                i += 1
        return float(value), g / t


@dataclass(frozen=True)
class MapFit:
    """Result of :func:`map_fit`: ``theta`` (c, raw_s, raw_l), objective value, runs made, success."""

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
    max_attempts: int = 5,
    options: dict | None = None,
) -> MapFit:
    """L-BFGS-B from ``theta0``; on a failure status or an indefinite matrix retry from ``theta0``
    with the lengthscales resampled from their prior (``rng``), at most ``max_attempts`` runs."""
    theta = np.asarray(theta0, dtype=np.float64).copy()
    last_msg, n_eval = "", 0
    for attempt in range(1, int(max_attempts) + 1):
        if attempt > 1:
            k = problem.n_lengthscales
            ls = np.exp(problem.prior_loc + problem.prior_scale * rng.standard_normal(k))
            theta = theta0.copy()
            theta[2 : 2 + k] = problem.pack(0.0, 1.0, ls)[2 : 2 + k]
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
    X: np.ndarray,
    y_std: np.ndarray,
    *,
    noise: float,
    ard: bool,
    seed: int,
    init: Hyperparameters | None = None,
    max_attempts: int = 5,
    options: dict | None = None,
    spread: float | None = None,
    jumps: bool = False,
    size_trend: bool = False,
) -> tuple[Hyperparameters | None, MapFit]:
    """MAP hyperparameters for bool[t, p] archive ``X`` and standardised values ``y_std``.

    Starts from the docs/math.md §3 initial values, or from ``init`` (warm start; a shared kernel starts from the
    geometric mean of ``init``'s lengthscales). Returns ``(hyper or None on failure, MapFit)``;
    shared lengthscales are returned repeated p times. ``spread``: the ARD shrinkage prior of
    :class:`MapProblem` (None: independent lengthscales). ``jumps``, ``size_trend``: also fit the
    jump variances of the extremes in the archive and the size trend (docs/math.md §15), from the
    initial values or ``init``'s.
    """
    from shapleig.gp.priors import initial_lengthscale

    p = X.shape[1]
    problem = MapProblem.build(X, y_std, noise, ard, spread, jumps, size_trend)
    n_ls = p if ard else 1
    if init is None:
        theta0 = problem.pack(0.0, math.log(2.0), np.full(n_ls, initial_lengthscale(p)))
    else:
        ls = np.broadcast_to(np.asarray(init.lengthscales, dtype=np.float64), (p,))
        if not ard:
            ls = np.exp(np.log(ls).mean(keepdims=True))
        theta0 = problem.pack(init.mean_constant, init.outputscale, ls,
                              init.size_parameters if init.has_size_kernel else None)
    fit = map_fit(problem, theta0, np.random.default_rng(int(seed)), max_attempts, options)
    if not fit.success:
        return None, fit
    c, s, ls = problem.unpack(fit.theta)
    return Hyperparameters(np.broadcast_to(ls, (p,)).copy(), s, float(noise), c, *problem.unpack_size(fit.theta)), fit
