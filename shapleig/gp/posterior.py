"""Gaussian posterior over the Shapley vector under fixed GP hyperparameters (docs/math.md §6, §7, §10).

Everything is computed in standardised output units (botorch ``Standardize(m=1)``) and reported in
raw units where stated. ``A`` (the Shapley operator) is never formed: its products with the kernel
come from :mod:`shapleig.gp.esp`. An ``operator`` (:class:`~shapleig.gp.index_esp.IndexOperator`) replaces
A by another index's operator B (Banzhaf, pairwise interactions; docs/math.md §14.4): "phi" below is
then the index vector over ``operator.terms`` (d entries instead of p).

- :class:`ShapleyPosterior` -- mean, covariance and std of phi given an archive ``(X, y)``.
- :class:`CandidatePosterior` -- value-independent state over a finite candidate pool: the
  closed-form Shapley EIG of every candidate and exact rank-one conditioning (frozen greedy
  selection and exact batches, docs/math.md §10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from shapleig.games.coalitions import as_coalition_matrix
from shapleig.gp.index_esp import IndexOperator, as_operator
from shapleig.gp.kernels import KernelSpec
from shapleig.gp.kernels.registry import hamming_hyperparameter_parts

# R is clamped below 1 so EIG = -log1p(-R) stays finite (docs/math.md §7).
_R_MAX = 1.0 - 1e-12
_MAX_JITTER_TRIES = 8


@dataclass(frozen=True, eq=False)
class Hyperparameters:
    """GP hyperparameters in standardised output units: a kernel, its values, the noise, the mean.

    Every kernel computation goes through the spec (:meth:`kernel_matrix`, :meth:`kernel_diagonal`,
    :meth:`index_columns`, :meth:`index_covariance`). Equality is exact, by value.

    >>> h = Hyperparameters.hamming([0.5, 1.0, 2.0], 1.3, noise=1e-6)
    >>> h.kernel.name, h.n_players, h.outputscale
    ('ard', 3, 1.3)

    Attributes:
        kernel: the :class:`~shapleig.gp.kernels.spec.KernelSpec` (e.g. ``Hamming(ard=True)`` or
            ``Hamming(ard=False) + SizeKernel(trend=True)``).
        params: its values, structured as the spec says (:class:`~shapleig.gp.kernels.HammingParams`; for a
            sum, a tuple with one entry per part, e.g. ``(HammingParams(...), SizeParams(...))``).
        noise: the observation-noise variance sigma^2 (fixed unless a fit learns it).
        mean_constant: the constant prior mean c.
    """

    kernel: KernelSpec
    params: Any
    noise: float
    mean_constant: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.kernel, KernelSpec):
            raise TypeError(f"kernel must be a KernelSpec, got {type(self.kernel).__name__}")
        object.__setattr__(self, "params", self.kernel.check_params(self.params))
        for name in ("noise", "mean_constant"):
            value = float(getattr(self, name))
            if not np.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value}")
            object.__setattr__(self, name, value)
        if self.noise < 0:
            raise ValueError(f"noise must be non-negative, got {self.noise}")
        if self.kernel.n_players(self.params) is None:
            raise ValueError(f"the params of kernel {self.kernel.name!r} do not say how many players they are for")

    @classmethod
    def hamming(cls, lengthscales: Any, outputscale: float, noise: float, mean_constant: float = 0.0, *,
                ard: bool = True) -> "Hyperparameters":
        """The plain Hamming kernel's hyperparameters.

        Args:
            lengthscales: float64[p] lengthscales.
            outputscale: the outputscale s.
            noise: the noise variance sigma^2.
            mean_constant: the constant prior mean c.
            ard: the kernel variant (``Hamming(ard=...)``); it only says how a fit from these values would
                count its parameters, the lengthscales are kept as given.

        Returns:
            the :class:`Hyperparameters` of a :class:`~shapleig.gp.kernels.hamming.Hamming` kernel.
        """
        spec, params = hamming_hyperparameter_parts(lengthscales, outputscale, per_player=ard)
        return cls(spec, params, noise, mean_constant)

    @classmethod
    def hamming_correlation(cls, n_players: int, correlation: float, outputscale: float, noise: float) -> "Hyperparameters":
        """A shared-lengthscale Hamming kernel whose correlation falls by ``correlation`` per mismatched player.

        The shared lengthscale ``l`` solves ``exp(-1 / (p l)) = correlation``: two coalitions that
        differ in d players correlate ``correlation ** d``. A small ``correlation`` is a rough game
        (high orders alive); the probe kernel and the rough read-out family are such kernels.

        Args:
            n_players: the number of players p.
            correlation: the correlation per mismatched player, in (0, 1).
            outputscale: the outputscale s.
            noise: the noise variance sigma^2.

        Returns:
            the :class:`Hyperparameters` (mean 0, ``ard=False``).
        """
        if not 0.0 < correlation < 1.0:
            raise ValueError(f"correlation must be in (0, 1), got {correlation}")
        lengthscale = 1.0 / (n_players * np.log(1.0 / correlation))
        return cls.hamming(np.full(n_players, lengthscale), outputscale, noise=noise, ard=False)

    @property
    def n_players(self) -> int:
        """The number of players (from the params)."""
        return int(self.kernel.n_players(self.params))

    def part(self, kind: type) -> Any | None:
        """The params of the first part whose params are a ``kind`` (e.g. ``SizeParams``), or None.

        Args:
            kind: a params class, e.g. ``SizeParams``.

        Returns:
            the params, or None.
        """
        parts = self.params if isinstance(self.params, tuple) else (self.params,)
        return next((prm for prm in parts if isinstance(prm, kind)), None)

    @property
    def lengthscales(self) -> np.ndarray:
        """The Hamming-type part's lengthscales, float64[p] (read-only)."""
        return self._hamming().lengthscales

    @property
    def outputscale(self) -> float:
        """The Hamming-type part's outputscale s."""
        return self._hamming().outputscale

    def _hamming(self) -> Any:
        # the first part with lengthscales and an outputscale (the Hamming kernel, or a kernel of its family)
        parts = self.params if isinstance(self.params, tuple) else (self.params,)
        found = next((prm for prm in parts if hasattr(prm, "lengthscales") and hasattr(prm, "outputscale")), None)
        if found is None:
            raise AttributeError(f"kernel {self.kernel.name!r} has no part with lengthscales and an outputscale")
        return found

    def describe(self) -> dict[str, Any]:
        """The kernel's values as plain numbers (for ``info``), plus the mean constant.

        Returns:
            ``{name: value}``.
        """
        return {**self.kernel.describe(self.params), "mean_constant": self.mean_constant}

    def with_noise(self, noise: float) -> "Hyperparameters":
        """The same kernel with another noise variance.

        Args:
            noise: the new noise variance.

        Returns:
            a new :class:`Hyperparameters`.
        """
        return Hyperparameters(self.kernel, self.params, noise, self.mean_constant)

    def kernel_matrix(self, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """The prior covariance ``float64[m1, m2]`` between coalitions (standardised units).

        Args:
            Z1: ``bool[m1, p]``.
            Z2: ``bool[m2, p]``.

        Returns:
            float64[m1, m2].
        """
        return self.kernel.matrix(self.params, Z1, Z2)

    def kernel_diagonal(self, Z: np.ndarray) -> np.ndarray:
        """The prior variances ``k(z, z)`` of coalitions ``Z`` (bool[m, p]), float64[m].

        Args:
            Z: ``bool[m, p]``.

        Returns:
            float64[m].
        """
        return self.kernel.diagonal(self.params, Z)

    def index_columns(self, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """``B' k(., Z)``: float64[d, m], the prior covariance of the index with f(Z).

        Args:
            operator: the index operator ``B'``.
            Z: ``bool[m, p]``.

        Returns:
            float64[d, m].
        """
        return self.kernel.index_columns(self.params, operator, Z)

    def index_covariance(self, operator: IndexOperator) -> np.ndarray:
        """``B' K B'^T``: float64[d, d], the prior covariance of the index vector.

        Args:
            operator: the index operator ``B'``.

        Returns:
            float64[d, d].
        """
        return self.kernel.index_covariance(self.params, operator)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hyperparameters):
            return NotImplemented
        return (self.kernel == other.kernel and self.params == other.params
                and (self.noise, self.mean_constant) == (other.noise, other.mean_constant))

    def __hash__(self) -> int:
        return hash((self.kernel, self.params, self.noise, self.mean_constant))


def standardize(y: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(y_tilde, y_mean, y_scale)`` as botorch ``Standardize(m=1)``, but scale-free.

    ``y_scale`` is the Bessel-corrected sample std however small or large it is (botorch's
    ``Standardize`` replaces a std below 1e-8 by 1, which breaks the invariance
    ``estimate(c * v + shift) == c * estimate(v)`` for games in small units). It is computed on
    ``y`` divided by its largest deviation, so values up to the float limit neither overflow nor
    underflow. Undefined (fewer than two values) or zero (all values equal): the largest ``|y|``,
    or 1 if that is 0, so equal values standardise to 0 in any units. An empty ``y`` gives mean 0
    and scale 1. Non-finite values are refused with ``ValueError``.

    Args:
        y: raw values float64[t].

    Returns:
        ``(y_tilde, y_mean, y_scale)``.
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if y.shape[0] == 0:
        return y.copy(), 0.0, 1.0
    if not np.all(np.isfinite(y)):
        raise ValueError("standardize: the values are not all finite")
    big = float(np.max(np.abs(y)))
    if big == 0.0:
        return np.zeros_like(y), 0.0, 1.0
    mean = float(np.mean(y / big)) * big  # no overflow of the sum near the float limit
    dev = y - mean
    spread = float(np.max(np.abs(dev)))
    if y.shape[0] > 1 and spread > 0.0 and np.isfinite(spread):
        scale = float(np.std(dev / spread, ddof=1)) * spread
    else:
        scale = big
    if not (scale > 0.0 and np.isfinite(scale)):  # a subnormal spread: treat as equal values
        scale = big
    return dev / scale, mean, scale


def cholesky_with_jitter(K: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of symmetric ``K`` and the diagonal jitter that was needed (0 if none).

    Jitter starts at 1e-10 times the mean diagonal and grows tenfold per failure.

    Args:
        K: a symmetric float64[t, t] matrix.

    Returns:
        ``(L, jitter)``.
    """
    n = K.shape[0]
    if n == 0:
        return np.zeros((0, 0)), 0.0
    try:
        return np.linalg.cholesky(K), 0.0
    except np.linalg.LinAlgError:
        pass
    base = max(float(np.mean(np.abs(np.diag(K)))), 1e-300) * 1e-10
    for attempt in range(_MAX_JITTER_TRIES):
        jitter = base * 10.0**attempt
        try:
            return np.linalg.cholesky(K + jitter * np.eye(n)), jitter
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError(f"matrix of size {n} is not positive definite even with jitter {jitter:.3g}")


# a posterior covariance that rounding made indefinite is factored with its eigenvalues raised to
# this fraction of the largest (posterior_cholesky)
POSTERIOR_EIGEN_FLOOR = 1e-9


def posterior_cholesky(S: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of a posterior covariance, and how much its spectrum was raised (0 if not).

    :func:`cholesky_with_jitter` first. A direction the archive determines (the efficiency sum once
    v(N) and v(∅) are evaluated, or every direction of a game the surrogate predicts exactly) has a
    posterior variance that is a difference of prior-sized terms cancelling to rounding, so it can
    come out negative by more than the jitter that is small against the matrix's own (already tiny)
    diagonal. Then the factor is that of ``S`` with its eigenvalues raised to
    :data:`POSTERIOR_EIGEN_FLOOR` times the largest: such a direction is treated as known, which it is.

    Args:
        S: a symmetric float64[d, d] posterior covariance.

    Returns:
        ``(L, raised)``: the factor and the largest amount added to an eigenvalue (or the jitter).

    Raises:
        numpy.linalg.LinAlgError: when the jittered factorisation fails and ``S`` is not finite or
            has no positive eigenvalue.
    """
    try:
        return cholesky_with_jitter(S)
    except np.linalg.LinAlgError:
        pass
    sym = 0.5 * (S + S.T)
    if not np.all(np.isfinite(sym)):
        raise np.linalg.LinAlgError(f"posterior covariance of size {S.shape[0]} is not finite")
    w, V = np.linalg.eigh(sym)
    if not w[-1] > 0.0:
        raise np.linalg.LinAlgError(f"posterior covariance of size {S.shape[0]} has no positive eigenvalue")
    floor = float(w[-1]) * POSTERIOR_EIGEN_FLOOR
    raised = (V * np.maximum(w, floor)) @ V.T
    L, jitter = cholesky_with_jitter(0.5 * (raised + raised.T))
    return L, max(floor - float(w[0]), 0.0) + jitter


def _split_empty(X: np.ndarray, y: np.ndarray, y_empty: float | None) -> tuple[np.ndarray, np.ndarray, float]:
    """``(X, y)`` without the empty coalition, and its value (given, or read from the archive)."""
    empty = ~X.any(axis=1)
    if empty.any():
        return X[~empty], y[~empty], float(y[np.flatnonzero(empty)[0]])
    if y_empty is None:
        raise ValueError("an operator with hold_out_empty needs the empty coalition in the archive")
    return X, y, float(y_empty)


def _solve_lower(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    if L.shape[0] == 0:
        return np.zeros((0,) + B.shape[1:])
    return solve_triangular(L, B, lower=True, check_finite=False)


@dataclass(eq=False)
class _Buffers:
    """Growable storage of a posterior's Cholesky factor L (cap x cap), Y = L^-1 Psi_X^T (cap x p) and Psi_X (p x cap).

    ``filled`` rows/columns are in use by the newest posterior sharing them.
    """

    L: np.ndarray
    Yt: np.ndarray
    psi: np.ndarray
    filled: int

    @property
    def capacity(self) -> int:
        return int(self.L.shape[0])

    @classmethod
    def allocate(cls, L: np.ndarray, Yt: np.ndarray, psi: np.ndarray, needed: int) -> "_Buffers":
        t, p = Yt.shape
        # grow by 1/8 (at least 64): amortised O(1) copies per step, at most ~12% unused memory
        cap = max(int(needed), t + max(64, t // 8))
        Lb = np.empty((cap, cap))
        Lb[:t, :t] = L
        Yb = np.empty((cap, p))
        Yb[:t] = Yt
        Pb = np.empty((p, cap))
        Pb[:, :t] = psi
        return cls(Lb, Yb, Pb, t)


class ShapleyPosterior:
    """GP posterior over phi given archive ``X`` (bool[t, p]) and raw values ``y`` (float64[t]).

    docs/math.md §6. ``t = 0`` is allowed (the prior). Attributes: ``hyper``, ``X``, ``y`` (raw),
    ``y_mean``, ``y_scale``, ``jitter`` (added to ``K + sigma^2 I``, normally 0).

    Args:
        hyper: the hyperparameters (standardised units).
        X: ``bool[t, p]``, the archive (t = 0 allowed).
        y: ``float64[t]`` raw values.
        operator: the index the posterior is about; None: the Shapley value.
    """

    def __init__(self, hyper: Hyperparameters, X: np.ndarray, y: np.ndarray,
                 operator: IndexOperator | None = None) -> None:
        self._setup(hyper, X, y, prior_covariance=None, psi_X=None, chol=None, operator=operator)

    def _setup(
        self,
        hyper: Hyperparameters,
        X: np.ndarray,
        y: np.ndarray,
        prior_covariance: np.ndarray | None,
        psi_X: np.ndarray | None,
        chol: tuple[np.ndarray, float] | None,
        operator: IndexOperator | None = None,
        y_empty: float | None = None,
    ) -> None:
        if not isinstance(hyper, Hyperparameters):
            raise TypeError(f"hyper must be a Hyperparameters instance, got {type(hyper).__name__}")
        p = hyper.n_players
        self.operator = as_operator(operator, p)
        X = as_coalition_matrix(X, p) if np.asarray(X).size else np.zeros((0, p), dtype=bool)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} coalitions but y has {y.shape[0]} values")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains non-finite values")
        self._y_empty = None
        if self.operator.hold_out_empty:
            # docs/math.md §14.5: v(empty) enters exactly, the GP sees the non-empty coalitions only
            X, y, self._y_empty = _split_empty(X, y, y_empty)
        self.hyper = hyper
        self.X = X
        self.y = y
        self.y_tilde, self.y_mean, self.y_scale = standardize(y)
        self._M = prior_covariance if prior_covariance is not None else hyper.index_covariance(self.operator)
        self._psi_X = psi_X if psi_X is not None else hyper.index_columns(self.operator, X)
        if chol is None:
            K = hyper.kernel_matrix(X, X)
            K[np.diag_indices_from(K)] += hyper.noise  # in place: at t = 10^4 a t x t temporary is 800 MB
            chol = cholesky_with_jitter(K)
            del K
        self._L, self.jitter = chol
        # Y = L^-1 Psi_X^T (t x p): Sigma_phi = M - Y^T Y.
        self._Yt = _solve_lower(self._L, self._psi_X.T)
        sigma = self._M - self._Yt.T @ self._Yt
        self._sigma_phi = 0.5 * (sigma + sigma.T)
        # Value solves kept for incremental extension (extend): u = L^-1 (y - y0) / s0 and e = L^-1 1
        # with the reference standardisation (y0, s0) fixed at this build, and their products with Y.
        self._y0, self._s0 = self.y_mean, self.y_scale
        self._u = _solve_lower(self._L, (self.y - self._y0) / self._s0)
        self._e = _solve_lower(self._L, np.ones(X.shape[0]))
        self._Ytu = self._Yt.T @ self._u
        self._Yte = self._Yt.T @ self._e
        self._buffers: _Buffers | None = None
        self._set_mean()

    def _set_mean(self) -> None:
        """Set the mean (standardised) = Psi_X K^-1 r = Y^T L^-1 r, r = y_tilde - c, from the kept solves.

        ``L^-1 r = (s0 u - (y_mean - y0) e) / y_scale - c e`` (no cancellation when y0 ~ y_mean).
        """
        shift = (self.y_mean - self._y0) / self.y_scale
        self._mean_std = (self._s0 / self.y_scale) * self._Ytu - (shift + self.hyper.mean_constant) * self._Yte

    # -- read-outs -------------------------------------------------------------------------------
    @property
    def n_players(self) -> int:
        """The number of players p."""
        return self.hyper.n_players

    @property
    def mean(self) -> np.ndarray:
        """Posterior mean of phi, float64[p], raw units."""
        if self._y_empty is not None:
            # I = B' f + e v(empty); E[B' f] = B' 1 * (prior mean) + s_y Psi K^-1 r, and B' 1 = -e
            prior_mean = self.y_mean + self.y_scale * self.hyper.mean_constant
            return self.y_scale * self._mean_std + self.operator.empty_column() * (self._y_empty - prior_mean)
        return self.y_scale * self._mean_std

    @property
    def covariance(self) -> np.ndarray:
        """Posterior covariance of phi, float64[p, p], raw units (``s_y^2 Sigma_phi``).

        ``s_y (s_y Sigma_phi)``, never ``s_y^2``: for values near 1e155 the square alone overflows
        (a Python float raises); entries beyond float64 (``s_y`` above ~1e154 / std ratio) are
        ``inf``. Variances are kept in standardised units elsewhere (:attr:`std` is finite at any
        scale).
        """
        with np.errstate(over="ignore"):
            return self.y_scale * (self.y_scale * self._sigma_phi)

    @property
    def std(self) -> np.ndarray:
        """Posterior std of phi, float64[p], raw units (negative variances from rounding clip to 0)."""
        return self.y_scale * np.sqrt(np.clip(np.diag(self._sigma_phi), 0.0, None))

    @property
    def shapley_covariance(self) -> np.ndarray:
        """Posterior covariance of phi ``Sigma_phi``, standardised units."""
        return self._sigma_phi

    def innovations(self) -> np.ndarray:
        """One-step-ahead standardised residuals of the archive in its order, float64[t].

        Entry i is ``(y_i - E[y_i | y_<i]) / sd(y_i | y_<i)`` under the current hyperparameters and
        standardisation: the vector ``L^-1 (y_tilde - c)``. Under a calibrated model the entries are
        i.i.d. N(0, 1); ``-0.5 z_i^2 - log L_ii - 0.5 log(2 pi)`` is point i's log predictive density.

        Returns:
            float64[t].
        """
        shift = (self.y_mean - self._y0) / self.y_scale
        return (self._s0 / self.y_scale) * self._u - (shift + self.hyper.mean_constant) * self._e

    def _deletions(self, max_deletions: int, rng: np.random.Generator | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Closed-form single deletions (hyperparameters frozen) from this posterior's Cholesky factor.

        Returns ``(idx, L^-1 E, q, alpha)``: the deleted observations (all, or a subset of
        ``max_deletions`` drawn by ``rng``, default seed 0), ``L^-1 e_i`` for each, ``q_i = [K^-1]_ii``
        and ``alpha = K^-1 r`` (standardised units, r = y_tilde - c).
        """
        t = self.X.shape[0]
        idx = np.arange(t)
        if t > max_deletions:
            rng = rng if rng is not None else np.random.default_rng(0)
            idx = np.sort(rng.choice(t, int(max_deletions), replace=False))
        E = np.zeros((t, idx.size))
        E[idx, np.arange(idx.size)] = 1.0
        Linv_E = _solve_lower(self._L, E)  # L^-1 e_i, so [K^-1]_ii = ||L^-1 e_i||^2
        q = np.einsum("tm,tm->m", Linv_E, Linv_E)
        alpha = solve_triangular(self._L.T, self.innovations(), lower=False, check_finite=False)  # K^-1 r
        return idx, Linv_E, q, alpha

    def loo_residuals(self, max_deletions: int = 1000, rng: np.random.Generator | None = None) -> np.ndarray:
        """Standardised leave-one-out residuals ``z_i = [K^-1 r]_i / sqrt([K^-1]_ii)``, float64[m].

        Closed form, hyperparameters frozen; beyond ``max_deletions`` observations a subset drawn by
        ``rng`` (m = that many). Under a calibrated model ``E[z_i^2] = 1``.

        Args:
            max_deletions: the most deletions; beyond it a random subset is used.
            rng: the generator of that subset (None: seed 0).

        Returns:
            float64[m], m = min(t, max_deletions).
        """
        if self.X.shape[0] == 0:
            return np.zeros(0)
        idx, _, q, alpha = self._deletions(max_deletions, rng)
        return alpha[idx] / np.sqrt(q)

    def loo_log_densities(self, max_deletions: int = 1000) -> np.ndarray:
        """Each observation's leave-one-out log predictive density, float64[m], standardised units.

        ``log N(e_i; 0, 1 / [K^-1]_ii)`` with ``e_i`` the closed-form leave-one-out error (see
        :meth:`loo_errors`); beyond ``max_deletions`` observations the subset of seed 0, the same for
        every posterior on an archive of that size.

        Args:
            max_deletions: the most deletions; beyond it a seeded random subset is used.

        Returns:
            float64[m], m = min(t, max_deletions).
        """
        if self.X.shape[0] == 0:
            return np.zeros(0)
        idx, _, q, alpha = self._deletions(max_deletions, None)
        errors = alpha[idx] / q
        return -0.5 * np.log(2.0 * np.pi) + 0.5 * np.log(q) - 0.5 * errors**2 * q

    def loo_errors(self, max_deletions: int = 1000, rng: np.random.Generator | None = None) -> np.ndarray:
        """Leave-one-out prediction errors ``y_i - E[y_i | y_-i] = [K^-1 r]_i / [K^-1]_ii``, float64[m].

        In standardised units (divided by ``y_scale``, the values' sample std); closed form,
        hyperparameters frozen; beyond ``max_deletions`` observations a subset drawn by ``rng``.

        Args:
            max_deletions: the most deletions; beyond it a random subset is used.
            rng: the generator of that subset (None: seed 0).

        Returns:
            float64[m], m = min(t, max_deletions).
        """
        if self.X.shape[0] == 0:
            return np.zeros(0)
        idx, _, q, alpha = self._deletions(max_deletions, rng)
        return alpha[idx] / q

    def jackknife_covariance(self, max_deletions: int = 1000,
                             rng: np.random.Generator | None = None, standardized: bool = False) -> np.ndarray:
        """Jackknife covariance of the posterior mean of phi, float64[p, p], raw units.

        Standardised units (divided by ``s_y^2``) with ``standardized=True``.

        Deleting observation i (hyperparameters frozen) moves the mean by
        ``Delta_i = -Psi_X K^-1 e_i * [K^-1 r]_i / [K^-1]_ii`` (the closed-form leave-one-out update);
        the jackknife covariance is ``(1 - t/2^p) (t-1)/t sum_i (Delta_i - mean)(Delta_i - mean)^T``
        (with the finite-population correction of sampling the 2^p coalitions). It measures
        how much the estimate leans on single evaluations, which the GP posterior cannot see when its
        kernel misdescribes the game. Beyond ``max_deletions`` observations a subset drawn by
        ``rng`` stands for all of them (its sum is scaled by t / m). Costs O(t^2 m).

        Args:
            max_deletions: the most deletions; beyond it a random subset is used.
            rng: the generator of that subset (None: seed 0).
            standardized: return standardised units instead of raw.

        Returns:
            float64[p, p].
        """
        t, p = self.X.shape[0], self.n_players
        if t < 3:
            return np.zeros((self.operator.n_terms,) * 2)
        idx, Linv_E, q, alpha = self._deletions(max_deletions, rng)
        D = -(self._Yt.T @ Linv_E) * (alpha[idx] / q)[None, :]  # Psi K^-1 e_i * alpha_i / Q_ii
        Dc = D - D.mean(axis=1, keepdims=True)
        # finite-population correction: the archive is a sample without replacement from the 2^p
        # coalitions, so at the full budget nothing is left to vary (and phi is known exactly)
        fpc = max(0.0, 1.0 - t / 2.0**p) if p < 1024 else 1.0
        scale = (t - 1) / t * (t / idx.size) * fpc
        cov = scale * (Dc @ Dc.T)
        if standardized:
            return cov
        with np.errstate(over="ignore"):  # s_y (s_y C): the square of s_y alone overflows near 1e155
            return self.y_scale * (self.y_scale * cov)

    def influence_calibration(self, max_deletions: int = 1000,
                              rng: np.random.Generator | None = None) -> np.ndarray:
        """Influence-weighted leave-one-out calibration of each term, float64[d] (docs/math.md §13).

        ``tau_j = sum_i psi_ij^2 z_i^2 / sum_i psi_ij^2`` with ``z_i`` the standardised LOO residual
        of observation i and ``psi_i = Psi_X K^-1 e_i / sqrt([K^-1]_ii)`` (term j's posterior
        variance grows by ``psi_ij^2`` when observation i is left out). Under the model
        ``E[z_i^2] = 1``, so ``tau_j`` near 1 says the observations phi_j leans on are predicted as
        well as the model claims; it is also the jackknife variance of phi_j over its expectation
        under the model. 1 where phi_j leans on no observation. Hyperparameters frozen; beyond
        ``max_deletions`` observations a subset drawn by ``rng`` (as :meth:`loo_residuals`).

        Args:
            max_deletions: the most deletions; beyond it a random subset is used.
            rng: the generator of that subset (None: seed 0).

        Returns:
            float64[d], the calibration factor of each term.
        """
        d = self.operator.n_terms
        if self.X.shape[0] < 2:
            return np.ones(d)
        idx, Linv_E, q, alpha = self._deletions(max_deletions, rng)
        psi2 = (self._Yt.T @ Linv_E) ** 2 / q[None, :]  # (d, m)
        z2 = alpha[idx] ** 2 / q
        total = psi2.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = np.where(total > 0, (psi2 @ z2) / total, 1.0)
        return np.where(np.isfinite(tau), tau, 1.0)

    @property
    def prior_covariance(self) -> np.ndarray:
        """``M = A K A^T``, standardised units."""
        return self._M

    @property
    def shapley_kernel_columns(self) -> np.ndarray:
        """``Psi_X = A K(., X)``, float64[p, t], standardised units."""
        return self._psi_X

    @property
    def whitened_index_columns(self) -> np.ndarray:
        """``Y = L^-1 Psi_X^T``, float64[t, p], standardised units (``Sigma_phi = M - Y^T Y``)."""
        return self._Yt

    def whiten(self, B: np.ndarray) -> np.ndarray:
        """``L^-1 B`` for the Cholesky factor L of ``K(X, X) + (sigma^2 + jitter) I``, standardised units.

        Args:
            B: float64[t] or float64[t, m].

        Returns:
            float64 of ``B``'s shape.
        """
        return _solve_lower(self._L, B)

    def predict(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of the latent f at coalitions ``Z`` (bool[m, p]), raw units.

        Args:
            Z: ``bool[m, p]``.

        Returns:
            ``(mean, variance)``, two float64[m] in raw units.
        """
        h = self.hyper
        Z = as_coalition_matrix(Z, self.n_players)
        V = _solve_lower(self._L, h.kernel_matrix(self.X, Z))
        r = _solve_lower(self._L, self.y_tilde - h.mean_constant)
        mean = h.mean_constant + V.T @ r
        var = np.clip(h.kernel_diagonal(Z) - np.einsum("tm,tm->m", V, V), 0.0, None)
        with np.errstate(over="ignore"):  # s_y (s_y var): the square of s_y alone overflows near 1e155
            return self.y_mean + self.y_scale * mean, self.y_scale * (self.y_scale * var)

    # -- updates ---------------------------------------------------------------------------------
    def extend(self, X_new: np.ndarray, y_new: np.ndarray) -> "ShapleyPosterior":
        """Posterior with ``(X_new, y_new)`` appended, same hyperparameters; y is re-standardised.

        Reuses M and the existing Psi_X columns, extends the Cholesky factor by a border update and
        updates Y = L^-1 Psi_X^T, Sigma_phi and the mean by the k new rows only: O(t^2 k + t p k +
        p^2 k) instead of the O(t^2 p + t p^2) rebuild. L, Y and Psi_X live in preallocated buffers
        that grow geometrically; an extension of a posterior that was already extended (a branch)
        copies them first, so every posterior stays valid. A border that is not positive definite
        falls back to a full refactorisation.

        Args:
            X_new: ``bool[k, p]`` new coalitions.
            y_new: ``float64[k]`` their raw values.

        Returns:
            a new :class:`ShapleyPosterior`.
        """
        h = self.hyper
        p = self.n_players
        X_new = as_coalition_matrix(X_new, p)
        y_new = np.asarray(y_new, dtype=np.float64).reshape(-1)
        if y_new.shape[0] != X_new.shape[0]:
            raise ValueError(f"X_new has {X_new.shape[0]} coalitions but y_new has {y_new.shape[0]} values")
        if not np.all(np.isfinite(y_new)):
            raise ValueError("y contains non-finite values")
        if self._y_empty is not None and not X_new.any(axis=1).all():
            raise ValueError("the empty coalition is already in the archive (held out of the GP)")
        X = np.concatenate([self.X, X_new], axis=0)
        y = np.concatenate([self.y, y_new])
        psi_new = h.index_columns(self.operator, X_new)
        t, k = self.X.shape[0], X_new.shape[0]
        C = _solve_lower(self._L, h.kernel_matrix(self.X, X_new))
        S = h.kernel_matrix(X_new, X_new) + (h.noise + self.jitter) * np.eye(k)
        S = S - C.T @ C
        try:
            D = np.linalg.cholesky(0.5 * (S + S.T))
        except np.linalg.LinAlgError:
            out = ShapleyPosterior.__new__(ShapleyPosterior)  # refactorise with escalating jitter
            psi = np.concatenate([self._psi_X, psi_new], axis=1)
            out._setup(h, X, y, prior_covariance=self._M, psi_X=psi, chol=None, operator=self.operator,
                       y_empty=self._y_empty)
            return out
        # New rows of Y = L^-1 Psi^T and of the value solves (forward substitution on the border).
        Y_new = _solve_lower(D, psi_new.T - C.T @ self._Yt)  # (k, p)
        u_new = _solve_lower(D, (y_new - self._y0) / self._s0 - C.T @ self._u)
        e_new = _solve_lower(D, 1.0 - C.T @ self._e)
        buf = self._owned_buffers(t, t + k)
        buf.L[t : t + k, :t] = C.T
        buf.L[t : t + k, t : t + k] = D
        buf.L[:t, t : t + k] = 0.0
        buf.Yt[t : t + k] = Y_new
        buf.psi[:, t : t + k] = psi_new
        buf.filled = t + k

        out = ShapleyPosterior.__new__(ShapleyPosterior)
        out.hyper, out.X, out.y = h, X, y
        out.operator = self.operator
        out._y_empty = self._y_empty
        out.y_tilde, out.y_mean, out.y_scale = standardize(y)
        out._M = self._M
        out._psi_X = buf.psi[:, : t + k]
        out._L, out.jitter = buf.L[: t + k, : t + k], self.jitter
        out._Yt = buf.Yt[: t + k]
        sigma = self._sigma_phi - Y_new.T @ Y_new
        out._sigma_phi = 0.5 * (sigma + sigma.T)
        out._y0, out._s0 = self._y0, self._s0
        out._u = np.concatenate([self._u, u_new])
        out._e = np.concatenate([self._e, e_new])
        out._Ytu = self._Ytu + Y_new.T @ u_new
        out._Yte = self._Yte + Y_new.T @ e_new
        out._buffers = buf
        out._set_mean()
        return out

    def _owned_buffers(self, t: int, needed: int) -> "_Buffers":
        """Buffers holding this posterior's L, Y, Psi_X in rows/columns ``< t``, with room for ``needed``."""
        buf = self._buffers
        if buf is None or buf.filled != t or buf.capacity < needed:
            buf = _Buffers.allocate(self._L, self._Yt, self._psi_X, needed)
        return buf

    def with_hyperparameters(self, hyper: Hyperparameters) -> "ShapleyPosterior":
        """Posterior on the same archive under ``hyper``.

        When only ``noise`` or ``mean_constant`` change (e.g. the raw-units noise convention
        following s_y), M and Psi_X are reused and only the Cholesky factor is recomputed.

        Args:
            hyper: the new hyperparameters.

        Returns:
            a new :class:`ShapleyPosterior`.
        """
        same_kernel = hyper.kernel == self.hyper.kernel and hyper.params == self.hyper.params
        chol = None
        if hyper.noise == self.hyper.noise:
            chol = (self._L, self.jitter)
        out = ShapleyPosterior.__new__(ShapleyPosterior)
        if not same_kernel:
            out._setup(hyper, self.X, self.y, None, None, None, operator=self.operator, y_empty=self._y_empty)
            return out
        out._setup(hyper, self.X, self.y, prior_covariance=self._M, psi_X=self._psi_X, chol=chol,
                   operator=self.operator, y_empty=self._y_empty)
        return out

    def with_operator(self, operator: IndexOperator | None) -> "ShapleyPosterior":
        """The posterior of another index (``None``: the Shapley value) on the same archive and hyperparameters.

        The Cholesky factor of the kernel matrix is reused.

        Args:
            operator: the index operator; None: the Shapley value.

        Returns:
            a new :class:`ShapleyPosterior`.
        """
        operator = as_operator(operator, self.n_players)
        if operator == self.operator:
            return self
        if operator.hold_out_empty != self.operator.hold_out_empty:
            raise ValueError("with_operator needs the same hold_out_empty (the GP's archive differs otherwise)")
        out = ShapleyPosterior.__new__(ShapleyPosterior)
        out._setup(self.hyper, self.X, self.y, prior_covariance=None, psi_X=None,
                   chol=(self._L[:, :], self.jitter), operator=operator, y_empty=self._y_empty)
        return out

    def candidates(self, W: np.ndarray, operator: IndexOperator | None = None) -> "CandidatePosterior":
        """Value-independent EIG state over the candidate pool ``W`` (bool[n, p]).

        The EIG is about this posterior's index unless ``operator`` names another one (an
        ablation: acquire for the Shapley value, read out an interaction index).

        Args:
            W: ``bool[n, p]``, the candidate pool.
            operator: the index the EIG is about; None: this posterior's.

        Returns:
            a :class:`CandidatePosterior`.
        """
        if operator is not None and operator != self.operator:
            return CandidatePosterior(self.with_operator(operator), W)
        return CandidatePosterior(self, W)


class CandidatePosterior:
    """Value-independent state over a finite candidate pool under frozen hyperparameters (docs/math.md §7, §10).

    Holds (standardised units) ``shapley_covariance`` Sigma_phi (p x p), ``B`` = Cov[phi, f(W)]
    (p x n), the predictive variances ``v`` (n) and ``L^-1 K(X, W)`` (t x n, one row appended per
    conditioning step). ``W`` is the full pool as given; ``available[j]`` turns False once
    candidate j is conditioned on; ``selected`` lists conditioned pool indices in order.

    Args:
        posterior: the posterior of the archive (its hyperparameters are frozen).
        W: ``bool[n, p]``, the candidate pool.
    """

    def __init__(self, posterior: ShapleyPosterior, W: np.ndarray) -> None:
        h = posterior.hyper
        p = posterior.n_players
        self.hyper = h
        self.W = as_coalition_matrix(W, p) if np.asarray(W).size else np.zeros((0, p), dtype=bool)
        n = self.W.shape[0]
        self.available = np.ones(n, dtype=bool)
        self.selected: list[int] = []
        # L^-1 K(X, W) in the first _V_rows rows of a buffer with spare rows: conditioning appends a
        # row per step, and a reallocation per step copied all t x n of it (most of a step at t ~ 200)
        self._V_buf = posterior.whiten(h.kernel_matrix(posterior.X, self.W))
        self._V_rows = self._V_buf.shape[0]
        psi_W = h.index_columns(posterior.operator, self.W)
        self._B = psi_W - posterior.whitened_index_columns.T @ self._V
        # k(w, w): the kernel's own diagonal (not the outputscale: a size part or a graded kernel add to it)
        self._v = h.kernel_diagonal(self.W) - np.einsum("tn,tn->n", self._V, self._V) + h.noise
        self.shapley_covariance = posterior.shapley_covariance.copy()
        self._chol_phi: np.ndarray | None = None
        self.jitter_phi = 0.0

    @property
    def n_candidates(self) -> int:
        """The number of candidates in the pool (available or not)."""
        return int(self.W.shape[0])

    @property
    def _V(self) -> np.ndarray:
        """``L^-1 K(X, W)``, float64[t, n] (a view of the buffer's rows in use)."""
        return self._V_buf[: self._V_rows]

    def _append_V_row(self, row: np.ndarray) -> None:
        """Append a row to ``L^-1 K(X, W)``, doubling the buffer when it is full."""
        if self._V_rows == self._V_buf.shape[0]:
            grown = np.empty((max(2 * self._V_rows, self._V_rows + 8), self._V_buf.shape[1]))
            grown[: self._V_rows] = self._V_buf[: self._V_rows]
            self._V_buf = grown
        self._V_buf[self._V_rows] = row
        self._V_rows += 1

    def copy(self) -> "CandidatePosterior":
        """Independent copy (to explore a batch without touching this state).

        Returns:
            a new :class:`CandidatePosterior`.
        """
        out = CandidatePosterior.__new__(CandidatePosterior)
        out.__dict__.update(self.__dict__)
        for name in ("available", "_B", "_v", "shapley_covariance"):
            setattr(out, name, getattr(self, name).copy())
        out._V_buf = self._V.copy()
        out.selected = list(self.selected)
        return out

    def cross_covariance(self) -> np.ndarray:
        """``B`` = Cov[phi, y(W)], float64[p, n], standardised units (all pool columns).

        Returns:
            float64[p, n].
        """
        return self._B

    def predictive_variance(self) -> np.ndarray:
        """``v(w) = k(w, w) - ||L^-1 k_Xw||^2 + sigma^2``, float64[n] standardised; -inf where not available.

        Returns:
            float64[n].
        """
        return np.where(self.available, self._v, -np.inf)

    def _phi_factor(self) -> np.ndarray:
        if self._chol_phi is None:
            self._chol_phi, self.jitter_phi = posterior_cholesky(self.shapley_covariance)
        return self._chol_phi

    def _eig_of(self, idx: np.ndarray) -> np.ndarray:
        Z = _solve_lower(self._phi_factor(), self._B[:, idx])
        R = np.einsum("pn,pn->n", Z, Z) / np.maximum(self._v[idx], 1e-30)
        return -np.log1p(-np.clip(R, 0.0, _R_MAX))

    def eig(self) -> np.ndarray:
        """Shapley EIG of every candidate, float64[n]: ``-log(1 - b^T Sigma_phi^-1 b / v)``; -inf where not available.

        Returns:
            float64[n].
        """
        out = np.full(self.n_candidates, -np.inf)
        idx = np.flatnonzero(self.available)
        if idx.size:
            out[idx] = self._eig_of(idx)
        return out

    def condition(self, j: int) -> float:
        """Condition on pool candidate ``j`` being observed (exact docs/math.md §10 updates); returns its EIG before.

        Updates Sigma_phi, B, v and appends the Cholesky border row ``c(w)/sqrt(v*)`` to
        ``L^-1 K(X, W)``, then marks ``j`` unavailable. Costs O(p^2 + (p + t) n).

        Args:
            j: the pool index of the candidate observed.

        Returns:
            the candidate's EIG before conditioning.
        """
        j = int(j)
        if not 0 <= j < self.n_candidates:
            raise IndexError(f"candidate index {j} out of range for a pool of {self.n_candidates}")
        if not self.available[j]:
            raise ValueError(f"candidate {j} was already conditioned on")
        gain = float(self._eig_of(np.array([j]))[0])
        h = self.hyper
        v_star = self._v[j]
        if not v_star > 0:
            # Only possible with zero noise for an already determined value: observing it
            # carries no information, so nothing changes except availability.
            self.available[j] = False
            self.selected.append(j)
            return 0.0
        b_star = self._B[:, j].copy()
        k_star = h.kernel_matrix(self.W, self.W[j : j + 1])[:, 0]
        c = k_star - self._V.T @ self._V[:, j]
        sig = self.shapley_covariance - np.outer(b_star, b_star) / v_star
        self.shapley_covariance = 0.5 * (sig + sig.T)
        self._B = self._B - np.outer(b_star, c / v_star)
        self._v = self._v - c**2 / v_star
        # Cholesky border row of the enlarged archive: c(w)/sqrt(v*).
        self._append_V_row(c / np.sqrt(v_star))
        self.available[j] = False
        self.selected.append(j)
        self._chol_phi = None
        return gain

    def greedy(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """Select ``q`` candidates by sequential argmax-EIG with conditioning (exact batch, docs/math.md §10.2).

        Ties go to the first index in pool order. Returns (pool indices int64[q], EIGs float64[q]).

        Args:
            q: how many candidates to select.

        Returns:
            ``(pool indices int64[q], EIGs float64[q])`` (fewer when the pool runs out).
        """
        picks, gains = [], []
        for _ in range(int(q)):
            if not self.available.any():
                break
            e = self.eig()
            j = int(np.argmax(e))
            gains.append(self.condition(j))
            picks.append(j)
        return np.asarray(picks, dtype=np.int64), np.asarray(gains, dtype=np.float64)
