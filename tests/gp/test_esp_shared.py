"""Shared-lengthscale fast paths of shapleig.gp.esp against the general (ARD) routes and dense 2^p."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_kernel

import shapleig.gp.esp as esp
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import shapley_operator
from shapleig.gp.esp import (
    is_shared,
    prior_shapley_covariance,
    shapley_kernel_columns,
    shared_kernel_columns,
    shared_prior_shapley_covariance,
)


def _general_columns(Z, ls, s):
    return esp._columns(esp._columns_fold, Z, ls, s)


@pytest.mark.parametrize("p", [1, 2, 3, 6, 9])
@pytest.mark.parametrize("lengthscale", [0.05, 0.7, 5.0])
def test_shared_paths_equal_dense(p, lengthscale):
    ls, s = np.full(p, lengthscale), 1.3
    Z = all_coalitions(p)
    A = shapley_operator(p)
    K = dense_kernel(Z, ls, s)
    AK = A @ K
    np.testing.assert_allclose(shared_kernel_columns(Z, ls, s), AK, rtol=1e-10, atol=1e-12 * np.abs(AK).max())
    M = A @ K @ A.T
    np.testing.assert_allclose(shared_prior_shapley_covariance(ls, s), M, rtol=1e-10, atol=1e-12 * np.abs(M).max())  # the dense A K A^T sums 4^p terms


@pytest.mark.parametrize("p", [5, 30, 200])
def test_shared_paths_equal_general_routes(p):
    rng = np.random.default_rng(p)
    for lengthscale in (0.01, 0.3, 2.0, 50.0):
        ls, s = np.full(p, lengthscale), 0.8
        Z = rng.random((25, p)) < rng.uniform(0.05, 0.95, (25, 1))
        Z[0] = False
        Z[1] = True
        ref = _general_columns(Z, ls, s)
        np.testing.assert_allclose(shared_kernel_columns(Z, ls, s), ref, rtol=1e-10, atol=0)
        np.testing.assert_allclose(shared_prior_shapley_covariance(ls, s),
                                   esp._prior_shapley_covariance_parity(ls, s), rtol=1e-10, atol=0)


def test_dispatch_and_large_p():
    p = 1000
    ls = np.full(p, 0.2048 * np.sqrt(p))
    assert is_shared(ls) and not is_shared(ls * np.linspace(1, 2, p))
    rng = np.random.default_rng(0)
    Z = rng.random((16, p)) < rng.uniform(0.0, 1.0, (16, 1))
    cols = shapley_kernel_columns(Z, ls, 1.0)
    np.testing.assert_array_equal(cols, shared_kernel_columns(Z, ls, 1.0))
    assert np.all(np.isfinite(cols)) and np.array_equal(cols > 0, Z.T)
    # efficiency of A: the column sums equal k(N, z) - k(empty, z)
    s_k = np.exp(-(p - Z.sum(1)) / (p * ls[0])) - np.exp(-Z.sum(1) / (p * ls[0]))
    np.testing.assert_allclose(cols.sum(axis=0), s_k, rtol=1e-9, atol=1e-12)
    M = prior_shapley_covariance(ls, 1.0)
    assert np.all(np.isfinite(M)) and np.all(M > 0)
    np.testing.assert_array_equal(M, shared_prior_shapley_covariance(ls, 1.0))
    # 1^T M 1 = Var[v(N) - v(empty)] = 2 s (1 - k(N, empty)/s)
    np.testing.assert_allclose(M.sum(), 2.0 * (1.0 - np.exp(-1.0 / ls[0])), rtol=1e-9)


def test_shared_paths_reject_ard():
    with pytest.raises(ValueError, match="equal lengthscales"):
        shared_kernel_columns(np.ones((1, 3), bool), np.array([1.0, 2.0, 3.0]), 1.0)
    with pytest.raises(ValueError, match="equal lengthscales"):
        shared_prior_shapley_covariance(np.array([1.0, 2.0]), 1.0)


def test_shared_hamming_kernel_equals_weighted_route():
    from shapleig.gp.esp import hamming_kernel

    rng = np.random.default_rng(4)
    p = 50
    Z1, Z2 = rng.random((30, p)) < 0.5, rng.random((20, p)) < 0.3
    ls = np.full(p, 0.37)
    ref = 1.7 * np.exp(-(Z1[:, None, :] != Z2[None, :, :]).sum(-1) / (p * 0.37))
    np.testing.assert_allclose(hamming_kernel(Z1, Z2, ls, 1.7), ref, rtol=1e-14, atol=0)
    ls2 = ls.copy()
    ls2[0] *= 1 + 1e-12  # the general route, numerically the same kernel
    np.testing.assert_allclose(hamming_kernel(Z1, Z2, ls2, 1.7), ref, rtol=1e-10, atol=0)
