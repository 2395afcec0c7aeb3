"""Initial designs and candidate pools (docs/math.md §8).

Initial design (p + 1 coalitions): the empty and grand coalitions, then p - 1 coalitions from the
paired uniform-size sampler (leverage-score design, no border trick) or uniformly at random.

Candidate pool, fixed at set-up: every coalition outside the design when that is at most
``max_candidates`` (sizes ordered by decreasing distance from p/2, lexicographic within a size), else
a sample of ``pool_size`` from the same paired sampler with the border trick, excluding the design.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from shapleig.games.coalitions import border_layers, coalition_keys, coalitions_of_size, sample_paired_uniform_size

INITIAL_DESIGNS = ("leverage", "uniform")
DEFAULT_POOL_SIZE = 1024
# Above this p an exhaustive pool is almost surely a mistake (65534+ candidates per EIG sweep).
EXHAUSTIVE_WARN_PLAYERS = 16


def _empty_and_grand(p: int) -> np.ndarray:
    return np.stack([np.zeros(p, dtype=bool), np.ones(p, dtype=bool)])


def leverage_design(n_players: int, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """``bool[size, p]``: empty, grand, then size - 2 coalitions from the paired uniform-size sampler.

    ``size`` defaults to p + 1 (ShaplEIG's initial design; the GP+Leverage arm asks for its whole
    budget). Uniform size weights are the leverage scores of the Shapley regression. The border
    trick is off: whole size layers are never enumerated (such designs were poor GP initialisations).
    Fewer rows come back only when the 2^p - 2 proper coalitions run out.

    Args:
        n_players: the number of players p.
        rng: the random generator.
        size: the number of coalitions (>= 2); None: p + 1.

    Returns:
        ``bool[size, p]`` (fewer rows only when the proper coalitions run out).
    """
    p = n_players
    size = p + 1 if size is None else int(size)
    if size < 2:
        raise ValueError(f"a leverage design holds the empty and grand coalitions, so size >= 2; got {size}")
    base = _empty_and_grand(p)
    rest = sample_paired_uniform_size(rng, p, size - 2, exclude=coalition_keys(base))
    return np.concatenate([base, rest])


def uniform_design(n_players: int, rng: np.random.Generator) -> np.ndarray:
    """``bool[p+1, p]``: empty, grand, then p - 1 distinct coalitions uniform over proper subsets.

    Args:
        n_players: the number of players p.
        rng: the random generator.

    Returns:
        ``bool[p+1, p]``.
    """
    p = n_players
    base = _empty_and_grand(p)
    seen = set(coalition_keys(base))
    rows: list[np.ndarray] = []
    while len(rows) < p - 1:
        for row in rng.random((2 * (p - 1 - len(rows)) + 4, p)) < 0.5:
            key = np.packbits(row).tobytes()
            if key not in seen:
                seen.add(key)
                rows.append(row)
                if len(rows) == p - 1:
                    break
    rest = np.stack(rows) if rows else np.zeros((0, p), dtype=bool)
    return np.concatenate([base, rest])


def initial_design(name: str, n_players: int, rng: np.random.Generator) -> np.ndarray:
    """The named initial design (``"leverage"`` or ``"uniform"``), ``bool[p+1, p]``.

    Args:
        name: ``"leverage"`` or ``"uniform"`` (see ``INITIAL_DESIGNS``).
        n_players: the number of players p.
        rng: the random generator.

    Returns:
        ``bool[p+1, p]``.
    """
    if name == "leverage":
        return leverage_design(n_players, rng)
    if name == "uniform":
        return uniform_design(n_players, rng)
    raise ValueError(f"unknown initial design {name!r}; choose one of {INITIAL_DESIGNS}")


def size_order(n_players: int) -> list[int]:
    """Sizes 0..p by decreasing distance from p/2, smaller size first on ties: 0, p, 1, p-1, 2, ...

    Args:
        n_players: the number of players p.

    Returns:
        the sizes 0..p in that order.
    """
    p = n_players
    return sorted(range(p + 1), key=lambda k: (-abs(2 * k - p), k))


def border_sizes(n_players: int, n_samples: int) -> list[int]:
    """Sizes that the border trick enumerates for ``n_samples`` proper coalitions (sizes 1..p-1).

    :func:`~shapleig.games.coalitions.border_layers` under uniform size weights: outer layers are
    taken while their expected count reaches their size ``C(p, k)``. Returned in :func:`size_order` order.

    Args:
        n_players: the number of players p.
        n_samples: the number of proper coalitions to be drawn.

    Returns:
        the enumerated sizes, in :func:`size_order` order.
    """
    p = n_players
    uniform = np.zeros(p + 1)
    uniform[1:p] = 1.0
    order = size_order(p)
    return sorted(border_layers(p, n_samples, uniform), key=order.index)


@dataclass(frozen=True)
class CandidatePool:
    """A fixed candidate pool.

    Attributes:
        W: ``bool[n, p]`` candidates in pool order (ties in the acquisition go to the first).
        exhaustive: True when W is every coalition outside the design.
        border_sizes: sizes enumerated by the border trick (sampled pools only).
    """

    W: np.ndarray
    exhaustive: bool
    border_sizes: tuple[int, ...] = ()

    def __len__(self) -> int:
        return int(self.W.shape[0])


def _layers_excluding(n_players: int, sizes: list[int], exclude: set[bytes]) -> np.ndarray:
    p = n_players
    blocks = []
    for k in sizes:
        layer = coalitions_of_size(p, k)
        keep = np.array([key not in exclude for key in coalition_keys(layer)], dtype=bool)
        blocks.append(layer[keep])
    return np.concatenate(blocks) if blocks else np.zeros((0, p), dtype=bool)


def candidate_pool(
    n_players: int,
    design: np.ndarray,
    rng: np.random.Generator,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_candidates: int | None = None,
) -> CandidatePool:
    """The candidate pool for a ``p``-player game given the initial ``design`` (bool[m, p]).

    Exhaustive when ``2^p - (p+1) <= max_candidates`` (default ``pool_size``): every coalition not
    in the design, sizes in :func:`size_order`, lexicographic within a size. Otherwise ``pool_size``
    distinct coalitions: first the border-trick layers (computed for ``pool_size + p - 1`` proper
    coalitions, i.e. the pool together with the design's proper coalitions, as one sample from the
    paired sampler), then draws of the seeded paired uniform-size sampler in draw order.

    Args:
        n_players: the number of players p.
        design: ``bool[m, p]``, the initial design (its coalitions are left out of the pool).
        rng: the random generator of the sampled pool.
        pool_size: the pool's size when it is sampled.
        max_candidates: the largest exhaustive pool; None: ``pool_size``.

    Returns:
        the :class:`CandidatePool`.
    """
    p = n_players
    if pool_size < 1:
        raise ValueError(f"pool_size must be >= 1, got {pool_size}")
    limit = pool_size if max_candidates is None else int(max_candidates)
    exclude = set(coalition_keys(design))
    if p <= 62 and (1 << p) - (p + 1) <= limit:
        if p > EXHAUSTIVE_WARN_PLAYERS:
            warnings.warn(f"exhaustive candidate pool requested for p = {p} (2^{p} coalitions)",
                          stacklevel=2)
        W = _layers_excluding(p, size_order(p), exclude)
        return CandidatePool(W=W, exhaustive=True)
    layers = border_sizes(p, pool_size + p - 1)
    enumerated = _layers_excluding(p, layers, exclude)[:pool_size]
    exclude.update(coalition_keys(enumerated))
    # The sampler rejects draws that land in enumerated layers, so the sampled part is uniform over
    # the remaining sizes; complements of remaining sizes are remaining sizes (layers are symmetric).
    sampled = sample_paired_uniform_size(rng, p, pool_size - enumerated.shape[0], exclude=exclude)
    W = np.concatenate([enumerated, sampled])
    return CandidatePool(W=W, exhaustive=False, border_sizes=tuple(layers))
