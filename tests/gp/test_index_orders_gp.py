"""The GP's products with index operators of order k (issue 39; docs/math.md §14.3, §16) against dense 2^p
references: ``B K`` and ``B K B^T`` with the Hamming kernel (shared and per-player lengthscales, v(empty)
held out or not), the size coefficients, the order-k Walsh parts and the graded kernel, the posterior
and the EIG, and exactness at the full budget. ``B`` comes from
:func:`shapleig.games.indices.dense_index_operator` (built from the indices' definitions, never from
their weights), the kernels from their exponential and parity forms over all coalitions."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_kernel

import shapleig.gp.index_generic as generic
from shapleig import ShaplEIG
from shapleig.games.game import FunctionGame
from shapleig.games.indices import INDICES, dense_index_operator, exact_index_values, get_index
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.graded_walsh import graded_index_columns, graded_index_covariance
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize
from shapleig.gp.walsh import (
    order_index_columns,
    order_index_covariance,
    walsh_coordinates,
)

INTERACTIONS = [name for name in INDICES if get_index(name).any_order]
TOL = 1e-10


def all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def hyper(p: int, shared: bool, seed: int) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    return (np.full(p, rng.uniform(0.05, 3.0)) if shared else rng.uniform(0.05, 3.0, p)), float(rng.uniform(0.5, 2))


def check_hamming(name: str, p: int, k: int, shared: bool, hold_out: bool) -> None:
    ls, s = hyper(p, shared, 100 * p + 10 * k + shared)
    Z = all_sets(p)
    B = dense_index_operator(p, name, k).copy()
    if hold_out:
        B[:, 0] = 0.0  # B': v(empty) enters exactly (docs/math.md §14.5)
    K = dense_kernel(Z, ls, s)
    op = IndexOperator(p, name, k, hold_out_empty=hold_out)
    assert op.terms == [tuple(T) for T in op.terms] and op.n_terms == B.shape[0]
    sub = np.random.default_rng(p).choice(1 << p, size=min(1 << p, p + 1), replace=False)  # the per-coalition route
    assert rel(op.hamming_columns(Z, ls, s), B @ K) < TOL
    assert rel(op.hamming_columns(Z[sub], ls, s), (B @ K)[:, sub]) < TOL
    M = op.hamming_covariance(ls, s)
    assert rel(M, B @ K @ B.T) < TOL
    np.testing.assert_array_equal(M, M.T)
    h = np.random.default_rng(k).normal(size=p + 1)  # a game of the size alone
    assert rel(op.size_coefficients() @ h, B @ h[Z.sum(axis=1)]) < TOL


def hamming_cases(players: tuple[int, ...]) -> list[tuple[str, int, int, bool]]:
    return [(name, p, k, shared) for name in INTERACTIONS for p in players for k in range(3, min(p, 4) + 1)
            for shared in (False, True)]


@pytest.mark.parametrize("name, p, k, shared", hamming_cases((4, 6)))
def test_hamming_products_of_order_k_equal_dense(name: str, p: int, k: int, shared: bool) -> None:
    check_hamming(name, p, k, shared, hold_out=False)


@pytest.mark.parametrize("name", INTERACTIONS)
def test_held_out_empty_at_order_three(name: str) -> None:
    check_hamming(name, 5, 3, False, hold_out=True)
    op = IndexOperator(5, name, 3)
    np.testing.assert_allclose(op.empty_column(), dense_index_operator(5, name, 3)[:, 0], atol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("name, p, k, shared", [c for c in hamming_cases((7, 8))])
@pytest.mark.parametrize("hold_out", [False, True])
def test_hamming_products_of_order_k_equal_dense_p8(name: str, p: int, k: int, shared: bool, hold_out: bool) -> None:
    check_hamming(name, p, k, shared, hold_out)


def test_covariance_routes_agree(monkeypatch) -> None:
    """Pairs of terms in several chunks, and the member-list unions used above 62 players, give the same matrix."""
    p, ls, s = 6, np.linspace(0.2, 2.0, 6), 1.3
    B = dense_index_operator(p, "FSII", 3)
    ref = B @ dense_kernel(all_sets(p), ls, s) @ B.T
    monkeypatch.setattr(generic, "_PAIR_CHUNK", 97)
    assert rel(IndexOperator(p, "FSII", 3).hamming_covariance(ls, s), ref) < TOL
    monkeypatch.setattr(generic, "_MASK_PLAYERS", 0)
    assert rel(IndexOperator(p, "FSII", 3).hamming_covariance(ls, s), ref) < TOL


def parity_kernel(p: int, rho: np.ndarray, kappa: float, weight) -> np.ndarray:
    """``sum_U weight(|U|) kappa rho^U chi_U chi_U^T`` over all 2^p parities (docs/math.md §3, §16)."""
    U = all_sets(p)
    Zi = U.astype(np.int64)
    H = np.where((Zi @ Zi.T) % 2 == 1, -1.0, 1.0)
    lam = kappa * np.prod(np.where(U, rho[None, :], 1.0), axis=1) * np.array([weight(int(u)) for u in U.sum(axis=1)])
    return (H * lam) @ H.T


@pytest.mark.parametrize("name", INTERACTIONS)
@pytest.mark.parametrize("k", [3, 4])
def test_walsh_parts_and_graded_kernel_at_order_k(name: str, k: int) -> None:
    p = 6
    ls, s = hyper(p, False, 7 + k)
    rho, kappa = walsh_coordinates(ls, s)
    Z = all_sets(p)
    B = dense_index_operator(p, name, k)
    op = IndexOperator(p, name, k)
    scale = np.abs(B @ dense_kernel(Z, ls, s) @ B.T).max()
    for g in range(4):
        Kg = parity_kernel(p, rho, kappa, lambda u, g=g: float(u == g))
        assert np.abs(order_index_columns(Z, rho, kappa, g, op) - B @ Kg).max() < TOL * scale
        assert np.abs(order_index_covariance(rho, kappa, g, op) - B @ Kg @ B.T).max() < TOL * scale
    factors = np.array([3.0, 0.2, 0.01])
    Kg = parity_kernel(p, rho, kappa, lambda u: factors[u - 1] if 1 <= u <= 3 else 1.0)
    for hold_out in (False, True):
        Bh = B.copy()
        if hold_out:
            Bh[:, 0] = 0.0
        oph = IndexOperator(p, name, k, hold_out_empty=hold_out)
        scale = np.abs(Bh @ Kg @ Bh.T).max()
        assert np.abs(graded_index_columns(Z, ls, s, factors, oph) - Bh @ Kg).max() < TOL * scale
        assert np.abs(graded_index_covariance(ls, s, factors, oph) - Bh @ Kg @ Bh.T).max() < TOL * scale


def problem(p: int, seed: int, noise: float):
    rng = np.random.default_rng(900 + seed)
    hyp = Hyperparameters.hamming(rng.uniform(0.05, 3.0, p), float(rng.uniform(0.5, 2.0)), noise, float(rng.normal()))
    n = 1 << p
    archive = np.concatenate([[0, n - 1], rng.choice(np.arange(1, n - 1), size=2 * p + 1, replace=False)])
    return hyp, all_sets(p), archive, 2.0 + 3.0 * rng.normal(size=archive.size)


@pytest.mark.parametrize("name", INTERACTIONS)
def test_posterior_and_eig_of_order_three_equal_dense(name: str) -> None:
    p = 6
    hyp, Z, archive, y = problem(p, 1, 1e-3)
    B = dense_index_operator(p, name, 3)
    K = dense_kernel(Z, hyp.lengthscales, hyp.outputscale)
    y_tilde, _, y_scale = standardize(y)
    Ks = K[np.ix_(archive, archive)] + hyp.noise * np.eye(archive.size)
    KxA = K[archive, :]
    Sigma = K - KxA.T @ np.linalg.solve(Ks, KxA)
    mu = hyp.mean_constant + KxA.T @ np.linalg.solve(Ks, y_tilde - hyp.mean_constant)
    post = ShapleyPosterior(hyp, Z[archive], y, operator=IndexOperator(p, name, 3))
    cov = y_scale**2 * B @ Sigma @ B.T
    np.testing.assert_allclose(post.mean, y_scale * (B @ mu), rtol=1e-7, atol=1e-9 * np.abs(B @ mu).max())
    np.testing.assert_allclose(post.covariance, cov, rtol=1e-7, atol=1e-9 * np.abs(cov).max())
    pool = np.setdiff1d(np.arange(1 << p), archive)
    eig = post.candidates(Z[pool]).eig()
    before = B @ Sigma @ B.T
    # the order-3 covariance of 41 terms has rank <= 2^6 - |archive|: the EIG's log-determinant is of its range
    _, ld0 = np.linalg.slogdet(before + 1e-9 * np.eye(B.shape[0]))
    for col, w in enumerate(pool[:8]):
        u = B @ Sigma[:, w]
        _, ld1 = np.linalg.slogdet(before - np.outer(u, u) / (Sigma[w, w] + hyp.noise) + 1e-9 * np.eye(B.shape[0]))
        assert abs(eig[col] - (ld0 - ld1)) <= 1e-4 * max(1.0, abs(ld0 - ld1))


@pytest.mark.parametrize("name", INTERACTIONS)
def test_full_budget_gives_the_exact_index_of_order_three(name: str) -> None:
    p = 5
    rng = np.random.default_rng(13)
    Z = all_sets(p)
    v = rng.normal(size=1 << p)
    hyp = Hyperparameters.hamming(rng.uniform(0.05, 0.5, p), 1.0, 1e-10, 0.0)
    post = ShapleyPosterior(hyp, Z, v, operator=IndexOperator(p, name, 3))
    np.testing.assert_allclose(post.mean, exact_index_values(v, name, 3), atol=1e-6)
    assert np.max(post.std) < 1e-4


@pytest.mark.parametrize("name", ["k-SII", "STII", "FSII"])
def test_an_efficient_index_of_order_three_sums_to_the_total(name: str) -> None:
    """Whatever the archive, the posterior mean of an efficient index sums to mu(N) - mu(empty) of the GP."""
    p = 6
    hyp, Z, archive, y = problem(p, 2, 1e-6)
    post = ShapleyPosterior(hyp, Z[archive], y, operator=IndexOperator(p, name, 3))
    assert abs(post.mean.sum() - (y[1] - y[0])) < 1e-3 * np.abs(y).max()  # N and empty are observed (noise 1e-6)
    ones = np.ones(post.mean.size)
    assert ones @ post.covariance @ ones < 1e-6 * np.abs(post.covariance).max() * post.mean.size


def test_shapleig_estimates_an_order_three_index() -> None:
    p = 6
    w = np.linspace(1.0, 2.0, p)

    def value(Z: np.ndarray) -> np.ndarray:
        Z = np.asarray(Z, dtype=np.float64)
        return Z @ w + 2.0 * Z[:, 0] * Z[:, 1] * Z[:, 2] - Z[:, 3] * Z[:, 4]

    game = FunctionGame(value, p)
    codes = np.arange(1 << p)
    exact = exact_index_values(value(((codes[:, None] >> np.arange(p)) & 1).astype(bool)), "STII", 3)
    est = ShaplEIG(index="STII", max_order=3).estimate(game, 48, seed=0)  # 48 of the 64 coalitions, 41 terms
    assert est.max_order == 3 and len(est.terms) == 6 + 15 + 20 and est.info["max_order"] == 3
    assert est.info["acquisition_order"] == 3
    assert np.max(np.abs(est.values - exact)) < 0.01
    z = np.abs(est.values - exact) / est.std
    assert np.mean(z <= 1.96) >= 0.9
    pairs = ShaplEIG.from_options(index="STII", max_order=3, acquisition_order=2).estimate(game, 24, seed=0)
    assert pairs.info["acquisition_order"] == 2 and pairs.max_order == 3
