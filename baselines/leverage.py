"""Leverage SHAP (Musco & Witter, ICLR 2025): paired leverage-score sampling + projected regression.

Design (docs/baselines.md §8). The leverage score of coalition ``z`` in the projected Shapley
regression is ``1 / C(n, |z|)``: every size gets the same total mass. With an oversampling factor
``c``, each complementary pair ``{z, N \\ z}`` is kept with probability ``q_s = min(1, 2c / C(n, s))``,
so the expected number of sampled proper coalitions is ``sum_{s=1}^{n-1} min(C(n, s), 2c)``; ``c``
is solved exactly (the sum is piecewise linear in ``c``) so that this equals ``budget - 2``.
Within a size, pairs are drawn without replacement as ``k_s ~ Binomial(pool_s, q_s)`` distinct
ranks (Poisson for pools beyond int64), unranked in lexicographic order; the self-complementary
size ``s = n/2`` fixes the last player in the representative so that each pair is counted once.

Budget. The Binomial total is random and exceeds ``budget - 2`` about half the time. Choice made
here (``counts="binomial"``, the default): when it does, the excess pairs are removed uniformly
at random from the sampled (not fully enumerated) sizes (a multivariate hypergeometric thinning),
so the budget is never exceeded and the sample stays uniform within each size; the row weights
keep the paper's design probabilities ``q_s``. ``counts="expected"`` is the deterministic variant:
``k_s`` is the expectation ``pool_s q_s`` rounded by largest remainders (total exactly fits), and
the weights use the realised inclusion probability ``k_s / pool_s``.

Estimator. For proper coalitions, ``a_z = z - (|z|/n) 1`` and ``b_z = v(z) - v(0) - |z| v'(N)/n``
with ``v' = v - v(0)``; rows are weighted by ``W(z) = w(|z|) / P(z in sample)`` with the Shapley
kernel ``w(s) = (s-1)!(n-s-1)!/n! = 1 / (s (n-s) C(n, s))``. The min-norm least-squares solution
``phi_perp`` is orthogonal to ``1``, and ``phi = phi_perp + v'(N)/n`` is exactly efficient; with all
``2^n`` coalitions the weights are the Shapley kernel and the result is the exact Shapley value.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb
from typing import Any, ClassVar

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import all_coalitions, coalition_keys
from shapleig.games.numeric import power_of_two_scale
from shapleig.runs.budget import BudgetedGame

from .sampling import random_subsets_containing, uniform_subsets_of_size

COUNT_MODES = ("binomial", "expected")
_INT64_POOL_LIMIT = 1 << 62  # ranks (and the binomials used to unrank them) fit in int64 below this


# -- the design -------------------------------------------------------------------------------
def solve_oversampling(n_players: int, n_rows: int) -> float:
    """``2c`` such that ``sum_{s=1}^{n-1} min(C(n, s), 2c) = n_rows`` (``inf`` if all fit).

    The left side is piecewise linear and increasing in ``c``, so it is solved exactly: assume the
    ``k`` smallest layers are taken whole and spread the rest evenly over the others.
    """
    n = n_players
    layer = sorted(comb(n, s) for s in range(1, n))
    if n_rows >= sum(layer):
        return float("inf")
    taken = 0
    for k, size in enumerate(layer):
        two_c = (n_rows - taken) / (len(layer) - k)
        if two_c <= size:
            return float(two_c)
        taken += size
    return float("inf")  # unreachable: the last layer always satisfies two_c <= size


def _pair_pools(n: int) -> tuple[np.ndarray, list[int]]:
    """Representative sizes ``s = 1..floor(n/2)`` and the number of pairs of each (Python ints)."""
    reps = np.arange(1, n // 2 + 1, dtype=np.int64)
    pools = [comb(n - 1, s - 1) if 2 * s == n else comb(n, s) for s in reps.tolist()]
    return reps, pools


def _largest_remainder(expected: np.ndarray, total: int, cap: list[int]) -> np.ndarray:
    """Integers ``int64[k]`` close to ``expected`` summing to at most ``total``, each <= cap."""
    counts = np.minimum(np.floor(expected).astype(np.int64), np.array([min(c, 1 << 62) for c in cap]))
    left = total - int(counts.sum())
    order = np.argsort(-(expected - np.floor(expected)), kind="stable")
    for i in order:
        if left <= 0:
            break
        if counts[i] < cap[i]:
            counts[i] += 1
            left -= 1
    return counts


# -- sampling distinct subsets of one size ---------------------------------------------------
@lru_cache(maxsize=64)
def _binomial_table(n: int, k: int) -> np.ndarray:
    """``int64[n+1, k+1]`` with entry ``[a, b] = C(a, b)``, clipped at 2^62 (read-only)."""
    table = np.array(
        [[min(comb(a, b), _INT64_POOL_LIMIT) for b in range(k + 1)] for a in range(n + 1)], dtype=np.int64
    )
    table.setflags(write=False)
    return table


def _unrank_lex(ranks: np.ndarray, n: int, k: int) -> np.ndarray:
    """Lexicographic unranking of ``k``-subsets of ``{0..n-1}``: ``bool[m, n]`` from ``int64[m]``.

    Walks the players in order: player ``j`` starts the next block of ``C(n-j-1, k'-1)`` subsets
    (``k'`` still to place). Vectorised over ranks. Needs ``k <= n/2`` so every binomial used is at
    most ``C(n, k) < 2^62``; larger table entries are clipped (they only ever compare as "bigger").
    """
    m = ranks.shape[0]
    table = _binomial_table(n, k)
    out = np.zeros((m, n), dtype=bool)
    r = ranks.astype(np.int64).copy()
    left = np.full(m, k, dtype=np.int64)
    for j in range(n):
        active = left > 0
        block = np.where(active, table[n - j - 1, np.maximum(left - 1, 0)], 0)
        take = active & (r < block)
        out[:, j] = take
        r = np.where(active & ~take, r - block, r)
        left = left - take
    return out


def distinct_subsets_of_size(
    rng: np.random.Generator, n_players: int, size: int, count: int, contain_last: bool = False
) -> np.ndarray:
    """``count`` distinct uniform coalitions ``bool[count, p]`` of one ``size`` (without replacement).

    ``contain_last=True`` draws only coalitions containing player ``p-1`` (the representatives of
    the self-complementary pairs at ``size = p/2``). ``size`` (minus the fixed player) must be at
    most half of the free players. Pools below 2^62 are sampled as distinct ranks and unranked;
    larger pools by rejecting repeats (a repeat there has probability below ``count^2 / 2^62``).
    """
    free_n, free_k = (n_players - 1, size - 1) if contain_last else (n_players, size)
    pool = comb(free_n, free_k)
    if count > pool:
        raise ValueError(f"cannot draw {count} distinct coalitions from a pool of {pool}")
    if count == 0:
        return np.zeros((0, n_players), dtype=bool)
    if pool < _INT64_POOL_LIMIT:
        ranks = rng.choice(pool, size=count, replace=False)
        free = _unrank_lex(np.asarray(ranks, dtype=np.int64), free_n, free_k)
        if not contain_last:
            return free
        out = np.zeros((count, n_players), dtype=bool)
        out[:, : n_players - 1] = free
        out[:, n_players - 1] = True
        return out
    rows: list[np.ndarray] = []
    seen: set[bytes] = set()
    while len(rows) < count:
        need = count - len(rows)
        if contain_last:
            batch = random_subsets_containing(
                rng, n_players, np.full(need, n_players - 1), np.full(need, size)
            )
        else:
            batch = uniform_subsets_of_size(rng, n_players, size, need)
        for key, row in zip(coalition_keys(batch), batch):
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return np.stack(rows)


# -- the estimator ----------------------------------------------------------------------------
class LeverageSHAP(BaseEstimator):
    """Leverage SHAP: paired leverage-score sampling without replacement, projected regression.

    ``counts``: ``"binomial"`` (paper: Binomial pair counts per size, thinned to fit the budget) or
    ``"expected"`` (deterministic counts equal to their rounded expectations). Exactly efficient;
    exact once the budget covers all ``2^p`` coalitions.
    """

    name: ClassVar[str] = "leverage-shap"

    def __init__(self, *, counts: str = "binomial"):
        if counts not in COUNT_MODES:
            raise ValueError(f"unknown counts mode {counts!r}; choose one of {COUNT_MODES}")
        self.counts = counts

    def min_budget(self, n_players: int) -> int:
        """Empty, grand and one complementary pair."""
        return 4

    def min_budget_reason(self, n_players: int) -> str:
        return "the empty and grand coalitions plus one complementary pair"

    def _pair_counts(
        self, rng: np.random.Generator, n: int, room: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
        """Sampled pairs per representative size and their pair inclusion probabilities.

        Returns ``(reps int64[L], counts int64[L], q float64[L], two_c, thinned_pairs)``.
        """
        reps, pools = _pair_pools(n)
        two_c = solve_oversampling(n, room)
        layer = np.array([float(comb(n, s)) for s in reps.tolist()])
        q = np.minimum(1.0, two_c / layer)
        full = q >= 1.0
        counts = np.zeros(reps.shape[0], dtype=np.int64)
        counts[full] = [pools[i] for i in np.flatnonzero(full)]
        free = np.flatnonzero(~full)
        thinned = 0
        if self.counts == "expected":
            expected = np.array([pools[i] * q[i] for i in free])
            room_pairs = (room - 2 * int(counts.sum())) // 2
            counts[free] = _largest_remainder(expected, room_pairs, [pools[i] for i in free])
            q = np.where(full, 1.0, counts / np.array([float(c) for c in pools]))
            return reps, counts, q, two_c, thinned
        for i in free:
            if pools[i] < _INT64_POOL_LIMIT:
                counts[i] = rng.binomial(pools[i], q[i])
            else:  # Binomial with a pool beyond int64: its Poisson limit (q is astronomically small)
                counts[i] = min(rng.poisson(pools[i] * q[i]), _INT64_POOL_LIMIT)
        excess = 2 * int(counts.sum()) - room
        if excess > 0:
            # Never exceed the budget: drop ceil(excess / 2) pairs uniformly among the sampled ones.
            thinned = (excess + 1) // 2
            kept = int(counts[free].sum()) - thinned
            counts[free] = rng.multivariate_hypergeometric(counts[free], kept)
        return reps, counts, q, two_c, thinned

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        n = game.n_players
        rng = np.random.default_rng(seed)
        ends = np.zeros((2, n), dtype=bool)
        ends[1] = True
        room = game.remaining - game.n_uncached(ends)
        info: dict[str, Any] = {"counts_mode": self.counts}
        if n <= 24 and room >= (1 << n) - 2:
            # The budget covers everything: enumerate, all inclusion probabilities are 1.
            z_all = all_coalitions(n)
            s_all = z_all.sum(axis=1)
            sample = z_all[(s_all > 0) & (s_all < n)]
            weight_layer = np.array([float(comb(n, s)) for s in range(n + 1)])  # E[rows in size s]
            info.update(oversampling_2c=float("inf"), thinned_pairs=0)
        else:
            reps, counts, q, two_c, thinned = self._pair_counts(rng, n, room)
            blocks: list[np.ndarray] = []
            for s, k in zip(reps.tolist(), counts.tolist()):
                rep = distinct_subsets_of_size(rng, n, s, int(k), contain_last=(2 * s == n))
                blocks.extend([rep, ~rep])
            sample = np.concatenate(blocks) if blocks else np.zeros((0, n), dtype=bool)
            # C(n, s) * P(z in sample): the expected number of sampled rows of size s (both sides
            # of a pair share the representative's q).
            weight_layer = np.zeros(n + 1)
            for s, qs in zip(reps.tolist(), q.tolist()):
                weight_layer[s] = weight_layer[n - s] = float(comb(n, s)) * qs
            info.update(oversampling_2c=two_c, thinned_pairs=thinned)
        raw = game(np.concatenate([ends, sample]))
        # on v / 2^k (exact): near 1e307 the centred values overflow and LAPACK rescales b by
        # factors that are not powers of two; the estimate is scaled back at the end
        scale = power_of_two_scale(raw)
        values = raw / scale
        v0 = values[0]
        grand = values[1] - v0
        phi = np.full(n, grand / n)
        if sample.shape[0]:
            s = sample.sum(axis=1)
            # W(z) = w(s) / P(z) = 1 / (s (n - s) C(n, s) P(z)); only ratios matter, so scale freely.
            w = 1.0 / (s * (n - s) * weight_layer[s])
            w /= w.max()
            a = sample - (s / n)[:, None]
            b = (values[2:] - v0) - s * grand / n
            # Min-norm weighted least squares through the p x p normal equations: the min-norm
            # solution of G phi = A^T W b (consistent, G = A^T W A) is (W^1/2 A)^+ W^1/2 b, and
            # forming G costs m p^2 once instead of an SVD of the m x p design (10x faster at
            # m = 50,000, p = 100). 1 spans the null space of G, so phi_perp is orthogonal to 1.
            gram = a.T @ (a * w[:, None])
            phi_perp, *_ = np.linalg.lstsq(gram, a.T @ (w * b), rcond=None)
            phi += phi_perp - phi_perp.mean()  # remove round-off drift along 1
        phi = scale * phi
        info["n_sampled"] = int(sample.shape[0])
        return ShapleyEstimate(
            values=phi, trace=[(game.evaluations, phi.copy())], baseline=float(raw[0]), info=info
        )


__all__ = ["COUNT_MODES", "LeverageSHAP", "distinct_subsets_of_size", "solve_oversampling"]
