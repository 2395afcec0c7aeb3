"""Conventions shared with scikit-learn and shapiq: the seed argument, get_params/set_params and
clone, shapiq-style positional calls, ``--version``, the missing-extra error, and where the table
suites are looked for (the shipped subset, SHAPLEIG_SHARED)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import shapleig
import shapleig_baselines as baselines
from shapleig.errors import GameError
from shapleig.seeding import resolve_seed
from shapleig_tasks.cli import main


def _game(p: int = 6) -> shapleig.FunctionGame:
    def fn(Z: np.ndarray) -> np.ndarray:
        return np.sqrt(Z @ np.arange(1.0, p + 1))

    return shapleig.FunctionGame(fn, p)


class _Counting:
    """A game that counts its calls, to prove that bad input is refused before any evaluation."""

    n_players = 5

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        self.calls += 1
        return Z.sum(axis=1).astype(float)


# --------------------------------------------------------------------------------------------
# seeds
def test_resolve_seed_accepts_int_none_generator_and_the_alias() -> None:
    assert resolve_seed() == 0 and resolve_seed(7) == 7 and resolve_seed(np.int64(7)) == 7
    assert resolve_seed(random_state=5) == 5 and resolve_seed(5, 5) == 5
    a, b = resolve_seed(None), resolve_seed(None)
    assert a != b and 0 <= a < 2**63
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert resolve_seed(g1) == resolve_seed(random_state=g2)  # same generator state, same seed
    assert resolve_seed(g1) != resolve_seed(np.random.default_rng(3))  # a generator advances


@pytest.mark.parametrize("bad, error", [(1.5, TypeError), (-1, ValueError), (True, TypeError), ("0", TypeError),
                                        (np.random.RandomState(0), TypeError)])
@pytest.mark.parametrize("method", ["permutation", "kernelshap", "shapleig"])
def test_bad_seeds_fail_before_any_evaluation(bad: object, error: type, method: str) -> None:
    game = _Counting()
    est = baselines.get(method) if method != "shapleig" else shapleig.ShaplEIG()
    with pytest.raises(error, match="seed"):
        est.estimate(game, 20, seed=bad)
    with pytest.raises(error, match="seed"):
        est.estimate(game, 20, random_state=bad)
    assert game.calls == 0


def test_seed_and_random_state_must_agree() -> None:
    game = _Counting()
    with pytest.raises(ValueError, match="disagree"):
        baselines.get("permutation").estimate(game, 20, seed=1, random_state=2)
    assert game.calls == 0
    est = baselines.get("permutation").estimate(game, 20, seed=1, random_state=1)
    assert est.info["seed"] == 1


@pytest.mark.parametrize("method", ["permutation", "leverage-shap", "svarm-plus"])
def test_none_and_generator_seeds_are_recorded_and_repeatable(method: str) -> None:
    game = _game()
    estimator = baselines.get(method)
    for seed in (None, np.random.default_rng(11)):
        first = estimator.estimate(game, 30, seed=seed)
        used = first.info["seed"]
        assert isinstance(used, int) and used >= 0
        again = estimator.estimate(game, 30, seed=used)
        np.testing.assert_array_equal(first.values, again.values)
    by_alias = estimator.estimate(game, 30, random_state=4)
    np.testing.assert_array_equal(by_alias.values, estimator.estimate(game, 30, seed=4).values)


def test_shapleig_records_a_fresh_seed_that_repeats_the_run() -> None:
    est = shapleig.ShaplEIG.from_options(ard=False, refit="never", pool_size=30)
    first = est.estimate(_game(), 10, seed=None)
    again = est.estimate(_game(), 10, seed=first.info["seed"])
    np.testing.assert_array_equal(first.values, again.values)


# --------------------------------------------------------------------------------------------
# get_params / set_params / clone, positional calls
@pytest.mark.parametrize("name", baselines.NAMES)
def test_every_baseline_clones(name: str) -> None:
    est = baselines.get(name)
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est and twin.get_params() == est.get_params()


def test_gp_estimators_clone_and_set_params_validates() -> None:
    est = shapleig.ShaplEIG.from_options(ard=False, pool_size=300, refit="decaying")
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin.pool_size == 300 and twin.options.ard is False
    assert clone(shapleig.GPLeverage(ard=False)).ard is False
    assert est.set_params(batch_size=2) is est and est.batch_size == 2
    with pytest.raises(ValueError, match="unknown acquisition"):
        est.set_params(acquisition="nope")
    with pytest.raises(ValueError, match="no parameter.*'n_players'"):
        est.set_params(n_players=8)
    ks = baselines.get("kernelshap").set_params(paired=True)
    assert ks.paired is True and ks.get_params()["paired"] is True


@pytest.mark.parametrize("make", [lambda: shapleig.ShaplEIG(8), lambda: baselines.estimator_class("permutation")(8),
                                  lambda: shapleig.GPLeverage(np.int64(8))])
def test_shapiq_style_positional_player_count_is_a_clear_error(make) -> None:
    with pytest.raises(TypeError, match="number of players is not a constructor argument"):
        make()


# --------------------------------------------------------------------------------------------
# command line and the optional extra
def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"shapleig {shapleig.__version__}"


def test_missing_shapiq_names_the_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # import shapiq (and any of its already imported submodules) -> ImportError
    for name in [m for m in sys.modules if m == "shapiq" or m.startswith("shapiq.")] + ["shapiq"]:
        monkeypatch.setitem(sys.modules, name, None)
    for module in ("shapleig.interop.shapiq_bridge", "shapleig.estimation.shapiq_values", "shapleig.shapiq_bridge"):
        monkeypatch.delitem(sys.modules, module, raising=False)  # re-run the guard as on a machine without shapiq
    with pytest.raises(ImportError, match=r"shapleig\[shapiq\]"):
        baselines.get("shapiq:PolySHAP")
    with pytest.raises(ImportError, match=r"shapleig\[shapiq\]"):
        baselines.get("kernelshap").estimate(_game(), 20, seed=0).to_interaction_values()
    with pytest.raises(SystemExit) as info:
        main(["run", "--tasks", "wvg-7", "--methods", "shapiq:PolySHAP", "--budgets", "2p", "--out", "x.parquet"])
    assert info.value.code == 2 and "shapleig[shapiq]" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# where the table suites are found
def test_shipped_subset_is_used_without_shared_tables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from shapleig_tasks import tables
    from shapleig_tasks.catalog import resolve_task

    monkeypatch.delenv("SHAPLEIG_TABLES", raising=False)
    monkeypatch.delenv("SHAPLEIG_SHARED", raising=False)
    # as in a fresh clone: nothing beside the repository
    monkeypatch.setattr(tables, "table_search_path", lambda environ=None: [
        tables.TableLocation("../shared beside the repository", tmp_path / "shared" / "data" / "games"),
        tables.TableLocation("shipped subset", tables.SHIPPED_TABLES_DIR)])
    assert tables.default_tables_dir() == tables.SHIPPED_TABLES_DIR
    tasks = resolve_task("vit-9/first=3")
    assert [t.name for t in tasks] == ["vit-9/seed=1", "vit-9/seed=2", "vit-9/seed=3"]
    game = tasks[0].game()
    assert game.n_players == 9 and abs(game.exact_values().sum() - (game.grand_value - game.empty_value)) < 1e-12


def test_every_suite_ships_three_valid_tables() -> None:
    from shapleig_tasks.catalog import SUITE_B, TABLE_SUITES, suite_files
    from shapleig_tasks.tables import SHIPPED_TABLES_DIR

    # suite B (docs/games.md §7) is read from the shared folder only
    for suite in (s for s in TABLE_SUITES if s not in SUITE_B):
        files = suite_files(suite, folder=SHIPPED_TABLES_DIR)
        assert [t.seed for t in files] == [1, 2, 3], suite
        for spec in files:
            spec.load()  # full validation
    assert (SHIPPED_TABLES_DIR / "README.md").read_text().count("MIT License") == 1


def test_wrong_shapleig_shared_names_every_path_searched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "no-such-folder"
    monkeypatch.setenv("SHAPLEIG_SHARED", str(wrong))
    monkeypatch.delenv("SHAPLEIG_TABLES", raising=False)
    from shapleig_tasks.tables import default_tables_dir

    with pytest.raises(GameError, match="searched") as info:
        default_tables_dir()
    assert str(wrong / "data" / "games") in str(info.value) and "SHAPLEIG_SHARED" in str(info.value)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--tasks", "vit-9", "--methods", "permutation", "--budgets", "2p",
              "--out", str(tmp_path / "r.parquet")])
    assert exit_info.value.code == 2 and str(wrong / "data" / "games") in capsys.readouterr().err
    assert main(["tasks"]) == 0
    listing = capsys.readouterr().out
    assert str(wrong / "data" / "games") in listing and "not found" in listing and "SHAPLEIG_TABLES" in listing


def test_shapleig_shared_may_name_the_games_folder_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    from shapleig_tasks.catalog import resolve_task
    from shapleig_tasks.tables import SHIPPED_TABLES_DIR, default_tables_dir

    monkeypatch.setenv("SHAPLEIG_SHARED", str(SHIPPED_TABLES_DIR))
    monkeypatch.delenv("SHAPLEIG_TABLES", raising=False)
    assert default_tables_dir() == SHIPPED_TABLES_DIR
    assert len(resolve_task("bike-ge-12")) == 3
