"""The rough part of a game: a white-noise kernel over coalitions, added to the smooth kernels.

``k_rough(z, z') = r [z = z']``: every coalition carries an independent part of variance ``r``
that no neighbouring coalition predicts. Real games have one (a model retrained on a data subset,
a forest, a sentiment model on a few tokens: values that jump from one coalition to the next),
and a smooth kernel that must interpolate it exactly is pushed to short lengthscales and is
overconfident about the coalitions it has not seen. As part of the game (not observation noise)
the rough part is known exactly where evaluated and unknown elsewhere, so it enters the index's
posterior through every unevaluated coalition's weight: for the Shapley value the prior
covariance is ``r A A^T``, largest for the extreme coalitions (a singleton and its complement each
weigh 1/p), which the design then values accordingly. ``r`` is fitted by MAP with the other
hyperparameters (flat prior on ``softplus^-1(r)``, as the outputscale); it goes to its floor on a
smooth game. On the archive, whose coalitions are distinct, it adds ``r I`` to the kernel matrix.

In the Walsh basis the white kernel is flat over all orders (the Hamming kernel's limit of a
vanishing lengthscale, ``rho_j = 1``), which is how its index products are computed: the Hamming
kernel's ESP routes (:mod:`shapleig.gp.index_esp`) with lengthscale :data:`WHITE_LENGTHSCALE`, where
``exp(-1 / (p l))`` is exactly 0 (checked against dense ``r B B^T`` in tests/gp/test_rough.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.games.coalitions import coalition_keys
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.spec import FitTerms, KernelSpec
from shapleig.gp.priors import MIN_OUTPUTSCALE, inverse_softplus, sigmoid, softplus

# A lengthscale at which the Hamming kernel is the white kernel in float64 (1 / (p l) overflows to
# inf, so every mismatch factor exp(-1 / (p l)) is exactly 0), for any p.
WHITE_LENGTHSCALE = 1e-300
# The rough variance's starting value (standardised units: 1% of the values' variance).
INITIAL_ROUGH_VARIANCE = 1e-2


@dataclass(frozen=True)
class RoughParams:
    """The rough part's variance ``r`` (standardised units).

    Attributes:
        variance: r >= ``MIN_OUTPUTSCALE``.
    """

    variance: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.variance) and self.variance > 0):
            raise ValueError(f"the rough variance must be positive and finite, got {self.variance!r}")


@dataclass(frozen=True)
class Rough(KernelSpec):
    """The white-noise kernel ``r [z = z']`` (module docstring); added to a smooth kernel with ``+``.

    >>> from shapleig.gp.kernels import Hamming
    >>> (Hamming(ard=False) + Rough()).name
    'shared+rough'

    Attributes:
        alias: the part's name in results; None: ``"rough"``.
    """

    alias: str | None = None

    @property
    def name(self) -> str:
        """``alias``, else ``"rough"``."""
        return self.alias or "rough"

    def check_params(self, params: Any) -> RoughParams:
        """``params`` if it is a :class:`RoughParams`, else ``ValueError``."""
        if not isinstance(params, RoughParams):
            raise ValueError(f"the params of a rough kernel are RoughParams, got {type(params).__name__}")
        return params

    def initial_params(self, n_players: int) -> RoughParams:
        """``INITIAL_ROUGH_VARIANCE``."""
        return RoughParams(INITIAL_ROUGH_VARIANCE)

    def fallback_params(self, n_players: int) -> RoughParams:
        """The floor: a failed fit keeps no rough part."""
        return RoughParams(MIN_OUTPUTSCALE)

    def warm_params(self, params: Any | None, n_players: int) -> RoughParams:
        """``params`` when they are rough params, else the initial ones."""
        return params if isinstance(params, RoughParams) else self.initial_params(n_players)

    def describe(self, params: RoughParams) -> dict[str, Any]:
        """The rough variance (standardised units)."""
        return {"rough_variance": params.variance}

    def matrix(self, params: RoughParams, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """``r`` where the rows of ``Z1`` and ``Z2`` are the same coalition, 0 elsewhere."""
        A, B = np.asarray(Z1, dtype=bool), np.asarray(Z2, dtype=bool)
        if not (A.size and B.size):
            return np.zeros((A.shape[0], B.shape[0]))
        ids_a, ids_b = coalition_ids(A, B)
        # compared as ids: an m1 x m2 x p boolean temporary would be 10 GB at t = 10^4, p = 100
        out = (ids_a[:, None] == ids_b[None, :]).astype(np.float64)
        out *= params.variance
        return out

    def diagonal(self, params: RoughParams, Z: np.ndarray) -> np.ndarray:
        """``r`` for every row."""
        return np.full(np.shape(Z)[0], params.variance)

    def index_columns(self, params: RoughParams, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """``r B e_z``: the Hamming route at :data:`WHITE_LENGTHSCALE`."""
        return operator.hamming_columns(Z, np.full(operator.n_players, WHITE_LENGTHSCALE), params.variance)

    def index_covariance(self, params: RoughParams, operator: IndexOperator) -> np.ndarray:
        """``r B B^T``: the Hamming route at :data:`WHITE_LENGTHSCALE`."""
        return operator.hamming_covariance(np.full(operator.n_players, WHITE_LENGTHSCALE), params.variance)

    def fit_terms(self, X: np.ndarray) -> "RoughFit":
        """The rough share of the MAP problem (:class:`RoughFit`)."""
        return RoughFit(X)

    def n_params(self, X: np.ndarray) -> int:
        """One: the variance."""
        return 1


def coalition_ids(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of the rows of ``A`` and ``B``, equal exactly when the coalitions are.

    Args:
        A: ``bool[m1, p]``.
        B: ``bool[m2, p]``.

    Returns:
        ``(int[m1], int[m2])``.
    """
    first: dict[bytes, int] = {}  # key -> id of its first row, in row order
    keys = coalition_keys(np.concatenate([A, B]))
    ids = np.fromiter((first.setdefault(k, len(first)) for k in keys), dtype=np.int64, count=len(keys))
    return ids[:A.shape[0]], ids[A.shape[0]:]


class RoughFit(FitTerms):
    """The rough kernel's share of the MAP problem: one coordinate ``raw_r``, ``r = softplus(raw_r)``.

    The archive's coalitions are distinct, so the part's matrix is ``r I`` and its gradient
    ``-0.5 tr(W) sigmoid(raw_r)`` (flat prior).

    Args:
        X: ``bool[t, p]``, the archive (distinct coalitions).
    """

    n_params = 1

    def __init__(self, X: np.ndarray) -> None:
        self.t = int(np.shape(X)[0])

    def pack(self, params: RoughParams) -> np.ndarray:
        """``[softplus^-1(r)]``."""
        return np.array([float(inverse_softplus(params.variance))])

    def unpack(self, raw: np.ndarray) -> RoughParams:
        """The variance at ``raw``, at least ``MIN_OUTPUTSCALE``."""
        return RoughParams(max(float(softplus(raw[0])), MIN_OUTPUTSCALE))

    def evaluate(self, raw: np.ndarray) -> tuple[np.ndarray, float, Any]:
        """``(r I, 0, None)``: a flat prior."""
        return self.unpack(raw).variance * np.eye(self.t), 0.0, None

    def gradient(self, raw: np.ndarray, W: np.ndarray, state: Any) -> np.ndarray:
        """``d(-log N)/d raw_r = -0.5 tr(W) sigmoid(raw_r)`` (the floor's kink ignored, as the outputscale's)."""
        return np.array([-0.5 * float(np.trace(W)) * float(sigmoid(raw[0]))])

    def resample(self, raw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A restart from ``r`` drawn log-uniformly over [1e-4, 1] (the value of the part is unknown a priori)."""
        return np.array([float(inverse_softplus(math.exp(rng.uniform(math.log(1e-4), 0.0))))])


__all__ = ["INITIAL_ROUGH_VARIANCE", "WHITE_LENGTHSCALE", "Rough", "RoughFit", "RoughParams"]
