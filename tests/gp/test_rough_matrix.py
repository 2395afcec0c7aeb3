"""The rough kernel's matrix: the variance where two rows are the same coalition (compared as ids)."""

from __future__ import annotations

import numpy as np
import pytest

from shapleig.gp.kernels.rough import Rough, RoughParams, coalition_ids


@pytest.mark.parametrize("p", [1, 7, 8, 13, 100])
def test_the_matrix_is_the_elementwise_definition(p):
    rng = np.random.default_rng(p)
    A = rng.random((40, p)) < 0.5
    B = np.concatenate([A[rng.integers(0, 40, size=15)], rng.random((20, p)) < 0.5])  # shared rows and new ones
    expected = np.array([[0.37 if np.array_equal(a, b) else 0.0 for b in B] for a in A])
    got = Rough().matrix(RoughParams(variance=0.37), A, B)
    np.testing.assert_array_equal(got, expected)
    assert got.sum() >= 15 * 0.37  # the shared rows are found


def test_ids_are_equal_exactly_for_equal_coalitions():
    A = np.array([[1, 0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 1]], dtype=bool)  # differ in byte 1
    B = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0, 0, 0, 0]], dtype=bool)
    ia, ib = coalition_ids(A, B)
    assert ia[0] == ib[1] and ia[1] == ib[0] and ib[2] not in ia and ia[0] != ia[1]


def test_empty_inputs_give_an_empty_matrix():
    assert Rough().matrix(RoughParams(variance=1.0), np.zeros((0, 3), bool), np.ones((2, 3), bool)).shape == (0, 2)
