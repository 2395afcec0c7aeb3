"""Permutation sampling, ApproShapley (Castro, Gómez & Tejada 2009; docs/baselines.md §2).

Uniform i.i.d. permutations; along each permutation pi, player pi_k receives the marginal
contribution ``v(P_k) - v(P_{k-1})`` of joining its prefix. ``v(empty)`` and ``v(N)`` are
evaluated first, so each permutation needs only its ``p - 1`` proper prefixes. Only complete
permutations are used (every player gets the same number of samples), which makes the estimate
exactly efficient: each permutation telescopes to ``v(N) - v(empty)``.

Budget (``distinct`` accounting): repeated prefixes are free cache hits, so permutations are drawn
until the next complete one would not fit (about ``(T - 2) / (p - 1)`` of them when repeats are
rare), or until every coalition is evaluated.
"""

from __future__ import annotations

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import shapley_from_table
from shapleig.runs.budget import BudgetedGame

from .sampling import draw_within_budget

# Aim for about this many anytime checkpoints in the trace.
TRACE_POINTS = 32


def full_table_size(n_players: int) -> int | None:
    """``2^p`` when it is a usable support size (p <= 40), else None (never exhausted)."""
    return (1 << n_players) if n_players <= 40 else None


def checkpoints(n_rows: int, block: int) -> np.ndarray:
    """Row counts (multiples of ``block``, ending at ``n_rows``) at which to record the trace."""
    n_blocks = n_rows // block
    if n_blocks == 0:
        return np.zeros(0, dtype=np.int64)
    marks = np.unique(np.linspace(0, n_blocks, min(TRACE_POINTS, n_blocks) + 1).round().astype(np.int64))
    return marks[marks > 0] * block


class PermutationSampling(BaseEstimator):
    """ApproShapley: mean marginal contribution over uniform random permutations.

    antithetic: if True, permutations come in pairs (pi, reversed pi) (optional variance
                reduction; no reference implementation uses it). Default False.

    ``info``: ``n_draws`` = ``n_permutations`` (complete permutations used), ``stopped``.
    """

    name = "permutation"

    def __init__(self, *, antithetic: bool = False):
        self.antithetic = bool(antithetic)

    def min_budget(self, n_players: int) -> int:
        return n_players + 1

    def min_budget_reason(self, n_players: int) -> str:
        return "v(empty), v(N) and the p-1 proper prefixes of one complete permutation"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        p = game.n_players
        rng = np.random.default_rng(seed)
        ends = np.zeros((2, p), dtype=bool)
        ends[1] = True
        v_empty, v_full = game(ends)
        steps = np.arange(1, p)[:, None]  # prefix lengths 1..p-1
        per_block = 2 if self.antithetic else 1  # permutations taken whole-or-nothing together
        block = per_block * (p - 1)

        def sampler(start: int, m: int) -> np.ndarray:
            # m rows = m // (p-1) permutations; row k-1 of a permutation's rows is its length-k prefix
            n_perm = m // (p - 1)
            perms = np.argsort(rng.random((n_perm, p)), axis=1)
            if self.antithetic:
                perms[1::2] = perms[0::2, ::-1]
            ranks = np.argsort(perms, axis=1)  # ranks[r, j] = position of player j
            return (ranks[:, None, :] < steps[None, :, :]).reshape(n_perm * (p - 1), p)

        e0 = game.evaluations
        support = full_table_size(p)
        draws = draw_within_budget(
            game, sampler, block=block, support_size=None if support is None else support - 2
        )
        n_perm = draws.n_draws // (p - 1)
        if n_perm == 0:
            # Only when every coalition was already cached (a shared BudgetedGame): then the
            # sampler's limit, the exact value, is free.
            return self._exact_from_cache(game, draws.stopped)
        prefixes = draws.coalitions.reshape(n_perm, p - 1, p)
        # Position of player j in its permutation = number of proper prefixes that miss it.
        ranks = (p - 1) - prefixes.sum(axis=1)  # (n_perm, p)
        chain = np.empty((n_perm, p + 1))
        chain[:, 0] = v_empty
        chain[:, 1:p] = draws.values.reshape(n_perm, p - 1)
        chain[:, p] = v_full
        gains = np.diff(chain, axis=1)  # gain of the player at each position
        marginals = np.take_along_axis(gains, ranks, axis=1)  # (n_perm, p), per player

        cum = np.cumsum(marginals, axis=0)
        evals_after = e0 + np.cumsum(draws.new)  # distinct evaluations after each drawn row
        trace = []
        for rows in checkpoints(draws.n_draws, block):
            k = rows // (p - 1)
            trace.append((int(evals_after[rows - 1]), cum[k - 1] / k))
        return ShapleyEstimate(
            values=cum[-1] / n_perm,
            trace=trace,
            baseline=float(v_empty),
            info={
                "n_draws": int(n_perm),
                "n_permutations": int(n_perm),
                "stopped": draws.stopped,
                "antithetic": self.antithetic,
            },
        )

    @staticmethod
    def _exact_from_cache(game: BudgetedGame, stopped: str) -> ShapleyEstimate:
        z = all_coalitions(game.n_players)
        values = shapley_from_table(z, game(z))  # all cached: charges nothing
        return ShapleyEstimate(values=values, info={"n_draws": 0, "n_permutations": 0, "stopped": stopped})
