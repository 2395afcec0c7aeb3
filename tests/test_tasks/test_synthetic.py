"""Closed-form synthetic games against enumeration and against the values printed in docs/games.md."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from shapleig.errors import CoalitionError, GameError
from shapleig.games.exact import exact_shapley
from shapleig_tasks.synthetic import (
    AirportGame,
    ShoeGame,
    SumOfUnanimityGame,
    WeightedVotingGame,
    _swing_counts_float,
    _swing_counts_int64,
    airport_shapley,
    standard_airport_costs,
    weighted_voting_family7,
    weighted_voting_n50,
)


def _check_protocol(game) -> None:
    p = game.n_players
    assert isinstance(game.name, str) and game.name
    assert isinstance(game.params(), dict)
    rng = np.random.default_rng(0)
    z = rng.random((7, p)) < 0.5
    v1, v2 = game(z), game(z)
    assert v1.dtype == np.float64 and v1.shape == (7,)
    np.testing.assert_array_equal(v1, v2)
    # vectorised evaluation agrees with row-by-row evaluation
    np.testing.assert_array_equal(v1, np.concatenate([game(row[None]) for row in z]))


# ---------------------------------------------------------------------------------- airport
def test_airport_closed_form_equals_enumeration_with_ties():
    game = AirportGame([3.0, 1.0, 2.0, 2.0, 5.0, 1.0, 0.0, 3.0, 2.5])
    _check_protocol(game)
    phi = game.exact_values()
    np.testing.assert_allclose(phi, exact_shapley(game), atol=1e-13)
    # ties share, efficiency, null player (cost 0)
    assert phi[2] == phi[3] and phi[1] == phi[5] and phi[0] == phi[7]
    assert phi[6] == 0.0
    assert phi.sum() == pytest.approx(5.0)


def test_standard_airport_matches_documented_levels():
    game = AirportGame()
    assert game.n_players == 100
    np.testing.assert_array_equal(game.costs, standard_airport_costs())
    phi = game.exact_values()
    documented = [0.0100000000, 0.0208695652, 0.0333695652, 0.0468830787, 0.0635497454,
                  0.0827805146, 0.1060363286, 0.1393696619, 0.1893696619, 0.2893696619]
    for level, expected in zip(range(1, 11), documented):
        np.testing.assert_allclose(phi[game.costs == level], expected, atol=5e-11)
    assert phi.sum() == pytest.approx(10.0, abs=1e-12)
    z = np.zeros((2, 100), dtype=bool)
    z[1, [0, 30]] = True  # costs 1 and 4
    np.testing.assert_array_equal(game(z), [0.0, 4.0])


def test_airport_closed_form_is_order_free():
    rng = np.random.default_rng(3)
    c = rng.integers(0, 5, 8).astype(float)
    perm = rng.permutation(8)
    np.testing.assert_allclose(airport_shapley(c)[perm], airport_shapley(c[perm]), atol=1e-15)


def test_airport_rejects_bad_costs_and_coalitions():
    with pytest.raises(GameError):
        AirportGame([1.0, -2.0, 3.0])
    with pytest.raises(GameError):
        AirportGame([1.0, np.nan])
    with pytest.raises(CoalitionError):
        AirportGame([1.0, 2.0, 3.0])(np.zeros((2, 4), dtype=bool))


# ---------------------------------------------------------------------------------- shoe
def test_shoe_values_and_enumeration():
    game = ShoeGame(10)
    _check_protocol(game)
    np.testing.assert_allclose(exact_shapley(game), np.full(10, 0.5), atol=1e-13)
    np.testing.assert_array_equal(game.exact_values(), np.full(10, 0.5))
    z = np.zeros((1, 10), dtype=bool)
    z[0, [0, 1, 2, 5]] = True  # 3 left, 1 right
    assert game(z)[0] == 1.0
    with pytest.raises(GameError, match="even"):
        ShoeGame(7)


# ---------------------------------------------------------------------------------- SOUG
@pytest.mark.parametrize("variant", ["svarm", "shapiq"])
def test_soug_closed_form_equals_enumeration(variant):
    game = SumOfUnanimityGame(n_players=10, n_terms=30, seed=4, variant=variant)
    _check_protocol(game)
    np.testing.assert_allclose(game.exact_values(), exact_shapley(game), atol=1e-12)


def test_soug_svarm_generation_rules():
    game = SumOfUnanimityGame(seed=7)
    assert (game.n_players, game.n_terms) == (20, 50)
    sizes = game.members.sum(axis=1)
    assert sizes.min() >= 1 and sizes.max() <= 20
    assert np.all(game.coefficients >= 0)
    assert game(np.ones((1, 20), dtype=bool))[0] == pytest.approx(100.0)
    assert game.exact_values().sum() == pytest.approx(100.0)
    # deterministic per seed, different across seeds
    np.testing.assert_array_equal(game.members, SumOfUnanimityGame(seed=7).members)
    assert not np.array_equal(game.coefficients, SumOfUnanimityGame(seed=8).coefficients)


def test_soug_shapiq_variant_allows_empty_terms_and_negative_coefficients():
    game = SumOfUnanimityGame(n_players=6, n_terms=200, seed=1, variant="shapiq")
    assert game.members.sum(axis=1).min() == 0  # size 0 drawn among 200 terms
    assert game.coefficients.min() < 0 < game.coefficients.max()
    empty = game(np.zeros((1, 6), dtype=bool))[0]
    full = game(np.ones((1, 6), dtype=bool))[0]
    assert game.exact_values().sum() == pytest.approx(full - empty)
    np.testing.assert_allclose(game.exact_values(), exact_shapley(game), atol=1e-12)
    with pytest.raises(ValueError, match="variant"):
        SumOfUnanimityGame(variant="nope")


# ---------------------------------------------------------------------------------- WVG
_F = Fraction
_FAMILY7 = {
    1: [_F(1, 7)] * 7,
    2: [_F(2, 21), _F(11, 42), _F(11, 42)] + [_F(2, 21)] * 4,
    3: [_F(17, 210), _F(3, 14), _F(8, 21)] + [_F(17, 210)] * 4,
    4: [_F(19, 210), _F(4, 21), _F(5, 14)] + [_F(19, 210)] * 4,
}
for _c, _dual in ((10, 1), (9, 2), (8, 3), (5, 4), (6, 4), (7, 4)):
    _FAMILY7[_c] = _FAMILY7[_dual]


@pytest.mark.parametrize("quota", range(1, 11))
def test_wvg_family7_documented_fractions_and_enumeration(quota):
    game = weighted_voting_family7(quota)
    assert game.exact_fractions() == _FAMILY7[quota]
    np.testing.assert_allclose(game.exact_values(), exact_shapley(game), atol=1e-14)


def test_wvg_small_documented_cases():
    assert WeightedVotingGame([1, 2, 3], 5).exact_fractions()[2] == Fraction(1, 2)
    game = WeightedVotingGame([1, 0, 1], 2)  # zero weight: a null player
    assert game.exact_fractions() == [Fraction(1, 2), Fraction(0), Fraction(1, 2)]
    np.testing.assert_allclose(game.exact_values(), exact_shapley(game), atol=1e-15)


def test_wvg_random_games_equal_enumeration_and_duality():
    rng = np.random.default_rng(11)
    for _ in range(5):
        w = rng.integers(0, 9, size=9)
        total = int(w.sum())
        quota = int(rng.integers(1, total + 1))
        game = WeightedVotingGame(w, quota)
        _check_protocol(game)
        phi = game.exact_values()
        np.testing.assert_allclose(phi, exact_shapley(game), atol=1e-13)
        assert game.exact_fractions() == WeightedVotingGame(w, total + 1 - quota).exact_fractions()
    # the float per-weight DP (used for n > 62) agrees with the exact int DP
    w = rng.integers(1, 30, size=12)
    q = int(w.sum()) // 2
    ints, floats = _swing_counts_int64(w, q), _swing_counts_float(w, q)
    for key in ints:
        np.testing.assert_array_equal(np.array(ints[key], dtype=float), floats[key])


def test_wvg_trivial_quota_and_bad_input():
    assert np.all(WeightedVotingGame([1, 2, 3], 0).exact_values() == 0)
    assert np.all(WeightedVotingGame([1, 2, 3], 7).exact_values() == 0)
    with pytest.raises(GameError):
        WeightedVotingGame([1, -2, 3], 2)
    with pytest.raises(GameError):
        WeightedVotingGame([1.5, 2, 3], 2)


def test_wvg_n50_dp_checksums():
    game = weighted_voting_n50()
    assert game.n_players == 50 and int(game.weights.sum()) == 499291 and game.quota == 249646
    phi = game.exact_values()
    assert phi.sum() == pytest.approx(1.0, abs=1e-14)
    assert float(np.sum(phi**2)) == pytest.approx(0.0229651244, abs=5e-11)
    assert phi[0] == pytest.approx(0.0195632870, abs=5e-11)
    assert int(np.argmax(phi)) == 43 and phi.max() == pytest.approx(0.0399335752, abs=5e-11)
    assert set(np.flatnonzero(phi == phi.min()).tolist()) == {1, 25}
    assert phi.min() == pytest.approx(0.0075822918, abs=5e-11)
    assert sum(game.exact_fractions()) == 1  # exact efficiency in rational arithmetic


# ---------------------------------------------------------------------------------- metrics
def test_metrics_values_batching_and_shape_checks():
    from shapleig_tasks.metrics import efficiency_gap, max_abs_error, mse, relative_mse

    exact = ShoeGame(4).exact_values()  # all 1/2
    est = np.array([0.5, 0.7, 0.1, 0.5])
    assert mse(est, exact) == pytest.approx((0.04 + 0.16) / 4)  # divides by p, not p + 1
    assert max_abs_error(est, exact) == pytest.approx(0.4)
    assert relative_mse(est, exact) == pytest.approx(0.05 / 0.25)
    assert efficiency_gap(est, 2.0) == pytest.approx(-0.2)
    batch = np.stack([est, exact, exact + 1.0])
    np.testing.assert_allclose(mse(batch, exact), [0.05, 0.0, 1.0])
    np.testing.assert_allclose(max_abs_error(batch, exact), [0.4, 0.0, 1.0])
    with pytest.raises(ValueError, match="players"):
        mse(np.zeros(3), exact)
    with pytest.raises(ValueError, match="non-finite"):
        mse(est, np.array([np.nan, 0, 0, 0]))
    with pytest.raises(ValueError, match="undefined"):
        relative_mse(est, np.zeros(4))


def test_wvg_beyond_int64_uses_float_dp():
    # n = 70 > 62: the int64 all-players DP would overflow; the per-weight float DP is used.
    weights = np.tile([1, 2, 3, 5, 8], 14)
    game = WeightedVotingGame(weights, int(weights.sum()) // 2 + 1)
    phi = game.exact_values()
    assert phi.sum() == pytest.approx(1.0, abs=1e-12)
    for w in (1, 2, 3, 5, 8):  # equal weights, equal values; more weight, more power
        assert np.ptp(phi[weights == w]) == 0.0
    levels = [phi[weights == w][0] for w in (1, 2, 3, 5, 8)]
    assert np.all(np.diff(levels) > 0)
    dual = WeightedVotingGame(weights, int(weights.sum()) + 1 - game.quota).exact_values()
    np.testing.assert_allclose(dual, phi, rtol=1e-12)
    with pytest.raises(GameError, match="n <= 62"):
        game.exact_fractions()


def test_make_synthetic_game_by_name():
    from shapleig_tasks.synthetic import make_synthetic_game

    assert make_synthetic_game("airport").n_players == 100
    assert make_synthetic_game("shoe", n_players=8).name == "shoe_n8"
    assert make_synthetic_game("soug", seed=3).params()["seed"] == 3
    assert make_synthetic_game("weighted_voting", weights=[1, 2, 3], quota=5).n_players == 3
    assert make_synthetic_game("wvg_n50").name == "wvg_n50_epic"
    with pytest.raises(ValueError, match="unknown synthetic game"):
        make_synthetic_game("glove")
