"""The surrogate's kernels: the Hamming kernel, the size kernel, and the registry of named surrogates.

Two kernel specs (:mod:`shapleig.gp.kernel_spec`), composed with ``+``:

- :class:`Hamming` (docs/math.md §3): ``k(z, z') = s exp(-(1/p) sum_j [z_j != z'_j] / l_j)``, one
  lengthscale per player (``ard=True``) or one shared; params :class:`HammingParams`. Its index
  products are the ESP routes of :mod:`shapleig.gp.esp` and :mod:`shapleig.gp.index_esp`.
- :class:`SizeKernel` (docs/math.md §15): ``k_size(|z|, |z'|)``, a squared-exponential trend in the
  coalition size (``trend=True``) and/or independent jumps at the empty and the grand coalition
  (``jumps=True``); params :class:`SizeParams`. Its index products go through the index's size
  coefficients beta.

The registry names the kernels a surrogate mode fits: :data:`BASE_KERNELS` (``"shared"``,
``"ard"``, ``"graded"``: :class:`~shapleig.gp.graded.Graded`, free variances of interaction orders
1..3 and a learned noise) and :data:`SURROGATES` (``"auto"``, ``"laplace"``, ``"shared"``, ``"ard"``,
``"graded"``, ``"graded-ard"``: the graded and the ARD kernel, ``"graded-auto"``: the shared, the graded
and the ARD kernel);
:func:`surrogate_kernels` turns a mode and the ``size_trend`` / ``jumps`` options into kernel specs
named as in results (``"shared"``, ``"ard"``, ``"shared+size"``, ``"ard+size"``).
:func:`register_kernel` adds a base kernel (and a mode of that name).

>>> spec = Hamming(ard=False) + SizeKernel(trend=True, jumps=False)
>>> spec.name, [part.name for part in spec.parts]
('shared+size', ['shared', 'size'])
>>> [k.name for k in surrogate_kernels("auto", size_trend="both", jumps=False)]
['shared', 'shared+size', 'ard', 'ard+size']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from shapleig.gp.additive import Additive
from shapleig.gp.esp import hamming_kernel
from shapleig.gp.graded import Graded
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernel_spec import FitTerms, KernelSpec, SumKernel
from shapleig.gp.priors import (
    INITIAL_JUMP,
    INITIAL_SIZE_LENGTHSCALE,
    INITIAL_SIZE_VARIANCE,
    MIN_LENGTHSCALE,
    MIN_OUTPUTSCALE,
    SIZE_LENGTHSCALE_PRIOR,
    initial_lengthscale,
    inverse_softplus,
    lengthscale_prior_params,
    sigmoid,
    softplus,
)
from shapleig.gp.rough import Rough

_LOG_2PI = math.log(2.0 * math.pi)
# |log(size lengthscale)| is clipped here (e^8 ~ 3000 size ranges: flat; e^-8: white noise over
# sizes), so a line search that strays far cannot overflow
_LOG_SIZE_BOUND = 8.0
# a warm start from a (near) zero variance packs this instead: softplus never reaches 0, and from far
# below it the gradient in the raw coordinate (the sigmoid) is too small to move it again
_MIN_SIZE_VARIANCE = 1e-3


def _finite(name: str, value: Any) -> float:
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


# -- the Hamming kernel -------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class HammingParams:
    """Values of a :class:`Hamming` kernel.

    ``lengthscales`` float64[p] (a read-only copy; a shared lengthscale repeated p times) and the
    ``outputscale`` s. Equality is exact, by value.

    Attributes:
        lengthscales: float64[p] (a read-only copy; a shared lengthscale repeated p times).
        outputscale: the outputscale s (positive).
    """

    lengthscales: np.ndarray
    outputscale: float

    def __post_init__(self) -> None:
        ls = np.array(self.lengthscales, dtype=np.float64)  # private copy, read-only
        if ls.ndim != 1 or ls.shape[0] < 1:
            raise ValueError(f"lengthscales must have shape (p,), got {ls.shape}")
        if not np.all(np.isfinite(ls)) or np.any(ls <= 0):
            raise ValueError(f"lengthscales must be finite and positive, got {ls}")
        ls.setflags(write=False)
        object.__setattr__(self, "lengthscales", ls)
        s = _finite("outputscale", self.outputscale)
        if s <= 0:
            raise ValueError(f"outputscale must be positive, got {s}")
        object.__setattr__(self, "outputscale", s)

    @property
    def n_players(self) -> int:
        """The number of players p (the length of ``lengthscales``)."""
        return int(self.lengthscales.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HammingParams):
            return NotImplemented
        return np.array_equal(self.lengthscales, other.lengthscales) and self.outputscale == other.outputscale

    def __hash__(self) -> int:
        return hash((self.lengthscales.tobytes(), self.outputscale))


@dataclass(frozen=True)
class Hamming(KernelSpec):
    """The Hamming (categorical) kernel of docs/math.md §3, ARD (``ard=True``) or with one shared lengthscale.

    Priors: ``LogNormal(sqrt2 + ln(p)/2, sqrt3)`` on each lengthscale (dimension-scaled, Hvarfner
    et al. 2024), starting at its mode; the outputscale is flat, starting at ``softplus(0)``.
    ``spread`` (ARD only; None: independent lengthscales) adds a shrinkage factor
    ``exp(-sum_j (log l_j - mean log l)^2 / (2 spread^2))`` (normalised) to the prior, pulling the
    lengthscales toward their geometric mean: spread -> 0 is the shared kernel, -> inf free ARD.

    >>> Hamming(ard=True).name, Hamming(ard=False).name
    ('ard', 'shared')

    Attributes:
        ard: one lengthscale per player (True) or one shared (False).
        spread: ARD only: the shrinkage of the log lengthscales toward their mean; None: independent.
        alias: the kernel's name in results; None: ``"ard"`` or ``"shared"``.
    """

    ard: bool
    spread: float | None = None
    alias: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ard", bool(self.ard))
        if self.spread is not None and not (self.ard and np.isfinite(self.spread) and self.spread > 0):
            raise ValueError(f"spread must be a positive finite number and needs ard=True, got {self.spread!r}")

    @property
    def name(self) -> str:
        """``alias``, else ``"ard"`` or ``"shared"``."""
        return self.alias or ("ard" if self.ard else "shared")

    def check_params(self, params: Any) -> HammingParams:
        """``params`` if it is a :class:`HammingParams`, else ``ValueError``."""
        if not isinstance(params, HammingParams):
            raise ValueError(f"the params of a Hamming kernel are HammingParams, got {type(params).__name__}")
        return params

    def initial_params(self, n_players: int) -> HammingParams:
        """Lengthscales at their prior mode, outputscale ``softplus(0)``."""
        return HammingParams(np.full(int(n_players), initial_lengthscale(int(n_players))), math.log(2.0))

    def warm_params(self, params: Any | None, n_players: int) -> HammingParams:
        """``params`` as a start: broadcast to p lengthscales (their geometric mean for the shared kernel)."""
        if params is None:
            return self.initial_params(n_players)
        ls = np.broadcast_to(np.asarray(params.lengthscales, dtype=np.float64), (n_players,))
        if not self.ard:  # one shared lengthscale: start from the geometric mean of the given ones
            ls = np.exp(np.log(ls).mean(keepdims=True))
        return HammingParams(np.broadcast_to(ls, (n_players,)), params.outputscale)

    def n_players(self, params: HammingParams) -> int:
        """The number of players of ``params``."""
        return params.n_players

    def describe(self, params: HammingParams) -> dict[str, Any]:
        """The lengthscales and the outputscale."""
        return {"lengthscales": params.lengthscales.tolist(), "outputscale": params.outputscale}

    def matrix(self, params: HammingParams, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """``s exp(-(1/p) sum_j [z_j != z'_j] / l_j)``."""
        return hamming_kernel(Z1, Z2, params.lengthscales, params.outputscale)

    def diagonal(self, params: HammingParams, Z: np.ndarray) -> np.ndarray:
        """The outputscale for every row (the kernel is stationary)."""
        return np.full(np.shape(Z)[0], params.outputscale)

    def index_columns(self, params: HammingParams, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """Closed form through the elementary symmetric polynomials (:mod:`shapleig.gp.index_esp`)."""
        return operator.hamming_columns(Z, params.lengthscales, params.outputscale)

    def index_covariance(self, params: HammingParams, operator: IndexOperator) -> np.ndarray:
        """Closed form through the elementary symmetric polynomials (:mod:`shapleig.gp.index_esp`)."""
        return operator.hamming_covariance(params.lengthscales, params.outputscale)

    def fit_terms(self, X: np.ndarray) -> "HammingFit":
        """The Hamming share of the MAP problem (:class:`HammingFit`)."""
        return HammingFit(X, self.ard, self.spread)

    def n_params(self, X: np.ndarray) -> int:
        """The count: p + 1 (ARD) or 2 (shared)."""
        return (np.shape(X)[1] if self.ard else 1) + 1


class HammingFit(FitTerms):
    """The Hamming kernel's share of the MAP problem.

    Coordinates ``(raw_s, raw_l)`` with ``s = softplus(raw_s)``, ``l = 1e-6 + softplus(raw_l)`` (p
    lengthscales, or 1 shared).

    The gradient comes from one product: with ``G = W o K_s`` (K_s the kernel),
    ``dK_s/dl_j = K_s o [z_j != z'_j] / (p l_j^2)`` and
    ``sum_ab G_ab [x_aj != x_bj] = 2 x_j^T (G 1) - 2 (X^T G X)_jj``; the shared kernel reuses the
    integer mismatch counts, computed once.

    Args:
        X: ``bool[t, p]``, the archive.
        ard: one lengthscale per player (True) or one shared (False).
        spread: the ARD shrinkage of the prior (None: independent lengthscales).
    """

    def __init__(self, X: np.ndarray, ard: bool, spread: float | None) -> None:
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.p = self.X.shape[1]
        self.ard = bool(ard)
        self.spread = spread
        self.prior_loc, self.prior_scale = lengthscale_prior_params(self.p)
        self.hamming = None
        if not self.ard:
            self.hamming = self.X @ (1.0 - self.X).T
            self.hamming += self.hamming.T
        self.n_lengthscales = self.p if self.ard else 1
        self.n_params = 1 + self.n_lengthscales
        self.lengthscales = slice(1, self.n_params)

    def pack(self, params: HammingParams) -> np.ndarray:
        """``(raw_s, raw_l)``: inverse softplus of the outputscale and of the lengthscales above their floor."""
        ls = np.asarray(params.lengthscales, dtype=np.float64)[: self.n_lengthscales]
        raw_l = inverse_softplus(np.maximum(ls - MIN_LENGTHSCALE, 1e-300))
        return np.concatenate([[float(inverse_softplus(params.outputscale))], raw_l])

    def _values(self, raw: np.ndarray) -> tuple[float, np.ndarray]:
        return max(float(softplus(raw[0])), MIN_OUTPUTSCALE), MIN_LENGTHSCALE + softplus(raw[1:])

    def unpack(self, raw: np.ndarray) -> HammingParams:
        """The params at ``raw`` (a shared lengthscale repeated p times)."""
        s, ls = self._values(raw)
        return HammingParams(np.broadcast_to(ls, (self.p,)).copy(), s)

    def distance(self, ls: np.ndarray) -> np.ndarray:
        """``(1/p) sum_j [x_aj != x_bj] / l_j``, float64[t, t].

        Args:
            ls: float64[p] lengthscales (or [1], shared).

        Returns:
            float64[t, t] over the archive.
        """
        if not self.ard:
            return self.hamming * (1.0 / (self.p * ls[0]))
        w = 1.0 / (self.p * ls)
        Xw = self.X * w
        d = Xw @ (1.0 - self.X).T
        return d + d.T

    def log_prior(self, ls: np.ndarray) -> tuple[float, np.ndarray]:
        """Log density of the lengthscales (over l, summed) and its derivative wrt each l.

        Independent LogNormal(loc, scale) per lengthscale; with a ``spread`` s the density over
        u = log l becomes Gaussian with precision ``I / scale^2 + (I - 11^T / p) / s^2``, whose
        normaliser exceeds the independent one by ``((p - 1) / 2) log(1 + scale^2 / s^2)``.

        Args:
            ls: float64[p] lengthscales (or [1], shared).

        Returns:
            ``(log density, d log density / d l)``.
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

    def evaluate(self, raw: np.ndarray) -> tuple[np.ndarray, float, Any]:
        """``(s E, log prior, state)`` with ``E = exp(-distance)``."""
        s, ls = self._values(raw)
        E = np.exp(-self.distance(ls))
        lp, dlp = self.log_prior(ls)
        return s * E, lp, (s, ls, E, dlp)

    def gradient(self, raw: np.ndarray, W: np.ndarray, state: Any) -> np.ndarray:
        """The gradient through the one product ``X^T (W o K) X`` (see the class docstring)."""
        s, ls, E, dlp = state
        X = self.X
        # G = W o K_s: d(log N)/d(anything in K_s) = 0.5 sum G o dlog(K_s)
        GE = W * E
        G = s * GE
        g = np.empty(self.n_params)
        g[0] = -0.5 * GE.sum() * sigmoid(raw[0])  # dK_s/ds = K_s / s = E (no division: s may underflow)
        if self.ard:
            # sum_ab G_ab [x_aj != x_bj] = 2 x_j^T (G 1) - 2 (X^T G X)_jj
            mismatch = 2.0 * (X.T @ G.sum(axis=1)) - 2.0 * np.einsum("aj,aj->j", G @ X, X)
        else:
            mismatch = np.array([np.einsum("ab,ab->", G, self.hamming)])
        dlog_l = -0.5 * mismatch / (self.p * ls**2)  # d(-log N)/dl_j
        g[1:] = (dlog_l - dlp) * sigmoid(raw[1:])
        return g

    def resample(self, raw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The lengthscales redrawn from their prior; the outputscale kept."""
        ls = np.exp(self.prior_loc + self.prior_scale * rng.standard_normal(self.n_lengthscales))
        out = raw.copy()
        out[1:] = inverse_softplus(np.maximum(ls - MIN_LENGTHSCALE, 1e-300))
        return out


# -- the size kernel ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SizeParams:
    """Values of a :class:`SizeKernel` (standardised units).

    ``empty_jump``, ``grand_jump`` (variances of independent offsets at ∅ and N), the trend's
    ``variance`` and ``lengthscale`` (normalised size units). All zero variances: the kernel is
    zero.

    Attributes:
        empty_jump: variance of an independent offset at ∅.
        grand_jump: variance of an independent offset at N.
        variance: the trend's variance.
        lengthscale: the trend's lengthscale (normalised size units).
    """

    empty_jump: float = 0.0
    grand_jump: float = 0.0
    variance: float = 0.0
    lengthscale: float = INITIAL_SIZE_LENGTHSCALE

    def __post_init__(self) -> None:
        for name in ("empty_jump", "grand_jump", "variance", "lengthscale"):
            object.__setattr__(self, name, _finite(name, getattr(self, name)))
        if self.empty_jump < 0 or self.grand_jump < 0:
            raise ValueError(f"jump variances must be non-negative, got {self.empty_jump}, {self.grand_jump}")
        if self.variance < 0 or self.lengthscale <= 0:
            raise ValueError(f"the size kernel needs variance >= 0 and lengthscale > 0, got "
                             f"{self.variance}, {self.lengthscale}")

    @property
    def is_zero(self) -> bool:
        """Whether every variance is zero."""
        return not (self.empty_jump or self.grand_jump or self.variance)

    def matrix(self, n_players: int) -> np.ndarray:
        """``k_size(a, b)`` over sizes a, b = 0..p: float64[p+1, p+1] (:func:`size_kernel_matrix`).

        Args:
            n_players: the number of players p.

        Returns:
            float64[p+1, p+1].
        """
        return size_kernel_matrix(n_players, self.empty_jump, self.grand_jump, self.variance, self.lengthscale)


def size_kernel_matrix(n_players: int, empty_jump: float, grand_jump: float, size_variance: float,
                       size_lengthscale: float) -> np.ndarray:
    """``k_size(a, b)`` over coalition sizes a, b = 0..p: float64[p+1, p+1] (docs/math.md §15).

    ``size_variance exp(-(a - b)^2 / (2 (size_lengthscale p)^2)) + empty_jump [a = b = 0]
    + grand_jump [a = b = p]``: a smooth trend in the size plus jumps at the two extremes.

    Args:
        n_players: the number of players p.
        empty_jump: variance of the offset at size 0.
        grand_jump: variance of the offset at size p.
        size_variance: the trend's variance.
        size_lengthscale: the trend's lengthscale (normalised size units).

    Returns:
        float64[p+1, p+1].
    """
    p = int(n_players)
    sizes = np.arange(p + 1, dtype=np.float64)
    K = np.zeros((p + 1, p + 1))
    if size_variance:
        d = (sizes[:, None] - sizes[None, :]) / (size_lengthscale * p)
        K += size_variance * np.exp(-0.5 * d**2)
    K[0, 0] += empty_jump
    K[p, p] += grand_jump
    return K


def _sizes(Z: np.ndarray) -> np.ndarray:
    return np.asarray(Z, dtype=bool).sum(axis=1)


@dataclass(frozen=True)
class SizeKernel(KernelSpec):
    """The size kernel of docs/math.md §15, ``k_size(|z|, |z'|)``: an additive part of the surrogate.

    ``trend``: fit a squared-exponential trend in the normalised size (flat prior on its variance,
    starting at 0.5; ``N(log 0.5, 1)`` on its log lengthscale, starting at 0.5). ``jumps``: fit the
    variances of independent offsets at the extremes in the archive (flat priors, starting at 1).

    Attributes:
        trend: fit a squared-exponential trend in the normalised size (flat prior on its variance, starting
            at 0.5; ``N(log 0.5, 1)`` on its log lengthscale, starting at 0.5).
        jumps: fit the variances of independent offsets at the extremes in the archive (flat priors,
            starting at 1).
        alias: the kernel's name in results; None: ``"size"``.
    """

    trend: bool = True
    jumps: bool = False
    alias: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "trend", bool(self.trend))
        object.__setattr__(self, "jumps", bool(self.jumps))
        if not (self.trend or self.jumps):
            raise ValueError("a size kernel needs trend=True or jumps=True (otherwise it is zero)")

    @property
    def name(self) -> str:
        """``alias``, else ``"size"``."""
        return self.alias or "size"

    def check_params(self, params: Any) -> SizeParams:
        """``params`` if it is a :class:`SizeParams` this kernel can hold (no trend or jumps it lacks)."""
        if not isinstance(params, SizeParams):
            raise ValueError(f"the params of a size kernel are SizeParams, got {type(params).__name__}")
        if not self.trend and params.variance:
            raise ValueError(f"a size kernel without the trend has variance 0, got {params.variance}")
        if not self.jumps and (params.empty_jump or params.grand_jump):
            raise ValueError(f"a size kernel without jumps has zero jump variances, got {params}")
        return params

    def initial_params(self, n_players: int) -> SizeParams:
        """The trend at its starting values (if fitted), jumps of 1 (if fitted)."""
        jump = INITIAL_JUMP if self.jumps else 0.0
        return SizeParams(jump, jump, INITIAL_SIZE_VARIANCE if self.trend else 0.0, INITIAL_SIZE_LENGTHSCALE)

    def fallback_params(self, n_players: int) -> SizeParams:
        """All zero: no size kernel."""
        return SizeParams()  # a failed first fit keeps the plain kernel (no size part)

    def warm_params(self, params: Any | None, n_players: int) -> SizeParams:
        # a zero size kernel (or none) starts from the initial values: a fit that never had one
        """``params`` as a start, or the initial values."""
        if params is None or params.is_zero:
            return self.initial_params(n_players)
        keep = self.jumps
        return SizeParams(params.empty_jump if keep else 0.0, params.grand_jump if keep else 0.0,
                          params.variance if self.trend else 0.0, params.lengthscale)

    def is_zero(self, params: SizeParams) -> bool:
        """Whether ``params`` make the kernel zero."""
        return params.is_zero

    def describe(self, params: SizeParams) -> dict[str, Any]:
        """:func:`size_kernel_info` of ``params``."""
        return {"size_kernel": size_kernel_info(params)}

    def matrix(self, params: SizeParams, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """``k_size(|z1|, |z2|)`` from the (p+1) x (p+1) size matrix."""
        return params.matrix(np.shape(Z1)[1])[np.ix_(_sizes(Z1), _sizes(Z2))]

    def diagonal(self, params: SizeParams, Z: np.ndarray) -> np.ndarray:
        """``k_size(|z|, |z|)`` for every row."""
        return np.diag(params.matrix(np.shape(Z)[1]))[_sizes(Z)]

    def index_columns(self, params: SizeParams, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """Closed form through the operator's sums over coalition sizes."""
        return operator.size_columns(Z, params.matrix(operator.n_players))

    def index_covariance(self, params: SizeParams, operator: IndexOperator) -> np.ndarray:
        """Closed form over the p + 1 sizes."""
        return operator.size_covariance(params.matrix(operator.n_players))

    def fit_terms(self, X: np.ndarray) -> "SizeFit":
        """The size kernel's share of the MAP problem (:class:`SizeFit`)."""
        return SizeFit(X, self.trend, self.jumps)

    def n_params(self, X: np.ndarray) -> int:
        """2 for the trend plus one per extreme present in ``X`` (with jumps)."""
        return 2 * self.trend + (n_extremes(X) if self.jumps else 0)


def size_kernel_info(params: SizeParams | None) -> dict[str, float]:
    """The size kernel's parameters by name (for ``info``; None: all zero, no size kernel).

    Args:
        params: the size kernel's params, or None.

    Returns:
        ``{"empty_jump", "grand_jump", "size_variance", "size_lengthscale"}``.
    """
    params = SizeParams() if params is None else params
    return {"empty_jump": params.empty_jump, "grand_jump": params.grand_jump,
            "size_variance": params.variance, "size_lengthscale": params.lengthscale}


def n_extremes(X: np.ndarray) -> int:
    """How many of the two extreme coalitions (∅, N) the archive ``X`` (bool[t, p]) holds.

    Args:
        X: ``bool[t, p]``, the archive.

    Returns:
        0, 1 or 2.
    """
    X = np.asarray(X, dtype=bool)
    return int((~X.any(axis=1)).any()) + int(X.all(axis=1).any())


class SizeFit(FitTerms):
    """The size kernel's share of the MAP problem.

    Coordinates ``(raw variance, log lengthscale)`` of the trend, then the raw (softplus) jumps of
    the extremes present in the archive.

    With S the t x (p+1) one-hot matrix of the archive's sizes, the gradient wrt an entry of
    ``K_size`` is ``-[S^T W S]_ab / 2``: one (p+1) x (p+1) aggregate of W per evaluation.

    Args:
        X: ``bool[t, p]``, the archive.
        trend: fit the trend.
        jumps: fit the jumps of the extremes present in ``X``.
    """

    def __init__(self, X: np.ndarray, trend: bool, jumps: bool) -> None:
        size = np.asarray(X, dtype=bool).sum(axis=1)
        self.p = np.shape(X)[1]
        self.trend = bool(trend)
        # an extreme that is not in the archive has no jump to fit (0 for ∅, 1 for N)
        self.jump_kinds = tuple(k for k, m in ((0, 0), (1, self.p)) if jumps and np.any(size == m))
        self.n_params = 2 * int(self.trend) + len(self.jump_kinds)
        # the flat index |x_a| (p+1) + |x_b| of every pair of archive rows
        self.pairs = (size[:, None] * (self.p + 1) + size[None, :]).ravel() if self.n_params else None
        self.t = size.shape[0]

    def _values(self, raw: np.ndarray) -> tuple[float, float, float, float]:
        """``(empty_jump, grand_jump, variance, lengthscale)`` at ``raw``.

        Zeros, and the initial lengthscale, for what is not fitted.
        """
        variance, length = 0.0, INITIAL_SIZE_LENGTHSCALE
        rest = raw
        if self.trend:
            variance = float(softplus(rest[0]))
            length = float(math.exp(min(max(rest[1], -_LOG_SIZE_BOUND), _LOG_SIZE_BOUND)))
            rest = rest[2:]
        jumps = [0.0, 0.0]
        for kind, value in zip(self.jump_kinds, rest):
            jumps[kind] = float(softplus(value))
        return jumps[0], jumps[1], variance, length

    def unpack(self, raw: np.ndarray) -> SizeParams:
        """The params at ``raw`` (jumps of extremes absent from the archive are zero)."""
        return SizeParams(*self._values(raw))

    def pack(self, params: SizeParams) -> np.ndarray:
        """Near-zero variances pack as ``_MIN_SIZE_VARIANCE`` (softplus never reaches 0)."""
        size = (params.empty_jump, params.grand_jump)
        raw = []
        if self.trend:
            raw += [float(inverse_softplus(max(params.variance, _MIN_SIZE_VARIANCE))), math.log(params.lengthscale)]
        raw += [float(inverse_softplus(max(float(size[kind]), _MIN_SIZE_VARIANCE))) for kind in self.jump_kinds]
        return np.asarray(raw, dtype=np.float64)

    def evaluate(self, raw: np.ndarray) -> tuple[np.ndarray | None, float, Any]:
        """``(K_size over the archive, log prior, state)``; None for the matrix when the kernel is zero."""
        if not self.n_params:
            return None, 0.0, None
        empty_jump, grand_jump, variance, length = self._values(raw)
        p = self.p
        KS = size_kernel_matrix(p, empty_jump, grand_jump, 0.0, length)
        R = D2 = None
        lp = 0.0
        if self.trend:
            sizes = np.arange(p + 1, dtype=np.float64)
            D2 = ((sizes[:, None] - sizes[None, :]) / (length * p)) ** 2
            R = np.exp(-0.5 * D2)
            KS = KS + variance * R
            z = (math.log(length) - SIZE_LENGTHSCALE_PRIOR[0]) / SIZE_LENGTHSCALE_PRIOR[1]
            lp = -0.5 * z**2  # normal prior on log(size lengthscale), up to a constant
        return KS.ravel()[self.pairs].reshape(self.t, self.t), lp, (length, R, D2)

    def gradient(self, raw: np.ndarray, W: np.ndarray, state: Any) -> np.ndarray:
        """The gradient through ``S^T W S`` (see the class docstring)."""
        g = np.empty(self.n_params)
        if not self.n_params:
            return g
        length, R, D2 = state
        q = self.p + 1
        # d(-log N)/d(size kernel entry (a, b)) = -0.5 [S^T W S]_ab: W summed over the row pairs of each size pair
        Ws = np.bincount(self.pairs, weights=W.ravel(), minlength=q * q).reshape(q, q)
        i = 0
        if self.trend:
            sv = softplus(raw[0])
            g[0] = -0.5 * float(np.sum(Ws * R)) * sigmoid(raw[0])
            # d/d log(sl) of sv R = sv R o D2; the prior adds -z / sd
            z = (math.log(length) - SIZE_LENGTHSCALE_PRIOR[0]) / SIZE_LENGTHSCALE_PRIOR[1]
            inside = abs(raw[1]) < _LOG_SIZE_BOUND  # clipped beyond: a flat objective
            g[1] = (-0.5 * sv * float(np.sum(Ws * R * D2)) + z / SIZE_LENGTHSCALE_PRIOR[1]) * inside
            i = 2
        for kind in self.jump_kinds:
            m = 0 if kind == 0 else self.p
            g[i] = -0.5 * Ws[m, m] * sigmoid(raw[i])
            i += 1
        return g


# -- the registry of named kernels and surrogate modes ------------------------------------------

# base kernels by name; a surrogate mode fits a tuple of them (each with the size kernel as the
# options say). register_kernel adds to both.
BASE_KERNELS: dict[str, KernelSpec] = {"shared": Hamming(ard=False), "ard": Hamming(ard=True), "graded": Graded(),
                                       "additive": SumKernel((Additive(), Rough()), alias="additive")}
SURROGATES: dict[str, tuple[str, ...]] = {
    "auto": ("shared", "ard"), "laplace": ("shared", "ard"), "shared": ("shared",), "ard": ("ard",),
    "graded": ("graded",), "graded-ard": ("graded", "ard"), "graded-auto": ("shared", "graded", "ard"),
    "additive": ("additive",),
}
# how a mode weighs its kernels: BIC (the default) or the Laplace evidence over the lengthscales
EVIDENCE: dict[str, str] = {"laplace": "laplace"}


def register_kernel(name: str, spec: KernelSpec, *, modes: Sequence[str] = ()) -> None:
    """Add ``spec`` as the base kernel ``name`` and as a surrogate mode of that name fitting it alone; ``modes``.

    Existing modes that should also fit it. The size kernel is added to it by the ``size_trend`` /
    ``jumps`` options as to the built-in ones.

    Args:
        name: the kernel's name (and the surrogate mode's).
        spec: the kernel spec.
        modes: existing modes that should also fit it.
    """
    if not isinstance(spec, KernelSpec):
        raise TypeError(f"register_kernel takes a KernelSpec, got {type(spec).__name__}")
    BASE_KERNELS[name] = spec.renamed(name) if spec.name != name else spec
    SURROGATES[name] = (name,)
    for mode in modes:
        check_surrogate(mode)
        if name not in SURROGATES[mode]:
            SURROGATES[mode] = (*SURROGATES[mode], name)


def check_surrogate(surrogate: Any) -> Any:
    """A surrogate.

    A mode name (:data:`SURROGATES`), a :class:`KernelSpec`, or a non-empty sequence of specs with
    distinct names; else ``ValueError``.

    Args:
        surrogate: a mode name, a :class:`KernelSpec`, or a sequence of specs.

    Returns:
        the surrogate (a sequence as a tuple).
    """
    if isinstance(surrogate, KernelSpec):
        return surrogate
    if isinstance(surrogate, (list, tuple)):
        specs = tuple(surrogate)
        if not specs or not all(isinstance(s, KernelSpec) for s in specs):
            raise ValueError(f"surrogate as a sequence must hold KernelSpec objects, got {surrogate!r}")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"the kernels of a surrogate need distinct names, got {names}")
        return specs
    if surrogate not in SURROGATES:
        raise ValueError(f"unknown surrogate {surrogate!r}; choose one of {tuple(SURROGATES)} or give a KernelSpec")
    return surrogate


def check_size_trend(size_trend: bool | str) -> bool | str:
    """``size_trend``.

    False (no trend), True (every kernel with the trend) or ``"both"`` (each kernel with and without
    it, weighed by evidence: the trend is a nested alternative, docs/math.md §15).

    Args:
        size_trend: False, True or ``"both"``.

    Returns:
        ``size_trend`` (a numpy bool as a bool).
    """
    if isinstance(size_trend, (bool, np.bool_)):
        return bool(size_trend)
    if size_trend != "both":
        raise ValueError(f"size_trend must be True, False or 'both', got {size_trend!r}")
    return size_trend


def surrogate_kernels(surrogate: Any, size_trend: bool | str, jumps: bool, rough: bool = False) -> list[KernelSpec]:
    """The kernels a surrogate fits, in fitting order, named as in results.

    A mode fits each of its base kernels; with ``size_trend="both"`` twice, the plain one first
    (its name) and the one with the size trend (its name + ``"+size"``), with True only the latter,
    named as the plain one (the trend is then simply part of the kernel); ``jumps`` adds the jumps
    of the size kernel to every one of them, ``rough`` the rough part (:class:`~shapleig.gp.rough.Rough`)
    without changing their names. A :class:`KernelSpec` (or a sequence of them) is fitted as given:
    ``size_trend``, ``jumps`` and ``rough`` shape the named modes only.

    Args:
        surrogate: a mode name, a :class:`KernelSpec`, or a sequence of specs.
        size_trend: False, True or ``"both"``.
        jumps: add the size kernel's jumps.
        rough: add the rough (white-noise) part of the game to every kernel.

    Returns:
        the kernel specs.
    """
    surrogate = check_surrogate(surrogate)
    if isinstance(surrogate, KernelSpec):
        return [surrogate]
    if isinstance(surrogate, tuple):
        return list(surrogate)
    trend = check_size_trend(size_trend)
    out: list[KernelSpec] = []
    for name in SURROGATES[surrogate]:
        base = BASE_KERNELS[name]
        # one rough part at most (a kernel such as "additive" carries its own)
        extra: tuple[KernelSpec, ...] = (Rough(),) if rough and not any(isinstance(q, Rough) for q in base.parts) else ()
        plain = SumKernel((base, SizeKernel(trend=False, jumps=True), *extra), alias=name) if jumps else \
            (SumKernel((base, *extra), alias=name) if extra else base)
        with_trend = SumKernel((base, SizeKernel(trend=True, jumps=jumps), *extra), alias=name)
        if trend == "both":
            out += [plain, with_trend.renamed(f"{name}+size")]
        else:
            out.append(with_trend if trend else plain)
    return out


def surrogate_evidence(surrogate: Any) -> str:
    """How a surrogate weighs its kernels: ``"bic"`` or ``"laplace"`` (docs/math.md §13).

    Args:
        surrogate: a mode name, or specs.

    Returns:
        ``"bic"`` or ``"laplace"``.
    """
    return EVIDENCE.get(surrogate, "bic") if isinstance(surrogate, str) else "bic"


def plain_hamming(spec: KernelSpec) -> bool:
    """Whether ``spec`` is a Hamming kernel alone (the one kernel the gpytorch engine fits).

    Args:
        spec: a kernel spec.

    Returns:
        whether it is a :class:`Hamming` without ``spread``.
    """
    return isinstance(spec, Hamming) and spec.spread is None
