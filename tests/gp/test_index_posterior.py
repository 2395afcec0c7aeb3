"""Dense 2^p checks of the posterior and EIG about Banzhaf values and pairwise interactions (docs/math.md §14.4)."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_kernel

from shapleig.design.acquisition import EIG
from shapleig.games.indices import INDICES, dense_index_operator, exact_index_values
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.mixture import build_mixture
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize


def all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def problem(p: int, seed: int, noise: float = 1e-6, t: int | None = None):
    rng = np.random.default_rng(500 + 7 * p + seed)
    hyper = Hyperparameters.hamming(rng.uniform(0.05, 3.0, p), float(rng.uniform(0.5, 2.0)), noise, float(rng.normal()))
    n = 1 << p
    t = t if t is not None else min(n - 1, 2 * p + 3)
    archive = np.concatenate([[0, n - 1], rng.choice(np.arange(1, n - 1), size=t - 2, replace=False)])
    y = 2.0 + 3.0 * rng.normal(size=archive.size)
    return hyper, all_sets(p), archive, y


def dense_index_posterior(hyper, Z, archive, y, B):
    """Mean (raw units) and covariance (raw units) of B f from the dense GP posterior of f."""
    K = dense_kernel(Z, hyper.lengthscales, hyper.outputscale)
    y_tilde, _, y_scale = standardize(y)
    Ks = K[np.ix_(archive, archive)] + hyper.noise * np.eye(archive.size)
    KxA = K[archive, :]
    Sigma = K - KxA.T @ np.linalg.solve(Ks, KxA)
    mu = hyper.mean_constant + KxA.T @ np.linalg.solve(Ks, y_tilde - hyper.mean_constant)
    return y_scale * (B @ mu), y_scale**2 * (B @ Sigma @ B.T), Sigma


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("p,seed", [(3, 0), (5, 1), (8, 2)])
def test_posterior_equals_dense(index: str, p: int, seed: int) -> None:
    hyper, Z, archive, y = problem(p, seed)
    B = dense_index_operator(p, index)
    mean, cov, _ = dense_index_posterior(hyper, Z, archive, y, B)
    post = ShapleyPosterior(hyper, Z[archive], y, operator=IndexOperator(p, index))
    scale = np.abs(cov).max()
    np.testing.assert_allclose(post.mean, mean, rtol=1e-7, atol=1e-9 * np.abs(mean).max())
    np.testing.assert_allclose(post.covariance, cov, rtol=1e-7, atol=1e-9 * scale)
    # extend (incremental border update) lands on the same posterior
    k = 3
    ext = ShapleyPosterior(hyper, Z[archive[:-k]], y[:-k], operator=IndexOperator(p, index)).extend(
        Z[archive[-k:]], y[-k:])
    np.testing.assert_allclose(ext.mean, mean, rtol=1e-7, atol=1e-9 * np.abs(mean).max())
    np.testing.assert_allclose(ext.covariance, cov, rtol=1e-7, atol=1e-8 * scale)


@pytest.mark.parametrize("index", INDICES)
def test_eig_equals_dense_log_det_drop(index: str) -> None:
    p = 6
    hyper, Z, archive, y = problem(p, 3, noise=1e-3)
    B = dense_index_operator(p, index)
    _, _, Sigma = dense_index_posterior(hyper, Z, archive, y, B)
    pool = np.setdiff1d(np.arange(1 << p), archive)
    cand = ShapleyPosterior(hyper, Z[archive], y, operator=IndexOperator(p, index)).candidates(Z[pool])
    eig = cand.eig()
    before = B @ Sigma @ B.T
    _, ld0 = np.linalg.slogdet(before)
    for col, w in enumerate(pool[:12]):
        u = B @ Sigma[:, w]
        _, ld1 = np.linalg.slogdet(before - np.outer(u, u) / (Sigma[w, w] + hyper.noise))
        assert abs(eig[col] - (ld0 - ld1)) <= 1e-6 * max(1.0, abs(ld0 - ld1))


def test_acquisition_operator_can_differ_from_read_out() -> None:
    """EIG about the SV while reading out k-SII equals the SV posterior's own EIG."""
    p = 6
    hyper, Z, archive, y = problem(p, 4, noise=1e-3)
    pool = np.setdiff1d(np.arange(1 << p), archive)
    post_k = ShapleyPosterior(hyper, Z[archive], y, operator=IndexOperator(p, "k-SII"))
    post_sv = ShapleyPosterior(hyper, Z[archive], y)
    np.testing.assert_allclose(post_k.candidates(Z[pool], operator=IndexOperator(p, "SV")).eig(),
                               post_sv.candidates(Z[pool]).eig(), rtol=1e-10)
    assert not np.allclose(post_k.candidates(Z[pool]).eig(), post_sv.candidates(Z[pool]).eig())


@pytest.mark.parametrize("index", INDICES)
def test_full_budget_gives_exact_index(index: str) -> None:
    p = 5
    rng = np.random.default_rng(11)
    Z = all_sets(p)
    v = rng.normal(size=1 << p)
    hyper = Hyperparameters.hamming(rng.uniform(0.05, 0.5, p), 1.0, 1e-10, 0.0)  # short lengthscales: well conditioned
    post = ShapleyPosterior(hyper, Z, v, operator=IndexOperator(p, index))
    np.testing.assert_allclose(post.mean, exact_index_values(v, index), atol=1e-6)
    assert np.max(post.std) < 1e-4


def test_mixture_and_greedy_selection_carry_the_operator() -> None:
    p = 6
    hyper, Z, archive, y = problem(p, 5, noise=1e-3)
    op = IndexOperator(p, "FSII")
    mix = build_mixture([("ard", 1.0, hyper)], Z[archive], y, calibrate=True, operator=op)
    assert mix.mean.shape == (op.n_terms,) and mix.covariance.shape == (op.n_terms, op.n_terms)
    cand = mix.primary.posterior.candidates(np.setdiff1d(np.arange(1 << p), archive)[:, None] >> np.arange(p) & 1)
    picks = EIG().select(cand, 3)
    assert len(set(picks.tolist())) == 3


@pytest.mark.parametrize("index", INDICES)
def test_hold_out_empty_equals_dense_split(index: str) -> None:
    """I = B[:, empty] v(empty) + B' f with f the dense GP posterior on the non-empty archive."""
    p = 6
    hyper, Z, archive, y = problem(p, 6, noise=1e-6)
    B = dense_index_operator(p, index)
    op = IndexOperator(p, index, hold_out_empty=True)
    np.testing.assert_allclose(op.empty_column(), B[:, 0], atol=1e-15)
    Bp = B.copy()
    Bp[:, 0] = 0.0
    K = dense_kernel(Z, hyper.lengthscales, hyper.outputscale)
    assert np.abs(op.hamming_columns(Z, hyper.lengthscales, hyper.outputscale) - Bp @ K).max() < 1e-12
    assert np.abs(op.hamming_covariance(hyper.lengthscales, hyper.outputscale) - Bp @ K @ Bp.T).max() < 1e-12
    rest = archive != 0  # archive[0] is the empty coalition
    y_tilde, y_mean, y_scale = standardize(y[rest])
    Ks = K[np.ix_(archive[rest], archive[rest])] + hyper.noise * np.eye(rest.sum())
    KxA = K[archive[rest], :]
    f_mean = y_mean + y_scale * (hyper.mean_constant
                                 + KxA.T @ np.linalg.solve(Ks, y_tilde - hyper.mean_constant))
    Sigma = K - KxA.T @ np.linalg.solve(Ks, KxA)
    post = ShapleyPosterior(hyper, Z[archive], y, operator=op)
    np.testing.assert_allclose(post.mean, B[:, 0] * y[0] + Bp @ f_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(post.covariance, y_scale**2 * Bp @ Sigma @ Bp.T, rtol=1e-7,
                               atol=1e-9 * y_scale**2 * np.abs(Bp @ Sigma @ Bp.T).max())
    assert post.X.shape[0] == archive.size - 1
    # extension, new hyperparameters and the read-out stay on the split
    ext = ShapleyPosterior(hyper, Z[archive[:-2]], y[:-2], operator=op).extend(Z[archive[-2:]], y[-2:])
    np.testing.assert_allclose(ext.mean, post.mean, rtol=1e-7, atol=1e-9)
    again = post.with_hyperparameters(Hyperparameters.hamming(hyper.lengthscales * 1.1, hyper.outputscale, hyper.noise,
                                                      hyper.mean_constant))
    assert again.X.shape[0] == archive.size - 1 and np.all(np.isfinite(again.mean))
    with pytest.raises(ValueError, match="empty coalition"):
        ShapleyPosterior(hyper, Z[archive[1:]], y[1:], operator=op)


def test_hold_out_empty_at_full_budget_is_exact() -> None:
    p = 5
    rng = np.random.default_rng(12)
    Z = all_sets(p)
    v = rng.normal(size=1 << p)
    v[0] = -30.0  # a jump at the empty coalition
    hyper = Hyperparameters.hamming(rng.uniform(0.05, 0.5, p), 1.0, 1e-10, 0.0)
    post = ShapleyPosterior(hyper, Z, v, operator=IndexOperator(p, "BV", hold_out_empty=True))
    np.testing.assert_allclose(post.mean, exact_index_values(v, "BV"), atol=1e-6)
