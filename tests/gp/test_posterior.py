"""Dense 2^p checks of the Shapley posterior and the closed-form EIG (docs/math.md §6, §7, §10, §12 items 5-8)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from _dense_reference import dense_kernel

from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import shapley_from_bitorder, shapley_operator
from shapleig.gp.posterior import (
    CandidatePosterior,
    Hyperparameters,
    ShapleyPosterior,
    cholesky_with_jitter,
    standardize,
)

RTOL = 1e-9
FAST_CASES = [(2, 0, 1e-6), (3, 0, 1e-3), (5, 0, 1e-6), (7, 0, 1e-3), (10, 0, 1e-6)]
SLOW_CASES = [
    pytest.param(p, seed, noise, marks=pytest.mark.slow)
    for p in range(2, 11)
    for seed in (1, 2)
    for noise in (1e-6, 1e-3)
]




@dataclass
class Dense:
    """Dense reference problem over all 2^p coalitions (bit order)."""

    p: int
    hyper: Hyperparameters
    Z: np.ndarray  # all coalitions
    A: np.ndarray
    K: np.ndarray
    archive: np.ndarray  # indices into Z, contains empty (0) and grand (2^p - 1)
    y: np.ndarray  # raw values at archive
    pool: np.ndarray  # indices into Z not in the archive


def make_dense(p: int, seed: int, noise: float, n_archive: int | None = None) -> Dense:
    """Recipe docs/math.md §12: l ~ U[0.05, 3], s ~ U[0.5, 2], random archive containing empty and N, raw y."""
    rng = np.random.default_rng(2000 + 31 * p + seed)
    hyper = Hyperparameters.hamming(rng.uniform(0.05, 3.0, p), float(rng.uniform(0.5, 2.0)), noise, float(rng.normal()))
    Z = all_coalitions(p)
    n = 1 << p
    t = n_archive if n_archive is not None else min(n - 1, max(3, p + 1 + 2 * seed))
    middle = rng.choice(np.arange(1, n - 1), size=min(t - 2, n - 2), replace=False)
    archive = np.concatenate([[0, n - 1], middle]).astype(np.int64)
    y = 5.0 + 3.0 * rng.normal(size=archive.size)
    pool = np.setdiff1d(np.arange(n), archive)
    return Dense(p, hyper, Z, shapley_operator(p), dense_kernel(Z, hyper.lengthscales, hyper.outputscale), archive, y, pool)


def dense_posterior(d: Dense, observed: np.ndarray, y_tilde: np.ndarray | None = None):
    """(mu, Sigma) of f over all coalitions in standardised units; mu needs y_tilde."""
    h = d.hyper
    Ks = d.K[np.ix_(observed, observed)] + h.noise * np.eye(observed.size)
    KxA = d.K[observed, :]
    Sigma = d.K - KxA.T @ np.linalg.solve(Ks, KxA)
    mu = None if y_tilde is None else h.mean_constant + KxA.T @ np.linalg.solve(Ks, y_tilde - h.mean_constant)
    return mu, Sigma


def dense_eig(d: Dense, Sigma: np.ndarray, w: int) -> float:
    """log det Sigma_phi - log det(A Sigma' A^T), Sigma' the dense posterior after adding w.

    ``A Sigma' A^T = A Sigma A^T - (A Sigma e_w)(A Sigma e_w)^T / (Sigma_ww + sigma^2)`` is formed
    densely (no B, no Cholesky of Sigma_phi, no determinant lemma), then both sides by slogdet.
    """
    before = d.A @ Sigma @ d.A.T
    u = d.A @ Sigma[:, w]
    after = before - np.outer(u, u) / (Sigma[w, w] + d.hyper.noise)
    return np.linalg.slogdet(before)[1] - np.linalg.slogdet(after)[1]


def assert_close(actual: np.ndarray, reference: np.ndarray, rtol: float = RTOL, scale: float | None = None) -> None:
    """rtol, and atol = 1e-12 * max|reference| (or 1e-12 * scale, for posteriors that are small
    differences of prior-scale quantities, where both sides cancel)."""
    scale = np.max(np.abs(reference)) if scale is None else scale
    np.testing.assert_allclose(actual, reference, rtol=rtol, atol=1e-12 * scale)


@pytest.mark.parametrize("p, seed, noise", FAST_CASES + SLOW_CASES)
def test_posterior_matches_dense(p: int, seed: int, noise: float) -> None:
    d = make_dense(p, seed, noise)
    post = ShapleyPosterior(d.hyper, d.Z[d.archive], d.y)
    y_tilde, y_mean, y_scale = standardize(d.y)
    mu, Sigma = dense_posterior(d, d.archive, y_tilde)
    assert_close(post.prior_covariance, d.A @ d.K @ d.A.T)
    assert_close(post.mean, y_scale * (d.A @ mu))
    assert_close(post.covariance, y_scale**2 * (d.A @ Sigma @ d.A.T))
    assert_close(post.shapley_covariance, d.A @ Sigma @ d.A.T)
    np.testing.assert_allclose(post.std, np.sqrt(np.diag(post.covariance)), rtol=1e-12)
    # Efficiency holds for any posterior mean: sum phi = mu(N) - mu(empty) (rescaled).
    np.testing.assert_allclose(post.mean.sum(), y_scale * (mu[-1] - mu[0]), rtol=RTOL, atol=1e-12 * y_scale)
    f_mean, f_var = post.predict(d.Z)
    assert_close(f_mean, y_mean + y_scale * mu)
    np.testing.assert_allclose(f_var, y_scale**2 * np.clip(np.diag(Sigma), 0, None), rtol=1e-7, atol=1e-10 * y_scale**2)

    cand = post.candidates(d.Z[d.pool])
    assert_close(cand.cross_covariance(), d.A @ Sigma[:, d.pool])
    assert_close(cand.predictive_variance(), np.diag(Sigma)[d.pool] + noise)


@pytest.mark.parametrize("p, seed, noise", FAST_CASES + SLOW_CASES)
def test_eig_matches_dense_logdet(p: int, seed: int, noise: float) -> None:
    d = make_dense(p, seed, noise)
    post = ShapleyPosterior(d.hyper, d.Z[d.archive], d.y)
    _, Sigma = dense_posterior(d, d.archive)
    eig = post.candidates(d.Z[d.pool]).eig()
    rng = np.random.default_rng(seed)
    check = rng.choice(d.pool.size, size=min(40, d.pool.size), replace=False)
    reference = np.array([dense_eig(d, Sigma, d.pool[r]) for r in check])
    np.testing.assert_allclose(eig[check], reference, rtol=0, atol=1e-7 * np.maximum(1.0, reference).max())
    assert np.all(eig >= 0)


def test_mean_constant_enters_through_the_residual() -> None:
    d = make_dense(5, 0, 1e-6)
    base = ShapleyPosterior(d.hyper, d.Z[d.archive], d.y)
    h = d.hyper
    shifted = ShapleyPosterior(Hyperparameters.hamming(h.lengthscales, h.outputscale, h.noise, h.mean_constant + 0.5), d.Z[d.archive], d.y)
    assert not np.allclose(base.mean, shifted.mean)
    np.testing.assert_array_equal(base.covariance, shifted.covariance)
    # A constant shift of the raw values never reaches phi (standardisation and A 1 = 0).
    moved = ShapleyPosterior(h, d.Z[d.archive], d.y + 100.0)
    np.testing.assert_allclose(moved.mean, base.mean, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", [6, 8, pytest.param(9, marks=pytest.mark.slow)])
def test_consistency_with_full_table(p: int) -> None:
    """All 2^p coalitions observed, well-conditioned K: the mean is the exact Shapley vector, and
    the error shrinks linearly with the noise."""
    rng = np.random.default_rng(p)
    lengthscales = rng.uniform(0.05, 0.5, p)
    Z = all_coalitions(p)
    values = rng.normal(size=1 << p) * 2.0 + 1.0
    phi = shapley_from_bitorder(values)
    errors = []
    for noise in (1e-8, 1e-10):
        post = ShapleyPosterior(Hyperparameters.hamming(lengthscales, 1.0, noise), Z, values)
        errors.append(np.max(np.abs(post.mean - phi)))
    assert errors[1] < 1e-6
    assert 30.0 < errors[0] / errors[1] < 300.0


def _greedy_against_dense(p: int, seed: int, noise: float, steps: int = 20) -> None:
    d = make_dense(p, seed, noise, n_archive=p + 1)
    post = ShapleyPosterior(d.hyper, d.Z[d.archive], d.y)
    cand = post.candidates(d.Z[d.pool])
    observed = d.archive.copy()
    _, Sigma = dense_posterior(d, observed)
    steps = min(steps, d.pool.size)
    prior_scale = d.hyper.outputscale
    for _ in range(steps):
        eig = cand.eig()
        j = int(np.argmax(eig))
        w = d.pool[j]
        expected = dense_eig(d, Sigma, w)
        gain = cand.condition(j)
        np.testing.assert_allclose(gain, expected, rtol=0, atol=1e-7 * max(1.0, expected))
        assert gain == pytest.approx(eig[j], rel=1e-12)
        observed = np.append(observed, w)
        _, Sigma = dense_posterior(d, observed)
        # Late steps nearly determine phi: compare on the prior scale, where the rounding lives.
        assert_close(cand.shapley_covariance, d.A @ Sigma @ d.A.T, rtol=1e-8, scale=prior_scale)
        assert_close(cand.cross_covariance(), d.A @ Sigma[:, d.pool], rtol=1e-8, scale=prior_scale)
        v = cand.predictive_variance()
        assert np.isneginf(v[j]) and np.isneginf(cand.eig()[j])
        avail = cand.available
        np.testing.assert_allclose(v[avail], np.diag(Sigma)[d.pool][avail] + noise, rtol=1e-8, atol=1e-12)
    assert sorted(cand.selected) == list(np.flatnonzero(~cand.available)) and len(cand.selected) == steps


@pytest.mark.parametrize("p, seed, noise", [(5, 0, 1e-6), (7, 1, 1e-3)])
def test_frozen_greedy_updates_match_dense(p: int, seed: int, noise: float) -> None:
    _greedy_against_dense(p, seed, noise)


@pytest.mark.slow
@pytest.mark.parametrize("p, seed, noise", [(p, s, n) for p in (4, 6, 8, 10) for s in (2, 3) for n in (1e-6, 1e-3)])
def test_frozen_greedy_updates_match_dense_sweep(p: int, seed: int, noise: float) -> None:
    _greedy_against_dense(p, seed, noise)


def test_eig_sequence_does_not_depend_on_values() -> None:
    d = make_dense(7, 3, 1e-6)
    h = d.hyper
    rng = np.random.default_rng(0)
    runs = []
    for y, c in ((d.y, h.mean_constant), (rng.normal(size=d.y.size) * 1e3, -2.0)):
        post = ShapleyPosterior(Hyperparameters.hamming(h.lengthscales, h.outputscale, h.noise, c), d.Z[d.archive], y)
        runs.append(post.candidates(d.Z[d.pool]).greedy(12))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_batch_equals_sequential_refactorised_picks() -> None:
    """A greedy batch of q (rank-one updates) equals q picks that rebuild the posterior each time."""
    d = make_dense(6, 4, 1e-6)
    post = ShapleyPosterior(d.hyper, d.Z[d.archive], d.y)
    batch, gains = post.candidates(d.Z[d.pool]).greedy(8)
    rng = np.random.default_rng(1)
    current = post
    available = np.ones(d.pool.size, bool)
    for j_batch, gain in zip(batch, gains):
        eig = current.candidates(d.Z[d.pool]).eig()
        eig[~available] = -np.inf
        j = int(np.argmax(eig))
        assert j == j_batch
        assert eig[j] == pytest.approx(gain, rel=1e-9)
        available[j] = False
        current = current.extend(d.Z[d.pool][j], rng.normal(size=1))


def test_extend_equals_fresh_posterior() -> None:
    d = make_dense(7, 1, 1e-3)
    rng = np.random.default_rng(5)
    first = ShapleyPosterior(d.hyper, d.Z[d.archive[:4]], d.y[:4])
    extended = first.extend(d.Z[d.archive[4:]], d.y[4:])
    extended = extended.extend(d.Z[d.pool[:3]], rng.normal(size=3))
    X = np.concatenate([d.Z[d.archive], d.Z[d.pool[:3]]])
    y = np.concatenate([extended.y[:-3], extended.y[-3:]])
    fresh = ShapleyPosterior(d.hyper, X, y)
    assert extended.y_mean == pytest.approx(fresh.y_mean) and extended.y_scale == pytest.approx(fresh.y_scale)
    np.testing.assert_array_equal(extended.X, fresh.X)
    assert_close(extended.mean, fresh.mean)
    assert_close(extended.covariance, fresh.covariance)
    np.testing.assert_allclose(
        extended.candidates(d.Z[d.pool[3:]]).eig(), fresh.candidates(d.Z[d.pool[3:]]).eig(), rtol=1e-9, atol=1e-12
    )
    # Starting from the empty archive works too.
    empty = ShapleyPosterior(d.hyper, np.zeros((0, 7), bool), np.zeros(0))
    assert_close(empty.extend(X, y).covariance, fresh.covariance)


def test_empty_archive_is_the_prior() -> None:
    d = make_dense(5, 0, 1e-6)
    prior = ShapleyPosterior(d.hyper, np.zeros((0, 5), bool), np.zeros(0))
    np.testing.assert_array_equal(prior.mean, np.zeros(5))
    assert_close(prior.covariance, d.A @ d.K @ d.A.T)
    cand = prior.candidates(d.Z)
    assert_close(cand.cross_covariance(), d.A @ d.K)
    np.testing.assert_allclose(cand.predictive_variance(), d.hyper.outputscale + d.hyper.noise)


def test_greedy_extremes_first_at_p8() -> None:
    """docs/math.md §11/§12.8: equal b = 0.857, empty archive: {N, empty}, then 16 extremes (sizes 1, 7) in
    complement pairs, then size-4 coalitions."""
    p = 8
    lengthscale = -1.0 / (p * np.log(0.857))
    post = ShapleyPosterior(Hyperparameters.hamming(np.full(p, lengthscale), 1.0, 1e-6), np.zeros((0, p), bool), np.zeros(0))
    Z = all_coalitions(p)
    picks, gains = post.candidates(Z).greedy(30)
    chosen = Z[picks]
    sizes = chosen.sum(axis=1)
    assert sorted(sizes[:2]) == [0, 8]
    assert set(sizes[2:18]) == {1, 7}
    assert np.all(chosen[3:18:2] == ~chosen[2:18:2])  # every extreme is followed by its complement
    singletons = chosen[2:18][sizes[2:18] == 1]
    assert singletons.shape[0] == p and np.all(singletons.sum(axis=0) == 1)  # every player once
    assert np.all(sizes[18:30] == 4)
    assert np.all(np.diff(np.cumsum(gains)) > 0)


def test_standardize_matches_botorch() -> None:
    torch = pytest.importorskip("torch")
    from botorch.models.transforms.outcome import Standardize

    rng = np.random.default_rng(0)
    for y in (rng.normal(size=7) * 4 + 2, np.full(5, 3.0), rng.normal(size=6) * 1e-7):
        yt, mean, scale = standardize(y)
        bt, _ = Standardize(m=1)(torch.tensor(y, dtype=torch.float64)[:, None])
        np.testing.assert_allclose(yt, bt[:, 0].numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(yt * scale + mean, y, rtol=1e-12)
    # below botorch's 1e-8 floor the std is kept (botorch would divide by 1 instead): the
    # standardised values are those of the same data at unit scale (issue 20, scale invariance)
    y = np.array([1.5, 1.5 + 1e-10])
    yt, mean, scale = standardize(y)
    np.testing.assert_allclose(yt, [-np.sqrt(0.5), np.sqrt(0.5)], rtol=1e-5)
    np.testing.assert_allclose(scale, 1e-10 / np.sqrt(2), rtol=1e-5)
    assert standardize(np.array([4.0]))[1:] == (4.0, 4.0)  # one value: its magnitude, y_tilde 0
    assert standardize(np.zeros(0))[1:] == (0.0, 1.0)


def test_cholesky_jitter_only_on_failure() -> None:
    K = np.array([[2.0, 1.0], [1.0, 2.0]])
    L, jitter = cholesky_with_jitter(K)
    assert jitter == 0.0 and np.allclose(L @ L.T, K)
    singular = np.ones((3, 3))
    L, jitter = cholesky_with_jitter(singular)
    assert jitter > 0 and np.allclose(L @ L.T, singular + jitter * np.eye(3))


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="lengthscales"):
        Hyperparameters.hamming(np.array([1.0, 0.0]), 1.0, 1e-6)
    with pytest.raises(ValueError, match="noise"):
        Hyperparameters.hamming(np.ones(2), 1.0, -1.0)
    h = Hyperparameters.hamming(np.ones(3), 1.0, 1e-6)
    with pytest.raises(ValueError, match="values"):
        ShapleyPosterior(h, np.zeros((2, 3), bool), np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        ShapleyPosterior(h, np.zeros((1, 3), bool), np.array([np.nan]))
    cand = ShapleyPosterior(h, np.ones((1, 3), bool), np.ones(1)).candidates(all_coalitions(3))
    cand.condition(2)
    with pytest.raises(ValueError, match="already"):
        cand.condition(2)
    with pytest.raises(IndexError):
        cand.condition(8)
    assert isinstance(cand, CandidatePosterior)


def test_hyperparameters_equality_and_copy() -> None:
    ls = np.array([0.5, 1.0])
    h = Hyperparameters.hamming(ls, 1.0, 1e-6)
    ls[0] = 9.0  # the stored lengthscales are a private copy
    assert h.lengthscales[0] == 0.5 and not h.lengthscales.flags.writeable
    assert h == Hyperparameters.hamming(np.array([0.5, 1.0]), 1.0, 1e-6)
    assert h != Hyperparameters.hamming(np.array([0.5, 1.0]), 1.0, 1e-3)
    assert hash(h) == hash(Hyperparameters.hamming(np.array([0.5, 1.0]), 1.0, 1e-6))


def test_zero_noise_duplicate_candidate_is_harmless() -> None:
    p = 4
    h = Hyperparameters.hamming(np.full(p, 0.7), 1.0, 0.0)
    W = np.vstack([np.eye(p, dtype=bool)[0], np.eye(p, dtype=bool)[0], np.ones(p, bool)])
    cand = ShapleyPosterior(h, np.zeros((0, p), bool), np.zeros(0)).candidates(W)
    cand.condition(0)
    assert cand.predictive_variance()[1] == pytest.approx(0.0, abs=1e-12)
    assert cand.condition(1) == pytest.approx(0.0, abs=1e-6)
    assert np.all(np.isfinite(cand.shapley_covariance))


def test_with_hyperparameters_reuses_kernel_parts() -> None:
    d = make_dense(6, 2, 1e-6)
    h = d.hyper
    post = ShapleyPosterior(h, d.Z[d.archive], d.y)
    for new in (
        Hyperparameters.hamming(h.lengthscales, h.outputscale, 1e-3, h.mean_constant),
        Hyperparameters.hamming(h.lengthscales, h.outputscale, h.noise, 0.7),
        Hyperparameters.hamming(h.lengthscales * 1.5, 0.8, 1e-4, 0.0),
    ):
        moved, fresh = post.with_hyperparameters(new), ShapleyPosterior(new, d.Z[d.archive], d.y)
        assert moved.hyper == new
        assert_close(moved.mean, fresh.mean)
        assert_close(moved.covariance, fresh.covariance)


def test_candidate_copy_is_independent() -> None:
    d = make_dense(5, 1, 1e-6)
    cand = ShapleyPosterior(d.hyper, d.Z[d.archive], d.y).candidates(d.Z[d.pool])
    before = cand.eig()
    branch = cand.copy()
    branch.greedy(3)
    np.testing.assert_array_equal(cand.eig(), before)
    assert cand.selected == [] and cand.available.all() and len(branch.selected) == 3


def test_jittered_archive_still_gives_a_posterior() -> None:
    """Zero noise and a repeated coalition make K singular: jitter is added and recorded."""
    p = 4
    h = Hyperparameters.hamming(np.full(p, 0.6), 1.0, 0.0)
    X = np.vstack([np.zeros(p, bool), np.ones(p, bool), np.eye(p, dtype=bool)[1], np.eye(p, dtype=bool)[1]])
    post = ShapleyPosterior(h, X, np.array([0.0, 2.0, 1.0, 1.0]))
    assert post.jitter > 0
    assert np.all(np.isfinite(post.mean)) and np.all(post.std >= 0)
    assert post.mean.sum() == pytest.approx(2.0, rel=1e-6)
