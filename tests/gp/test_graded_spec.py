"""The graded kernel spec (shapleig.gp.kernels.graded): dense Walsh-basis references, g = 1 against the
shared Hamming kernel, the MAP gradient (with the learned noise) against central differences.

The references are dense and independent of shapleig.gp.walsh: the parity matrix
``H[S, U] = (-1)^{|S cap U|}`` over all 2^p coalitions, prior variances ``kappa g_|U| rho^|U|``
(g = 1 above order K), ``K = H diag(lambda) H^T``, and the index operators of
:func:`shapleig.games.indices.dense_index_operator`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shapleig.games.coalitions import all_coalitions
from shapleig.games.indices import dense_index_operator
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels import Hamming, HammingParams, SizeKernel, SizeParams, surrogate_kernels
from shapleig.gp.kernels.graded import Graded, GradedParams
from shapleig.gp.kernels.noise import NOISE_FLOOR
from shapleig.gp.numpy_fit import MapProblem, fit_map_numpy
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior

P = 6
OPERATORS = [("SV", False), ("BV", True), ("BV", False), ("k-SII", False), ("STII", False), ("FSII", False)]


def dense_graded(p: int, ls: float, s: float, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(all coalitions, K over them) from the Walsh-basis definition."""
    Z = all_coalitions(p)
    Zi = Z.astype(np.int64)
    H = np.where((Zi @ Zi.T) % 2 == 1, -1.0, 1.0)
    rho = math.tanh(1.0 / (2.0 * p * ls))
    kappa = s / (1.0 + rho) ** p
    order = Zi.sum(axis=1)
    gk = np.ones(p + 1)
    gk[1:len(g) + 1] = g
    lam = kappa * gk[order] * rho ** order
    return Z, (H * lam) @ H.T


def operator_matrix(p: int, index: str, hold_out: bool) -> np.ndarray:
    B = dense_index_operator(p, index, None).copy()
    if hold_out:
        B[:, 0] = 0.0  # the empty coalition is bit code 0
    return B


# the last two have one or two order factors exactly 1 (and are not the Hamming kernel)
G_VALUES = [[2.5, 0.3, 4.0], [1.0, 0.3, 4.0], [2.5, 1.0, 1.0]]


@pytest.mark.parametrize("g", G_VALUES, ids=["no-g-one", "g1-one", "g2-g3-one"])
@pytest.mark.parametrize("index,hold_out", OPERATORS)
def test_graded_products_equal_the_walsh_definition(index, hold_out, g):
    g = np.array(g)
    params = GradedParams(np.full(P, 0.7), 1.4, g)
    spec = Graded()
    Z, K = dense_graded(P, 0.7, 1.4, g)
    scale = np.abs(K).max()
    assert np.allclose(spec.matrix(params, Z, Z), K, rtol=0, atol=1e-10 * scale)
    assert np.allclose(spec.diagonal(params, Z[:5]), np.diag(K)[:5], rtol=1e-10, atol=0)
    assert not np.isclose(np.diag(K)[0], 1.4)  # the prior variance is not the outputscale when g != 1
    op = IndexOperator(P, index, hold_out_empty=hold_out)
    B = operator_matrix(P, index, hold_out)
    rows = np.random.default_rng(3).choice(len(Z), 12, replace=False)
    cols = spec.index_columns(params, op, Z[rows])
    ref_cols = B @ K[:, rows]
    assert np.allclose(cols, ref_cols, rtol=0, atol=1e-10 * np.abs(ref_cols).max())
    cov = spec.index_covariance(params, op)
    ref_cov = B @ K @ B.T
    assert np.allclose(cov, ref_cov, rtol=0, atol=1e-10 * np.abs(ref_cov).max())


@pytest.mark.parametrize("index,hold_out", OPERATORS)
def test_g_one_is_the_shared_hamming_kernel_bit_for_bit(index, hold_out):
    ls, s = np.full(P, 0.9), 0.8
    graded, hamming = GradedParams(ls, s, np.ones(3)), HammingParams(ls, s)
    Z = all_coalitions(P)[::3]
    op = IndexOperator(P, index, hold_out_empty=hold_out)
    shared = Hamming(ard=False)
    assert np.array_equal(Graded().matrix(graded, Z, Z), shared.matrix(hamming, Z, Z))
    assert np.array_equal(Graded().diagonal(graded, Z), shared.diagonal(hamming, Z))
    assert np.array_equal(Graded().index_columns(graded, op, Z), shared.index_columns(hamming, op, Z))
    assert np.array_equal(Graded().index_covariance(graded, op), shared.index_covariance(hamming, op))


def test_g_one_reproduces_todays_posteriors():
    rng = np.random.default_rng(0)
    X = rng.random((20, P)) < 0.5
    y = X @ rng.normal(size=P) + 0.3 * X[:, 0] * X[:, 1]
    ls = np.full(P, 0.6)
    for size in (None, SizeParams(variance=0.4, lengthscale=0.5)):
        if size is None:
            today = Hyperparameters(Hamming(ard=False), HammingParams(ls, 1.1), 1e-6, 0.2)
            graded = Hyperparameters(Graded(), GradedParams(ls, 1.1, np.ones(3)), 1e-6, 0.2)
        else:
            today = Hyperparameters(Hamming(ard=False) + SizeKernel(), (HammingParams(ls, 1.1), size), 1e-6, 0.2)
            graded = Hyperparameters(Graded() + SizeKernel(), (GradedParams(ls, 1.1, np.ones(3)), size), 1e-6, 0.2)
        for op in (None, IndexOperator(P, "BV", hold_out_empty=True), IndexOperator(P, "k-SII")):
            Xo = np.vstack([np.zeros((1, P), dtype=bool), X]) if op is not None else X
            yo = np.concatenate([[0.0], y]) if op is not None else y
            a, b = ShapleyPosterior(today, Xo, yo, op), ShapleyPosterior(graded, Xo, yo, op)
            assert np.array_equal(a.mean, b.mean)
            assert np.array_equal(a.covariance, b.covariance)


def central_difference(problem: MapProblem, theta: np.ndarray, h: float = 1e-5) -> np.ndarray:
    out = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        out[i] = (problem.objective(theta + e, grad=False)[0] - problem.objective(theta - e, grad=False)[0]) / (2 * h)
    return out


@pytest.mark.parametrize("with_size", [False, True])
def test_map_gradient_with_learned_noise(with_size):
    rng = np.random.default_rng(1)
    X = rng.random((24, P)) < 0.5
    y = rng.normal(size=24)
    spec = Graded() + SizeKernel() if with_size else Graded()
    problem = MapProblem.build(spec, X, y, 1e-6)
    assert problem.learn_noise and problem.n_params == 1 + 5 + 1 + 2 * with_size
    theta = problem.pack(0.1, spec.initial_params(P), noise_start=1e-3)
    theta[2:6] += rng.normal(scale=0.3, size=4)  # lengthscale and log g off the prior's centre
    value, grad = problem.objective(theta)
    assert np.allclose(grad, central_difference(problem, theta), rtol=1e-4, atol=1e-6)


def test_fixed_noise_kernels_keep_their_coordinates():
    X = np.random.default_rng(2).random((10, P)) < 0.5
    problem = MapProblem.build(Hamming(ard=False), X, np.arange(10.0), 1e-6)
    assert not problem.learn_noise and problem.n_params == 3
    assert problem.hyperparameters(problem.pack(0.0, Hamming(ard=False).initial_params(P))).noise == 1e-6


def test_learned_noise_follows_the_game():
    rng = np.random.default_rng(4)
    X = rng.random((60, P)) < 0.5
    w = rng.normal(size=P)
    clean = X @ w
    noisy = clean + 0.3 * rng.normal(size=60)
    fits = {}
    for name, y in (("clean", clean), ("noisy", noisy)):
        y_std = (y - y.mean()) / y.std(ddof=1)
        hyper, fit = fit_map_numpy(Graded(), X, y_std, noise=1e-6, seed=0)
        assert fit.success
        fits[name] = hyper
    # an additive game is exact under a free order-1 variance: the noise stays near its prior centre
    assert NOISE_FLOOR <= fits["clean"].noise < 1e-4
    # 0.3 noise on a unit-variance-ish additive game: a standardised noise variance of order 0.05
    assert 0.01 < fits["noisy"].noise < 0.3
    # order 1 carries the additive game: its variance factor dominates the pairs'
    g = fits["clean"].params.g
    assert g[0] > g[1]


def test_graded_mode_registered_with_and_without_the_size_trend():
    names = [k.name for k in surrogate_kernels("graded", size_trend="both", jumps=False)]
    assert names == ["graded", "graded+size"]
    assert GPOptions(surrogate="graded").kernels[0].learns_noise
    assert not GPOptions().kernels[0].learns_noise


def test_bad_params_are_refused_by_name():
    with pytest.raises(ValueError, match="g must hold"):
        GradedParams(np.ones(3), 1.0, [1.0, -1.0])
    for count in (0, 4):  # 1..3 order factors
        with pytest.raises(ValueError, match="g must hold"):
            GradedParams(np.ones(3), 1.0, np.ones(count))
    for s in (0.0, -1.0, math.inf):
        with pytest.raises(ValueError, match="outputscale must be positive and finite"):
            GradedParams(np.ones(3), s, np.ones(3))
    for ls in (np.ones(0), np.array([1.0, 0.0]), np.ones((2, 2))):
        with pytest.raises(ValueError, match="lengthscales must be a finite positive vector"):
            GradedParams(ls, 1.0, np.ones(3))
    with pytest.raises(ValueError, match="one shared lengthscale"):
        Graded().check_params(GradedParams(np.array([1.0, 2.0, 1.0]), 1.0, np.ones(3)))
    for orders in (4, 0, True, 2.5, "2"):  # an integer in 1..3
        with pytest.raises(ValueError, match="orders must be an integer in 1..3"):
            Graded(orders=orders)
    with pytest.raises(ValueError, match="needs 2 g values"):
        Graded(orders=2).check_params(GradedParams(np.ones(3), 1.0, np.ones(3)))


def test_fit_terms_matrix_is_the_spec_matrix():
    rng = np.random.default_rng(5)
    X = rng.random((15, P)) < 0.5
    terms = Graded().fit_terms(X)
    params = GradedParams(np.full(P, 0.55), 0.9, [3.0, 0.2, 1.7])
    K, _, _ = terms.evaluate(terms.pack(params))
    _, Kd = dense_graded(P, 0.55, 0.9, np.array([3.0, 0.2, 1.7]))
    codes = X.astype(np.int64) @ (1 << np.arange(P))  # all_coalitions orders by bit code
    assert np.allclose(K, Kd[np.ix_(codes, codes)], rtol=0, atol=1e-12)


def test_graded_fit_is_at_least_as_good_as_its_shared_twin():
    from shapleig.gp.kernel_choice import RefitPlan, fit_kernels
    from shapleig.gp.posterior import standardize

    rng = np.random.default_rng(6)
    X = rng.random((30, 10)) < 0.5
    y = np.sin(3.0 * X @ rng.normal(size=10)) + X.sum(axis=1) ** 2 / 10.0
    fits = {k.kernel: k for k in fit_kernels(X, y, GPOptions(surrogate="graded-auto"), seed=0,
                                             plan=RefitPlan.cold(), previous=None)}
    for twin, graded in (("shared", "graded"), ("shared+size", "graded+size")):
        shared_hyper = fits[twin].hyper
        spec = fits[graded].hyper.kernel
        parts = shared_hyper.params if isinstance(shared_hyper.params, tuple) else (shared_hyper.params,)
        params = tuple(GradedParams(p.lengthscales, p.outputscale, np.ones(3)) if isinstance(p, HammingParams) else p
                       for p in parts)
        problem = MapProblem.build(spec, X, standardize(y)[0], 1e-6)
        at_twin = problem.objective(problem.pack(shared_hyper.mean_constant, params if len(params) > 1 else params[0],
                                                 shared_hyper.noise), grad=False)[0]
        assert fits[graded].fit.neg_mll <= at_twin + 1e-9


def test_twin_start_of_the_graded_kernel_is_the_shared_twin_with_g_one():
    from shapleig.gp.fit_result import FitResult
    from shapleig.gp.kernel_choice import twin_start

    size = SizeParams(variance=0.3, lengthscale=0.4)
    shared = Hyperparameters(Hamming(ard=False) + SizeKernel(), (HammingParams(np.full(P, 0.3), 0.7), size), 1e-6, 0.5)
    fit = FitResult(hyper=shared, attempts=1, seconds=0.0, success=True, noise=1e-6, noise_convention="standardized",
                    y_mean=0.0, y_scale=1.0, neg_mll=0.0, seed=0)
    twin = (Hamming(ard=False) + SizeKernel()).renamed("shared+size")
    spec = (Graded() + SizeKernel()).renamed("graded+size")
    assert spec.twin == "shared+size" and twin.twin is None
    start = twin_start(spec, [twin], [fit])
    assert start is not None and start.kernel == spec and start.mean_constant == 0.5
    graded, kept = start.params
    assert np.array_equal(graded.lengthscales, np.full(P, 0.3)) and graded.outputscale == 0.7
    assert np.array_equal(graded.g, np.ones(3)) and kept == size
    # the same objective as the shared kernel's at its MAP: g = 1 is the shared kernel
    X = np.random.default_rng(8).random((12, P)) < 0.5
    y = np.random.default_rng(9).normal(size=12) * 0.1 + X.sum(axis=1) * 0.3
    a, b = MapProblem.build(twin, X, y, 1e-6), MapProblem.build(spec, X, y, 1e-6)
    lik_a = a.objective(a.pack(0.5, shared.params), grad=False)[0]
    lik_b = b.objective(b.pack(0.5, start.params, 1e-6), grad=False)[0]
    # they differ by the graded part's extra priors only: log g = 0 (N(0, 2^2)) and the noise
    # coordinate log(1e-6 - floor) under N(log 1e-6, 3^2)
    z = (math.log(1e-6 - NOISE_FLOOR) - math.log(1e-6)) / 3.0
    extra = 3 * (math.log(2.0) + 0.5 * math.log(2 * math.pi)) + math.log(3.0) + 0.5 * math.log(2 * math.pi) + 0.5 * z * z
    assert (lik_b - lik_a) * 12 == pytest.approx(extra, rel=0, abs=1e-7)
    assert twin_start(twin, [twin], [fit]) is None
    assert twin_start(spec, [], []) is None
    # a twin whose params do not map (no Hamming params where the graded part is) gives no start
    odd = Hyperparameters(spec, (GradedParams(np.full(P, 0.3), 0.7, np.full(3, 2.0)), size), 1e-6, 0.5)
    odd_fit = FitResult(hyper=odd, attempts=1, seconds=0.0, success=True, noise=1e-6, noise_convention="standardized",
                        y_mean=0.0, y_scale=1.0, neg_mll=0.0, seed=0)
    assert twin_start(spec, [twin], [odd_fit]) is None


def test_an_outputscale_that_underflows_gives_a_floored_kernel_not_an_error():
    X = np.random.default_rng(10).random((8, P)) < 0.5
    terms = Graded().fit_terms(X)
    raw = terms.pack(GradedParams(np.full(P, 0.5), 1.0, np.ones(3)))
    raw[0] = -800.0  # softplus(-800) = 0 in float64
    K, _, state = terms.evaluate(raw)
    # floored at MIN_OUTPUTSCALE (1e-12): a kernel of that size, finite, and one that unpacks
    assert np.all(np.isfinite(K)) and 0 < np.abs(K).max() <= 1e-11
    assert np.all(np.isfinite(terms.gradient(raw, np.ones((8, 8)), state)))
    assert terms.unpack(raw).outputscale == 1e-12


def test_the_bic_counts_every_coordinate_the_fit_learns():
    """BIC = -t * neg_mll - d/2 log t with d counted by hand: the mean constant, the outputscale, the
    shared lengthscale, K order factors and the learned noise."""
    from shapleig.gp.kernel_choice import RefitPlan, fit_kernels

    rng = np.random.default_rng(11)
    X = rng.random((24, P)) < 0.5
    y = X @ rng.normal(size=P) + 0.3 * X[:, 0] * X[:, 1]
    (fit,) = fit_kernels(X, y, GPOptions(surrogate="graded", size_trend=False), seed=0, plan=RefitPlan.cold(),
                         previous=None)
    assert fit.kernel == "graded" and fit.fit.success
    d = 1 + 1 + 1 + 3 + 1
    assert fit.log_evidence == pytest.approx(-24 * fit.fit.neg_mll - 0.5 * d * math.log(24), rel=0, abs=1e-9)
    # the spec's count is the fit's coordinates (less the mean constant), with or without the noise
    for spec, by_hand in ((Graded(), 2 + 3 + 1), (Graded(orders=2), 2 + 2 + 1), (Graded(learn_noise=False), 2 + 3)):
        assert spec.n_params(X) == by_hand
        assert MapProblem.build(spec, X, y, 1e-6).n_params == 1 + by_hand


def test_params_are_equal_exactly_when_every_value_is():
    a = GradedParams(np.full(P, 0.5), 1.2, [2.0, 0.5, 1.0])
    assert a == GradedParams(np.full(P, 0.5), 1.2, [2.0, 0.5, 1.0]) and hash(a) == hash(GradedParams(
        np.full(P, 0.5), 1.2, [2.0, 0.5, 1.0]))
    for other in (GradedParams(np.full(P, 0.6), 1.2, [2.0, 0.5, 1.0]), GradedParams(np.full(P, 0.5), 1.3, [2.0, 0.5, 1.0]),
                  GradedParams(np.full(P, 0.5), 1.2, [2.0, 0.5, 1.5])):
        assert a != other and other != a


@pytest.mark.parametrize("orders", [1, 2])
def test_fewer_free_orders_equal_the_walsh_definition(orders):
    """K = 1 or 2 free factors (g = 1 beyond) against the dense Walsh-basis reference."""
    g = np.array([2.5, 0.3][:orders])
    params, spec = GradedParams(np.full(P, 0.7), 1.4, g), Graded(orders=orders)
    assert spec.check_params(params) is params
    Z, K = dense_graded(P, 0.7, 1.4, g)
    assert np.allclose(spec.matrix(params, Z, Z), K, rtol=0, atol=1e-10 * np.abs(K).max())
    op = IndexOperator(P, "SV")
    B = operator_matrix(P, "SV", False)
    ref_cov = B @ K @ B.T
    assert np.allclose(spec.index_covariance(params, op), ref_cov, rtol=0, atol=1e-10 * np.abs(ref_cov).max())
    assert spec.n_params(Z) == 2 + orders + 1


def test_a_retry_redraws_the_lengthscale_from_its_prior_and_starts_g_at_one():
    """The lengthscale from LogNormal(sqrt2 + ln(p)/2, sqrt3) (the prior of shapleig.gp.priors) with the generator's
    next normal; the outputscale kept; the order factors back at g = 1."""
    X = np.random.default_rng(12).random((10, P)) < 0.5
    terms = Graded().fit_terms(X)
    raw = terms.pack(GradedParams(np.full(P, 0.5), 1.3, [2.0, 0.5, 3.0]))
    out = terms.resample(raw, np.random.default_rng(4))
    z = np.random.default_rng(4).standard_normal()
    expected = math.exp(math.sqrt(2.0) + 0.5 * math.log(P) + math.sqrt(3.0) * z)
    params = terms.unpack(out)
    assert params.lengthscales == pytest.approx(np.full(P, expected), rel=1e-9)
    assert params.outputscale == pytest.approx(1.3, rel=1e-12) and np.array_equal(params.g, np.ones(3))
    assert np.array_equal(raw, terms.pack(GradedParams(np.full(P, 0.5), 1.3, [2.0, 0.5, 3.0])))  # not changed in place


def test_one_player_equals_the_walsh_definition():
    params = GradedParams(np.full(1, 0.7), 1.4, [2.5])
    assert Graded(orders=1).check_params(params) is params
    Z, K = dense_graded(1, 0.7, 1.4, np.array([2.5]))
    np.testing.assert_allclose(Graded(orders=1).matrix(params, Z, Z), K, rtol=1e-12)
