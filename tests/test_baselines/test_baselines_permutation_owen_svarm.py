"""Permutation sampling, Owen / Halved Owen, SVARM, Stratified SVARM and S-SVARM+ (docs/baselines.md §2-§5).

Default run: budget and determinism properties, exactness at full budget, efficiency, size laws,
error messages and a quick unbiasedness sanity check (loose tolerance). ``-m slow``: unbiasedness
on the 7-player voting games within 4 standard errors, the endpoint-grid bias of the reproduction
mode, and the airport n = 100 MSEs of docs/baselines.md §12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import shapleig_baselines as baselines
from shapleig.errors import BudgetError, GameError
from shapleig.games.coalitions import all_coalitions, coalition_keys, to_bitmask
from shapleig.games.exact import exact_shapley, shapley_weights
from shapleig.games.game import FunctionGame
from shapleig_baselines.owen import HalvedOwenSampling, OwenSampling
from shapleig_baselines.permutation import PermutationSampling
from shapleig_baselines.svarm import (
    SVARM,
    StratifiedSVARM,
    StratifiedSVARMPlus,
    exact_phase_cost,
    stratified_size_law,
    svarm_size_laws,
    warmup_cost,
)

# Every estimator of this file, options included: (label, factory).
ESTIMATORS = [
    ("permutation", PermutationSampling),
    ("permutation-antithetic", lambda: PermutationSampling(antithetic=True)),
    ("owen", OwenSampling),
    ("owen-random", lambda: OwenSampling(grid="random")),
    ("owen-endpoint", lambda: OwenSampling(grid="endpoint")),
    ("owen-refill", lambda: OwenSampling(refill=True)),
    ("owen-halved", HalvedOwenSampling),
    ("owen-halved-random", lambda: HalvedOwenSampling(grid="random")),
    ("svarm", SVARM),
    ("stratified-svarm", StratifiedSVARM),
    ("stratified-svarm-uniform", lambda: StratifiedSVARM(sizes="uniform")),
    ("svarm-plus", StratifiedSVARMPlus),
    ("svarm-plus-drop", lambda: StratifiedSVARMPlus(empty_strata="drop")),
    ("svarm-plus-paper", lambda: StratifiedSVARMPlus(sizes="paper")),
]
IDS = [label for label, _ in ESTIMATORS]

VOTING_WEIGHTS = np.array([1, 2, 3, 1, 1, 1, 1], dtype=np.float64)

# Airport game (docs/baselines.md §12): costs per level and the exact Shapley value per level.
AIRPORT_COUNTS = [8, 12, 6, 14, 8, 9, 13, 10, 10, 10]
AIRPORT_LEVEL_VALUES = [
    0.0100000000, 0.0208695652, 0.0333695652, 0.0468830787, 0.0635497454,
    0.0827805146, 0.1060363286, 0.1393696619, 0.1893696619, 0.2893696619,
]

@pytest.fixture(autouse=True)
def _methods_run_themselves_at_full_budget(monkeypatch):
    """These tests check each method's own behaviour at budgets >= 2^p, so the front's
    enumeration of a covered game (tests/test_enumeration.py) is switched off here."""
    import shapleig.estimation.base

    monkeypatch.setattr(shapleig.estimation.base, "covers_game", lambda n_players, budget: False)



class TableGame:
    """Random-table game (i.i.d. normal value per coalition) that records what it evaluates."""

    def __init__(self, n_players: int, seed: int):
        self.n_players = n_players
        self.table = np.random.default_rng(seed).normal(size=1 << n_players)
        self.seen: set[bytes] = set()

    def __call__(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=bool)
        self.seen.update(coalition_keys(z))
        return self.table[to_bitmask(z)]


def voting_game(quota: int) -> FunctionGame:
    """7-player weighted voting game: v(S) = 1[sum_{i in S} w_i >= quota]."""
    return FunctionGame(lambda z: (z @ VOTING_WEIGHTS >= quota).astype(np.float64), 7, name=f"wvg7-q{quota}")


def airport_game() -> tuple[FunctionGame, np.ndarray]:
    """The standard 100-player airport game v(S) = max_{i in S} c_i and its exact values."""
    costs = np.repeat(np.arange(1, 11, dtype=np.float64), AIRPORT_COUNTS)
    game = FunctionGame(lambda z: np.where(z.any(axis=1), (z * costs).max(axis=1), 0.0), 100, name="airport")
    return game, np.repeat(AIRPORT_LEVEL_VALUES, AIRPORT_COUNTS)


# --------------------------------------------------------------------------- budget, determinism
@pytest.mark.parametrize("label,factory", ESTIMATORS, ids=IDS)
def test_budget_respected_and_deterministic_on_random_budgets(label, factory):
    rng = np.random.default_rng(sum(map(ord, label)))
    estimator = factory()
    for case in range(6):
        p = int(rng.integers(4, 10))
        low = estimator.min_budget(p)
        budget = int(rng.integers(low, max(low, 1 << p) + 9))
        seed = int(rng.integers(0, 2**31 - 1))
        game = TableGame(p, seed)
        est = estimator.estimate(game, budget, seed=seed)
        assert est.evaluations <= budget, (label, p, budget)
        assert len(game.seen) == est.evaluations  # seen from the game's side too
        assert est.values.shape == (p,) and np.all(np.isfinite(est.values))
        assert est.info["n_draws"] >= 0 and est.info["accounting"] == "distinct"
        # anytime trace: non-decreasing evaluation counts within budget, ending at the estimate
        counts = [n for n, _ in est.trace]
        assert counts == sorted(counts) and counts[-1] <= budget
        np.testing.assert_allclose(est.trace[-1][1], est.values, rtol=1e-12, atol=1e-12)
        again = estimator.estimate(TableGame(p, seed), budget, seed=seed)
        np.testing.assert_array_equal(est.values, again.values)
        assert again.evaluations == est.evaluations


@pytest.mark.parametrize("label,factory", ESTIMATORS, ids=IDS)
def test_different_seeds_give_different_estimates(label, factory):
    game = voting_game(5)
    estimator = factory()
    budget = max(estimator.min_budget(7), 60)
    values = {tuple(estimator.estimate(game, budget, seed=s).values) for s in range(4)}
    assert len(values) > 1


def test_with_replacement_methods_spend_the_budget_at_large_p():
    # at p = 30 repeats are rare: every with-replacement method should use (almost) all of T
    game = FunctionGame(lambda z: z.sum(axis=1) ** 1.5, 30)
    estimators = (
        PermutationSampling(), SVARM(), StratifiedSVARM(), StratifiedSVARMPlus(), OwenSampling(grid="random")
    )
    for estimator in estimators:
        est = estimator.estimate(game, 2_000, seed=0)
        assert 2_000 - 31 <= est.evaluations <= 2_000, estimator
        assert est.info["stopped"] in ("budget", "design")


def test_permutation_count_and_stop_reason():
    game = FunctionGame(lambda z: z.sum(axis=1) ** 2.0, 40)
    est = PermutationSampling().estimate(game, 1_000, seed=1)
    # prefixes of distinct random permutations rarely repeat beyond size 1: about (T-2)/(p-1)
    assert est.info["n_permutations"] >= (1_000 - 2) // 39
    assert est.info["stopped"] == "budget"


# --------------------------------------------------------------------------- exactness, efficiency
@pytest.mark.parametrize("p", [6, 8])
@pytest.mark.parametrize("options", [{}, {"empty_strata": "drop"}, {"sizes": "paper"}])
def test_svarm_plus_is_exact_at_full_budget(p, options):
    game = TableGame(p, 11)
    est = StratifiedSVARMPlus(**options).estimate(game, 1 << p, seed=5)
    assert est.evaluations == 1 << p
    assert est.info["stopped"] == "support"
    np.testing.assert_allclose(est.values, exact_shapley(game), atol=1e-12)


def test_svarm_plus_without_replacement_never_repeats_a_draw():
    # below full budget every drawn coalition is new: draws + exact phase + warm-up == evaluations
    game = TableGame(8, 3)
    est = StratifiedSVARMPlus().estimate(game, 150, seed=2)
    assert est.evaluations == 150
    assert est.info["n_draws"] + est.info["n_warmup"] + exact_phase_cost(8) == 150


@pytest.mark.parametrize("antithetic", [False, True])
def test_permutation_is_exactly_efficient(antithetic):
    game = TableGame(9, 4)
    est = PermutationSampling(antithetic=antithetic).estimate(game, 200, seed=3)
    full, empty = game.table[(1 << 9) - 1], game.table[0]
    assert est.values.sum() == pytest.approx(full - empty, abs=1e-12)
    for _, values in est.trace:  # complete permutations only: every checkpoint is efficient too
        assert values.sum() == pytest.approx(full - empty, abs=1e-12)


@pytest.mark.parametrize("cls", [StratifiedSVARM, StratifiedSVARMPlus])
@pytest.mark.parametrize("p", [2, 3])
def test_stratified_variants_enumerate_exactly_below_four_players(cls, p):
    game = TableGame(p, 9)
    est = cls().estimate(game, 1 << p, seed=0)
    assert est.info["exact_enumeration"] is True
    np.testing.assert_allclose(est.values, exact_shapley(game), atol=1e-12)


def test_stratified_svarm_exact_phase_strata_are_exact():
    # p = 4: budget 2^4 means the sampled layer (size 2, 6 coalitions) is eventually fully cached,
    # and S-SVARM stops with a mean over a with-replacement sample of it; v(S) depending on |S|
    # only makes every stratum mean exact whatever the sample, so the estimate must be exact.
    game = FunctionGame(lambda z: np.array([0.0, 1.0, 5.0, 6.0, 10.0])[z.sum(axis=1)], 4)
    for est in (StratifiedSVARM(), StratifiedSVARMPlus(empty_strata="drop")):
        out = est.estimate(game, 14, seed=0)
        np.testing.assert_allclose(out.values, np.full(4, 2.5), atol=1e-12)


# --------------------------------------------------------------------------- size laws, costs
def test_warmup_cost_matches_the_paper_w():
    # W = 2p + 1 + 2 sum ceil(p/s) = 97 / 497 / 1141 (docs/baselines.md §5); + v(empty) when charged
    for p, w in [(14, 97), (50, 497), (100, 1141)]:
        assert 2 * p + 1 + warmup_cost(p) == w
        assert StratifiedSVARM().min_budget(p) == w + 1


@pytest.mark.parametrize("p", range(4, 31))
def test_stratified_size_law_matches_the_paper(p):
    law = stratified_size_law(p)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    assert law[:2].sum() == 0 and law[p - 1 :].sum() == 0 and np.all(law[2 : p - 1] > 0)
    np.testing.assert_allclose(law, law[::-1], atol=1e-15)  # symmetric in s <-> p - s
    if p == 4:
        assert law[2] == 1.0
    elif p % 2 == 0:
        h = sum(1.0 / j for j in range(1, p // 2))
        lnp = p * math.log(p)
        assert law[p // 2] == pytest.approx(1.0 / lnp, rel=1e-12)
        assert law[2] == pytest.approx((lnp - 1) / (4 * lnp * (h - 1)), rel=1e-12)
    else:
        h = sum(1.0 / j for j in range(1, (p - 1) // 2 + 1))
        assert law[2] == pytest.approx(1.0 / (4 * (h - 1)), rel=1e-12)
    uniform = stratified_size_law(p, "uniform")
    np.testing.assert_allclose(uniform[2 : p - 1], 1.0 / (p - 3))


def test_svarm_laws_reweight_to_shapley_weights():
    # P+(A | i in A) must equal omega(|A| - 1) and P-(A | i not in A) must equal omega(|A|)
    p = 9
    plus, minus = svarm_size_laws(p)
    omega = shapley_weights(p)
    s = np.arange(1, p + 1)
    p_in = np.sum(plus[1:] * s / p)  # P(i in A+)
    cond_plus = plus[1:] / np.array([math.comb(p, k) for k in s]) / p_in
    np.testing.assert_allclose(cond_plus, omega[s - 1], rtol=1e-12)
    s = np.arange(0, p)
    p_out = np.sum(minus[:p] * (p - s) / p)
    cond_minus = minus[:p] / np.array([math.comb(p, k) for k in s]) / p_out
    np.testing.assert_allclose(cond_minus, omega[s], rtol=1e-12)


# --------------------------------------------------------------------------- bad input
def test_budget_too_small_names_minimum_and_reason():
    game = TableGame(14, 0)
    with pytest.raises(BudgetError, match=r"stratified-svarm needs budget >= 98 for p = 14 \(exact phase"):
        StratifiedSVARM().estimate(game, 97)
    with pytest.raises(BudgetError, match=r"svarm needs budget >= 30 for p = 14 \(warm-up"):
        SVARM().estimate(game, 29)
    with pytest.raises(BudgetError, match=r"permutation needs budget >= 15 for p = 14"):
        PermutationSampling().estimate(game, 14)
    with pytest.raises(BudgetError, match=r"owen needs budget >= 30 for p = 14"):
        OwenSampling().estimate(game, 29)
    with pytest.raises(BudgetError, match=r"owen-halved needs budget >= 60 for p = 14"):
        HalvedOwenSampling().estimate(game, 59)
    with pytest.raises(BudgetError, match=r"svarm-plus needs budget >= 30 for p = 14 \(exact phase 2p\+2\)"):
        StratifiedSVARMPlus(empty_strata="drop").estimate(game, 29)
    assert not game.seen  # validated before anything was evaluated


def test_too_few_players():
    class OnePlayer:
        n_players = 1

        def __call__(self, z):
            return np.zeros(len(z))

    for _, factory in ESTIMATORS:
        with pytest.raises(GameError, match="at least 2 players"):
            factory().estimate(OnePlayer(), 10)
    # below 4 players the stratified variants enumerate, so they need the full table
    with pytest.raises(BudgetError, match=r"needs budget >= 8 for p = 3 \(p < 4 is computed exactly"):
        StratifiedSVARM().estimate(TableGame(3, 0), 7)


def test_bad_options():
    with pytest.raises(ValueError, match="grid"):
        OwenSampling(grid="middle")
    with pytest.raises(ValueError, match="draws_per_cell"):
        OwenSampling(draws_per_cell=0)
    with pytest.raises(ValueError, match="at most one"):
        HalvedOwenSampling(draws_per_cell=None)
    with pytest.raises(ValueError, match="size law"):
        StratifiedSVARM(sizes="harmonic")
    with pytest.raises(ValueError, match="empty_strata"):
        StratifiedSVARMPlus(empty_strata="zero")


def test_registry_builds_these_estimators_with_options():
    assert isinstance(baselines.get("owen", grid="random"), OwenSampling)
    assert isinstance(baselines.get("owen-halved"), HalvedOwenSampling)
    assert baselines.get("svarm-plus", empty_strata="drop").empty_strata == "drop"
    assert baselines.get("stratified-svarm", sizes="uniform").sizes == "uniform"


# --------------------------------------------------------------------------- unbiasedness
UNBIASED = [
    ("permutation", PermutationSampling),
    ("owen", OwenSampling),
    ("owen-random", lambda: OwenSampling(grid="random")),
    ("owen-halved", HalvedOwenSampling),
    ("svarm", SVARM),
    ("stratified-svarm", StratifiedSVARM),
]


def _mean_and_se(estimator, game, budget: int, runs: int, seed0: int = 0) -> tuple[np.ndarray, np.ndarray]:
    values = np.array([estimator.estimate(game, budget, seed=seed0 + r).values for r in range(runs)])
    return values.mean(axis=0), values.std(axis=0, ddof=1) / np.sqrt(runs)


@pytest.mark.parametrize("label,factory", UNBIASED, ids=[u[0] for u in UNBIASED])
def test_unbiased_quick_sanity(label, factory):
    # few runs, loose tolerance (6 SE + 0.02): catches gross errors such as a wrong weight or sign
    game = voting_game(5)
    exact = exact_shapley(game)
    mean, se = _mean_and_se(factory(), game, 60, runs=120, seed0=10_000)
    assert np.all(np.abs(mean - exact) <= 6 * se + 0.02), (label, mean - exact, se)


@pytest.mark.slow
@pytest.mark.parametrize("quota", [3, 5, 8])
@pytest.mark.parametrize("label,factory", UNBIASED, ids=[u[0] for u in UNBIASED])
def test_unbiased_on_voting_games(label, factory, quota):
    game = voting_game(quota)
    exact = exact_shapley(game)
    mean, se = _mean_and_se(factory(), game, 60, runs=1500)
    # players with zero variance (e.g. a dummy) must then be exact: the 1e-12 keeps that strict
    z_scores = (mean - exact) / np.maximum(se, 1e-300)
    assert np.all(np.abs(mean - exact) <= 4 * se + 1e-12), (label, quota, z_scores)


def _endpoint_expectation(game, n_cells: int) -> np.ndarray:
    """E[Owen estimate] on the grid linspace(0, 1, Q): mean over q_k of the multilinear e_j(q_k)."""
    p = game.n_players
    z = all_coalitions(p)
    v = np.asarray(game(z))
    codes = np.arange(1 << p)
    sizes = z.sum(axis=1)
    out = np.zeros(p)
    for q in np.linspace(0.0, 1.0, n_cells):
        for j in range(p):
            without = codes[~z[:, j]]
            s = sizes[without]
            prob = q**s * (1 - q) ** (p - 1 - s)
            out[j] += np.sum(prob * (v[without | (1 << j)] - v[without])) / n_cells
    return out


@pytest.mark.slow
def test_endpoint_grid_reproduces_its_bias():
    # docs/baselines.md §3: the fixed grid with endpoints has bias 0.037 at Q = 10 on the voting game
    # (C = 5); the estimator's mean must match the grid's analytic expectation, not the SV
    game = voting_game(5)
    exact = exact_shapley(game)
    expected = _endpoint_expectation(game, 10)
    assert np.abs(expected - exact).max() == pytest.approx(0.037, abs=0.001)
    estimator = OwenSampling(grid="endpoint", n_cells=10, draws_per_cell=2)
    mean, se = _mean_and_se(estimator, game, 160, runs=1500)
    assert np.all(np.abs(mean - expected) <= 4 * se + 1e-12)


# --------------------------------------------------------------------------- airport n = 100
AIRPORT_MSE_T10K = [
    ("permutation", PermutationSampling, 4.6e-3),
    ("svarm", SVARM, 1.7e-3),
    ("stratified-svarm", StratifiedSVARM, 1.3e-4),
    ("stratified-svarm-uniform", lambda: StratifiedSVARM(sizes="uniform"), 4.3e-4),
    ("owen-endpoint-q10", lambda: OwenSampling(grid="endpoint", n_cells=10, draws_per_cell=None), 2.7e-1),
]


@pytest.mark.slow
@pytest.mark.parametrize("label,factory,reference", AIRPORT_MSE_T10K, ids=[a[0] for a in AIRPORT_MSE_T10K])
def test_airport_mse_matches_indicative_table(label, factory, reference):
    # docs/baselines.md §12 (SVARM accounting, 3-5 seeds, +-30%); distinct accounting here, so +-50%
    game, exact = airport_game()
    assert exact.sum() == pytest.approx(10.0, abs=1e-8)
    estimator = factory()
    errors = [estimator.estimate(game, 10_000, seed=s).values - exact for s in range(12)]
    mse = np.mean(np.square(errors))
    assert 0.5 * reference <= mse <= 1.5 * reference, (label, mse, reference)
