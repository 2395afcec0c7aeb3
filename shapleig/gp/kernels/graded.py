"""The graded Walsh kernel as a kernel spec: free prior variances for interaction orders 1..3.

The Hamming kernel gives parity U the prior variance ``kappa prod_{j in U} rho_j`` (a geometric law
across orders, docs/math.md §16). :class:`Graded` frees the first orders:

    lambda_U = kappa g_|U| prod_{j in U} rho_j,   g_k free for k = 1..K (K <= 3), g_k = 1 beyond,

with one shared lengthscale (``rho_j = rho``). It stays closed form through the elementary
symmetric polynomials (:mod:`shapleig.gp.kernels.graded_walsh`) for the kernel, its diagonal (``k(z, z)`` is not
the outputscale unless g = 1), every index operator's columns and covariance, and the likelihood
gradient. With g = 1 every product is *the Hamming kernel's own route* (bit-identical to
``Hamming(ard=False)``).

Learned noise: ``learn_noise=True`` (the default) makes the MAP fit learn the observation noise
(:mod:`shapleig.gp.kernels.noise`, :attr:`KernelSpec.learned_noise`).

Warm start: the graded kernel at g = 1 is the shared Hamming kernel, its *twin*
(:attr:`KernelSpec.twin`): a cold fit also starts from the twin's MAP with g = 1
(:meth:`Graded.from_twin`), as :mod:`shapleig.gp.kernel_choice` asks every kernel.

>>> Graded().name, Graded(orders=2).name, Graded().twin, Graded(alias="mine").twin
('graded', 'graded', 'shared', None)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.graded_walsh import (
    graded_diagonal,
    graded_index_columns,
    graded_index_covariance,
    graded_kernel,
)
from shapleig.gp.kernels.hamming import HammingParams
from shapleig.gp.kernels.noise import LEARNED_NOISE, LearnedNoise
from shapleig.gp.kernels.spec import FitTerms, KernelSpec
from shapleig.gp.priors import (
    MIN_LENGTHSCALE,
    MIN_OUTPUTSCALE,
    initial_lengthscale,
    inverse_softplus,
    lengthscale_prior_params,
    sigmoid,
    softplus,
)
from shapleig.gp.walsh import MAX_ORDER, krawtchouk_table

# log g_k ~ N(0, G_LOG_SD^2): g = 1 (the Hamming kernel) a priori, a factor e^2 ~ 7 one sd away
G_LOG_SD = 2.0
# the graded kernel's base name and that of its twin, the shared Hamming kernel (g = 1)
_NAME = "graded"
_TWIN = "shared"
# |log g_k| is clipped here in the optimiser's coordinate (e^12: far beyond any prior mass)
_LOG_G_BOUND = 12.0
_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True, eq=False)
class GradedParams:
    """Values of a :class:`Graded` kernel.

    Equality is exact, by value.

    Attributes:
        lengthscales: float64[p], one shared value repeated p times.
        outputscale: s.
        g: float64[K], the variance factors of orders 1..K (order 0 and orders above K keep 1).
    """

    lengthscales: np.ndarray
    outputscale: float
    g: np.ndarray

    def __post_init__(self) -> None:
        ls = np.array(self.lengthscales, dtype=np.float64)
        if ls.ndim != 1 or ls.shape[0] < 1 or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
            raise ValueError(f"lengthscales must be a finite positive vector of shape (p,), got {ls!r}")
        ls.setflags(write=False)
        object.__setattr__(self, "lengthscales", ls)
        s = float(self.outputscale)
        if not np.isfinite(s) or s <= 0:
            raise ValueError(f"outputscale must be positive and finite, got {s}")
        object.__setattr__(self, "outputscale", s)
        g = np.array(np.atleast_1d(self.g), dtype=np.float64)
        if g.ndim != 1 or not 1 <= g.shape[0] <= MAX_ORDER or not np.all(np.isfinite(g)) or np.any(g < 0):
            raise ValueError(f"g must hold 1..{MAX_ORDER} finite non-negative order variances, got {g!r}")
        g.setflags(write=False)
        object.__setattr__(self, "g", g)

    @property
    def n_players(self) -> int:
        """The number of players p (the length of ``lengthscales``)."""
        return int(self.lengthscales.shape[0])

    @property
    def is_hamming(self) -> bool:
        """True when g = 1: the kernel is the Hamming kernel."""
        return bool(np.all(self.g == 1.0))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GradedParams):
            return NotImplemented
        return (np.array_equal(self.lengthscales, other.lengthscales) and self.outputscale == other.outputscale
                and np.array_equal(self.g, other.g))

    def __hash__(self) -> int:
        return hash((self.lengthscales.tobytes(), self.outputscale, self.g.tobytes()))


@dataclass(frozen=True)
class Graded(KernelSpec):
    """The graded Walsh kernel (docs/math.md §16) with one shared lengthscale, as a kernel spec.

    Args:
        orders: K, the number of orders with a free variance factor (1..3).
        learn_noise: the MAP fit also learns the observation noise (see the module docstring).
        alias: the name in results (None: ``"graded"``).

    Priors: the Hamming kernel's (LogNormal lengthscale, flat outputscale) and ``log g_k ~ N(0, 2^2)``.

    Example:
        >>> import numpy as np
        >>> from shapleig.gp.kernels.hamming import Hamming, HammingParams
        >>> Z = np.array([[0, 1, 1], [1, 0, 0]], dtype=bool)
        >>> one = GradedParams(np.full(3, 0.8), 1.2, [1.0, 1.0, 1.0])
        >>> bool(np.array_equal(Graded().matrix(one, Z, Z),
        ...                     Hamming(ard=False).matrix(HammingParams(np.full(3, 0.8), 1.2), Z, Z)))
        True
    """

    orders: int = MAX_ORDER
    learn_noise: bool = True
    alias: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.orders, bool) or not isinstance(self.orders, (int, np.integer)) \
                or not 1 <= int(self.orders) <= MAX_ORDER:
            raise ValueError(f"orders must be an integer in 1..{MAX_ORDER}, got {self.orders!r}")
        object.__setattr__(self, "orders", int(self.orders))
        object.__setattr__(self, "learn_noise", bool(self.learn_noise))

    @property
    def name(self) -> str:
        """``alias``, else ``"graded"``."""
        return self.alias or _NAME

    @property
    def learned_noise(self) -> LearnedNoise | None:
        """The learned noise (:mod:`shapleig.gp.kernels.noise`) when ``learn_noise``, else None."""
        return LEARNED_NOISE if self.learn_noise else None

    def nested_twin(self, name: str) -> str | None:
        """``name`` with ``"shared"`` for ``"graded"`` (e.g. ``"shared+size"`` for ``"graded+size"``); None without it."""
        return name.replace(_NAME, _TWIN) if _NAME in name else None

    def from_twin(self, params: Any) -> GradedParams | None:
        """The shared twin's :class:`~shapleig.gp.kernels.hamming.HammingParams` with g = 1; None for other params."""
        if not isinstance(params, HammingParams):
            return None
        return GradedParams(params.lengthscales, params.outputscale, np.ones(self.orders))

    def check_params(self, params: Any) -> GradedParams:
        """``params`` if it is a :class:`GradedParams` with one shared lengthscale and K order factors, else ``ValueError``."""
        if not isinstance(params, GradedParams):
            raise ValueError(f"the params of a graded kernel are GradedParams, got {type(params).__name__}")
        if params.g.shape[0] != self.orders:
            raise ValueError(f"a graded kernel with {self.orders} free orders needs {self.orders} g values, "
                             f"got {params.g.shape[0]}")
        if not np.all(params.lengthscales == params.lengthscales[0]):
            raise ValueError("a graded kernel has one shared lengthscale (repeated p times), got "
                             f"{params.lengthscales}")
        return params

    def initial_params(self, n_players: int) -> GradedParams:
        """Lengthscale at its prior mode, outputscale ``softplus(0)``, g = 1 (today's shared kernel)."""
        return GradedParams(np.full(int(n_players), initial_lengthscale(int(n_players))), math.log(2.0),
                            np.ones(self.orders))

    def warm_params(self, params: Any | None, n_players: int) -> GradedParams:
        """``params`` as a start: a shared lengthscale (the geometric mean of given ones), g kept or 1."""
        if params is None:
            return self.initial_params(n_players)
        ls = np.exp(np.log(np.broadcast_to(np.asarray(params.lengthscales, dtype=np.float64), (n_players,))).mean())
        g = getattr(params, "g", None)
        g = np.ones(self.orders) if g is None or np.shape(g) != (self.orders,) else g
        return GradedParams(np.full(n_players, ls), params.outputscale, g)

    def n_players(self, params: GradedParams) -> int:
        """The number of players of ``params``."""
        return params.n_players

    def describe(self, params: GradedParams) -> dict[str, Any]:
        """The lengthscales, the outputscale and the order variances g."""
        return {"lengthscales": params.lengthscales.tolist(), "outputscale": params.outputscale,
                "order_variances": params.g.tolist()}

    def matrix(self, params: GradedParams, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """The graded kernel between the rows of ``Z1`` and ``Z2`` (:func:`~shapleig.gp.kernels.graded_walsh.graded_kernel`)."""
        return graded_kernel(Z1, Z2, params.lengthscales, params.outputscale, params.g)

    def diagonal(self, params: GradedParams, Z: np.ndarray) -> np.ndarray:
        """k(z, z) for every row: the same for all (the kernel is stationary), the outputscale when g = 1."""
        if params.is_hamming:
            return np.full(np.shape(Z)[0], params.outputscale)
        return np.full(np.shape(Z)[0], graded_diagonal(params.lengthscales, params.outputscale, params.g))

    def index_columns(self, params: GradedParams, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """Closed form through the order-k parts (:mod:`shapleig.gp.kernels.graded_walsh`); the Hamming route when g = 1."""
        if params.is_hamming:  # the Hamming route itself: g = 1 reproduces today's kernel bit for bit
            return operator.hamming_columns(Z, params.lengthscales, params.outputscale)
        return graded_index_columns(Z, params.lengthscales, params.outputscale, params.g, operator)

    def index_covariance(self, params: GradedParams, operator: IndexOperator) -> np.ndarray:
        """Closed form through the order-k parts (:mod:`shapleig.gp.kernels.graded_walsh`); the Hamming route when g = 1."""
        if params.is_hamming:
            return operator.hamming_covariance(params.lengthscales, params.outputscale)
        return graded_index_covariance(params.lengthscales, params.outputscale, params.g, operator)

    def fit_terms(self, X: np.ndarray) -> "GradedFit":
        """The graded share of the MAP problem (:class:`GradedFit`)."""
        return GradedFit(X, self.orders)

    def n_params(self, X: np.ndarray) -> int:
        """The count: outputscale, lengthscale, K order factors and a learned noise."""
        return 2 + self.orders + int(self.learn_noise)


class GradedFit(FitTerms):
    """The graded kernel's share of the MAP problem.

    Coordinates ``(raw_s, raw_l, log g_1..log g_K)`` with ``s = softplus(raw_s)``,
    ``l = 1e-6 + softplus(raw_l)`` (as :class:`~shapleig.gp.kernels.hamming.HammingFit`).

    With one shared lengthscale the kernel is a function of the Hamming distance d alone
    (docs/math.md §16): ``f(d) = s e^{-d/(p l)} + sum_k (g_k - 1) kappa rho^k Kraw_k(d)`` (Krawtchouk
    values, exact integers). An evaluation builds the p + 1 values f(0..p) and looks them up; the gradient folds
    ``W`` by distance once (``W_d = sum_{ab: d_ab = d} W_ab``) and contracts it with ``df/dtheta``,
    O(t^2) per step besides the Cholesky.

    Args:
        X: ``float64[t, p]`` of 0/1, the archive.
        orders: K, the orders with a free variance factor.
    """

    def __init__(self, X: np.ndarray, orders: int) -> None:
        self.X = np.asarray(X, dtype=bool)
        self.p = self.X.shape[1]
        self.orders = int(orders)
        self.prior_loc, self.prior_scale = lengthscale_prior_params(self.p)
        self.n_params = 2 + self.orders
        self.lengthscales = slice(1, 2)
        Xf = self.X.astype(np.float64)
        self.distance = np.rint(Xf @ (1.0 - Xf).T + (1.0 - Xf) @ Xf.T).astype(np.int64)
        self.flat = self.distance.ravel()
        self.kraw = np.array([krawtchouk_table(self.p, k) for k in range(1, self.orders + 1)])  # (K, p+1)
        self.d = np.arange(self.p + 1, dtype=np.float64)

    def pack(self, params: GradedParams) -> np.ndarray:
        """``(raw_s, raw_l, log g_1..log g_K)`` from ``params``."""
        ls = float(params.lengthscales[0])
        log_g = np.log(np.maximum(np.asarray(params.g, dtype=np.float64), math.exp(-_LOG_G_BOUND)))
        return np.concatenate([[float(inverse_softplus(params.outputscale)),
                                float(inverse_softplus(max(ls - MIN_LENGTHSCALE, 1e-300)))], log_g])

    def _values(self, raw: np.ndarray) -> tuple[float, float, np.ndarray]:
        log_g = np.clip(raw[2:], -_LOG_G_BOUND, _LOG_G_BOUND)
        return max(float(softplus(raw[0])), MIN_OUTPUTSCALE), float(MIN_LENGTHSCALE + softplus(raw[1])), np.exp(log_g)

    def unpack(self, raw: np.ndarray) -> GradedParams:
        """The params at ``raw`` (the shared lengthscale repeated p times)."""
        s, ls, g = self._values(raw)
        return GradedParams(np.full(self.p, ls), s, g)

    def _log_prior(self, ls: float, raw_g: np.ndarray) -> tuple[float, float, np.ndarray]:
        """(log density, its derivative wrt l, wrt the log g coordinates)."""
        u = math.log(ls)
        z = (u - self.prior_loc) / self.prior_scale
        lp = -0.5 * z**2 - u - math.log(self.prior_scale) - 0.5 * _LOG_2PI
        dl = -(z / self.prior_scale + 1.0) / ls
        zg = np.clip(raw_g, -_LOG_G_BOUND, _LOG_G_BOUND) / G_LOG_SD
        lp += float(np.sum(-0.5 * zg**2 - math.log(G_LOG_SD) - 0.5 * _LOG_2PI))
        return float(lp), dl, -zg / G_LOG_SD

    def profile(self, s: float, ls: float, g: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``f(d)`` for d = 0..p (float64[p+1]) and its derivatives wrt s, l and each g_k.

        Every term is proportional to s: the profile is built at s = 1 and scaled (so an
        outputscale that underflows to 0 gives a zero kernel, not a division by zero).

        Args:
            s: the outputscale.
            ls: the shared lengthscale.
            g: float64[K], the order variance factors.

        Returns:
            ``(f, {"s": df/ds, "l": df/dl, "g": df/dg_k per row})``, each by distance d = 0..p.
        """
        p = self.p
        ham = np.exp(-self.d / (p * ls))
        rho = math.tanh(1.0 / (2.0 * p * ls))
        log_kappa = -p * math.log1p(rho)  # kappa / s
        k = np.arange(1, self.orders + 1, dtype=np.float64)
        scale = np.exp(log_kappa + k * math.log(rho)) if rho > 0 else np.zeros(self.orders)  # kappa rho^k / s
        parts = scale[:, None] * self.kraw  # (K, p+1): the order-k parts by distance, per unit s
        unit = ham + (g - 1.0) @ parts
        drho = -(1.0 - rho * rho) / (2.0 * p * ls * ls)
        # d(kappa rho^k)/dl = kappa rho^k (k / rho - p / (1 + rho)) drho/dl
        dlog = (k / rho - p / (1.0 + rho)) * drho if rho > 0 else np.zeros(self.orders)
        dl = ham * self.d / (p * ls * ls) + ((g - 1.0) * dlog) @ parts
        return s * unit, {"s": unit, "l": s * dl, "g": s * parts}

    def evaluate(self, raw: np.ndarray) -> tuple[np.ndarray, float, Any]:
        """``(K, log prior, state)``: the kernel looked up from its p + 1 values by Hamming distance."""
        s, ls, g = self._values(raw)
        f, df = self.profile(s, ls, g)
        lp, dl, dg = self._log_prior(ls, raw[2:])
        return f[self.distance], lp, (g, df, dl, dg)

    def gradient(self, raw: np.ndarray, W: np.ndarray, state: Any) -> np.ndarray:
        """The gradient through ``W`` folded by Hamming distance (see the class docstring)."""
        g, df, dl, dg = state
        Wd = np.bincount(self.flat, weights=W.ravel(), minlength=self.p + 1)  # W folded by distance
        out = np.empty(self.n_params)
        out[0] = -0.5 * float(Wd @ df["s"]) * sigmoid(raw[0])
        out[1] = (-0.5 * float(Wd @ df["l"]) - dl) * sigmoid(raw[1])
        inside = np.abs(raw[2:]) < _LOG_G_BOUND  # clipped beyond: flat
        out[2:] = (-0.5 * (df["g"] @ Wd) * g - dg) * inside
        return out

    def resample(self, raw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The lengthscale redrawn from its prior, the outputscale kept, g back at 1 (its prior's centre)."""
        ls = math.exp(self.prior_loc + self.prior_scale * rng.standard_normal())
        out = raw.copy()
        out[1] = float(inverse_softplus(max(ls - MIN_LENGTHSCALE, 1e-300)))
        out[2:] = 0.0
        return out


__all__ = ["G_LOG_SD", "Graded", "GradedFit", "GradedParams"]
