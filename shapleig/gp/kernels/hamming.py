"""The Hamming kernel (docs/math.md §3), one lengthscale per player (``ard=True``) or one shared.

``k(z, z') = s exp(-(1/p) sum_j [z_j != z'_j] / l_j)``; params :class:`HammingParams`. Its index
products are the ESP routes of :mod:`shapleig.gp.esp` and :mod:`shapleig.gp.index_esp`; its share of
the MAP problem is :class:`HammingFit`.

>>> Hamming(ard=True).name, Hamming(ard=False).name, Hamming(ard=True).per_player
('ard', 'shared', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.gp.esp import hamming_kernel
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.spec import FitTerms, KernelSpec, finite_value
from shapleig.gp.priors import (
    MIN_LENGTHSCALE,
    MIN_OUTPUTSCALE,
    initial_lengthscale,
    inverse_softplus,
    lengthscale_prior_params,
    sigmoid,
    softplus,
)

_LOG_2PI = math.log(2.0 * math.pi)


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
        s = finite_value("outputscale", self.outputscale)
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

    @property
    def per_player(self) -> bool:
        """``ard``: one lengthscale per player."""
        return self.ard

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



__all__ = ["Hamming", "HammingFit", "HammingParams"]
