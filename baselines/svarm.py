"""SVARM, Stratified SVARM and S-SVARM+ (Kolpaczki, Bengs, Muschalik & Hüllermeier, AAAI 2024).

Specification: docs/baselines.md §4-§5. Notation: ``p`` players, ``H_p`` the p-th harmonic number.

SVARM writes ``phi_i = phi_i^+ - phi_i^-`` with ``phi_i^+ = E[v(S + i)]`` and ``phi_i^- = E[v(S)]``
over ``S`` subsets of ``N - i`` with Shapley weights, and estimates both halves by running means
over coalitions drawn from ``P+`` (size ``s`` w.p. ``1 / (s H_p)``) and ``P-`` (size ``s`` w.p.
``1 / ((p - s) H_p)``), a uniform set given the size.

Stratified SVARM splits both halves by size: ``phi_i = (1/p) sum_l (phi^+_{i,l} - phi^-_{i,l})``,
``phi^+_{i,l}`` the mean of ``v(S + i)`` and ``phi^-_{i,l}`` the mean of ``v(S)`` over the size-``l``
subsets ``S`` of ``N - i``. Every sampled coalition ``A`` of size ``s`` updates ``phi^+_{i,s-1}``
for ``i`` in ``A`` and ``phi^-_{i,s}`` for ``i`` not in ``A``: all players at once. Sizes 0, 1,
``p-1`` and ``p`` are computed exactly first (2p + 1 coalitions, + v(empty) which is charged under
``distinct`` accounting), so only sizes ``2..p-2`` are sampled.

Internally every stratum is a (sum, count) pair stored in ``float64[p, p]`` arrays indexed
``[player, l]``; exact strata hold their value with count 1 and are never sampled again.
"""

from __future__ import annotations

import math

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import all_coalitions, coalition_keys, coalitions_of_size, random_subsets
from shapleig.games.exact import shapley_from_table
from shapleig.runs.budget import BudgetedGame

from .permutation import TRACE_POINTS, checkpoints, full_table_size
from .sampling import draw_within_budget

SIZE_LAWS = ("paper", "uniform")
EMPTY_STRATA_RULES = ("warmup", "drop")
# Layers with at most this many coalitions switch to an explicit list of the undrawn ones once
# they would become more than half drawn (S-SVARM+); larger layers use rejection sampling.
ENUMERATE_LAYER_LIMIT = 200_000


# -- distributions ----------------------------------------------------------------------------
def harmonic(n: int) -> float:
    """``H_n = sum_{j <= n} 1/j`` (``H_0 = 0``)."""
    return float(np.sum(1.0 / np.arange(1, n + 1))) if n > 0 else 0.0


def svarm_size_laws(n_players: int) -> tuple[np.ndarray, np.ndarray]:
    """Size marginals ``float64[p + 1]`` of SVARM's ``P+`` (on 1..p) and ``P-`` (on 0..p-1)."""
    p = n_players
    h = harmonic(p)
    plus = np.zeros(p + 1)
    minus = np.zeros(p + 1)
    s = np.arange(1, p + 1, dtype=np.float64)
    plus[1:] = 1.0 / (s * h)
    minus[:p] = 1.0 / ((p - np.arange(p)) * h)
    return plus / plus.sum(), minus / minus.sum()


def stratified_size_law(n_players: int, kind: str = "paper") -> np.ndarray:
    """Size law ``float64[p + 1]`` of Stratified SVARM's sampling phase, supported on 2..p-2.

    ``"paper"``: the paper's ``P(s)`` (natural log); for p even with ``h = H_{p/2-1}``:
    ``(p ln p - 1) / (2 s p ln p (h - 1))`` for s < p/2, ``1 / (p ln p)`` at p/2, symmetric above;
    for p odd with ``h = H_{(p-1)/2}``: ``1 / (2 s (h - 1))`` for s <= (p-1)/2, symmetric above;
    ``P(2) = 1`` at p = 4. ``"uniform"``: ``1 / (p - 3)``. Requires p >= 4.
    """
    p = n_players
    if kind not in SIZE_LAWS:
        raise ValueError(f"unknown size law {kind!r}; choose one of {SIZE_LAWS}")
    if p < 4:
        raise ValueError(f"Stratified SVARM samples sizes 2..p-2 and needs p >= 4, got p = {p}")
    law = np.zeros(p + 1)
    if kind == "uniform" or p == 4:
        law[2 : p - 1] = 1.0
        return law / law.sum()
    s = np.arange(2, p - 1)
    if p % 2 == 0:
        h = harmonic(p // 2 - 1)
        lnp = p * math.log(p)
        lower = (lnp - 1.0) / (2.0 * s * lnp * (h - 1.0))
        upper = (lnp - 1.0) / (2.0 * (p - s) * lnp * (h - 1.0))
        law[2 : p - 1] = np.where(s < p / 2, lower, np.where(s > p / 2, upper, 1.0 / lnp))
    else:
        h = harmonic((p - 1) // 2)
        low = 1.0 / (2.0 * s * (h - 1.0))
        high = 1.0 / (2.0 * (p - s) * (h - 1.0))
        law[2 : p - 1] = np.where(s <= (p - 1) // 2, low, high)
    return law / law.sum()  # sums to 1 analytically; renormalise rounding only


def warmup_cost(n_players: int) -> int:
    """``2 * sum_{s=2}^{p-2} ceil(p / s)``: coalitions of the two warm-ups (before repeats)."""
    p = n_players
    return 2 * sum(-(-p // s) for s in range(2, p - 1))


def exact_phase_cost(n_players: int) -> int:
    """``2p + 2``: v(empty), v(N), all singletons and all ``N - i`` (distinct accounting)."""
    return 2 * n_players + 2


# -- shared pieces ----------------------------------------------------------------------------
def _enumerate_exactly(game: BudgetedGame) -> ShapleyEstimate:
    """Exact Shapley values for p < 4 by evaluating all ``2^p`` coalitions through ``game``."""
    z = all_coalitions(game.n_players)
    values = shapley_from_table(z, game(z))
    return ShapleyEstimate(
        values=values,
        trace=[(game.evaluations, values.copy())],
        info={"n_draws": 0, "exact_enumeration": True, "stopped": "exact"},
    )


class _Strata:
    """Running (sum, count) per stratum: ``plus[i, l]`` for ``v(S + i)``, ``minus[i, l]`` for ``v(S)``."""

    def __init__(self, p: int):
        self.p = p
        self.sum_plus = np.zeros((p, p))
        self.cnt_plus = np.zeros((p, p))
        self.sum_minus = np.zeros((p, p))
        self.cnt_minus = np.zeros((p, p))

    def exact_phase(self, game: BudgetedGame) -> float:
        """Evaluate v(empty), v(N), singletons, ``N - i``; fill the exact strata. Returns v(empty)."""
        p = self.p
        eye = np.eye(p, dtype=bool)
        rows = np.concatenate([np.zeros((1, p), bool), np.ones((1, p), bool), eye, ~eye])
        v = game(rows)
        v_empty, v_full, single, leave_one = v[0], v[1], v[2 : 2 + p], v[2 + p :]
        exact_plus = {
            0: single,  # v({i})
            p - 1: np.full(p, v_full),  # v(N)
            p - 2: (leave_one.sum() - leave_one) / (p - 1),  # mean over j != i of v(N - j)
        }
        exact_minus = {
            0: np.full(p, v_empty),  # v(empty)
            1: (single.sum() - single) / (p - 1),  # mean over j != i of v({j})
            p - 1: leave_one,  # v(N - i)
        }
        for level, val in exact_plus.items():
            self.sum_plus[:, level] = val
            self.cnt_plus[:, level] = 1.0
        for level, val in exact_minus.items():
            self.sum_minus[:, level] = val
            self.cnt_minus[:, level] = 1.0
        return float(v_empty)

    def update(self, z: np.ndarray, v: np.ndarray) -> None:
        """Full update with coalitions ``bool[m, p]`` and values ``float64[m]`` (all players)."""
        p = self.p
        s = z.sum(axis=1)
        r, i = np.nonzero(z)
        idx = i * p + (s[r] - 1)
        self.sum_plus += np.bincount(idx, weights=v[r], minlength=p * p).reshape(p, p)
        self.cnt_plus += np.bincount(idx, minlength=p * p).reshape(p, p)
        r, i = np.nonzero(~z)
        idx = i * p + s[r]
        self.sum_minus += np.bincount(idx, weights=v[r], minlength=p * p).reshape(p, p)
        self.cnt_minus += np.bincount(idx, minlength=p * p).reshape(p, p)

    def assign(self, z_assigned: np.ndarray, levels: np.ndarray, v: np.ndarray, plus: bool) -> None:
        """Warm-up update: row ``r`` adds ``v[r]`` to stratum ``levels[r]`` of its assigned players only."""
        p = self.p
        r, i = np.nonzero(z_assigned)
        idx = i * p + levels[r]
        s_arr, c_arr = (self.sum_plus, self.cnt_plus) if plus else (self.sum_minus, self.cnt_minus)
        s_arr += np.bincount(idx, weights=v[r], minlength=p * p).reshape(p, p)
        c_arr += np.bincount(idx, minlength=p * p).reshape(p, p)

    def values(self, drop_empty: bool = False) -> np.ndarray:
        """``phi_i = mean_l phi^+_{i,l} - mean_l phi^-_{i,l}``; with ``drop_empty``, over non-empty strata."""
        with np.errstate(invalid="ignore", divide="ignore"):
            plus = self.sum_plus / self.cnt_plus
            minus = self.sum_minus / self.cnt_minus
        if not drop_empty:
            return plus.mean(axis=1) - minus.mean(axis=1)
        has_p = self.cnt_plus > 0
        has_m = self.cnt_minus > 0
        mean_plus = np.where(has_p, plus, 0.0).sum(axis=1) / has_p.sum(axis=1)
        mean_minus = np.where(has_m, minus, 0.0).sum(axis=1) / has_m.sum(axis=1)
        return mean_plus - mean_minus


def _warmup_blocks(rng: np.random.Generator, p: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """One warm-up round for size ``s`` (authors' code): a random permutation cut into blocks of ``s``.

    Returns ``(blocks, assigned)``, both ``bool[ceil(p/s), p]``: ``blocks`` are the coalitions;
    ``assigned`` marks whose estimate a block serves. A short last block (``p mod s`` tail players)
    is filled up to ``s`` with uniformly drawn other players, and serves the tail players only.
    """
    perm = rng.permutation(p)
    n_blocks = -(-p // s)
    block_of = np.empty(p, dtype=np.int64)
    block_of[perm] = np.arange(p) // s
    assigned = np.zeros((n_blocks, p), dtype=bool)
    assigned[block_of, np.arange(p)] = True
    blocks = assigned.copy()
    tail = p % s
    if tail:
        others = perm[: p - tail]
        blocks[n_blocks - 1, rng.choice(others, size=s - tail, replace=False)] = True
    return blocks, assigned


def _warmup_rows(rng: np.random.Generator, p: int):
    """All warm-up coalitions: ``(rows bool[k, p], assigned bool[k, p], level int[k], plus bool[k])``.

    WarmUp+ for size s: the blocks themselves, stratum ``s - 1`` (``v(A)`` with ``i`` in ``A``).
    WarmUp- for size s: the complements ``N - A`` of fresh blocks, stratum ``p - s`` for ``i`` in ``A``.
    """
    rows, assigned, level, plus = [], [], [], []
    for s in range(2, p - 1):
        blocks, who = _warmup_blocks(rng, p, s)
        rows.append(blocks)
        assigned.append(who)
        level.append(np.full(blocks.shape[0], s - 1))
        plus.append(np.ones(blocks.shape[0], bool))
    for s in range(2, p - 1):
        blocks, who = _warmup_blocks(rng, p, s)
        rows.append(~blocks)
        assigned.append(who)
        level.append(np.full(blocks.shape[0], p - s))
        plus.append(np.zeros(blocks.shape[0], bool))
    return np.concatenate(rows), np.concatenate(assigned), np.concatenate(level), np.concatenate(plus)


# -- SVARM ------------------------------------------------------------------------------------
class SVARM(BaseEstimator):
    """SVARM (Algorithm 1): running means of ``v(A+)`` and ``v(A-)`` from ``P+`` / ``P-`` draws.

    Warm-up (authors' code): for each player ``i`` one ``v(S + i)`` and one independent ``v(S')``
    with ``S, S'`` of uniform size in 0..p-1 drawn uniformly from ``N - i``. Then draws alternate
    ``A+ ~ P+``, ``A- ~ P-`` with replacement until the next draw would not fit the budget (repeats
    are free and keep their weight). Unbiased, not efficient.

    ``info``: ``n_draws`` (main-loop draws, repeats included), ``n_warmup`` (= 2p), ``stopped``.
    """

    name = "svarm"

    def min_budget(self, n_players: int) -> int:
        full = full_table_size(n_players)
        return min(2 * n_players + 2, full) if full else 2 * n_players + 2

    def min_budget_reason(self, n_players: int) -> str:
        return "warm-up of 2p coalitions plus one P+/P- pair"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        p = game.n_players
        rng = np.random.default_rng(seed)
        # warm-up: size uniform on 0..p-1, members uniform from N - i (i's key ranks last)
        rows = []
        for _ in range(2):
            keys = rng.random((p, p))
            keys[np.arange(p), np.arange(p)] = 2.0
            ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
            rows.append(ranks < rng.integers(0, p, size=p)[:, None])
        warm_plus = rows[0] | np.eye(p, dtype=bool)
        warm_minus = rows[1]
        v = game(np.concatenate([warm_plus, warm_minus]))
        sum_plus, cnt_plus = v[:p].copy(), np.ones(p)
        sum_minus, cnt_minus = v[p:].copy(), np.ones(p)

        plus_law, minus_law = svarm_size_laws(p)

        def sampler(start: int, m: int) -> np.ndarray:
            # stream position t: even -> P+, odd -> P-
            is_plus = (start + np.arange(m)) % 2 == 0
            sizes = np.where(
                is_plus,
                rng.choice(p + 1, size=m, p=plus_law),
                rng.choice(p + 1, size=m, p=minus_law),
            )
            return random_subsets(rng, p, sizes)

        support = full_table_size(p)
        e0 = game.evaluations
        draws = draw_within_budget(
            game, sampler, support_size=support, in_support=lambda z: np.ones(z.shape[0], bool)
        )
        z, vals = draws.coalitions, draws.values
        is_plus = np.arange(draws.n_draws) % 2 == 0
        evals_after = e0 + np.cumsum(draws.new)
        trace = [(e0, sum_plus / cnt_plus - sum_minus / cnt_minus)]
        prev = 0
        for mark in checkpoints(draws.n_draws, 1):
            seg = slice(prev, mark)
            zp, vp = z[seg][is_plus[seg]], vals[seg][is_plus[seg]]
            zm, vm = z[seg][~is_plus[seg]], vals[seg][~is_plus[seg]]
            sum_plus += zp.T.astype(np.float64) @ vp
            cnt_plus += zp.sum(axis=0)
            out = ~zm
            sum_minus += out.T.astype(np.float64) @ vm
            cnt_minus += out.sum(axis=0)
            trace.append((int(evals_after[mark - 1]), sum_plus / cnt_plus - sum_minus / cnt_minus))
            prev = mark
        return ShapleyEstimate(
            values=sum_plus / cnt_plus - sum_minus / cnt_minus,
            trace=trace,
            info={"n_draws": int(draws.n_draws), "n_warmup": 2 * p, "stopped": draws.stopped},
        )


# -- Stratified SVARM -------------------------------------------------------------------------
class _StratifiedEstimator(BaseEstimator):
    """Shared fixed phase of the stratified SVARMs: exact border strata, then (optionally) warm-up.

    Below p = 4 there are no inner strata and the game is enumerated exactly.
    """

    uses_warmup: bool = True

    def min_budget(self, n_players: int) -> int:
        if n_players < 4:
            return 1 << n_players
        extra = warmup_cost(n_players) if self.uses_warmup else 0
        return exact_phase_cost(n_players) + extra

    def min_budget_reason(self, n_players: int) -> str:
        if n_players < 4:
            return "p < 4 is computed exactly by enumerating all 2^p coalitions"
        if self.uses_warmup:
            return "exact phase 2p+2 plus warm-up 2*sum_{s=2}^{p-2} ceil(p/s)"
        return "exact phase 2p+2"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        p = game.n_players
        if p < 4:
            return _enumerate_exactly(game)
        rng = np.random.default_rng(seed)
        strata = _Strata(p)
        v_empty = strata.exact_phase(game)
        return self._sample(game, rng, strata, v_empty)

    def _sample(self, game: BudgetedGame, rng: np.random.Generator, strata: _Strata,
                v_empty: float) -> ShapleyEstimate:
        """Everything after the exact phase (p >= 4): warm-up and sampling, then the estimate."""
        raise NotImplementedError


class StratifiedSVARM(_StratifiedEstimator):
    """Stratified SVARM (Algorithm 2): exact phase, two warm-ups, then sizes ``s ~ P(s)`` with replacement.

    sizes: ``"paper"`` (default, the paper's ``P(s)``) or ``"uniform"`` (``1/(p-3)`` on 2..p-2).

    Budget: the exact phase (2p + 2 with v(empty)) and the warm-up (``2 sum ceil(p/s)``) must fit:
    ``W + 1`` with the paper's ``W = 2p + 1 + 2 sum_{s=2}^{p-2} ceil(p/s)`` (98 at p = 14). For
    p < 4 the values are computed exactly by enumerating all ``2^p`` coalitions (budget >= 2^p).

    ``info``: ``n_draws`` (sampling-phase draws, repeats included), ``n_warmup``, ``stopped``.
    """

    name = "stratified-svarm"

    def __init__(self, *, sizes: str = "paper"):
        if sizes not in SIZE_LAWS:
            raise ValueError(f"unknown size law {sizes!r}; choose one of {SIZE_LAWS}")
        self.sizes = sizes

    def _sample(self, game: BudgetedGame, rng: np.random.Generator, strata: _Strata,
                v_empty: float) -> ShapleyEstimate:
        p = game.n_players
        rows, assigned, level, plus = _warmup_rows(rng, p)
        v = game(rows)  # fits: min_budget covers exact phase + warm-up
        strata.assign(assigned[plus], level[plus], v[plus], plus=True)
        strata.assign(assigned[~plus], level[~plus], v[~plus], plus=False)
        trace = [(game.evaluations, strata.values())]

        law = stratified_size_law(p, self.sizes)

        def sampler(start: int, m: int) -> np.ndarray:
            return random_subsets(rng, p, rng.choice(p + 1, size=m, p=law))

        support = full_table_size(p)
        support_size = sum(math.comb(p, s) for s in range(2, p - 1)) if support else None
        e0 = game.evaluations
        draws = draw_within_budget(
            game,
            sampler,
            support_size=support_size,
            in_support=lambda z: (z.sum(axis=1) >= 2) & (z.sum(axis=1) <= p - 2),
        )
        evals_after = e0 + np.cumsum(draws.new)
        prev = 0
        for mark in checkpoints(draws.n_draws, 1):
            strata.update(draws.coalitions[prev:mark], draws.values[prev:mark])
            trace.append((int(evals_after[mark - 1]), strata.values()))
            prev = mark
        return ShapleyEstimate(
            values=strata.values(),
            trace=trace,
            baseline=v_empty,
            info={
                "n_draws": int(draws.n_draws),
                "n_warmup": int(rows.shape[0]),
                "sizes": self.sizes,
                "stopped": draws.stopped,
            },
        )


# -- S-SVARM+ ---------------------------------------------------------------------------------
class StratifiedSVARMPlus(_StratifiedEstimator):
    """S-SVARM+ (Algorithm 8): exact phase, then sampling *without* replacement, dynamic size law.

    sizes:        ``"uniform"`` (default, as in the paper) or ``"paper"`` (Stratified SVARM's P(s)).
    empty_strata: how strata left without a sample at small budgets are handled.

      - ``"warmup"`` (default, the rule docs/baselines.md §5 recommends): the Stratified SVARM warm-up
        coalitions are evaluated first (distinct ones once) and enter the without-replacement
        sample like any other draw, with the full all-players update; this guarantees every
        stratum at least one sample. Needs budget ``W + 1`` (as Stratified SVARM).
      - ``"drop"`` (the authors' rule, for reproduction): no warm-up; each half of the estimate
        averages only over its non-empty strata, ``phi_i = mean_{l: c+>0} phi^+_{i,l} -
        mean_{l: c->0} phi^-_{i,l}``. Biased at small budgets. Needs budget ``2p + 2``.

    Sampling: each batch draws sizes from ``P_dyn(s) ∝ P(s) (1 - drawn_s / C(p, s))`` (an
    exhausted layer gets 0) and then coalitions of each size not drawn before: by rejection, or,
    once a layer of at most ``ENUMERATE_LAYER_LIMIT`` coalitions would be more than half drawn,
    uniformly from the explicit list of its undrawn coalitions. Every drawn coalition updates all
    players once. At budget ``2^p`` every coalition is drawn exactly once and the result is exact.

    ``info``: ``n_draws`` (sampled coalitions), ``n_warmup``, ``empty_strata``, ``stopped``.
    """

    name = "svarm-plus"

    def __init__(self, *, sizes: str = "uniform", empty_strata: str = "warmup"):
        if sizes not in SIZE_LAWS:
            raise ValueError(f"unknown size law {sizes!r}; choose one of {SIZE_LAWS}")
        if empty_strata not in EMPTY_STRATA_RULES:
            raise ValueError(
                f"unknown empty_strata rule {empty_strata!r}; choose one of {EMPTY_STRATA_RULES}"
            )
        self.sizes = sizes
        self.empty_strata = empty_strata

    @property
    def uses_warmup(self) -> bool:  # type: ignore[override]
        return self.empty_strata == "warmup"

    def _sample(self, game: BudgetedGame, rng: np.random.Generator, strata: _Strata,
                v_empty: float) -> ShapleyEstimate:
        p = game.n_players
        drop = self.empty_strata == "drop"
        sampler = _LayerSampler(rng, p)
        n_warm = 0
        if not drop:
            rows, _, _, _ = _warmup_rows(rng, p)
            rows = sampler.take_new(rows)  # distinct warm-up coalitions, registered as drawn
            n_warm = rows.shape[0]
            strata.update(rows, game(rows))
        trace = [(game.evaluations, strata.values(drop))]

        law = stratified_size_law(p, self.sizes)
        batch_cap = max(32, game.budget // TRACE_POINTS)
        n_draws = 0
        stopped = "budget"
        while True:
            room = game.remaining
            avail = sampler.available()
            if avail.sum() == 0:
                stopped = "support"
                break
            if room == 0:
                break
            weights = law * avail / sampler.layer_sizes
            weights[~np.isfinite(weights)] = 0.0
            counts = np.minimum(rng.multinomial(min(room, batch_cap), weights / weights.sum()), avail)
            rows = sampler.draw(counts)
            v = game(rows)  # each row is new to this run, so it costs at most 1 and fits
            strata.update(rows, v)
            n_draws += rows.shape[0]
            trace.append((game.evaluations, strata.values(drop)))
        return ShapleyEstimate(
            values=strata.values(drop),
            trace=trace,
            baseline=v_empty,
            info={
                "n_draws": int(n_draws),
                "n_warmup": int(n_warm),
                "sizes": self.sizes,
                "empty_strata": self.empty_strata,
                "stopped": stopped,
            },
        )


class _LayerSampler:
    """Draws coalitions of sizes 2..p-2 without replacement (never returns one twice)."""

    def __init__(self, rng: np.random.Generator, p: int):
        self.rng = rng
        self.p = p
        self.seen: set[bytes] = set()
        self.drawn = np.zeros(p + 1, dtype=np.int64)
        self.layer_sizes = np.array([float(math.comb(p, s)) for s in range(p + 1)])
        self.sampled = np.zeros(p + 1, dtype=bool)
        self.sampled[2 : p - 1] = True
        self._pool: dict[int, tuple[np.ndarray, list[bytes]]] = {}

    def available(self) -> np.ndarray:
        """Undrawn coalitions per size, ``float64[p + 1]`` (0 outside 2..p-2)."""
        return np.where(self.sampled, self.layer_sizes - self.drawn, 0.0)

    def take_new(self, rows: np.ndarray) -> np.ndarray:
        """Keep the rows not drawn before (first occurrence), register them as drawn."""
        keep = []
        for r, k in enumerate(coalition_keys(rows)):
            if k not in self.seen:
                self.seen.add(k)
                keep.append(r)
        out = rows[keep]
        self.drawn += np.bincount(out.sum(axis=1), minlength=self.p + 1)
        return out

    def draw(self, counts: np.ndarray) -> np.ndarray:
        """``counts[s]`` new coalitions of each size s (``counts <= available()``), ``bool[sum, p]``."""
        parts = []
        for s in np.flatnonzero(counts):
            k = int(counts[s])
            size = self.layer_sizes[s]
            if size <= ENUMERATE_LAYER_LIMIT and 2 * (self.drawn[s] + k) > size:
                parts.append(self._from_list(int(s), k))
            else:
                parts.append(self._by_rejection(int(s), k))
        return np.concatenate(parts) if parts else np.zeros((0, self.p), bool)

    def _by_rejection(self, s: int, k: int) -> np.ndarray:
        """``k`` new uniform size-``s`` coalitions: redraw candidates already drawn (layer < half full)."""
        got: list[np.ndarray] = []
        need = k
        while need > 0:
            cand = random_subsets(self.rng, self.p, np.full(need + need // 2 + 8, s))
            keep: list[int] = []
            for r, key in enumerate(coalition_keys(cand)):
                if key not in self.seen:
                    self.seen.add(key)
                    keep.append(r)
                    if len(keep) == need:
                        break
            got.append(cand[keep])
            need -= len(keep)
        self.drawn[s] += k
        return np.concatenate(got)

    def _from_list(self, s: int, k: int) -> np.ndarray:
        if s not in self._pool:
            layer = coalitions_of_size(self.p, s)
            keys = coalition_keys(layer)
            mask = np.array([key not in self.seen for key in keys], dtype=bool)
            self._pool[s] = (layer[mask], [key for key, m in zip(keys, mask) if m])
        layer, keys = self._pool[s]
        pick = self.rng.choice(layer.shape[0], size=k, replace=False)
        out = layer[pick]
        for i in pick:
            self.seen.add(keys[i])
        self.drawn[s] += k
        left = np.ones(layer.shape[0], dtype=bool)
        left[pick] = False
        self._pool[s] = (layer[left], [key for key, m in zip(keys, left) if m])
        return out
