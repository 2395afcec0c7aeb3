"""Coalition utilities: bool matrices, integer bitmasks, keys, sizes, enumeration, samplers.

A coalition is a row of a bool matrix ``Z`` of shape ``(m, p)``: ``Z[r, j]`` is True when player
``j`` is in coalition ``r``. Integer codes use bit order, ``code = sum_j Z[j] << j`` (p <= 62).
"""

from __future__ import annotations

import itertools
import math
from typing import Iterable

import numpy as np

from shapleig.errors import CoalitionError

MAX_BITMASK_PLAYERS = 62


def as_coalition_matrix(coalitions: object, n_players: int) -> np.ndarray:
    """Validate and return ``coalitions`` as a C-contiguous ``bool[m, n_players]`` matrix.

    Accepts bool arrays, and integer arrays whose entries are all 0 or 1; a single coalition of
    shape ``(n_players,)`` is promoted to ``(1, n_players)``. Anything else raises
    :class:`CoalitionError` naming the problem.

    Args:
        coalitions: a bool or 0/1 integer array, ``(m, n_players)`` or one coalition ``(n_players,)``.
        n_players: the number of players p.

    Returns:
        ``bool[m, n_players]``, C-contiguous.
    """
    z = np.asarray(coalitions)
    if z.ndim == 1 and z.shape[0] == n_players:
        z = z[None, :]
    if z.ndim != 2 or z.shape[1] != n_players:
        raise CoalitionError(
            f"coalitions must have shape (m, {n_players}) for a {n_players}-player game, "
            f"got shape {z.shape}"
        )
    if z.dtype == np.bool_:
        return np.ascontiguousarray(z)
    if np.issubdtype(z.dtype, np.integer):
        if z.size and not np.isin(z, (0, 1)).all():
            raise CoalitionError("integer coalition matrices may only contain 0 and 1")
        return np.ascontiguousarray(z.astype(bool))
    raise CoalitionError(f"coalitions must be a bool (or 0/1 integer) matrix, got dtype {z.dtype}")


def sizes(coalitions: np.ndarray) -> np.ndarray:
    """Coalition sizes, ``int64[m]``.

    Args:
        coalitions: ``bool[m, p]`` coalition matrix.

    Returns:
        ``int64[m]``, the number of players in each row.
    """
    return np.asarray(coalitions, dtype=bool).sum(axis=1).astype(np.int64)


def to_bitmask(coalitions: np.ndarray) -> np.ndarray:
    """Bit-order integer codes ``int64[m]`` of the rows of ``bool[m, p]`` (p <= 62).

    Args:
        coalitions: ``bool[m, p]`` coalition matrix, p <= 62.

    Returns:
        ``int64[m]`` codes, bit j set when player j is in the coalition.
    """
    z = np.asarray(coalitions, dtype=bool)
    p = z.shape[1]
    if p > MAX_BITMASK_PLAYERS:
        raise CoalitionError(f"bitmask codes need p <= {MAX_BITMASK_PLAYERS}, got p = {p}")
    weights = np.left_shift(np.int64(1), np.arange(p, dtype=np.int64))
    return z.astype(np.int64) @ weights


def from_bitmask(codes: np.ndarray | Iterable[int], n_players: int) -> np.ndarray:
    """Inverse of :func:`to_bitmask`: ``bool[m, n_players]`` from ``int[m]`` codes.

    Args:
        codes: integer codes ``int[m]`` (an array or any iterable of ints).
        n_players: the number of players p (<= 62).

    Returns:
        ``bool[m, n_players]``.
    """
    if n_players > MAX_BITMASK_PLAYERS:
        raise CoalitionError(f"bitmask codes need p <= {MAX_BITMASK_PLAYERS}, got p = {n_players}")
    c = np.asarray(list(codes) if not isinstance(codes, np.ndarray) else codes, dtype=np.int64)
    return ((c[:, None] >> np.arange(n_players, dtype=np.int64)) & 1).astype(bool)


def all_coalitions(n_players: int) -> np.ndarray:
    """All ``2^p`` coalitions in bit order, ``bool[2^p, p]`` (p <= 24 to bound memory).

    Args:
        n_players: the number of players p (<= 24).

    Returns:
        ``bool[2^p, p]``; row ``k`` is the coalition with code ``k``.
    """
    if n_players > 24:
        raise CoalitionError(f"refusing to enumerate 2^{n_players} coalitions (p <= 24)")
    return from_bitmask(np.arange(1 << n_players, dtype=np.int64), n_players)


def coalition_keys(coalitions: np.ndarray) -> list[bytes]:
    """Hashable keys (packed bits) for the rows of ``bool[m, p]``; valid for any p.

    Args:
        coalitions: ``bool[m, p]`` coalition matrix.

    Returns:
        one ``bytes`` key per row (equal rows give equal keys).
    """
    packed = np.packbits(np.asarray(coalitions, dtype=bool), axis=1)
    return [row.tobytes() for row in packed]


def format_coalition(row: np.ndarray) -> str:
    """Human-readable ``{0, 3, 5}`` form of one coalition row, for error messages.

    Args:
        row: one coalition, ``bool[p]``.

    Returns:
        the members as a set literal, e.g. ``"{0, 3, 5}"``.
    """
    members = np.flatnonzero(np.asarray(row, dtype=bool))
    return "{" + ", ".join(str(int(j)) for j in members) + "}"


def random_subsets(rng: np.random.Generator, n_players: int, subset_sizes: np.ndarray) -> np.ndarray:
    """One uniform random subset per requested size: ``bool[len(subset_sizes), n_players]``.

    Vectorised: rank i.i.d. uniforms per row and keep the ``size`` smallest.

    Args:
        rng: the random generator.
        n_players: the number of players p.
        subset_sizes: ``int[m]``, the size of each subset (0..p).

    Returns:
        ``bool[m, n_players]``; row r has ``subset_sizes[r]`` members.
    """
    subset_sizes = np.asarray(subset_sizes, dtype=np.int64)
    m = subset_sizes.shape[0]
    if m == 0:
        return np.zeros((0, n_players), dtype=bool)
    ranks = np.argsort(rng.random((m, n_players)), axis=1).argsort(axis=1)
    return ranks < subset_sizes[:, None]


def sample_paired_uniform_size(
    rng: np.random.Generator,
    n_players: int,
    n_coalitions: int,
    exclude: Iterable[bytes] = (),
    max_draws: int | None = None,
) -> np.ndarray:
    """Distinct coalitions from the paired uniform-size sampler (leverage-score design).

    Each draw takes a size uniformly from ``1..p-1`` and a uniform subset of that size, keeps it if
    new, then adds its complement if new and room remains (so for odd counts the last coalition
    may be unpaired). Coalitions whose key is in ``exclude`` are never returned. Returns
    ``bool[k, p]`` in draw order with ``k <= n_coalitions``; ``k`` is smaller only when the
    support (``2^p - 2`` proper coalitions minus exclusions) runs out.

    Args:
        rng: the random generator.
        n_players: the number of players p.
        n_coalitions: how many coalitions to return at most.
        exclude: keys (:func:`coalition_keys`) of coalitions never to return, e.g. those already evaluated.
        max_draws: the most subsets to draw before giving up; None: ``1000 * n_coalitions + 10000``.

    Returns:
        ``bool[k, p]`` in draw order, ``k <= n_coalitions``.
    """
    p = n_players
    seen = set(exclude)
    out: list[np.ndarray] = []
    draws = 0
    limit = max_draws if max_draws is not None else 1000 * max(n_coalitions, 1) + 10_000
    while len(out) < n_coalitions and draws < limit:
        batch = max(2 * (n_coalitions - len(out)), 16)
        subsets = random_subsets(rng, p, rng.integers(1, p, size=batch))
        for row in subsets:
            draws += 1
            key = np.packbits(row).tobytes()
            if key not in seen:
                seen.add(key)
                out.append(row)
                comp = ~row
                comp_key = np.packbits(comp).tobytes()
                if len(out) < n_coalitions and comp_key not in seen:
                    seen.add(comp_key)
                    out.append(comp)
            if len(out) >= n_coalitions or draws >= limit:
                break
    if not out:
        return np.zeros((0, p), dtype=bool)
    return np.stack(out)


def coalitions_of_size(n_players: int, size: int) -> np.ndarray:
    """All ``C(p, size)`` coalitions of one size, ``bool[C(p,size), p]`` in lexicographic order.

    The border layers of KernelSHAP-type designs and the exhaustive candidate pool; refuses
    layers above 10^7 rows.

    Args:
        n_players: the number of players p.
        size: the coalition size, 0..p.

    Returns:
        ``bool[C(p, size), p]``, lexicographic in the members.
    """
    count = math.comb(n_players, size)
    if count > 10_000_000:
        raise CoalitionError(f"refusing to enumerate C({n_players}, {size}) = {count} coalitions")
    out = np.zeros((count, n_players), dtype=bool)
    if size == 0 or count == 0:
        return out
    idx = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n_players), size)),
        dtype=np.int64,
        count=count * size,
    ).reshape(count, size)
    out[np.arange(count)[:, None], idx] = True
    return out


def border_layers(n_players: int, room: int, size_probs: np.ndarray) -> list[int]:
    """Sizes to enumerate, outermost first: layer ``s`` is taken while ``room * q_s >= C(p, s)``.

    ``q`` is renormalised over the layers not yet taken and ``room`` reduced by each layer taken.
    The border trick of KernelSHAP and of ShaplEIG's candidate pool.

    Args:
        n_players: the number of players p.
        room: the draws left for sizes 1..p-1.
        size_probs: float64[p + 1], the sampling weight of each size (0 and p unused).

    Returns:
        the sizes taken, outermost first (both sides of a pair of layers before the next pair).
    """
    p = n_players
    order = sorted(range(1, p), key=lambda s: (min(s, p - s), s))
    active = np.asarray(size_probs, dtype=np.float64).copy()
    taken: list[int] = []
    for s in order:
        mass = active.sum()
        if mass <= 0:
            break
        c = math.comb(p, s)
        # relative tolerance: at the innermost pair the test holds with equality
        if room * active[s] / mass >= c * (1 - 1e-12) and c <= room:
            taken.append(s)
            room -= c
            active[s] = 0.0
        else:
            break
    return taken
