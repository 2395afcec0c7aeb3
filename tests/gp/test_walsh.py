"""The order-k (Walsh) parts of the Hamming kernel and the graded kernel against their definitions.

References are dense and independent of :mod:`shapleig.gp.walsh`: the parity matrix
``H[S, U] = (-1)^{|S cap U|}`` over all 2^p coalitions, prior variances ``kappa g_|U| rho^U`` per parity,
``K = H diag(lambda) H^T`` (docs/math.md §3), and the index operators of
:func:`shapleig.games.indices.dense_index_operator` built from the indices' definitions.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest

from shapleig.games.indices import INDICES, dense_index_operator
from shapleig.gp.esp import hamming_kernel
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels import size_kernel_matrix
from shapleig.gp.kernels.graded_walsh import (
    graded_diagonal,
    graded_index_columns,
    graded_index_covariance,
    graded_kernel,
    graded_kernel_vjp,
)
from shapleig.gp.walsh import (
    krawtchouk_table,
    order_index_columns,
    order_index_covariance,
    order_kernel_rho_gradient,
    order_kernel_rho_vjp,
    order_kernels,
    walsh_coordinates,
    walsh_coordinates_derivatives,
)

RTOL = 1e-10


def all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def parity_matrix(p: int) -> np.ndarray:
    Z = all_sets(p).astype(np.int64)
    return np.where((Z @ Z.T) % 2 == 1, -1.0, 1.0)


def hyper(p: int, shared: bool, seed: int) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    ls = np.full(p, rng.uniform(0.1, 2.0)) if shared else rng.uniform(0.05, 3.0, p)
    return ls, float(rng.uniform(0.5, 2.0))


def parity_variances(p: int, rho: np.ndarray, kappa: float, g=None, g_tail: float = 1.0) -> np.ndarray:
    """``kappa g_|U| rho^U`` for every parity U (bit order); g None: the Hamming kernel."""
    U = all_sets(p)
    lam = kappa * np.prod(np.where(U, rho[None, :], 1.0), axis=1)
    if g is not None:
        order = U.sum(axis=1)
        factor = np.full(1 << p, float(g_tail))
        factor[order == 0] = 1.0
        for k, gk in enumerate(g, start=1):
            factor[order == k] = gk
        lam = lam * factor
    return lam


def dense_part(p: int, rho: np.ndarray, kappa: float, orders) -> np.ndarray:
    """``sum_{|U| in orders} kappa rho^U chi_U chi_U^T`` over all 2^p coalitions."""
    H = parity_matrix(p)
    lam = parity_variances(p, rho, kappa) * np.isin(all_sets(p).sum(axis=1), list(orders))
    return (H * lam) @ H.T


def close(actual: np.ndarray, expected: np.ndarray, scale: float, rtol: float = RTOL) -> None:
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-12 * scale)


CASES = [(p, shared, seed) for seed, (p, shared) in enumerate(
    [(1, True), (2, False), (3, True), (3, False), (5, False), (6, True), (7, False), (8, False), (8, True)])]


@pytest.mark.parametrize("p, shared, seed", CASES)
def test_order_parts_equal_the_walsh_definition(p, shared, seed):
    ls, s = hyper(p, shared, seed)
    rho, kappa = walsh_coordinates(ls, s)
    Z = all_sets(p)
    H = parity_matrix(p)
    # the coordinates reproduce the Hamming kernel's spectrum (docs/math.md §3)
    close((H * parity_variances(p, rho, kappa)) @ H.T, hamming_kernel(Z, Z, ls, s), s)
    parts = order_kernels(Z, Z, rho, kappa, (0, 1, 2, 3))
    for k in range(4):
        close(parts[k], dense_part(p, rho, kappa, [k]), s)
    # the remaining orders are the Hamming kernel minus the first four parts (zero for p <= 3)
    tail = hamming_kernel(Z, Z, ls, s) - parts.sum(axis=0)
    close(tail, dense_part(p, rho, kappa, range(4, p + 1)), s)
    # a sub-block with distinct row and column sets
    rows, cols = Z[::3], Z[1::2]
    close(order_kernels(rows, cols, rho, kappa, (2, 3)), parts[[2, 3]][:, ::3, 1::2], s)


def test_order_parts_at_ten_players():
    p = 10
    ls, s = hyper(p, False, 99)
    rho, kappa = walsh_coordinates(ls, s)
    Z = all_sets(p)
    parts = order_kernels(Z, Z, rho, kappa, (1, 3))
    H = parity_matrix(p)
    lam = parity_variances(p, rho, kappa)
    size = all_sets(p).sum(axis=1)
    for row, k in enumerate((1, 3)):
        close(parts[row], (H * (lam * (size == k))) @ H.T, s)


def test_krawtchouk_values_are_signed_subset_sums():
    for p in (1, 4, 9):
        for k in range(4):
            expected = [sum(np.prod(c) for c in combinations([-1] * d + [1] * (p - d), k)) if k else 1
                        for d in range(p + 1)]
            np.testing.assert_array_equal(krawtchouk_table(p, k), np.array(expected, dtype=float))


def test_signed_fold_is_accurate_relative_to_the_diagonal():
    """Per-player rho spanning eight decades: each part's error is a few eps times kappa e_k(rho)
    (exact rational reference), the accuracy promised for the fold."""
    rng = np.random.default_rng(5)
    p = 12
    rho = 10.0 ** rng.uniform(-8, -0.05, p)
    Z1, Z2 = rng.random((6, p)) < 0.5, rng.random((5, p)) < 0.5
    parts = order_kernels(Z1, Z2, rho, 1.0, (1, 2, 3))
    fr = [Fraction(float(r)) for r in rho]
    for a in range(6):
        for b in range(5):
            x = [r if Z1[a, j] == Z2[b, j] else -r for j, r in enumerate(fr)]
            for k in (1, 2, 3):
                exact = sum((np.prod(c) for c in combinations(x, k)), Fraction(0))
                diag = float(sum((np.prod(c) for c in combinations(fr, k)), Fraction(0)))
                assert abs(parts[k - 1, a, b] - float(exact)) <= 50 * np.finfo(float).eps * diag


@pytest.mark.parametrize("shared", [True, False])
def test_rho_gradient_and_its_contraction_match_finite_differences(shared):
    p = 7
    ls, s = hyper(p, shared, 3)
    rho, kappa = walsh_coordinates(ls, s)
    rng = np.random.default_rng(4)
    Z1, Z2 = rng.random((9, p)) < 0.5, rng.random((6, p)) < 0.4
    W = rng.normal(size=(9, 6))
    h = 1e-6
    for k in range(4):
        grad = order_kernel_rho_gradient(Z1, Z2, rho, kappa, k)
        fd = np.empty_like(grad)
        for j in range(p):
            up, dn = rho.copy(), rho.copy()
            up[j] += h
            dn[j] -= h
            # one player moves: the general (fold) route, also when rho was shared
            fd[j] = (order_kernels(Z1, Z2, up, kappa, (k,))[0] - order_kernels(Z1, Z2, dn, kappa, (k,))[0]) / (2 * h)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8 * kappa)
        np.testing.assert_allclose(order_kernel_rho_vjp(W, Z1, Z2, rho, kappa, k),
                                   np.einsum("ab,jab->j", W, grad), rtol=1e-10, atol=1e-13 * kappa)
        if shared and k:
            np.testing.assert_allclose(grad.sum(axis=0), k / rho[0] * order_kernels(Z1, Z2, rho, kappa, (k,))[0],
                                       rtol=1e-10, atol=1e-14)


def test_coordinate_derivatives_match_finite_differences():
    ls, s = np.array([0.3, 1.2, 2.5, 0.8]), 1.7
    drho, dlogk = walsh_coordinates_derivatives(ls, s)
    h = 1e-6
    for j in range(4):
        up, dn = ls.copy(), ls.copy()
        up[j] += h
        dn[j] -= h
        (ru, ku), (rd, kd) = walsh_coordinates(up, s), walsh_coordinates(dn, s)
        assert drho[j] == pytest.approx((ru[j] - rd[j]) / (2 * h), rel=1e-7)
        assert dlogk[j] == pytest.approx((np.log(ku) - np.log(kd)) / (2 * h), rel=1e-7)


@pytest.mark.parametrize("p, shared, seed", CASES[2:])
@pytest.mark.parametrize("tail", ["hamming", "last"])
def test_graded_kernel_equals_its_spectrum(p, shared, seed, tail):
    ls, s = hyper(p, shared, seed)
    rho, kappa = walsh_coordinates(ls, s)
    g = np.array([2.5, 0.3, 0.05])
    g_tail = 1.0 if tail == "hamming" else g[-1]
    Z = all_sets(p)
    H = parity_matrix(p)
    lam = parity_variances(p, rho, kappa, g, g_tail)
    dense = (H * lam) @ H.T
    close(graded_kernel(Z, Z, ls, s, g, g_tail), dense, s)
    assert graded_diagonal(ls, s, g, g_tail) == pytest.approx(lam.sum(), rel=1e-12)  # chi_U(z)^2 = 1
    # fewer free orders: the rest follow g_tail
    lam2 = parity_variances(p, rho, kappa, [4.0], 0.5)
    close(graded_kernel(Z, Z, ls, s, [4.0], 0.5), (H * lam2) @ H.T, s)


@pytest.mark.parametrize("shared, g, g_tail", [(True, [2.0, 0.5, 0.1], 1.0), (False, [2.0, 0.5, 0.1], 0.1),
                                                (False, [0.3], 3.0), (False, [1.0, 1.0, 1.0], 1.0)])
def test_graded_kernel_vjp_matches_finite_differences(shared, g, g_tail):
    p = 6
    ls, s = hyper(p, shared, 13)
    rng = np.random.default_rng(2)
    Z1, Z2 = rng.random((8, p)) < 0.5, rng.random((5, p)) < 0.5
    W = rng.normal(size=(8, 5))
    g = np.array(g)
    got = graded_kernel_vjp(W, Z1, Z2, ls, s, g, g_tail)

    def f(ls=ls, s=s, g=g, g_tail=g_tail):
        return float(np.sum(W * graded_kernel(Z1, Z2, ls, s, g, g_tail)))

    h = 1e-6
    for j in range(p):
        e = np.zeros(p)
        e[j] = h * ls[j]
        assert got["lengthscales"][j] == pytest.approx((f(ls=ls + e) - f(ls=ls - e)) / (2 * e[j]), rel=1e-6, abs=1e-9)
    assert got["outputscale"] == pytest.approx((f(s=s + h) - f(s=s - h)) / (2 * h), rel=1e-7)
    # K_g is linear in g and g_tail: a unit step is exact up to rounding
    for k in range(g.size):
        e = np.zeros(g.size)
        e[k] = 1.0
        assert got["g"][k] == pytest.approx(f(g=g + e) - f(), rel=1e-9, abs=1e-13)
    assert got["g_tail"] == pytest.approx(f(g_tail=g_tail + 1.0) - f(), rel=1e-9, abs=1e-13)


def test_g_one_is_the_hamming_kernel():
    p = 9
    ls, s = hyper(p, False, 8)
    rng = np.random.default_rng(0)
    Z1, Z2 = rng.random((20, p)) < 0.5, rng.random((7, p)) < 0.5
    np.testing.assert_allclose(graded_kernel(Z1, Z2, ls, s, [1, 1, 1]), hamming_kernel(Z1, Z2, ls, s),
                               rtol=1e-14, atol=0)
    assert graded_diagonal(ls, s, [1, 1, 1]) == pytest.approx(s, rel=1e-14)


INDEX_CASES = [(2, False, 0), (3, True, 1), (5, False, 2), (6, True, 3), (7, False, 4), (8, False, 5)]


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("p, shared, seed", INDEX_CASES)
def test_index_products_of_each_order_equal_the_dense_operator(index, p, shared, seed):
    if p < 2 and index not in ("SV", "BV"):
        pytest.skip("order-2 indices need two players")
    ls, s = hyper(p, shared, seed)
    rho, kappa = walsh_coordinates(ls, s)
    B = dense_index_operator(p, index)
    Z = all_sets(p)
    # the scale of the index's Hamming products: parts of an order the index does not see are 0
    scale = float(np.abs(B @ hamming_kernel(Z, Z, ls, s) @ B.T).max())
    for k in range(4):
        Kk = dense_part(p, rho, kappa, [k])
        close(order_index_columns(Z, rho, kappa, k, index), B @ Kk, scale)
        close(order_index_covariance(rho, kappa, k, index), B @ Kk @ B.T, scale)


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("p, shared, seed", INDEX_CASES[1:])
def test_graded_index_products_equal_the_dense_graded_kernel(index, p, shared, seed):
    ls, s = hyper(p, shared, seed)
    rho, kappa = walsh_coordinates(ls, s)
    B = dense_index_operator(p, index)
    Z = all_sets(p)
    H = parity_matrix(p)
    g = np.array([3.0, 0.2, 0.01])
    for g_tail in (1.0, g[-1]):
        K = (H * parity_variances(p, rho, kappa, g, g_tail)) @ H.T
        scale = float(np.abs(B @ K @ B.T).max())
        close(graded_index_columns(Z, ls, s, g, index, g_tail), B @ K, scale)
        close(graded_index_covariance(ls, s, g, index, g_tail), B @ K @ B.T, scale)


@pytest.mark.parametrize("index", ["SV", "BV", "k-SII"])
def test_held_out_empty_and_size_kernel_follow_the_graded_kernel(index):
    """docs/math.md §14.5 and §15 with k_g: B' = B with the empty column zeroed, plus beta K_size."""
    p = 6
    ls, s = hyper(p, False, 11)
    rho, kappa = walsh_coordinates(ls, s)
    g, g_tail = np.array([0.5, 2.0, 0.1]), 0.1
    Z = all_sets(p)
    H = parity_matrix(p)
    sizes = Z.sum(axis=1)
    KS = size_kernel_matrix(p, 0.3, 0.2, 0.7, 0.4)
    K = (H * parity_variances(p, rho, kappa, g, g_tail)) @ H.T + KS[np.ix_(sizes, sizes)]
    B = dense_index_operator(p, index)
    B[:, 0] = 0.0  # the empty coalition's column (code 0) held out
    op = IndexOperator(p, index, hold_out_empty=True)
    scale = float(np.abs(B @ K @ B.T).max())
    close(graded_index_columns(Z, ls, s, g, op, g_tail, size_kernel=KS), B @ K, scale)
    close(graded_index_covariance(ls, s, g, op, g_tail, size_kernel=KS), B @ K @ B.T, scale)


@pytest.mark.parametrize("index", INDICES)
def test_g_one_reproduces_todays_index_products(index):
    p = 9
    ls, s = hyper(p, False, 21)
    rng = np.random.default_rng(1)
    Z = rng.random((15, p)) < 0.5
    op = IndexOperator(p, index)
    KS = size_kernel_matrix(p, 0.0, 0.4, 0.3, 0.6)
    np.testing.assert_allclose(graded_index_columns(Z, ls, s, [1, 1, 1], op, size_kernel=KS),
                               op.hamming_columns(Z, ls, s) + op.size_columns(Z, KS), rtol=1e-14, atol=0)
    R = op.hamming_covariance(ls, s) + op.size_covariance(KS)
    np.testing.assert_allclose(graded_index_covariance(ls, s, [1, 1, 1], op, size_kernel=KS),
                               0.5 * (R + R.T), rtol=1e-14, atol=0)  # the graded route symmetrises the sum


def test_shapley_and_banzhaf_see_only_their_orders():
    """Fact 4 of docs/math.md §2 and §14.2: SV sees odd orders only, BV order 1 only."""
    p = 7
    rho, kappa = walsh_coordinates(np.linspace(0.3, 2.0, p), 1.0)
    Z = all_sets(p)[::5]
    for k in (0, 2):
        assert not order_index_columns(Z, rho, kappa, k, "SV").any()
        assert not order_index_covariance(rho, kappa, k, "SV").any()
    for k in (0, 2, 3):
        assert not order_index_columns(Z, rho, kappa, k, "BV").any()
    assert order_index_columns(Z, rho, kappa, 3, "SV").any()
    np.testing.assert_allclose(order_index_covariance(rho, kappa, 1, "BV"), np.diag(4 * kappa * rho), rtol=1e-14)


def test_bad_input_is_named():
    rho, kappa = walsh_coordinates(np.ones(3), 1.0)
    Z = np.zeros((2, 3), dtype=bool)
    with pytest.raises(ValueError, match="order must be an integer in 0..3"):
        order_kernels(Z, Z, rho, kappa, (4,))
    with pytest.raises(ValueError, match="rho must lie in"):
        order_kernels(Z, Z, np.array([0.1, 1.5, 0.2]), kappa)
    with pytest.raises(ValueError, match="kappa must be finite and positive"):
        order_kernels(Z, Z, rho, -1.0)
    with pytest.raises(ValueError, match="shape"):
        order_kernels(np.zeros((2, 4), dtype=bool), Z, rho, kappa)
    with pytest.raises(ValueError, match="g must hold"):
        graded_kernel(Z, Z, np.ones(3), 1.0, [1, 1, 1, 1])
    with pytest.raises(ValueError, match="g must be finite and non-negative"):
        graded_kernel(Z, Z, np.ones(3), 1.0, [1, -1])
    with pytest.raises(ValueError, match="operator is for 4 players"):
        order_index_columns(Z, rho, kappa, 1, IndexOperator(4, "SV"))
    with pytest.raises(ValueError, match="W must have shape"):
        order_kernel_rho_vjp(np.ones((3, 3)), Z, Z, rho, kappa, 2)


def test_order_covariances_at_600_players_fold_o_p2_numbers_and_match_the_shared_closed_form(monkeypatch):
    """Issue 34, item 6: graded surrogates at p = 600 (``graded-auto`` did not return in 400 s).

    The order-k covariance folded the ESP of every pair's outside players over all p players
    (O(p^3): 1.9 GB and 16 s per order-3 call at p = 600) after exact parity coefficients of every
    size u <= p (O(p^3) big integers: 123 s). Here every fold is bounded by (p + 1)^2 numbers and the
    coefficients asked for are of sizes <= 3 only, so the old route fails at once instead of running.
    Values: with one shared rho, ``e_m(rho outside V) = C(p - |V|, m) rho^m`` and the Shapley value of
    the parity of an odd set U is -2/|U| for each of its players (0 for even U), so
    ``M^(k)_ii = kappa (2/k)^2 rho^k C(p-1, k-1)`` and ``M^(k)_ij = kappa (2/k)^2 rho^k C(p-2, k-2)``.
    """
    import shapleig.gp.walsh as walsh

    p, rho, kappa = 600, 0.01, 1.5
    real_fold, real_coefficients = walsh._prefix_suffix, walsh.parity_coefficients

    def bounded(fold):
        def run(x, kmax):
            assert np.size(x) <= (p + 1) ** 2, f"an ESP fold over {np.shape(x)} numbers at p = {p}"
            return fold(x, kmax)
        return run

    def small_sizes(index, n_players, max_order=None, max_size=None):
        assert max_size is not None and max_size <= 3, "parity coefficients of every size up to p"
        return real_coefficients(index, n_players, max_order, max_size)

    monkeypatch.setattr(walsh, "_prefix_suffix", bounded(real_fold))
    monkeypatch.setattr(walsh, "parity_coefficients", small_sizes)
    r = np.full(p, rho)
    off = ~np.eye(p, dtype=bool)
    for k in (1, 2, 3):
        M = order_index_covariance(r, kappa, k, "SV")
        c = 2.0 / k if k % 2 else 0.0
        diag = kappa * c**2 * rho**k * math.comb(p - 1, k - 1)
        pair = kappa * c**2 * rho**k * (math.comb(p - 2, k - 2) if k >= 2 else 0)
        np.testing.assert_allclose(np.diag(M), diag, rtol=1e-12, atol=0)
        np.testing.assert_allclose(M[off], pair, rtol=1e-12, atol=0)
    M = order_index_covariance(r, kappa, 1, "BV")  # Banzhaf: order 1 only, 4 kappa rho on the diagonal
    np.testing.assert_allclose(M, 4 * kappa * rho * np.eye(p), rtol=1e-14, atol=0)
