"""Hyperparameters integrated at the read-out (shapleig.gp.integrate) and the graded surrogate in the loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shapleig import FunctionGame, exact_shapley
from shapleig.design.estimators import ShaplEIG
from shapleig.gp.integrate import hyperparameter_draws
from shapleig.gp.kernels.graded import Graded, GradedParams
from shapleig.gp.mixture import build_mixture
from shapleig.gp.numpy_fit import MapProblem
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize

P = 6


def _archive(seed: int = 0, t: int = 20) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((t, P)) < 0.5
    w = rng.normal(size=P)
    return X, X @ w + 0.4 * X[:, 0] * X[:, 1] - 0.3 * X[:, 2] * X[:, 3] * X[:, 4]


def _hyper() -> Hyperparameters:
    return Hyperparameters(Graded(), GradedParams(np.full(P, 0.5), 1.0, [2.0, 0.5, 1.0]), 1e-4, 0.1)


def test_draws_are_weighted_by_target_over_proposal():
    X, y = _archive()
    h = _hyper()
    draws = hyperparameter_draws(X, y, h, 12, np.random.default_rng(3))
    w = np.array([wi for wi, _ in draws])
    assert draws[0][1] == h and w.sum() == pytest.approx(1.0) and np.all(w > 0)
    assert len(draws) > 2 and draws[1][1] != h
    # log w_i = log p(y, theta_i) - log q(theta_i) - log Z, with p the MAP objective's density (computed
    # here from a fresh problem) and q the Gaussian proposal centred on the MAP: log w - log p is
    # then -log q + const, smallest at the MAP (the proposal's mode) and larger at every draw
    problem = MapProblem.build(h.kernel, X, standardize(y)[0], h.noise)
    t = X.shape[0]
    log_p = np.array([-t * problem.objective(problem.pack(hh.mean_constant, hh.params, hh.noise), grad=False)[0]
                      for _, hh in draws])
    minus_log_q = np.log(w) - log_p
    assert np.all(minus_log_q[1:] > minus_log_q[0] + 1e-6)


def test_no_draws_is_the_map_alone_and_draws_are_seeded():
    X, y = _archive()
    h = _hyper()
    assert hyperparameter_draws(X, y, h, 0, np.random.default_rng(0)) == [(1.0, h)]
    a = hyperparameter_draws(X, y, h, 5, np.random.default_rng(7))
    b = hyperparameter_draws(X, y, h, 5, np.random.default_rng(7))
    assert [(w, hh) for w, hh in a] == [(w, hh) for w, hh in b]


def test_mixture_of_draws_keeps_the_map_mean_and_widens_about_it():
    X, y = _archive()
    h = _hyper()
    draws = hyperparameter_draws(X, y, h, 6, np.random.default_rng(1))
    kernels = [("graded", draws[0][0], draws[0][1])] + [(f"graded~{i}", w, hh) for i, (w, hh) in
                                                         enumerate(draws[1:], 1)]
    mix = build_mixture(kernels, X, y, calibrate=False)
    posts = [ShapleyPosterior(hh, X, y) for _, hh in draws]
    w = np.array([wi for wi, _ in draws])
    # the estimate stays the MAP's; the covariance is the draws' second moment about it
    mu = posts[0].mean
    cov = sum(wi * (p.covariance + np.outer(p.mean - mu, p.mean - mu)) for wi, p in zip(w, posts))
    assert np.allclose(mix.mean, mu, rtol=1e-10, atol=1e-12)
    assert np.allclose(mix.covariance, cov, rtol=1e-8, atol=1e-14)
    assert mix.primary.name == "graded"
    mixed = sum(wi * p.mean for wi, p in zip(w, posts))
    assert not np.allclose(mixed, mu, rtol=0, atol=1e-12)  # the draws do move the plain mixture mean
    assert set(mix.weights) == {"graded"} and mix.weights["graded"] == pytest.approx(1.0)


def test_options_resolve_draws():
    assert GPOptions().draws == 0
    assert GPOptions(surrogate="graded").draws == 16
    assert GPOptions(surrogate="graded-ard", integrate=0).draws == 0
    with pytest.raises(ValueError, match="integrate"):
        GPOptions(integrate=-1)


def test_graded_surrogate_in_the_loop_exact_on_an_additive_plus_pairwise_game():
    rng = np.random.default_rng(2)
    w, q = rng.normal(size=8), np.triu(rng.normal(size=(8, 8)), 1)

    def fn(Z: np.ndarray) -> np.ndarray:
        Zf = np.asarray(Z, dtype=float)
        return Zf @ w + np.einsum("ai,ij,aj->a", Zf, q, Zf)

    game = FunctionGame(fn, 8)
    exact = exact_shapley(game)
    est = ShaplEIG(surrogate="graded").estimate(game, 32, seed=0)
    assert set(est.info["kernel_weights"]) <= {"graded", "graded+size"}
    # the additive and pairwise parts carry the game: free order variances make it exact at 4p
    assert math.sqrt(np.mean((est.values - exact) ** 2)) < 1e-5 * np.std(exact)
    assert np.all(np.isfinite(est.std))


def test_mixture_mean_with_draws_weighs_each_kernel_map_by_the_kernel_weight():
    X, y = _archive()
    h1 = _hyper()
    h2 = Hyperparameters(Graded(), GradedParams(np.full(P, 0.9), 0.7, [1.0, 3.0, 0.5]), 1e-4, 0.0)
    d1 = hyperparameter_draws(X, y, h1, 4, np.random.default_rng(1))
    d2 = hyperparameter_draws(X, y, h2, 4, np.random.default_rng(2))
    kernels = []
    for name, w_k, draws in (("a", 0.3, d1), ("b", 0.7, d2)):
        kernels.append((name, w_k * draws[0][0], draws[0][1]))
        kernels += [(f"{name}~{i}", w_k * w, hh) for i, (w, hh) in enumerate(draws[1:], 1)]
    mix = build_mixture(kernels, X, y, calibrate=False)
    expected = 0.3 * ShapleyPosterior(h1, X, y).mean + 0.7 * ShapleyPosterior(h2, X, y).mean
    assert np.allclose(mix.mean, expected, rtol=1e-10, atol=1e-12)
    assert mix.weights == pytest.approx({"a": 0.3, "b": 0.7})



def _dense_hessian(problem: MapProblem, theta: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """The Hessian of ``t objective`` by second differences of its value (no gradient)."""
    t, n = problem.X.shape[0], theta.shape[0]

    def f(d: np.ndarray) -> float:
        return t * problem.objective(theta + d, grad=False)[0]

    E = np.eye(n) * h
    H = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            H[i, j] = H[j, i] = (f(E[i] + E[j]) - f(E[i] - E[j]) - f(E[j] - E[i]) + f(-E[i] - E[j])) / (4 * h * h)
    return H


def test_each_weight_is_the_target_over_the_laplace_proposal_by_dense_reference():
    """w_i / w_0 = [p(theta_i) / p(theta*)] / [q(theta_i) / q(theta*)] with p = exp(-t objective) and
    q = N(theta*, 1.5^2 H^-1), H the Hessian of t objective (second differences of the value here,
    eigenvalues raised to 1/9): the tempering by t, the proposal's width and its centre all count."""
    X, y = _archive()
    h = _hyper()
    draws = hyperparameter_draws(X, y, h, 10, np.random.default_rng(4))
    problem = MapProblem.build(h.kernel, X, standardize(y)[0], h.noise)
    t = X.shape[0]
    thetas = np.array([problem.pack(hh.mean_constant, hh.params, hh.noise) for _, hh in draws])
    theta0 = thetas[0]
    vals, vecs = np.linalg.eigh(_dense_hessian(problem, theta0))
    precision = (vecs * np.maximum(vals, 1.0 / 9.0)) @ vecs.T / 1.5**2
    delta = thetas - theta0
    log_q = -0.5 * np.einsum("ij,jk,ik->i", delta, precision, delta)
    log_p = np.array([-t * problem.objective(th, grad=False)[0] for th in thetas])
    w = np.array([wi for wi, _ in draws])
    assert len(draws) > 6 and np.all(np.abs(delta[1:]).max(axis=1) > 0.1)  # draws kept, none at the MAP
    expected = (log_p - log_p[0]) - (log_q - log_q[0])
    np.testing.assert_allclose(np.log(w / w[0]), expected, rtol=0, atol=1e-4)
    assert np.ptp(expected) > 1.0  # the weights are far from flat: the check has something to see


def test_integrated_kernels_split_each_kernel_weight_among_its_map_and_draws():
    from shapleig.gp.fit_result import FitResult
    from shapleig.gp.integrate import integrated_kernels
    from shapleig.gp.kernel_choice import KernelFit

    X, y = _archive()
    hypers = {"a": _hyper(), "b": Hyperparameters(Graded(), GradedParams(np.full(P, 0.9), 0.7, [1.0, 3.0, 0.5]),
                                                  1e-4, 0.0)}
    fits = [KernelFit(name, FitResult(hyper=hh, attempts=1, seconds=0.0, success=True, noise=1e-4,
                                      noise_convention="standardized", y_mean=0.0, y_scale=1.0, neg_mll=0.0, seed=0),
                      0.0, weight) for (name, hh), weight in zip(hypers.items(), (0.3, 0.7))]
    out = integrated_kernels(X, y, fits, 5, seed=2)
    assert sum(w for _, w, _ in out) == pytest.approx(1.0, abs=1e-12)
    for name, weight in (("a", 0.3), ("b", 0.7)):
        mine = [(n, w, hh) for n, w, hh in out if n == name or n.startswith(name + "~")]
        assert mine[0][0] == name and mine[0][2] == hypers[name] and len(mine) > 2  # the MAP first, then draws
        assert sum(w for _, w, _ in mine) == pytest.approx(weight, abs=1e-12)
        assert [n for n, _, _ in mine] == [name] + [f"{name}~{j}" for j in range(1, len(mine))]  # draws from 1
        assert 0.0 < mine[0][1] < weight  # the draws took their share from the MAP's


def test_one_draw_is_a_draw_and_a_map_without_a_finite_target_or_hessian_stands_alone(monkeypatch):
    import shapleig.gp.integrate as integrate

    X, y = _archive()
    h = _hyper()
    one = hyperparameter_draws(X, y, h, 1, np.random.default_rng(5))
    assert len(one) == 2 and one[0][1] == h and one[1][1] != h and sum(w for w, _ in one) == pytest.approx(1.0)
    # the MAP's own target fails (its kernel matrix, say): the MAP alone, with weight 1
    real, calls = integrate._log_target, []

    def failing_at_the_map(problem, theta):
        calls.append(theta)
        return -math.inf if len(calls) == 1 else real(problem, theta)  # the MAP is evaluated first

    monkeypatch.setattr(integrate, "_log_target", failing_at_the_map)
    assert hyperparameter_draws(X, y, h, 4, np.random.default_rng(5)) == [(1.0, h)]
    assert len(calls) == 5
    monkeypatch.undo()
    # a Hessian with a non-finite entry (a gradient that overflowed a step away): no proposal
    hessian = integrate._hessian

    def one_nan(problem, theta):
        H = hessian(problem, theta)
        H[0, 1] = H[1, 0] = math.nan
        return H

    monkeypatch.setattr(integrate, "_hessian", one_nan)
    assert hyperparameter_draws(X, y, h, 4, np.random.default_rng(5)) == [(1.0, h)]

    def singular(problem, theta):
        raise np.linalg.LinAlgError("the kernel matrix is singular a step away")

    monkeypatch.setattr(integrate, "_hessian", singular)
    assert hyperparameter_draws(X, y, h, 4, np.random.default_rng(5)) == [(1.0, h)]


def test_kernels_below_the_weight_floor_or_with_a_failed_fit_keep_their_map_alone():
    """Kernels of weight >= 1e-3 whose fit succeeded are integrated; the others keep their MAP alone."""
    from shapleig.gp.fit_result import FitResult
    from shapleig.gp.integrate import integrated_kernels
    from shapleig.gp.kernel_choice import KernelFit

    X, y = _archive()
    h = _hyper()

    def fit(name: str, weight: float, success: bool = True) -> KernelFit:
        return KernelFit(name, FitResult(hyper=h, attempts=1, seconds=0.0, success=success, noise=1e-4,
                                         noise_convention="standardized", y_mean=0.0, y_scale=1.0, neg_mll=0.0,
                                         seed=0), 0.0, weight)

    fits = [fit("at", 1e-3), fit("below", 0.999e-3), fit("failed", 0.5, success=False), fit("rest", 0.498001)]
    out = integrated_kernels(X, y, fits, 3, seed=0)
    counts = {k.kernel: sum(1 for n, _, _ in out if n.split("~")[0] == k.kernel) for k in fits}
    assert counts["below"] == 1 and counts["failed"] == 1
    assert counts["at"] > 1 and counts["rest"] > 1
    assert dict((n, w) for n, w, _ in out)["failed"] == 0.5
