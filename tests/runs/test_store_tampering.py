"""Tampered stores are refused; store creation is atomic; odd game values get clear errors.

A store is a plain SQLite file anyone can edit. What a store never contains (triggers, views,
non-REAL values, a damaged ``meta`` table) makes it refuse to open; ``verify=True`` re-evaluates
a random sample of stored coalitions and names every one that differs. Several processes creating
the same new store at once all succeed (the schema is one transaction).
"""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame
from shapleig.errors import GameError, StoreError, StoreMismatchError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _games_for_parallel import QuadraticGame  # noqa: E402
from _store_sql import run_sql as _sql  # noqa: E402

P = 5
ROWS = np.tril(np.ones((P, P), dtype=bool))


def _stored(path: Path, game=None, n: int = 4) -> None:
    BudgetedGame(game or QuadraticGame(P, seed=0), 2 ** P, store=path)(ROWS[:n])


def test_a_store_with_a_trigger_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, "CREATE TRIGGER times_ten AFTER INSERT ON evaluations BEGIN "
               "UPDATE evaluations SET value = value * 10 WHERE id = NEW.id; END")
    with pytest.raises(StoreError, match=r"holds trigger times_ten.*refusing to use it"):
        EvaluationStore(path)


def test_a_store_with_a_view_and_a_database_holding_only_a_view_are_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, "CREATE VIEW v AS SELECT * FROM evaluations")
    with pytest.raises(StoreError, match=r"holds view v"):
        EvaluationStore(path)
    only = tmp_path / "only_view.sqlite"
    _sql(only, "CREATE VIEW answer AS SELECT 42 AS x")
    with pytest.raises(StoreError, match=r"holds view answer"):
        EvaluationStore(only)
    con = sqlite3.connect(only)  # nothing was written into it
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["answer"]
    con.close()


@pytest.mark.parametrize("value, kind", [("'1.5 m'", "text"), ("x'3f'", "blob"), ("NULL", "null")])
def test_a_value_that_is_not_real_is_refused(tmp_path, value, kind):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, f"UPDATE evaluations SET value = {value} WHERE id = 2")  # ('1.5' would become REAL 1.5)
    with pytest.raises(StoreError, match=rf"non-numeric value \({kind}\) in row 2"):
        EvaluationStore(path)


def test_a_value_column_declared_text_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, "ALTER TABLE evaluations RENAME TO old", "CREATE TABLE evaluations (id INTEGER PRIMARY KEY "
               "AUTOINCREMENT, fingerprint TEXT NOT NULL, coalition TEXT NOT NULL, value TEXT, seconds REAL "
               "NOT NULL, time REAL NOT NULL, status TEXT NOT NULL, attempt INTEGER NOT NULL, error TEXT, digest BLOB)",
         "INSERT INTO evaluations SELECT * FROM old", "DROP TABLE old")
    with pytest.raises(StoreError, match=r"declares value TEXT instead of value REAL"):
        EvaluationStore(path)


@pytest.mark.parametrize("key, bad, says", [
    ("identity", "{not json", "identity is not valid JSON"),
    ("identity", "[1, 2]", "identity is not a mapping of texts"),
    ("n_players", "five", "n_players 'five' is not a positive integer"),
    ("fingerprint", "xyz", "fingerprint 'xyz' is not 32 hex digits"),
])
def test_corrupt_meta_rows_raise_store_error(tmp_path, key, bad, says):
    path = tmp_path / "s.sqlite"
    _stored(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = ? WHERE key = ?", (bad, key))
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=f"damaged meta table: {says}"):
        BudgetedGame(QuadraticGame(P, seed=0), 8, store=path)


def test_verify_re_evaluates_a_random_sample_and_names_each_difference(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path, n=4)
    # the LAST stored value is one the game no longer returns (written through the store, so its row
    # digest holds: an edit by hand is refused before verify, tests/runs/test_store_row_digests.py);
    # checking only the first row would miss it
    with EvaluationStore(path) as store:
        store.bind(QuadraticGame(P, seed=0))
        store.append(ROWS[4], float(QuadraticGame(P, seed=0).values(ROWS[4:])[0]) + 1.0, seconds=0.0)
    caught = 0
    for _ in range(12):  # 3 of 5 rows drawn: the doctored one is among them with probability 3/5
        try:
            BudgetedGame(QuadraticGame(P, seed=0), 8, store=EvaluationStore(path, verify=True))
        except StoreMismatchError as exc:
            assert "1 of 3 re-evaluated coalitions differ ({0, 1, 2, 3, 4}: stored" in str(exc), str(exc)
            caught += 1
    assert caught >= 1  # P(never caught in 12 tries) = 0.4**12 < 2e-5
    with pytest.raises(StoreMismatchError, match=r"1 of 5 re-evaluated coalitions differ"):
        BudgetedGame(QuadraticGame(P, seed=0), 8, store=EvaluationStore(path, verify=True, verify_count=10))


def test_verify_costs_one_call_of_verify_count_coalitions(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path, n=5)
    calls = []

    game = QuadraticGame(P, seed=0)

    class Counting:
        n_players = P

        def params(self):
            return game.params()

        def __call__(self, Z):
            calls.append(len(Z))
            return game(Z)

    BudgetedGame(Counting(), 8, store=EvaluationStore(tmp_path / "c.sqlite", verify=True))  # empty: nothing to check
    assert calls == []
    _stored(tmp_path / "c.sqlite", Counting(), n=5)
    calls.clear()
    BudgetedGame(Counting(), 8, store=EvaluationStore(tmp_path / "c.sqlite", verify=True))
    assert calls == [3]


@pytest.mark.parametrize("output, says", [
    (lambda Z: Z.sum(axis=1) + 1j, "complex values"),
    (lambda Z: np.array([str(float(s)) for s in Z.sum(axis=1)]), "not numbers"),
    (lambda Z: [str(float(s)) for s in Z.sum(axis=1)], "not numbers"),
    (lambda Z: np.array([1.0, "2", 3.0, 4.0, 5.0], dtype=object)[: len(Z)], "not numbers: '2'"),
])
def test_complex_and_string_values_are_refused(output, says):
    with pytest.raises(GameError, match=says):
        BudgetedGame(FunctionGame(output, P), 8)(ROWS)


def _create_and_bind(args) -> str:
    path, barrier = args
    try:
        barrier.wait(timeout=30)
        store = EvaluationStore(path, timeout=30)
        store.bind(QuadraticGame(3, seed=0))
        store.close()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - the test reports every failure
        return f"{type(exc).__name__}: {exc}"


def _creation_campaign(tmp_path: Path, trials: int, processes: int) -> list[str]:
    ctx = mp.get_context("fork")
    failures = []
    with ctx.Manager() as manager:
        with ctx.Pool(processes) as pool:
            for t in range(trials):
                barrier = manager.Barrier(processes)
                path = str(tmp_path / f"new_{t}.sqlite")
                failures += [r for r in pool.map(_create_and_bind, [(path, barrier)] * processes) if r != "ok"]
    return failures


def test_processes_creating_the_same_new_store_all_succeed(tmp_path):
    assert _creation_campaign(tmp_path, trials=6, processes=4) == []


@pytest.mark.slow
def test_processes_creating_the_same_new_store_all_succeed_4x50(tmp_path):
    assert _creation_campaign(tmp_path, trials=50, processes=4) == []
