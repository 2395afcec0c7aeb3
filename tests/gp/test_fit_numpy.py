"""The numpy MAP fit engine (shapleig.gp.numpy_fit) against the gpytorch fit it replaces."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _optional import import_or_skip

from shapleig.gp.fitting import fit_hyperparameters
from shapleig.gp.kernels import Hamming, HammingParams
from shapleig.gp.numpy_fit import MapProblem
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters, standardize

# the whole module compares with the gpytorch route: skipped without the extra shapleig[botorch]
torch = import_or_skip("torch")
pytestmark = pytest.mark.torch

from shapleig.gp.priors import inverse_softplus, softplus  # noqa: E402
from shapleig.gp.torch_model import build_model  # noqa: E402

NUMPY = GPOptions(fit_engine="numpy", size_trend=False)
GPYTORCH = GPOptions(fit_engine="gpytorch", size_trend=False)


def _archive(t: int, p: int, seed: int):
    rng = np.random.default_rng(seed)
    codes = rng.choice(2**p, size=t, replace=False)  # distinct coalitions, as in a design archive
    X = (codes[:, None] >> np.arange(p)) & 1 == 1
    w = rng.normal(size=p)
    y = X @ w + 0.3 * np.sin(3 * X @ rng.normal(size=p)) + 0.05 * rng.normal(size=t)
    return X, y


def _gpytorch_objective(X, y, noise, ard, theta):
    """Loss and gradient of botorch's ExactMarginalLogLikelihood closure at theta = (c, raw_s, raw_l)."""
    from gpytorch.mlls import ExactMarginalLogLikelihood

    model = build_model(X, y, Hamming(ard=ard), noise_std=noise)
    with torch.no_grad():
        model.mean_module.raw_constant.fill_(float(theta[0]))
        model.covar_module.raw_outputscale.fill_(float(theta[1]))
        raw = torch.as_tensor(theta[2:], dtype=torch.float64).reshape(model.covar_module.base_kernel.raw_lengthscale.shape)
        model.covar_module.base_kernel.raw_lengthscale.copy_(raw)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    out = model(*model.train_inputs)
    loss = -mll(out, model.train_targets)
    loss.backward()
    grads = [model.mean_module.raw_constant.grad, model.covar_module.raw_outputscale.grad,
             model.covar_module.base_kernel.raw_lengthscale.grad]
    return float(loss), np.concatenate([g.detach().reshape(-1).numpy() for g in grads])


@pytest.mark.parametrize("ard", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_and_gradient_match_gpytorch_and_finite_differences(ard, seed):
    t, p = 12 + 5 * seed, 4 + 2 * seed
    X, y = _archive(t, p, seed)
    y_std, _, _ = standardize(y)
    noise = 1e-4
    problem = MapProblem.build(Hamming(ard=ard), X, y_std, noise)
    rng = np.random.default_rng(seed + 10)
    theta = np.concatenate([[0.3 * rng.normal()], [rng.normal()], rng.normal(size=p if ard else 1)])
    value, grad = problem.objective(theta)
    ref_value, ref_grad = _gpytorch_objective(X, y, noise, ard, theta)
    assert value == pytest.approx(ref_value, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-10)
    h = 1e-6
    fd = np.array([(problem.objective(theta + h * e, grad=False)[0] - problem.objective(theta - h * e, grad=False)[0])
                   / (2 * h) for e in np.eye(theta.shape[0])])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)  # FD rounding


def test_softplus_round_trip():
    x = np.array([-30.0, -1.0, 0.0, 2.0, 40.0])
    np.testing.assert_allclose(inverse_softplus(softplus(x)), x, rtol=1e-10, atol=1e-10)



@pytest.mark.parametrize("ard", [True, False])
def test_optimum_no_worse_than_gpytorch(ard):
    for seed in range(3):
        X, y = _archive(30 + 10 * seed, 6 + seed, 100 + seed)
        ref = fit_hyperparameters(X, y, Hamming(ard=ard), GPYTORCH, seed=seed)
        new = fit_hyperparameters(X, y, Hamming(ard=ard), NUMPY, seed=seed)
        assert ref.success and new.success
        assert new.neg_mll <= ref.neg_mll + 1e-6
        # the numpy fit reports the objective at its hyperparameters
        y_std, _, _ = standardize(y)
        problem = MapProblem.build(Hamming(ard=ard), X, y_std, new.noise)
        h = new.hyper
        theta = problem.pack(h.mean_constant, h.params)
        assert problem.objective(theta, grad=False)[0] == pytest.approx(new.neg_mll, abs=1e-12)


def test_deterministic_per_seed_and_warm_start():
    X, y = _archive(40, 8, 7)
    a = fit_hyperparameters(X, y, Hamming(ard=True), NUMPY, seed=3)
    b = fit_hyperparameters(X, y, Hamming(ard=True), NUMPY, seed=3)
    assert a.hyper == b.hyper and a.neg_mll == b.neg_mll
    warm = fit_hyperparameters(X, y, Hamming(ard=True), NUMPY, seed=3, init=a.hyper)
    assert warm.neg_mll <= a.neg_mll + 1e-9


def test_failed_fit_keeps_fallback(monkeypatch):
    import shapleig.gp.numpy_fit as fit_module

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("forced")

    monkeypatch.setattr(fit_module, "_run", broken)
    X, y = _archive(6, 3, 0)
    fallback = Hyperparameters.hamming(np.ones(3), 1.0, 1e-6, 0.0)
    res = fit_hyperparameters(X, y, Hamming(ard=True), NUMPY, seed=0, fallback=fallback)
    assert not res.success and res.hyper == fallback and res.attempts == 5


def test_unknown_engine():
    with pytest.raises(ValueError, match="fit engine"):
        GPOptions(fit_engine="jax")


def test_gpytorch_engine_refuses_other_kernels():
    from shapleig.gp.kernels import SizeKernel

    X, y = _archive(6, 3, 0)
    with pytest.raises(ValueError, match="plain Hamming kernel only"):
        fit_hyperparameters(X, y, Hamming(ard=True) + SizeKernel(), GPYTORCH, seed=0)
    with pytest.raises(ValueError, match="plain Hamming kernel only"):
        GPOptions(fit_engine="gpytorch", size_trend=False, surrogate=Hamming(ard=True) + SizeKernel(jumps=True))


@pytest.mark.parametrize("ard", [True, False])
def test_optimum_no_worse_than_gpytorch_on_a_table_game(ard):
    from shapleig.design.initial import leverage_design
    from shapleig_tasks.tables import default_tables_dir, discover_tables

    root = default_tables_dir()
    if root is None or not (root / "ImageClassifier_Game" / "9").is_dir():
        pytest.skip("shared table suite not present")
    game = discover_tables(root / "ImageClassifier_Game" / "9")[0].load()
    X = leverage_design(game.n_players, np.random.default_rng(0), size=4 * game.n_players)
    y = game(X)
    ref = fit_hyperparameters(X, y, Hamming(ard=ard), GPYTORCH, seed=0)
    new = fit_hyperparameters(X, y, Hamming(ard=ard), NUMPY, seed=0)
    assert new.success and new.neg_mll <= ref.neg_mll + 1e-6


def test_iteration_limit_counts_as_stopped_success():
    """As botorch: an L-BFGS-B run stopped by maxiter is kept (no retry), other failures retry."""
    from shapleig.gp.numpy_fit import map_fit

    X, y = _archive(20, 5, 1)
    y_std, _, _ = standardize(y)
    problem = MapProblem.build(Hamming(ard=True), X, y_std, 1e-6)
    theta0 = problem.pack(0.0, HammingParams(np.full(5, 1.0), np.log(2.0)))
    fit = map_fit(problem, theta0, np.random.default_rng(0), options={"maxiter": 2})
    assert fit.success and fit.attempts == 1 and "ITERATIONS" in fit.message.upper()


# -- the ARD shrinkage prior (spread) -----------------------------------------------------------

def test_spread_prior_is_a_normalised_density_over_log_lengthscales():
    """Integrated over u = log l on a grid (p = 2 and 3), the prior with a spread has mass 1."""
    for p, spread in ((2, 0.4), (3, 0.8)):
        X = np.zeros((2, p), dtype=float)
        prob = Hamming(ard=True, spread=spread).fit_terms(X)
        grid = np.linspace(prob.prior_loc - 7 * prob.prior_scale, prob.prior_loc + 7 * prob.prior_scale,
                           61 if p == 3 else 301)
        du = grid[1] - grid[0]
        mass = 0.0
        for u in itertools.product(grid, repeat=p):
            u = np.array(u)
            logp, _ = prob.log_prior(np.exp(u))
            mass += np.exp(logp + u.sum())  # density over l times the Jacobian dl/du = l
        assert mass * du**p == pytest.approx(1.0, abs=2e-3)


def test_spread_prior_gradient_and_limits():
    rng = np.random.default_rng(0)
    X, y = _archive(30, 6, 1)
    y_std, _, _ = standardize(y)
    problem = MapProblem.build(Hamming(ard=True, spread=0.5), X, y_std, 1e-4)
    prob = problem.terms[0]
    ls = np.exp(rng.normal(0.5, 0.6, 6))
    _, d = prob.log_prior(ls)
    h = 1e-6
    fd = [(prob.log_prior(ls + h * e)[0] - prob.log_prior(ls - h * e)[0]) / (2 * h) for e in np.eye(6)]
    np.testing.assert_allclose(d, fd, rtol=1e-6)
    theta = rng.normal(size=8)
    _, g = problem.objective(theta)
    fd = [(problem.objective(theta + h * e, grad=False)[0] - problem.objective(theta - h * e, grad=False)[0])
          / (2 * h) for e in np.eye(8)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)
    # equal lengthscales pay no shrinkage: only the normaliser separates it from the independent prior
    free = Hamming(ard=True).fit_terms(X)
    same = np.full(6, 1.7)
    gap = prob.log_prior(same)[0] - free.log_prior(same)[0]
    assert gap == pytest.approx(2.5 * np.log1p(3.0 / 0.25))
    np.testing.assert_allclose(prob.log_prior(same)[1], free.log_prior(same)[1])
    with pytest.raises(ValueError, match="spread"):
        Hamming(ard=False, spread=0.5)


def test_spread_fit_moves_from_shared_to_free_ard():
    """A tight spread gives nearly equal lengthscales; a wide one reproduces the free ARD fit."""
    from shapleig.gp.numpy_fit import fit_map_numpy

    rng = np.random.default_rng(3)
    X = rng.random((40, 6)) < 0.5
    y = np.log1p(X @ np.array([5.0, 4.0, 0.1, 0.2, 0.1, 0.2]))
    y_std, _, _ = standardize(y)
    free, _ = fit_map_numpy(Hamming(ard=True), X, y_std, noise=1e-6, seed=0)
    tight, _ = fit_map_numpy(Hamming(ard=True, spread=1e-3), X, y_std, noise=1e-6, seed=0)
    wide, _ = fit_map_numpy(Hamming(ard=True, spread=1e3), X, y_std, noise=1e-6, seed=0)
    assert np.ptp(np.log(tight.lengthscales)) < 0.05
    assert np.ptp(np.log(free.lengthscales)) > 1.0
    np.testing.assert_allclose(np.log(wide.lengthscales), np.log(free.lengthscales), atol=1e-2)
