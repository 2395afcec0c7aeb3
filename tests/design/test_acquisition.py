"""The Acquisition base, its subclasses and registry, and acquisition objects in ShaplEIG and explain."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from shapleig import AcquisitionError, FunctionGame, ShaplEIG, explain
from shapleig.design.acquisition import (
    EIG,
    Acquisition,
    Leverage,
    PoolView,
    RandomAcquisition,
    Uncertainty,
    acquisition_name,
    acquisition_names,
    check_acquisition,
    check_scores,
    make_acquisition,
    method_name,
    random_indices,
    register_acquisition,
    unregister_acquisition,
)
from shapleig.design.estimators import GPLeverage
from shapleig.design.initial import leverage_design
from shapleig.design.loop import DesignLoop
from shapleig.design.options import LoopOptions
from shapleig.games.coalitions import all_coalitions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior


def _game(p: int = 6, seed: int = 0) -> FunctionGame:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=p)
    return FunctionGame(lambda Z: Z @ w + 0.7 * Z[:, 0] * Z[:, 1] - 0.4 * Z[:, 2] * Z[:, 3] * Z[:, 4], n_players=p)


class LargestFirst(Acquisition):
    """Deterministic and posterior-free in effect: the largest available coalition, ties to pool order."""

    def score(self, candidates):
        return np.where(candidates.available, candidates.W.sum(axis=1).astype(float), -np.inf)


class CountingEIG(EIG):
    """EIG that counts its score calls (proves the loop calls the object it was given)."""

    name = "counting-eig"

    def __init__(self):
        self.calls = 0

    def score(self, candidates):
        self.calls += 1
        return super().score(candidates)


def _same_estimate(a, b) -> None:
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.std, b.std)
    np.testing.assert_array_equal(a.covariance, b.covariance)
    assert [n for n, _ in a.trace] == [n for n, _ in b.trace]
    for (_, u), (_, v) in zip(a.trace, b.trace):
        np.testing.assert_array_equal(u, v)


# -- the built-in objects are exactly the names ------------------------------------------------

@pytest.mark.parametrize(("instance", "name", "options"), [
    (EIG(), "eig", {}),
    (EIG(), "eig", {"batch_size": 3}),
    (Uncertainty(), "uncertainty", {"batch_size": 2}),
    (RandomAcquisition(), "random", {"batch_size": 2}),
])
def test_an_instance_gives_exactly_the_named_estimate(instance, name, options):
    game = _game()
    by_name = ShaplEIG.from_options(acquisition=name, refit="every", **options).estimate(game, 20, seed=3)
    by_object = ShaplEIG.from_options(acquisition=instance, refit="every", **options).estimate(game, 20, seed=3)
    _same_estimate(by_name, by_object)
    assert by_object.method == by_name.method
    assert by_object.info["acquisition"] == name
    if name == "eig":  # and the default (no acquisition given) is the same run
        _same_estimate(ShaplEIG.from_options(**options).estimate(game, 20, seed=3),
                       ShaplEIG.from_options(acquisition=EIG(), **options).estimate(game, 20, seed=3))


def test_the_loop_calls_the_object_it_was_given():
    acq = CountingEIG()
    est = ShaplEIG(acquisition=acq, refit="never").estimate(_game(), 14, seed=0)
    assert acq.calls == 14 - 7  # one score per acquisition step (budget - (p + 1))
    assert est.method == "shapleig-counting-eig" and est.info["acquisition"] == "counting-eig"
    # the same picks as the default: the subclass only counts
    _same_estimate(est, ShaplEIG(refit="never").estimate(_game(), 14, seed=0))


def test_a_user_defined_acquisition_selects():
    p = 6
    loop = DesignLoop(_game(p), 14, acquisition=LargestFirst(), refit="never", seed=0)
    est = loop.run()
    assert est.method == "shapleig-largestfirst"
    picked = np.concatenate(loop.selected)
    pool = loop.pool.W
    # dense reference: the 7 largest pool coalitions, in pool order within a size
    order = sorted(range(len(pool)), key=lambda j: (-int(pool[j].sum()), j))
    np.testing.assert_array_equal(picked, pool[order[:7]])
    # and not what the EIG picks
    eig = DesignLoop(_game(p), 14, refit="never", seed=0)
    eig.run()
    assert not np.array_equal(np.concatenate(eig.selected), picked)


def test_user_acquisition_with_batches_and_sklearn_clone():
    from sklearn.base import clone

    est = ShaplEIG(acquisition=LargestFirst(), batch_size=3)
    twin = clone(est)
    assert isinstance(twin.acquisition, LargestFirst) and twin.acquisition == est.acquisition
    a = est.estimate(_game(), 16, seed=1)
    b = twin.estimate(_game(), 16, seed=1)
    _same_estimate(a, b)


def test_explain_runs_a_user_defined_acquisition():
    rng = np.random.default_rng(0)
    background, x = rng.normal(size=(10, 5)), np.ones(5)
    beta = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    acq = CountingEIG()
    est = explain(lambda X: X @ beta, background, x, budget=12, method=ShaplEIG(acquisition=acq), seed=0,
                  progress=False, exact_if_cheap=False)
    assert acq.calls == 12 - 6
    # a linear model: the interventional Shapley values are beta * (x - mean background)
    np.testing.assert_allclose(est.values, beta * (x - background.mean(axis=0)), atol=1e-3)


# -- names, the registry and bad input ----------------------------------------------------------

def test_names_aliases_and_the_registry():
    assert acquisition_names()[:4] == ("eig", "uncertainty", "random", "leverage")
    assert check_acquisition("variance") == "uncertainty" and check_acquisition("shapley_eig") == "eig"
    assert isinstance(make_acquisition("posterior_variance"), Uncertainty)
    assert make_acquisition("eig") == EIG() and make_acquisition("eig") is not make_acquisition("eig")
    acq = LargestFirst()
    assert make_acquisition(acq) is acq and acquisition_name(acq) == "largestfirst"
    assert method_name("eig") == "shapleig" and method_name("random") == "shapleig-random"
    assert method_name(LargestFirst()) == "shapleig-largestfirst"
    assert method_name("leverage") == "shapleig-leverage-pool"  # not the one-shot GP+Leverage arm's name
    assert method_name(EIG(), base="mine") == "mine"
    register_acquisition(LargestFirst)
    try:
        assert isinstance(make_acquisition("largestfirst"), LargestFirst)
        assert LoopOptions(acquisition="largestfirst").acquisition == "largestfirst"
        with pytest.raises(ValueError, match="already registered"):
            register_acquisition(type("Impostor", (LargestFirst,), {"name": "largestfirst"}))
        # the same class defined again (a re-run cell) takes its name back
        again = type("LargestFirst", (Acquisition,), {"score": LargestFirst.score, "__module__": __name__})
        assert register_acquisition(again) is again and isinstance(make_acquisition("largestfirst"), again)
    finally:
        unregister_acquisition("largestfirst")
    with pytest.raises(ValueError, match="unknown acquisition"):
        make_acquisition("largestfirst")


@pytest.mark.parametrize(("value", "error", "match"), [
    ("greedy", ValueError, r"unknown acquisition 'greedy'.*'eig'"),
    (3, TypeError, "acquisition must be a name"),
    (LargestFirst, TypeError, r"an instance: LargestFirst\(\)"),
    (lambda cand: cand.eig(), TypeError, "Acquisition instance"),
])
def test_bad_acquisitions_are_refused_naming_the_option(value, error, match):
    with pytest.raises(error, match=match):
        ShaplEIG(acquisition=value)
    with pytest.raises(TypeError, match="Acquisition subclass"):
        register_acquisition(int)


def test_subclass_names_and_the_abstract_base():
    with pytest.raises(TypeError):
        Acquisition()  # score is abstract

    class Sub(EIG):
        pass

    assert Sub.name == "sub" and Sub.method is None and EIG.method == "shapleig"
    assert Sub() != EIG() and EIG() == EIG() and hash(EIG()) == hash(EIG())
    assert repr(CountingEIG()) == "CountingEIG(calls=0)"

    class Weighted(EIG):
        def __init__(self, weights):
            self.weights = np.asarray(weights, dtype=float)

    assert Weighted([1, 2]) == Weighted([1, 2]) and Weighted([1, 2]) != Weighted([1, 3])
    assert Weighted([1, 2]) != Weighted([1, 2, 3]) and Weighted([1, 2]) != "eig"
    assert LoopOptions(acquisition=Weighted([1, 2])) == LoopOptions(acquisition=Weighted([1, 2]))


# -- selection ---------------------------------------------------------------------------------

def _candidates(p: int = 5):
    h = Hyperparameters.hamming(np.linspace(0.5, 1.1, p), 1.0, 1e-6, 0.0)
    rng = np.random.default_rng(1)
    X = np.concatenate([np.zeros((1, p), bool), np.ones((1, p), bool), rng.random((4, p)) < 0.5])
    post = ShapleyPosterior(h, X, rng.normal(size=X.shape[0]))
    return post.candidates(all_coalitions(p)[1:-1])


def test_greedy_select_is_argmax_score_with_conditioning():
    cand, ref = _candidates(), _candidates()
    picks = EIG().select(cand, 3)
    for j in picks:  # dense reference: argmax of the EIG over the remaining candidates, by hand
        e = ref.eig()
        assert int(j) == int(np.argmax(e))
        ref.condition(int(np.argmax(e)))
    assert not cand.available[picks].any()
    with pytest.raises(ValueError, match="q must be >= 1"):
        Uncertainty().select(_candidates(), 0)
    with pytest.raises(ValueError, match="needs a numpy Generator"):
        RandomAcquisition().select(_candidates(), 2)


def test_random_on_a_pool_view_matches_the_candidate_posterior():
    cand = _candidates()
    view = PoolView(cand.W, cand.available)
    a = RandomAcquisition().select(cand, 4, np.random.default_rng(7))
    b = RandomAcquisition().select(view, 4, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert view.selected == b.tolist() and not view.available[b].any()
    j = int(np.flatnonzero(view.available)[0])
    assert view.condition(j) == 0.0 and view.selected[-1] == j  # no information gain is computed
    with pytest.raises(ValueError, match="already picked"):
        view.condition(int(b[0]))


def test_random_picks_are_distinct_available_indices_for_every_seed():
    """Without replacement: q picks of the available rows are distinct (a repeat would pick a
    coalition twice and then be refused by the pool), and asking for more than is available
    gives each available row once."""
    available = np.zeros(12, dtype=bool)
    available[[1, 2, 5, 7, 8, 11]] = True
    for seed in range(40):
        picks = random_indices(available, 4, np.random.default_rng(seed))
        assert len(picks) == 4 and len(set(picks.tolist())) == 4 and available[picks].all(), (seed, picks)
        every = random_indices(available, 10, np.random.default_rng(seed))
        assert sorted(every.tolist()) == [1, 2, 5, 7, 8, 11], (seed, every)
        view = PoolView(np.zeros((12, 3), dtype=bool), available)
        chosen = RandomAcquisition().select(view, 6, np.random.default_rng(seed))
        assert sorted(chosen.tolist()) == [1, 2, 5, 7, 8, 11] and not view.available.any()
    assert random_indices(np.zeros(5, dtype=bool), 3, np.random.default_rng(0)).shape == (0,)
    # the random acquisition's scores: 0 for every available candidate, -inf for the others
    view = PoolView(np.zeros((12, 3), dtype=bool), available)
    assert view.n_candidates == 12
    np.testing.assert_array_equal(RandomAcquisition().score(view), np.where(available, 0.0, -np.inf))


def test_pool_only_acquisitions_never_build_a_candidate_state(monkeypatch):
    """Random and leverage picks do not read the posterior: the loop hands them the pool's
    availability and never builds the O(pool x archive) candidate state."""
    assert not Leverage().uses_posterior and not RandomAcquisition().uses_posterior and EIG().uses_posterior

    def refused(self):
        raise AssertionError("a candidate state was built")

    monkeypatch.setattr(DesignLoop, "_candidate_state", refused)
    game = FunctionGame(lambda Z: Z @ np.arange(1.0, 6.0), 5)
    for name in ("leverage", "random"):
        loop = DesignLoop(game, 14, acquisition=name, pool_size=32, seed=0, batch_size=2)
        assert loop.run().evaluations == 14
    with pytest.raises(AssertionError, match="candidate state"):
        DesignLoop(game, 14, acquisition="eig", pool_size=32, seed=0).run()


def test_leverage_scores_on_a_pool_without_proper_coalitions():
    """Only the empty coalition left: it carries all the mass; an empty pool scores nothing."""
    only_empty = PoolView(np.zeros((1, 4), dtype=bool), np.ones(1, dtype=bool))
    np.testing.assert_array_equal(Leverage().score(only_empty), [1.0])
    assert Leverage().score(PoolView(np.zeros((0, 4), dtype=bool), np.zeros(0, dtype=bool))).shape == (0,)


def test_first_argmax_takes_the_first_score_within_the_tolerance():
    from shapleig.design.acquisition import first_argmax

    assert first_argmax(np.array([0.5, 1.0]), rtol=0.5) == 0  # 0.5 is exactly 0.5 below 1: a tie
    assert first_argmax(np.array([0.4999, 1.0]), rtol=0.5) == 1
    assert first_argmax(np.array([1.0, 3.0, 3.0]), rtol=0.0) == 1  # exact ties: the first
    assert first_argmax(np.array([-np.inf, -np.inf])) == 0
    assert first_argmax(np.array([-2.0, -1.0]), rtol=1.0) == 0  # within |best| of the best


def test_leverage_scores_make_sizes_uniform():
    p = 5
    W = all_coalitions(p)[1:-1]  # sizes 1..4, with 5, 10, 10, 5 coalitions
    view = PoolView(W, np.ones(len(W), bool))
    prob = Leverage().score(view)
    sizes = W.sum(axis=1)
    for k in range(1, p):  # each size carries 1/4 of the mass, spread evenly within it
        np.testing.assert_allclose(prob[sizes == k], 0.25 / np.sum(sizes == k))
    view.available[sizes == 1] = False
    prob = Leverage().score(view)
    assert np.all(prob[sizes == 1] == -np.inf)
    np.testing.assert_allclose(prob[sizes == 4], 1 / 3 / 5)
    # draws: every size about equally often (4000 draws of one pick each, 4 sizes; 5 sigma)
    rng = np.random.default_rng(0)
    counts = np.zeros(p + 1)
    for _ in range(4000):
        j = Leverage().select(PoolView(W, np.ones(len(W), bool)), 1, rng)[0]
        counts[sizes[j]] += 1
    assert np.all(np.abs(counts[1:p] - 1000) < 5 * np.sqrt(4000 * 0.25 * 0.75))


def test_leverage_in_the_loop_and_as_the_gp_leverage_sample():
    est = ShaplEIG(acquisition="leverage", refit="never").estimate(_game(), 16, seed=2)
    assert est.evaluations == 16 and est.method == "shapleig-leverage-pool"
    # the one-shot arm draws its whole sample from Leverage.design (= leverage_design)
    np.testing.assert_array_equal(Leverage().design(6, 12, np.random.default_rng(4)),
                                  leverage_design(6, np.random.default_rng(4), size=12))
    assert GPLeverage().estimate(_game(), 12, seed=0).method == "shapleig-leverage"


def test_an_acquisition_instance_is_not_shared_state_between_copies():
    est = ShaplEIG(acquisition=CountingEIG())
    twin = copy.deepcopy(est)
    twin.estimate(_game(), 9, seed=0)
    assert twin.acquisition.calls == 2 and est.acquisition.calls == 0


@pytest.mark.torch
def test_the_botorch_face_of_a_user_defined_acquisition():
    import torch

    from shapleig.gp.kernels import Hamming
    from shapleig.gp.torch_model import build_model
    from shapleig.interop.botorch_acquisition import AcquisitionFace, ShapleyEIG

    p = 5
    h = Hyperparameters.hamming(np.linspace(0.5, 1.1, p), 1.0, 1e-6, 0.0)
    rng = np.random.default_rng(1)
    X = all_coalitions(p)[rng.choice(32, 10, replace=False)]
    y = rng.normal(size=10)
    model = build_model(X, y, Hamming(ard=True), noise_std=1e-6, init=h)
    post = ShapleyPosterior(h, X, y)
    W = all_coalitions(p)[[1, 2, 12, 30]]
    face = AcquisitionFace(model, CountingEIG(), posterior=post)
    joint = face(torch.as_tensor(W[None, 1:3], dtype=torch.float64))  # 1 x 2 x p
    cand = post.candidates(W[1:3])
    expected = cand.eig()[0]
    cand.condition(0)
    expected += cand.eig()[1]
    assert float(joint[0]) == pytest.approx(expected, rel=1e-10) and face.acquisition.calls == 2
    eig = ShapleyEIG(model, posterior=post)(torch.as_tensor(W[:, None], dtype=torch.float64))
    np.testing.assert_allclose(eig.numpy(), post.candidates(W).eig(), rtol=1e-10, atol=1e-14)
    face = AcquisitionFace(model, LargestFirst(), posterior=post)
    sizes = face(torch.as_tensor(W[:, None], dtype=torch.float64))
    np.testing.assert_array_equal(sizes.numpy(), W.sum(axis=1))
    with pytest.raises(ValueError, match="RandomSelection"):
        AcquisitionFace(model, "random", posterior=post)


# -- the rules every acquisition's scores obey (issue 34, item 5) --------------------------------

class _Scores(Acquisition):
    """Returns ``make(candidates)``: a broken (or a rule-testing) acquisition."""

    def __init__(self, make):
        self.make = make

    def score(self, candidates):
        return self.make(candidates)


class AllNaN(_Scores):
    """Every score NaN."""


class OneShort(_Scores):
    """One score fewer than the pool."""


class _CountingGame(FunctionGame):
    def __init__(self, p: int):
        w = np.arange(1.0, p + 1.0)
        super().__init__(lambda Z: Z @ w, n_players=p)
        self.rows = 0

    def __call__(self, Z):
        self.rows += len(Z)
        return super().__call__(Z)


_AVAILABLE_ONE = lambda c: np.where(c.available, 1.0, -np.inf)  # noqa: E731 - a valid score vector


@pytest.mark.parametrize(("acquisition", "match"), [
    (AllNaN(lambda c: np.full(len(c.available), np.nan)), r"AllNaN: score\(\) returned NaN for \d+ of \d+ candidates"),
    (OneShort(lambda c: _AVAILABLE_ONE(c)[:-1]), r"OneShort: score\(\) returned shape \((\d+),\) for a pool of"),
    (_Scores(lambda c: np.concatenate([_AVAILABLE_ONE(c), [1.0]])), r"_Scores: score\(\) returned shape"),
    (_Scores(lambda c: _AVAILABLE_ONE(c)[:, None]), r"returned shape \(\d+, 1\)"),
    (_Scores(lambda c: np.full(len(c.available), -np.inf)), r"all \d+ available candidates -inf"),
    (_Scores(lambda c: np.array(["a"] * len(c.available))), r"not real numbers"),
    (_Scores(lambda c: None), r"returned NoneType"),
])
def test_scores_are_checked_at_the_first_selection_naming_the_class(acquisition, match):
    p = 5
    game = _CountingGame(p)
    with pytest.raises(AcquisitionError, match=match):
        ShaplEIG(acquisition=acquisition, refit="never").estimate(game, 12, seed=0)
    assert game.rows == p + 1  # the initial design only: the first selection stopped the run
    if isinstance(acquisition, (AllNaN, OneShort)):  # the same check on the posterior-free path
        acquisition.uses_posterior = False
        with pytest.raises(AcquisitionError, match=match):
            ShaplEIG(acquisition=acquisition, refit="never").estimate(_CountingGame(p), 12, seed=0)


def test_scores_may_exclude_with_minus_inf_pick_plus_inf_first_and_ignore_unavailable_entries():
    W = all_coalitions(4)[1:-1]  # 14 proper coalitions, pool order = code order
    sizes = W.sum(axis=1)
    # finite scores everywhere (unavailable included): the largest size wins among available rows only
    view = PoolView(W, np.arange(14) != 6)  # code 7 = {0, 1, 2}, the first size-3 coalition, taken
    assert _Scores(lambda c: sizes.astype(float)).select(view, 1).tolist() == [10]  # code 11 = {0, 1, 3}
    # +inf is picked first (ties among +inf to pool order), -inf never while anything else is left
    scores = np.zeros(14)
    scores[[4, 9]] = np.inf
    scores[[0, 1, 2]] = -np.inf
    plus = _Scores(lambda c: scores)
    pool = PoolView(W, np.ones(14, dtype=bool))
    picks = plus.select(pool, 11).tolist()
    assert picks[:2] == [4, 9] and sorted(picks[2:]) == [3, 5, 6, 7, 8, 10, 11, 12, 13]
    with pytest.raises(AcquisitionError, match=r"_Scores: score\(\) gave all 3 available candidates -inf"):
        plus.select(pool, 1)  # only the excluded ones are left: nothing to pick
    # NaN is refused wherever it is, unavailable entries included
    with pytest.raises(AcquisitionError, match=r"returned NaN for 1 of 14 candidates \(first: candidate 6\)"):
        _Scores(lambda c: np.where(c.available, 1.0, np.nan)).select(PoolView(W, np.arange(14) != 6), 1)
    # an acquisition that excludes all but the singletons runs until they are spent
    singles = _Scores(lambda c: np.where(c.available & (c.W.sum(axis=1) == 1), 1.0, -np.inf))
    assert sorted(singles.select(PoolView(W, np.ones(14, dtype=bool)), 4).tolist()) == [0, 1, 3, 7]
    # bool and integer scores are real numbers
    assert check_scores(np.ones(14, dtype=bool), view, "x").dtype == np.float64
    assert check_scores(list(range(14)), view, "x").tolist() == list(map(float, range(14)))
