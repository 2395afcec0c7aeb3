"""The additive kernel: a Bayesian linear model of the game in the players' indicators.

``k_add(z, z') = a (1/p) sum_j sigma_j(z, z')`` with ``sigma_j = +1`` where z and z' agree on
player j and -1 where they differ: the order-1 part of the Walsh basis alone (docs/math.md §16,
``rho_j = 1``), i.e. ``v(z) = c + sum_j beta_j (2 z_j - 1)`` with ``beta_j ~ N(0, a / p)``. Under it every
index is a linear function of beta (the Shapley and Banzhaf values of player j are ``2 beta_j``), so
with the rough part (:mod:`shapleig.gp.kernels.rough`) beside it the posterior is that of a least-squares
regression of the values on the indicators with a fitted residual variance, the Bayesian
counterpart of KernelSHAP's regression. It is a *structure* the read-out weighs against the fitted
surrogate (:mod:`shapleig.gp.structures`): where the data pin the game's additive part down poorly,
its intervals are wide, and where the smooth kernels have explained the data as noise (a short
lengthscale spreads phi evenly), its mean shows the additive signal they missed.

Index products are the order-1 Walsh products (:func:`~shapleig.gp.walsh.order_index_columns`,
:func:`~shapleig.gp.walsh.order_index_covariance`) with ``rho = 1`` and ``kappa = a / p``, the empty
coalition held out as the operator asks (docs/math.md §14.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.spec import FitTerms, KernelSpec
from shapleig.gp.priors import MIN_OUTPUTSCALE, inverse_softplus, sigmoid, softplus
from shapleig.gp.walsh import order_index_columns, order_index_covariance


@dataclass(frozen=True)
class AdditiveParams:
    """The additive part's variance ``a`` (standardised units; ``k(z, z) = a``) for ``n_players`` players.

    Attributes:
        variance: a > 0.
        n_players: the number of players p.
    """

    variance: float
    n_players: int

    def __post_init__(self) -> None:
        if not (np.isfinite(self.variance) and self.variance > 0):
            raise ValueError(f"the additive variance must be positive and finite, got {self.variance!r}")


def agreement(Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
    """``(1/p) sum_j sigma_j(z, z')``: 1 - 2 d / p with d the Hamming distance, float64[m1, m2].

    Args:
        Z1: bool[m1, p].
        Z2: bool[m2, p].

    Returns:
        float64[m1, m2] in [-1, 1].
    """
    A, B = np.asarray(Z1, dtype=np.float64), np.asarray(Z2, dtype=np.float64)
    p = A.shape[1]
    mismatch = A @ (1.0 - B).T + (1.0 - A) @ B.T
    return 1.0 - 2.0 * mismatch / p


@dataclass(frozen=True)
class Additive(KernelSpec):
    """``a (1/p) sum_j sigma_j(z, z')`` (module docstring).

    >>> from shapleig.gp.kernels.rough import Rough
    >>> (Additive() + Rough()).name
    'additive+rough'

    Attributes:
        alias: the kernel's name in results; None: ``"additive"``.
    """

    alias: str | None = None

    @property
    def name(self) -> str:
        """``alias``, else ``"additive"``."""
        return self.alias or "additive"

    def check_params(self, params: Any) -> AdditiveParams:
        """``params`` if it is an :class:`AdditiveParams`, else ``ValueError``."""
        if not isinstance(params, AdditiveParams):
            raise ValueError(f"the params of an additive kernel are AdditiveParams, got {type(params).__name__}")
        return params

    def initial_params(self, n_players: int) -> AdditiveParams:
        """Variance 1 (standardised units)."""
        return AdditiveParams(1.0, int(n_players))

    def warm_params(self, params: Any | None, n_players: int) -> AdditiveParams:
        """``params`` when they are additive params, else the initial ones."""
        return AdditiveParams(params.variance, int(n_players)) if isinstance(params, AdditiveParams) \
            else self.initial_params(n_players)

    def n_players(self, params: AdditiveParams) -> int:
        """The number of players of ``params``."""
        return params.n_players

    def describe(self, params: AdditiveParams) -> dict[str, Any]:
        """The additive variance (standardised units)."""
        return {"additive_variance": params.variance}

    def matrix(self, params: AdditiveParams, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """``a (1 - 2 d / p)``."""
        return params.variance * agreement(Z1, Z2)

    def diagonal(self, params: AdditiveParams, Z: np.ndarray) -> np.ndarray:
        """``a`` for every row."""
        return np.full(np.shape(Z)[0], params.variance)

    def _walsh(self, params: AdditiveParams, p: int) -> tuple[np.ndarray, float]:
        return np.ones(p), params.variance / p

    def index_columns(self, params: AdditiveParams, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """The order-1 Walsh columns (``rho = 1``), the empty coalition held out as the operator asks."""
        p = operator.n_players
        rho, kappa = self._walsh(params, p)
        base = operator.without_hold_out()
        cols = order_index_columns(Z, rho, kappa, 1, base)
        if operator.hold_out_empty:
            empty = np.zeros((1, p), dtype=bool)
            cols = operator.held_out_columns(cols, self.matrix(params, empty, Z)[0])
        return cols

    def index_covariance(self, params: AdditiveParams, operator: IndexOperator) -> np.ndarray:
        """The order-1 Walsh covariance (``rho = 1``), the empty coalition held out as the operator asks."""
        p = operator.n_players
        rho, kappa = self._walsh(params, p)
        base = operator.without_hold_out()
        M = order_index_covariance(rho, kappa, 1, base)
        if operator.hold_out_empty:
            empty = np.zeros((1, p), dtype=bool)
            u = order_index_columns(empty, rho, kappa, 1, base)[:, 0]
            M = operator.held_out_covariance(M, u, params.variance)
        return 0.5 * (M + M.T)

    def fit_terms(self, X: np.ndarray) -> "AdditiveFit":
        """The additive share of the MAP problem (:class:`AdditiveFit`)."""
        return AdditiveFit(X)

    def n_params(self, X: np.ndarray) -> int:
        """One: the variance."""
        return 1


class AdditiveFit(FitTerms):
    """The additive kernel's share of the MAP problem: ``a = softplus(raw_a)``, flat prior.

    Args:
        X: ``bool[t, p]``, the archive.
    """

    n_params = 1

    def __init__(self, X: np.ndarray) -> None:
        self.L = agreement(X, X)
        self.p = int(np.shape(X)[1])

    def pack(self, params: AdditiveParams) -> np.ndarray:
        """``[softplus^-1(a)]``."""
        return np.array([float(inverse_softplus(params.variance))])

    def unpack(self, raw: np.ndarray) -> AdditiveParams:
        """The variance at ``raw``, at least ``MIN_OUTPUTSCALE``."""
        return AdditiveParams(max(float(softplus(raw[0])), MIN_OUTPUTSCALE), self.p)

    def evaluate(self, raw: np.ndarray) -> tuple[np.ndarray, float, Any]:
        """``(a L, 0, None)`` with L the agreement matrix of the archive."""
        return self.unpack(raw).variance * self.L, 0.0, None

    def gradient(self, raw: np.ndarray, W: np.ndarray, state: Any) -> np.ndarray:
        """``d(-log N)/d raw_a = -0.5 sum(W o L) sigmoid(raw_a)``."""
        return np.array([-0.5 * float(np.sum(W * self.L)) * float(sigmoid(raw[0]))])

    def resample(self, raw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A restart from ``a`` drawn log-uniformly over [1e-2, 10]."""
        return np.array([float(inverse_softplus(float(np.exp(rng.uniform(np.log(1e-2), np.log(10.0))))))])


__all__ = ["Additive", "AdditiveFit", "AdditiveParams", "agreement"]
