"""Tests of the least-squares baselines: LSS, S-LSS, SRS-LSS, KernelSHAP, Unbiased KernelSHAP,
and the shared samplers in ``shapleig_baselines.sampling``.

References are dense 2^p enumerations for small p (exact Shapley values, exact expectations of
the per-sample weights), repeated runs for unbiasedness, and the LSS paper's Table 7 (slow).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import shapleig_baselines as baselines
from shapleig.errors import BudgetError
from shapleig.games.coalitions import all_coalitions, border_layers, coalition_keys, coalitions_of_size
from shapleig.games.exact import exact_shapley, shapley_from_table
from shapleig.games.game import FunctionGame
from shapleig.runs.budget import BudgetedGame
from shapleig_baselines.kernelshap import (
    KernelSHAP,
    UnbiasedKernelSHAP,
    combine_systems,
    constrained_solve,
    enumerated_system,
    harmonic,
    kernel_gram,
    uks_coefficients,
)
from shapleig_baselines.lss import (
    LSS,
    SRSLSS,
    StratifiedLSS,
    combine_strata,
    linear_estimate,
    lss_coefficients,
    slss_allocation,
    srs_warmup,
    srs_warmup_size,
)
from shapleig_baselines.sampling import (
    coalition_probability,
    draw_within_budget,
    interleave_complements,
    random_subsets_containing,
    sample_kernel_size,
    sample_uniform_size,
    size_distribution,
    uniform_subsets_of_size,
)

NAMES = ["lss", "s-lss", "srs-lss", "kernelshap", "unbiased-kernelshap"]
UNBIASED = ["lss", "s-lss", "unbiased-kernelshap"]
VOTING_WEIGHTS = np.array([1, 2, 3, 1, 1, 1, 1], dtype=np.float64)

@pytest.fixture(autouse=True)
def _methods_run_themselves_at_full_budget(monkeypatch):
    """These tests check each method's own behaviour at budgets >= 2^p, so the front's
    enumeration of a covered game (tests/test_enumeration.py) is switched off here."""
    import shapleig.estimation.base

    monkeypatch.setattr(shapleig.estimation.base, "covers_game", lambda n_players, budget: False)



def table_game(p: int, seed: int, offset: float = 0.0) -> tuple[FunctionGame, np.ndarray, np.ndarray]:
    """A random game given by a full value table (bit order); returns game, table, exact SVs."""
    table = np.random.default_rng(seed).normal(size=1 << p) + offset
    bits = 1 << np.arange(p, dtype=np.int64)
    game = FunctionGame(lambda z: table[z.astype(np.int64) @ bits], p, f"table{p}")
    return game, table, shapley_from_table(all_coalitions(p), table)


def voting_game(quota: float) -> FunctionGame:
    """The 7-player weighted voting game of the LSS paper (weights 1,2,3,1,1,1,1)."""
    return FunctionGame(lambda z: (z.astype(np.float64) @ VOTING_WEIGHTS >= quota).astype(np.float64), 7, f"wvg7_q{quota}")


# -- samplers ---------------------------------------------------------------------------------
def test_size_distributions_and_coalition_probability_normalise():
    p = 6
    z = all_coalitions(p)
    s = z.sum(axis=1)
    for kind in ("uniform", "kernel"):
        q = size_distribution(p, kind)
        assert q[0] == 0 and q[p] == 0 and q.sum() == pytest.approx(1.0)
        assert coalition_probability(p, s, q).sum() == pytest.approx(1.0)
    q = size_distribution(p, "kernel")
    # kernel probabilities proportional to (p-1)/(C(p,s) s (p-s)) on proper coalitions
    prob = coalition_probability(p, s, q)
    proper = (s > 0) & (s < p)
    kernel = (p - 1) / (np.array([math.comb(p, k) for k in s[proper]]) * s[proper] * (p - s[proper]))
    np.testing.assert_allclose(prob[proper] / prob[proper].sum(), kernel / kernel.sum())
    with pytest.raises(ValueError, match="unknown size distribution"):
        size_distribution(p, "banana")


def test_samplers_shapes_sizes_and_membership():
    rng = np.random.default_rng(0)
    p = 9
    z = sample_uniform_size(rng, p, 4000)
    s = z.sum(axis=1)
    assert z.dtype == bool and z.shape == (4000, p) and s.min() >= 1 and s.max() <= p - 1
    # uniform sizes: each of the 8 sizes ~ 500 times
    assert np.bincount(s, minlength=p + 1)[1:p].min() > 400
    zk = sample_kernel_size(rng, p, 20000)
    freq = np.bincount(zk.sum(axis=1), minlength=p + 1) / 20000
    np.testing.assert_allclose(freq, size_distribution(p, "kernel"), atol=0.012)
    assert (uniform_subsets_of_size(rng, p, 4, 50).sum(axis=1) == 4).all()
    players = rng.integers(0, p, 3000)
    sizes = rng.integers(1, p + 1, 3000)
    zc = random_subsets_containing(rng, p, players, sizes)
    assert zc[np.arange(3000), players].all() and (zc.sum(axis=1) == sizes).all()
    # the other members are uniform: player 0 in {3} + 2 others of 8 with prob 2/8
    z3 = random_subsets_containing(rng, p, np.full(8000, 3), np.full(8000, 3))
    assert z3[:, 0].mean() == pytest.approx(2 / 8, abs=0.02)
    pairs = interleave_complements(z[:5])
    assert (pairs[1::2] == ~z[:5]).all() and (pairs[0::2] == z[:5]).all()
    layer = coalitions_of_size(6, 2)
    assert layer.shape == (15, 6) and len(set(coalition_keys(layer))) == 15 and (layer.sum(axis=1) == 2).all()


def test_draw_within_budget_counts_repeats_and_stops_before_overflow():
    p = 4
    game = BudgetedGame(FunctionGame(lambda z: z.sum(axis=1).astype(float), p), 7)
    rng = np.random.default_rng(1)
    d = draw_within_budget(game, lambda start, m: sample_uniform_size(rng, p, m))
    assert game.evaluations == 7 and d.stopped == "budget"
    assert d.new.sum() == 7 and d.n_draws >= 7
    np.testing.assert_array_equal(d.values, d.coalitions.sum(axis=1))
    # the stopping draw would have been new: every drawn coalition is among the 7 charged
    assert len(set(coalition_keys(d.coalitions))) == 7
    # support exhaustion: 14 proper coalitions, budget 100 -> stops after seeing all 14
    game2 = BudgetedGame(FunctionGame(lambda z: z.sum(axis=1).astype(float), p), 100)
    d2 = draw_within_budget(game2, lambda start, m: sample_uniform_size(rng, p, m), support_size=14)
    assert d2.stopped == "support" and game2.evaluations == 14
    # paired blocks are taken whole: an odd remaining budget leaves one slot unused
    game3 = BudgetedGame(FunctionGame(lambda z: z.sum(axis=1).astype(float), 8), 9)
    d3 = draw_within_budget(game3, lambda start, m: interleave_complements(sample_uniform_size(rng, 8, m // 2)), block=2)
    assert d3.n_draws % 2 == 0 and game3.evaluations <= 9
    assert (d3.coalitions[1::2] == ~d3.coalitions[0::2]).all()


# -- weights and closed forms against dense references ---------------------------------------
@pytest.mark.parametrize("p", [5, 6])
def test_lss_and_uks_weights_have_the_exact_expectation(p):
    """sum_S p(S) * (per-draw weight) * v(S) + v(N)/p equals the Shapley value exactly."""
    game, table, phi = table_game(p, seed=p)
    z = all_coalitions(p)
    s = z.sum(axis=1)
    proper = (s > 0) & (s < p)
    zp, v = z[proper], table[proper] - table[0]
    total = table[-1] - table[0]
    for coeffs, kind in ((lss_coefficients, "uniform"), (uks_coefficients, "kernel")):
        prob = coalition_probability(p, s[proper], size_distribution(p, kind))
        c_in, c_const = coeffs(zp, v)
        expectation = zp.T.astype(float) @ (prob * c_in) - np.sum(prob * c_const) + total / p
        np.testing.assert_allclose(expectation, phi, atol=1e-12)


def test_uks_per_sample_form_equals_covert_lee_with_exact_gram():
    p = 7
    rng = np.random.default_rng(3)
    z = sample_kernel_size(rng, p, 500)
    v = rng.normal(size=500)
    total = 1.7
    per_sample, _ = linear_estimate(z, *uks_coefficients(z, v), total / p, np.arange(1, 501))
    b = z.T.astype(float) @ v / 500
    closed, solver = constrained_solve(kernel_gram(p), b, total)
    assert solver == "closed-form"
    np.testing.assert_allclose(per_sample, closed, atol=1e-12)
    # A = E[z z^T] by enumeration and the quoted rho values
    zz = all_coalitions(p)
    prob = coalition_probability(p, zz.sum(axis=1), size_distribution(p, "kernel"))
    np.testing.assert_allclose((zz.T * prob) @ zz, kernel_gram(p), atol=1e-14)
    for n, rho in ((5, 0.26), (8, 0.3072), (12, 0.3344)):
        assert kernel_gram(n)[0, 1] == pytest.approx(rho, abs=5e-5)
    assert harmonic(4) == pytest.approx(25 / 12)


def test_exact_strata_give_exact_shapley_values():
    """a_{j,s} = mean of v over {S : j in S, |S| = s} / (n - s) is the S-LSS target."""
    p = 6
    game, table, phi = table_game(p, seed=11, offset=2.0)
    z = all_coalitions(p)
    s = z.sum(axis=1)
    v = table - table[0]
    a = np.zeros((p, p - 1))
    for j in range(p):
        for k in range(1, p):
            rows = z[:, j] & (s == k)
            a[j, k - 1] = v[rows].mean() / (p - k)
    np.testing.assert_allclose(combine_strata(a, v[-1]), phi, atol=1e-12)


def test_constrained_solve_rank_deficient_still_meets_constraint():
    gram = np.zeros((4, 4))
    gram[0, 0] = 1.0
    phi, solver = constrained_solve(gram, np.array([0.5, 0, 0, 0]), 3.0)
    assert solver == "kkt-lstsq" and phi.sum() == pytest.approx(3.0, abs=1e-12)


# -- estimators --------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [6, 8])
@pytest.mark.parametrize("opts", [{}, {"paired": True}, {"border": True}, {"paired": True, "border": True}])
def test_kernelshap_full_budget_is_exact(p, opts):
    game, _, phi = table_game(p, seed=100 + p, offset=0.7)
    r = KernelSHAP(**opts).estimate(game, 1 << p, seed=5)
    np.testing.assert_allclose(r.values, phi, atol=1e-10)
    assert r.evaluations == 1 << p and r.info["n_enumerated"] == (1 << p) - 2


def test_enumerated_plus_sampled_layers_weigh_like_the_kernel():
    """Outer layers enumerated, the middle layer 'drawn' once per coalition (its exact
    conditional distribution): the combined system is the exact kernel system."""
    p = 6
    game, table, phi = table_game(p, seed=8, offset=1.0)
    q = size_distribution(p, "kernel")
    bits = 1 << np.arange(p, dtype=np.int64)
    z_enum = np.concatenate([coalitions_of_size(p, s) for s in (1, 5, 2, 4)])
    z_mid = coalitions_of_size(p, 3)
    value = lambda z: table[z.astype(np.int64) @ bits] - table[0]  # noqa: E731
    gram_e, b_e = enumerated_system(z_enum, value(z_enum), q)
    zf = z_mid.astype(np.float64)
    gram, b = combine_systems(gram_e, b_e, zf.T @ zf, zf.T @ value(z_mid), z_mid.shape[0], q[3])
    np.testing.assert_allclose(gram, kernel_gram(p), atol=1e-14)
    np.testing.assert_allclose(constrained_solve(gram, b, table[-1] - table[0])[0], phi, atol=1e-12)


def test_srs_warmup_only_estimate_uses_each_players_own_block():
    """With no main-phase draws, a_hat_{i,s} = v(block of i of size s) / (n - s)."""
    n, seed = 7, 4
    game = FunctionGame(lambda z: z[:, 0].astype(np.float64) + 0.5 * z[:, 1], n, "dictatorish")
    r = SRSLSS(draws=srs_warmup_size(n)).estimate(game, 1000, seed=seed)
    assert r.info["n_draws"] == srs_warmup_size(n)
    z, own, sizes = srs_warmup(np.random.default_rng(seed), n)  # the estimator's first random use
    v = z[:, 0] + 0.5 * z[:, 1]
    a = np.zeros((n, n - 1))
    for blk in range(z.shape[0]):
        a[own[blk], sizes[blk] - 1] = v[blk] / (n - sizes[blk])
    np.testing.assert_allclose(r.values, combine_strata(a, 1.5), atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_many_draws_converge_to_the_exact_values(name):
    """Consistency (also of the biased ratio estimator SRS-LSS and of KernelSHAP): 30,000 draws on
    a 6-player game land close to the exact values."""
    game, table, phi = table_game(6, seed=12, offset=1.0)
    r = baselines.get(name, accounting="draws", draws=30_000).estimate(game, 64, seed=0)
    assert np.abs(r.values - phi).max() < 0.1, np.abs(r.values - phi).max()


def test_border_layers_rule():
    q = size_distribution(8, "kernel")
    assert border_layers(8, 254, q) == [1, 7, 2, 6, 3, 5, 4]
    assert border_layers(8, 98, q) == [1, 7]
    assert border_layers(100, 49_998, size_distribution(100, "kernel")) == [1, 99]
    assert border_layers(8, 10, q) == []


@pytest.mark.parametrize("name", NAMES)
def test_efficiency_centring_and_budget(name):
    p = 8
    game, table, _ = table_game(p, seed=21, offset=3.0)
    shifted, _, _ = table_game(p, seed=21, offset=-5.0)  # same game plus a constant
    est = baselines.get(name)
    r = est.estimate(game, 120, seed=9)
    assert abs(r.values.sum() - (table[-1] - table[0])) < 1e-9
    assert r.evaluations <= 120 and r.info["n_evaluations"] == r.evaluations
    assert r.info["accounting"] == "distinct" and r.info["n_draws"] >= r.evaluations - 2
    assert r.baseline == pytest.approx(table[0])
    # the LS formulas act on v - v(empty): a constant shift changes nothing
    np.testing.assert_allclose(est.estimate(shifted, 120, seed=9).values, r.values, atol=1e-9)
    # determinism for a seed, and the seed matters
    np.testing.assert_array_equal(est.estimate(game, 120, seed=9).values, r.values)
    assert not np.allclose(est.estimate(game, 120, seed=10).values, r.values)


@pytest.mark.parametrize("name", NAMES)
def test_random_budgets_never_exceeded(name):
    rng = np.random.default_rng(7)
    est = baselines.get(name)
    for trial in range(6):
        p = int(rng.integers(3, 10))
        game, table, _ = table_game(p, seed=trial, offset=float(rng.normal()))
        budget = int(rng.integers(est.min_budget(p), (1 << p) + 10))
        r = est.estimate(game, budget, seed=trial)
        assert r.evaluations <= budget
        assert abs(r.values.sum() - (table[-1] - table[0])) < 1e-9
        # the whole budget is spent unless every proper coalition was already evaluated
        assert r.evaluations == min(budget, 1 << p) or r.info["stopped"] == "support"


def test_minimum_budgets_and_bad_options():
    game, _, _ = table_game(6, seed=0)
    with pytest.raises(BudgetError, match="budget >= 32"):
        StratifiedLSS().estimate(game, 31)
    with pytest.raises(BudgetError, match=str(srs_warmup_size(6) + 2)):
        SRSLSS().estimate(game, srs_warmup_size(6) + 1)
    StratifiedLSS().estimate(game, 32)
    with pytest.raises(ValueError, match="unknown accounting"):
        LSS(accounting="paper")
    with pytest.raises(ValueError, match="draws"):
        UnbiasedKernelSHAP(draws=-3)


def test_draws_accounting_follows_the_paper_and_respects_the_budget():
    # allocations of the paper at n = 100, T = 50,000: S-LSS 54,900 and SRS-LSS 50,072 draws
    assert 100 * slss_allocation(100, 50_000).sum() == 54_900
    tau_star = srs_warmup_size(100)
    assert tau_star == 572 and tau_star + 99 * math.ceil((50_000 - tau_star) / 99) == 50_072
    assert [srs_warmup_size(n) for n in (14, 50, 1000)] == [50, 250, 8052]
    p, t = 10, 700
    game, table, _ = table_game(p, seed=4)
    expected = {
        "lss": t,
        "unbiased-kernelshap": t,
        "kernelshap": t,
        "s-lss": p * int(slss_allocation(p, t).sum()),
        "srs-lss": srs_warmup_size(p) + (p - 1) * math.ceil((t - srs_warmup_size(p)) / (p - 1)),
    }
    for name, n_draws in expected.items():
        r = baselines.get(name, accounting="draws", draws=t).estimate(game, 1 << p, seed=1)
        assert r.info["n_draws"] == n_draws, name
        assert r.info["accounting"] == "draws" and not r.info["truncated"]
        assert r.evaluations < n_draws  # repeats are draws, not distinct evaluations
        assert abs(r.values.sum() - (table[-1] - table[0])) < 1e-9
        # a small BudgetedGame budget cuts the draws short but is never exceeded
        small = baselines.get(name, accounting="draws", draws=t).estimate(game, 150, seed=1)
        assert small.evaluations <= 150 and small.info["truncated"]
    border = KernelSHAP(border=True, accounting="draws", draws=t).estimate(game, 150, seed=1)
    assert border.evaluations <= 150 and border.info["enumerated_sizes"] == [1, 9]


def test_srs_warmup_gives_every_stratum_one_block():
    n = 10
    z, own, sizes = srs_warmup(np.random.default_rng(2), n)
    assert z.shape[0] == srs_warmup_size(n)
    assert (z.sum(axis=1) == sizes).all() and (own <= z).all()
    for s in range(1, n):
        # each player owns exactly one block of size s
        np.testing.assert_array_equal(own[sizes == s].sum(axis=0), np.ones(n))


def test_anytime_trace_is_monotone_in_evaluations():
    game, _, phi = table_game(8, seed=5)
    for name in ("lss", "unbiased-kernelshap", "kernelshap"):
        r = baselines.get(name).estimate(game, 200, seed=0)
        evals = [e for e, _ in r.trace]
        assert len(evals) > 3 and evals == sorted(evals) and evals[-1] == r.evaluations
        np.testing.assert_array_equal(r.trace[-1][1], r.values)


def _mean_and_se(name: str, quota: float, runs: int, budget: int, **opts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    game = voting_game(quota)
    phi = exact_shapley(game)
    est = baselines.get(name, **opts)
    vals = np.array([est.estimate(game, budget, seed=s).values for s in range(runs)])
    return vals.mean(axis=0), vals.std(axis=0, ddof=1) / np.sqrt(runs), phi


@pytest.mark.parametrize("name", UNBIASED)
def test_unbiased_estimators_quick_sanity(name):
    mean, se, phi = _mean_and_se(name, 5, runs=150, budget=60)
    assert np.all(np.abs(mean - phi) < 6 * se + 2e-3)


@pytest.mark.slow
@pytest.mark.parametrize("accounting", ["draws", "distinct"])
@pytest.mark.parametrize("quota", [3, 5, 8])
@pytest.mark.parametrize("name", UNBIASED)
def test_unbiasedness_on_voting_game(name, quota, accounting):
    """Mean over 2500 runs within 4 standard errors of the exact values, for every player.

    ``draws`` mode has a fixed number of draws (unbiased by construction); ``distinct`` mode
    stops at a random draw count, which the test shows to be unbiased at this precision too.
    """
    opts = {"accounting": accounting, "draws": 58} if accounting == "draws" else {}
    mean, se, phi = _mean_and_se(name, quota, runs=2500, budget=200 if accounting == "draws" else 60, **opts)
    assert np.all(np.abs(mean - phi) <= 4 * se), (mean - phi) / se


def _load_reproduction():
    path = Path(__file__).resolve().parents[2] / "scripts" / "repro" / "lss_airport.py"
    spec = importlib.util.spec_from_file_location("reproduce_lss_airport", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_reproduces_lss_paper_table7_airport():
    """30 runs at T = 50,000 (draws accounting): mean MSE within 15% of the paper's Table 7."""
    repro = _load_reproduction()
    results = repro.run_reproduction(runs=30, draws=50_000, seed=0)
    for name, (paper_mse, *_rest) in repro.PAPER_TABLE7.items():
        mse = results[name]["mse"].mean()
        assert abs(mse / paper_mse - 1) <= 0.15, (name, mse, paper_mse)
