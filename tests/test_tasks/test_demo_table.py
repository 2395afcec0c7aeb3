"""The demo's precomputed exact values (tasks/data/demo): they are the table of the game the demo runs
(same parameters, so the same cache key), consistent with their own Shapley values, copied into the
cache only when it lacks them and never for ``--live``, and said so before the run starts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shapleig import exact_shapley
from shapleig_tasks.catalog import resolve_tasks
from shapleig_tasks.demo import prepare_exact_values, shipped_table
from shapleig_tasks.ml import library_versions
from shapleig_tasks.tables import TableGame


def _game(cache: Path):
    game = resolve_tasks(["hpi-diabetes-8"])[0].game()
    game.cache_dir = cache
    return game


def test_the_shipped_table_is_the_demo_games_and_copied_once(tmp_path):
    game = _game(tmp_path)
    shipped = shipped_table(game.cache_path())
    assert shipped is not None, "the demo game's parameters changed: regenerate tasks/data/demo (see its README)"
    sidecar = json.loads(shipped.with_suffix(".json").read_text())
    assert sidecar["cache_key"] == game.cache_key() and sidecar["params"] == json.loads(json.dumps(game.params()))
    table = TableGame.from_npz(shipped)
    np.testing.assert_allclose(exact_shapley(table), sidecar["shapley_values"], rtol=1e-12, atol=1e-15)
    says = prepare_exact_values("hpi-diabetes-8", tmp_path, live=False)
    assert "exact values of its 256 coalitions shipped with shapleig" in says and game.cache_path().is_file()
    np.testing.assert_array_equal(game.table().exact_values(), table.exact_values())  # the game loads it as its cache
    assert "from the cache" in prepare_exact_values("hpi-diabetes-8", tmp_path, live=False)
    live = tmp_path / "live"
    says = prepare_exact_values("hpi-diabetes-8", live, live=True)
    assert says.startswith("hpi-diabetes-8: first run: computing the exact values of all 256 coalitions once")
    assert not _game(live).cache_path().exists()


def test_the_shipped_values_are_what_the_game_computes_here(tmp_path):
    """A few coalitions evaluated live (a 5-fold LightGBM cross-validation each) against the table,
    on the library versions that computed it (skipped on others: LightGBM's results may differ)."""
    game = _game(tmp_path)
    shipped = shipped_table(game.cache_path())
    versions = json.loads(shipped.with_suffix(".json").read_text())["versions"]
    here = library_versions()
    if any(here.get(k) != versions.get(k) for k in ("lightgbm", "scikit-learn", "numpy")):
        pytest.skip(f"the table was computed with {versions}, this machine has {here}")
    table = TableGame.from_npz(shipped)
    rows = np.array([[0] * 8, [1] * 8, [1, 0, 1, 0, 1, 0, 1, 0], [0, 1, 1, 0, 0, 1, 0, 1]], dtype=bool)
    game.progress = False
    np.testing.assert_allclose(game(rows), table(rows), rtol=1e-9, atol=1e-12)
