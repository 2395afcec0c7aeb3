"""The size kernel (docs/math.md §15): ``k_size(|z|, |z'|)``, an additive part of the surrogate.

A squared-exponential trend in the coalition size (``trend=True``) and/or independent jumps at the
empty and the grand coalition (``jumps=True``); params :class:`SizeParams`. Its index products go
through the index's size coefficients beta (:meth:`~shapleig.gp.index_esp.IndexOperator.size_columns`,
:meth:`~shapleig.gp.index_esp.IndexOperator.size_covariance`); its share of the MAP problem is
:class:`SizeFit`.

>>> SizeKernel(trend=True, jumps=False).name
'size'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.spec import FitTerms, KernelSpec, finite_value
from shapleig.gp.priors import (
    INITIAL_JUMP,
    INITIAL_SIZE_LENGTHSCALE,
    INITIAL_SIZE_VARIANCE,
    SIZE_LENGTHSCALE_PRIOR,
    inverse_softplus,
    sigmoid,
    softplus,
)

# |log(size lengthscale)| is clipped here (e^8 ~ 3000 size ranges: flat; e^-8: white noise over
# sizes), so a line search that strays far cannot overflow
_LOG_SIZE_BOUND = 8.0
# a warm start from a (near) zero variance packs this instead: softplus never reaches 0, and from far
# below it the gradient in the raw coordinate (the sigmoid) is too small to move it again
_MIN_SIZE_VARIANCE = 1e-3


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
            object.__setattr__(self, name, finite_value(name, getattr(self, name)))
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



__all__ = ["SizeFit", "SizeKernel", "SizeParams", "n_extremes", "size_kernel_info", "size_kernel_matrix"]
