"""Dense index operators ``B`` (float64[d, 2^p], bit-order columns) from the indices' own definitions.

For tests and references only (p <= 12): nothing here reads the derivative weights of
:mod:`shapleig.games.index_weights`, so comparing the two checks the weights. k-SII is the Bernoulli
sum of SII rows over supersets, FSII the least-squares fit with the Shapley kernel weights and exact
fits at the empty and grand coalitions (solved by its KKT system), FBII the unweighted least-squares
fit, STII the Moebius rows below its top order; SII, BII, CHII and the Moebius transform are the
derivative sums with shapiq 1.8.0's base weights.
"""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Callable

import numpy as np


def all_terms(n_players: int, max_order: int) -> list[tuple[int, ...]]:
    """The terms of orders 1..max_order: the p singletons, then the pairs, ..., each order lexicographic.

    Args:
        n_players: p.
        max_order: k.

    Returns:
        the player tuples (shapiq's ``powerset`` order without the empty set).
    """
    out: list[tuple[int, ...]] = []
    for t in range(1, int(max_order) + 1):
        out += list(combinations(range(int(n_players)), t))
    return out


def all_sets(n_players: int) -> np.ndarray:
    """``bool[2^p, p]``: every coalition in bit order (row ``code`` has player j iff bit j of code is set).

    Args:
        n_players: p.

    Returns:
        bool[2^p, p].
    """
    codes = np.arange(1 << int(n_players), dtype=np.int64)
    return ((codes[:, None] >> np.arange(int(n_players))) & 1).astype(bool)


def derivative_rows(n_players: int, terms: list[tuple[int, ...]], weight: Callable[[int, int], float]) -> np.ndarray:
    """Rows of ``sum_{S cap T = empty} weight(|T|, |S|) Delta_T v(S)`` over bit-order columns.

    Args:
        n_players: p.
        terms: the terms T.
        weight: ``(|T|, |S|) -> w``.

    Returns:
        float64[len(terms), 2^p].
    """
    p = int(n_players)
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = all_sets(p).sum(axis=1)
    out = np.zeros((len(terms), 1 << p))
    for row, T in enumerate(terms):
        tmask = sum(1 << t for t in T)
        S = codes[(codes & tmask) == 0]
        w = np.array([weight(len(T), k) for k in range(p - len(T) + 1)])[sizes[S]]  # |S| <= p - |T|
        for sub in range(1 << len(T)):  # Delta_T v(S) = sum_{L subset T} (-1)^(|T|-|L|) v(S + L)
            L = sum(1 << T[q] for q in range(len(T)) if (sub >> q) & 1)
            out[row, S | L] += (-1) ** (len(T) - sub.bit_count()) * w
    return out


def base_dense(n_players: int, max_order: int, base: str) -> np.ndarray:
    """SII, BII, CHII or the Moebius transform up to ``max_order``: derivative rows with shapiq's base weights.

    Args:
        n_players: p.
        max_order: k.
        base: ``"SII"``, ``"BII"``, ``"CHII"`` or ``"Moebius"``.

    Returns:
        float64[d, 2^p].
    """
    p = int(n_players)
    weight = {
        "SII": lambda t, s: 1.0 / ((p - t + 1) * comb(p - t, s)),
        "BII": lambda t, s: 0.5 ** (p - t),
        "CHII": lambda t, s: t / ((t + s) * comb(p, t + s)),
        "Moebius": lambda t, s: float(s == 0),
    }[base]
    return derivative_rows(p, all_terms(p, max_order), weight)


def ksii_dense(n_players: int, max_order: int, bernoulli: tuple) -> np.ndarray:
    """k-SII: ``k-SII(T) = sum_{T' >= T, |T'| <= k} B_{|T'| - |T|} SII(T')`` (Bernoulli numbers ``bernoulli``).

    Args:
        n_players: p.
        max_order: k.
        bernoulli: ``B_0..B_k``.

    Returns:
        float64[d, 2^p].
    """
    terms = all_terms(n_players, max_order)
    sii = base_dense(n_players, max_order, "SII")
    out = np.zeros_like(sii)
    for row, T in enumerate(terms):
        for sup, U in enumerate(terms):
            if set(T) <= set(U):
                out[row] += float(bernoulli[len(U) - len(T)]) * sii[sup]
    return out


def stii_dense(n_players: int, max_order: int) -> np.ndarray:
    """STII: the Moebius coefficients below order k, ``(k/p) sum_S Delta_T v(S) / C(p-1, |S|)`` at order k.

    Args:
        n_players: p.
        max_order: k.

    Returns:
        float64[d, 2^p].
    """
    p, k = int(n_players), int(max_order)
    return derivative_rows(p, all_terms(p, k),
                           lambda t, s: k / (p * comb(p - 1, s)) if t == k else float(s == 0))


def _monomials(n_players: int, max_order: int) -> np.ndarray:
    """``X[S, T] = [T subset S]`` for every coalition S (bit order) and T of orders 0..k."""
    Z = all_sets(n_players)
    terms = [()] + all_terms(n_players, max_order)
    return np.array([[all(z[t] for t in T) for T in terms] for z in Z], dtype=np.float64)


def fsii_dense(n_players: int, max_order: int) -> np.ndarray:
    """FSII as the faithful least-squares fit of order k (Tsai et al. 2023).

    Minimise ``sum_S mu(S) (v(S) - sum_{T subset S, |T| <= k} e(T))^2`` with
    ``mu(S) = (p-1) / (C(p, |S|) |S| (p - |S|))`` and the fit exact at the empty and grand coalitions
    (constraints, solved by the KKT system).

    Args:
        n_players: p.
        max_order: k.

    Returns:
        float64[d, 2^p] (the empty term dropped).
    """
    p = int(n_players)
    X = _monomials(p, max_order)
    sizes = all_sets(p).sum(axis=1)
    inner = (sizes > 0) & (sizes < p)
    mu = np.zeros(1 << p)
    mu[inner] = (p - 1) / (np.array([comb(p, int(s)) for s in sizes[inner]]) * sizes[inner] * (p - sizes[inner]))
    G = X[inner].T @ (mu[inner, None] * X[inner])
    C = X[~inner]  # rows of the empty and grand coalitions
    n, c = X.shape[1], C.shape[0]
    KKT = np.block([[2 * G, C.T], [C, np.zeros((c, c))]])
    rhs = np.zeros((n + c, 1 << p))
    rhs[:n, inner] = 2 * (X[inner] * mu[inner, None]).T
    rhs[n:, np.flatnonzero(~inner)] = np.eye(c)
    return np.linalg.solve(KKT, rhs)[1:n]


def fbii_dense(n_players: int, max_order: int) -> np.ndarray:
    """FBII as the unweighted least-squares fit of order k (every coalition weighs the same, no constraint).

    Args:
        n_players: p.
        max_order: k.

    Returns:
        float64[d, 2^p] (the intercept dropped).
    """
    X = _monomials(n_players, max_order)
    return np.linalg.solve(X.T @ X, X.T)[1:]


__all__ = ["all_sets", "all_terms", "base_dense", "derivative_rows", "fbii_dense", "fsii_dense", "ksii_dense",
           "stii_dense"]
