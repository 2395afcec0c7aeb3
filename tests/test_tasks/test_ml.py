"""LightGBM games: determinism, conventions, exact values by enumeration, the on-disk cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

import shapleig_tasks.ml as ml
from shapleig.errors import GameError
from shapleig.games.exact import exact_shapley
from shapleig_tasks.ml import (
    DataValuationGame,
    FeatureImportanceGame,
    HPIAblationGame,
    make_ml_game,
)
from shapleig_tasks.tables import TableGame, size_major_order


def _tiny_hpi(tmp_path, **kw) -> HPIAblationGame:
    """3 hyperparameters, 10 trees, 2 folds on diabetes: 8 coalitions of 2 small fits each."""
    opts = dict(
        players=["learning_rate", "num_leaves", "reg_lambda"],
        fixed_params={"n_estimators": 10},
        n_folds=2,
        cache_dir=tmp_path,
        progress=False,
    )
    opts.update(kw)
    return HPIAblationGame("diabetes", seed=1, **opts)


def test_constructors_evaluate_nothing(monkeypatch, tmp_path):
    def boom(name):
        raise AssertionError("a constructor loaded data")

    monkeypatch.setattr(ml, "load_dataset", boom)
    games = [
        HPIAblationGame("digits", 13, cache_dir=tmp_path),
        FeatureImportanceGame("breast_cancer"),
        DataValuationGame("digits", 12),
        make_ml_game("hpi", "wine", 8, seed=3),
    ]
    assert [g.n_players for g in games] == [13, 10, 12, 8]
    assert all(g.n_evaluations == 0 for g in games)
    assert games[3].params()["players"] == list(ml.HPI_CI_PLAYERS)
    assert games[0].params()["metric"] == "neg_log_loss"


def test_hpi_configuration_takes_star_on_coalition():
    game = HPIAblationGame("diabetes", 8, progress=False)
    row = np.zeros(8, dtype=bool)
    row[[0, 5]] = True  # learning_rate, subsample
    cfg = game.configuration(row)
    assert cfg["learning_rate"] == 0.03 and cfg["subsample"] == 0.7 and cfg["subsample_freq"] == 1
    assert cfg["n_estimators"] == 100 and cfg["num_leaves"] == 31 and cfg["reg_lambda"] == 0.0
    assert game.configuration(np.zeros(8, bool))["learning_rate"] == 0.1


def test_hpi_repeated_calls_are_identical_and_batch_free(tmp_path):
    game = _tiny_hpi(tmp_path)
    z = np.array([[0, 0, 0], [1, 0, 1], [1, 1, 1]], dtype=bool)
    first = game(z)
    np.testing.assert_array_equal(first, game(z))
    np.testing.assert_array_equal(first[1:2], game(z[1:2]))
    assert np.ptp(first) > 0  # the hyperparameters matter
    assert game.n_evaluations == 3 + 3 + 1


def test_tiny_hpi_exact_values_enumeration_and_cache(tmp_path):
    game = _tiny_hpi(tmp_path)
    phi = game.exact_values()
    assert game.n_evaluations == 8
    reference = exact_shapley(game)  # evaluates the 8 coalitions again
    assert game.n_evaluations == 16
    np.testing.assert_allclose(phi, reference, atol=1e-12)
    table = game.table()
    assert phi.sum() == pytest.approx(table.grand_value - table.empty_value, abs=1e-12)

    # same instance: served from memory; fresh instance with same params: from disk
    np.testing.assert_array_equal(game.exact_values(), phi)
    assert game.n_evaluations == 16
    again = _tiny_hpi(tmp_path)
    np.testing.assert_array_equal(again.exact_values(), phi)
    assert again.n_evaluations == 0

    # the cached file is a docs/games.md §7 table with a JSON sidecar naming parameters and versions
    path = game.cache_path()
    assert path.is_file() and path.parent.name == "3"
    loaded = TableGame.from_npz(path)
    np.testing.assert_array_equal(size_major_order(loaded.coalitions), np.arange(8))
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["params"]["players"] == ["learning_rate", "num_leaves", "reg_lambda"]
    assert meta["params"]["lambda_star"]["num_leaves"] == {"num_leaves": 8}
    assert {"lightgbm", "scikit-learn", "numpy"} <= set(meta["versions"])
    np.testing.assert_allclose(meta["shapley_values"], phi, atol=1e-15)

    # other parameters -> other cache entry; recompute re-evaluates
    other = _tiny_hpi(tmp_path, n_folds=3)
    assert other.cache_path() != path
    game.exact_values(recompute=True)
    assert game.n_evaluations == 24


def test_cache_with_foreign_parameters_is_refused(tmp_path):
    game = _tiny_hpi(tmp_path)
    game.exact_values()
    sidecar = game.cache_path().with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    meta["params"]["n_folds"] = 7
    sidecar.write_text(json.dumps(meta))
    with pytest.raises(GameError, match="other parameters"):
        _tiny_hpi(tmp_path).exact_values()
    np.testing.assert_array_equal(_tiny_hpi(tmp_path).exact_values(use_cache=False), game.exact_values())


def test_feature_importance_empty_is_prevalence_predictor(tmp_path):
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedKFold

    game = FeatureImportanceGame("breast_cancer", 3, seed=2, n_estimators=5, n_folds=2, cache_dir=tmp_path, progress=False)
    assert game.groups[0] == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]  # 4 measurements, mean/se/worst
    z = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 1]], dtype=bool)
    v = game(z)
    np.testing.assert_array_equal(v, game(z))
    x, y = ml.load_dataset("breast_cancer")
    expected = []
    for tr, te in StratifiedKFold(2, shuffle=True, random_state=2).split(x, y):
        prior = np.array([np.mean(y[tr] == 0), np.mean(y[tr] == 1)])
        expected.append(-log_loss(y[te], np.tile(prior, (len(te), 1)), labels=[0, 1]))
    assert v[0] == pytest.approx(np.mean(expected), abs=1e-12)
    assert v[2] > v[1] > v[0]  # features help, more features help more here
    np.testing.assert_allclose(game.exact_values(), exact_shapley(game), atol=1e-12)


def test_data_valuation_conventions(tmp_path):
    game = DataValuationGame("digits", 3, seed=0, n_estimators=5, cache_dir=tmp_path, progress=False)
    z = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)
    v = game(z)
    assert v[0] == pytest.approx(0.1)  # empty union: constant predictor, accuracy 1/10
    assert 0.5 < v[1] <= 1.0 and 0.1 < v[2] <= v[1] + 0.1
    np.testing.assert_array_equal(v, game(z))
    sizes = [len(c) for c in game.chunk_rows]
    assert sum(sizes) == 1257 and max(sizes) - min(sizes) <= 1
    assert len(np.unique(np.concatenate(game.chunk_rows))) == 1257  # disjoint
    reg = DataValuationGame("diabetes", 3, progress=False)
    assert reg.metric == "r2" and reg(np.zeros((1, 3), bool))[0] == 0.0
    inc = DataValuationGame("wine", 4, chunks="increasing", metric="neg_log_loss", n_estimators=5, progress=False)
    assert inc(np.zeros((1, 4), bool))[0] == pytest.approx(-np.log(3))
    sizes = [len(c) for c in inc.chunk_rows]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_parallel_enumeration_equals_serial(tmp_path):
    serial = _tiny_hpi(tmp_path).table(use_cache=False)
    game = _tiny_hpi(tmp_path)
    parallel = game.table(use_cache=False, n_jobs=2)
    np.testing.assert_array_equal(parallel(serial.coalitions), serial(serial.coalitions))
    assert game.n_evaluations == 8


def test_bad_options_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown ML game kind"):
        make_ml_game("nope")
    with pytest.raises(ValueError, match="unknown dataset"):
        HPIAblationGame("iris")
    with pytest.raises(ValueError, match="does not fit"):
        HPIAblationGame("diabetes", metric="neg_log_loss")
    with pytest.raises(ValueError, match="HPI players"):
        HPIAblationGame(players=["learning_rate", "bogus"])
    with pytest.raises(ValueError, match="players' parameters"):
        HPIAblationGame(players=["learning_rate", "n_estimators"], fixed_params={"n_estimators": 5})
    with pytest.raises(ValueError, match="equals its default"):
        HPIAblationGame(players=["learning_rate", "num_leaves"], star={"num_leaves": {"num_leaves": 31}})
    with pytest.raises(GameError, match="n_players"):
        FeatureImportanceGame("breast_cancer", 11)
    with pytest.raises(ValueError, match="chunking"):
        DataValuationGame(chunks="sorted")


@pytest.mark.slow
def test_ci_hpi_game_full_table_is_reproducible(tmp_path):
    """The p = 8 CI game on diabetes (256 five-fold CVs, a few minutes on one core)."""
    game = make_ml_game("hpi", "diabetes", 8, seed=0, cache_dir=tmp_path, progress=False)
    phi = game.exact_values()
    table = game.table()
    assert phi.sum() == pytest.approx(table.grand_value - table.empty_value, abs=1e-10)
    rng = np.random.default_rng(0)
    probe = table.coalitions[rng.choice(256, 8, replace=False)]
    np.testing.assert_array_equal(make_ml_game("hpi", "diabetes", 8, seed=0, progress=False)(probe), table(probe))
