"""Exact derivative weights of the built-in indices at any order k (docs/math.md §14.1).

Every term T (|T| = t <= k) of every built-in index at maximal order k is a size-weighted discrete
derivative ``I(T) = sum_{S subset of N minus T} w_t(|S|) Delta_T v(S)``. This module gives the weight
vectors ``w_1..w_k`` (``w_t`` indexed by |S| = 0..p-t) as exact fractions, from three facts:

- **Base indices** (shapiq 1.8.0's ``ExactComputer._base_weights``): SII ``1/((p-t+1) C(p-t, s))``,
  BII ``2^-(p-t)``, CHII ``t/((t+s) C(p, t+s))``, Moebius ``[s = 0]``; the same formula at every order.
- **Aggregation** (:func:`aggregate`): a sum over supersets ``c_j sum_{T' > T, |T'| = t+j} Base(T')`` is
  again a derivative in T. Writing ``Delta_T' = Delta_{T' minus T} Delta_T`` and collecting, for
  ``R subset N minus T`` with |R| = r, the ways ``S cup L = R`` (L = R cap (T' minus T), |L| = l):

      w_t(r) += c_j sum_l C(r, l) C(p-t-r, j-l) (-1)^(j-l) W_{t+j}(r - l).

  k-SII is SII aggregated with the Bernoulli numbers (B_1 = -1/2, shapiq's ``aggregate_base_interaction``);
  FBII is BII aggregated with ``(-1/2)^j`` (the uniform least-squares fit keeps the Walsh coefficients of
  order <= k, and ``chi_U = sum_{T subset U} (-2)^|T| z^T``).
- **Moebius representation** (:func:`from_moebius`): an index ``I(T) = sum_{U >= T} lambda(t, |U|) m(U)``
  (m the Moebius transform) has ``lambda(t, t+l) = sum_r C(p-t-l, r-l) w_t(r)``, inverted as
  ``w_t(r) = sum_{l >= r} (-1)^(l-r) C(p-t-r, l-r) lambda(t, t+l)``. FSII (Tsai et al. 2023) is
  ``m(T) + (-1)^(k-t) t/(k+t) C(k, t) sum_{U > T, |U| > k} C(|U|-1, k) / C(|U|+k-1, k+t) m(U)``.

STII keeps the Moebius coefficients below the top order and ``(k/p)/C(p-1, s)`` at it.
Every formula is checked against dense operators built from the definitions (Bernoulli sums of SII
rows, the least-squares fits of FSII and FBII) and against shapiq's ``ExactComputer``
(``tests/games/test_index_orders.py``).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Callable

# weights per order: OrderWeights[t - 1] holds w_t(|S|) for |S| = 0..p - t
OrderWeights = tuple[tuple[Fraction, ...], ...]


@lru_cache(maxsize=64)
def bernoulli_numbers(n: int) -> tuple[Fraction, ...]:
    """``B_0..B_n`` with ``B_1 = -1/2`` (scipy's and shapiq's convention), exact.

    Args:
        n: the largest index.

    Returns:
        the n + 1 Bernoulli numbers.
    """
    B = [Fraction(1)]
    for m in range(1, n + 1):  # sum_{j<=m} C(m+1, j) B_j = 0
        B.append(-sum(comb(m + 1, j) * B[j] for j in range(m)) / (m + 1))
    return tuple(B)


def sii_base(p: int, t: int) -> list[Fraction]:
    """SII weights of an order-t term: ``1 / ((p - t + 1) C(p - t, s))``, s = 0..p-t (order 1: the SV).

    Args:
        p: the number of players.
        t: the term's order.

    Returns:
        the weights by |S| = 0..p - t.
    """
    return [Fraction(1, (p - t + 1) * comb(p - t, s)) for s in range(p - t + 1)]


def bii_base(p: int, t: int) -> list[Fraction]:
    """Banzhaf interaction weights: ``2^-(p-t)`` for every s (order 1: the Banzhaf value).

    Args:
        p: the number of players.
        t: the term's order.

    Returns:
        the weights by |S| = 0..p - t.
    """
    return [Fraction(1, 2 ** (p - t))] * (p - t + 1)


def chii_base(p: int, t: int) -> list[Fraction]:
    """Chaining interaction weights ``t / ((t + s) C(p, t + s))`` (Marichal and Roubens; order 1: the SV).

    Args:
        p: the number of players.
        t: the term's order.

    Returns:
        the weights by |S| = 0..p - t.
    """
    return [Fraction(t, (t + s) * comb(p, t + s)) for s in range(p - t + 1)]


def moebius_base(p: int, t: int) -> list[Fraction]:
    """The Moebius coefficient ``m(T) = Delta_T v(empty)``: weight 1 at s = 0 only.

    Args:
        p: the number of players.
        t: the term's order.

    Returns:
        the weights by |S| = 0..p - t.
    """
    return [Fraction(1)] + [Fraction(0)] * (p - t)


def _check(p: int, k: int) -> tuple[int, int]:
    p, k = int(p), int(k)
    if k < 1 or p < k:
        raise ValueError(f"weights of order k = {k} need 1 <= k <= p, got p = {p}")
    return p, k


def aggregate(p: int, k: int, base: Callable[[int, int], list[Fraction]],
              coef: Callable[[int, int], Fraction]) -> OrderWeights:
    """Weights of ``I(T) = sum_{j=0}^{k-t} coef(t, j) sum_{T' > T, |T'| = t + j} Base(T')`` (module docstring).

    Args:
        p: the number of players.
        k: the maximal order.
        base: ``(p, t) -> weights`` of the base index at order t (length p - t + 1).
        coef: ``(t, j) -> c``, the weight of the supersets with j more players.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    p, k = _check(p, k)
    out = []
    for t in range(1, k + 1):
        w = [Fraction(0)] * (p - t + 1)
        for j in range(k - t + 1):
            c = Fraction(coef(t, j))
            if c == 0:
                continue
            W = base(p, t + j)
            for r in range(p - t + 1):
                for l in range(max(0, j - (p - t - r)), min(r, j) + 1):
                    w[r] += c * comb(r, l) * comb(p - t - r, j - l) * (-1) ** (j - l) * W[r - l]
        out.append(tuple(w))
    return tuple(out)


def from_moebius(p: int, k: int, lam: Callable[[int, int], Fraction]) -> OrderWeights:
    """Derivative weights of ``I(T) = sum_{U >= T} lam(|T|, |U|) m(U)`` (module docstring).

    Args:
        p: the number of players.
        k: the maximal order.
        lam: ``(t, u) -> lambda``, the coefficient of the Moebius coefficient m(U) (|U| = u >= t) in I(T).

    Returns:
        ``(w_1, ..., w_k)``.
    """
    p, k = _check(p, k)
    out = []
    for t in range(1, k + 1):
        n = p - t
        lams = [Fraction(lam(t, t + l)) for l in range(n + 1)]
        out.append(tuple(sum(((-1) ** (l - r) * comb(n - r, l - r) * lams[l] for l in range(r, n + 1)),
                             Fraction(0)) for r in range(n + 1)))
    return tuple(out)


def to_moebius(p: int, weights: OrderWeights) -> tuple[tuple[Fraction, ...], ...]:
    """``lambda(t, t + l) = sum_r C(p - t - l, r - l) w_t(r)``: the Moebius representation of derivative weights.

    Args:
        p: the number of players.
        weights: ``(w_1, ..., w_k)``.

    Returns:
        one tuple per order t, ``lambda(t, t + l)`` for l = 0..p - t.
    """
    out = []
    for t, w in enumerate(weights, start=1):
        n = p - t
        out.append(tuple(sum((comb(n - l, r - l) * w[r] for r in range(l, n + 1)), Fraction(0))
                         for l in range(n + 1)))
    return tuple(out)


def _per_order(p: int, k: int, base: Callable[[int, int], list[Fraction]]) -> OrderWeights:
    p, k = _check(p, k)
    return tuple(tuple(base(p, t)) for t in range(1, k + 1))


@lru_cache(maxsize=128)
def sii_weights(p: int, k: int) -> OrderWeights:
    """SII up to order k (no aggregation: every order has its own base weights).

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    return _per_order(p, k, sii_base)


@lru_cache(maxsize=128)
def bii_weights(p: int, k: int) -> OrderWeights:
    """BII up to order k.

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    return _per_order(p, k, bii_base)


@lru_cache(maxsize=128)
def chii_weights(p: int, k: int) -> OrderWeights:
    """CHII up to order k.

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    return _per_order(p, k, chii_base)


@lru_cache(maxsize=128)
def moebius_weights(p: int, k: int) -> OrderWeights:
    """The Moebius transform up to order k.

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    return _per_order(p, k, moebius_base)


@lru_cache(maxsize=128)
def ksii_weights(p: int, k: int) -> OrderWeights:
    """k-SII: SII aggregated with the Bernoulli numbers, ``sum_j B_j sum_{|T'| = t + j} SII(T')``.

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    B = bernoulli_numbers(k)
    return aggregate(p, k, sii_base, lambda t, j: B[j])


@lru_cache(maxsize=128)
def fbii_weights(p: int, k: int) -> OrderWeights:
    """FBII: BII aggregated with ``(-1/2)^j`` (the uniform least-squares fit of order k).

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    return aggregate(p, k, bii_base, lambda t, j: Fraction(-1, 2) ** j)


@lru_cache(maxsize=128)
def stii_weights(p: int, k: int) -> OrderWeights:
    """STII: Moebius coefficients below order k, ``(k/p) / C(p-1, s)`` at order k.

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    p, k = _check(p, k)
    lower = tuple(tuple(moebius_base(p, t)) for t in range(1, k))
    return lower + (tuple(Fraction(k, p * comb(p - 1, s)) for s in range(p - k + 1)),)


@lru_cache(maxsize=128)
def fsii_weights(p: int, k: int) -> OrderWeights:
    """FSII of Tsai et al. (2023) through its Moebius representation (module docstring).

    Args:
        p: the number of players.
        k: the maximal order.

    Returns:
        ``(w_1, ..., w_k)``.
    """
    def lam(t: int, u: int) -> Fraction:
        if u == t:
            return Fraction(1)
        if u <= k:
            return Fraction(0)
        return (-1) ** (k - t) * Fraction(t, k + t) * comb(k, t) * Fraction(comb(u - 1, k), comb(u + k - 1, k + t))

    return from_moebius(p, k, lam)


__all__ = [
    "OrderWeights", "aggregate", "bernoulli_numbers", "bii_base", "bii_weights", "chii_base", "chii_weights",
    "fbii_weights", "from_moebius", "fsii_weights", "ksii_weights", "moebius_base", "moebius_weights",
    "sii_base", "sii_weights", "stii_weights", "to_moebius",
]
