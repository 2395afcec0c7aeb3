"""``posterior_cholesky``: the EIG's factor of a posterior covariance that rounding made indefinite."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from shapleig.gp.posterior import POSTERIOR_EIGEN_FLOOR, cholesky_with_jitter, posterior_cholesky


def _covariance(eigenvalues: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(eigenvalues.size, eigenvalues.size)))
    return (Q * eigenvalues) @ Q.T, Q


def test_a_positive_definite_covariance_is_factored_as_before():
    S, _ = _covariance(np.linspace(1e-3, 1.0, 8))
    L, raised = posterior_cholesky(S)
    L0, jitter = cholesky_with_jitter(S)
    np.testing.assert_array_equal(L, L0)
    assert raised == jitter == 0.0


def test_a_direction_cancelled_below_zero_is_raised_to_the_floor():
    # the failure seen on a pairwise game under tol: every variance ~1e-7 (standardised), one
    # direction (the efficiency sum) at -4e-10, beyond the jitter scaled to the mean diagonal
    w = np.r_[-4.3e-10, np.linspace(3.7e-8, 1.1e-7, 15)]
    S, Q = _covariance(w)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_with_jitter(S)
    L, raised = posterior_cholesky(S)
    floor = POSTERIOR_EIGEN_FLOOR * w[-1]
    expected = (Q * np.maximum(w, floor)) @ Q.T
    np.testing.assert_allclose(L @ L.T, expected, rtol=0, atol=1e-20)
    assert np.allclose(L, np.tril(L))
    assert raised == pytest.approx(floor - w[0], rel=1e-9)


def test_a_covariance_without_a_positive_direction_is_refused():
    S, _ = _covariance(np.linspace(-1.0, -0.1, 4))
    with pytest.raises(np.linalg.LinAlgError, match="no positive eigenvalue"):
        posterior_cholesky(S)


def test_a_tol_run_on_a_pairwise_game_completes():
    """The run that raised 'not positive definite even with jitter' in the EIG (p = 16, cap 16p, rtol 0.05)."""
    from shapleig import ShaplEIG
    from shapleig_tasks.generality import make_game

    game = make_game("pairwise", 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ShaplEIG().estimate(game, 16 * game.n_players, seed=0, rtol=0.05)
    assert est.evaluations <= 16 * game.n_players
    assert np.all(np.isfinite(est.values)) and np.all(np.isfinite(est.std))
