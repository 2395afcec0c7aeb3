"""Every interaction index at every order k <= 4 (issue 39): the derivative weights against dense operators
built from the definitions (Bernoulli sums of SII rows, the least-squares fits of FSII and FBII, the
Moebius rows of STII, shapiq's base weights), against shapiq 1.8.0's ``ExactComputer`` (the fixture
written by scripts/studies/shapiq_index_fixture.py), efficiency where the index has it, and the
Moebius representation. References never use the code under test: the dense operators do not read
the weights, and the brute-force checks below enumerate coalitions and supersets directly."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import combinations
from math import comb
from pathlib import Path

import numpy as np
import pytest

from shapleig.games import index_weights as iw
from shapleig.games.indices import (
    INDICES,
    check_index,
    dense_index_operator,
    exact_index_values,
    get_index,
    index_terms,
    is_efficient,
)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "shapiq_exact_indices.json"
INTERACTIONS = [name for name in INDICES if get_index(name).any_order]
EFFICIENT = {"k-SII", "STII", "FSII"}


def all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def cases(players: tuple[int, ...]) -> list[tuple[str, int, int]]:
    return [(name, p, k) for name in INTERACTIONS for p in players for k in range(1, min(p, 4) + 1)]


def test_the_interaction_indices_take_every_order() -> None:
    assert INTERACTIONS == ["k-SII", "SII", "STII", "FSII", "FBII", "BII", "CHII", "Moebius"]
    assert index_terms(4, "STII", 3)[10:] == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert len(index_terms(8, "FBII", 4)) == 8 + 28 + 56 + 70
    for name in ("SV", "BV"):
        with pytest.raises(ValueError, match="max_order=1 only"):
            check_index(name, 3)
    with pytest.raises(ValueError, match="at least 3 players"):
        exact_index_values(np.zeros(4), "k-SII", 3)


@pytest.mark.parametrize("name, p, k", cases((3, 5, 6)))
def test_weights_equal_the_dense_definitions(name: str, p: int, k: int) -> None:
    v = np.random.default_rng(10 * p + k).normal(size=1 << p)
    B = dense_index_operator(p, name, k)
    assert B.shape == (len(index_terms(p, name, k)), 1 << p)
    np.testing.assert_allclose(exact_index_values(v, name, k), B @ v, rtol=0, atol=1e-10 * np.abs(v).max())


@pytest.mark.slow
@pytest.mark.parametrize("name, p, k", cases((7, 8)))
def test_weights_equal_the_dense_definitions_p8(name: str, p: int, k: int) -> None:
    test_weights_equal_the_dense_definitions(name, p, k)


def _fixture_cases() -> list[tuple[int, str]]:
    doc = json.loads(FIXTURE.read_text())
    return [(g, key) for g, game in enumerate(doc["games"]) for key in game if key not in ("p", "values")]


@pytest.mark.parametrize("game_no, key", _fixture_cases())
def test_every_order_matches_shapiq_exact_computer(game_no: int, key: str) -> None:
    game = json.loads(FIXTURE.read_text())["games"][game_no]
    name, _, order = key.partition("@")
    k = int(order) if order else None
    p, v = game["p"], np.asarray(game["values"])
    terms = index_terms(p, name, k)
    ref = np.array([game[key][str(T)] for T in terms])
    # shapiq's FSII is a least-squares solve with a large finite weight on the constraints: 1e-8
    np.testing.assert_allclose(exact_index_values(v, name, k), ref, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(dense_index_operator(p, name, k) @ v, ref, rtol=1e-8, atol=1e-8)


def _sums_to_total(B: np.ndarray, p: int) -> bool:
    target = np.zeros(1 << p)
    target[-1], target[0] = 1.0, -1.0
    return bool(np.allclose(B.sum(axis=0), target, atol=1e-10))


@pytest.mark.parametrize("name, p, k", [c for c in cases((4, 6)) if c[0] in EFFICIENT])
def test_efficient_indices_sum_to_the_total_at_every_order(name: str, p: int, k: int) -> None:
    assert is_efficient(name) and _sums_to_total(dense_index_operator(p, name, k), p)


@pytest.mark.parametrize("name", sorted(set(INTERACTIONS) - EFFICIENT))
def test_the_other_indices_do_not(name: str) -> None:
    """SII and CHII are the SV at order 1, FBII and the Moebius transform efficient with (nearly) every order:
    not at orders 2 and 3 of six players."""
    assert not is_efficient(name)
    assert not any(_sums_to_total(dense_index_operator(6, name, k), 6) for k in (2, 3))


def test_bernoulli_numbers() -> None:
    assert iw.bernoulli_numbers(6) == (1, Fraction(-1, 2), Fraction(1, 6), 0, Fraction(-1, 30), 0, Fraction(1, 42))


def test_brute_force_ksii_of_order_three() -> None:
    """k-SII(T) = sum over supersets U (|U| <= 3) of B_{|U|-|T|} SII(U), SII from its definition."""
    p = 5
    v = np.random.default_rng(1).normal(size=1 << p)

    def sii(U: tuple[int, ...]) -> float:
        total = 0.0
        for code in range(1 << p):
            if any(code >> u & 1 for u in U):
                continue
            s = bin(code).count("1")
            w = 1.0 / ((p - len(U) + 1) * comb(p - len(U), s))
            for sub in range(1 << len(U)):
                L = sum(1 << U[q] for q in range(len(U)) if sub >> q & 1)
                total += w * (-1) ** (len(U) - bin(sub).count("1")) * v[code | L]
        return total

    bern = [1.0, -0.5, 1.0 / 6.0]
    terms = index_terms(p, "k-SII", 3)
    ref = [sum(bern[len(U) - len(T)] * sii(U) for U in terms if set(T) <= set(U)) for T in terms]
    np.testing.assert_allclose(exact_index_values(v, "k-SII", 3), ref, atol=1e-12)


def test_moebius_of_every_order_reconstructs_the_game() -> None:
    p = 5
    v = np.random.default_rng(2).normal(size=1 << p)
    m = dict(zip(index_terms(p, "Moebius", p), exact_index_values(v, "Moebius", p)))
    Z = all_sets(p)
    rebuilt = [v[0] + sum(m[T] for t in range(1, p + 1) for T in combinations(np.flatnonzero(z).tolist(), t))
               for z in Z]
    np.testing.assert_allclose(rebuilt, v, atol=1e-12)


@pytest.mark.parametrize("name", INTERACTIONS)
def test_moebius_representation_round_trips(name: str) -> None:
    p, k = 7, 3
    w = get_index(name).exact_weights(p, k)
    assert iw.from_moebius(p, k, lambda t, u: iw.to_moebius(p, w)[t - 1][u - t]) == w


def test_a_lower_order_weight_depends_on_the_maximal_order() -> None:
    """k-SII's singletons at order 3 add B_2 sum SII(ijl) to the order-2 ones; SII's do not change."""
    assert iw.ksii_weights(6, 3)[0] != iw.ksii_weights(6, 2)[0]
    assert iw.sii_weights(6, 3)[:2] == iw.sii_weights(6, 2)
    assert iw.stii_weights(6, 3)[1] == tuple([Fraction(1)] + [Fraction(0)] * 4)  # pairs below the top: Moebius
