"""Synthetic games with closed-form Shapley values (docs/games.md §3-§6).

Every game has ``n_players``, a vectorised deterministic ``__call__(bool[m, p]) -> float64[m]``,
``exact_values() -> float64[p]``, a short ``name`` and ``params()`` (its defining parameters).
"""

from __future__ import annotations

from fractions import Fraction
from math import comb
from typing import Any, Sequence

import numpy as np

from shapleig.errors import GameError
from shapleig.games.coalitions import as_coalition_matrix
from shapleig.games.exact import shapley_weights
from shapleig.games.game import check_n_players

# Standard airport instance (Castro, Gomez & Tejada 2009): (cost level, number of players).
STANDARD_AIRPORT_LEVELS: tuple[tuple[int, int], ...] = (
    (1, 8), (2, 12), (3, 6), (4, 14), (5, 8), (6, 9), (7, 13), (8, 10), (9, 10), (10, 10),
)

# n = 50 weighted voting instance of the LSS paper (EPIC test case normal_sqrd.n50.q249646).
WVG_N50_QUOTA = 249646
WVG_N50_WEIGHTS: tuple[int, ...] = (
    9801, 3844, 15625, 9216, 8649, 10201, 6400, 13924, 7396, 8281, 14161, 12321, 13225, 8836,
    11449, 12544, 6084, 10404, 16384, 8281, 5625, 11449, 8836, 9409, 12996, 3844, 6561, 4225,
    6400, 9409, 7569, 11664, 12769, 12100, 13689, 4489, 14641, 9604, 7396, 8464, 11881, 14161,
    5329, 19600, 14884, 4096, 9025, 8836, 17689, 5625,
)

# The all-players weighted-voting DP subtracts counts; int64 holds them exactly while 2^n < 2^63.
_INT64_DP_MAX_PLAYERS = 62


class SyntheticGame:
    """Shared plumbing: coalition validation and a readable repr."""

    n_players: int
    name: str

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = as_coalition_matrix(coalitions, self.n_players)
        return self._values(z)

    def _values(self, z: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def exact_values(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def params(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, n_players={self.n_players})"


# --------------------------------------------------------------------------------------------
# Airport
# --------------------------------------------------------------------------------------------
def standard_airport_costs() -> np.ndarray:
    """Costs ``float64[100]`` of the standard 100-player airport game, in player order."""
    return np.concatenate([np.full(count, float(level)) for level, count in STANDARD_AIRPORT_LEVELS])


def airport_shapley(costs: np.ndarray) -> np.ndarray:
    """Closed-form airport Shapley values ``float64[n]`` for ``costs`` (any order, ties allowed).

    Sorted costs c_(1) <= ... <= c_(n), c_(0) = 0: phi_(k) = sum_{j<=k} (c_(j) - c_(j-1)) / (n-j+1).
    Equal costs get equal values automatically (their increments are zero).
    """
    c = np.asarray(costs, dtype=np.float64)
    n = c.shape[0]
    order = np.argsort(c, kind="stable")
    sorted_c = c[order]
    increments = np.diff(np.concatenate([[0.0], sorted_c])) / (n - np.arange(n))
    phi = np.empty(n)
    phi[order] = np.cumsum(increments)
    return phi


class AirportGame(SyntheticGame):
    """Airport game ``v(S) = max_{i in S} c_i``, ``v(empty) = 0`` (docs/games.md §3).

    ``costs`` (non-negative, finite) defaults to the standard 100-player instance.
    """

    def __init__(self, costs: Sequence[float] | np.ndarray | None = None):
        c = standard_airport_costs() if costs is None else np.asarray(costs, dtype=np.float64).ravel()
        self.n_players = check_n_players(c.shape[0])
        if not np.all(np.isfinite(c)) or np.any(c < 0):
            raise GameError("airport costs must be finite and non-negative")
        self.costs = c
        self.standard = costs is None
        self.name = "airport_n100" if self.standard else f"airport_n{self.n_players}"

    def _values(self, z: np.ndarray) -> np.ndarray:
        # max over members; an empty coalition gives 0 (costs are >= 0).
        return np.max(np.where(z, self.costs[None, :], 0.0), axis=1, initial=0.0)

    def exact_values(self) -> np.ndarray:
        return airport_shapley(self.costs)

    def params(self) -> dict[str, Any]:
        return {"game": "airport", "n_players": self.n_players, "costs": self.costs.tolist()}


# --------------------------------------------------------------------------------------------
# Shoe
# --------------------------------------------------------------------------------------------
class ShoeGame(SyntheticGame):
    """Shoe game: L = first n/2 players, R = the rest, ``v(S) = min(|S & L|, |S & R|)`` (docs/games.md §4)."""

    def __init__(self, n_players: int = 50):
        n = check_n_players(n_players)
        if n % 2:
            raise GameError(f"the shoe game needs an even number of players, got {n}")
        self.n_players = n
        self.name = f"shoe_n{n}"

    def _values(self, z: np.ndarray) -> np.ndarray:
        half = self.n_players // 2
        return np.minimum(z[:, :half].sum(axis=1), z[:, half:].sum(axis=1)).astype(np.float64)

    def exact_values(self) -> np.ndarray:
        return np.full(self.n_players, 0.5)

    def params(self) -> dict[str, Any]:
        return {"game": "shoe", "n_players": self.n_players}


# --------------------------------------------------------------------------------------------
# Sum of unanimity games
# --------------------------------------------------------------------------------------------
class SumOfUnanimityGame(SyntheticGame):
    """``v(S) = sum_m c_m 1[A_m subset of S]``; ``phi_i = sum_{m: i in A_m} c_m / |A_m|`` (docs/games.md §5).

    variant="svarm": |A_m| uniform on {1..n}, members without replacement, c_m ~ U[0,1) rescaled
    so that sum c_m = 100 (so v(N) = 100). variant="shapiq" (shapiq's SOUM): c_m ~ U[-1,1],
    |A_m| uniform on {min_size..max_size} (default 0..n; an empty A_m only shifts v(empty)).
    Drawn with ``numpy.random.default_rng(seed)``: sizes and members per term, then coefficients.
    """

    VARIANTS = ("svarm", "shapiq")

    def __init__(
        self,
        n_players: int = 20,
        n_terms: int = 50,
        seed: int = 0,
        variant: str = "svarm",
        min_size: int | None = None,
        max_size: int | None = None,
    ):
        n = check_n_players(n_players)
        if variant not in self.VARIANTS:
            raise ValueError(f"unknown SOUG variant {variant!r}; choose one of {self.VARIANTS}")
        if int(n_terms) < 1:
            raise GameError(f"n_terms must be >= 1, got {n_terms}")
        lo = (1 if variant == "svarm" else 0) if min_size is None else int(min_size)
        hi = n if max_size is None else int(max_size)
        if not 0 <= lo <= hi <= n:
            raise GameError(f"term sizes need 0 <= min_size <= max_size <= {n}, got {lo}, {hi}")
        self.n_players, self.n_terms, self.seed, self.variant = n, int(n_terms), int(seed), variant
        self.min_size, self.max_size = lo, hi
        rng = np.random.default_rng(seed)
        members = np.zeros((self.n_terms, n), dtype=bool)
        for m in range(self.n_terms):
            size = int(rng.integers(lo, hi + 1))
            members[m, rng.choice(n, size=size, replace=False)] = True
        if variant == "svarm":
            coef = rng.random(self.n_terms)
            coef *= 100.0 / coef.sum()
        else:
            coef = rng.uniform(-1.0, 1.0, self.n_terms)
        self.members = members  # bool[M, n]: A_m
        self.coefficients = coef  # float64[M]: c_m
        self.name = f"soug_{variant}_n{n}_m{self.n_terms}_s{self.seed}"

    def _values(self, z: np.ndarray) -> np.ndarray:
        # A_m is inside S iff no member of A_m is missing from S.
        missing = (~z).astype(np.int32) @ self.members.T.astype(np.int32)  # (m, M)
        # Row-wise sum (not a BLAS product) so a coalition's value never depends on its batch.
        return np.where(missing == 0, self.coefficients[None, :], 0.0).sum(axis=1)

    def exact_values(self) -> np.ndarray:
        sizes = self.members.sum(axis=1)
        share = np.divide(self.coefficients, sizes, out=np.zeros(self.n_terms), where=sizes > 0)
        return self.members.T.astype(np.float64) @ share

    def params(self) -> dict[str, Any]:
        return {
            "game": "soug",
            "variant": self.variant,
            "n_players": self.n_players,
            "n_terms": self.n_terms,
            "seed": self.seed,
            "min_size": self.min_size,
            "max_size": self.max_size,
        }


# --------------------------------------------------------------------------------------------
# Weighted voting
# --------------------------------------------------------------------------------------------
def _swing_counts_int64(weights: np.ndarray, quota: int) -> dict[int, list[int]]:
    """Swing counts per distinct weight: ``{w: [s_0, ..., s_{n-1}]}`` with ``s_k`` the number of
    size-k coalitions of the other players with total weight in ``[quota - w, quota - 1]``.

    All-players DP in int64 (exact for n <= 62), then removal of one player of weight w:
    ``N^{-i}[k, t] = N[k, t] - N^{-i}[k-1, t-w]`` computed row by row. Weight axis truncated at
    quota - 1 (larger totals never feed back). Requires 1 <= quota.
    """
    n = weights.shape[0]
    width = quota  # t = 0..quota-1
    table = np.zeros((n + 1, width), dtype=np.int64)
    table[0, 0] = 1
    for j, cj in enumerate(weights.tolist()):
        if cj >= width:
            continue  # joining j always jumps past quota - 1: no contribution to the window
        for k in range(j + 1, 0, -1):  # k descending: each player used at most once
            table[k, cj:] += table[k - 1, : width - cj]
    out: dict[int, list[int]] = {}
    for w in sorted(set(weights.tolist())):
        lo = max(0, quota - w)
        counts = []
        prev = None
        for k in range(n):
            row = table[k].copy()
            if prev is not None and w < width:
                row[w:] -= prev[: width - w]
            counts.append(int(row[lo:].sum()))
            prev = row
        out[w] = counts
    return out


def _swing_counts_float(weights: np.ndarray, quota: int) -> dict[int, list[float]]:
    """As :func:`_swing_counts_int64` but one float64 DP per distinct weight, with no
    subtraction (so no cancellation); used for n > 62. Counts are exact up to rounding."""
    n = weights.shape[0]
    width = quota
    out: dict[int, list[float]] = {}
    for w in sorted(set(weights.tolist())):
        others = list(weights.tolist())
        others.remove(w)  # drop one player of weight w
        table = np.zeros((n, width))
        table[0, 0] = 1.0
        for j, cj in enumerate(others):
            if cj >= width:
                continue
            for k in range(j + 1, 0, -1):
                table[k, cj:] += table[k - 1, : width - cj]
        lo = max(0, quota - w)
        out[w] = table[:, lo:].sum(axis=1).tolist()
    return out


class WeightedVotingGame(SyntheticGame):
    """``v(S) = 1[sum_{i in S} c_i >= C]`` with non-negative integer weights c and quota C (docs/games.md §6).

    Exact values by the swing-count DP: ``phi_i = sum_k omega(k) #{S of N\\i: |S| = k,
    C - c_i <= c(S) <= C - 1}``, in exact integers for n <= 62, per-weight float DPs beyond.
    """

    def __init__(self, weights: Sequence[int] | np.ndarray, quota: int):
        w = np.asarray(weights)
        if w.ndim != 1:
            raise GameError(f"weights must be a vector, got shape {w.shape}")
        if not np.issubdtype(w.dtype, np.integer):
            if not (np.all(np.isfinite(w)) and np.all(w == np.round(w))):
                raise GameError("weighted voting weights must be integers")
        w = w.astype(np.int64)
        if np.any(w < 0):
            raise GameError("weighted voting weights must be non-negative")
        if isinstance(quota, (bool, np.bool_)) or not float(quota).is_integer():
            raise GameError(f"the quota must be an integer, got {quota!r}")
        self.n_players = check_n_players(w.shape[0])
        self.weights = w
        self.quota = int(quota)
        self.name = f"wvg_n{self.n_players}_q{self.quota}"
        self._fractions: list[Fraction] | None = None

    def _values(self, z: np.ndarray) -> np.ndarray:
        return (z.astype(np.int64) @ self.weights >= self.quota).astype(np.float64)

    def _trivial(self) -> bool:
        # v constant (quota <= 0: always 1; quota > total weight: always 0): every phi is 0.
        return self.quota <= 0 or self.quota > int(self.weights.sum())

    def exact_fractions(self) -> list[Fraction]:
        """Exact Shapley values as fractions (n <= 62): ``sum_k s_k / (n C(n-1, k))``."""
        if self.n_players > _INT64_DP_MAX_PLAYERS:
            raise GameError(f"exact fractions need n <= {_INT64_DP_MAX_PLAYERS}")
        if self._fractions is None:
            n = self.n_players
            if self._trivial():
                self._fractions = [Fraction(0)] * n
            else:
                per_weight = _swing_counts_int64(self.weights, self.quota)
                frac = {
                    w: sum((Fraction(s, n * comb(n - 1, k)) for k, s in enumerate(counts)), Fraction(0))
                    for w, counts in per_weight.items()
                }
                self._fractions = [frac[int(c)] for c in self.weights]
        return list(self._fractions)

    def exact_values(self) -> np.ndarray:
        if self.n_players <= _INT64_DP_MAX_PLAYERS:
            return np.array([float(f) for f in self.exact_fractions()])
        n = self.n_players
        if self._trivial():
            return np.zeros(n)
        # omega(k) = 1 / (n C(n-1, k)) via log-gamma to avoid overflow for large n; one value per
        # distinct weight so that equal weights get bit-identical values.
        omega = shapley_weights(n)[:n]
        per_weight = _swing_counts_float(self.weights, self.quota)
        value = {w: float(np.dot(np.asarray(counts), omega)) for w, counts in per_weight.items()}
        return np.array([value[int(c)] for c in self.weights])

    def params(self) -> dict[str, Any]:
        return {
            "game": "weighted_voting",
            "n_players": self.n_players,
            "weights": self.weights.tolist(),
            "quota": self.quota,
        }


def weighted_voting_n50() -> WeightedVotingGame:
    """The n = 50 EPIC instance (``normal_sqrd.n50.q249646``) used in the LSS paper."""
    game = WeightedVotingGame(np.array(WVG_N50_WEIGHTS, dtype=np.int64), WVG_N50_QUOTA)
    game.name = "wvg_n50_epic"
    return game


def weighted_voting_family7(quota: int) -> WeightedVotingGame:
    """The 7-player family of the LSS paper: weights [1,2,3,1,1,1,1], quota 1..10."""
    return WeightedVotingGame([1, 2, 3, 1, 1, 1, 1], quota)


SYNTHETIC_GAMES = {
    "airport": AirportGame,
    "shoe": ShoeGame,
    "soug": SumOfUnanimityGame,
    "weighted_voting": WeightedVotingGame,
}


def make_synthetic_game(family: str, **params: Any) -> SyntheticGame:
    """Build a synthetic game by family name (``SYNTHETIC_GAMES``); ``family="wvg_n50"`` gives
    the EPIC instance. ``params`` are the class's constructor arguments."""
    if family == "wvg_n50":
        if params:
            raise ValueError(f"wvg_n50 takes no parameters, got {sorted(params)}")
        return weighted_voting_n50()
    if family not in SYNTHETIC_GAMES:
        raise ValueError(f"unknown synthetic game {family!r}; choose one of {sorted(SYNTHETIC_GAMES) + ['wvg_n50']}")
    return SYNTHETIC_GAMES[family](**params)


__all__ = [
    "SYNTHETIC_GAMES",
    "make_synthetic_game",
    "AirportGame",
    "ShoeGame",
    "SumOfUnanimityGame",
    "WeightedVotingGame",
    "airport_shapley",
    "standard_airport_costs",
    "weighted_voting_family7",
    "weighted_voting_n50",
]
