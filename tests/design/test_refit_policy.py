"""The evidence-triggered refit schedule ("adaptive") and the innovations it reads."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import solve_triangular

from shapleig.design.estimators import ShaplEIG
from shapleig.design.loop import DesignLoop
from shapleig.design.refit import AdaptiveRefit, refit_schedule
from shapleig.games.game import FunctionGame
from shapleig.gp.esp import hamming_kernel
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize


def _game(p: int = 7) -> FunctionGame:
    rng = np.random.default_rng(0)
    w = rng.normal(size=p)

    def fn(Z: np.ndarray) -> np.ndarray:
        z = Z.astype(np.float64)
        return z @ w + 2.0 * z[:, 0] * z[:, 1] * (z.sum(1) > 3)

    return FunctionGame(fn, p)


def test_innovations_are_one_step_ahead_residuals():
    p = 6
    rng = np.random.default_rng(1)
    X = rng.random((20, p)) < 0.5
    y = X @ rng.normal(size=p) + 3.0
    h = Hyperparameters(rng.uniform(0.3, 2, p), 1.2, 1e-4, 0.2)
    post = ShapleyPosterior(h, X[:8], y[:8])
    for t in range(8, 20, 3):
        post = post.extend(X[t : t + 3], y[t : t + 3])
    y_tilde, _, _ = standardize(y)
    K = hamming_kernel(X, X, h.lengthscales, h.outputscale) + h.noise * np.eye(20)
    ref = solve_triangular(np.linalg.cholesky(K), y_tilde - h.mean_constant, lower=True)
    np.testing.assert_allclose(post.innovations(), ref, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ShapleyPosterior(h, X, y).innovations(), ref, rtol=1e-9, atol=1e-11)


def test_adaptive_schedule_refits_at_backstop_and_on_evidence():
    loop = DesignLoop(_game(), 40, refit="adaptive", progress=False, fit_engine="numpy", seed=3)
    est = loop.run()
    assert loop.refit_name == "adaptive"
    backstop = [it for it in range(loop.iteration) if refit_schedule("geometric")(it)]
    # at least the backstop's fits (+ the design fit and the final refit), fewer than every step
    assert len(backstop) <= loop.n_refits - 1 < loop.iteration
    assert np.all(np.isfinite(est.values))


def test_adaptive_threshold_extremes():
    tiny = DesignLoop(_game(), 30, refit=AdaptiveRefit(threshold=1e-12), progress=False, fit_engine="numpy")
    tiny.run()
    every = DesignLoop(_game(), 30, refit="every", progress=False, fit_engine="numpy")
    every.run()
    assert tiny.n_refits == every.n_refits  # any residual beats a vanishing threshold
    with pytest.raises(ValueError, match="threshold"):
        AdaptiveRefit(threshold=0.0)


def test_adaptive_policy_is_deterministic_per_seed():
    runs = [ShaplEIG(refit="adaptive", fit_engine="numpy", ard=ard).estimate(_game(), 35, seed=5)
            for ard in (False, False, True, True)]
    for a, b in (runs[:2], runs[2:]):
        np.testing.assert_array_equal(a.values, b.values)
        assert a.info["n_fits"] == b.info["n_fits"]
        assert [t for t, _ in a.trace] == [t for t, _ in b.trace]


def test_unknown_fit_engine_in_the_loop():
    with pytest.raises(ValueError, match="fit engine"):
        ShaplEIG(fit_engine="jax")
    with pytest.raises(ValueError, match="fit engine"):
        DesignLoop(_game(), 20, fit_engine="jax", progress=False)
