"""Index definitions, exact values and the fast operator products against dense 2^p references."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _dense_reference import dense_kernel

from shapleig.games.indices import INDICES, check_index, dense_index_operator, exact_index_values, index_terms
from shapleig.gp.esp import prior_shapley_covariance, shapley_kernel_columns
from shapleig.gp.index_esp import (
    IndexOperator,
    banzhaf_kernel_columns,
    generic_kernel_columns,
    generic_prior_covariance,
    prior_banzhaf_covariance,
)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "shapiq_exact_indices.json"


def all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def test_terms_and_options() -> None:
    assert index_terms(3, "SV") == [(0,), (1,), (2,)]
    assert index_terms(3, "BV") == [(0,), (1,), (2,)]
    assert index_terms(3, "k-SII", 2) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    assert check_index("FSII") == ("FSII", 2)
    with pytest.raises(ValueError, match="unknown index"):
        check_index("XYZ")
    assert check_index("k-SII", 3) == ("k-SII", 3) and check_index("Moebius", 5) == ("Moebius", 5)
    with pytest.raises(ValueError, match="integer >= 1"):
        check_index("k-SII", 0)
    with pytest.raises(ValueError, match="max_order=1"):
        check_index("BV", 2)


@pytest.mark.parametrize("game", json.loads(FIXTURE.read_text())["games"], ids=lambda g: f"p{g['p']}")
@pytest.mark.parametrize("index", INDICES)
def test_exact_values_match_shapiq_exact_computer(game: dict, index: str) -> None:
    p, v = game["p"], np.asarray(game["values"])
    ref = np.array([game[index][str(T)] for T in index_terms(p, index)])
    np.testing.assert_allclose(exact_index_values(v, index), ref, rtol=1e-8, atol=1e-8)
    # shapiq's FSII is a least-squares solve, hence the looser tolerance
    np.testing.assert_allclose(dense_index_operator(p, index) @ v, ref, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("p", [2, 3, 6, 8])
def test_dense_definitions_equal_weighted_derivatives(index: str, p: int) -> None:
    v = np.random.default_rng(p).normal(size=1 << p)
    np.testing.assert_allclose(dense_index_operator(p, index) @ v, exact_index_values(v, index), atol=1e-12)


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("p", [2, 4, 7, 9])
@pytest.mark.parametrize("shared", [False, True])
def test_fast_products_equal_dense(index: str, p: int, shared: bool) -> None:
    rng = np.random.default_rng(100 * p + shared)
    ls = np.full(p, rng.uniform(0.05, 3)) if shared else rng.uniform(0.05, 3, p)
    s = rng.uniform(0.5, 2)
    Z = all_sets(p)
    B = dense_index_operator(p, index)
    K = dense_kernel(Z, ls, s)
    op = IndexOperator(p, index)
    assert op.terms == index_terms(p, index)
    sub = rng.choice(Z.shape[0], size=min(Z.shape[0], 40), replace=False)  # also the small-m (non-shared) path
    assert rel(op.hamming_columns(Z, ls, s), B @ K) < 1e-10
    assert rel(op.hamming_columns(Z[sub], ls, s), (B @ K)[:, sub]) < 1e-10
    M = op.hamming_covariance(ls, s)
    assert rel(M, B @ K @ B.T) < 1e-10
    np.testing.assert_array_equal(M, M.T)


@pytest.mark.parametrize("shared", [False, True])
def test_generic_route_reproduces_shapley_and_banzhaf(shared: bool) -> None:
    """The generic weighted route with SV / BV weights against the existing ESP code and the closed forms."""
    rng = np.random.default_rng(7)
    p = 11
    ls = np.full(p, 0.8) if shared else rng.uniform(0.1, 3, p)
    Z = rng.random((30, p)) < 0.5
    assert rel(generic_kernel_columns(Z, ls, 1.4, "SV"), shapley_kernel_columns(Z, ls, 1.4)) < 1e-11
    assert rel(generic_prior_covariance(ls, 1.4, "SV"), prior_shapley_covariance(ls, 1.4)) < 1e-11
    assert rel(generic_kernel_columns(Z, ls, 1.4, "BV"), banzhaf_kernel_columns(Z, ls, 1.4)) < 1e-11
    G = generic_prior_covariance(ls, 1.4, "BV")
    assert rel(G, prior_banzhaf_covariance(ls, 1.4)) < 1e-11
    assert np.all(G[~np.eye(p, dtype=bool)] == 0.0)  # Banzhaf prior covariance is diagonal


def test_sv_operator_is_the_existing_path() -> None:
    rng = np.random.default_rng(3)
    ls = rng.uniform(0.1, 3, 9)
    Z = rng.random((20, 9)) < 0.5
    op = IndexOperator(9, "SV")
    np.testing.assert_array_equal(op.hamming_columns(Z, ls, 1.0), shapley_kernel_columns(Z, ls, 1.0))
    np.testing.assert_array_equal(op.hamming_covariance(ls, 1.0), prior_shapley_covariance(ls, 1.0))


def test_large_p_products_are_finite_and_psd() -> None:
    """No dense reference at p = 30: finiteness and positive semi-definiteness of B K B^T."""
    rng = np.random.default_rng(5)
    p = 30
    ls = rng.uniform(0.2, 3, p)
    for index in ("k-SII", "FSII", "STII"):
        op = IndexOperator(p, index)
        M = op.hamming_covariance(ls, 1.0)
        C = op.hamming_columns(rng.random((5, p)) < 0.5, ls, 1.0)
        assert np.all(np.isfinite(M)) and np.all(np.isfinite(C))
        assert np.linalg.eigvalsh(M).min() > -1e-10 * np.abs(M).max()


def test_table_game_exact_values_by_index() -> None:
    from shapleig_tasks.tables import TableGame

    p = 4
    v = np.random.default_rng(9).normal(size=1 << p)
    rows = np.random.default_rng(1).permutation(1 << p)  # any row order
    game = TableGame(all_sets(p)[rows], v[rows])
    np.testing.assert_array_equal(game.exact_values(), game.exact_values("SV"))
    for index in INDICES:
        np.testing.assert_allclose(game.exact_values(index=index), dense_index_operator(p, index) @ v, atol=1e-12)
    with pytest.raises(ValueError, match="unknown index"):
        game.exact_values(index="nope")
