"""Coalition samplers shared by the baselines, and the budget-aware draw loop.

All samplers return coalitions as ``bool[m, p]`` rows (player ``j`` in row ``r`` iff
``Z[r, j]``), are vectorised over ``m`` and take an explicit ``np.random.Generator``. They build
on :func:`shapleig.games.coalitions.random_subsets` (one uniform subset per requested size); the paired
uniform-size *without-replacement* sampler is :func:`shapleig.games.coalitions.sample_paired_uniform_size`
and is not repeated here.

Size distributions are ``float64[p + 1]`` arrays indexed by coalition size ``s = 0..p`` (entries
0 and p are zero: the samplers only draw proper, non-empty coalitions).

:func:`draw_within_budget` implements the project's budget rule for with-replacement estimators
(docs/baselines.md §1): draws are taken in order from a stream, repeats are free cache hits and keep
their multiplicity, and drawing stops before the first draw whose new coalition would not fit,
when the sampler's support is fully evaluated, or at a maximum number of draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import gammaln

from shapleig.errors import CoalitionError
from shapleig.games.coalitions import coalition_keys, random_subsets
from shapleig.runs.budget import BudgetedGame

SIZE_KINDS = ("uniform", "kernel")


# -- size distributions -----------------------------------------------------------------------
def size_distribution(n_players: int, kind: str = "uniform") -> np.ndarray:
    """Probabilities ``float64[p + 1]`` of drawing a coalition of size ``s`` (zero at 0 and p).

    ``"uniform"``: uniform on ``{1, ..., p-1}`` (LSS).
    ``"kernel"``: proportional to ``1 / (s (p - s))``, the size marginal of the Shapley kernel
    ``(p-1) / (C(p,s) s (p-s))`` (KernelSHAP, Unbiased KernelSHAP).
    """
    p = int(n_players)
    if p < 2:
        raise ValueError(f"a size distribution needs p >= 2 players, got p = {p}")
    q = np.zeros(p + 1)
    s = np.arange(1, p, dtype=np.float64)
    if kind == "uniform":
        q[1:p] = 1.0
    elif kind == "kernel":
        q[1:p] = 1.0 / (s * (p - s))
    else:
        raise ValueError(f"unknown size distribution {kind!r}; choose one of {SIZE_KINDS}")
    return q / q.sum()


def log_binom(n: int, k: np.ndarray | int) -> np.ndarray:
    """``log C(n, k)`` as float64 (vectorised over ``k``; exact enough for weights at any n)."""
    k = np.asarray(k, dtype=np.float64)
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def coalition_probability(n_players: int, subset_sizes: np.ndarray, size_probs: np.ndarray) -> np.ndarray:
    """Probability ``float64[m]`` of each coalition under "size ~ size_probs, then a uniform set".

    ``P(S) = size_probs[|S|] / C(p, |S|)``; ``subset_sizes`` is ``int[m]``.
    """
    s = np.asarray(subset_sizes, dtype=np.int64)
    q = np.asarray(size_probs, dtype=np.float64)[s]
    with np.errstate(divide="ignore"):
        return np.where(q > 0, np.exp(np.log(np.where(q > 0, q, 1.0)) - log_binom(n_players, s)), 0.0)


# -- samplers ---------------------------------------------------------------------------------
def sample_sizes(rng: np.random.Generator, size_probs: np.ndarray, n: int) -> np.ndarray:
    """``n`` i.i.d. coalition sizes ``int64[n]`` from ``size_probs`` (``float64[p + 1]``)."""
    q = np.asarray(size_probs, dtype=np.float64)
    return rng.choice(q.shape[0], size=int(n), p=q / q.sum()).astype(np.int64)


def sample_coalitions(rng: np.random.Generator, n_players: int, n: int, size_probs: np.ndarray) -> np.ndarray:
    """``n`` i.i.d. coalitions ``bool[n, p]``: size from ``size_probs``, then a uniform set of that size."""
    return random_subsets(rng, n_players, sample_sizes(rng, size_probs, n))


def sample_uniform_size(rng: np.random.Generator, n_players: int, n: int) -> np.ndarray:
    """``n`` i.i.d. draws ``bool[n, p]``, size uniform on ``1..p-1`` (LSS: ``p(S) = 1/((p-1) C(p,|S|))``)."""
    return random_subsets(rng, n_players, rng.integers(1, n_players, size=int(n)))


def sample_kernel_size(rng: np.random.Generator, n_players: int, n: int) -> np.ndarray:
    """``n`` i.i.d. draws ``bool[n, p]`` from the Shapley kernel (size ``∝ 1/(s(p-s))``, then uniform)."""
    return sample_coalitions(rng, n_players, n, size_distribution(n_players, "kernel"))


def uniform_subsets_of_size(rng: np.random.Generator, n_players: int, size: int, n: int) -> np.ndarray:
    """``n`` i.i.d. uniform subsets ``bool[n, p]`` of one fixed ``size`` (0 <= size <= p)."""
    if not 0 <= size <= n_players:
        raise CoalitionError(f"subset size must lie in 0..{n_players}, got {size}")
    return random_subsets(rng, n_players, np.full(int(n), size, dtype=np.int64))


def random_subsets_containing(
    rng: np.random.Generator, n_players: int, players: np.ndarray, subset_sizes: np.ndarray
) -> np.ndarray:
    """Row ``r`` is ``{players[r]}`` plus a uniform ``(subset_sizes[r] - 1)``-subset of the others.

    ``players`` and ``subset_sizes`` are ``int[m]`` (sizes in ``1..p``); returns ``bool[m, p]``.
    This is the S-LSS stratum sampler ``p_{j,s}(S) = 1 / C(p-1, s-1)``. Vectorised like
    :func:`random_subsets`: the forced player gets the smallest key, so it always ranks first.
    """
    players = np.asarray(players, dtype=np.int64)
    subset_sizes = np.asarray(subset_sizes, dtype=np.int64)
    m = players.shape[0]
    if m == 0:
        return np.zeros((0, n_players), dtype=bool)
    if subset_sizes.min() < 1 or subset_sizes.max() > n_players:
        raise CoalitionError(f"sizes of subsets containing a player must lie in 1..{n_players}")
    keys = rng.random((m, n_players))
    keys[np.arange(m), players] = -1.0
    ranks = np.argsort(keys, axis=1).argsort(axis=1)
    return ranks < subset_sizes[:, None]


def interleave_complements(coalitions: np.ndarray) -> np.ndarray:
    """Pairs ``S_0, N\\S_0, S_1, N\\S_1, ...``: ``bool[2m, p]`` from ``bool[m, p]`` (pairing trick)."""
    z = np.asarray(coalitions, dtype=bool)
    out = np.empty((2 * z.shape[0], z.shape[1]), dtype=bool)
    out[0::2] = z
    out[1::2] = ~z
    return out


# -- budget-aware drawing ---------------------------------------------------------------------
@dataclass
class Draws:
    """Coalitions drawn with replacement and their values, in draw order.

    coalitions: ``bool[tau, p]`` every draw, repeats included (tau = number of draws).
    values:     ``float64[tau]`` the game's value of each draw (repeats served from the cache).
    new:        ``bool[tau]`` True where the draw charged a new coalition to the budget.
    stopped:    why drawing ended: ``"max_draws"`` (the planned number of draws was reached),
                ``"budget"`` (the next draw would not fit), ``"support"`` (every coalition the
                sampler can produce is evaluated) or ``"max_draws_cap"`` (safety cap).
    """

    coalitions: np.ndarray
    values: np.ndarray
    new: np.ndarray
    stopped: str

    @property
    def n_draws(self) -> int:
        return int(self.values.shape[0])


def draw_within_budget(
    game: BudgetedGame,
    sampler: Callable[[int, int], np.ndarray],
    *,
    max_draws: int | None = None,
    support_size: int | None = None,
    in_support: Callable[[np.ndarray], np.ndarray] | None = None,
    block: int = 1,
    batch_size: int | None = None,
) -> Draws:
    """Draw coalitions from ``sampler`` and evaluate them through ``game`` under the budget rule.

    ``sampler(start, m)`` returns the next ``m`` draws ``bool[m, p]`` of the stream (``start`` is
    the index of the first; stratified designs use it to know which stratum comes next). Draws
    are consumed in order and in blocks of ``block`` rows (2 for paired sampling: a pair is taken
    whole or not at all). Drawing stops

    - after ``max_draws`` draws (``None``: no planned count);
    - before the first block whose *new* coalitions exceed ``game.remaining`` (repeats of
      evaluated coalitions are free and are kept, with their multiplicity, as draws);
    - once all ``support_size`` coalitions of the sampler's support are evaluated (further draws
      would only repeat); ``in_support(Z) -> bool[m]`` says which already-evaluated coalitions
      count towards it (default: all proper coalitions, i.e. not empty and not grand);
    - at a safety cap of ``100 * budget + 10_000`` draws when ``max_draws`` is None.

    All affordable draws of a batch are evaluated with ONE call of ``game``. Returns
    :class:`Draws`.
    """
    p = game.n_players
    cap = max_draws if max_draws is not None else 100 * game.budget + 10_000
    if in_support is None:

        def in_support(z: np.ndarray) -> np.ndarray:
            s = z.sum(axis=1)
            return (s > 0) & (s < p)

    # support coalitions already evaluated before this call (e.g. a shared BudgetedGame)
    hist_z, _ = game.history()
    seen_support: set[bytes] = set()
    if support_size is not None and hist_z.shape[0]:
        mask = in_support(hist_z)
        seen_support.update(coalition_keys(hist_z[mask]))

    chunks_z: list[np.ndarray] = []
    chunks_v: list[np.ndarray] = []
    chunks_new: list[np.ndarray] = []
    n_done = 0
    stopped = "max_draws"
    while True:
        if n_done >= cap:
            stopped = "max_draws" if max_draws is not None else "max_draws_cap"
            break
        if support_size is not None and len(seen_support) >= support_size:
            stopped = "support"
            break
        room = game.remaining
        # enough draws to fill the remaining budget, plus slack for repeats; whole blocks only
        want = batch_size or max(256, room + room // 4 + 2 * block)
        want = min(want, cap - n_done)
        want -= want % block
        if want <= 0:
            break
        z = np.asarray(sampler(n_done, want), dtype=bool)
        keys = coalition_keys(z)
        cached = game.is_cached(z)
        support = in_support(z) if support_size is not None else None
        fresh: set[bytes] = set()
        new = np.zeros(want, dtype=bool)
        take = want
        exhausted = False
        for b0 in range(0, want, block):
            block_new: list[int] = []
            for r in range(b0, b0 + block):
                k = keys[r]
                if not cached[r] and k not in fresh and all(k != keys[q] for q in block_new):
                    block_new.append(r)
            if len(fresh) + len(block_new) > room:
                take = b0
                stopped = "budget"
                break
            for r in block_new:
                fresh.add(keys[r])
                new[r] = True
            if support is not None:
                for r in range(b0, b0 + block):
                    if support[r]:
                        seen_support.add(keys[r])
                if len(seen_support) >= support_size:
                    take = b0 + block
                    exhausted = True
                    break
        if take > 0:
            zt = z[:take]
            chunks_z.append(zt)
            chunks_v.append(game(zt))  # one call: charges exactly the fresh coalitions
            chunks_new.append(new[:take])
            n_done += take
        if stopped == "budget":
            break
        if exhausted:
            stopped = "support"
            break
    if chunks_z:
        return Draws(np.concatenate(chunks_z), np.concatenate(chunks_v), np.concatenate(chunks_new), stopped)
    return Draws(np.zeros((0, p), dtype=bool), np.zeros(0), np.zeros(0, dtype=bool), stopped)


__all__ = [
    "SIZE_KINDS",
    "Draws",
    "coalition_probability",
    "draw_within_budget",
    "interleave_complements",
    "log_binom",
    "random_subsets_containing",
    "sample_coalitions",
    "sample_kernel_size",
    "sample_sizes",
    "sample_uniform_size",
    "size_distribution",
    "uniform_subsets_of_size",
]
