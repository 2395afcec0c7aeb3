"""scripts/studies/benchmark_generality.py and its seeded game families (tasks/generality.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapleig.games.exact import shapley_operator
from shapleig_tasks.generality import FAMILIES, family_tasks, instance_seed, make_game

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("benchmark_generality", ROOT / "scripts" / "studies" / "benchmark_generality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmark_generality"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families_are_seeded_tables_with_efficient_exact_values(family):
    # the noisy family serves a noiseless table through noise: its exact values are the table's
    game = getattr(make_game(family, 1, 7), "noiseless", make_game(family, 1, 7))
    again = getattr(make_game(family, 1, 7), "noiseless", None) or make_game(family, 1, 7)
    np.testing.assert_array_equal(game.bitorder_values, again.bitorder_values)
    other = make_game(family, 2, 7)
    assert not np.array_equal(game.bitorder_values, getattr(other, "noiseless", other).bitorder_values)
    phi = make_game(family, 1, 7).exact_values()
    assert phi.shape == (7,) and np.ptp(game.bitorder_values) > 0
    assert phi.sum() == pytest.approx(game.grand_value - game.empty_value, abs=1e-9)
    # the enumerated exact values equal the Shapley operator applied to the table (another code path)
    np.testing.assert_allclose(phi, shapley_operator(7) @ game.bitorder_values, rtol=1e-10, atol=1e-12)


def moebius(values: np.ndarray) -> np.ndarray:
    """Moebius transform of bit-order values: m(T) = sum_{S subset T} (-1)^{|T - S|} v(S)."""
    m = np.array(values, dtype=np.float64)
    p = int(np.log2(m.size))
    for j in range(p):
        bit = 1 << j
        idx = np.arange(m.size)
        has = (idx & bit) != 0
        m[has] -= m[idx[has] ^ bit]
    return m


def test_additive_pairs_family_is_additive_plus_sparse_pairs():
    """Order <= 2 with max(1, p // 4) pair terms over a larger additive part; the Shapley values
    follow from the values alone: phi_i = m(i) + sum_j m(ij) / 2 (m the Moebius coefficients)."""
    for p, k in ((8, 0), (12, 1), (9, 2)):
        game = make_game("additive-pairs", k, p)
        m = moebius(game.bitorder_values)
        order = np.array([bin(c).count("1") for c in range(1 << p)])
        assert np.abs(m[order >= 3]).max() < 1e-9
        pairs = np.flatnonzero((order == 2) & (np.abs(m) > 1e-12))
        assert len(pairs) == max(1, p // 4)
        singles = m[1 << np.arange(p)]
        assert np.std(singles) > np.std(m[pairs])  # a strong additive background
        phi = singles.copy()
        for c in pairs:
            phi[[j for j in range(p) if (c >> j) & 1]] += m[c] / 2
        np.testing.assert_allclose(game.exact_values(), phi, rtol=1e-10, atol=1e-10)


def test_soum_family_matches_its_closed_form_and_spans_all_orders():
    sizes = set()
    for k in range(6):
        src = FAMILIES["soum"](9, np.random.default_rng(instance_seed("soum", k)))
        np.testing.assert_allclose(make_game("soum", k, 9).exact_values(), src.exact_values(), atol=1e-12)
        assert 3 <= src.n_terms <= 8
        sizes |= set(src.members.sum(axis=1).tolist())
    assert min(sizes) >= 1 and max(sizes) >= 7  # terms of low and of high order


def test_noisy_family_draws_fresh_noise_per_call_around_a_noiseless_table():
    from shapleig.runs.budget import BudgetedGame
    from shapleig_tasks.generality import NOISE_FRACTION, NoisyGame

    game = make_game("noisy", 1, 10)
    assert isinstance(game, NoisyGame)
    base = game.noiseless
    np.testing.assert_array_equal(game.exact_values(), base.exact_values())
    assert game.noise_sd == pytest.approx(NOISE_FRACTION * np.std(base.bitorder_values))
    Z = np.unique(np.random.default_rng(0).random((600, 10)) < 0.5, axis=0)  # distinct coalitions
    assert len(Z) > 400
    first = game(Z)
    second = game(Z)
    assert not np.any(first == second)  # every call is a fresh draw
    # first draws do not depend on the order of the calls, and fresh() restarts the stream
    again = game.fresh()
    np.testing.assert_array_equal(again(Z[::-1])[::-1], first)
    # the noise has the stated sd (> 400 draws: the sample sd is within 15% with overwhelming probability)
    resid = first - base(Z)
    assert abs(np.std(resid) / game.noise_sd - 1.0) < 0.15 and abs(np.mean(resid)) < 0.3 * game.noise_sd
    # a budgeted run charges a coalition once and keeps its first draw
    budgeted = BudgetedGame(game.fresh(), 5)
    v1 = budgeted(Z[:3])
    v2 = budgeted(Z[:3])
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(v1, first[:3])
    assert budgeted.evaluations == 3


def test_noisy_runs_in_the_harness_do_not_depend_on_earlier_runs():
    from shapleig_tasks import harness

    tasks = family_tasks(["noisy"], 1, (6,))
    both = harness.execute_plan(harness.build_plan(tasks, ["permutation"], ["2p"], [0, 1]), progress=False)
    alone = harness.execute_plan(harness.build_plan(tasks, ["permutation"], ["2p"], [1]), progress=False)
    # seed 1 after seed 0 (which drew noise on shared coalitions) equals seed 1 run alone
    assert both[both.seed == 1].mse.iloc[0] == alone.mse.iloc[0] > 0


def test_ensemble_family_scores_the_averaged_predictions():
    from sklearn.metrics import accuracy_score, r2_score

    from shapleig_tasks.generality import ensemble_predictions

    for k, metric in ((0, r2_score), (1, accuracy_score)):
        game = make_game("ensemble", k)
        p = game.n_players
        assert p == (8, 10)[k]
        fit = ensemble_predictions(p, np.random.default_rng(instance_seed("ensemble", k)),
                                   "diabetes" if k == 0 else "breast_cancer")
        rng = np.random.default_rng(1)
        for _ in range(5):
            z = rng.random(p) < 0.5
            z[rng.integers(p)] = True
            avg = fit["preds"][z].mean(axis=0)
            pred = avg if k == 0 else (avg > 0.5).astype(float)
            assert game(z[None, :])[0] == pytest.approx(metric(fit["y_val"], pred), abs=1e-12)
        const = np.full(fit["y_val"].shape, float(fit["constant"]))
        empty = metric(fit["y_val"], const if k == 0 else (const > 0.5).astype(float))
        assert game.empty_value == pytest.approx(empty, abs=1e-12)
        assert game.grand_value > game.empty_value


def test_closed_form_families_match_enumeration():
    """Voting and unanimity instances: the enumerated table's values equal the games' closed forms."""
    for family in ("voting", "unanimity"):
        src = FAMILIES[family](9, np.random.default_rng(instance_seed(family, 0)))
        np.testing.assert_allclose(make_game(family, 0, 9).exact_values(), src.exact_values(), atol=1e-12)
    # additive plus pairwise: phi_i = w_i + half of each pair term i belongs to
    rng = np.random.default_rng(instance_seed("pairwise", 0))
    w = rng.normal(size=6)
    pairs = np.array([rng.choice(6, 2, replace=False) for _ in range(6)])
    b = rng.normal(size=6)
    expected = w.copy()
    for (i, j), bij in zip(pairs, b):
        expected[[i, j]] += bij / 2
    np.testing.assert_allclose(make_game("pairwise", 0, 6).exact_values(), expected, atol=1e-12)


def test_bad_family_and_size():
    with pytest.raises(ValueError, match="unknown game family"):
        make_game("nope", 0)
    with pytest.raises(ValueError, match="2 <= p <= 20"):
        make_game("dominant", 0, 30)
    assert [t.game().n_players for t in family_tasks(["voting"], 4)] == [8, 12, 16, 8]
    assert [t.game().n_players for t in family_tasks(["ensemble"], 4)] == [8, 10, 12, 8]


def test_tiny_run_and_report(tmp_path, capsys):
    bg = _script()
    out = tmp_path / "g.parquet"
    code = bg.main(["--families", "dominant", "voting", "--instances", "1", "--sizes", "6", "--seeds", "1",
                    "--budgets", "2p", "--methods", "shapleig", "shapleig:surrogate=ard",
                    "shapleig:surrogate=shared", "permutation", "--components", "shapleig:surrogate=ard",
                    "shapleig:surrogate=shared", "--out", str(out), "--quiet"])
    assert code == 0
    text = capsys.readouterr().out
    assert "default / better component" in text and "coverage: pooled" in text
    df = pd.read_parquet(out)
    assert set(df.group) == {"dominant", "voting"} and (df.error == "").all()
    table = bg.cell_table(df, "shapleig", ["shapleig:surrogate=ard", "shapleig:surrogate=shared"])
    cells = df.groupby(["group", "method"]).mse.mean()
    for fam in ("dominant", "voting"):
        comp = min(cells[fam, "shapleig:surrogate=ard"], cells[fam, "shapleig:surrogate=shared"])
        assert table.loc[(fam, "2p"), "vs_comp"] == pytest.approx(cells[fam, "shapleig"] / comp)
        row = df[(df.group == fam) & (df.method == "shapleig")].iloc[0]
        v, s, e = (np.asarray(row[c]) for c in ("values", "std", "exact"))
        assert table.loc[(fam, "2p"), "rms_z"] == pytest.approx(np.sqrt(np.mean(((v - e) / s) ** 2)))
        assert table.loc[(fam, "2p"), "cover"] == pytest.approx(np.mean(np.abs(v - e) <= 1.959963984540054 * s))
    assert bg.main(["--from", str(out), "--components", "shapleig:surrogate=ard", "shapleig:surrogate=shared"]) == 0
    # the default components are the four kernels alone, as the harness labels them
    assert "shapleig:size_trend=True,surrogate=ard" in bg.COMPONENTS and len(bg.COMPONENTS) == 4
    from shapleig_tasks.methods import parse_method

    for label in bg.COMPONENTS:  # spelled as the harness labels its rows, so the report finds them
        assert parse_method(label).label == label
