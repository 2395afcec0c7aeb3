"""The size kernel (docs/math.md §15): a smooth trend in the coalition size plus independent offsets
of the surrogate at the empty and the grand coalition, against dense 2^p references written from
the definition."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_surrogate_kernel as jump_kernel

from shapleig.games.coalitions import all_coalitions
from shapleig.games.indices import exact_index_values
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels import Hamming, HammingParams, SizeKernel, SizeParams
from shapleig.gp.numpy_fit import MapProblem, fit_map_numpy
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize

INDICES = ["SV", "BV", "k-SII", "STII", "FSII"]


def dense_operator(p: int, index: str) -> np.ndarray:
    """The index as a d x 2^p matrix (bit order), one unit game per column."""
    n = 1 << p
    cols = []
    for code in range(n):
        unit = np.zeros(n)
        unit[code] = 1.0
        cols.append(exact_index_values(unit, index))
    return np.array(cols).T


def with_size(lengthscales, outputscale, noise, mean, jumps=(0.8, 0.3), trend=(0.6, 0.4)) -> Hyperparameters:
    """The Hamming kernel plus the size kernel (jumps and trend) at these values."""
    spec = Hamming(ard=True) + SizeKernel(trend=True, jumps=True)
    return Hyperparameters(spec, (HammingParams(lengthscales, outputscale), SizeParams(*jumps, *trend)), noise, mean)


def problem(p: int, seed: int, jumps=(0.8, 0.3), trend=(0.6, 0.4)):
    rng = np.random.default_rng(seed)
    hyper = with_size(rng.uniform(0.1, 3.0, p), float(rng.uniform(0.5, 2.0)), 1e-6, float(rng.normal()), jumps, trend)
    Z = all_coalitions(p)  # bit order: row 0 is ∅, the last row N
    n = 1 << p
    archive = np.concatenate([[0, n - 1], rng.choice(np.arange(1, n - 1), 2 * p, replace=False)])
    y = 3.0 * rng.normal(size=archive.size) + 1.0
    return hyper, Z, archive, y


def dense_index_posterior(hyper, Z, archive, y, B, hold_out_empty=False):
    """Mean and covariance of B f given the archive, raw units, from dense matrices."""
    K = jump_kernel(Z, hyper)
    obs = archive[archive != 0] if hold_out_empty else archive
    yo = y[archive != 0] if hold_out_empty else y
    y_tilde, y_mean, y_scale = standardize(yo)
    c = hyper.mean_constant
    Ko = K[np.ix_(obs, obs)] + hyper.noise * np.eye(obs.size)
    mu = c + K[:, obs] @ np.linalg.solve(Ko, y_tilde - c)
    Sigma = K - K[:, obs] @ np.linalg.solve(Ko, K[obs, :])
    f_mean = y_mean + y_scale * mu
    if hold_out_empty:  # v(empty) is known exactly: its column enters with the observed value
        f_mean[0] = y[archive == 0][0]
        Sigma[0, :] = 0.0
        Sigma[:, 0] = 0.0
    return B @ f_mean, y_scale**2 * (B @ Sigma @ B.T)


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("p", [4, 6])
def test_posterior_with_jumps_matches_dense(index: str, p: int) -> None:
    hyper, Z, archive, y = problem(p, seed=p)
    op = IndexOperator(p, index)
    post = ShapleyPosterior(hyper, Z[archive], y, operator=op)
    mean, cov = dense_index_posterior(hyper, Z, archive, y, dense_operator(p, index))
    np.testing.assert_allclose(post.mean, mean, rtol=1e-9, atol=1e-11 * np.abs(mean).max())
    np.testing.assert_allclose(post.covariance, cov, rtol=1e-8, atol=1e-11 * np.abs(cov).max())
    # the prior covariance and the kernel columns themselves
    B = dense_operator(p, index)
    K = jump_kernel(Z, hyper)
    np.testing.assert_allclose(post.prior_covariance, B @ K @ B.T, rtol=1e-9, atol=1e-13)
    cols = hyper.index_columns(op, Z)
    np.testing.assert_allclose(cols, B @ K, rtol=1e-9, atol=1e-13)


def test_jumps_beside_a_held_out_empty_coalition_match_dense() -> None:
    p = 6
    hyper, Z, archive, y = problem(p, seed=11)
    post = ShapleyPosterior(hyper, Z[archive], y, operator=IndexOperator(p, "SV", hold_out_empty=True))
    mean, cov = dense_index_posterior(hyper, Z, archive, y, dense_operator(p, "SV"), hold_out_empty=True)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-9, atol=1e-11 * np.abs(mean).max())
    np.testing.assert_allclose(post.covariance, cov, rtol=1e-8, atol=1e-11 * np.abs(cov).max())


def test_jump_changes_the_posterior_only_through_the_extremes() -> None:
    """Sanity of the definition: with no extreme in the archive or the pool, the jumps are invisible."""
    p = 5
    hyper, Z, archive, y = problem(p, seed=3, trend=(0.0, 0.5))
    inner = archive[(archive != 0) & (archive != (1 << p) - 1)]
    plain = Hyperparameters.hamming(hyper.lengthscales, hyper.outputscale, hyper.noise, hyper.mean_constant)
    a = ShapleyPosterior(hyper, Z[inner], y[: inner.size])
    b = ShapleyPosterior(plain, Z[inner], y[: inner.size])
    # the jumps still enter the prior of phi (phi weighs v(empty) and v(N)) ...
    assert not np.allclose(a.covariance, b.covariance)
    # ... but the predictions at the interior coalitions are the plain kernel's
    ma, va = a.predict(Z[1:-1])
    mb, vb = b.predict(Z[1:-1])
    np.testing.assert_allclose(ma, mb, rtol=1e-12)
    np.testing.assert_allclose(va, vb, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("extremes_observed", [True, False])
def test_eig_and_greedy_updates_with_jumps_match_dense(extremes_observed: bool) -> None:
    p = 6
    hyper, Z, archive, y = problem(p, seed=5)
    # without the extremes in the archive they are candidates, whose variance carries the jumps
    archive = archive[: p + 1] if extremes_observed else archive[2 : p + 3]
    n = 1 << p
    A = dense_operator(p, "SV")
    K = jump_kernel(Z, hyper)
    pool = np.setdiff1d(np.arange(n), archive)
    cand = ShapleyPosterior(hyper, Z[archive], y[: archive.size]).candidates(Z[pool])
    observed = archive.copy()
    for _ in range(8):
        Sigma = K - K[:, observed] @ np.linalg.solve(K[np.ix_(observed, observed)] + hyper.noise * np.eye(observed.size),
                                                     K[observed, :])
        before = A @ Sigma @ A.T
        eig = cand.eig()
        dense = np.full(pool.size, -np.inf)
        for j in np.flatnonzero(cand.available):
            u = A @ Sigma[:, pool[j]]
            after = before - np.outer(u, u) / (Sigma[pool[j], pool[j]] + hyper.noise)
            dense[j] = np.linalg.slogdet(before)[1] - np.linalg.slogdet(after)[1]
        ok = cand.available
        np.testing.assert_allclose(eig[ok], dense[ok], rtol=0, atol=1e-7 * max(1.0, dense[ok].max()))
        j = int(np.argmax(eig))
        cand.condition(j)
        observed = np.append(observed, pool[j])


def test_extend_with_jumps_equals_a_fresh_posterior() -> None:
    p = 7
    hyper, Z, archive, y = problem(p, seed=9)
    first = ShapleyPosterior(hyper, Z[archive[:5]], y[:5])
    grown = first.extend(Z[archive[5:]], y[5:])
    fresh = ShapleyPosterior(hyper, Z[archive], y)
    np.testing.assert_allclose(grown.mean, fresh.mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grown.covariance, fresh.covariance, rtol=1e-8, atol=1e-12)


def _archive_with_outlying_empty(p: int, seed: int, empty_value: float):
    rng = np.random.default_rng(seed)
    Z = all_coalitions(p)
    idx = np.concatenate([[0, (1 << p) - 1], rng.choice(np.arange(1, (1 << p) - 1), 4 * p, replace=False)])
    X = Z[idx]
    y = np.log1p(X @ rng.uniform(0.5, 2.0, p))
    y[0] = empty_value
    return X, y


@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("jumps, trend", [(True, False), (False, True), (True, True)])
def test_size_kernel_gradient_matches_finite_differences(ard: bool, jumps: bool, trend: bool) -> None:
    X, y = _archive_with_outlying_empty(6, 0, -3.0)
    y_std, _, _ = standardize(y)
    spec = Hamming(ard=ard) + SizeKernel(trend=trend, jumps=jumps)
    prob = MapProblem.build(spec, X, y_std, 1e-4)
    assert prob.n_params == 2 + (6 if ard else 1) + 2 * jumps + 2 * trend == 1 + spec.n_params(X)
    theta = np.random.default_rng(1).normal(scale=0.5, size=prob.n_params)
    _, g = prob.objective(theta)
    h = 1e-6
    fd = np.array([(prob.objective(theta + h * e, grad=False)[0] - prob.objective(theta - h * e, grad=False)[0])
                   / (2 * h) for e in np.eye(prob.n_params)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-9)


def test_fitted_jump_separates_an_outlying_empty_coalition() -> None:
    """An empty coalition far from the rest gets a large jump; at an interior optimum its standardised
    leave-one-out residual is +-1 (d/dj log N = 0 means alpha_0^2 = [K^-1]_00)."""
    X, y = _archive_with_outlying_empty(7, 2, -6.0)
    y_std, _, _ = standardize(y)
    hyper, fit = fit_map_numpy(Hamming(ard=False) + SizeKernel(trend=False, jumps=True), X, y_std, noise=1e-6, seed=0)
    assert fit.success and hyper.part(SizeParams).empty_jump > 1.0
    post = ShapleyPosterior(hyper, X, y)
    z = post.loo_residuals()
    assert abs(z[0]) == pytest.approx(1.0, abs=2e-3)
    # the plain kernel explains the outlier by a much shorter lengthscale
    plain, _ = fit_map_numpy(Hamming(ard=False), X, y_std, noise=1e-6, seed=0)
    assert plain.lengthscales[0] < 0.5 * hyper.lengthscales[0]


def test_smooth_game_keeps_a_small_jump() -> None:
    X, _ = _archive_with_outlying_empty(7, 2, 0.0)
    y = X @ np.random.default_rng(4).uniform(0.5, 2.0, 7)  # additive: v(empty) = 0 lies on the rest's plane
    y_std, _, _ = standardize(y)
    hyper, fit = fit_map_numpy(Hamming(ard=False) + SizeKernel(trend=False, jumps=True), X, y_std, noise=1e-6, seed=0)
    assert fit.success and hyper.part(SizeParams).empty_jump < 0.05


def test_size_trend_explains_a_symmetric_game() -> None:
    """v(S) = 3 sqrt(|S|): the trend takes the variance, and the phi estimate is the equal split."""
    p = 8
    rng = np.random.default_rng(0)
    Z = all_coalitions(p)
    idx = np.concatenate([[0, (1 << p) - 1], rng.choice(np.arange(1, (1 << p) - 1), 2 * p, replace=False)])
    X = Z[idx]
    y = 3.0 * np.sqrt(X.sum(axis=1)) + 0.01 * (X @ rng.normal(size=p))
    y_std, _, _ = standardize(y)
    hyper, fit = fit_map_numpy(Hamming(ard=False) + SizeKernel(trend=True, jumps=True), X, y_std, noise=1e-6, seed=0)
    assert fit.success and hyper.part(SizeParams).variance > 0.5
    est = ShapleyPosterior(hyper, X, y).mean
    np.testing.assert_allclose(est, 3.0 * np.sqrt(p) / p, atol=0.05)


@pytest.mark.torch  # fit_engine="gpytorch" needs the extra shapleig[botorch]
def test_size_kernel_needs_the_numpy_engine() -> None:
    from shapleig.design.options import LoopOptions
    from shapleig.gp.fitting import fit_hyperparameters

    for name in ("jumps", "size_trend"):
        with pytest.raises(ValueError, match="numpy"):
            LoopOptions(**{name: True}, fit_engine="gpytorch")
    X, y = _archive_with_outlying_empty(6, 0, 1.0)
    with pytest.raises(ValueError, match="numpy"):
        fit_hyperparameters(X, y, Hamming(ard=True) + SizeKernel(), GPOptions(fit_engine="gpytorch", size_trend=False), seed=0)
    with pytest.raises(ValueError, match="jump"):
        with_size(np.ones(3), 1.0, 1e-6, 0.0, (-1.0, 0.0), (0.6, 0.4))
    with pytest.raises(ValueError, match="size kernel"):
        with_size(np.ones(3), 1.0, 1e-6, 0.0, (0.0, 0.0), (1.0, 0.0))
    with pytest.raises(ValueError, match="without the trend"):  # a part's params must fit its spec
        Hyperparameters(Hamming(ard=True) + SizeKernel(trend=False, jumps=True), (HammingParams(np.ones(3), 1.0),
                        SizeParams(0.5, 0.5, 0.3)), 1e-6)
