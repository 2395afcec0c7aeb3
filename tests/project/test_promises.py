"""Promises the second integrity pass found unpinned: each test here fails when its promise is
broken by a one-line mutation (each was checked by making that mutation once; see the issue 20
report). Expected values are computed independently of the code under test.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, DesignLoop, EvaluationStore, FunctionGame
from shapleig.design.initial import initial_design
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import shapley_from_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _games_for_parallel import QuadraticGame  # noqa: E402

P = 4


# -- store ---------------------------------------------------------------------------------------

def test_the_store_commits_with_synchronous_full(tmp_path):
    """A committed value survives a power cut only with PRAGMA synchronous = FULL (2)."""
    store = EvaluationStore(tmp_path / "s.sqlite")
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_first_stored_value_wins(tmp_path):
    """Two successful rows for one coalition (two processes raced): every reader sees the first."""
    game = QuadraticGame(P)
    store = EvaluationStore(tmp_path / "s.sqlite")
    store.bind(game)
    z = np.array([True, False, True, False])
    store.append(z, 1.25, seconds=0.0)
    store.append(z, 9.5, seconds=0.0)
    found, values = store.lookup(z[None, :])
    assert found.tolist() == [True] and values.tolist() == [1.25]
    found, values, mine, _ = store.claim(z[None, :])
    assert values.tolist() == [1.25] and not mine.any()
    reopened = BudgetedGame(game, 4, store=tmp_path / "s.sqlite")
    assert reopened(z[None, :]).tolist() == [1.25]


def test_the_heartbeat_refreshes_claims_every_quarter_lease(tmp_path):
    """The heartbeat sleeps ``lease / 4`` between refreshes, and each refresh changes the claim's
    heartbeat. Its sleep is recorded (and cut short), so nothing here depends on the machine's speed."""
    lease = 0.4
    store = EvaluationStore(tmp_path / "s.sqlite", lease_seconds=lease)
    store.bind(QuadraticGame(P))
    asked: list[float | None] = []

    class RecordedSleep(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            asked.append(timeout)
            return super().wait(0.002)

    store._claims._stop = RecordedSleep()  # the heartbeat thread's sleep (and stop signal)
    store.claim(np.array([[True, True, False, False]]))
    con = sqlite3.connect(tmp_path / "s.sqlite")
    seen: list[float] = []
    for _ in range(2000):  # until five refreshes were written (each is a new heartbeat value)
        row = con.execute("SELECT heartbeat FROM claims").fetchone()
        if row is not None and (not seen or row[0] != seen[-1]):
            seen.append(row[0])
        if len(seen) >= 6:
            break
        time.sleep(0.002)
    con.close()
    store.close()
    assert len(seen) >= 6, seen
    assert asked[:5] == [lease / 4] * 5, asked  # lease x 4 would let the claim lapse between beats


# -- kernel choice: the BIC ----------------------------------------------------------------------

def test_bic_log_evidence_by_hand():
    """-t * objective - (d/2) log t, with numbers worked out by hand (not by the function)."""
    from shapleig.gp.fit_result import FitResult
    from shapleig.gp.kernel_choice import bic_log_evidence, evidence_weights
    from shapleig.gp.posterior import Hyperparameters

    fit = FitResult(hyper=Hyperparameters.hamming(np.ones(3), 1.0, 1e-6, 0.0), attempts=1, seconds=0.0, success=True,
                    noise=1e-6, noise_convention="standardized", y_mean=0.0, y_scale=1.0, neg_mll=0.7, seed=0)
    # t = 30, d = 3: -30 * 0.7 - 1.5 * ln 30 = -21 - 1.5 * 3.4011973816621555
    assert bic_log_evidence(fit, 30, 3) == pytest.approx(-26.101796072493233, abs=1e-12)
    # d = 7 (p = 5 ARD): -21 - 3.5 * ln 30
    assert bic_log_evidence(fit, 30, 7) == pytest.approx(-32.9041908358176, abs=1e-12)
    failed = dataclasses.replace(fit, success=False)
    assert bic_log_evidence(failed, 30, 3) == -math.inf
    # the weights of the two: exp(0) : exp(-4 ln 30 / 2) = 1 : 1/900
    np.testing.assert_allclose(evidence_weights(np.array([-26.101796072493233, -32.9041908358176])),
                               [900 / 901, 1 / 901], rtol=1e-12)


# -- baselines ------------------------------------------------------------------------------------

def _pairwise_game(p: int, seed: int = 5):
    """v(S) = sum_S w + sum_{j<k in S} c_jk + 2 [|S| >= p-1]: not additive, not even quadratic."""
    rng = np.random.default_rng(seed)
    w, c = rng.normal(size=p), np.triu(rng.normal(size=(p, p)), 1)

    def fn(Z):
        Z = np.asarray(Z, float)
        return Z @ w + np.einsum("mi,ij,mj->m", Z, c, Z) + 2.0 * (Z.sum(axis=1) >= p - 1)
    return fn


def _dense_shapley(fn, p: int) -> np.ndarray:
    """Shapley values by the permutation-free subset formula, written out here (float64)."""
    Z = all_coalitions(p)
    v = {tuple(z): val for z, val in zip(Z.tolist(), fn(Z))}
    phi = np.zeros(p)
    for z in Z.tolist():
        s = sum(z)
        for j in range(p):
            if not z[j]:
                with_j = list(z)
                with_j[j] = True
                weight = math.factorial(s) * math.factorial(p - s - 1) / math.factorial(p)
                phi[j] += weight * (v[tuple(with_j)] - v[tuple(z)])
    return phi


def test_leverage_shap_row_weights_on_a_non_additive_game():
    """With every coalition sampled, the weighted regression is exact only with the Shapley-kernel
    row weights. The game is a random table: on additive or pairwise games (and symmetric terms)
    every size-only weighting gives the Shapley value, so those cannot pin the weights."""
    from shapleig_baselines.leverage import LeverageSHAP

    p = 5
    table = np.random.default_rng(11).normal(size=2**p)  # a generic game: every order of interaction
    index = 2 ** np.arange(p)

    def fn(Z):
        return table[np.asarray(Z, dtype=np.int64) @ index]

    exact = _dense_shapley(fn, p)
    np.testing.assert_allclose(shapley_from_table(all_coalitions(p), fn(all_coalitions(p))), exact, atol=1e-12)
    # estimate() would enumerate at this budget before Leverage SHAP runs (the enumeration switch
    # made this test vacuous): its own full-sample branch is called directly
    est = LeverageSHAP()._estimate(BudgetedGame(FunctionGame(fn, p), 2**p), seed=0)
    np.testing.assert_allclose(est.values, exact, atol=1e-10)


def test_antithetic_permutations_come_as_reversed_pairs():
    """(pi, reversed pi): the second permutation's prefixes are the complements of the first's."""
    from shapleig_baselines.permutation import PermutationSampling

    p = 6
    bg = BudgetedGame(FunctionGame(_pairwise_game(p), p), 2 + 2 * (p - 1))
    PermutationSampling(antithetic=True).estimate(bg, bg.budget, seed=3)
    Z, _ = bg.history()
    first, second = Z[2 : 2 + p - 1], Z[2 + p - 1 :]
    assert len(second) == p - 1
    # prefix of length k of reversed pi = complement of the prefix of length p - k of pi
    assert {tuple(~z) for z in first} == {tuple(z) for z in second}
    sizes = first.sum(axis=1)
    np.testing.assert_array_equal(np.sort(sizes), np.arange(1, p))


def test_resolve_budget_rounds_to_the_nearest_integer():
    from shapleig_tasks.harness import resolve_budget

    assert resolve_budget("0.29p", 10) == 3  # 2.9 -> 3 (truncation would give 2)
    assert resolve_budget("0.71p", 10) == 7  # 7.1 -> 7
    assert resolve_budget("2.6p", 7) == 18  # 18.2 -> 18
    assert resolve_budget("p", 9) == 9 and resolve_budget("40", 9) == 40


def test_random_acquisition_draws_from_its_own_stream():
    """The design stream (SeedSequence child 0) is used for the initial design and nothing else;
    random picks come from the selection stream (child 2)."""
    seed, p, budget = 7, 5, 14
    game = FunctionGame(_pairwise_game(p), p)
    loop = DesignLoop(game, budget, acquisition="random", refit="never", progress=False, seed=seed)
    loop.run()
    children = np.random.SeedSequence(seed).spawn(4)
    design_rng = np.random.default_rng(children[0])
    initial_design(loop.options.initial_design, p, design_rng)  # the only draws of the design stream
    assert loop._design_rng.bit_generator.state == design_rng.bit_generator.state
    untouched = np.random.default_rng(children[2]).bit_generator.state
    assert loop._select_rng.bit_generator.state != untouched  # the picks advanced their own stream
