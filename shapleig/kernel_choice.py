"""The surrogate chosen from the data: fit the candidate kernels, weigh them by their evidence.

``surrogate="auto"`` (the default) fits two Hamming-kernel GPs at every refit, one lengthscale
shared by all players and one per player (ARD), and weighs them by a BIC approximation of the
log marginal likelihood: ``log p(y | kernel) ~ -t * objective - (d / 2) log t``, with ``objective``
the MAP objective per observation and ``d`` the kernel's number of hyperparameters (p + 2 or 3).
The shared kernel wins the small budgets, where p lengthscales cannot be identified from ~2p
values; ARD takes over once the data show that a few players dominate. ``"ard"`` and
``"shared"`` fit only that kernel (weight 1).

Each fit also carries a calibration factor for its posterior variances: the leave-one-out
estimate of the outputscale (Bachoc 2013), ``tau = mean_i z_i^2`` with ``z_i`` the standardised
LOO residual of observation i, computed in closed form from ``K_sigma^-1``. MAP hyperparameters
with a fixed 1e-6 noise make the GP overconfident on games it describes imperfectly; the LOO
residuals show by how much, and scaling the Shapley covariance by ``tau`` corrects it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from .esp import hamming_kernel
from .posterior import Hyperparameters, cholesky_with_jitter, standardize
from .surrogate import FitResult, fit_hyperparameters

SURROGATES = ("auto", "shared", "ard")
# Kernels fitted per surrogate mode: name -> ard flag.
_KERNELS = {"auto": (("shared", False), ("ard", True)), "shared": (("shared", False),), "ard": (("ard", True),)}
# LOO residuals are computed on at most this many observations (a seeded subset beyond it):
# diag(K^-1) costs O(t^3), and the calibration only needs a mean of squares.
MAX_LOO_POINTS = 1000
# The calibration factor is clipped to this range: a few LOO residuals of an interpolating GP
# can be extreme, and one factor rescales the whole covariance.
TAU_RANGE = (1e-2, 1e4)


def check_surrogate(surrogate: str) -> str:
    """Validate a surrogate mode name (``"auto"``, ``"shared"`` or ``"ard"``)."""
    if surrogate not in SURROGATES:
        raise ValueError(f"unknown surrogate {surrogate!r}; choose one of {SURROGATES}")
    return surrogate


def resolve_surrogate(surrogate: str | None, ard: bool | None) -> str:
    """The surrogate mode from the two ways of asking for it (``ard`` is the older switch).

    ``ard=True`` means ``"ard"``, ``ard=False`` means ``"shared"``; giving both with different
    meanings is an error. Neither gives the default ``"auto"``.
    """
    if ard is not None and not isinstance(ard, (bool, np.bool_)):
        raise ValueError(f"ard must be True (one lengthscale per player) or False (one shared), got {ard!r}")
    from_ard = None if ard is None else ("ard" if ard else "shared")
    if surrogate is None:
        return from_ard or "auto"
    check_surrogate(surrogate)
    if from_ard is not None and from_ard != surrogate:
        raise ValueError(f"surrogate={surrogate!r} contradicts ard={ard!r}; give one of the two")
    return surrogate


def surrogate_ard(surrogate: str) -> bool | None:
    """The ``ard`` switch equivalent to a surrogate mode: True (ARD), False (shared), None (auto)."""
    return {"ard": True, "shared": False}.get(check_surrogate(surrogate))


@dataclass(frozen=True)
class KernelFit:
    """One fitted kernel of a surrogate mode.

    kernel:      ``"shared"`` or ``"ard"``.
    fit:         the MAP fit (hyperparameters in standardised units, objective, timings).
    log_evidence: BIC approximation of ``log p(y | kernel)`` (nats); -inf if the fit failed.
    weight:      posterior model probability among the mode's kernels (sums to 1).
    tau:         LOO calibration factor for the posterior variances (1 = no change).
    """

    kernel: str
    fit: FitResult
    log_evidence: float
    weight: float
    tau: float

    @property
    def hyper(self) -> Hyperparameters:
        return self.fit.hyper


def n_hyperparameters(n_players: int, ard: bool) -> int:
    """Fitted hyperparameters of a kernel: lengthscales (p or 1), outputscale, mean constant."""
    return (n_players if ard else 1) + 2


def bic_log_evidence(fit: FitResult, n_obs: int, n_params: int) -> float:
    """``-t * objective - (d/2) log t``; -inf when the fit failed or has no objective."""
    if not fit.success or not np.isfinite(fit.neg_mll):
        return -np.inf
    return float(-n_obs * fit.neg_mll - 0.5 * n_params * np.log(n_obs))


def evidence_weights(log_evidence: np.ndarray) -> np.ndarray:
    """Normalised ``exp(log_evidence)``; uniform if every entry is -inf."""
    log_evidence = np.asarray(log_evidence, dtype=np.float64)
    if not np.isfinite(log_evidence).any():
        return np.full(log_evidence.shape, 1.0 / log_evidence.size)
    w = np.exp(log_evidence - np.max(log_evidence[np.isfinite(log_evidence)]))
    w[~np.isfinite(w)] = 0.0
    return w / w.sum()


def loo_residuals(hyper: Hyperparameters, X: np.ndarray, y: np.ndarray,
                  rng: np.random.Generator | None = None) -> np.ndarray:
    """Standardised leave-one-out residuals ``z_i = [K^-1 r]_i / sqrt([K^-1]_ii)``, float64[m].

    ``K = K(X, X) + sigma^2 I`` and ``r = y_tilde - c`` in standardised units (closed form, no
    refits; the hyperparameters stay those fitted on all points). Beyond ``MAX_LOO_POINTS``
    observations a subset drawn by ``rng`` is used (m = that many).
    """
    yt, _, _ = standardize(y)
    t = yt.shape[0]
    K = hamming_kernel(X, X, hyper.lengthscales, hyper.outputscale) + hyper.noise * np.eye(t)
    L, _ = cholesky_with_jitter(K)
    idx = np.arange(t)
    if t > MAX_LOO_POINTS:
        rng = rng if rng is not None else np.random.default_rng(0)
        idx = np.sort(rng.choice(t, MAX_LOO_POINTS, replace=False))
    # K^-1 e_i = L^-T L^-1 e_i; [K^-1]_ii = ||L^-1 e_i||^2.
    E = np.zeros((t, idx.size))
    E[idx, np.arange(idx.size)] = 1.0
    Linv_E = solve_triangular(L, E, lower=True, check_finite=False)
    q_diag = np.einsum("tm,tm->m", Linv_E, Linv_E)
    alpha = solve_triangular(L.T, solve_triangular(L, yt - hyper.mean_constant, lower=True, check_finite=False),
                             lower=False, check_finite=False)
    return alpha[idx] / np.sqrt(q_diag)


def loo_calibration(hyper: Hyperparameters, X: np.ndarray, y: np.ndarray,
                    rng: np.random.Generator | None = None) -> float:
    """LOO estimate of the outputscale relative to the fitted one: ``mean z_i^2``, clipped."""
    z = loo_residuals(hyper, X, y, rng)
    if z.size == 0 or not np.all(np.isfinite(z)):
        return 1.0
    return float(np.clip(np.mean(z**2), *TAU_RANGE))


def fit_kernels(
    X: np.ndarray,
    y: np.ndarray,
    surrogate: str,
    *,
    seed: int,
    noise: float,
    noise_convention: str,
    previous: list[KernelFit] | None = None,
    warm_start: bool = False,
    calibrate: bool = True,
    engine: str | None = None,
) -> list[KernelFit]:
    """Fit every kernel of ``surrogate`` to ``X`` (bool[t, p]), ``y`` (float64[t]); return them weighted.

    ``previous`` (the last fits) serve as fallbacks when a fit fails and as warm starts when
    ``warm_start``. ``calibrate=False`` keeps tau = 1 (the published read-out). ``engine`` picks
    the fitting engine of :func:`~shapleig.surrogate.fit_hyperparameters` when it offers several.
    """
    check_surrogate(surrogate)
    t, p = X.shape
    prev = {k.kernel: k.hyper for k in previous or ()}
    fits: list[FitResult] = []
    names: list[str] = []
    evidence: list[float] = []
    extra = {} if engine is None else {"engine": engine}
    for i, (name, ard) in enumerate(_KERNELS[surrogate]):
        fit = fit_hyperparameters(
            X, y, seed=int(seed) + i, noise=noise, noise_convention=noise_convention,
            warm_start=prev.get(name) if warm_start else None, fallback=prev.get(name),
            threads=None, ard=ard, **extra,
        )
        fits.append(fit)
        names.append(name)
        evidence.append(bic_log_evidence(fit, t, n_hyperparameters(p, ard)))
    weights = evidence_weights(np.asarray(evidence)) if len(fits) > 1 else np.ones(1)
    rng = np.random.default_rng(int(seed))
    out = []
    for name, fit, ev, w in zip(names, fits, evidence, weights):
        tau = loo_calibration(fit.hyper, X, y, rng) if calibrate else 1.0
        out.append(KernelFit(name, fit, float(ev), float(w), tau))
    return out
