"""Evaluation store files that cannot be used are refused with a clear error, and a store that
cannot be written (read-only, full disk) stops the run without losing what was committed."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, DesignLoop, EvaluationStore
from shapleig.errors import StoreError
from shapleig.games.coalitions import all_coalitions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import QuadraticGame, read_log  # noqa: E402

P = 5


def _filled(path: Path, n: int = 8) -> np.ndarray:
    """A store at ``path`` holding the first ``n`` coalitions of QuadraticGame(P), all in the
    main file (write-ahead log checkpointed); returns them."""
    Z = all_coalitions(P)[:n]
    with EvaluationStore(path) as store:
        BudgetedGame(QuadraticGame(P), 32, store=store)(Z)
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return Z


def test_not_sqlite_truncated_and_foreign_files_are_refused(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("these are my notes\n")
    with pytest.raises(StoreError, match=r"is not an evaluation store: it is not an SQLite database"):
        EvaluationStore(text)
    assert text.read_text() == "these are my notes\n"  # untouched

    good = tmp_path / "good.sqlite"
    _filled(good, 30)
    data = good.read_bytes()
    for size in (len(data) // 2, 100):
        cut = tmp_path / f"cut{size}.sqlite"
        cut.write_bytes(data[:size])
        with pytest.raises(StoreError, match=r"(damaged|not a readable evaluation store)"):
            EvaluationStore(cut)

    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"an SQLite database but not an evaluation store \(its tables: \['customers'\]\)"):
        EvaluationStore(foreign)
    con = sqlite3.connect(foreign)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["customers"]  # nothing added
    con.close()
    with pytest.raises(StoreError, match="is a folder"):
        EvaluationStore(tmp_path)


def test_full_database_stops_the_run_and_keeps_what_was_written(tmp_path):
    """SQLite's size limit stands in for a full disk: the write fails with a clear error naming
    the value not stored, the committed values stay readable and a resume completes the run."""
    path = tmp_path / "s.sqlite"
    log = str(tmp_path / "calls.log")
    store = EvaluationStore(path)
    game = QuadraticGame(P, log_path=log)
    bg = BudgetedGame(game, 32, store=store)
    bg(all_coalitions(P)[:4])
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")
    filler = "x" * 3000  # a failed attempt with a long error text needs a new page
    with pytest.raises(StoreError, match=r"could not be written: database or disk is full.*disk is full or the "
                                         r"database reached its size limit\). The 4 evaluations stored before are kept"):
        for i in range(50):
            store.append(all_coalitions(P)[4 + i], None, seconds=0.0, status="error", error=filler)
    store.close()
    reopened = EvaluationStore(path)
    assert len(reopened) == 4
    np.testing.assert_array_equal(reopened.lookup(all_coalitions(P)[:4])[1], game.values(all_coalitions(P)[:4]))
    resumed = BudgetedGame(game, 32, store=reopened)
    resumed(all_coalitions(P)[:6])
    calls = read_log(log)
    assert len(calls) == len(set(calls)) == 6  # the 4 stored values were not paid again


@contextlib.contextmanager
def _tmpfs(folder: Path, size: str):
    """A small tmpfs at ``folder`` (needs root and mount permission; skip otherwise)."""
    folder.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_really_full_disk_stops_the_loop_and_keeps_what_was_written(tmp_path):
    with _tmpfs(tmp_path / "disk", "1m") as disk:
        path = disk / "s.sqlite"
        game = QuadraticGame(P)
        with pytest.raises(StoreError, match=r"(disk is full|could not be written)"):
            # fill the disk beside the store while the loop runs
            loop = DesignLoop(game, 20, store=EvaluationStore(path), refit="never", progress=False,
                              callbacks=[lambda lp: _fill(disk)])
            loop.run()
        # everything committed is readable and correct after freeing space
        for f in disk.glob("fill*"):
            f.unlink()
        store = EvaluationStore(path)
        X, y = store.history()
        assert len(X) >= P + 1
        np.testing.assert_array_equal(y, game.values(X))


def _fill(disk: Path) -> None:
    with contextlib.suppress(OSError), open(disk / f"fill{len(list(disk.iterdir()))}", "wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()
            os.fsync(f.fileno())


def test_read_only_store_is_refused_when_opened_and_stays_readable(tmp_path):
    path = tmp_path / "ro" / "s.sqlite"
    Z = _filled(path)
    with _tmpfs(tmp_path / "disk", "1m") as disk:
        shutil.copy(path, disk / "s.sqlite")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        with pytest.raises(StoreError, match=r"cannot be opened for writing.*read-only"):
            EvaluationStore(disk / "s.sqlite")
        # the values are still there, read with plain SQLite
        con = sqlite3.connect(f"file:{disk / 's.sqlite'}?mode=ro&immutable=1", uri=True)
        assert con.execute("SELECT COUNT(*) FROM evaluations WHERE status='ok'").fetchone()[0] == len(Z)
        con.close()
