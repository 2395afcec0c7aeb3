"""Exact Shapley values by enumeration and the dense Shapley operator (small p, references)."""

from __future__ import annotations

from typing import Any

import numpy as np

from shapleig.errors import GameError
from shapleig.games.coalitions import all_coalitions, as_coalition_matrix, to_bitmask
from shapleig.games.game import check_game, check_game_values

MAX_ENUMERATION_PLAYERS = 20
MAX_DENSE_OPERATOR_PLAYERS = 12


def shapley_weights(n_players: int) -> np.ndarray:
    """``omega[k] = 1 / (p * C(p-1, k))`` for k = 0..p-1 and ``omega[p] = 0``: float64[p+1].

    The Shapley weight of a size-k coalition that excludes the player.

    Args:
        n_players: the number of players p.

    Returns:
        float64[p+1], the weights by coalition size.
    """
    p = n_players
    # imported here, not at module level: scipy.special costs most of `import shapleig` otherwise
    from scipy.special import gammaln

    k = np.arange(p, dtype=np.float64)
    log_binom = gammaln(p) - gammaln(k + 1) - gammaln(p - k)
    w = np.zeros(p + 1)
    w[:p] = np.exp(-np.log(p) - log_binom)
    return w


def shapley_from_table(coalitions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Exact Shapley values ``float64[p]`` from all ``2^p`` coalitions in any row order.

    ``phi = Z^T (a+ * v) - (~Z)^T (a- * v)`` with ``a+[S] = omega(|S|-1)``, ``a-[S] = omega(|S|)``.

    Args:
        coalitions: ``bool[2^p, p]``, every coalition once, in any row order.
        values: float64[2^p], the game's value of each row.

    Returns:
        float64[p], the Shapley values.
    """
    z = np.asarray(coalitions, dtype=bool)
    v = np.asarray(values, dtype=np.float64)
    p = z.shape[1]
    if z.shape[0] != (1 << p) or v.shape != (z.shape[0],):
        raise GameError(f"a full table needs 2^{p} = {1 << p} rows and values, got {z.shape[0]}, {v.shape}")
    w = shapley_weights(p)
    s = z.sum(axis=1)
    a_plus = np.where(s > 0, w[np.maximum(s - 1, 0)], 0.0)
    a_minus = w[s]
    return z.T.astype(np.float64) @ (a_plus * v) - (~z).T.astype(np.float64) @ (a_minus * v)


def shapley_from_bitorder(values: np.ndarray) -> np.ndarray:
    """Exact Shapley values from ``float64[2^p]`` values indexed by bit-order codes.

    Args:
        values: float64[2^p], ``values[code]`` the value of the coalition with bit-order code ``code``.

    Returns:
        float64[p], the Shapley values.
    """
    v = np.asarray(values, dtype=np.float64)
    p = int(np.log2(v.shape[0]))
    if v.shape[0] != (1 << p):
        raise GameError(f"bit-order values need length 2^p, got {v.shape[0]}")
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = np.zeros(1 << p, dtype=np.int64)
    for j in range(p):
        sizes += (codes >> j) & 1
    w = shapley_weights(p)
    phi = np.empty(p)
    for i in range(p):
        without = codes[((codes >> i) & 1) == 0]
        phi[i] = np.dot(w[sizes[without]], v[without | (1 << i)] - v[without])
    return phi


def exact_shapley(game: Any, chunk_size: int = 1 << 16) -> np.ndarray:
    """Exact Shapley values ``float64[p]`` of ``game`` by evaluating all ``2^p`` coalitions.

    p <= 20. The game is called in chunks of ``chunk_size`` coalitions; values are validated.

    Args:
        game: a :class:`~shapleig.games.game.Game` with p <= 20 players.
        chunk_size: coalitions per game call (bounds the memory of one batch).

    Returns:
        float64[p], the Shapley values.
    """
    p = check_game(game)
    if p > MAX_ENUMERATION_PLAYERS:
        raise GameError(f"exact_shapley enumerates 2^p coalitions; p = {p} > {MAX_ENUMERATION_PLAYERS}")
    codes = np.arange(1 << p, dtype=np.int64)
    values = np.empty(1 << p)
    bits = np.arange(p, dtype=np.int64)
    for start in range(0, 1 << p, chunk_size):
        chunk = codes[start : start + chunk_size]
        z = ((chunk[:, None] >> bits) & 1).astype(bool)
        values[start : start + chunk_size] = check_game_values(game(z), z)
    return shapley_from_bitorder(values)


def shapley_operator(n_players: int) -> np.ndarray:
    """Dense Shapley operator ``A`` (float64[p, 2^p], bit-order columns) with ``phi = A v``.

    ``A[i, S] = omega(|S|-1)`` if i in S, else ``-omega(|S|)``. For tests and references only
    (p <= 12); library code never forms it.

    Args:
        n_players: the number of players p (<= 12).

    Returns:
        float64[p, 2^p], the operator.
    """
    if n_players > MAX_DENSE_OPERATOR_PLAYERS:
        raise GameError(f"the dense Shapley operator is for p <= {MAX_DENSE_OPERATOR_PLAYERS}")
    z = all_coalitions(n_players)
    w = shapley_weights(n_players)
    s = z.sum(axis=1)
    plus = w[np.maximum(s - 1, 0)]
    minus = w[s]
    return np.where(z.T, plus[None, :], -minus[None, :])


def values_in_bitorder(coalitions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Reorder a full table (any row order) into bit order: ``float64[2^p]``.

    Args:
        coalitions: ``bool[2^p, p]``, every coalition once, in any row order.
        values: float64[2^p], the value of each row.

    Returns:
        float64[2^p], the values indexed by bit-order code.
    """
    z = as_coalition_matrix(coalitions, np.asarray(coalitions).shape[1])
    out = np.empty(1 << z.shape[1])
    out[to_bitmask(z)] = values
    return out
