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

import math
import re
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack
from scipy.optimize import minimize

from shapleig.gp.posterior import Hyperparameters

_LOG_2PI = math.log(2.0 * math.pi)
_MIN_LENGTHSCALE = 1e-6
# Jump variances (docs/math.md §15) start here, in standardised units: a jump of about one standard
# deviation of the values, from which the likelihood moves it either way (its profile is unimodal).
INITIAL_JUMP = 1.0
# a warm start from a (near) zero jump packs this instead: softplus never reaches 0, and from far
# below it the gradient in the raw coordinate (the sigmoid) is too small to move the jump again
_MIN_JUMP = 1e-3
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
    # jump kernel (docs/math.md §15): for each extreme coalition (∅, N) that is in the archive and
    # has a fitted jump, the archive row holding it; () when the plain kernel is fitted
    jump_rows: tuple[int, ...] = ()
    jump_kinds: tuple[int, ...] = ()  # 0 for ∅, 1 for N, aligned with jump_rows

    @classmethod
    def build(cls, X: np.ndarray, y_std: np.ndarray, noise: float, ard: bool,
              spread: float | None = None, jumps: bool = False) -> "MapProblem":
        from shapleig.gp.priors import lengthscale_prior_params

        Xf = np.ascontiguousarray(X, dtype=np.float64)
        loc, scale = lengthscale_prior_params(Xf.shape[1])
        hamming = None
        if not ard:
            hamming = Xf @ (1.0 - Xf).T
            hamming += hamming.T
        if spread is not None and not (ard and np.isfinite(spread) and spread > 0):
            raise ValueError(f"spread must be a positive finite number and needs ard=True, got {spread!r}")
        rows: list[int] = []
        kinds: list[int] = []
        if jumps:
            Xb = np.asarray(X, dtype=bool)
            for kind, mask in enumerate((~Xb.any(axis=1), Xb.all(axis=1))):
                hit = np.flatnonzero(mask)
                if hit.size:  # an extreme that is not in the archive has no jump to fit
                    rows.append(int(hit[0]))
                    kinds.append(kind)
        return cls(Xf, np.asarray(y_std, dtype=np.float64), float(noise), bool(ard), loc, scale, hamming,
                   None if spread is None else float(spread), tuple(rows), tuple(kinds))

    @property
    def n_lengthscales(self) -> int:
        return self.X.shape[1] if self.ard else 1

    @property
    def n_params(self) -> int:
        return 2 + self.n_lengthscales + len(self.jump_rows)

    def unpack(self, theta: np.ndarray) -> tuple[float, float, np.ndarray]:
        """``(c, s, l)`` from ``theta = (c, raw_s, raw_l, raw_jumps)``; l has 1 (shared) or p entries."""
        k = self.n_lengthscales
        return float(theta[0]), float(softplus(theta[1])), _MIN_LENGTHSCALE + softplus(theta[2 : 2 + k])

    def unpack_jumps(self, theta: np.ndarray) -> tuple[float, float]:
        """``(empty_jump, grand_jump)`` from ``theta`` (0 for an extreme without a fitted jump)."""
        out = [0.0, 0.0]
        for kind, raw in zip(self.jump_kinds, theta[2 + self.n_lengthscales:]):
            out[kind] = float(softplus(raw))
        return out[0], out[1]

    def pack(self, mean: float, outputscale: float, lengthscales: np.ndarray,
             jumps: tuple[float, float] = (INITIAL_JUMP, INITIAL_JUMP)) -> np.ndarray:
        ls = np.asarray(lengthscales, dtype=np.float64).reshape(-1)
        raw_l = inverse_softplus(np.maximum(ls - _MIN_LENGTHSCALE, 1e-300))
        raw_j = [float(inverse_softplus(max(float(jumps[kind]), _MIN_JUMP))) for kind in self.jump_kinds]
        return np.concatenate([[float(mean)], [float(inverse_softplus(outputscale))], raw_l, raw_j])

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
        Ks = s * np.exp(-self._distance(ls))
        K = Ks.copy()
        K[np.diag_indices(t)] += self.noise
        raw_j = theta[2 + k:]
        for row, raw in zip(self.jump_rows, raw_j):
            K[row, row] += softplus(raw)
        L, _ = _cholesky(K)
        r = y - c
        alpha, info = lapack.dpotrs(L, r, lower=1)
        logdet = 2.0 * np.log(np.diag(L)).sum()
        lp, dlp = self.log_prior(ls)
        value = (0.5 * r @ alpha + 0.5 * logdet + 0.5 * t * _LOG_2PI - lp) / t
        if not grad:
            return float(value), None
        Kinv, info = lapack.dpotri(L, lower=1)
        if info != 0:
            raise NotPositiveDefinite(f"dpotri failed (info={info})")
        Kinv = np.tril(Kinv)
        Kinv = Kinv + np.tril(Kinv, -1).T
        # G = (alpha alpha^T - K^-1) o K_s: d(log N)/d(anything in K_s) = 0.5 sum G o dlog(K_s)
        G = (np.outer(alpha, alpha) - Kinv) * Ks
        g = np.empty(theta.shape[0])
        g[0] = -alpha.sum()  # d(-log N)/dc = -1^T alpha
        g[1] = -0.5 * G.sum() / s * _sigmoid(theta[1])  # dK_s/ds = K_s / s
        if self.ard:
            # sum_ab G_ab [x_aj != x_bj] = 2 x_j^T (G 1) - 2 (X^T G X)_jj
            mismatch = 2.0 * (X.T @ G.sum(axis=1)) - 2.0 * np.einsum("aj,aj->j", G @ X, X)
        else:
            mismatch = np.array([np.einsum("ab,ab->", G, self.hamming)])
        dlog_l = -0.5 * mismatch / (p * ls**2)  # d(-log N)/dl_j
        g[2 : 2 + k] = (dlog_l - dlp) * _sigmoid(theta[2 : 2 + k])
        for i, (row, raw) in enumerate(zip(self.jump_rows, raw_j)):
            # dK/dj = e_row e_row^T: d(-log N)/dj = -0.5 (alpha_row^2 - [K^-1]_row,row)
            g[2 + k + i] = -0.5 * (alpha[row] ** 2 - Kinv[row, row]) * _sigmoid(raw)
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
) -> tuple[Hyperparameters | None, MapFit]:
    """MAP hyperparameters for bool[t, p] archive ``X`` and standardised values ``y_std``.

    Starts from the docs/math.md §3 initial values, or from ``init`` (warm start; a shared kernel starts from the
    geometric mean of ``init``'s lengthscales). Returns ``(hyper or None on failure, MapFit)``;
    shared lengthscales are returned repeated p times. ``spread``: the ARD shrinkage prior of
    :class:`MapProblem` (None: independent lengthscales). ``jumps``: also fit the jump variances
    of the extremes in the archive (docs/math.md §15), from :data:`INITIAL_JUMP` or ``init``'s.
    """
    from shapleig.gp.priors import initial_lengthscale

    p = X.shape[1]
    problem = MapProblem.build(X, y_std, noise, ard, spread, jumps)
    n_ls = p if ard else 1
    if init is None:
        theta0 = problem.pack(0.0, math.log(2.0), np.full(n_ls, initial_lengthscale(p)))
    else:
        ls = np.broadcast_to(np.asarray(init.lengthscales, dtype=np.float64), (p,))
        if not ard:
            ls = np.exp(np.log(ls).mean(keepdims=True))
        start = init.jumps if any(init.jumps) else (INITIAL_JUMP, INITIAL_JUMP)
        theta0 = problem.pack(init.mean_constant, init.outputscale, ls, start)
    fit = map_fit(problem, theta0, np.random.default_rng(int(seed)), max_attempts, options)
    if not fit.success:
        return None, fit
    c, s, ls = problem.unpack(fit.theta)
    j_empty, j_grand = problem.unpack_jumps(fit.theta)
    return Hyperparameters(np.broadcast_to(ls, (p,)).copy(), s, float(noise), c, j_empty, j_grand), fit
