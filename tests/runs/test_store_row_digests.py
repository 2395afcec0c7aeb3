"""Row digests: a stored row edited, copied in, moved or deleted is refused when read; nothing is lost.

A finite value edited by hand (``value + 1``; ``'1.5'``, which SQLite stores as REAL) used to be
served: the type and finiteness checks cannot see it, and ``verify=True`` samples only a few rows.
Every row now carries a keyed digest of its columns (shapleig.runs.row_digest), checked on every
read; deletions are seen from the row ids SQLite handed out. A refused store is left as it was, and
``rebuild_store`` copies the rows that still check into a new store.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore
from shapleig.errors import StoreError
from shapleig.runs.store_rebuild import rebuild_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import QuadraticGame, read_log  # noqa: E402
from _store_sql import run_sql as _sql  # noqa: E402

P = 5
ROWS = np.tril(np.ones((P, P), dtype=bool))  # row k: players 0..k
GAME = QuadraticGame(P, seed=0)
TRUTH = GAME.values(ROWS)


def _stored(path: Path, game: QuadraticGame = GAME, n: int = 5) -> None:
    with EvaluationStore(path) as store:
        BudgetedGame(game, 2**P, store=store)(ROWS[:n])


def _rows(path: Path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT * FROM evaluations ORDER BY id").fetchall()
    finally:
        con.close()


def _served(path: Path, n: int = 5) -> np.ndarray:
    with EvaluationStore(path) as store:
        return BudgetedGame(GAME, 2**P, store=store)(ROWS[:n])


# -- the scenarios of the issue, each refused on read naming the row, its coalition and the store ------
@pytest.mark.parametrize("edit", ["value = value + 1", "value = '1.5'", "value = value * (1 + 1e-15)",
                                  "seconds = seconds + 1", "attempt = 2"])
def test_an_edited_row_is_refused_naming_row_coalition_and_store(tmp_path, edit):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, f"UPDATE evaluations SET {edit} WHERE id = 3")
    before = _rows(path)
    if "1.5" in edit:  # SQLite made the text a REAL: the type check has nothing to see
        assert before[2][3] == 1.5 and isinstance(before[2][3], float)
    with pytest.raises(StoreError, match=rf"{path}: row 3 \(coalition \{{0, 1, 2\}}, value .*\) does not match "
                                         rf"its digest.*Nothing in the store was changed.*rebuild_store"):
        _served(path)
    assert _rows(path) == before  # nothing deleted or rewritten: the user decides


def test_an_edit_made_while_the_store_is_open_is_refused_on_the_next_read(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    store = EvaluationStore(path)
    budgeted = BudgetedGame(GAME, 2**P, store=store)
    _sql(path, "UPDATE evaluations SET value = value + 1 WHERE id = 4")  # another program, later
    with pytest.raises(StoreError, match=r"row 4 \(coalition \{0, 1, 2, 3\}"):
        budgeted(ROWS[3:4])
    store.close()


@pytest.mark.parametrize("reader", ["lookup", "claim", "records", "history", "verify"])
def test_every_way_of_reading_values_checks_the_digests(tmp_path, reader):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, "UPDATE evaluations SET value = value + 1")  # every row: verify's sample is sure to hit one
    store = EvaluationStore(path, verify=reader == "verify")
    with pytest.raises(StoreError, match=r"does not match its digest"):
        store.bind(GAME)  # verify=True reads its sample here
        if reader != "verify":
            getattr(store, reader)(*([ROWS] if reader in ("lookup", "claim") else []))
    store.close()


def test_a_failed_attempt_turned_into_a_value_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    with EvaluationStore(path) as store:
        store.bind(GAME)
        store.append(ROWS[1], None, seconds=0.1, status="error", error="ValueError: boom")
    _sql(path, "UPDATE evaluations SET status = 'ok', value = 0.25, error = NULL WHERE id = 1")
    with pytest.raises(StoreError, match=r"row 1 \(coalition \{0, 1\}, value 0.25\) does not match its digest"):
        _served(path, 2)


def test_a_row_moved_to_another_id_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, "UPDATE evaluations SET id = 100 WHERE id = 3", "UPDATE evaluations SET id = 3 WHERE id = 5",
         "UPDATE evaluations SET id = 5 WHERE id = 100")  # rows 3 and 5 swapped: no id is missing
    with pytest.raises(StoreError, match=r"row [35] .*does not match its digest"):
        _served(path)


@pytest.mark.parametrize("which, says", [("3", "1 row was deleted"), ("5", "1 row was deleted"),
                                         ("2, 3", "2 rows were deleted")])
def test_a_deleted_row_is_refused_when_the_store_opens(tmp_path, which, says):
    """The last row too: SQLite's sqlite_sequence remembers the largest id it handed out."""
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, f"DELETE FROM evaluations WHERE id IN ({which})")
    before = _rows(path)
    with pytest.raises(StoreError, match=rf"{path}: {says}; a store only ever inserts rows.*rebuild_store"):
        EvaluationStore(path)
    assert _rows(path) == before


def test_a_rewritten_row_sequence_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, "DELETE FROM sqlite_sequence")
    with pytest.raises(StoreError, match=r"sqlite_sequence\) was edited"):
        EvaluationStore(path)


_COPY = ("INSERT INTO evaluations (fingerprint, coalition, value, seconds, time, status, attempt, error, digest) "
         "SELECT {fingerprint}, coalition, value, seconds, time, status, attempt, error, digest FROM other.evaluations "
         "WHERE coalition = '11111'")


@pytest.mark.parametrize("other_game, fingerprint", [
    (QuadraticGame(P, seed=1), "(SELECT value FROM main.meta WHERE key = 'fingerprint')"),  # relabelled to fit
    (QuadraticGame(P, seed=1), "fingerprint"),  # kept: never looked up, but history() reads every row
    (GAME, "fingerprint"),  # the same game, another store: the key differs
])
def test_a_row_copied_from_another_store_is_refused(tmp_path, other_game, fingerprint):
    path, other = tmp_path / "s.sqlite", tmp_path / "other.sqlite"
    _stored(path, n=4)
    _stored(other, other_game, n=5)
    con = sqlite3.connect(path)
    con.execute("ATTACH DATABASE ? AS other", (str(other),))
    con.execute(_COPY.format(fingerprint=fingerprint))
    con.commit()
    con.close()
    with EvaluationStore(path) as store:
        budgeted = BudgetedGame(GAME, 2**P, store=store)
        with pytest.raises(StoreError, match=r"row 5 \(coalition \{0, 1, 2, 3, 4\}.*does not match its digest"):
            budgeted(ROWS)
            store.history()


def test_an_edited_row_store_of_an_explain_x_folder_is_refused(tmp_path):
    from shapleig import explain_X
    from shapleig.explanation.explain_rows import ROW_STORE

    rng = np.random.default_rng(0)
    background, X = rng.normal(size=(10, 3)), rng.normal(size=(2, 3))
    first = explain_X(_linear_model, background, X, method="exact", store=tmp_path, progress=False)
    _sql(tmp_path / ROW_STORE.format(1), "UPDATE evaluations SET value = value + 1 WHERE id = 4")
    with pytest.raises(StoreError, match=rf"{tmp_path / ROW_STORE.format(1)}: row 4 .*does not match its digest"):
        explain_X(_linear_model, background, X, method="exact", store=tmp_path, progress=False)
    again = explain_X(_linear_model, background, X[:1], method="exact", store=tmp_path, progress=False)
    np.testing.assert_array_equal(again.values[0], first.values[0])  # the unedited row store still serves


def _linear_model(X: np.ndarray) -> np.ndarray:
    return X @ np.array([1.0, -2.0, 0.5])


# -- an unedited store serves everything, bit for bit ------------------------------------------------
def test_an_unedited_store_serves_every_value_as_written_including_signed_zero_and_extremes(tmp_path):
    path = tmp_path / "s.sqlite"
    values = [-0.0, 5e-324, -1.7976931348623157e308, 2.0**63, 0.1, 1e18]  # -0.0 comes back as 0.0 from SQLite
    with EvaluationStore(path) as store:
        store.bind(GAME)
        for row, v in zip(ROWS, values):
            store.append(row, v, seconds=0.5)
        store.append(ROWS[0], None, seconds=0.1, status="nonfinite", attempt=2, error="nan")
    with EvaluationStore(path) as store:
        store.bind(GAME)
        found, got = store.lookup(ROWS)
        assert found.all() and got.tolist() == [0.0, *values[1:P]]
        assert [r.status for r in store.records()] == ["ok"] * P + ["nonfinite"]
        np.testing.assert_array_equal(store.history()[1], [0.0, *values[1:P]])


def test_a_store_written_by_many_processes_at_once_checks_row_by_row(tmp_path):
    """Each process computes the id and digest of its row inside its own write transaction."""
    path = str(tmp_path / "s.sqlite")
    _stored(Path(path), n=1)
    ctx = mp.get_context("fork")
    with ctx.Pool(4) as pool:
        assert pool.map(_append_many, [(path, k) for k in range(4)]) == [40] * 4
    con = sqlite3.connect(path)
    ids = [r[0] for r in con.execute("SELECT id FROM evaluations ORDER BY id")]
    con.close()
    assert ids == list(range(1, 162))
    with EvaluationStore(path) as store:
        store.bind(GAME)
        assert len(store.records()) == 161  # every row checks


def _append_many(args: tuple[str, int]) -> int:
    path, k = args
    with EvaluationStore(path, timeout=60) as store:
        store.bind(GAME)
        for i in range(40):
            store.append(ROWS[i % P], float(k * 1000 + i), seconds=0.0, status="ok", attempt=1)
    return 40


# -- stores of earlier versions, lost keys, the limits -------------------------------------------------
def _as_written_by_an_earlier_version(path: Path) -> None:
    """The file an earlier version wrote: no digest column, no row key."""
    _sql(path, "ALTER TABLE evaluations DROP COLUMN digest", "DELETE FROM meta WHERE key = 'row_key'")


def test_a_store_of_an_earlier_version_gets_its_digests_once_and_is_then_protected(tmp_path, caplog):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _as_written_by_an_earlier_version(path)
    with caplog.at_level(logging.WARNING, logger="shapleig.runs.store"):
        np.testing.assert_array_equal(_served(path), TRUTH)
    assert "digests were added to its 5 rows now" in caplog.text
    with EvaluationStore(path) as store:
        added = store.meta()["digests_added"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="shapleig.runs.store"):
        np.testing.assert_array_equal(_served(path), TRUTH)
    with EvaluationStore(path) as store:
        assert caplog.text == "" and store.meta()["digests_added"] == added  # once
    _sql(path, "UPDATE evaluations SET value = value + 1 WHERE id = 2")
    with pytest.raises(StoreError, match=r"row 2 .*does not match its digest"):
        _served(path)


def _open_and_read(args: tuple[str, object]) -> str:
    path, barrier = args
    try:
        barrier.wait(timeout=30)
        with EvaluationStore(path, timeout=60) as store:
            values = BudgetedGame(GAME, 2**P, store=store)(ROWS)
            return "ok" if np.array_equal(values, TRUTH) and len(store.records()) == 2005 else "wrong values"
    except Exception as exc:  # noqa: BLE001 - the test reports every failure
        return f"{type(exc).__name__}: {exc}"


def test_processes_opening_a_store_of_an_earlier_version_at_once_add_its_digests_once(tmp_path):
    """The digests are added inside the schema transaction: one process adds them, the others wait and
    see them, never the new column without its key and digests. (Added after that transaction, other
    processes found the column before the key and refused the store: this test failed 3 of 3 times.)"""
    path = tmp_path / "s.sqlite"
    _stored(path)
    _as_written_by_an_earlier_version(path)
    con = sqlite3.connect(path)  # 2000 failed attempts more, as an earlier version wrote them
    con.executemany("INSERT INTO evaluations (fingerprint, coalition, value, seconds, time, status, attempt, error) "
                    "SELECT value, '11111', NULL, 0.0, 0.0, 'error', ?, 'boom' FROM meta WHERE key = 'fingerprint'",
                    [(k,) for k in range(2000)])
    con.commit()
    con.close()
    ctx = mp.get_context("fork")
    with ctx.Manager() as manager, ctx.Pool(4) as pool:
        barrier = manager.Barrier(4)
        assert pool.map(_open_and_read, [(str(path), barrier)] * 4) == ["ok"] * 4
    con = sqlite3.connect(path)
    assert con.execute("SELECT COUNT(*) FROM meta WHERE key = 'row_key'").fetchone()[0] == 1
    assert con.execute("SELECT COUNT(*) FROM evaluations WHERE digest IS NULL").fetchone()[0] == 0
    con.close()


def test_an_earlier_version_store_with_a_row_deleted_before_the_upgrade_is_kept(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _as_written_by_an_earlier_version(path)
    _sql(path, "DELETE FROM evaluations WHERE id = 2")  # before this version: no one can tell any more
    np.testing.assert_array_equal(_served(path), TRUTH)  # the deleted coalition is evaluated again
    _sql(path, "DELETE FROM evaluations WHERE id = 4")  # after: refused
    with pytest.raises(StoreError, match=r"1 row was deleted"):
        EvaluationStore(path)


def test_a_row_without_digest_in_a_store_with_digests_is_refused(tmp_path):
    """What a version without digests writes into a store this version created (or a hand INSERT)."""
    path = tmp_path / "s.sqlite"
    _stored(path, n=4)
    _sql(path, "INSERT INTO evaluations (fingerprint, coalition, value, seconds, time, status, attempt) "
               "SELECT value, '11111', 1.0, 0.0, 0.0, 'ok', 1 FROM meta WHERE key = 'fingerprint'")
    with pytest.raises(StoreError, match=r"row 5 \(coalition \{0, 1, 2, 3, 4\}, value 1.0\) has no digest"):
        _served(path)


@pytest.mark.parametrize("statement, says", [("DELETE FROM meta WHERE key = 'row_key'", "has no row_key"),
                                             ("UPDATE meta SET value = 'xyz' WHERE key = 'row_key'",
                                              "row_key is not 64 hex digits")])
def test_a_lost_or_damaged_key_is_refused(tmp_path, statement, says):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, statement)
    with pytest.raises(StoreError, match=says):
        _served(path)


def test_limit_a_store_whose_digest_column_and_key_were_dropped_looks_like_an_earlier_versions(tmp_path):
    """Documented limit (docs/integrity.md 2.1): someone who knows the scheme can make a store look like
    one of an earlier version, whose rows get digests as they are."""
    path = tmp_path / "s.sqlite"
    _stored(path)
    _as_written_by_an_earlier_version(path)
    _sql(path, "UPDATE evaluations SET value = value + 1 WHERE id = 2")
    assert _served(path)[1] == TRUTH[1] + 1


# -- rebuilding: the values that still check are kept ------------------------------------------------
@pytest.mark.parametrize("damage", ["UPDATE evaluations SET value = value + 1 WHERE id = 3",
                                    "DELETE FROM evaluations WHERE id = 3"])
def test_rebuild_keeps_every_row_that_checks_and_the_run_pays_only_for_the_rest(tmp_path, damage):
    path, new = tmp_path / "s.sqlite", tmp_path / "new.sqlite"
    _stored(path)
    with EvaluationStore(path) as store:
        store.bind(GAME)
        store.append(ROWS[4], None, seconds=0.1, status="error", attempt=2, error="boom")
    _sql(path, damage)
    before = _rows(path)
    report = rebuild_store(path, new)
    assert _rows(path) == before  # the source is only read
    assert report.kept == 5 and len(report.left_out) == ("UPDATE" in damage)
    if report.left_out:
        assert report.left_out[0].startswith("row 3 (coalition {0, 1, 2}, value ")
    log = str(tmp_path / "calls.log")
    with EvaluationStore(new) as store:
        values = BudgetedGame(QuadraticGame(P, seed=0, log_path=log), 2**P, store=store)(ROWS)
        assert [r.status for r in store.records()][:5] == ["ok", "ok", "ok", "ok", "error"]
    np.testing.assert_array_equal(values, TRUTH)
    assert read_log(log) == ["11100"]  # only the coalition left out (or deleted) is evaluated again
    with pytest.raises(StoreError, match="exists"):
        rebuild_store(path, new)


def test_rebuild_refuses_a_store_of_an_earlier_version(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _as_written_by_an_earlier_version(path)
    with pytest.raises(StoreError, match=r"without row digests; open it with EvaluationStore"):
        rebuild_store(path, tmp_path / "new.sqlite")
    assert not (tmp_path / "new.sqlite").exists()
