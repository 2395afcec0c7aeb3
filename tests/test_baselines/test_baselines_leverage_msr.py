"""Leverage SHAP, Regression MSR and the closed-form tree Shapley values they rely on.

References are dense: enumeration of all 2^p coalitions (exact_shapley / shapley_from_bitorder).
"""

from __future__ import annotations

import json
import re
from itertools import combinations
from math import comb

import lightgbm as lgb
import numpy as np
import pytest

from shapleig.games.coalitions import all_coalitions, coalition_keys, sample_paired_uniform_size, to_bitmask
from shapleig.games.exact import exact_shapley, shapley_from_bitorder
from shapleig.games.game import FunctionGame
from shapleig_baselines.leverage import LeverageSHAP, _unrank_lex, distinct_subsets_of_size, solve_oversampling
from shapleig_baselines.msr import RegressionMSR, msr_residual_shapley
from shapleig_baselines.treeshap import lightgbm_shapley_values


def table_game(p: int, seed: int) -> tuple[FunctionGame, np.ndarray]:
    """A game with i.i.d. normal values on all 2^p coalitions (no structure to exploit)."""
    table = np.random.default_rng(seed).normal(size=1 << p)
    return FunctionGame(lambda z: table[to_bitmask(z)], p, name=f"table{p}"), table


def fit_lgbm(x: np.ndarray, y: np.ndarray, **params) -> lgb.LGBMRegressor:
    base = dict(deterministic=True, force_row_wise=True, n_jobs=1, random_state=0, verbose=-1,
                min_child_samples=2, n_estimators=15)
    base.update(params)
    return lgb.LGBMRegressor(**base).fit(x, y)


def enumerated_shapley(model, p: int) -> np.ndarray:
    return shapley_from_bitorder(model.predict(all_coalitions(p).astype(np.float64)))


def repeats_feature_on_a_path(node: dict, seen: frozenset = frozenset()) -> bool:
    if "leaf_value" in node:
        return False
    f = node["split_feature"]
    if f in seen:
        return True
    return any(repeats_feature_on_a_path(node[c], seen | {f}) for c in ("left_child", "right_child"))


# -- tree Shapley values ----------------------------------------------------------------------
@pytest.mark.parametrize("p", [3, 6, 10])
def test_tree_shapley_binary_training_data_matches_enumeration(p):
    rng = np.random.default_rng(p)
    x = rng.integers(0, 2, (200, p)).astype(float)
    y = x @ rng.normal(size=p) + 3 * x[:, 0] * x[:, 1] * (1 - x[:, 2]) + 0.1 * rng.normal(size=200)
    model = fit_lgbm(x, y)
    np.testing.assert_allclose(lightgbm_shapley_values(model, p), enumerated_shapley(model, p), atol=1e-9, rtol=0)


@pytest.mark.parametrize("p", [4, 8])
def test_tree_shapley_continuous_training_repeated_splits_and_outside_thresholds(p):
    # Continuous data on [-0.5, 1.5]: thresholds fall below 0, inside (0, 1) and above 1, and one
    # path splits the same feature repeatedly, so some paths are contradictory for 0/1 inputs.
    rng = np.random.default_rng(10 + p)
    x = rng.uniform(-0.5, 1.5, (400, p))
    y = np.sin(3 * x[:, 0]) + x[:, 1] ** 2 * x[:, 2] + x.sum(axis=1)
    model = fit_lgbm(x, y, num_leaves=15, n_estimators=20)
    dump = model.booster_.dump_model()
    assert any(repeats_feature_on_a_path(t["tree_structure"]) for t in dump["tree_info"])
    thresholds = [float(v) for v in re.findall(r'"threshold": ([^,}]+)', json.dumps(dump))]
    assert min(thresholds) < 0 and max(thresholds) > 1
    np.testing.assert_allclose(lightgbm_shapley_values(model, p), enumerated_shapley(model, p), atol=1e-9, rtol=0)


def test_tree_shapley_zero_as_missing_nan_data_and_random_forest():
    p = 6
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 2, (300, p))
    x[rng.random(x.shape) < 0.3] = 0.0
    y = np.sin(2 * x).sum(axis=1) + 2.0 * (x[:, 0] == 0)
    zero = fit_lgbm(x, y, zero_as_missing=True)
    text = json.dumps(zero.booster_.dump_model())
    assert '"Zero"' in text and '"default_left": false' in text  # the zero-is-missing branch is used
    np.testing.assert_allclose(lightgbm_shapley_values(zero, p), enumerated_shapley(zero, p), atol=1e-9, rtol=0)
    x_nan = x.copy()
    x_nan[rng.random(x.shape) < 0.2] = np.nan
    nan_model = fit_lgbm(x_nan, y)
    assert '"NaN"' in json.dumps(nan_model.booster_.dump_model())
    np.testing.assert_allclose(
        lightgbm_shapley_values(nan_model, p), enumerated_shapley(nan_model, p), atol=1e-9, rtol=0
    )
    forest = fit_lgbm(x, y, boosting_type="rf", bagging_freq=1, bagging_fraction=0.7)
    np.testing.assert_allclose(
        lightgbm_shapley_values(forest.booster_, p), enumerated_shapley(forest, p), atol=1e-9, rtol=0
    )


def _split(feature: int, threshold: float, left: dict, right: dict) -> dict:
    return {"split_feature": feature, "threshold": threshold, "decision_type": "<=", "default_left": True,
            "missing_type": "None", "left_child": left, "right_child": right}


def test_tree_shapley_leaf_formula_on_handmade_tree():
    # One leaf requires players {0, 2} present and {3} absent (value 5), reached through a repeated
    # split on player 0; another leaf is contradictory (0 absent, then 0 present) and carries 100.
    p = 5
    leaf = lambda v: {"leaf_value": v}  # noqa: E731
    tree = _split(0, 0.5,
                  _split(0, 0.7, leaf(0.0), leaf(100.0)),            # x0 = 0 then x0 > 0.7: unreachable
                  _split(2, 0.5, leaf(0.0), _split(3, 0.5, leaf(5.0), leaf(0.0))))
    dump = {"max_feature_idx": p - 1, "num_tree_per_iteration": 1, "tree_info": [{"tree_structure": tree}]}
    z = all_coalitions(p)
    leaf_game = 5.0 * (z[:, 0] & z[:, 2] & ~z[:, 3])
    expected = shapley_from_bitorder(leaf_game.astype(float))
    # closed form: a = 2, b = 1 -> present players 5 * 1!1!/3! each, the absent one -5 * 2!0!/3!
    np.testing.assert_allclose(expected, [5 / 6, 0, 5 / 6, -5 / 3, 0], atol=1e-12)
    np.testing.assert_allclose(lightgbm_shapley_values(dump, p), expected, atol=1e-12)


def test_tree_shapley_rejects_categorical_and_wrong_player_count():
    node = {"split_feature": 0, "threshold": "1||2", "decision_type": "==", "default_left": True,
            "missing_type": "None", "left_child": {"leaf_value": 1.0}, "right_child": {"leaf_value": 0.0}}
    dump = {"max_feature_idx": 1, "num_tree_per_iteration": 1, "tree_info": [{"tree_structure": node}]}
    with pytest.raises(ValueError, match="categorical"):
        lightgbm_shapley_values(dump, 2)
    with pytest.raises(ValueError, match="3 players"):
        lightgbm_shapley_values(dump, 3)


# -- leverage design pieces -------------------------------------------------------------------
@pytest.mark.parametrize("n,rows", [(6, 10), (10, 300), (100, 49_998), (7, 126)])
def test_solve_oversampling_matches_expected_rows(n, rows):
    two_c = solve_oversampling(n, rows)
    total = sum(min(comb(n, s), two_c) for s in range(1, n))
    assert total == pytest.approx(rows, rel=1e-12)


@pytest.mark.parametrize("n,k", [(6, 3), (7, 2), (9, 4), (5, 0), (12, 1)])
def test_unrank_is_lexicographic_bijection(n, k):
    got = _unrank_lex(np.arange(comb(n, k), dtype=np.int64), n, k)
    ref = np.zeros_like(got)
    for r, c in enumerate(combinations(range(n), k)):
        ref[r, list(c)] = True
    np.testing.assert_array_equal(got, ref)


def test_distinct_subsets_are_distinct_sized_and_uniform():
    rng = np.random.default_rng(0)
    z = distinct_subsets_of_size(rng, 10, 3, 120)  # the whole layer C(10, 3) = 120
    assert len(set(coalition_keys(z))) == 120 and (z.sum(axis=1) == 3).all()
    half = distinct_subsets_of_size(rng, 8, 4, 35, contain_last=True)  # every pair once
    assert (half[:, 7]).all() and len(set(coalition_keys(half))) == 35 and (half.sum(axis=1) == 4).all()
    huge = distinct_subsets_of_size(rng, 70, 35, 50)  # pool beyond int64: rejection path
    assert len(set(coalition_keys(huge))) == 50 and (huge.sum(axis=1) == 35).all()
    # uniformity: 3 of the 10 size-2 subsets of 5 players, 6000 times; each appears w.p. 0.3
    freq = np.zeros(10)
    index = {k: i for i, k in enumerate(coalition_keys(_unrank_lex(np.arange(10), 5, 2)))}
    for _ in range(6000):
        for key in coalition_keys(distinct_subsets_of_size(rng, 5, 2, 3)):
            freq[index[key]] += 1
    se = np.sqrt(6000 * 0.3 * 0.7)
    assert np.abs(freq - 1800).max() < 5 * se


# -- exactness at full budget, efficiency, budget ----------------------------------------------
@pytest.mark.parametrize("p", [6, 8])
@pytest.mark.parametrize(
    "estimator", [LeverageSHAP(), LeverageSHAP(counts="expected"), RegressionMSR()], ids=repr
)
def test_exact_at_full_budget(p, estimator):
    game, table = table_game(p, seed=p)
    est = estimator.estimate(game, 1 << p, seed=3)
    assert est.evaluations == 1 << p
    np.testing.assert_allclose(est.values, exact_shapley(game), atol=1e-9, rtol=0)
    assert est.values.sum() == pytest.approx(table[-1] - table[0], abs=1e-10)


@pytest.mark.parametrize("p", [5, 6])
@pytest.mark.parametrize(
    "estimator", [LeverageSHAP(), LeverageSHAP(counts="expected"), RegressionMSR()], ids=repr
)
def test_the_estimators_own_full_sample_is_exact_on_a_generic_game(p, estimator):
    """``estimate`` at budget 2^p enumerates before the estimator runs (shapleig.estimation.enumeration),
    so the test above cannot see the estimator's own weights. Here its ``_estimate`` gets every
    coalition itself: the regression is exact only with the Shapley-kernel row weights
    (``1 / (s (p - s) C(p, s) P(z))``, Leverage SHAP) and the post-stratified ``C(p, s) / m_s``
    (MSR). The game is a random table (every order of interaction): on additive or symmetric
    games any size-only weighting would also be exact."""
    from shapleig.runs.budget import BudgetedGame

    game, _ = table_game(p, seed=10 + p)
    est = estimator._estimate(BudgetedGame(game, 1 << p), seed=3)
    np.testing.assert_allclose(est.values, exact_shapley(game), atol=1e-9, rtol=0)


@pytest.mark.parametrize(
    "estimator", [LeverageSHAP(), LeverageSHAP(counts="expected"), RegressionMSR()], ids=repr
)
def test_efficient_and_within_budget_at_partial_budgets(estimator):
    for p, budget in [(5, 9), (7, 40), (9, 100), (9, 511)]:
        game, table = table_game(p, seed=budget)
        est = estimator.estimate(game, budget, seed=budget)
        assert est.evaluations <= budget
        assert est.values.sum() == pytest.approx(table[-1] - table[0], abs=1e-9)


def test_leverage_expected_counts_fill_budget_and_binomial_thins():
    game, _ = table_game(10, seed=1)
    for budget in (50, 301, 900):
        est = LeverageSHAP(counts="expected").estimate(game, budget, seed=0)
        assert est.evaluations == budget - (budget % 2)  # pairs only: an odd budget leaves one
    thinned = []
    for seed in range(12):
        est = LeverageSHAP().estimate(game, 300, seed=seed)
        assert est.evaluations <= 300
        thinned.append(est.info["thinned_pairs"])
    assert max(thinned) > 0  # the overflow branch is exercised (about half of the runs)


def test_leverage_recovers_additive_game_at_large_p():
    w = np.random.default_rng(5).random(40)
    game = FunctionGame(lambda z: 1.0 + z.astype(float) @ w, 40)
    est = LeverageSHAP().estimate(game, 400, seed=0)
    np.testing.assert_allclose(est.values, w, atol=1e-10)  # the regression is exact for additive v


# -- the MSR residual term ---------------------------------------------------------------------
def test_msr_residual_full_sample_is_exact():
    p = 6
    _, table = table_game(p, seed=11)
    z = all_coalitions(p)
    s = z.sum(axis=1)
    proper = (s > 0) & (s < p)
    r = table - table[0]
    np.testing.assert_allclose(msr_residual_shapley(z[proper], r[proper], r[-1]), shapley_from_bitorder(table),
                               atol=1e-12)


def test_msr_residual_is_unbiased_given_the_size_counts():
    # Conditionally on the per-size counts every size-s coalition is included w.p. m_s / C(p, s),
    # so averaging over runs with all sizes present recovers the exact values.
    p, k, runs = 6, 24, 1500
    _, table = table_game(p, seed=12)
    exact = shapley_from_bitorder(table)
    rng = np.random.default_rng(0)
    ends = np.zeros((2, p), dtype=bool)
    ends[1] = True
    estimates = []
    while len(estimates) < runs:
        z = sample_paired_uniform_size(rng, p, k, exclude=coalition_keys(ends))
        if len(np.unique(z.sum(axis=1))) < p - 1:
            continue  # condition on every size being present (a function of the counts)
        estimates.append(msr_residual_shapley(z, table[to_bitmask(z)] - table[0], table[-1] - table[0]))
    estimates = np.array(estimates)
    se = estimates.std(axis=0, ddof=1) / np.sqrt(runs)
    assert np.all(np.abs(estimates.mean(axis=0) - exact) < 4.5 * se)


def test_msr_is_deterministic_and_beats_pure_residual_on_smooth_game():
    p = 10
    rng = np.random.default_rng(2)
    w = rng.normal(size=p)

    def smooth(z):
        x = z.astype(float)
        return x @ w + 2 * x[:, 0] * x[:, 1] - 3 * x[:, 2] * x[:, 3] * x[:, 4]

    game = FunctionGame(smooth, p)
    exact = exact_shapley(game)
    a = RegressionMSR().estimate(game, 150, seed=4)
    b = RegressionMSR().estimate(game, 150, seed=4)
    np.testing.assert_array_equal(a.values, b.values)
    # the tree surrogate carries most of the signal: far better than the residual estimator alone
    ends = np.zeros((2, p), dtype=bool)
    ends[1] = True
    z = sample_paired_uniform_size(np.random.default_rng(4), p, 148, exclude=coalition_keys(ends))
    v0, vn = smooth(ends)
    plain = msr_residual_shapley(z, smooth(z) - v0, vn - v0)
    assert np.mean((a.values - exact) ** 2) < 0.25 * np.mean((plain - exact) ** 2)


# -- reference numbers (slow) ------------------------------------------------------------------
@pytest.mark.slow
def test_airport_n100_reference_mse():
    from shapleig_tasks.synthetic import AirportGame

    game = AirportGame()
    exact = game.exact_values()
    lev = [np.mean((LeverageSHAP().estimate(game, 50_000, seed=s).values - exact) ** 2) for s in range(3)]
    # docs/baselines.md §12: Leverage SHAP at T = 50,000 gives about 3.6e-3 (3-5 seeds, +-30%)
    assert 2.0e-3 < np.mean(lev) < 6.0e-3
    msr = np.mean((RegressionMSR().estimate(game, 50_000, seed=0).values - exact) ** 2)
    assert msr < 0.1 * np.mean(lev)


def test_options_are_validated_and_applied():
    with pytest.raises(ValueError, match="binomial"):
        LeverageSHAP(counts="poisson")
    game, _ = table_game(6, seed=0)
    est = RegressionMSR(lgbm_params={"n_estimators": 5}).estimate(game, 30, seed=0)
    assert est.info["n_trees"] == 5 and est.info["n_sampled"] == 28
