"""Game-theoretic indices beyond the Shapley value: definitions, terms, exact values (docs/math.md §14).

Every supported index is linear in the game. Up to order 2 each term T (a player or a pair) is a
*size-weighted discrete derivative*

    I(T) = sum_{S subset of N minus T} w_{|T|}(|S|) Delta_T v(S),
    Delta_{i} v(S) = v(S+i) - v(S),   Delta_{ij} v(S) = v(S+ij) - v(S+i) - v(S+j) + v(S),

with one weight vector per order (:func:`derivative_weights`), following shapiq 1.8.0's
definitions at ``max_order=2``:

- ``"SV"`` Shapley value, ``"BV"`` Banzhaf value (order 1 only);
- ``"SII"`` Shapley interaction index (order 1 = SV);
- ``"k-SII"`` (order 1 = SV + B_1 sum_j SII_ij, the Bernoulli aggregation with B_1 = -1/2);
- ``"STII"`` Shapley-Taylor (order 1 = the Moebius coefficient v(i) - v(empty));
- ``"FSII"`` Faithful Shapley (order 1 and 2 from Tsai et al.'s closed form).

The aggregated order-1 terms of k-SII and FSII are again size-weighted derivatives of one player
(docs/math.md §14.1), so every fast product of :mod:`shapleig.index_esp` needs only the two weight
vectors. The dense operators here (:func:`dense_index_operator`) are built from the *definitions*
(Bernoulli aggregation, weighted least squares for FSII), independently of those weights, for tests.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from itertools import combinations
from math import comb, factorial

import numpy as np

from shapleig.errors import GameError

INDICES = ("SV", "BV", "k-SII", "SII", "STII", "FSII")
ORDER_ONE = ("SV", "BV")
# indices whose terms (orders 1..max_order) sum to v(N) - v(empty) for every game
EFFICIENT_INDICES = ("SV", "k-SII", "STII", "FSII")
MAX_DENSE_PLAYERS = 12
MAX_EXACT_PLAYERS = 20


def check_index(index: str, max_order: int | None = None) -> tuple[str, int]:
    """Canonical ``(index, max_order)``; ValueError for an unknown index or unsupported order.

    SV and BV have order 1; the interaction indices are supported at order 2 (the default).
    """
    if not isinstance(index, str) or index not in INDICES:
        raise ValueError(f"unknown index {index!r}; choose one of {INDICES}")
    default = 1 if index in ORDER_ONE else 2
    order = default if max_order is None else max_order
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or int(order) != default:
        raise ValueError(f"index {index!r} is supported with max_order={default} only, got max_order={max_order!r}")
    return index, int(order)


def default_hold_out_empty(index: str) -> bool:
    """Whether ShaplEIG holds v(empty) out of the GP by default for ``index`` (docs/math.md §14.5).

    On for the Banzhaf value, whose terms weigh v(empty) by 2^-(p-1) only: a game with a jump at the
    empty coalition (data valuation, feature selection) otherwise drags the fitted lengthscale down.
    """
    return check_index(index)[0] == "BV"


def index_terms(n_players: int, index: str = "SV", max_order: int | None = None) -> list[tuple[int, ...]]:
    """The terms of ``index``: the p singletons, then (order 2) the pairs in lexicographic order."""
    index, order = check_index(index, max_order)
    p = int(n_players)
    terms: list[tuple[int, ...]] = [(i,) for i in range(p)]
    if order >= 2:
        terms += list(combinations(range(p), 2))
    return terms


def _aggregate(w1: list[Fraction], w2: list[Fraction], coef: Fraction, p: int) -> list[Fraction]:
    """Order-1 weights of ``I(i) + coef * sum_{j != i} I2(ij)`` (docs/math.md §14.1).

    Re-indexing the pair sum by R = S or S + j gives the weight of Delta_i v(R), |R| = k:
    ``w1(k) + coef * (k w2(k-1) - (p-1-k) w2(k))`` (w2 is zero outside 0..p-2).
    """
    def w2_at(k: int) -> Fraction:
        return w2[k] if 0 <= k <= p - 2 else Fraction(0)

    return [w1[k] + coef * (k * w2_at(k - 1) - (p - 1 - k) * w2_at(k)) for k in range(p)]


@lru_cache(maxsize=256)
def _exact_weights(index: str, p: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...] | None]:
    sv = [Fraction(factorial(k) * factorial(p - 1 - k), factorial(p)) for k in range(p)]
    if index == "SV":
        return tuple(sv), None
    if index == "BV":
        return tuple(Fraction(1, 2 ** (p - 1)) for _ in range(p)), None
    if p < 2:
        raise ValueError(f"order-2 indices need at least 2 players, got p = {p}")
    sii2 = [Fraction(factorial(k) * factorial(p - 2 - k), factorial(p - 1)) for k in range(p - 1)]
    if index == "SII":
        return tuple(sv), tuple(sii2)
    if index == "k-SII":
        return tuple(_aggregate(sv, sii2, Fraction(-1, 2), p)), tuple(sii2)
    if index == "STII":
        # top order k = 2: (k/n) / C(n-1, |S|); order 1 < k: the Moebius coefficient v(i) - v(empty)
        w2 = [Fraction(2, p * comb(p - 1, k)) for k in range(p - 1)]
        return tuple([Fraction(1)] + [Fraction(0)] * (p - 1)), tuple(w2)
    if index == "FSII":
        # Tsai et al. (2023), l = 2: a(T) = (2l-1)!/((l-1)!)^2 sum (n-|S|-1)!(|S|+l-1)!/(n+l-1)! Delta_T v(S);
        # FSII(pair) = a(pair), FSII(i) = a(i) - |T|/(l+|T|) C(l,|T|) sum_j a(ij) = a(i) - (2/3) sum_j a(ij).
        # The derivative weights of a(i) carry the constant 2 where the pairs' carry 6 (checked against the
        # least-squares definition, dense_index_operator, and shapiq's ExactComputer).
        a2 = [Fraction(6 * factorial(p - k - 1) * factorial(k + 1), factorial(p + 1)) for k in range(p - 1)]
        a1 = [Fraction(2 * factorial(p - k - 1) * factorial(k + 1), factorial(p + 1)) for k in range(p)]
        return tuple(_aggregate(a1, a2, Fraction(-2, 3), p)), tuple(a2)
    raise ValueError(f"unknown index {index!r}")


def derivative_weights(index: str, n_players: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(w1 float64[p], w2 float64[p-1] or None)``: the weights of Delta_i v(S) and Delta_ij v(S) by |S|."""
    index, _ = check_index(index)
    w1, w2 = _exact_weights(index, int(n_players))
    return np.array([float(w) for w in w1]), (None if w2 is None else np.array([float(w) for w in w2]))


def exact_derivative_weights(index: str, n_players: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...] | None]:
    """:func:`derivative_weights` as exact fractions (for the cancellation-free sums of :mod:`shapleig.index_esp`)."""
    index, _ = check_index(index)
    return _exact_weights(index, int(n_players))


# -- exact values from a full table ---------------------------------------------------------------

def _sizes(p: int) -> np.ndarray:
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = np.zeros(1 << p, dtype=np.int64)
    for j in range(p):
        sizes += (codes >> j) & 1
    return sizes


def exact_index_values(values: np.ndarray, index: str = "SV", max_order: int | None = None) -> np.ndarray:
    """Exact index values ``float64[d]`` (aligned with :func:`index_terms`) from bit-order values float64[2^p].

    O(d 2^p) by the size-weighted derivative form; p <= 20.
    """
    index, order = check_index(index, max_order)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    p = int(np.log2(v.shape[0])) if v.shape[0] else 0
    if v.shape[0] != (1 << p) or p < 1:
        raise GameError(f"bit-order values need length 2^p, got {v.shape[0]}")
    if p > MAX_EXACT_PLAYERS:
        raise GameError(f"exact index values enumerate 2^p coalitions; p = {p} > {MAX_EXACT_PLAYERS}")
    w1, w2 = derivative_weights(index, p)
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = _sizes(p)
    out = []
    for i in range(p):
        S = codes[((codes >> i) & 1) == 0]
        out.append(np.dot(w1[sizes[S]], v[S | (1 << i)] - v[S]))
    if order == 2:
        for i, j in combinations(range(p), 2):
            S = codes[(((codes >> i) & 1) == 0) & (((codes >> j) & 1) == 0)]
            bi, bj = 1 << i, 1 << j
            out.append(np.dot(w2[sizes[S]], v[S | bi | bj] - v[S | bi] - v[S | bj] + v[S]))
    return np.asarray(out)


# -- dense operators from the definitions (tests and references, p <= 12) -------------------------

def _all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p, dtype=np.int64)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def _derivative_rows(p: int, terms: list[tuple[int, ...]], weight) -> np.ndarray:
    """Rows of ``sum_{S cap T = empty} weight(|T|, |S|) Delta_T v(S)`` over bit-order columns."""
    Z = _all_sets(p)
    sizes = Z.sum(axis=1)
    out = np.zeros((len(terms), 1 << p))
    for row, T in enumerate(terms):
        tmask = sum(1 << t for t in T)
        for code in range(1 << p):
            if code & tmask:
                continue
            w = weight(len(T), int(sizes[code]))
            if w == 0:
                continue
            for sub in range(1 << len(T)):
                L = sum(1 << T[q] for q in range(len(T)) if (sub >> q) & 1)
                out[row, code | L] += w * (-1) ** (len(T) - sub.bit_count())
    return out


def _fsii_dense(p: int) -> np.ndarray:
    """FSII of order 2 as the faithful least-squares fit: minimise sum_S mu(S) (v(S) - sum_{T in S} e(T))^2
    over e(empty), e(i), e(ij), with mu(S) = (p-1)/(C(p,|S|)|S|(p-|S|)) and the fit exact at the
    empty and grand coalitions (constraints, solved by the KKT system)."""
    Z = _all_sets(p)
    terms = [()] + index_terms(p, "FSII", 2)
    X = np.array([[all(z[t] for t in T) for T in terms] for z in Z], dtype=np.float64)
    sizes = Z.sum(axis=1)
    inner = (sizes > 0) & (sizes < p)
    mu = np.zeros(1 << p)
    mu[inner] = (p - 1) / (np.array([comb(p, int(s)) for s in sizes[inner]]) * sizes[inner] * (p - sizes[inner]))
    G = X[inner].T @ (mu[inner, None] * X[inner])
    C = X[~inner]  # rows of the empty and grand coalitions
    n, c = len(terms), C.shape[0]
    KKT = np.block([[2 * G, C.T], [C, np.zeros((c, c))]])
    rhs_inner = np.zeros((n + c, 1 << p))
    rhs_inner[:n, inner] = 2 * (X[inner] * mu[inner, None]).T
    rhs_inner[n:, np.flatnonzero(~inner)] = np.eye(c)
    sol = np.linalg.solve(KKT, rhs_inner)
    return sol[1:n]  # drop the empty term (order 0) and the multipliers


# complexity over budget: the reference operator spells out each index's definition
def dense_index_operator(n_players: int, index: str = "SV", max_order: int | None = None) -> np.ndarray:  # noqa: C901
    """Dense operator ``B`` (float64[d, 2^p], bit-order columns) with ``I = B v``, from the definitions.

    For tests (p <= 12). k-SII is the Bernoulli aggregation of SII rows, FSII the weighted
    least-squares fit, STII's order-1 rows the Moebius coefficients; none uses :func:`derivative_weights`.
    """
    index, _ = check_index(index, max_order)
    p = int(n_players)
    if p > MAX_DENSE_PLAYERS:
        raise GameError(f"dense index operators are for p <= {MAX_DENSE_PLAYERS}, got {p}")
    singles = index_terms(p, "SV")
    pairs = list(combinations(range(p), 2))

    def sv_w(k: int) -> float:
        return 1.0 / (p * comb(p - 1, k))

    if index == "SV":
        return _derivative_rows(p, singles, lambda t, k: sv_w(k))
    if index == "BV":
        return _derivative_rows(p, singles, lambda t, k: 0.5 ** (p - 1))
    if index == "FSII":
        return _fsii_dense(p)
    sii2 = _derivative_rows(p, pairs, lambda t, k: 1.0 / ((p - 1) * comb(p - 2, k)))
    sv = _derivative_rows(p, singles, lambda t, k: sv_w(k))
    if index == "SII":
        return np.vstack([sv, sii2])
    if index == "k-SII":
        # k-SII(S) = sum_{T >= S, |T| <= 2} B_{|T|-|S|} SII(T), Bernoulli B_0 = 1, B_1 = -1/2
        agg = sv.copy()
        for row, (i, j) in enumerate(pairs):
            agg[i] -= 0.5 * sii2[row]
            agg[j] -= 0.5 * sii2[row]
        return np.vstack([agg, sii2])
    if index == "STII":
        moebius = np.zeros((p, 1 << p))
        for i in range(p):
            moebius[i, 1 << i] += 1.0
            moebius[i, 0] -= 1.0
        top = _derivative_rows(p, pairs, lambda t, k: 2.0 / (p * comb(p - 1, k)))
        return np.vstack([moebius, top])
    raise ValueError(f"unknown index {index!r}")
