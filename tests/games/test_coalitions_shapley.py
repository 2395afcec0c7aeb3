"""Coalition utilities and exact Shapley references (the lead's skeleton)."""

from __future__ import annotations

import itertools
from math import comb, factorial

import numpy as np
import pytest

from shapleig import CoalitionError, FunctionGame, GameError, exact_shapley
from shapleig.games.coalitions import (
    all_coalitions,
    as_coalition_matrix,
    coalition_keys,
    from_bitmask,
    random_subsets,
    sample_paired_uniform_size,
    to_bitmask,
)
from shapleig.games.exact import (
    shapley_from_bitorder,
    shapley_from_table,
    shapley_operator,
    shapley_weights,
    values_in_bitorder,
)


def brute_force_shapley(v: dict[frozenset, float], p: int) -> np.ndarray:
    """Shapley values from the permutation definition (p <= 6)."""
    phi = np.zeros(p)
    for order in itertools.permutations(range(p)):
        prefix: frozenset = frozenset()
        for i in order:
            phi[i] += v[prefix | {i}] - v[prefix]
            prefix = prefix | {i}
    return phi / factorial(p)


def test_bitmask_round_trip_and_order():
    z = all_coalitions(5)
    assert z.shape == (32, 5)
    np.testing.assert_array_equal(to_bitmask(z), np.arange(32))
    np.testing.assert_array_equal(from_bitmask(np.arange(32), 5), z)
    assert len(set(coalition_keys(z))) == 32


def test_as_coalition_matrix_validates():
    assert as_coalition_matrix(np.array([1, 0, 1]), 3).shape == (1, 3)
    with pytest.raises(CoalitionError, match="shape"):
        as_coalition_matrix(np.zeros((2, 4), dtype=bool), 3)
    with pytest.raises(CoalitionError, match="dtype"):
        as_coalition_matrix(np.zeros((2, 3)), 3)
    with pytest.raises(CoalitionError, match="0 and 1"):
        as_coalition_matrix(np.full((2, 3), 2), 3)


def test_random_subsets_have_requested_sizes():
    rng = np.random.default_rng(0)
    sizes = rng.integers(0, 9, size=200)
    z = random_subsets(rng, 8, sizes)
    np.testing.assert_array_equal(z.sum(axis=1), sizes)


def test_paired_sampler_is_distinct_paired_and_excludes():
    rng = np.random.default_rng(1)
    exclude = coalition_keys(np.eye(10, dtype=bool))
    z = sample_paired_uniform_size(rng, 10, 41, exclude=exclude)
    assert z.shape == (41, 10)
    keys = coalition_keys(z)
    assert len(set(keys)) == 41 and not set(keys) & set(exclude)
    sizes = z.sum(axis=1)
    assert sizes.min() >= 1 and sizes.max() <= 9
    # without exclusions every kept coalition is followed by its complement
    z = sample_paired_uniform_size(np.random.default_rng(1), 10, 40)
    np.testing.assert_array_equal(z[1::2], ~z[0::2])


def test_paired_sampler_stops_when_support_is_exhausted():
    z = sample_paired_uniform_size(np.random.default_rng(2), 3, 100)
    assert z.shape == (6, 3)  # 2^3 - 2 proper coalitions


def test_shapley_weights():
    p = 7
    w = shapley_weights(p)
    for k in range(p):
        assert w[k] == pytest.approx(1 / (p * comb(p - 1, k)), rel=1e-13)
    assert w[p] == 0.0


@pytest.mark.parametrize("p", [2, 3, 5, 6])
def test_exact_routes_agree_with_permutation_definition(p):
    rng = np.random.default_rng(p)
    z = all_coalitions(p)
    v = rng.normal(size=1 << p)
    table = {frozenset(np.flatnonzero(row)): val for row, val in zip(z, v)}
    ref = brute_force_shapley(table, p)
    np.testing.assert_allclose(shapley_from_bitorder(v), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(shapley_operator(p) @ v, ref, rtol=1e-12, atol=1e-12)
    perm = rng.permutation(1 << p)
    np.testing.assert_allclose(shapley_from_table(z[perm], v[perm]), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(values_in_bitorder(z[perm], v[perm]), v)
    game = FunctionGame(lambda c: v[to_bitmask(c)], p)
    np.testing.assert_allclose(exact_shapley(game), ref, rtol=1e-12, atol=1e-12)


def test_operator_facts():
    p = 6
    a = shapley_operator(p)
    np.testing.assert_allclose(a.sum(axis=1), 0, atol=1e-14)  # A 1 = 0
    col = a.sum(axis=0)
    expected = np.zeros(1 << p)
    expected[-1], expected[0] = 1, -1
    np.testing.assert_allclose(col, expected, atol=1e-14)  # 1^T A = e_N - e_empty


def test_exact_shapley_rejects_bad_games():
    with pytest.raises(GameError, match="returned nan"):
        exact_shapley(FunctionGame(lambda c: np.where(c.sum(1) == 2, np.nan, 0.0), 3))
    with pytest.raises(GameError, match="shape"):
        exact_shapley(FunctionGame(lambda c: np.zeros(len(c) + 1), 3))
    with pytest.raises(GameError, match="at least 2 players"):
        FunctionGame(lambda c: c.sum(1), 1)
