"""Order-by-order (Walsh) parts of the Hamming kernel (docs/math.md §2-§5, §14).

The Hamming kernel is diagonal in the parity (Walsh) basis ``chi_U(z) = (-1)^{|U cap z|}``:

    K = sum_U kappa rho^U chi_U chi_U^T,   rho^U = prod_{j in U} rho_j,

with ``rho_j = tanh(1/(2 p l_j))`` and ``kappa = s prod_j (1 + b_j)/2 = s / prod_j (1 + rho_j)``
(:func:`walsh_coordinates`). Grouping the parities by their order k = |U| gives the *order-k part*

    K^(k)(z, z') = kappa e_k(rho_1 sigma_1, ..., rho_p sigma_p),   sigma_j = +1 if z_j = z'_j else -1,

(``e_k`` the elementary symmetric polynomial), so ``K = sum_k K^(k)``; a kernel that re-weights
the orders is built from these parts (:mod:`shapleig.gp.kernels.graded_walsh`). Every linear index ``I = B v`` (docs/math.md §14) sees a parity through
``(B chi_U)_T = [T subset U] c_|T|(|U|)`` (:func:`shapleig.gp.index_esp.parity_coefficients`), hence

    [B K^(k)(., z)]_T  = kappa c_|T|(k) rho^T chi_T(z) e_{k-|T|}(rho_j (-1)^{z_j} : j not in T),
    [B K^(k) B^T]_TT'  = kappa c_|T|(k) c_|T'|(k) rho^V e_{k-|V|}(rho_j : j not in V),   V = T cup T',

zero unless |T| <= k (columns) or |V| <= k (covariance).

Numerical route (float64). Orders are at most 3, so every ESP here has degree <= 3:

- kernel parts: with a shared rho, ``e_k(rho sigma) = rho^k Kraw_k(d)`` with d the Hamming
  distance and the Krawtchouk value Kraw_k(d) an exact integer; with per-player rho, the signed
  ESP is folded player by player (``E_k += x_j E_{k-1}``), whose absolute error is a few p eps
  times ``e_k(rho)`` -- the diagonal of the order-k part, its natural scale;
- index columns: the ESP of the other players by prefix and suffix folds (degree <= 2, no division);
  pairs need ``e_1`` of the others, a signed sum (absolute error eps sum_j rho_j);
- index covariances: ESPs of positive rho only (folded with V held out): no cancellation at all;
- no high-order signed ESP and no synthetic division of a full product is ever formed; the
  gradient contraction :func:`order_kernel_rho_vjp` divides out one factor from a degree <= 2
  ESP (absolute error eps e_k(rho), as above).
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

import numpy as np

from shapleig.gp.esp import _as_bool, kernel_factors
from shapleig.gp.index_esp import IndexOperator, parity_coefficients

MAX_ORDER = 3


# -- coordinates ----------------------------------------------------------------------------------

def walsh_coordinates(lengthscales: np.ndarray, outputscale: float) -> tuple[np.ndarray, float]:
    """``(rho float64[p], kappa)`` of the Hamming kernel with ``lengthscales`` and ``outputscale`` s.

    ``rho_j = tanh(1/(2 p l_j))`` (computed directly, no cancellation) and
    ``kappa = s prod_j (1 + b_j)/2 = s / prod_j (1 + rho_j)``, summed in log space.

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        ``(rho, kappa)``.

    Examples:
        >>> rho, kappa = walsh_coordinates(np.full(4, 1.0), 2.0)
        >>> bool(np.isclose(kappa * np.prod(1 + rho), 2.0))
        True
    """
    kf = kernel_factors(lengthscales, outputscale)
    return kf.rho.copy(), float(np.exp(np.log(kf.outputscale) + kf.log_half_one_plus_b.sum()))


def walsh_coordinates_derivatives(lengthscales: np.ndarray, outputscale: float) -> tuple[np.ndarray, np.ndarray]:
    """``(d rho_j / d l_j, d log kappa / d l_j)``, both float64[p] (``d log kappa / d s = 1 / s``).

    ``d rho/d l = -(1 - rho^2) / (2 p l^2)`` and ``d log kappa / d l_j = -(d rho_j / d l_j) / (1 + rho_j)``.

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        ``(d rho / d l, d log kappa / d l)``.
    """
    kf = kernel_factors(lengthscales, outputscale)
    p = kf.n_players
    drho = -(1.0 - kf.rho**2) / (2.0 * p * kf.lengthscales**2)
    return drho, -drho / (1.0 + kf.rho)


def _check_walsh(rho: np.ndarray, kappa: float) -> tuple[np.ndarray, float]:
    rho = np.asarray(rho, dtype=np.float64)
    if rho.ndim != 1 or rho.shape[0] < 1:
        raise ValueError(f"rho must be a non-empty float vector of shape (p,), got shape {rho.shape}")
    if not np.all(np.isfinite(rho)) or np.any(rho < 0) or np.any(rho > 1):
        raise ValueError(f"rho must lie in [0, 1], got {rho}")
    kappa = float(kappa)
    if not np.isfinite(kappa) or kappa <= 0:
        raise ValueError(f"kappa must be finite and positive, got {kappa}")
    return rho, kappa


def _check_order(order: int) -> int:
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)) \
            or not 0 <= int(order) <= MAX_ORDER:
        raise ValueError(f"order must be an integer in 0..{MAX_ORDER}, got {order!r}")
    return int(order)


def _is_shared(rho: np.ndarray) -> bool:
    return bool(np.all(rho == rho[0]))


# -- order-k kernel parts -------------------------------------------------------------------------

@lru_cache(maxsize=256)
def krawtchouk_table(n_players: int, order: int) -> np.ndarray:
    """``Kraw_k(d) = e_k(sigma)`` for sigma with d entries -1 and p - d entries +1, d = 0..p: float64[p+1].

    ``sum_i (-1)^i C(d, i) C(p - d, k - i)``, summed in exact integers (read-only).

    Args:
        n_players: the number of players p.
        order: the order k (0..3).

    Returns:
        float64[p+1], read-only.
    """
    p, k = int(n_players), _check_order(order)
    out = np.array([float(sum((-1) ** i * comb(d, i) * comb(p - d, k - i) for i in range(k + 1)))
                    for d in range(p + 1)])
    out.setflags(write=False)
    return out


def _mismatch(z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    """Integer Hamming distances float64[m1, m2] (exact in float64)."""
    a, b = z1.astype(np.float64), z2.astype(np.float64)
    return a @ (1.0 - b).T + (1.0 - a) @ b.T


def _signed_esp(z1: np.ndarray, z2: np.ndarray, rho: np.ndarray, kmax: int) -> np.ndarray:
    """``e_k(rho sigma(z, z'))`` for k = 0..kmax: float64[kmax+1, m1, m2].

    Exact integers times rho^k when rho is shared; else folded player by
    player).
    """
    m1, m2, p = z1.shape[0], z2.shape[0], rho.shape[0]
    E = np.zeros((kmax + 1, m1, m2))
    if _is_shared(rho):
        d = _mismatch(z1, z2).astype(np.int64)
        for k in range(kmax + 1):
            E[k] = rho[0] ** k * krawtchouk_table(p, k)[d]
        return E
    E[0] = 1.0
    for j in range(p):
        x = rho[j] * np.where(z1[:, j, None] == z2[None, :, j], 1.0, -1.0)
        for k in range(kmax, 0, -1):
            E[k] += x * E[k - 1]
    return E


def order_kernels(Z1: np.ndarray, Z2: np.ndarray, rho: np.ndarray, kappa: float,
                  orders: tuple[int, ...] = (1, 2, 3)) -> np.ndarray:
    """The order-k parts ``K^(k)(Z1, Z2) = kappa e_k(rho sigma)`` for each k in ``orders``.

    Args:
        Z1: bool[m1, p] coalitions (0/1 integers accepted).
        Z2: bool[m2, p] coalitions.
        rho: float64[p] in [0, 1] (:func:`walsh_coordinates`); equal entries take the exact
            Krawtchouk route.
        kappa: the Walsh scale (> 0).
        orders: orders in 0..3.

    Returns:
        float64[len(orders), m1, m2].

    Examples:
        >>> from shapleig.gp.esp import hamming_kernel
        >>> Z = np.array([[0, 0, 1], [1, 1, 0]], dtype=bool)
        >>> rho, kappa = walsh_coordinates(np.full(3, 0.5), 1.0)
        >>> full = order_kernels(Z, Z, rho, kappa, (0, 1, 2, 3)).sum(axis=0)  # p = 3: every order
        >>> bool(np.allclose(full, hamming_kernel(Z, Z, np.full(3, 0.5), 1.0)))
        True
    """
    rho, kappa = _check_walsh(rho, kappa)
    p = rho.shape[0]
    orders = tuple(_check_order(k) for k in orders)
    z1, z2 = _as_bool(Z1, p, "Z1"), _as_bool(Z2, p, "Z2")
    E = _signed_esp(z1, z2, rho, max(orders, default=0))
    return kappa * E[list(orders)]


def _prefix_suffix(x: np.ndarray, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """Truncated ESP tables of the prefixes and suffixes of ``x`` (float64[p, ...]).

    ``pre[j]`` holds e_0..e_kmax of x_0..x_{j-1}, ``suf[j]`` of x_j..x_{p-1}; shapes (p+1, kmax+1, ...).
    """
    p = x.shape[0]
    shape = (p + 1, kmax + 1) + x.shape[1:]
    pre, suf = np.zeros(shape), np.zeros(shape)
    pre[0, 0] = 1.0
    suf[p, 0] = 1.0
    for j in range(p):
        pre[j + 1] = pre[j]
        pre[j + 1, 1:] += x[j] * pre[j, :-1]
    for j in range(p - 1, -1, -1):
        suf[j] = suf[j + 1]
        suf[j, 1:] += x[j] * suf[j + 1, :-1]
    return pre, suf


def _leave_one_out_esp(x: np.ndarray, kmax: int) -> np.ndarray:
    """``e_a(x without x_j)`` for a = 0..kmax and every j: float64[p, kmax+1, ...] (prefix x suffix)."""
    p = x.shape[0]
    pre, suf = _prefix_suffix(x, kmax)
    out = np.zeros((p, kmax + 1) + x.shape[1:])
    for a in range(kmax + 1):
        for u in range(a + 1):
            out[:, a] += pre[:p, u] * suf[1:, a - u]
    return out


def order_kernel_rho_gradient(Z1: np.ndarray, Z2: np.ndarray, rho: np.ndarray, kappa: float,
                              order: int) -> np.ndarray:
    """``d K^(k)(Z1, Z2) / d rho_j`` at fixed kappa: float64[p, m1, m2] (dense; tests and small archives).

    ``kappa sigma_j e_{k-1}(rho sigma without j)``, the ESP of the other players by prefix and
    suffix folds. For a shared rho the derivative along it is the sum over j, ``(k / rho) K^(k)``.

    Args:
        Z1: ``bool[m1, p]``.
        Z2: ``bool[m2, p]``.
        rho: float64[p], the Walsh coordinates ``rho`` (:func:`walsh_coordinates`).
        kappa: the Walsh scale ``kappa``.
        order: the order k (0..3).

    Returns:
        float64[p, m1, m2].
    """
    rho, kappa = _check_walsh(rho, kappa)
    k = _check_order(order)
    p = rho.shape[0]
    z1, z2 = _as_bool(Z1, p, "Z1"), _as_bool(Z2, p, "Z2")
    if k == 0:
        return np.zeros((p, z1.shape[0], z2.shape[0]))
    sigma = np.where(z1.T[:, :, None] == z2.T[:, None, :], 1.0, -1.0)  # (p, m1, m2)
    loo = _leave_one_out_esp(rho[:, None, None] * sigma, k - 1)
    return kappa * sigma * loo[:, k - 1]


def _mismatch_contraction(G: np.ndarray, z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    """``sum_ab G_ab [z1_aj != z2_bj]`` for every player j: float64[p]."""
    a, b = z1.astype(np.float64), z2.astype(np.float64)
    return np.einsum("aj,aj->j", a, G @ (1.0 - b)) + np.einsum("aj,aj->j", 1.0 - a, G @ b)


def order_kernel_rho_vjp(W: np.ndarray, Z1: np.ndarray, Z2: np.ndarray, rho: np.ndarray, kappa: float,
                         order: int) -> np.ndarray:
    """``sum_ab W_ab d K^(k)_ab / d rho_j`` for every player j (kappa fixed): float64[p].

    What a likelihood gradient needs (W = 0.5 (alpha alpha^T - K^-1) for a marginal likelihood), in
    O(m1 m2 p) without the p x m1 x m2 tensor: with ``x = rho sigma`` and E_a = e_a(x),
    ``e_{k-1}(x without j) = sum_i (-x_j)^i E_{k-1-i}`` (degree <= 2), and
    ``sum_ab G_ab sigma_j = sum G - 2 sum_ab G_ab [z_aj != z'_bj]``.

    Args:
        W: float64[m1, m2] weights.
        Z1: ``bool[m1, p]``.
        Z2: ``bool[m2, p]``.
        rho: float64[p], the Walsh coordinates ``rho`` (:func:`walsh_coordinates`).
        kappa: the Walsh scale ``kappa``.
        order: the order k (0..3).

    Returns:
        float64[p].
    """
    rho, kappa = _check_walsh(rho, kappa)
    k = _check_order(order)
    p = rho.shape[0]
    z1, z2 = _as_bool(Z1, p, "Z1"), _as_bool(Z2, p, "Z2")
    W = np.asarray(W, dtype=np.float64)
    if W.shape != (z1.shape[0], z2.shape[0]):
        raise ValueError(f"W must have shape {(z1.shape[0], z2.shape[0])}, got {W.shape}")
    if k == 0:
        return np.zeros(p)
    E = _signed_esp(z1, z2, rho, k - 1)

    def signed(G: np.ndarray) -> np.ndarray:  # sum_ab G_ab sigma_j(ab), every j
        return G.sum() - 2.0 * _mismatch_contraction(G, z1, z2)

    # sigma_j e_{k-1}(x^-j) = sum_i (-rho_j)^i sigma_j^(i+1) E_{k-1-i};  sigma^(i+1) = sigma (i even), 1 (i odd)
    out = np.zeros(p)
    for i in range(k):
        G = W * E[k - 1 - i]
        out += (-rho) ** i * (signed(G) if i % 2 == 0 else G.sum())
    return kappa * out


# -- products with index operators ----------------------------------------------------------------

def _members(operator: IndexOperator) -> np.ndarray:
    """int64[d, k]: the players of each term, sorted, padded with -1."""
    out = np.full((operator.n_terms, operator.max_order), -1, dtype=np.int64)
    for row, T in enumerate(operator.terms):
        out[row, : len(T)] = T
    return out


def _as_operator(operator: IndexOperator | str, n_players: int) -> IndexOperator:
    if isinstance(operator, str):
        return IndexOperator(n_players, operator)
    if not isinstance(operator, IndexOperator):
        raise TypeError(f"operator must be an index name or an IndexOperator, got {type(operator).__name__}")
    if operator.n_players != n_players:
        raise ValueError(f"operator is for {operator.n_players} players, rho for {n_players}")
    return operator


def _esp_without(y: np.ndarray, members: np.ndarray, degree: int) -> np.ndarray:
    """``e_degree(y_j : j not in T)`` for the terms ``members`` (int[n, t], t >= 2) and every column of y.

    ``e_a(y without T) = sum_i (-1)^i h_i(y_T) e_{a-i}(y)`` (h the complete homogeneous polynomials of the
    t held-out values): degree <= 1 for orders <= 3 at t >= 2, a signed sum whose absolute
    error is a few eps sum_j rho_j.
    """
    E = _signed_column_esp(y, degree)  # (degree + 1, m)
    held = y[members]  # (n, t, m)
    h = np.zeros((degree + 1,) + (members.shape[0], y.shape[1]))
    h[0] = 1.0
    for col in range(members.shape[1]):  # h_i of the first col + 1 values: h_i += x h_{i-1}, in place upward
        x = held[:, col]
        for i in range(1, degree + 1):
            h[i] = h[i] + x * h[i - 1]
    return sum((-1) ** i * h[i] * E[degree - i][None, :] for i in range(degree + 1))


def _signed_column_esp(y: np.ndarray, degree: int) -> np.ndarray:
    """``e_0..e_degree`` of the columns of signed y (float64[p, m]), folded player by player."""
    E = np.zeros((degree + 1, y.shape[1]))
    E[0] = 1.0
    for j in range(y.shape[0]):
        E[1:] = E[1:] + y[j] * E[:-1]
    return E


def order_index_columns(Z: np.ndarray, rho: np.ndarray, kappa: float, order: int,
                        operator: IndexOperator | str = "SV") -> np.ndarray:
    """``B K^(k)(., z)`` for every row z of ``Z`` (bool[m, p]): float64[d, m].

    The prior covariance of the index with f(z) under the order-k part (the operator's own hold-out
    of the empty coalition is not applied: the caller subtracts it, as
    :func:`~shapleig.gp.kernels.graded_walsh.graded_index_columns` does).

    Term T of t players: ``kappa c_t(k) prod_{j in T} rho_j s_j e_{k-t}(rho_l s_l : l not in T)``,
    s_j = (-1)^{z_j}, zero when t > k. Singletons take the ESP of the others from prefix and suffix
    folds (O(p) per coalition); larger terms need degree k - t <= 1.

    Args:
        Z: ``bool[m, p]``.
        rho: float64[p], the Walsh coordinates ``rho`` (:func:`walsh_coordinates`).
        kappa: the Walsh scale ``kappa``.
        order: the order k (0..3).
        operator: the index operator, or an index name (``"SV"`` by default).

    Returns:
        float64[d, m].
    """
    rho, kappa = _check_walsh(rho, kappa)
    k = _check_order(order)
    p = rho.shape[0]
    operator = _as_operator(operator, p)
    z = _as_bool(Z, p)
    m = z.shape[0]
    c = parity_coefficients(operator.spec, p, operator.max_order, MAX_ORDER)  # orders <= 3: sizes u <= 3 only
    out = np.zeros((operator.n_terms, m))
    if k == 0 or k > p:
        return out
    members = _members(operator)
    sizes = (members >= 0).sum(axis=1)
    y = rho[:, None] * np.where(z.T, -1.0, 1.0)  # (p, m): rho_j s_j
    for t in range(1, min(k, operator.max_order) + 1):
        rows = np.flatnonzero(sizes == t)
        if not rows.size or c[t, k] == 0.0:
            continue
        if t == 1:
            rest = _leave_one_out_esp(y, k - 1)[:, k - 1][members[rows, 0]]
        else:
            rest = _esp_without(y, members[rows, :t], k - t)
        out[rows] = kappa * c[t, k] * np.prod(y[members[rows, :t]], axis=1) * rest
    return out


def _esp_outside(rho: np.ndarray, members: np.ndarray, kmax: int) -> np.ndarray:
    """``e_0..e_kmax`` of the non-negative ``rho`` outside each row's players: float64[n, kmax+1].

    ``members`` (int[n, c]) holds each row's players in ascending order, ``-1`` padding first (as
    ``np.sort`` leaves it). The players outside a row are the runs between its members; the ESP of
    every run ``rho[l:r]`` comes from one prefix fold per start ``l`` (O(p^2 kmax) for all runs at
    once, where folding every row over all p players cost O(n p kmax) with n ~ p^2 / 2 rows), and a
    row's ESP is the truncated product of its runs' ESPs: positive terms only, no cancellation.
    """
    p = rho.shape[0]
    starts = np.arange(p + 1)
    # column l holds rho from player l on (zero before it): its prefix folds are the runs rho[l:r]
    runs, _ = _prefix_suffix(np.where(np.arange(p)[:, None] >= starts[None, :], rho[:, None], 0.0), kmax)
    n = members.shape[0]
    bounds = np.concatenate([np.full((n, 1), -1), members, np.full((n, 1), p)], axis=1)
    out = np.zeros((n, kmax + 1))
    out[:, 0] = 1.0
    for a in range(bounds.shape[1] - 1):
        # the run between two consecutive bounds; padding (-1, -1) gives the empty run rho[0:0]
        run = runs[np.maximum(bounds[:, a + 1], 0), :, bounds[:, a] + 1]  # (n, kmax+1)
        prod = np.zeros_like(out)
        for m in range(kmax + 1):
            for u in range(m + 1):
                prod[:, m] += out[:, u] * run[:, m - u]
        out = prod
    return out


def order_index_covariance(rho: np.ndarray, kappa: float, order: int,
                           operator: IndexOperator | str = "SV") -> np.ndarray:
    """``B K^(k) B^T``: float64[d, d], the prior covariance of the index under the order-k part.

    ``kappa c_|T|(k) c_|T'|(k) rho^V e_{k-|V|}(rho outside V)`` for ``V = T cup T'`` with |V| <= k, else 0:
    every ESP is of non-negative rho (the runs between V's players, :func:`_esp_outside`), so nothing
    cancels. O(p^2 k) for the runs plus O(k^2) per pair of terms: about 0.5 s per order at p = 600 (SV).

    Args:
        rho: float64[p], the Walsh coordinates ``rho`` (:func:`walsh_coordinates`).
        kappa: the Walsh scale ``kappa``.
        order: the order k (0..3).
        operator: the index operator, or an index name (``"SV"`` by default).

    Returns:
        float64[d, d].
    """
    rho, kappa = _check_walsh(rho, kappa)
    k = _check_order(order)
    p = rho.shape[0]
    operator = _as_operator(operator, p)
    d = operator.n_terms
    out = np.zeros((d, d))
    if k == 0 or k > p:
        return out
    c = parity_coefficients(operator.spec, p, operator.max_order, MAX_ORDER)  # orders <= 3: sizes u <= 3 only
    members = _members(operator)
    sizes = (members >= 0).sum(axis=1)
    cu = c[sizes, k]  # zero for |T| > k: c_t(u) = 0 for u < t
    # pairs of terms with non-zero coefficients (|T|, |T'| <= k) whose union V has at most k players
    live = np.flatnonzero(cu != 0.0)
    if not live.size:
        return out
    iu, ju = np.triu_indices(live.size)
    iu, ju = live[iu], live[ju]
    both = np.sort(np.concatenate([members[iu], members[ju]], axis=1), axis=1)
    first = np.concatenate([np.ones((both.shape[0], 1), dtype=bool), both[:, 1:] != both[:, :-1]], axis=1)
    distinct = first & (both >= 0)
    nv = distinct.sum(axis=1)
    keep = nv <= k
    iu, ju, nv = iu[keep], ju[keep], nv[keep]
    V = np.sort(np.where(distinct[keep], both[keep], -1), axis=1)
    held = V >= 0
    # rho^V e_{k-|V|}(rho outside V): the ESP of the non-negative rho outside V (no cancellation), O(k^2)
    # per pair from the runs' table, so equal V are not worth merging first (a sort of ~d^2/2 rows)
    E = _esp_outside(rho, V, k)
    weight = np.prod(np.where(held, rho[np.maximum(V, 0)], 1.0), axis=1) * E[np.arange(V.shape[0]), k - nv]
    vals = kappa * cu[iu] * cu[ju] * weight
    out[iu, ju] = vals
    out[ju, iu] = vals
    return out


__all__ = [
    "MAX_ORDER", "krawtchouk_table", "order_index_columns", "order_index_covariance", "order_kernel_rho_gradient",
    "order_kernel_rho_vjp", "order_kernels", "walsh_coordinates", "walsh_coordinates_derivatives",
]
