"""Tests for the design loop, the acquisition functions and the ShaplEIG estimator."""

from __future__ import annotations

import numpy as np
import pytest

from shapleig import FunctionGame, exact_shapley
from shapleig.design.acquisition import EIG, first_argmax, make_acquisition
from shapleig.design.estimators import ShaplEIG
from shapleig.design.loop import DesignLoop
from shapleig.errors import BudgetError, CoalitionError, GameError
from shapleig.games.coalitions import all_coalitions, coalition_keys, to_bitmask
from shapleig.gp.kernels import Hamming, HammingParams, SizeKernel, SizeParams
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior
from shapleig.runs.budget import BudgetedGame


class TableGame:
    """A game given by a full value table in bit order; counts calls and coalitions asked for."""

    def __init__(self, table: np.ndarray):
        self.table = np.asarray(table, dtype=np.float64)
        self.n_players = int(np.log2(self.table.size))
        self.calls = 0
        self.rows: list[bytes] = []

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.rows.extend(coalition_keys(Z))
        return self.table[to_bitmask(Z)]


def _random_table(p: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=2**p)


def _smooth_table(p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Z = all_coalitions(p).astype(float)
    w = rng.normal(size=p)
    return Z @ w + 0.5 * Z[:, 0] * Z[:, 1] - 0.3 * Z[:, 1] * Z[:, 2] * Z[:, 3] + 2.0


def _fixed_hyper(p: int) -> Hyperparameters:
    return Hyperparameters.hamming(np.linspace(0.4, 1.2, p), 1.3, 1e-6, 0.0)


# -- exactness at full budget ------------------------------------------------------------------

def test_full_budget_recovers_exact_shapley_values():
    p = 6
    game = TableGame(_random_table(p, 0))
    phi = exact_shapley(game)
    # noise 1e-10: posterior mean interpolates, error shrinks linearly in the noise (docs/math.md §12.7)
    est = DesignLoop(game, 2**p, refit="never", noise=1e-10, progress=False, seed=1).run()
    assert est.evaluations == 2**p
    np.testing.assert_allclose(est.values, phi, atol=1e-6)
    assert est.values.sum() == pytest.approx(game.table[-1] - game.table[0], abs=1e-6)
    assert np.all(est.std < 1e-3 * np.abs(phi).max())


def test_full_budget_default_noise_is_close_and_efficient():
    p = 5
    game = TableGame(_smooth_table(p, 3))
    phi = exact_shapley(game)
    est = DesignLoop(game, 2**p, refit="never", progress=False, seed=0).run()
    # the default standardised noise 1e-6 shrinks by ~1e-6 relative to the data scale
    np.testing.assert_allclose(est.values, phi, atol=1e-4 * np.abs(phi).max())
    assert est.values.sum() == pytest.approx(game.table[-1] - game.table[0], abs=1e-4)
    assert est.baseline == game.table[0]


@pytest.mark.slow
def test_full_budget_exact_p8_with_refits():
    p = 8
    game = TableGame(_random_table(p, 1))
    phi = exact_shapley(game)
    est = DesignLoop(game, 2**p, refit="decaying", noise=1e-10, progress=False, seed=2).run()
    np.testing.assert_allclose(est.values, phi, atol=1e-6)
    assert est.values.sum() == pytest.approx(game.table[-1] - game.table[0], abs=1e-6)


# -- budget, calls, determinism -------------------------------------------------------------

@pytest.mark.parametrize("batch_size", [1, 3])
def test_budget_and_one_call_per_batch(batch_size):
    p, budget = 5, 17
    game = TableGame(_smooth_table(p, 1))
    seen = []
    loop = DesignLoop(game, budget, batch_size=batch_size, refit="never", progress=False,
                      callbacks=(lambda lp: seen.append(lp.evaluations),))
    est = loop.run()
    assert est.evaluations == budget == len(game.rows) == len(set(game.rows))
    n_acq = budget - (p + 1)
    assert game.calls == 1 + -(-n_acq // batch_size)  # design in one call, then one call per batch
    assert seen == [n for n, _ in est.trace]
    assert seen[0] == p + 1 and seen[-1] == budget and np.all(np.diff(seen) > 0)
    assert est.info["n_fits"] == 2  # the initial fit and the final refit


def test_same_seed_same_estimate():
    p, budget = 5, 12
    runs = [DesignLoop(TableGame(_smooth_table(p, 2)), budget, seed=11, progress=False, refit="every").run() for _ in range(2)]
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    np.testing.assert_array_equal(runs[0].covariance, runs[1].covariance)
    assert runs[0].info["n_fits"] == budget - (p + 1) + 1  # every step + final refit
    other = DesignLoop(TableGame(_smooth_table(p, 2)), budget, seed=12, progress=False).run()
    assert not np.array_equal(other.values, runs[0].values)


@pytest.mark.torch
def test_thread_limit_does_not_reach_the_game():
    import torch

    outside = torch.get_num_threads()
    seen = []
    table = _smooth_table(5, 0)

    def fn(Z):
        seen.append(torch.get_num_threads())
        return table[to_bitmask(Z)]

    DesignLoop(FunctionGame(fn, 5), 10, refit="never", progress=False, threads=1).run()
    assert seen and all(n == outside for n in seen)
    assert torch.get_num_threads() == outside


# -- frozen hyperparameters ------------------------------------------------------------------

def test_selection_is_value_independent_under_frozen_hyperparameters():
    p, budget = 6, 30
    t1 = _smooth_table(p, 0)
    g1 = TableGame(t1)
    loop1 = DesignLoop(g1, budget, refit="never", progress=False, seed=4)
    loop1.run()
    # a second game that agrees on the initial design (so the single fit is identical) but has
    # completely different values everywhere else
    t2 = np.random.default_rng(9).normal(size=2**p) * 50
    design_codes = to_bitmask(loop1.X[: p + 1])
    t2[design_codes] = t1[design_codes]
    loop2 = DesignLoop(TableGame(t2), budget, refit="never", progress=False, seed=4)
    loop2.run()
    np.testing.assert_array_equal(loop1.X, loop2.X)
    assert not np.allclose(loop1.y, loop2.y)
    # and with fixed hyperparameters, no fit at all: any two games give the same sequence
    h = _fixed_hyper(p)
    a = DesignLoop(TableGame(t1), budget, hyperparameters=h, progress=False, seed=4)
    b = DesignLoop(TableGame(np.cos(np.arange(2**p))), budget, hyperparameters=h, progress=False, seed=4)
    a.run(), b.run()
    np.testing.assert_array_equal(a.X, b.X)
    assert a.info()["n_fits"] == 0 and a.info()["refit"] == "fixed"


def test_greedy_batch_equals_sequential_selections():
    p = 7
    h = _fixed_hyper(p)
    rng = np.random.default_rng(0)
    X = np.concatenate([np.zeros((1, p), bool), np.ones((1, p), bool), rng.random((6, p)) < 0.5])
    post = ShapleyPosterior(h, X, rng.normal(size=X.shape[0]))
    W = all_coalitions(p)[1:-1]
    for acq in ("eig", "uncertainty"):
        batch = make_acquisition(acq).select(post.candidates(W), 4)
        seq_cand = post.candidates(W)
        sequential = [int(make_acquisition(acq).select(seq_cand, 1)[0]) for _ in range(4)]
        assert batch.tolist() == sequential
        assert len(set(batch.tolist())) == 4
    # and in the loop: batch_size=4 picks the same coalitions as four sequential steps
    game = TableGame(_smooth_table(p, 5))
    seq = DesignLoop(game, 24, hyperparameters=h, progress=False, seed=3)
    seq.run()
    bat = DesignLoop(TableGame(_smooth_table(p, 5)), 24, hyperparameters=h, batch_size=4, progress=False, seed=3)
    bat.run()
    np.testing.assert_array_equal(seq.X, bat.X)
    assert len(bat.trace) == 1 + 4


def test_ties_go_to_pool_order():
    assert first_argmax(np.array([0.5, 1.0 - 1e-14, 1.0, -np.inf])) == 1
    assert first_argmax(np.array([0.5, 1.0 - 1e-6, 1.0])) == 2
    assert first_argmax(np.array([-np.inf, -np.inf, 0.0])) == 2
    # exact-arithmetic ties between complement pairs: the pool puts size 1 before size p - 1, so a
    # frozen run from the design picks the singleton of each tied pair first
    p = 7  # odd p: the paired design is complement-closed, so complement pairs tie exactly
    h = Hyperparameters.hamming(np.full(p, 0.7), 1.0, 1e-6, 0.0)
    loop = DesignLoop(TableGame(_smooth_table(p, 0)), p + 1 + 6, hyperparameters=h, progress=False, seed=0)
    loop.run()
    picks = loop.X[p + 1:]
    for r in range(0, 6, 2):
        np.testing.assert_array_equal(picks[r + 1], ~picks[r])
        assert picks[r].sum() < picks[r + 1].sum()  # with a plain argmax, rounding decides


def test_eig_picks_extremes_first_with_frozen_equal_lengthscales():
    # docs/math.md §11/§12.8: p = 8, b = 0.857, empty archive -> {0, 8}, then 16 extremes in
    # complement pairs, then size-4 coalitions
    from shapleig.design.initial import coalitions_of_size, size_order

    p, b = 8, 0.857
    h = Hyperparameters.hamming(np.full(p, -1.0 / (p * np.log(b))), 1.0, 1e-6, 0.0)
    post = ShapleyPosterior(h, np.zeros((0, p), dtype=bool), np.zeros(0))
    W = np.concatenate([coalitions_of_size(p, k) for k in size_order(p)])
    picks = W[EIG().select(post.candidates(W), 22)]
    sizes = picks.sum(axis=1)
    assert sorted(sizes[:2]) == [0, 8]
    assert np.isin(sizes[2:18], [1, 7]).all() and len(set(coalition_keys(picks[2:18]))) == 16
    for r in range(2, 18, 2):
        np.testing.assert_array_equal(picks[r + 1], ~picks[r])
    assert (sizes[18:] == 4).all()


# -- pool exhaustion, options -----------------------------------------------------------------

def test_small_pool_warns_and_caps():
    p = 6
    game = TableGame(_smooth_table(p, 0))
    with pytest.warns(UserWarning, match="candidate pool"):
        est = DesignLoop(game, 40, pool_size=10, max_candidates=10, refit="never", progress=False).run()
    assert est.evaluations == p + 1 + 10


@pytest.mark.parametrize("acquisition", ["uncertainty", "random"])
def test_other_acquisitions_run(acquisition):
    p = 5
    game = TableGame(_smooth_table(p, 1))
    est = DesignLoop(game, 14, acquisition=acquisition, refit="never", progress=True, seed=0).run()
    assert est.evaluations == 14 and np.isfinite(est.values).all()
    assert est.info["acquisition"] == acquisition and est.method == f"shapleig-{acquisition}"
    again = DesignLoop(TableGame(_smooth_table(p, 1)), 14, acquisition=acquisition, refit="never",
                       progress=False, seed=0).run()
    np.testing.assert_array_equal(est.values, again.values)


def test_raw_noise_convention_and_info():
    p = 5
    table = 1e-3 * _smooth_table(p, 1)
    est = DesignLoop(TableGame(table), 12, noise_convention="raw", refit="geometric", progress=False).run()
    info = est.info
    assert info["noise_convention"] == "raw"
    assert info["noise_standardized"] > 1e-6  # 1e-6 / s_y^2 with s_y ~ 1e-3
    assert info["fit_seconds"] > 0 and info["selection_seconds"] >= info["fit_seconds"]
    assert info["n_fits"] >= 2


# -- bad input -------------------------------------------------------------------------------

def test_bad_input_errors():
    p = 5
    game = TableGame(_smooth_table(p, 0))
    with pytest.raises(BudgetError, match=r"p \+ 1 = 6"):
        DesignLoop(game, p + 1)
    with pytest.raises(BudgetError):
        DesignLoop(game, 2.5)
    with pytest.raises(GameError):
        DesignLoop(FunctionGame(lambda Z: Z.sum(1), 1), 10)
    with pytest.raises(ValueError, match="eig"):
        DesignLoop(game, 10, acquisition="ucb")
    with pytest.raises(ValueError, match="every"):
        DesignLoop(game, 10, refit="sometimes")
    with pytest.raises(ValueError, match="leverage"):
        DesignLoop(game, 10, initial_design="sobol")
    with pytest.raises(ValueError, match="noise convention"):
        DesignLoop(game, 10, noise_convention="natural")
    with pytest.raises(ValueError, match="batch_size"):
        DesignLoop(game, 10, batch_size=0)


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda Z: np.zeros(Z.shape[0] + 1), "shape"),
        (lambda Z: np.where(Z.any(1), 1.0 * Z.sum(1), np.nan), "nan"),
        (lambda Z: np.where(Z.all(1), np.inf, 1.0 * Z.sum(1)), "inf"),
    ],
)
def test_bad_game_values_are_rejected(fn, match):
    with pytest.raises(GameError, match=match):
        DesignLoop(FunctionGame(fn, 5), 12, progress=False, refit="never").run()


def test_bad_coalitions_are_rejected():
    game = BudgetedGame(TableGame(_smooth_table(4, 0)), 10)
    with pytest.raises(CoalitionError):
        game(np.ones((2, 3), dtype=bool))
    with pytest.raises(CoalitionError):
        game(np.full((2, 4), 0.5))


# -- botorch acquisition functions (the extra shapleig[botorch]) ------------------------------

@pytest.mark.torch
def test_botorch_acquisition_rejects_bad_coalitions():
    import torch

    from shapleig.gp.torch_model import build_model
    from shapleig.interop.botorch_acquisition import ShapleyEIG

    post = ShapleyPosterior(_fixed_hyper(4), all_coalitions(4)[:5], np.arange(5.0))
    model = build_model(all_coalitions(4)[:5], np.arange(5.0), Hamming(ard=True), noise_std=1e-6)
    with pytest.raises(ValueError, match="b x q x 4"):
        ShapleyEIG(model, posterior=post)(torch.zeros(2, 1, 3, dtype=torch.float64))


@pytest.mark.torch
def test_botorch_acquisitions_match_pool_path():
    import torch

    from shapleig.gp.torch_model import build_model
    from shapleig.interop.botorch_acquisition import PosteriorVariance, RandomSelection, ShapleyEIG

    p = 5
    rng = np.random.default_rng(1)
    X = all_coalitions(p)[rng.choice(32, 10, replace=False)]
    y = rng.normal(size=10)
    model = build_model(X, y, Hamming(ard=True), noise_std=1e-6, init=_fixed_hyper(p))
    eig = ShapleyEIG(model)  # posterior read from the model (hyperparameters + raw data)
    post = ShapleyPosterior(_fixed_hyper(p), X, y)
    np.testing.assert_allclose(eig.posterior_phi.mean, post.mean, rtol=1e-10, atol=1e-12)
    W = all_coalitions(p)[[1, 2, 12, 30]]
    cand = post.candidates(W)
    single = eig(torch.as_tensor(W, dtype=torch.float64).unsqueeze(1))  # b x 1 x p
    assert single.shape == (4,)
    # atol: one EIG here is ~4e-6, where roundoff (~1e-15) differs between torch/BLAS builds
    np.testing.assert_allclose(single.numpy(), cand.eig(), rtol=1e-10, atol=1e-14)
    joint = eig(torch.as_tensor(W[None, :2], dtype=torch.float64))  # 1 x 2 x p: chain rule
    cand2 = post.candidates(W[:2])
    expected = cand2.condition(0) + cand2.condition(1)
    assert joint.shape == (1,) and float(joint[0]) == pytest.approx(expected, rel=1e-10)
    # pending points are conditioned on first
    eig.set_X_pending(torch.as_tensor(W[:1], dtype=torch.float64))
    given_pending = float(eig(torch.as_tensor(W[1:2], dtype=torch.float64).unsqueeze(0))[0])
    assert given_pending == pytest.approx(expected - post.candidates(W[:1]).eig()[0], rel=1e-8)
    var = PosteriorVariance(model, posterior=post)
    v = var(torch.as_tensor(W, dtype=torch.float64).unsqueeze(1))
    np.testing.assert_allclose(v.numpy(), post.y_scale**2 * cand.predictive_variance(), rtol=1e-8, atol=1e-15)
    r = RandomSelection(model, seed=0)(torch.zeros(7, 2, p, dtype=torch.float64))
    assert r.shape == (7,) and ((r >= 0) & (r < 1)).all()


# -- estimator front ------------------------------------------------------------------------

def test_shapleig_estimator():
    p = 5
    game = TableGame(_smooth_table(p, 4))
    method = ShaplEIG(refit="never")
    assert method.name == "shapleig" and method.min_budget(p) == p + 2
    est = method.estimate(game, 14, seed=2)
    assert est.method == "shapleig" and est.evaluations == 14 and est.budget == 14
    assert est.std.shape == (p,) and est.covariance.shape == (p, p)
    np.testing.assert_allclose(np.sqrt(np.diag(est.covariance)), est.std, rtol=1e-10)
    assert est.trace[-1][0] == 14 and est.baseline == game.table[0]
    with pytest.raises(BudgetError, match=r"budget >= 7 for p = 5 \(the p \+ 1 = 6 initial-design"):
        method.estimate(game, p + 1)
    with pytest.raises(ValueError, match="acquisition"):
        ShaplEIG(acquisition="thompson")
    assert ShaplEIG(acquisition="random", refit="never").estimate(game, 10).method == "shapleig-random"
    # an existing BudgetedGame is used as is
    bg = BudgetedGame(TableGame(_smooth_table(p, 4)), 12)
    loop = ShaplEIG(refit="never").make_loop(bg, seed=0)
    assert loop.run().evaluations == 12 and bg.remaining == 0


def test_shared_lengthscale_loop():
    """ard=False: every fit has equal lengthscales, the estimate is exact at full budget, and a
    non-boolean value is rejected before any evaluation."""
    p = 5
    game = TableGame(_random_table(p, 5))
    phi = exact_shapley(game)
    # the loop itself at budget 2^p (ShaplEIG().estimate would enumerate instead)
    est = ShaplEIG.from_options(ard=False, noise=1e-10).make_loop(BudgetedGame(game, 2**p), seed=0).run()
    assert est.info["ard"] is False
    ls = np.asarray(est.info["lengthscales"])
    assert ls.shape == (p,) and np.all(ls == ls[0])
    np.testing.assert_allclose(est.values, phi, atol=1e-6)
    short = DesignLoop(TableGame(_smooth_table(p, 1)), 12, ard=False, progress=False, seed=3, refit="every").run()
    assert short.info["n_fits"] == 12 - (p + 1) + 1 and short.info["ard"] is False
    game = TableGame(_smooth_table(p, 1))
    for bad in ("no", 0):
        with pytest.raises(ValueError, match="ard must be"):
            ShaplEIG.from_options(ard=bad)
        with pytest.raises(ValueError, match="ard must be"):
            DesignLoop(game, 10, ard=bad)
    assert game.calls == 0


def test_gp_leverage_arm():
    """GP+Leverage: one call with empty, grand and m - 2 distinct leverage-sampled coalitions, one fit,
    exact at full budget, deterministic per seed, budget checked before any evaluation."""
    from shapleig import GPLeverage

    p = 5
    game = TableGame(_smooth_table(p, 6))
    est = GPLeverage(surrogate="ard", size_trend=True).estimate(game, 14, seed=4)
    assert game.calls == 1 and len(game.rows) == 14 == len(set(game.rows)) == est.evaluations
    assert game.rows[0] == coalition_keys(np.zeros((1, p), dtype=bool))[0]
    assert game.rows[1] == coalition_keys(np.ones((1, p), dtype=bool))[0]
    assert est.method == "shapleig-leverage" and est.trace[-1][0] == 14 and est.baseline == game.table[0]
    assert est.std.shape == (p,) and est.covariance.shape == (p, p)
    # the read-out is the Shapley posterior of the fitted GP on exactly those coalitions
    X = np.array([np.frombuffer(k, dtype=np.uint8) for k in game.rows])
    X = np.unpackbits(X, axis=1)[:, :p].astype(bool)
    size = est.info["size_kernel"]
    h = Hyperparameters(Hamming(ard=True) + SizeKernel(trend=True),
                        (HammingParams(est.info["lengthscales"], est.info["outputscale"]),
                         SizeParams(size["empty_jump"], size["grand_jump"], size["size_variance"],
                                    size["size_lengthscale"])),
                        1e-6, est.info["mean_constant"])
    ref = ShapleyPosterior(h, X, game.table[to_bitmask(X)])
    np.testing.assert_allclose(est.values, ref.mean, rtol=1e-10, atol=1e-12)
    again = GPLeverage(surrogate="ard", size_trend=True).estimate(TableGame(_smooth_table(p, 6)), 14, seed=4)
    np.testing.assert_array_equal(again.values, est.values)
    other = GPLeverage(surrogate="ard", size_trend=True).estimate(TableGame(_smooth_table(p, 6)), 14, seed=5)
    assert not np.array_equal(other.values, est.values)
    # full budget: the posterior mean interpolates every value, so it is exact
    full = TableGame(_random_table(p, 7))
    # (estimate() would enumerate at budget 2^p: the GP itself is run through _estimate)
    est = GPLeverage(noise=1e-10, ard=False)._estimate(BudgetedGame(full, 2**p), 0)
    np.testing.assert_allclose(est.values, exact_shapley(full), atol=1e-6)
    assert est.info["ard"] is False
    assert GPLeverage().estimate(full, 2**p).info["exact"] is True  # the front enumerates
    game = TableGame(_smooth_table(p, 6))
    with pytest.raises(BudgetError, match="shapleig-leverage needs budget >= 3"):
        GPLeverage().estimate(game, 2)
    with pytest.raises(ValueError, match="noise convention"):
        GPLeverage(noise_convention="natural")
    assert game.calls == 0


def test_the_default_pool_grows_with_the_budget():
    """Budgets in the thousands: the default pool holds twice the acquisitions (an explicit one is kept)."""
    p = 12
    game = TableGame(_smooth_table(p, 0))
    loop = DesignLoop(game, 2000, seed=0)
    loop.step()  # the design and the first fit
    assert len(loop.pool) == 2 * (2000 - (p + 1))
    small = DesignLoop(game, 200, seed=0)
    small.step()
    assert len(small.pool) == 1024  # below 512 acquisitions: the default pool as before
