"""Hamming-kernel products of any size-weighted derivative index at any order k (docs/math.md §14.3).

A term T of t <= k players is ``I(T) = sum_{S subset N minus T} w_t(|S|) Delta_T v(S)``
(:mod:`shapleig.games.indices`). With the product form of the Hamming kernel (docs/math.md §3,
alpha-free factors gamma_r for r not in S and delta_r for r in S):

- **columns** ``[B k(., z)]_T = s prod_{r in T} (delta_r - gamma_r) sum_m w_t(m) e_m^(-T)``, with
  ``e^(-T)`` the coefficients of ``prod_{r not in T} (gamma_r + delta_r x)``: the k players are held
  out of the product. :func:`generic_kernel_columns` walks the terms depth first in lexicographic
  order, carrying the product over the players before the last member of T with T held out; each
  term costs one contraction with the weight-contracted suffix tables
  ``h_r[a] = sum_m Q_r[m] w_t(a + m)`` and each step one multiplication by a linear factor:
  O(d p) per coalition for the d terms of orders 1..k, vectorised over the coalitions. With a shared
  lengthscale an entry depends only on t, |z| and |T cap z|, so ``(k+1)(k+2)/2`` representative terms
  on p + 1 representative coalitions give every column.
- **covariance** by the parity route for any weights (*own route*): ``(B chi_U)_T = [T subset U]
  c_t(|U|)`` with ``c_t(u) = (-2)^t sum_m w_t(m) K_m(u - t)`` (Krawtchouk values, exact rational sums:
  :func:`parity_coefficients`), hence

      (B K B^T)_TT' = kappa rho^V sum_j e_j(rho outside V) c_|T|(|V| + j) c_|T'|(|V| + j),   V = T cup T',

  ESPs of positive rho only (no cancellation); with a shared rho the ESP is ``C(p - |V|, j) rho^j``
  and an entry depends on (|T|, |T'|, |V|) alone.

Nothing here enumerates the 2^p coalitions.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, lcm

import numpy as np

from shapleig.games.index_dense import all_terms
from shapleig.games.indices import Index, check_index, get_index
from shapleig.gp.esp import _as_bool, _positive_esp_rows, is_shared, kernel_factors

# The generic column route keeps no log-scales: with the factors <= 1 and the weights of the
# supported indices, every partial sum lies between ~2^-p and ~2^p, safe in float64 for p below this.
MAX_GENERIC_PLAYERS = 256
# pairs of terms whose union V is formed at once in the ARD covariance (bounds the memory to ~ this x 2k ints)
_PAIR_CHUNK = 1 << 18
# up to this many players a union of terms is one int64 bit mask
_MASK_PLAYERS = 62


def _order_of(index: str | Index, max_order: int | None) -> tuple[Index, int]:
    spec = get_index(index)
    return spec, check_index(spec, max_order)[1]


@lru_cache(maxsize=128)
def padded_weights(index: Index, p: int, k: int) -> np.ndarray:
    """``W[t - 1, m] = w_t(m)`` for t = 1..k, zero-padded to length p + 2 (float64[k, p+2], read-only).

    Args:
        index: the record.
        p: the number of players.
        k: the maximal order.

    Returns:
        float64[k, p+2].
    """
    W = np.zeros((k, p + 2))
    for t, w in enumerate(index.exact_weights(p, k), start=1):
        W[t - 1, : p - t + 1] = [float(x) for x in w]
    W.setflags(write=False)
    return W


def _factors(z: np.ndarray, kf) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b = kf.b[None, :]
    gamma = np.where(z, b, 1.0)  # alpha-free factor for S_r = 0
    delta = np.where(z, 1.0, b)  # ... for S_r = 1
    diff = np.where(z, 1.0, -1.0) * kf.one_minus_b[None, :]  # delta - gamma
    return gamma, delta, diff


def _times_factor(A: np.ndarray, gamma: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``A(x) (gamma + delta x)`` for a polynomial per coalition (float64[m, p+2]); a new array."""
    out = np.empty_like(A)
    out[:, 1:] = gamma[:, None] * A[:, 1:] + delta[:, None] * A[:, :-1]
    out[:, 0] = gamma * A[:, 0]
    return out


def _suffix_contractions(gamma: np.ndarray, delta: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``h[r][:, a] = sum_m Q_r[m] w[a + m]``, Q_r = prod_{q >= r} (gamma_q + delta_q x): float64[p+1, m, p+2]."""
    m, p = gamma.shape
    h = np.zeros((p + 1, m, p + 2))
    h[p] = w[None, :]
    for r in range(p - 1, -1, -1):
        h[r, :, :-1] = gamma[:, r, None] * h[r + 1, :, :-1] + delta[:, r, None] * h[r + 1, :, 1:]
    return h


def _columns_chunk(z: np.ndarray, kf, W: np.ndarray, row_of: dict) -> np.ndarray:
    """Every term's column for the coalitions ``z`` (depth-first over the terms, module docstring)."""
    m, p = z.shape
    k = W.shape[0]
    gamma, delta, diff = _factors(z, kf)
    H = [_suffix_contractions(gamma, delta, W[t]) for t in range(k)]
    out = np.empty((len(row_of), m))
    start = np.zeros((m, p + 2))
    start[:, 0] = 1.0
    stack = [((), start, np.ones(m))]  # (T, prod_{r <= last, r not in T} factor_r, prod_{r in T} diff_r)
    while stack:
        T, A, sign = stack.pop()
        first = T[-1] + 1 if T else 0
        if T:
            out[row_of[T]] = sign * np.einsum("ma,ma->m", A, H[len(T) - 1][first])
        if len(T) == k:
            continue
        children = []
        for j in range(first, p):
            children.append((T + (j,), A, sign * diff[:, j]))
            if j + 1 < p:
                A = _times_factor(A, gamma[:, j], delta[:, j])
        stack.extend(reversed(children))
    return kf.outputscale * out


def _term_columns(z: np.ndarray, kf, W: np.ndarray, terms: list[tuple[int, ...]]) -> np.ndarray:
    """The columns of a few given terms, each by its own product over the other players (O(p) factors)."""
    m, p = z.shape
    gamma, delta, diff = _factors(z, kf)
    out = np.empty((len(terms), m))
    for row, T in enumerate(terms):
        A = np.zeros((m, p + 2))
        A[:, 0] = 1.0
        sign = np.ones(m)
        for r in range(p):
            if r in T:
                sign = sign * diff[:, r]
            else:
                A = _times_factor(A, gamma[:, r], delta[:, r])
        out[row] = sign * (A @ W[len(T) - 1])
    return kf.outputscale * out


def generic_kernel_columns(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float,
                           index: str | Index, max_order: int | None = None) -> np.ndarray:
    """``B k(., z)`` of a size-weighted derivative index of order k: float64[d, m] (docs/math.md §14.3).

    Entry T is ``s prod_{r in T} (delta_r - gamma_r) sum_m w_|T|(m) e_m^(-T)`` with ``e^(-T)`` the
    coefficients of ``prod_{r not in T} (gamma_r + delta_r x)`` (module docstring): O(d p) per
    coalition, or with a shared lengthscale O(d) per coalition from ``(k+1)(k+2)/2`` representative
    terms.

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        index: an index name or record with exact weights.
        max_order: the maximal order k; None: the index's own.

    Returns:
        float64[d, m], rows in the order of :func:`~shapleig.games.indices.index_terms`.
    """
    spec, k = _order_of(index, max_order)
    kf = kernel_factors(lengthscales, outputscale)
    p = kf.n_players
    z = _as_bool(Z, p)
    W = padded_weights(spec, p, k)
    terms = all_terms(p, k)
    if is_shared(lengthscales) and z.shape[0] > p + 1:
        return _shared_columns(z, kf, W, terms)
    row_of = {T: row for row, T in enumerate(terms)}
    out = np.empty((len(terms), z.shape[0]))
    size = max(1, (1 << 22) // max(1, k * (p + 2) * (p + 1)))
    for start in range(0, z.shape[0], size):
        out[:, start : start + size] = _columns_chunk(z[start : start + size], kf, W, row_of)
    return out


def _shared_columns(z: np.ndarray, kf, W: np.ndarray, terms: list[tuple[int, ...]]) -> np.ndarray:
    """Columns from representatives: term (t, j) = the first j and the last t - j players, coalition m = the first m."""
    p, k = kf.n_players, W.shape[0]
    reps = np.arange(p)[None, :] < np.arange(p + 1)[:, None]
    kinds = [(t, j) for t in range(1, k + 1) for j in range(t + 1)]
    rep_terms = [tuple(range(j)) + tuple(range(p - (t - j), p)) for t, j in kinds]
    table = _term_columns(reps, kf, W, rep_terms)  # (kinds, p + 1): valid where j <= m <= p - (t - j)
    sizes = z.sum(axis=1)
    out = np.empty((len(terms), z.shape[0]))
    zi = z.astype(np.int16)
    row = 0
    for t in range(1, k + 1):
        members = np.array([T for T in terms if len(T) == t])  # (n_t, t), lexicographic
        overlap = zi[:, members].sum(axis=2).T  # (n_t, m): |T cap z|
        for j in range(t + 1):
            col = table[kinds.index((t, j)), np.clip(sizes, j, p - (t - j))]
            block = out[row : row + members.shape[0]]
            np.copyto(block, col[None, :], where=overlap == j)
        row += members.shape[0]
    return out


def parity_coefficients(index: str | Index, n_players: int, max_order: int | None = None,
                        max_size: int | None = None) -> np.ndarray:
    """``c[t, u] = (-2)^t sum_{S subset N minus T} w_t(|S|) (-1)^{|S cap U|}`` for |T| = t, T in U, |U| = u.

    ``(B chi_U)_T = [T subset U] c_|T|(|U|)`` for the parity function chi_U (docs/math.md §14.3).
    Summed in exact rational arithmetic: the alternating sums cancel (for Banzhaf to exactly zero),
    which floats would not resolve. All sizes u = 0..p cost O(p^3) big-integer products (20 s at
    p = 400); the graded kernel's parts need u <= 3 only, O(p) each (``max_size``).

    Args:
        index: an index name or record.
        n_players: the number of players p.
        max_order: the maximal order k; None: the index's own.
        max_size: compute u = 0..max_size only (None: every u up to p).

    Returns:
        float64[k+1, m+1] (read-only), m = p or ``min(max_size, p)``: row t for the terms of t players
        (row 0 and u < t are zero).
    """
    spec, k = _order_of(index, max_order)
    p = int(n_players)
    return _parity_coefficients(spec, p, k, p if max_size is None else min(int(max_size), p))


@lru_cache(maxsize=128)
def _parity_coefficients(index: Index, p: int, k: int, max_size: int) -> np.ndarray:
    c = np.zeros((k + 1, max_size + 1))
    for t, w in enumerate(index.exact_weights(p, k), start=1):
        # integer numerators over a common denominator: each g is one exact integer sum
        den = lcm(*(x.denominator for x in w))
        num = [x.numerator * (den // x.denominator) for x in w]
        for u in range(t, max_size + 1):
            a, b = u - t, p - u
            # Krawtchouk values: coefficients of (1 - x)^a (1 + x)^b, exact integers
            kraw = [0] * (a + b + 1)
            for i in range(a + 1):
                ci = (-1) ** i * comb(a, i)
                for l in range(b + 1):
                    kraw[i + l] += ci * comb(b, l)
            c[t, u] = float((-2) ** t * Fraction(sum(n * q for n, q in zip(num, kraw)), den))
    c.setflags(write=False)
    return c


def _pair_orders(k: int) -> dict[tuple[int, int], int]:
    return {pair: i for i, pair in enumerate((t1, t2) for t1 in range(1, k + 1) for t2 in range(t1, k + 1))}


def generic_prior_covariance(lengthscales: np.ndarray, outputscale: float, index: str | Index,
                             max_order: int | None = None) -> np.ndarray:
    """``B K B^T`` for a size-weighted derivative index of order k by the parity route (docs/math.md §14.3).

    ``M_TT' = kappa rho^V sum_j e_j(rho outside V) c_|T|(|V|+j) c_|T'|(|V|+j)``, ``V = T cup T'``,
    ``kappa = s prod (1+b)/2``. A shared lengthscale needs one value per (|T|, |T'|, |V|); per-player
    lengthscales one positive ESP per distinct V (|V| <= 2k).

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        index: an index name or record with exact weights.
        max_order: the maximal order k; None: the index's own.

    Returns:
        float64[d, d].
    """
    spec, k = _order_of(index, max_order)
    kf = kernel_factors(lengthscales, outputscale)
    p = kf.n_players
    c = parity_coefficients(spec, p, k)
    terms = all_terms(p, k)
    kappa = np.exp(np.log(kf.outputscale) + kf.log_half_one_plus_b.sum())
    if is_shared(lengthscales):
        M = _shared_covariance(terms, kf.rho[0], p, c)
    else:
        M = _ard_covariance(terms, kf.rho, c)
    return kappa * M


def _shared_covariance(terms: list[tuple[int, ...]], rho: float, p: int, c: np.ndarray) -> np.ndarray:
    k = c.shape[0] - 1
    ind = np.zeros((len(terms), p))
    for row, T in enumerate(terms):
        ind[row, list(T)] = 1.0
    orders = ind.sum(axis=1).astype(np.int64)
    union = orders[:, None] + orders[None, :] - np.rint(ind @ ind.T).astype(np.int64)
    # table[t1, t2, v] = rho^v sum_j C(p - v, j) rho^j c_t1(v + j) c_t2(v + j)
    table = np.zeros((k + 1, k + 1, 2 * k + 1))
    log_rho = np.log(rho)
    for v in range(1, min(2 * k, p) + 1):
        j = np.arange(p - v + 1)
        e = np.array([float(comb(p - v, int(i))) for i in j]) * np.exp((v + j) * log_rho)
        table[:, :, v] = np.einsum("j,aj,bj->ab", e, c[:, v:], c[:, v:])
    table = 0.5 * (table + table.transpose(1, 0, 2))  # exactly symmetric in (t1, t2): M = M^T bit for bit
    return table[orders[:, None], orders[None, :], union]


def _union_members(members: np.ndarray, iu: np.ndarray, ju: np.ndarray) -> np.ndarray:
    """The members of ``T_iu`` and ``T_ju`` per pair, sorted (int64, -1 padding; a shared player twice)."""
    return np.sort(np.concatenate([members[iu], members[ju]], axis=1), axis=1)


def _ard_covariance(terms: list[tuple[int, ...]], rho: np.ndarray, c: np.ndarray) -> np.ndarray:
    p, k, d = rho.shape[0], c.shape[0] - 1, len(terms)
    members = np.full((d, k), -1, dtype=np.int64)
    for row, T in enumerate(terms):
        members[row, : len(T)] = T
    orders = (members >= 0).sum(axis=1)
    combo = _pair_orders(k)
    combo_of = np.zeros((k + 1, k + 1), dtype=np.int64)
    for (t1, t2), i in combo.items():
        combo_of[t1, t2] = combo_of[t2, t1] = i
    # coef[v, combo, j] = c_t1(v + j) c_t2(v + j): the ESP degrees j = 0..p - v
    coef = np.zeros((2 * k + 1, len(combo), p + 1))
    for v in range(1, min(2 * k, p) + 1):
        for (t1, t2), i in combo.items():
            coef[v, i, : p - v + 1] = c[t1, v:] * c[t2, v:]
    iu_all, ju_all = np.triu_indices(d)
    out = np.empty((d, d))
    log_rho = np.log(rho)
    for start in range(0, iu_all.size, _PAIR_CHUNK):
        iu, ju = iu_all[start : start + _PAIR_CHUNK], ju_all[start : start + _PAIR_CHUNK]
        inV, inv = _unions(members, iu, ju, p)
        E = _positive_esp_rows(np.where(inV, 0.0, rho[None, :]), p)  # ESP of rho outside V
        rho_V = np.exp(np.where(inV, log_rho[None, :], 0.0).sum(axis=1))
        usize = inV.sum(axis=1)
        vals = np.zeros((inV.shape[0], len(combo)))
        for v in np.unique(usize):
            grp = usize == v
            vals[grp] = rho_V[grp, None] * (E[grp] @ coef[v].T)
        M = vals[inv, combo_of[orders[iu], orders[ju]]]
        out[iu, ju] = M
        out[ju, iu] = M
    return out


def _unions(members: np.ndarray, iu: np.ndarray, ju: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct unions ``V = T_iu cup T_ju`` as bool[nV, p] and, per pair, the row of its V.

    Up to 62 players a union is one int64 bit mask (a fast unique); beyond, the sorted member lists.
    """
    if p <= _MASK_PLAYERS:
        bits = np.where(members >= 0, np.left_shift(np.int64(1), np.maximum(members, 0)), 0).sum(axis=1)
        uniq, inv = np.unique(bits[iu] | bits[ju], return_inverse=True)
        inV = ((uniq[:, None] >> np.arange(p, dtype=np.int64)) & 1).astype(bool)
        return inV, inv.reshape(-1)
    V = _union_members(members, iu, ju)  # a player in both terms appears twice: the same V below
    uniq, inv = np.unique(V, axis=0, return_inverse=True)
    inV = np.zeros((uniq.shape[0], p), dtype=bool)
    for col in range(uniq.shape[1]):
        hit = uniq[:, col] >= 0
        inV[np.flatnonzero(hit), uniq[hit, col]] = True
    return inV, inv.reshape(-1)


__all__ = ["MAX_GENERIC_PLAYERS", "generic_kernel_columns", "generic_prior_covariance", "padded_weights",
           "parity_coefficients"]
