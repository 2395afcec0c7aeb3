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
from shapleig.gp.options import GPOptions
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
    h = Hyperparameters.hamming(rng.uniform(0.3, 2, p), 1.2, 1e-4, 0.2)
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
    runs = [ShaplEIG.from_options(refit="adaptive", fit_engine="numpy", ard=ard).estimate(_game(), 35, seed=5)
            for ard in (False, False, True, True)]
    for a, b in (runs[:2], runs[2:]):
        np.testing.assert_array_equal(a.values, b.values)
        assert a.info["n_fits"] == b.info["n_fits"]
        assert [t for t, _ in a.trace] == [t for t, _ in b.trace]


def test_unknown_fit_engine_in_the_loop():
    with pytest.raises(ValueError, match="fit engine"):
        ShaplEIG.from_options(fit_engine="jax")
    with pytest.raises(ValueError, match="fit engine"):
        DesignLoop(_game(), 20, fit_engine="jax", progress=False)


# -- the default policy ("auto") ------------------------------------------------------------------
def _refit_sizes(loop: DesignLoop) -> list[int]:
    """Archive sizes at which the loop refitted (one entry per refit; auto: two fits per refit)."""
    sizes: list[int] = []
    orig = loop._fit

    def spy() -> None:
        sizes.append(int(loop.X.shape[0]))
        orig()

    loop._fit = spy
    return sizes


def test_auto_cold_equals_every_step_up_to_8p():
    """With every refit cold ("auto-cold", the previous default), runs up to min(8p, 128)
    evaluations are the every-step runs, value for value."""
    p = 6
    a = DesignLoop(_game(p), 8 * p, seed=2, refit="auto-cold").run()
    b = DesignLoop(_game(p), 8 * p, seed=2, refit="every").run()
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.std, b.std)
    assert a.info["n_fits"] == b.info["n_fits"] == 8 * p - (p + 1) + 1  # + the fit after the design


def test_auto_refits_every_step_up_to_8p_warm_after_2p_with_cold_checks():
    """The default refits at every step up to 8p; past 2p each refit starts warm, and a cold fit
    runs beside it whenever the archive has grown by 1.5 since the last cold fit."""
    p = 6
    assert ShaplEIG().refit == "auto"
    loop = DesignLoop(_game(p), 8 * p, seed=2, final_refit=False)
    warm_calls: list[tuple[int, bool, bool]] = []
    import shapleig.design.loop as loop_module

    orig = loop_module.fit_kernels

    def spy(X, y, options, **kw):
        warm_calls.append((X.shape[0], kw["plan"].warm, kw["plan"].cold_check))
        return orig(X, y, options, **kw)

    loop_module.fit_kernels = spy
    try:
        loop.run()
    finally:
        loop_module.fit_kernels = orig
    sizes = [t for t, _, _ in warm_calls]
    assert sizes == list(range(p + 1, 8 * p))  # every step (the last acquisition is not refitted after)
    for t, warm, cold in warm_calls:
        assert warm == (t > 2 * p)
    colds = [t for t, warm, cold in warm_calls if cold or not warm]
    # cold at every size up to 2p, then when t >= 1.5 x the last cold size: 18 (>= 1.5 x 12), 27, 41
    assert colds == list(range(p + 1, 2 * p + 1)) + [18, 27, 41]


def test_auto_schedule_rule():
    policy = refit_schedule("auto")
    assert policy.until(6) == 48 and policy.until(100) == 128
    assert policy.due(40, 39, None, 6)  # every step below 8p
    assert policy.due(54, 48, None, 6)  # geometric backstop: 54 >= 1.125 * 48
    assert not policy.due(53, 48, np.zeros(5), 6)
    assert not policy.due(129, 128, np.full(1, 100.0), 100)  # the trigger waits t_fit / 32 points
    assert policy.due(132, 128, np.full(4, 100.0), 100)  # then a bad innovation triggers
    assert not policy.due(132, 128, np.full(4, 1.0), 100)


def test_auto_refits_sparsely_after_8p_and_is_deterministic_per_seed():
    p = 7
    loop = DesignLoop(_game(p), 90, seed=4, final_refit=False)
    sizes = _refit_sizes(loop)
    est = loop.run()
    late = [t for t in sizes if t > 8 * p]
    assert sizes[: 8 * p - p] == list(range(p + 1, 8 * p + 1)) and 1 <= len(late) < (90 - 8 * p) / 2
    again = DesignLoop(_game(p), 90, seed=4, final_refit=False).run()
    np.testing.assert_array_equal(est.values, again.values)
    np.testing.assert_array_equal(est.std, again.std)
    other = DesignLoop(_game(p), 90, seed=5, final_refit=False).run()
    assert not np.array_equal(est.values, other.values)


def test_incremental_updates_between_refits_equal_a_from_scratch_build():
    """After late steps without refits, the loop's posterior equals one built from scratch on the
    whole archive with the same hyperparameters, weights and calibration."""
    from shapleig.gp.mixture import build_mixture

    p = 7
    loop = DesignLoop(_game(p), 90, seed=1, final_refit=False)
    sizes = _refit_sizes(loop)
    loop.run()
    assert sizes[-1] < loop.X.shape[0]  # the last steps were incremental
    kernels = [(c.name, c.weight, c.posterior.hyper) for c in loop.mixture.components]
    taus = {c.name: c.tau for c in loop.mixture.components}
    scratch = build_mixture(kernels, loop.X, loop.y, calibrate=True, taus=taus)
    for inc, ref in zip(loop.mixture.components, scratch.components):
        np.testing.assert_allclose(inc.posterior.mean, ref.posterior.mean, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(inc.posterior.covariance, ref.posterior.covariance, rtol=1e-7, atol=1e-12)


def test_fit_points_caps_the_rows_a_refit_fits_on():
    p = 5
    loop = DesignLoop(_game(p), 30, seed=0, fit_points=16)
    loop.run()
    assert loop.n_refits > 0
    rows = loop._fit_rows()
    assert rows.size == 16 and np.array_equal(rows[: p + 1], np.arange(p + 1)) and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, loop._fit_rows())  # seeded by the loop seed and refit count
    with pytest.raises(ValueError, match="fit_points"):
        DesignLoop(_game(p), 30, fit_points=3)


def test_cold_check_keeps_the_better_objective():
    from dataclasses import replace

    from shapleig.gp.kernel_choice import RefitPlan, fit_kernels

    p = 6
    rng = np.random.default_rng(0)
    X = rng.random((40, p)) < 0.5
    y = X @ rng.normal(size=p) + 2.0 * X[:, 0] * X[:, 1]
    options = GPOptions(size_trend=False)
    cold_plan, warm_plan = RefitPlan.cold(), RefitPlan(warm=True, cold_check=False, warm_options=None,
                                                       lazy_cold_check=False)
    first = fit_kernels(X[:20], y[:20], options, seed=0, plan=cold_plan, previous=None)
    # a poor warm start: lengthscales far from the MAP ones
    bad = [type(k)(k.kernel, type(k.fit)(**{**vars(k.fit), "hyper": Hyperparameters.hamming(
        np.full(p, 50.0), k.fit.hyper.outputscale, k.fit.hyper.noise, k.fit.hyper.mean_constant)}),
        k.log_evidence, 1.0) for k in first]  # weight 1: no lazy nudge, a full warm fit
    warm = fit_kernels(X, y, options, seed=0, plan=warm_plan, previous=bad)
    cold = fit_kernels(X, y, options, seed=0, plan=cold_plan, previous=None)
    checked = fit_kernels(X, y, options, seed=0, plan=replace(warm_plan, cold_check=True), previous=bad)
    for w, c, k in zip(warm, cold, checked):
        assert k.fit.neg_mll == min(w.fit.neg_mll, c.fit.neg_mll)


def test_kernels_the_evidence_rules_out_are_only_nudged_on_warm_refits():
    """A warm refit runs at most LAZY_ITERATIONS L-BFGS-B iterations for a kernel whose previous weight
    was below LAZY_WEIGHT; the others are refitted in full, and a cold check fits every kernel."""
    from dataclasses import replace

    from shapleig.gp import kernel_choice
    from shapleig.gp.kernel_choice import LAZY_WEIGHT, RefitPlan, fit_kernels

    p = 6
    rng = np.random.default_rng(1)
    X = rng.random((40, p)) < 0.5
    y = X @ rng.normal(size=p) + 0.5 * X[:, 0] * X[:, 1]
    options = GPOptions(size_trend=False)
    first = fit_kernels(X[:30], y[:30], options, seed=0, plan=RefitPlan.cold(), previous=None)
    warm = RefitPlan(warm=True, cold_check=False, warm_options={"ftol": 1e-7}, lazy_cold_check=False)
    prev = [replace(first[0], weight=1.0), replace(first[1], weight=LAZY_WEIGHT / 10)]
    seen = []
    orig = kernel_choice.fit_hyperparameters

    def spy(X, y, kernel, options, **kwargs):
        seen.append((kernel.ard, kwargs.get("optimizer_options")))
        return orig(X, y, kernel, options, **kwargs)

    kernel_choice.fit_hyperparameters = spy
    try:
        fit_kernels(X, y, options, seed=0, plan=warm, previous=prev)
        lazy = dict(seen)
        seen.clear()
        fit_kernels(X, y, options, seed=0, plan=replace(warm, warm_options=None, cold_check=True), previous=prev)
        full = list(seen)
        seen.clear()
        fit_kernels(X, y, options, seed=0, plan=replace(warm, warm_options=None, cold_check=True,
                                                        lazy_cold_check=True), previous=prev)
    finally:
        kernel_choice.fit_hyperparameters = orig
    assert lazy[False] == {"ftol": 1e-7} and lazy[True] == {"ftol": 1e-7, "maxiter": kernel_choice.LAZY_ITERATIONS}
    # a cold check fits everything in full, warm and cold (four fits) ...
    assert len(full) == 4 and all(opt is None or "maxiter" not in opt for _, opt in full)
    # ... unless lazy_cold_check: then the ruled-out kernel is only nudged and gets no cold fit
    assert [ard for ard, _ in seen] == [False, False, True] and "maxiter" in seen[2][1]


# -- the evidence trigger, on a stand-in loop (issue 27: two one-line mutants passed the suite) ---
def _stand_in_loop(t: int, t_fit: int, z: np.ndarray, n_players: int = 2):
    """What the bound schedules read of a DesignLoop: the archive, its size at the last fit and
    the posterior's one-step-ahead residuals (``innovations``, one per archive row)."""
    from types import SimpleNamespace

    assert z.shape == (t,)
    return SimpleNamespace(X=np.zeros((t, n_players)), fitted_on=t_fit, n_players=n_players,
                           posterior=SimpleNamespace(innovations=lambda: z.copy()))


def test_adaptive_trigger_reads_the_mean_square_of_the_new_residuals_only():
    """Refit when the points added since the last fit are badly predicted: mean(z^2) over
    z[t_fit:t] above the threshold. Residuals +-3 average to 0 (mean(z) would never refit), and
    badly predicted *old* points (before t_fit) must not trigger a refit."""
    t_fit, t = 6, 10  # it = 3 is not on the geometric backstop (it = 0, 1, 2, 4, 8, ...)
    new_bad = np.concatenate([np.zeros(t_fit), [3.0, -3.0, 3.0, -3.0]])
    old_bad = np.concatenate([np.full(t_fit, 10.0), [0.1, -0.1, 0.1, -0.1]])
    schedule = AdaptiveRefit(threshold=4.0)
    assert schedule.bind(_stand_in_loop(t, t_fit, new_bad))(3) is True  # mean z^2 = 9 > 4
    assert schedule.bind(_stand_in_loop(t, t_fit, old_bad))(3) is False  # new points fit: 0.01


def test_auto_trigger_reads_the_mean_square_of_the_new_residuals_only():
    """The default policy's trigger between its geometric refits (p = 2: every step up to 16
    points; here t = 60, t_fit = 56 < 60 < 1.125 * 56): same rule as the adaptive one."""
    from shapleig.design.refit import AutoRefit

    t_fit, t = 56, 60
    new_bad = np.concatenate([np.zeros(t_fit), [3.0, -3.0, 3.0, -3.0]])
    old_bad = np.concatenate([np.full(t_fit, 10.0), [0.1, -0.1, 0.1, -0.1]])
    policy = AutoRefit()
    assert policy.bind(_stand_in_loop(t, t_fit, new_bad))(40) is True
    assert policy.bind(_stand_in_loop(t, t_fit, old_bad))(40) is False
    assert policy.due(t, t_fit, np.array([3.0, -3.0, 3.0, -3.0]), 2) is True  # mean(z) = 0 would not


# -- "auto:<k>": every step only up to k p evaluations, then sparse ---------------------------------
def test_auto_k_schedule_rule_and_its_spelling():
    policy = refit_schedule("auto:1:1.125:2")
    assert (policy.per_player, policy.growth, policy.threshold) == (1.0, 1.125, 2.0)
    assert policy.until(10) == 10 and policy.until(500) == 128 and refit_schedule("auto:2.5").until(4) == 10
    assert policy.due(10, 9, None, 10)  # every step up to p
    assert not policy.due(11, 10, np.zeros(1), 10)  # 11 < 1.125 * 10, a well-predicted point
    assert policy.due(12, 10, None, 10)  # 12 >= 1.125 * 10: the geometric backstop
    assert policy.due(11, 10, np.array([1.5]), 10)  # mean z^2 = 2.25 > 2: the trigger
    assert not refit_schedule("auto:1").due(11, 10, np.array([1.5]), 10)  # the default threshold 4
    for bad in ("auto:0", "auto:x", "auto:1:1", "auto:1:1.1:0", "auto:1:2:3:4", "auto:"):
        with pytest.raises(ValueError, match="auto:<k>"):
            refit_schedule(bad)


def test_sparse_refits_below_8p_still_fit_ruled_out_kernels_at_cold_checks():
    """Sparse from k p on, but "late" (cold checks every doubling, ruled-out kernels skipped) only
    beyond min(8p, 128): below it a kernel the evidence ruled out early is fitted in full at each
    cold check, so it can come back (ARD once the data show which players matter)."""
    from shapleig.design.refit import AutoRefit

    policy = AutoRefit(per_player=1)
    assert policy.sparse(12, 6) and not policy.late(12, 6) and policy.late(49, 6)
    assert all(AutoRefit().sparse(t, 6) == AutoRefit().late(t, 6) for t in range(1, 200))
    p = 6
    loop = DesignLoop(_game(p), 8 * p, seed=2, refit="auto:1", final_refit=False)
    plans: list[tuple[int, object]] = []
    import shapleig.design.loop as loop_module

    orig = loop_module.fit_kernels

    def spy(X, y, options, **kw):
        plans.append((X.shape[0], kw["plan"]))
        return orig(X, y, options, **kw)

    loop_module.fit_kernels = spy
    try:
        loop.run()
    finally:
        loop_module.fit_kernels = orig
    sizes = [t for t, _ in plans]
    assert sizes[:1] == [p + 1] and len(sizes) < (8 * p - (p + 1)) / 2  # far fewer than every step
    assert not any(plan.lazy_cold_check for _, plan in plans)  # nothing "late" below 8p
    colds = [t for t, plan in plans if plan.cold_check or not plan.warm]
    assert colds[0] == p + 1 and any(t > 2 * p for t in colds)  # cold checks go on in the sparse phase
