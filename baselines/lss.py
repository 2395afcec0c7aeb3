"""Least-squares sampling: LSS, S-LSS and SRS-LSS (Benati et al. 2019; Pollmann & Staudacher).

All three are applied to the centred game ``v - v(empty)`` (docs/baselines.md, "Centring") and are
exactly efficient: the estimates sum to ``v(N) - v(empty)``.

Budget accounting (docs/baselines.md §1), chosen by the constructor option ``accounting``:

- ``"distinct"`` (default, the project rule): the budget counts distinct coalitions including
  the empty and grand ones, which are evaluated first. Draws are i.i.d. with replacement;
  repeats are free cache hits and keep their multiplicity as weights. Drawing stops before the
  first draw whose new coalition would not fit, once every proper coalition is evaluated, or
  after ``draws`` draws when that option is given.
- ``"draws"`` (the LSS paper's rule, for reproducing its tables): ``T = draws`` (default: the
  budget minus 2) sets the number of draws exactly as in the paper (LSS/UKS: ``tau = T``;
  S-LSS: ``tau_{j,s} = ceil(2 s T / (n^2 (n-1)))``; SRS-LSS: warm-up plus
  ``ceil((T - tau*) / (n-1))`` per size); every draw counts, ``v(N)`` is not counted and
  ``v(empty)`` is evaluated for centring but not counted. The values are still obtained through
  the BudgetedGame and never exceed its budget: give it room for the distinct coalitions of T
  draws (``T + n^2 + 2`` always suffices). If it runs out, drawing stops early and
  ``info["truncated"]`` is True.

``info`` reports ``accounting``, ``n_draws``, ``n_evaluations`` (distinct, charged),
``n_cache_hits``, ``draws_target`` and ``stopped`` (why drawing ended).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import random_subsets
from shapleig.games.numeric import power_of_two_scale
from shapleig.runs.budget import BudgetedGame

from .draws import DrawEstimator, linear_estimate
from .sampling import (
    draw_within_budget,
    random_subsets_containing,
    sample_uniform_size,
)


def lss_coefficients(z: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw LSS weights in the form of :func:`linear_estimate`: ``float64[tau]`` twice.

    ``u_i(S) v(S) = z_i ((p-1)/s + (p-1)/(p-s)) v(S) - (p-1)/(p-s) v(S)`` for centred ``v``.
    """
    p = z.shape[1]
    s = z.sum(axis=1).astype(np.float64)
    w_out = (p - 1) / (p - s) * v
    return (p - 1) / s * v + w_out, w_out


def combine_strata(a_hat: np.ndarray, total: float) -> np.ndarray:
    """``phi_i = total/n + ((n-1)/n) a_i - (1/n) sum_{j != i} a_j`` with ``a_i = sum_s a_hat[i, s]``.

    ``a_hat`` is ``float64[n, n-1]`` (column ``s-1`` for size s); ``total = v(N) - v(empty)``.
    The result sums to ``total`` exactly (up to rounding).
    """
    a = a_hat.sum(axis=1)
    return total / a.shape[0] + a - a.mean()


class LSS(DrawEstimator):
    """Least Squares Sampling (Algorithm 1): sizes uniform on ``1..p-1``, then a uniform set.

    ``phi_i = v(N)/p + (1/tau) sum_k u_i(S_k) v(S_k)`` with ``u_i = (p-1)/|S|`` if ``i in S``
    else ``-(p-1)/(p-|S|)``. Unbiased (for a fixed number of draws) and exactly efficient.
    """

    name: ClassVar[str] = "lss"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        rng = np.random.default_rng(seed)
        p = game.n_players
        return self.linear_sampling_estimate(game, lambda m: sample_uniform_size(rng, p, m), lss_coefficients)


# -- S-LSS ------------------------------------------------------------------------------------
def slss_allocation(n_players: int, draws: int) -> np.ndarray:
    """Paper's Eq. (58): ``tau_{j,s} = ceil(2 s T / (n^2 (n-1)))`` for s = 1..n-1, ``int64[n-1]``.

    The same for every player j. Integer arithmetic, so exact for any T.
    """
    n = n_players
    den = n * n * (n - 1)
    s = np.arange(1, n, dtype=np.int64)
    return (2 * s * int(draws) + den - 1) // den


class _StrataSchedule:
    """Draw order of S-LSS: stratum (j, s)'s k-th draw is due at threshold ``(k-1)/c_s``,
    ``c_s = 2 s / (n^2 (n-1))``; draws are taken in threshold order (ties: by s, then j).

    Every prefix that ends at a threshold ``D`` has exactly the Eq. (58) allocation for ``T = D``,
    so the distinct-budget rule (stop at the first draw that does not fit) keeps the allocation
    proportional within one draw per stratum, and the first ``n(n-1)`` draws visit every stratum.
    """

    def __init__(self, n_players: int):
        self.n = n_players
        self.players = np.zeros(0, dtype=np.int64)
        self.sizes = np.zeros(0, dtype=np.int64)
        self.horizon = 0  # thresholds < horizon are scheduled
        self.counts = np.zeros(n_players - 1, dtype=np.int64)

    def extend_to(self, length: int) -> None:
        n = self.n
        while self.players.shape[0] < length:
            step = max(1, (length - self.players.shape[0]) // 2 + 1, self.horizon // 4)
            new_horizon = self.horizon + step
            counts = slss_allocation(n, new_horizon)
            s_all = np.arange(1, n, dtype=np.int64)
            k_rep = counts - self.counts
            s_idx = np.repeat(s_all, k_rep)
            k = np.concatenate([np.arange(a, b) for a, b in zip(self.counts, counts)] + [np.zeros(0, np.int64)])
            # threshold (k) / c_s with k = draw index - 1 counted from 0
            thresh = k * (n * n * (n - 1)) / (2.0 * s_idx)
            order = np.lexsort((s_idx, thresh))
            s_idx = s_idx[order]
            players = np.tile(np.arange(n, dtype=np.int64), s_idx.shape[0])
            self.sizes = np.concatenate([self.sizes, np.repeat(s_idx, n)])
            self.players = np.concatenate([self.players, players])
            self.counts = counts
            self.horizon = new_horizon


class StratifiedLSS(DrawEstimator):
    """S-LSS (Algorithm 2, no reuse): strata (j, s), S = {j} + uniform (s-1)-subset of N \\ j.

    ``a_hat_{j,s} = sum v(S) / (tau_{j,s} (n-s))``, allocation Eq. (58), and
    ``phi_i = v(N)/n + a_i - (1/n) sum_j a_j`` with ``a_i = sum_s a_hat_{i,s}``. Unbiased and
    efficient. Needs every stratum drawn once: minimum budget ``n(n-1) + 2``.
    """

    name: ClassVar[str] = "s-lss"

    def min_budget(self, n_players: int) -> int:
        return n_players * (n_players - 1) + 2

    def min_budget_reason(self, n_players: int) -> str:
        return "v(empty), v(N) and one draw in each of the p(p-1) strata (player, size)"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        n = game.n_players
        rng = np.random.default_rng(seed)
        v0, vn = self.endpoints(game)
        sched = _StrataSchedule(n)
        target = self.planned_draws(game) if self.accounting == "draws" else self.draws
        if self.accounting == "draws":
            max_draws = int(n * slss_allocation(n, target).sum())
        else:
            max_draws = self.draws

        def sampler(start: int, m: int) -> np.ndarray:
            sched.extend_to(start + m)
            rows = slice(start, start + m)
            return random_subsets_containing(rng, n, sched.players[rows], sched.sizes[rows])

        d = draw_within_budget(game, sampler, max_draws=max_draws, support_size=self.support_size(n))
        tau = d.n_draws
        sched.extend_to(tau)
        stratum = sched.players[:tau] * (n - 1) + (sched.sizes[:tau] - 1)
        counts = np.bincount(stratum, minlength=n * (n - 1)).reshape(n, n - 1)
        scale = power_of_two_scale(v0, vn, d.values)  # on v / 2^k (exact): no overflow near 1e308
        sums = np.bincount(stratum, weights=d.values / scale - v0 / scale, minlength=n * (n - 1)).reshape(n, n - 1)
        if (counts == 0).any():
            # cannot happen above the minimum budget; refuse rather than return a biased answer
            raise RuntimeError(f"S-LSS left {(counts == 0).sum()} strata without a draw")
        a_hat = sums / (counts * (n - np.arange(1, n, dtype=np.float64))[None, :])
        values = scale * combine_strata(a_hat, vn / scale - v0 / scale)
        return self.result(
            values, game, v0, d, extra={"draws_target": target, "min_stratum_draws": int(counts.min())}
        )


# -- SRS-LSS ----------------------------------------------------------------------------------
def srs_warmup_size(n_players: int) -> int:
    """Warm-up cost ``tau* = sum_{s=1}^{n-1} ceil(n/s)`` (50 / 250 / 572 / 8052 for n = 14/50/100/1000)."""
    n = n_players
    return sum(-(-n // s) for s in range(1, n))


def srs_warmup(rng: np.random.Generator, n_players: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 4's warm-up coalitions.

    For each size s, a random permutation is cut into ``ceil(n/s)`` blocks; a short last block
    is completed with a uniform subset of the earlier players. Returns ``coalitions bool[tau*, n]``
    (what is evaluated), ``own bool[tau*, n]`` (the block's own players, who receive the value)
    and ``sizes int64[tau*]``.
    """
    n = n_players
    rows: list[np.ndarray] = []
    owns: list[np.ndarray] = []
    sizes: list[int] = []
    for s in range(1, n):
        perm = rng.permutation(n)
        k_blocks = -(-n // s)
        for k in range(k_blocks):
            block = perm[k * s : (k + 1) * s]
            own = np.zeros(n, dtype=bool)
            own[block] = True
            z = own.copy()
            if block.shape[0] < s:
                earlier = perm[: k * s]
                z[rng.choice(earlier, size=s - block.shape[0], replace=False)] = True
            rows.append(z)
            owns.append(own)
            sizes.append(s)
    return np.array(rows, dtype=bool), np.array(owns, dtype=bool), np.array(sizes, dtype=np.int64)


class SRSLSS(DrawEstimator):
    """SRS-LSS (Algorithm 3 with the warm-up of Algorithm 4): sample reuse across strata.

    After the warm-up (``tau*`` coalitions, one value per stratum), sizes are visited round-robin
    ``1, 2, ..., n-1, 1, 2, ...`` with a uniform coalition of that size; each draw S adds
    ``v(S)`` to ``a~_{i,|S|}`` and 1 to ``tau^_{i,|S|}`` for every ``i in S``; then
    ``a_hat = a~ / (tau^ (n-s))`` combined as in S-LSS. Efficient; a ratio estimator (slightly
    biased). Minimum budget ``tau* + 2``.
    """

    name: ClassVar[str] = "srs-lss"

    def min_budget(self, n_players: int) -> int:
        return srs_warmup_size(n_players) + 2

    def min_budget_reason(self, n_players: int) -> str:
        return "v(empty), v(N) and the warm-up of sum_s ceil(p/s) blocks"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        n = game.n_players
        rng = np.random.default_rng(seed)
        v0, vn = self.endpoints(game)
        target = self.planned_draws(game) if self.accounting == "draws" else self.draws
        wz, wown, wsizes = srs_warmup(rng, n)
        w_raw = game(wz)  # warm-up blocks are distinct proper coalitions: fits by min_budget
        a_tilde = np.zeros((n, n - 1))
        tau_hat = np.ones((n, n - 1))
        tau_star = wz.shape[0]
        if self.accounting == "draws":
            # the warm-up's tau* draws count towards T (paper: tau_s = ceil((T - tau*)/(n-1)))
            per_size = max(0, -(-(target - tau_star) // (n - 1)))
            max_draws = per_size * (n - 1)
        else:
            # a draws cap counts the warm-up too
            max_draws = None if self.draws is None else max(0, self.draws - tau_star)

        def sampler(start: int, m: int) -> np.ndarray:
            sizes = 1 + np.arange(start, start + m, dtype=np.int64) % (n - 1)
            return random_subsets(rng, n, sizes)

        d = draw_within_budget(game, sampler, max_draws=max_draws, support_size=self.support_size(n))
        scale = power_of_two_scale(v0, vn, w_raw, d.values)  # on v / 2^k (exact): no overflow near 1e308
        # each player owns exactly one block per size: a~_{i,s} = v(its block)
        blk, player = np.nonzero(wown)
        a_tilde[player, wsizes[blk] - 1] = (w_raw / scale - v0 / scale)[blk]
        sz = d.coalitions.sum(axis=1)
        v = d.values / scale - v0 / scale
        for s in range(1, n):
            rows = np.flatnonzero(sz == s)
            if rows.size:
                zs = d.coalitions[rows].astype(np.float64)
                a_tilde[:, s - 1] += zs.T @ v[rows]
                tau_hat[:, s - 1] += zs.sum(axis=0)
        a_hat = a_tilde / (tau_hat * (n - np.arange(1, n, dtype=np.float64))[None, :])
        values = scale * combine_strata(a_hat, vn / scale - v0 / scale)
        extra = {
            "n_draws": tau_star + d.n_draws,
            "warmup_draws": tau_star,
            "draws_target": target,
        }
        return self.result(values, game, v0, d, extra=extra)


__all__ = [
    "LSS",
    "SRSLSS",
    "DrawEstimator",
    "StratifiedLSS",
    "combine_strata",
    "linear_estimate",
    "lss_coefficients",
    "slss_allocation",
    "srs_warmup",
    "srs_warmup_size",
]
