"""Tests for the Hamming-kernel GP surrogate: model, initial values, fit, noise, refit schedules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _optional import import_or_skip

from shapleig.design.refit import REFIT_SCHEDULES, refit_schedule
from shapleig.games.coalitions import all_coalitions
from shapleig.gp.esp import hamming_kernel
from shapleig.gp.fitting import fit_hyperparameters
from shapleig.gp.kernels import Hamming
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters
from shapleig.gp.priors import initial_lengthscale, lengthscale_prior_params, standardized_noise

# the whole module compares with the gpytorch route: skipped without the extra shapleig[botorch]
torch = import_or_skip("torch")
pytestmark = pytest.mark.torch

from shapleig.gp.torch_model import build_model, model_hyperparameters  # noqa: E402

GPYTORCH = GPOptions(fit_engine="gpytorch", size_trend=False)  # the published fit route


def _archive(p: int = 5, t: int = 14, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Z = all_coalitions(p)
    X = Z[np.sort(rng.choice(len(Z), size=t, replace=False))]
    w = rng.normal(size=p)
    y = X @ w + 0.7 * (X[:, 0] & X[:, 1]) + 3.0
    return X, y


def test_initial_values_and_dtype():
    p = 9
    X, y = _archive(p, 12)
    dtype_before = torch.get_default_dtype()
    model = build_model(X, y, Hamming(ard=True), noise_std=1e-6)
    assert torch.get_default_dtype() == dtype_before  # not changed permanently
    h = model_hyperparameters(model)
    loc, scale = lengthscale_prior_params(p)
    assert loc == pytest.approx(math.sqrt(2) + 0.5 * math.log(p))
    assert scale == pytest.approx(math.sqrt(3))
    # prior mode e^(sqrt2 - 3) sqrt(p), exactly in float64 (no float32 truncation)
    assert initial_lengthscale(p) == pytest.approx(math.exp(math.sqrt(2) - 3) * math.sqrt(p), rel=1e-14)
    np.testing.assert_allclose(h.lengthscales, initial_lengthscale(p), rtol=1e-13)
    assert h.outputscale == pytest.approx(math.log(2.0), rel=1e-13)
    assert h.mean_constant == 0.0
    assert h.noise == 1e-6
    for name, param in model.named_parameters():
        assert param.dtype == torch.float64, name
    prior = model.covar_module.base_kernel.lengthscale_prior
    assert float(prior.loc) == pytest.approx(loc, rel=1e-15)


def test_model_kernel_matches_esp_kernel_after_fit():
    X, y = _archive(5, 14)
    fit = fit_hyperparameters(X, y, Hamming(ard=True), GPYTORCH, seed=1)
    assert fit.success and 1 <= fit.attempts <= 5
    model = build_model(X, y, Hamming(ard=True), noise_std=fit.noise, init=fit.hyper)
    with torch.no_grad():
        K = model.covar_module(torch.as_tensor(X, dtype=torch.float64)).to_dense().numpy()
    ref = hamming_kernel(X, X, fit.hyper.lengthscales, fit.hyper.outputscale)
    np.testing.assert_allclose(K, ref, rtol=1e-11, atol=1e-13 * np.abs(ref).max())
    # the fitted values differ from the initial ones, i.e. the fit did something
    assert not np.allclose(fit.hyper.lengthscales, initial_lengthscale(5))


def test_fit_is_deterministic_for_a_seed_and_leaves_global_rng_alone():
    X, y = _archive(5, 14, seed=3)
    torch.manual_seed(123)
    state = torch.random.get_rng_state().clone()
    a = fit_hyperparameters(X, y, Hamming(ard=True), GPYTORCH, seed=7)
    assert torch.equal(torch.random.get_rng_state(), state)
    b = fit_hyperparameters(X, y, Hamming(ard=True), GPYTORCH, seed=7)
    np.testing.assert_array_equal(a.hyper.lengthscales, b.hyper.lengthscales)
    assert a.hyper.outputscale == b.hyper.outputscale
    assert a.hyper.mean_constant == b.hyper.mean_constant
    assert a.y_mean == pytest.approx(np.mean(y)) and a.y_scale == pytest.approx(np.std(y, ddof=1))


def test_warm_start_sets_initial_values():
    X, y = _archive(4, 10)
    h = Hyperparameters.hamming(np.array([0.3, 0.5, 0.7, 0.9]), 1.7, 1e-6, -0.25)
    model = build_model(X, y, Hamming(ard=True), noise_std=1e-6, init=h)
    got = model_hyperparameters(model)
    np.testing.assert_allclose(got.lengthscales, h.lengthscales, rtol=1e-12)
    assert got.outputscale == pytest.approx(1.7, rel=1e-12)
    assert got.mean_constant == pytest.approx(-0.25, rel=1e-12)
    fit = fit_hyperparameters(X, y, Hamming(ard=True), GPYTORCH, seed=0, init=h)
    assert fit.success


def test_noise_conventions():
    assert standardized_noise(1e-6, 0.01, "standardized") == 1e-6
    # research-code convention: raw 1e-6 -> 1e-6 / s_y^2, floored at 1e-6
    assert standardized_noise(1e-6, 0.01, "raw") == pytest.approx(1e-2)
    assert standardized_noise(1e-6, 100.0, "raw") == 1e-6
    assert standardized_noise(1e-10, 1.0, "standardized") == 1e-10  # explicit tiny noise is honoured
    with pytest.raises(ValueError, match="noise convention"):
        standardized_noise(1e-6, 1.0, "bogus")
    with pytest.raises(ValueError, match="noise"):
        standardized_noise(-1.0, 1.0, "standardized")
    X, y = _archive(5, 12)
    y_small = 1e-3 * y
    raw = fit_hyperparameters(X, y_small, Hamming(ard=True), GPYTORCH.replace(noise_convention="raw"), seed=0)
    assert raw.noise == pytest.approx(max(1e-6, 1e-6 / np.std(y_small, ddof=1) ** 2))
    assert raw.hyper.noise == raw.noise and raw.noise_convention == "raw"
    std = fit_hyperparameters(X, y_small, Hamming(ard=True), GPYTORCH, seed=0)
    assert std.hyper.noise == 1e-6


def test_fit_failure_keeps_fallback(monkeypatch):
    import botorch.fit
    from botorch.exceptions.errors import ModelFittingError

    def boom(*args, **kwargs):
        raise ModelFittingError("All attempts to fit the model have failed.")

    monkeypatch.setattr(botorch.fit, "fit_gpytorch_mll", boom)
    X, y = _archive(4, 10)
    prev = Hyperparameters.hamming(np.full(4, 0.4), 2.0, 1e-6, 0.1)
    res = fit_hyperparameters(X, y, Hamming(ard=True), GPYTORCH, seed=0, fallback=prev)
    assert not res.success and "failed" in res.message
    np.testing.assert_array_equal(res.hyper.lengthscales, prev.lengthscales)
    assert res.hyper.outputscale == 2.0


def test_fit_rejects_bad_input():
    X, y = _archive(4, 10)
    with pytest.raises(ValueError, match="rows"):
        fit_hyperparameters(X, y[:-1], Hamming(ard=True), GPYTORCH, seed=0)
    bad = y.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        fit_hyperparameters(X, bad, Hamming(ard=True), GPYTORCH, seed=0)
    with pytest.raises(ValueError):
        fit_hyperparameters(X.astype(float) * 0.5, y, Hamming(ard=True), GPOptions(size_trend=False), seed=0)
    with pytest.raises(ValueError, match="shape"):
        fit_hyperparameters(X[0], y[:1], Hamming(ard=True), GPYTORCH, seed=0)


def test_refit_schedules():
    its = np.arange(0, 1200)
    every = refit_schedule("every")
    assert all(every(i) for i in its)
    dec = refit_schedule("decaying")
    fired = [i for i in its if dec(i)]
    assert fired[:64] == list(range(64))
    assert [i for i in fired if 64 <= i < 192] == list(range(64, 192, 8))
    assert [i for i in fired if 192 <= i < 448] == list(range(192, 448, 16))
    assert [i for i in fired if i >= 448] == list(range(448, 1200, 32))
    geo = refit_schedule("geometric")
    assert [i for i in range(70) if geo(i)] == [0, 1, 2, 4, 8, 16, 32, 64]
    geo5 = refit_schedule("geometric", hand_over=5)
    assert [i for i in range(40) if geo5(i)] == [5, 6, 7, 9, 13, 21, 37]
    never = refit_schedule("never")
    assert [i for i in its if never(i)] == [0]
    custom = lambda it: it % 3 == 0  # noqa: E731
    assert refit_schedule(custom) is custom
    with pytest.raises(ValueError) as err:
        refit_schedule("sometimes")
    for name in REFIT_SCHEDULES:
        assert name in str(err.value)


def test_hamming_kernel_matches_categorical_kernel():
    from botorch.models.kernels.categorical import CategoricalKernel

    from shapleig.gp.torch_model import HammingKernel

    p = 6
    rng = np.random.default_rng(0)
    fast = HammingKernel(ard_num_dims=p).double()
    ref = CategoricalKernel(ard_num_dims=p).double()
    ls = torch.as_tensor(rng.uniform(0.05, 3.0, size=(1, p)))
    fast.lengthscale, ref.lengthscale = ls, ls
    x1 = torch.as_tensor(rng.random((2, 7, p)) < 0.5, dtype=torch.float64)  # batched
    x2 = torch.as_tensor(rng.random((2, 5, p)) < 0.5, dtype=torch.float64)
    with torch.no_grad():
        np.testing.assert_allclose(fast.forward(x1, x2).numpy(), ref.forward(x1, x2).numpy(), rtol=1e-13)
        np.testing.assert_allclose(fast.forward(x1, x1, diag=True).numpy(), 1.0)
        np.testing.assert_allclose(
            fast.forward(x1[:, :5], x2, diag=True).numpy(), ref.forward(x1[:, :5], x2, diag=True).numpy(), rtol=1e-13
        )
        # non-binary input: falls back to the parent's [x != x'] semantics
        xf = x1[0] * 0.5
        np.testing.assert_allclose(fast.forward(xf, xf).numpy(), ref.forward(xf, xf).numpy(), rtol=1e-14)
    # gradients agree too (they drive the MAP fit)
    g = []
    for k in (fast, ref):
        k.zero_grad()
        k.forward(x1[0], x2[0]).sum().backward()
        g.append(k.raw_lengthscale.grad.numpy().copy())
    np.testing.assert_allclose(g[0], g[1], rtol=1e-10)


def test_shared_lengthscale_model_and_fit():
    """ard=False: one lengthscale parameter, the same prior and initial value, reported p times."""
    p = 6
    X, y = _archive(p, 14, seed=2)
    model = build_model(X, y, Hamming(ard=False), noise_std=1e-6)
    base = model.covar_module.base_kernel
    assert base.lengthscale.numel() == 1
    h0 = model_hyperparameters(model)
    assert h0.lengthscales.shape == (p,)
    np.testing.assert_allclose(h0.lengthscales, initial_lengthscale(p), rtol=1e-13)
    assert float(base.lengthscale_prior.loc) == pytest.approx(lengthscale_prior_params(p)[0], rel=1e-15)

    fit = fit_hyperparameters(X, y, Hamming(ard=False), GPYTORCH, seed=0)
    assert fit.success
    ls = fit.hyper.lengthscales
    assert ls.shape == (p,) and np.all(ls == ls[0]) and ls[0] != pytest.approx(initial_lengthscale(p))
    # the fitted model's kernel is the ESP kernel with that lengthscale repeated p times
    model = build_model(X, y, Hamming(ard=False), noise_std=fit.noise, init=fit.hyper)
    with torch.no_grad():
        K = model.covar_module(torch.as_tensor(X, dtype=torch.float64)).to_dense().numpy()
    ref = hamming_kernel(X, X, ls, fit.hyper.outputscale)
    np.testing.assert_allclose(K, ref, rtol=1e-11, atol=1e-13 * np.abs(ref).max())
    # the ARD fit of the same archive is a different (p-parameter) optimum
    ard = fit_hyperparameters(X, y, Hamming(ard=True), GPYTORCH, seed=0)
    assert not np.all(ard.hyper.lengthscales == ard.hyper.lengthscales[0])


def test_shared_lengthscale_warm_start_uses_geometric_mean():
    X, y = _archive(4, 10)
    h = Hyperparameters.hamming(np.array([0.25, 1.0, 1.0, 4.0]), 1.7, 1e-6, -0.25)
    got = model_hyperparameters(build_model(X, y, Hamming(ard=False), noise_std=1e-6, init=h))
    np.testing.assert_allclose(got.lengthscales, 1.0, rtol=1e-12)
    assert got.outputscale == pytest.approx(1.7, rel=1e-12)
