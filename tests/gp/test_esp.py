"""Dense 2^p checks of the ESP products with the Shapley operator (docs/math.md §3-§5, §12 items 2-4, 9)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _dense_reference import dense_kernel

import shapleig.gp.esp as esp
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import shapley_operator
from shapleig.gp.esp import (
    hamming_kernel,
    kernel_factors,
    prior_shapley_covariance,
    prior_shapley_covariance_bivariate,
    shapley_kernel_columns,
    shapley_kernel_columns_integral,
    shapley_kernel_columns_reference,
)

RTOL = 1e-9
COLUMN_ROUTES = [shapley_kernel_columns, shapley_kernel_columns_reference, shapley_kernel_columns_integral]
COVARIANCE_ROUTES = [prior_shapley_covariance, prior_shapley_covariance_bivariate]

FAST_CASES = [(p, 0) for p in (2, 3, 5, 7, 10)]
SLOW_CASES = [pytest.param(p, seed, marks=pytest.mark.slow) for p in range(2, 11) for seed in (1, 2, 3)]


def random_hyper(p: int, seed: int) -> tuple[np.ndarray, float]:
    """Recipe docs/math.md §12: l_j ~ U[0.05, 3], s ~ U[0.5, 2]."""
    rng = np.random.default_rng(1000 + 17 * p + seed)
    return rng.uniform(0.05, 3.0, p), float(rng.uniform(0.5, 2.0))




def assert_close(actual: np.ndarray, reference: np.ndarray, rtol: float = RTOL) -> None:
    np.testing.assert_allclose(actual, reference, rtol=rtol, atol=1e-12 * np.max(np.abs(reference)))


@pytest.mark.parametrize("p, seed", FAST_CASES + SLOW_CASES)
def test_kernel_forms_agree(p: int, seed: int) -> None:
    lengthscales, s = random_hyper(p, seed)
    Z = all_coalitions(p)
    K = dense_kernel(Z, lengthscales, s)
    assert_close(hamming_kernel(Z, Z, lengthscales, s), K, rtol=1e-13)
    kf = kernel_factors(lengthscales, s)
    factors = np.where(Z[:, None, :] == Z[None, :, :], kf.alpha, kf.beta[None, None, :])
    assert_close(np.prod(factors, axis=2), K, rtol=1e-12)
    np.testing.assert_allclose(kf.one_minus_b, 1.0 - kf.b, rtol=1e-12)
    np.testing.assert_allclose(kf.rho, (1.0 - kf.b) / (1.0 + kf.b), rtol=1e-12)
    # Spectral form: K = 2^-p sum_U lambda_U chi_U chi_U^T.
    Zf = Z.astype(np.float64)
    chi = np.where(np.rint(Zf @ Zf.T) % 2 == 0, 1.0, -1.0)  # chi[U, S] = (-1)^|U & S|
    lam = s * np.prod(np.where(Z, 1.0 - kf.b, 1.0 + kf.b), axis=1)
    assert_close((chi.T * lam) @ chi / 2.0**p, K, rtol=1e-11)


@pytest.mark.parametrize("route", COLUMN_ROUTES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p, seed", FAST_CASES + SLOW_CASES)
def test_kernel_columns_match_dense(route, p: int, seed: int) -> None:
    lengthscales, s = random_hyper(p, seed)
    Z = all_coalitions(p)
    AK = shapley_operator(p) @ dense_kernel(Z, lengthscales, s)
    cols = route(Z, lengthscales, s)
    assert cols.shape == (p, 1 << p) and cols.dtype == np.float64
    assert_close(cols, AK)
    # Sign pattern: [A k(., z)]_j > 0 exactly when j is in z (no zeros).
    assert np.array_equal(cols > 0, Z.T)
    assert np.all(cols != 0)


@pytest.mark.parametrize("p, seed", FAST_CASES + SLOW_CASES)
def test_prior_covariance_routes_match_dense(p: int, seed: int) -> None:
    lengthscales, s = random_hyper(p, seed)
    A = shapley_operator(p)
    M_dense = A @ dense_kernel(all_coalitions(p), lengthscales, s) @ A.T
    for route in COVARIANCE_ROUTES:
        M = route(lengthscales, s)
        assert M.shape == (p, p)
        assert_close(M, M_dense)
        assert np.array_equal(M, M.T)
    M = prior_shapley_covariance(lengthscales, s)
    if p >= 3:
        assert np.all(M > 0)
    else:
        # p = 2: M_01 = 4 kappa rho_0 rho_1 e_1(empty)/9 = 0 exactly (no odd set besides singletons).
        assert M[0, 1] == 0.0 and np.all(np.diag(M) > 0)
    b = kernel_factors(lengthscales, s).b
    np.testing.assert_allclose(M.sum(), 2 * s * (1 - np.prod(b)), rtol=1e-12)


def spectral_prior_covariance(lengthscales: np.ndarray, s: float) -> np.ndarray:
    """M = 2^-p sum_{|U| odd} lambda_U (4/|U|^2) 1_U 1_U^T by enumeration: non-negative terms only."""
    kf = kernel_factors(lengthscales, s)
    p = kf.n_players
    M = np.zeros((p, p))
    for U in all_coalitions(p):
        size = int(U.sum())
        if size % 2 == 1:
            lam = s * np.prod(np.where(U, kf.one_minus_b, 1.0 + kf.b))
            M += lam * 4.0 / size**2 * np.outer(U, U) / 2.0**p
    return M


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3, 1e5])
def test_parity_route_keeps_relative_accuracy(scale: float) -> None:
    """Near-flat (huge l) and rough (tiny l) priors: the parity route matches the cancellation-free
    spectral enumeration entrywise to ~p eps even when M is tiny, where A K A^T itself cancels."""
    rng = np.random.default_rng(7)
    lengthscales = scale * rng.uniform(0.5, 2.0, 8)
    M_ref = spectral_prior_covariance(lengthscales, 1.3)
    M = prior_shapley_covariance(lengthscales, 1.3)
    assert np.all(M > 0)
    np.testing.assert_allclose(M, M_ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("p", [50, 100])
def test_large_p_cheap_checks_and_routes_agree(p: int) -> None:
    rng = np.random.default_rng(p)
    lengthscales = rng.uniform(0.05, 3.0, p)
    s = float(rng.uniform(0.5, 2.0))
    b = kernel_factors(lengthscales, s).b
    M = prior_shapley_covariance(lengthscales, s)
    assert np.all(M > 0) and np.array_equal(M, M.T)
    np.testing.assert_allclose(M.sum(), 2 * s * (1 - np.prod(b)), rtol=1e-11)
    if p == 50:  # O(p^4) route: p = 100 is left to the slow sweep and the benchmark
        assert_close(prior_shapley_covariance_bivariate(lengthscales, s), M, rtol=1e-8)

    sizes = np.concatenate([[0, p, 1, p - 1], rng.integers(0, p + 1, 12)])
    Z = np.zeros((sizes.size, p), dtype=bool)
    for r, k in enumerate(sizes):
        Z[r, rng.choice(p, k, replace=False)] = True
    cols = shapley_kernel_columns(Z, lengthscales, s)
    assert np.array_equal(cols > 0, Z.T)
    for route in (shapley_kernel_columns_reference, shapley_kernel_columns_integral):
        assert_close(route(Z, lengthscales, s), cols, rtol=1e-10)
    # Column sums: 1^T A k(., z) = k(N, z) - k(empty, z); tolerance relative to sum |entries|.
    ends = np.array([np.ones(p, bool), np.zeros(p, bool)])
    k_ends = hamming_kernel(ends, Z, lengthscales, s)
    np.testing.assert_allclose(
        cols.sum(axis=0), k_ends[0] - k_ends[1], rtol=0, atol=1e-13 * np.abs(cols).sum(axis=0).max()
    )


@pytest.mark.slow
def test_bivariate_route_at_p100() -> None:
    rng = np.random.default_rng(100)
    lengthscales = rng.uniform(0.05, 3.0, 100)
    M = prior_shapley_covariance(lengthscales, 1.1)
    assert_close(prior_shapley_covariance_bivariate(lengthscales, 1.1), M, rtol=1e-8)


def test_extreme_lengthscales_columns() -> None:
    """b_j underflowing to 0 (tiny l) and b_j ~ 1 (huge l): the cancellation-free routes agree."""
    p = 60
    rng = np.random.default_rng(3)
    lengthscales = np.concatenate([np.full(20, 1e-6), rng.uniform(0.05, 3, 20), np.full(20, 1e6)])
    Z = rng.random((40, p)) < 0.5
    cols = shapley_kernel_columns(Z, lengthscales, 0.7)
    assert np.all(np.isfinite(cols)) and np.array_equal(cols > 0, Z.T)
    np.testing.assert_allclose(shapley_kernel_columns_integral(Z, lengthscales, 0.7), cols, rtol=1e-10, atol=0)
    M = prior_shapley_covariance(lengthscales, 0.7)
    assert np.all(np.isfinite(M)) and np.all(M > 0)


def test_chunking_does_not_change_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    lengthscales, s = random_hyper(6, 0)
    Z = all_coalitions(6)
    whole = shapley_kernel_columns(Z, lengthscales, s)
    monkeypatch.setattr(esp, "_MAX_CHUNK", 5)
    np.testing.assert_array_equal(shapley_kernel_columns(Z, lengthscales, s), whole)
    np.testing.assert_array_equal(shapley_kernel_columns(Z[:0], lengthscales, s), np.zeros((6, 0)))


def test_single_player() -> None:
    # p = 1: phi = v(N) - v(empty), Var = 2 s (1 - b).
    kf = kernel_factors(np.array([0.4]), 1.5)
    np.testing.assert_allclose(prior_shapley_covariance(np.array([0.4]), 1.5), [[2 * 1.5 * (1 - kf.b[0])]])
    np.testing.assert_allclose(
        shapley_kernel_columns(np.array([[False], [True]]), np.array([0.4]), 1.5), [[1.5 * (kf.b[0] - 1), 1.5 * (1 - kf.b[0])]]
    )


@pytest.mark.parametrize(
    "lengthscales, outputscale",
    [(np.array([1.0, -1.0]), 1.0), (np.array([1.0, np.nan]), 1.0), (np.ones((2, 2)), 1.0), (np.ones(2), 0.0)],
)
def test_bad_hyperparameters_raise(lengthscales: np.ndarray, outputscale: float) -> None:
    with pytest.raises(ValueError):
        prior_shapley_covariance(lengthscales, outputscale)


def test_bad_coalitions_raise() -> None:
    with pytest.raises(ValueError, match="shape"):
        shapley_kernel_columns(np.zeros((3, 4), bool), np.ones(5), 1.0)
    with pytest.raises(ValueError, match="0/1"):
        hamming_kernel(np.full((2, 3), 2), np.zeros((1, 3), bool), np.ones(3), 1.0)


def test_all_coalition_pairs_small_p_by_hand() -> None:
    """p = 3 by explicit double loop over the Shapley difference form, no matrices."""
    p, lengthscales, s = 3, np.array([0.3, 1.0, 2.5]), 0.9
    Z = all_coalitions(p)
    K = dense_kernel(Z, lengthscales, s)
    omega = [1 / 3, 1 / 6, 1 / 3]
    code = {tuple(z): r for r, z in enumerate(Z)}
    AK = np.zeros((p, len(Z)))
    for i in range(p):
        others = [j for j in range(p) if j != i]
        for k in range(p):
            for S in itertools.combinations(others, k):
                without = np.zeros(p, bool)
                without[list(S)] = True
                with_i = without.copy()
                with_i[i] = True
                AK[i] += omega[k] * (K[code[tuple(with_i)]] - K[code[tuple(without)]])
    assert_close(shapley_kernel_columns(Z, lengthscales, s), AK)


def test_operator_parity_basis() -> None:
    """Fact 2.4, on which the parity route rests: A chi_U = -(2/|U|) 1_U for odd |U|, else 0."""
    p = 6
    A = shapley_operator(p)
    Z = all_coalitions(p)
    Zf = Z.astype(np.float64)
    chi = np.where(np.rint(Zf @ Zf.T) % 2 == 0, 1.0, -1.0)  # row U is chi_U over all S
    image = chi @ A.T  # row U is (A chi_U)^T
    size = Z.sum(axis=1)
    expected = np.where((size % 2 == 1)[:, None], -2.0 / np.maximum(size, 1)[:, None] * Zf, 0.0)
    np.testing.assert_allclose(image, expected, atol=1e-13)
