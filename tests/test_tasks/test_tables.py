"""Value-table games: lookup, exact values, strict loading, the shared suite."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import find_shared_games_dir as _shared_games_dir

from shapleig.errors import GameError
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import exact_shapley, shapley_from_table
from shapleig_tasks.catalog import SUITE_B, suite_files
from shapleig_tasks.synthetic import SumOfUnanimityGame
from shapleig_tasks.tables import TableGame, default_tables_dir, discover_tables, save_table, size_major_order


def _random_table(p: int = 6, seed: int = 0):
    """A SOUG evaluated on all coalitions, rows shuffled: (game, bool[2^p, p], float64[2^p])."""
    game = SumOfUnanimityGame(n_players=p, n_terms=12, seed=seed, variant="shapiq")
    z = all_coalitions(p)[np.random.default_rng(seed).permutation(1 << p)]
    return game, z, game(z)


def test_table_lookup_and_exact_values_equal_enumeration():
    source, z, v = _random_table()
    table = TableGame(z, v, name="soug6")
    assert table.n_players == 6
    probe = np.random.default_rng(1).random((20, 6)) < 0.5
    np.testing.assert_array_equal(table(probe), source(probe))
    np.testing.assert_allclose(table.exact_values(), exact_shapley(table), atol=1e-13)
    np.testing.assert_allclose(table.exact_values(), source.exact_values(), atol=1e-12)
    np.testing.assert_allclose(table.exact_values(), shapley_from_table(z, v), atol=1e-13)
    # bit-identical whatever the row order of the table
    perm = np.random.default_rng(5).permutation(len(v))
    np.testing.assert_array_equal(TableGame(z[perm], v[perm]).exact_values(), table.exact_values())
    assert table.normalization_value == table.empty_value == source(np.zeros((1, 6), bool))[0]


def test_size_major_order_matches_itertools():
    p = 5
    z = all_coalitions(p)[::-1]
    ordered = z[size_major_order(z)]
    expected = [set(c) for k in range(p + 1) for c in itertools.combinations(range(p), k)]
    assert [set(np.flatnonzero(r).tolist()) for r in ordered] == expected


def test_save_and_reload_roundtrip(tmp_path):
    _, z, v = _random_table(5, seed=2)
    path = save_table(tmp_path / "sub" / "t_3.npz", z, v)
    with np.load(path, allow_pickle=False) as d:
        assert set(d.files) == {"values", "coalitions", "n_players", "normalization_value"}
        assert not d["coalitions"][0].any() and d["coalitions"][-1].all()  # size-major
        assert float(d["normalization_value"]) == d["values"][0]
    table = TableGame.from_npz(path)
    np.testing.assert_array_equal(table(z), v)
    specs = discover_tables(tmp_path)
    assert [(s.name, s.group, s.seed) for s in specs] == [("sub/t_3", "sub", 3)]
    assert specs[0].load().name == "sub/t_3"


def _write(path: Path, **arrays) -> Path:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: a.pop("values"), "missing key"),
        (lambda a: a.update(values=a["values"][:-1]), "'values' must have shape"),
        (lambda a: a.update(coalitions=a["coalitions"][:, :-1]), "'n_players' = 4 but"),
        (lambda a: a.update(n_players=np.float64(4.0)), "integer scalar"),
        (lambda a: a["coalitions"].__setitem__(3, a["coalitions"][2]), "duplicate"),
        (lambda a: a["values"].__setitem__(5, np.nan), "non-finite"),
        (lambda a: a.update(values=a["values"].astype(object)), "cannot read key 'values'"),
        (lambda a: a.update(coalitions=a["coalitions"].astype(np.float32)), "must be bool"),
        (lambda a: a.update(normalization_value=np.array([1.0, 2.0])), "normalization_value"),
    ],
)
def test_corrupt_tables_fail_at_load_naming_file_and_problem(tmp_path, mutate, message):
    _, z, v = _random_table(4)
    arrays = {"values": v.copy(), "coalitions": z.copy(), "n_players": np.int32(4), "normalization_value": v[0]}
    mutate(arrays)
    path = _write(tmp_path / "bad.npz", **arrays)
    with pytest.raises(GameError, match=message) as info:
        TableGame.from_npz(path)
    assert str(path) in str(info.value)


def test_foreign_files_fail_clearly(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("this is not an archive\n")
    with pytest.raises(GameError, match="not a readable .npz") as info:
        TableGame.from_npz(text)
    assert str(text) in str(info.value)
    npy = tmp_path / "array.npz"
    with open(npy, "wb") as fh:
        np.save(fh, np.arange(4.0))
    with pytest.raises(GameError, match="not an .npz archive"):
        TableGame.from_npz(npy)
    with pytest.raises(GameError, match="no such file"):
        TableGame.from_npz(tmp_path / "missing.npz")
    with pytest.raises(GameError, match="does not exist"):
        discover_tables(tmp_path / "nowhere")


def test_shared_suite_loads_with_documented_ranges():
    root = _shared_games_dir()
    if root is None:
        pytest.skip("shared table suite not present")
    if os.environ.get("SHAPLEIG_TABLES") is None:
        assert default_tables_dir() == root
    specs = discover_tables(root)
    # docs/games.md §7: the public suites' 270 files, and three tables per suite-B folder where present
    suite_b = {sub for sub, _, _ in SUITE_B.values()}
    public = [s for s in specs if s.group not in suite_b]
    assert len(public) == 270
    by_group = Counter(s.group for s in specs if s.group in suite_b)
    assert all(n == 3 for n in by_group.values()), by_group
    by_name = {s.name: s for s in specs}
    vit9 = by_name["ImageClassifier_Game/9/model_name=vit_9_patches_1"]
    assert vit9.group == "ImageClassifier_Game/9" and vit9.seed == 1
    game = vit9.load()
    assert game.n_players == 9
    assert 9e-5 <= game.empty_value <= 3e-3 and 0.22 <= game.grand_value <= 0.9997 + 1e-9
    assert game.normalization_value == game.empty_value
    phi = game.exact_values()
    assert phi.sum() == pytest.approx(game.grand_value - game.empty_value, abs=1e-12)
    np.testing.assert_allclose(phi, exact_shapley(game), atol=1e-12)
    local = by_name["CaliforniaHousing_LocalExplanation_Game/8/model_name=gradient_boosting_imputer=marginal_3"].load()
    assert local.empty_value == pytest.approx(1.0960, abs=1e-4) and 0.46 <= local.grand_value <= 4.44
    glob = by_name["BikeSharing_GlobalExplanation_Game/12/model_name=random_forest_loss_function=r2_score_2"].load()
    assert glob.grand_value == pytest.approx(1.0) and -15.6 <= glob.empty_value <= 0.42
    # row order in the suite is size-major (docs/games.md §7)
    np.testing.assert_array_equal(size_major_order(game.coalitions), np.arange(512))


def test_every_suite_b_suite_names_its_three_tables() -> None:
    root = _shared_games_dir()
    if root is None or not (root / "SOUM_Game").is_dir():
        pytest.skip("suite B not present")
    for suite, (sub, _, _) in SUITE_B.items():
        files = suite_files(suite, root)
        assert len(files) == 3, suite
        assert all(f.path.parent == root / sub for f in files)
        game = files[0].load()
        assert game.n_players == int(sub.rsplit("/", 1)[1])


def test_marginal_profile_script_matches_brute_force() -> None:
    """scripts/studies/marginal_profile.py: mean |v(S + i) - v(S)| by |S|, against a loop over (i, S)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "studies" / "marginal_profile.py"
    spec = importlib.util.spec_from_file_location("marginal_profile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    p = 5
    table = np.random.default_rng(0).normal(size=2**p)
    got = module.marginal_profile(table)
    for k in range(p):
        diffs = []
        for i in range(p):
            for S in itertools.combinations([j for j in range(p) if j != i], k):
                code = sum(1 << j for j in S)
                diffs.append(abs(table[code | (1 << i)] - table[code]))
        assert got[k] == pytest.approx(np.mean(diffs), rel=1e-12)
