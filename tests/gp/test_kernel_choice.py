"""The default surrogate: kernels weighed by evidence, the mixture posterior, LOO calibration, intervals
and the precision target."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_surrogate_kernel

from shapleig import ShaplEIG, exact_shapley
from shapleig.design.loop import DesignLoop
from shapleig.games.coalitions import all_coalitions, to_bitmask
from shapleig.games.exact import shapley_operator
from shapleig.games.game import FunctionGame
from shapleig.gp.kernel_choice import RefitPlan, bic_log_evidence, evidence_weights, fit_kernels
from shapleig.gp.kernels import Hamming, SizeParams
from shapleig.gp.mixture import MixtureComponent, MixturePosterior, build_mixture, loo_calibration
from shapleig.gp.options import GPOptions, resolve_surrogate
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize


def _table_game(p: int, seed: int, smooth: bool = True) -> FunctionGame:
    rng = np.random.default_rng(seed)
    Z = all_coalitions(p).astype(float)
    if smooth:
        w = rng.normal(size=p) * np.linspace(3, 0.1, p)  # a few players dominate
        table = Z @ w + 0.4 * Z[:, 0] * Z[:, 1] + 1.0
    else:
        table = rng.normal(size=2**p)
    return FunctionGame(lambda X: table[to_bitmask(X)], p, name=f"table{seed}")


def _fit_kernels(X: np.ndarray, y: np.ndarray, surrogate: str) -> list:
    """A one-off fit of a surrogate mode's plain kernels (no size trend), seed 3."""
    return fit_kernels(X, y, GPOptions(surrogate=surrogate, size_trend=False), seed=3, plan=RefitPlan.cold(),
                       previous=None)


def _random_archive(p: int, t: int, seed: int, **hyper) -> tuple[np.ndarray, np.ndarray, Hyperparameters]:
    """t distinct coalitions, random values and hyperparameters (ARD lengthscales unless given)."""
    rng = np.random.default_rng(seed)
    X = all_coalitions(p)[rng.choice(2**p, t, replace=False)]
    y = rng.normal(size=t)
    h = Hyperparameters.hamming(hyper.get("lengthscales", rng.uniform(0.3, 2.0, p)), hyper.get("outputscale", 1.3),
                        hyper.get("noise", 1e-4), hyper.get("mean_constant", 0.1))
    return X, y, h


def _dense_loo_residuals(h: Hyperparameters, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Leave-one-out GP predictions of each observation from the others, one by one (standardised)."""
    t = X.shape[0]
    yt, _, _ = standardize(y)
    K = dense_surrogate_kernel(X, h) + h.noise * np.eye(t)
    z = np.empty(t)
    for i in range(t):
        keep = np.arange(t) != i
        k_i, Kk = K[keep, i], K[np.ix_(keep, keep)]
        mean = h.mean_constant + k_i @ np.linalg.solve(Kk, yt[keep] - h.mean_constant)
        z[i] = (yt[i] - mean) / np.sqrt(K[i, i] - k_i @ np.linalg.solve(Kk, k_i))
    return z


def _dense_shapley_posterior(h: Hyperparameters, X: np.ndarray, y: np.ndarray,
                             keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of phi by dense 2^p algebra (independent of the ESP routes), raw units.

    ``keep`` (bool[t]): condition on those archive rows only, in the full archive's standardisation
    (hyperparameters and units frozen, as the closed-form deletions)."""
    p = X.shape[1]
    Zall = all_coalitions(p)
    A = shapley_operator(p)
    yt, _, scale = standardize(y)
    keep = np.ones(X.shape[0], dtype=bool) if keep is None else keep
    idx, yt = to_bitmask(X)[keep], yt[keep]
    K = dense_surrogate_kernel(Zall, h)
    Kxx = K[np.ix_(idx, idx)] + h.noise * np.eye(len(idx))
    mu = h.mean_constant + K[:, idx] @ np.linalg.solve(Kxx, yt - h.mean_constant)
    S = K - K[:, idx] @ np.linalg.solve(Kxx, K[idx, :])
    return scale * (A @ mu), scale**2 * (A @ S @ A.T)


def _dense_deletions(h: Hyperparameters, X: np.ndarray, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The dense posterior of phi with each evaluation left out in turn, frozen standardisation."""
    t = X.shape[0]
    return [_dense_shapley_posterior(h, X, y, keep=np.arange(t) != i) for i in range(t)]


# -- the surrogate modes ----------------------------------------------------------------------

def test_resolve_surrogate():
    assert resolve_surrogate(None, None) == "auto"
    assert resolve_surrogate(None, True) == "ard" and resolve_surrogate(None, False) == "shared"
    assert resolve_surrogate("shared", False) == "shared"
    with pytest.raises(ValueError, match="contradicts"):
        resolve_surrogate("shared", True)
    with pytest.raises(ValueError, match="unknown surrogate"):
        resolve_surrogate("rbf", None)
    with pytest.raises(ValueError, match="unknown surrogate"):
        ShaplEIG(surrogate="rbf")


def test_evidence_weights():
    w = evidence_weights(np.array([0.0, np.log(3.0)]))
    np.testing.assert_allclose(w, [0.25, 0.75])
    np.testing.assert_allclose(evidence_weights(np.array([-np.inf, 2.0])), [0.0, 1.0])
    np.testing.assert_allclose(evidence_weights(np.array([-np.inf, -np.inf])), [0.5, 0.5])


def test_fit_kernels_bic_weights_and_modes():
    """auto fits both kernels; weights follow the BIC of each fit; single modes weigh 1."""
    p = 6
    game = _table_game(p, 1)
    rng = np.random.default_rng(0)
    X = all_coalitions(p)[rng.choice(2**p, 30, replace=False)]
    y = game(X)
    fits = _fit_kernels(X, y, "auto")
    assert [k.kernel for k in fits] == ["shared", "ard"]
    ev = np.array([bic_log_evidence(k.fit, 30, d) for k, d in zip(fits, (3, p + 2))])
    np.testing.assert_allclose([k.log_evidence for k in fits], ev)
    np.testing.assert_allclose([k.weight for k in fits], evidence_weights(ev))
    shared = fits[0].hyper.lengthscales
    assert np.all(shared == shared[0]) and not np.all(fits[1].hyper.lengthscales == fits[1].hyper.lengthscales[0])
    for mode in ("shared", "ard"):
        (only,) = _fit_kernels(X, y, mode)
        assert only.kernel == mode and only.weight == 1.0
    again = _fit_kernels(X, y, "auto")
    assert [k.hyper for k in again] == [k.hyper for k in fits]  # deterministic per seed


# -- LOO calibration --------------------------------------------------------------------------

def test_loo_residuals_equal_explicit_leave_one_out():
    """The closed form equals refitting-free leave-one-out GP predictions computed one by one."""
    X, y, h = _random_archive(5, 14, 2)
    post = ShapleyPosterior(h, X, y)
    z = post.loo_residuals()
    np.testing.assert_allclose(z, _dense_loo_residuals(h, X, y), rtol=1e-7, atol=1e-9)
    assert loo_calibration(post) == pytest.approx(float(np.clip(np.mean(z**2), 1e-2, 1e4)))


def test_loo_subset_beyond_limit():
    X, y, h = _random_archive(5, 20, 3, lengthscales=np.full(5, 0.7))
    post = ShapleyPosterior(h, X, y)
    full = post.loo_residuals()
    sub = post.loo_residuals(max_deletions=8, rng=np.random.default_rng(0))
    assert sub.shape == (8,) and np.all(np.isin(np.round(sub, 10), np.round(full, 10)))


def test_build_mixture_calibrates_each_kernel():
    X, y, h = _random_archive(5, 16, 4)
    shared = Hyperparameters.hamming(np.full(5, 0.9), 1.1, 1e-4)
    mix = build_mixture([("ard", 0.4, h), ("shared", 0.6, shared)], X, y, calibrate="jackknife")
    for c in mix.components:
        assert c.tau == loo_calibration(ShapleyPosterior(c.posterior.hyper, X, y)) and c.scale is None
    default = build_mixture([("ard", 0.4, h), ("shared", 0.6, shared)], X, y,
                            calibrate=GPOptions().calibrate)  # influence scales, no tau
    assert [c.tau for c in default.components] == [1.0, 1.0] and default.jackknife is False
    assert all(c.scale is not None and np.all(c.scale >= 1.0) for c in default.components)
    raw = build_mixture([("ard", 0.4, h), ("shared", 0.6, shared)], X, y, calibrate=False)
    assert [c.tau for c in raw.components] == [1.0, 1.0] and raw.jackknife is False
    kept = build_mixture([("ard", 1.0, h)], X, y, taus={"ard": 2.5}, calibrate="jackknife")
    assert kept.components[0].tau == 2.5


# -- the mixture posterior --------------------------------------------------------------------

def test_mixture_moments_agree_with_sampling():
    """Mean and covariance of the mixture equal those of samples drawn from it."""
    p = 4
    rng = np.random.default_rng(5)
    X = all_coalitions(p)[rng.choice(16, 9, replace=False)]
    y = rng.normal(size=9)
    comps = [MixtureComponent("a", 0.3, 2.0, ShapleyPosterior(Hyperparameters.hamming(np.full(p, 0.5), 1.0, 1e-6), X, y)),
             MixtureComponent("b", 0.7, 1.0, ShapleyPosterior(Hyperparameters.hamming(np.array([0.2, 1, 3, .5]), 2.0, 1e-6), X, y))]
    mix = MixturePosterior(comps, jackknife=False)
    n = 400_000
    which = rng.random(n) < 0.3
    draws = np.empty((n, p))
    for mask, c in ((which, comps[0]), (~which, comps[1])):
        cov = c.tau * c.posterior.covariance
        draws[mask] = rng.multivariate_normal(c.posterior.mean, cov, size=int(mask.sum()), method="eigh")
    scale = np.sqrt(np.diag(mix.covariance))
    np.testing.assert_allclose(draws.mean(0), mix.mean, atol=5 * scale.max() / np.sqrt(n))
    np.testing.assert_allclose(np.cov(draws.T), mix.covariance, atol=0.02 * np.abs(mix.covariance).max())
    assert mix.primary.name == "b" and mix.weights == pytest.approx({"a": 0.3, "b": 0.7})
    tiny = MixturePosterior([comps[0], MixtureComponent("c", 1e-14, 1.0, comps[1].posterior)], jackknife=False)
    assert [c.name for c in tiny.components] == ["a"]


def _dense_jackknife_var(h: Hyperparameters, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-player jackknife variance of the dense posterior mean, deleting one evaluation at a time."""
    t, p = X.shape
    loo = np.asarray([mean for mean, _ in _dense_deletions(h, X, y)])
    return (1 - t / 2**p) * (t - 1) / t * np.sum((loo - loo.mean(0)) ** 2, axis=0)


def test_jackknife_covariance_equals_explicit_deletions():
    X, y, h = _random_archive(5, 15, 11)
    jk = ShapleyPosterior(h, X, y).jackknife_covariance()
    np.testing.assert_allclose(np.diag(jk), _dense_jackknife_var(h, X, y), rtol=1e-6)
    assert np.all(np.linalg.eigvalsh(jk) > -1e-12)


def _dense_influence_calibration(h: Hyperparameters, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """sum_i dV_ij z_i^2 / sum_i dV_ij by explicit deletions: dV_ij the growth of phi_j's dense posterior
    variance when observation i is left out, z_i its standardised leave-one-out residual."""
    _, S_full = _dense_shapley_posterior(h, X, y)
    z = _dense_loo_residuals(h, X, y)
    dV = np.asarray([np.diag(S) - np.diag(S_full) for _, S in _dense_deletions(h, X, y)])
    return (dV * z[:, None] ** 2).sum(0) / dV.sum(0)


def test_influence_calibration_equals_explicit_deletions():
    X, y, h = _random_archive(5, 15, 13)
    tau = ShapleyPosterior(h, X, y).influence_calibration()
    np.testing.assert_allclose(tau, _dense_influence_calibration(h, X, y), rtol=1e-6)
    assert not np.allclose(tau, 1.0)  # the check above can fail: tau varies by player
    # the read-out scales each kernel's std by sqrt(max(1, tau)) and keeps the correlations
    mix = build_mixture([("k", 1.0, h)], X, y, calibrate="influence")
    post = ShapleyPosterior(h, X, y)
    f = np.sqrt(np.maximum(1.0, tau))
    np.testing.assert_allclose(mix.covariance, post.covariance * np.outer(f, f), rtol=1e-10)
    np.testing.assert_array_equal(mix.mean, post.mean)


def test_jackknife_inflation_keeps_correlations():
    X, y, h = _random_archive(5, 15, 12, lengthscales=np.full(5, 0.6), noise=1e-6, mean_constant=0.0)
    post = ShapleyPosterior(h, X, y)
    plain = MixturePosterior([MixtureComponent("a", 1.0, 1.0, post)], jackknife=False)
    honest = MixturePosterior([MixtureComponent("a", 1.0, 1.0, post)], floor="jackknife")
    jk_sd = np.sqrt(np.diag(post.jackknife_covariance()))
    assert np.any(jk_sd > plain.std)  # the floor binds somewhere, so the check below can fail
    np.testing.assert_allclose(honest.std, np.maximum(plain.std, jk_sd), rtol=1e-10)
    corr = lambda C: C / np.outer(np.sqrt(np.diag(C)), np.sqrt(np.diag(C)))  # noqa: E731
    np.testing.assert_allclose(corr(honest.covariance), corr(plain.covariance), atol=1e-12)
    np.testing.assert_array_equal(honest.mean, plain.mean)


def test_gated_floor_only_where_loo_says_overconfident_plus_disagreement():
    """The gated floor takes the jackknife of kernels with tau > 1 only, and the kernels' disagreement
    (max - min of their means)^2 / 4 over every kernel, a dropped one (weight < MIN_WEIGHT) included."""
    X, y, h = _random_archive(5, 15, 12, lengthscales=np.full(5, 0.6), noise=1e-6, mean_constant=0.0)
    a = ShapleyPosterior(h, X, y)
    b = ShapleyPosterior(Hyperparameters.hamming(np.array([0.2, 1.0, 3.0, 0.5, 0.9]), 1.0, 1e-6), X, y)
    jk = np.diag(a.jackknife_covariance())
    for tau, expect_jk in ((1.5, True), (0.5, False)):
        solo = MixturePosterior([MixtureComponent("a", 1.0, tau, a)])
        gp = tau * np.diag(a.covariance)
        floor = jk if expect_jk else np.zeros(5)
        np.testing.assert_allclose(solo.std ** 2, np.maximum(gp, floor), rtol=1e-10)
    mix = MixturePosterior([MixtureComponent("a", 1.0, 0.01, a), MixtureComponent("b", 1e-14, 3.0, b)])
    assert [c.name for c in mix.components] == ["a"] and len(mix.all_components) == 2
    spread = 0.25 * (a.mean - b.mean) ** 2
    assert np.any(spread > 0.01 * np.diag(a.covariance))  # the disagreement binds somewhere
    np.testing.assert_allclose(mix.std ** 2, np.maximum(0.01 * np.diag(a.covariance), spread), rtol=1e-10)
    np.testing.assert_array_equal(mix.mean, a.mean)
    ext = mix.extend(all_coalitions(5)[~np.isin(to_bitmask(all_coalitions(5)), to_bitmask(X))][:2], np.ones(2))
    assert len(ext.all_components) == 2 and ext.floor == "gated"
    with pytest.raises(ValueError, match="calibrate must be"):
        ShaplEIG.from_options(calibrate="sometimes")
    with pytest.raises(ValueError, match="unknown variance floor"):
        MixturePosterior([MixtureComponent("a", 1.0, 1.0, a)], floor="max")


@pytest.mark.parametrize("surrogate, size_trend, calibrate", [
    ("auto", "both", True), ("shared", "both", True), ("ard", "both", True), ("auto", True, True),
    ("auto", False, True), ("auto", "both", "gated"), ("shared", True, "gated"), ("ard", False, "gated"),
    ("auto", "both", "jackknife"), ("auto", "both", False)])
def test_default_loop_equals_dense_mixture(surrogate, size_trend, calibrate):
    """Every read-out the default can give equals the dense 2^p computation (p = 6): the BIC-weighted
    mixture of the kernels' dense Shapley posteriors (Hamming plus size kernel, docs/math.md §15).
    influence (the default, True): each kernel's std scaled by sqrt(max(1, tau_j)), tau_j by explicit
    deletions; jackknife / gated: each kernel scaled by its LOO calibration, variances raised to the
    floor (jackknife: every kernel's jackknife; gated: jackknife of kernels with tau > 1 and the
    kernels' disagreement); False: the raw posterior."""
    p = 6
    game = _table_game(p, 4)
    # the fitted mixture's read-out (the structure read-out beside it: tests/gp/test_structures.py)
    loop = DesignLoop(game, 20, progress=False, seed=2, surrogate=surrogate, size_trend=size_trend,
                      calibrate=calibrate, structures=(), probe_degenerate=False)
    est = loop.run()
    names = {k.kernel for k in loop.kernel_fits}
    base = {"auto": {"shared", "ard"}, "shared": {"shared"}, "ard": {"ard"}}[surrogate]
    assert est.info["surrogate"] == surrogate
    assert names == (base | {f"{b}+size" for b in base} if size_trend == "both" else base)
    trend_fitted = [(k.hyper.part(SizeParams) or SizeParams()).variance > 0 for k in loop.kernel_fits]
    assert any(trend_fitted) == (size_trend is not False) and all(trend_fitted) == (size_trend is True)
    means, covs, ws, jks, taus = [], [], [], [], []
    for k in loop.kernel_fits:
        m, S = _dense_shapley_posterior(k.hyper, loop.X, loop.y)
        tau = np.clip(np.mean(_dense_loo_residuals(k.hyper, loop.X, loop.y) ** 2), 1e-2, 1e4) \
            if calibrate in ("gated", "jackknife") else 1.0
        if calibrate is True:
            f = np.sqrt(np.clip(_dense_influence_calibration(k.hyper, loop.X, loop.y), 1.0, 1e4))
            S = S * np.outer(f, f)
        means.append(m)
        covs.append(tau * S)
        taus.append(tau)
        ws.append(k.weight)
        jks.append(_dense_jackknife_var(k.hyper, loop.X, loop.y))
    all_means = list(means)
    ws = np.asarray(ws) / np.sum(ws)
    keep = ws >= 1e-10
    ws = ws[keep] / ws[keep].sum()
    means, covs, jks, taus = ([x for x, k in zip(xs, keep) if k] for xs in (means, covs, jks, taus))
    mean = sum(w * m for w, m in zip(ws, means))
    cov = sum(w * (S + np.outer(m - mean, m - mean)) for w, m, S in zip(ws, means, covs))
    if calibrate == "jackknife":
        floor = sum(w * j for w, j in zip(ws, jks))
    elif calibrate == "gated":
        floor = sum((w * j for w, j, t in zip(ws, jks, taus) if t > 1), np.zeros(p))
        floor = np.maximum(floor, 0.25 * (np.max(all_means, axis=0) - np.min(all_means, axis=0)) ** 2)
    else:
        floor = np.zeros(p)
    f = np.maximum(1.0, np.sqrt(floor / np.diag(cov)))
    cov = cov * np.outer(f, f)
    np.testing.assert_allclose(est.values, mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(est.covariance, cov, rtol=1e-6, atol=1e-9 * np.abs(cov).max())
    np.testing.assert_allclose(est.std, np.sqrt(np.diag(cov)), rtol=1e-6, atol=1e-9)


def test_default_exact_at_full_budget_and_deterministic():
    p = 5
    game = _table_game(p, 6, smooth=False)
    est = ShaplEIG.from_options(noise=1e-10).estimate(game, 2**p, seed=0)
    np.testing.assert_allclose(est.values, exact_shapley(game), atol=1e-6)
    a = ShaplEIG().estimate(_table_game(p, 7), 14, seed=3)
    b = ShaplEIG().estimate(_table_game(p, 7), 14, seed=3)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.std, b.std)


@pytest.mark.torch  # the published setting fits with botorch (extra shapleig[botorch])
def test_published_configuration():
    est = ShaplEIG.published()
    assert est.surrogate == "ard" and est.options.calibrate is False and est.refit == "every" and est.pool_size == 1024
    assert ShaplEIG.published(refit="decaying").refit == "decaying"
    p = 5
    game = _table_game(p, 8)
    res = est.estimate(game, 14, seed=1)
    assert res.info["kernel_weights"] == {"ard": 1.0} and res.info["calibration"] == {"ard": 1.0}


# -- intervals and the precision target --------------------------------------------------------

def test_interval():
    p = 5
    est = ShaplEIG().estimate(_table_game(p, 9), 14, seed=0)
    lo, hi = est.interval(0.95)
    np.testing.assert_allclose((hi - lo) / 2, 1.959963984540054 * est.std, rtol=1e-12)
    np.testing.assert_allclose((hi + lo) / 2, est.values, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="level"):
        est.interval(1.5)
    assert len(est.trace_std) == len(est.trace)
    np.testing.assert_array_equal(est.std_at(est.evaluations), est.std)


def test_tol_stops_at_first_step_meeting_the_target():
    """Frozen hyperparameters: the loop stops exactly at the first step of an unrestricted run whose
    std meets the target; with refits, the final read-out meets it and every earlier step did not."""
    p = 6
    h = Hyperparameters.hamming(np.full(p, 0.8), 1.0, 1e-6)
    full = DesignLoop(_table_game(p, 10), 40, progress=False, seed=1, hyperparameters=h).run()
    stds = {n: s.max() for n, s in full.trace_std}
    tol = float(np.median(list(stds.values())))
    first = min(n for n, s in stds.items() if s <= tol)
    est = DesignLoop(_table_game(p, 10), 40, progress=False, seed=1, hyperparameters=h, tol=tol).run()
    assert est.info["target_reached"] and est.info["target_evaluations"] == first == est.evaluations
    game = _table_game(p, 10)
    span = abs(float(game(np.ones((1, p), bool))[0] - game(np.zeros((1, p), bool))[0]))
    est = DesignLoop(game, 40, progress=False, seed=1, hyperparameters=h, rtol=tol / span).run()
    assert est.evaluations == first  # relative form: rtol * |v(N) - v(empty)|

    # the fitted surrogate's read-out (with the structure read-out: tests/design/test_structure_readout.py)
    alone = ShaplEIG.from_options(structures=(), probe_degenerate=False)
    refitted = alone.estimate(_table_game(p, 10), 60, seed=1)
    tol = float(np.median([s.max() for _, s in refitted.trace_std]))
    est = alone.estimate(_table_game(p, 10), 60, seed=1, tol=tol)
    assert est.info["target_reached"] and est.std.max() <= tol and est.evaluations <= 60
    assert all(s.max() > tol for _, s in est.trace_std[:-1])
    # unreachable target: the whole budget, never more, and the result says so
    est = ShaplEIG().estimate(_table_game(p, 10), 20, seed=1, tol=1e-30)
    assert not est.info["target_reached"] and est.evaluations == 20
    for bad in (0, -1.0, float("nan"), "1e-3", True):
        with pytest.raises(ValueError, match="tol must be"):
            ShaplEIG().estimate(_table_game(p, 10), 20, tol=bad)


@pytest.mark.torch
def test_default_and_published_clone():
    from sklearn.base import clone

    for est in (ShaplEIG(), ShaplEIG.published(), ShaplEIG(surrogate="shared", tol=0.1)):
        twin = clone(est)
        assert twin.get_params() == est.get_params() and twin.surrogate == est.surrogate
    assert ShaplEIG().options.ard is None and ShaplEIG.from_options(ard=False).surrogate == "shared"


# -- the Laplace evidence (surrogate="laplace") --------------------------------------------------

def test_laplace_evidence_gradient_and_gaussian_integral():
    """The log-lengthscale objective's gradient equals its finite differences; the Laplace term
    equals a direct numerical integral over log l for the shared kernel (one lengthscale, c and s
    held at the MAP), where the integrand is close to Gaussian."""
    from shapleig.gp.evidence import _grad_u, laplace_log_evidence
    from shapleig.gp.numpy_fit import MapProblem, fit_map_numpy

    rng = np.random.default_rng(0)
    p = 5
    X = all_coalitions(p)[rng.choice(32, 12, replace=False)]
    y = X @ rng.normal(size=p) + 0.3 * X[:, 0] * X[:, 1]
    ys, _, _ = standardize(y)
    for ard in (False, True):
        hyper, _ = fit_map_numpy(Hamming(ard=ard), X, ys, noise=1e-6, seed=0)
        prob = MapProblem.build(Hamming(ard=ard), X, ys, 1e-6)
        ls = hyper.lengthscales if ard else hyper.lengthscales[:1]
        u = np.concatenate([[hyper.mean_constant], [prob.pack(0.0, hyper.params)[1]], np.log(ls)])
        _, g = _grad_u(prob, u)
        num = [(_grad_u(prob, u + e)[0] - _grad_u(prob, u - e)[0]) / 2e-6 for e in np.eye(u.size) * 1e-6]
        np.testing.assert_allclose(g, num, atol=1e-5)
    hyper, _ = fit_map_numpy(Hamming(ard=False), X, ys, noise=1e-6, seed=0)
    prob = MapProblem.build(Hamming(ard=False), X, ys, 1e-6)
    u = np.concatenate([[hyper.mean_constant], [prob.pack(0.0, hyper.params)[1]], np.log(hyper.lengthscales[:1])])
    grid = u[2] + np.linspace(-6, 6, 2001)
    vals = np.array([-_grad_u(prob, np.array([u[0], u[1], v]))[0] for v in grid])
    direct = vals.max() + np.log(np.trapezoid(np.exp(vals - vals.max()), grid))
    assert laplace_log_evidence(X, y, hyper) == pytest.approx(direct, abs=0.1)


def test_laplace_mode_weighs_by_laplace_evidence():
    from shapleig.gp.evidence import laplace_log_evidence

    p = 6
    game = _table_game(p, 1)
    rng = np.random.default_rng(0)
    X = all_coalitions(p)[rng.choice(2**p, 24, replace=False)]
    y = game(X)
    fits = _fit_kernels(X, y, "laplace")
    assert [k.hyper.kernel for k in fits] == [Hamming(ard=False), Hamming(ard=True)]
    ev = np.array([laplace_log_evidence(X, y, k.hyper) for k in fits])
    np.testing.assert_allclose([k.log_evidence for k in fits], ev)
    np.testing.assert_allclose([k.weight for k in fits], evidence_weights(ev))
    assert ShaplEIG(surrogate="laplace").estimate(game, 14, seed=0).info["surrogate"] == "laplace"


# -- the Laplace evidence's size limit (issue 34, item 6) -------------------------------------------

class _Counting:
    """A linear game that counts the coalitions it is asked for."""

    def __init__(self, p: int):
        self.n_players = p
        self.rows = 0

    def __call__(self, Z):
        self.rows += len(Z)
        return np.asarray(Z, dtype=float).sum(axis=1)


def test_laplace_refuses_more_than_its_player_limit_before_evaluating():
    """Its Hessian costs 2p + 1 gradient evaluations per ARD kernel and refit (O(p^4): ~10x the default at p = 600)."""
    from shapleig import DesignLoop, GameError, ShaplEIG
    from shapleig.design.estimators import GPLeverage
    from shapleig.gp.evidence import LAPLACE_MAX_PLAYERS

    assert LAPLACE_MAX_PLAYERS == 200
    game = _Counting(201)
    for est in (ShaplEIG(surrogate="laplace"), GPLeverage(surrogate="laplace")):
        assert est.max_players == 200
        with pytest.raises(GameError, match=r"at most 200 players \(surrogate='laplace': .*2p \+ 1 = 403 evaluations"):
            est.estimate(game, 300, seed=0)
    with pytest.raises(ValueError, match=r"the surrogate takes at most 200 players \(surrogate='laplace'"):
        DesignLoop(game, 300, surrogate="laplace")
    assert game.rows == 0
    # at the limit, and for every other surrogate, no limit is set
    DesignLoop(_Counting(200), 300, surrogate="laplace")
    for surrogate in ("auto", "shared", "ard", "graded", "graded-ard", "graded-auto"):
        assert ShaplEIG(surrogate=surrogate).max_players is None
        DesignLoop(_Counting(601), 700, surrogate=surrogate)
