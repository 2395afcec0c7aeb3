"""Large archives (``large_archive``) and raised pools: batched steps, seeded candidate subsets, sparser refits."""

from __future__ import annotations

import numpy as np
import pytest

import shapleig.design.loop as loop_module
from shapleig.design.loop import DesignLoop
from shapleig.design.refit import AutoRefit
from shapleig.games.game import FunctionGame


def _game(p: int, seed: int = 0) -> FunctionGame:
    """Linear, pairwise and one three-way term: no low-dimensional structure the probe would doubt."""
    rng = np.random.default_rng(seed)
    w, P = rng.normal(size=p), rng.normal(size=(p, p)) / p

    def value(Z: np.ndarray) -> np.ndarray:
        z = Z.astype(np.float64)
        return z @ w + np.einsum("ni,ij,nj->n", z, P, z) + 0.5 * z[:, 0] * z[:, 1] * z[:, 2]

    return FunctionGame(value, p)


def _picks(loop: DesignLoop) -> np.ndarray:
    return np.concatenate(loop.selected)


def test_step_size_grows_with_the_archive_beyond_large_archive():
    p, limit = 9, 40
    loop = DesignLoop(_game(p), 160, seed=0, large_archive=limit, refit="never")
    sizes = []
    while not loop.done:
        t = 0 if loop.X is None else loop.X.shape[0]
        before = loop.evaluations
        if not loop.step():
            break
        if t:
            sizes.append((t, loop.evaluations - before))
    assert all(q == 1 for t, q in sizes if t < limit)
    # ceil(t / 64) from t = 40 on, cut only by the budget's end
    assert all(q == min(-(-t // 64), 160 - t) for t, q in sizes if t >= limit)
    assert {q for t, q in sizes if t >= limit} >= {1, 2, 3}


def test_batched_steps_pick_what_single_steps_pick_under_the_same_hyperparameters():
    """The EIG does not depend on values: with frozen hyperparameters a greedy batch of k is k single steps."""
    p, budget = 7, 90
    single = DesignLoop(_game(p), budget, seed=3, refit="never", final_refit=False, large_archive=None)
    single.run()
    batched = DesignLoop(_game(p), budget, seed=3, refit="never", final_refit=False, large_archive=20)
    est = batched.run()
    assert len(batched.selected) < len(single.selected)  # it did batch
    np.testing.assert_array_equal(_picks(batched), _picks(single))
    np.testing.assert_allclose(est.values, single.current_estimate().values, rtol=0, atol=1e-10)


def test_a_raised_pool_is_scored_through_seeded_subsets(monkeypatch):
    """Budget 600 at p = 12 raises the default pool to 1174 coalitions; with ACTIVE_CANDIDATES = 64
    every candidate state covers 64 of them, redrawn once 32 are used."""
    monkeypatch.setattr(loop_module, "ACTIVE_CANDIDATES", 64)
    sizes: list[int] = []
    real = loop_module.DesignLoop._candidate_rows

    def spy(self, pending):
        rows = real(self, pending)
        sizes.append(rows.size)
        assert np.all(self.available[np.setdiff1d(rows, pending)])  # only coalitions not yet asked
        assert np.isin(pending, rows).all()
        return rows

    monkeypatch.setattr(loop_module.DesignLoop, "_candidate_rows", spy)
    p, budget = 12, 600
    loop = DesignLoop(_game(p), budget, seed=1, refit="never", final_refit=False)
    loop.run()
    assert loop._pool_raised and len(loop.pool) == 2 * (budget - p - 1)
    assert max(sizes) == 64 and len(sizes) >= (budget - p - 1) // 32 - 1  # a fresh subset per 32 picks
    picks = _picks(loop)
    assert loop.evaluations == budget and np.unique(picks, axis=0).shape[0] == picks.shape[0]
    again = DesignLoop(_game(p), budget, seed=1, refit="never", final_refit=False)
    again.run()
    np.testing.assert_array_equal(_picks(again), picks)  # seeded subsets: deterministic per seed


def test_an_explicit_pool_is_scored_whole(monkeypatch):
    monkeypatch.setattr(loop_module, "ACTIVE_CANDIDATES", 8)
    loop = DesignLoop(_game(6), 30, seed=0, pool_size=40, refit="never")
    loop.run()
    assert not loop._pool_raised
    pending = np.zeros(0, dtype=np.int64)
    np.testing.assert_array_equal(loop._candidate_rows(pending), np.flatnonzero(loop.available))


def test_auto_refit_is_sparser_for_large_archives():
    policy = AutoRefit()
    p, t_fit = 10, 3000
    assert policy.due(int(1.125 * t_fit), t_fit, None, p)  # the growth 1.125 below large_archive
    assert not policy.due(int(1.125 * t_fit), t_fit, None, p, large=True)
    assert not policy.due(int(1.5 * t_fit) - 1, t_fit, None, p, large=True)
    assert policy.due(int(1.5 * t_fit), t_fit, None, p, large=True)
    bad = np.full(200, 3.0)  # mean z^2 = 9 > 4 after t_fit / 32 = 93 points, not after t_fit / 4 = 750
    assert policy.due(t_fit + 200, t_fit, bad, p)
    assert not policy.due(t_fit + 200, t_fit, bad, p, large=True)
    assert policy.due(t_fit + 750, t_fit, np.full(750, 3.0), p, large=True)
    with pytest.raises(ValueError, match="large_growth"):
        AutoRefit(large_growth=1.0)


@pytest.mark.slow
def test_a_large_archive_run_at_p_100_is_accurate():
    """p = 100, 4000 evaluations (large from 2048 on: batched steps, subsets of a raised pool, sparse refits).

    The game is linear plus pairwise, whose Shapley values are known in closed form: player j gets
    ``w_j + P_jj`` and half of every pair term it is in. The previous release measured MSE / var(phi)
    about 1e-5 at 3000 evaluations (docs/benchmarks.md §3).
    """
    from shapleig import ShaplEIG

    p = 100
    rng = np.random.default_rng(5)
    w, P = rng.normal(size=p), rng.normal(size=(p, p)) * 0.2 / np.sqrt(p)
    game = FunctionGame(lambda Z: Z.astype(np.float64) @ w + np.einsum("ni,ij,nj->n", Z.astype(np.float64), P,
                                                                        Z.astype(np.float64)), p)
    sym = P + P.T
    phi = w + np.diag(P) + 0.5 * (sym.sum(axis=1) - np.diag(sym))
    est = ShaplEIG().estimate(game, 4000, seed=0)
    assert est.evaluations == 4000
    assert np.mean((est.values - phi) ** 2) / np.var(phi) < 1e-4
    assert np.mean(np.abs(est.values - phi) <= 1.96 * est.std) >= 0.8
