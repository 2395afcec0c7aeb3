"""Edge paths of the evaluation store found adversarially (issue 27, items 4-7).

Each test here failed on the code before the fix:

- a trigger or view whose name merely *looks* internal (``sqlitex_rewrite``, ``SQLITE9``,
  ``sqliteview``) passed the ``NOT LIKE 'sqlite_%'`` filter (``_`` matches any character);
- a value set to ``9e999`` by hand was served as ``inf``;
- ``""`` and ``file:`` URIs opened temporary or in-memory databases that lose every value;
- two hard links to one store file, used by two processes, corrupted it (each name gets its own
  write-ahead log);
- a claim whose owner's wall clock runs ahead was never taken over (now - heartbeat < 0);
- a FIFO as store path blocked for ever in the header check;
- ``n_players = '³'`` in ``meta`` (``str.isdigit`` is true for it) raised a raw ValueError;
- a game returning ``10**400`` raised a raw OverflowError (now: +-inf, a NonFiniteValueError).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame
from shapleig.errors import NonFiniteValueError, StoreError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import QuadraticGame  # noqa: E402
from _store_sql import run_sql as _sql  # noqa: E402

P = 5
ROWS = np.tril(np.ones((P, P), dtype=bool))
REPO = Path(__file__).resolve().parents[2]


def _stored(path: Path, n: int = 4) -> None:
    with EvaluationStore(path) as store:
        BudgetedGame(QuadraticGame(P, seed=0), 2**P, store=store)(ROWS[:n])


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread; fails the test if it has not returned after ``seconds``."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s (hangs)")
    if "error" in out:
        raise out["error"]
    return out.get("value")


# -- item 4: tampering --------------------------------------------------------------------------
@pytest.mark.parametrize("statement, named", [
    ("CREATE TRIGGER sqlitex_rewrite AFTER INSERT ON evaluations BEGIN "
     "UPDATE evaluations SET value = value * 10 WHERE id = NEW.id; END", "trigger sqlitex_rewrite"),
    ("CREATE TRIGGER SQLITE9 AFTER INSERT ON evaluations BEGIN "
     "UPDATE evaluations SET value = 0 WHERE id = NEW.id; END", "trigger SQLITE9"),
    ("CREATE VIEW sqliteview AS SELECT * FROM evaluations", "view sqliteview"),
    ("CREATE TEMP VIEW IF NOT EXISTS harmless AS SELECT 1", None),  # temp: gone with its connection
])
def test_triggers_and_views_are_refused_whatever_their_name(tmp_path, statement, named):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, statement)
    if named is None:
        EvaluationStore(path).close()
        return
    with pytest.raises(StoreError, match=rf"holds {named}\b.*refusing to use it"):
        EvaluationStore(path)


def test_a_trigger_written_into_the_schema_table_by_hand_is_refused(tmp_path):
    """Control: a trigger named like an internal object (``sqlite_x``, which SQLite refuses to
    create) written into sqlite_master directly (writable_schema) is refused too: SQLite reads
    such a schema as malformed."""
    path = tmp_path / "s.sqlite"
    _stored(path)
    con = sqlite3.connect(path)
    con.execute("CREATE TRIGGER plain AFTER INSERT ON evaluations BEGIN SELECT 1; END")
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET name = 'sqlite_x' WHERE type = 'trigger'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"malformed database schema \(sqlite_x\)|holds trigger sqlite_x"):
        EvaluationStore(path)


@pytest.mark.parametrize("value", ["9e999", "-9e999"])
def test_a_non_finite_stored_value_is_refused_naming_its_row(tmp_path, value):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, f"UPDATE evaluations SET value = {value} WHERE id = 3")
    with pytest.raises(StoreError, match=r"non-finite value (inf|-inf) in row 3 \(coalition \{0, 1, 2\}\)"):
        EvaluationStore(path)


def test_a_non_finite_value_written_after_opening_is_refused_on_read(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored(path)
    store = EvaluationStore(path)
    _sql(path, "UPDATE evaluations SET value = 9e999 WHERE id = 2")  # another program, later
    with pytest.raises(StoreError, match=r"non-finite value inf for coalition \{0, 1\}"):
        BudgetedGame(QuadraticGame(P, seed=0), 2**P, store=store)(ROWS[:3])
    store.close()


# -- item 5: values that would be lost ----------------------------------------------------------
@pytest.mark.parametrize("path, says", [
    ("", "empty"),
    ("file:x?mode=memory", "URI"),
    ("file::memory:?cache=shared", "URI"),
    ("FILE:runs.sqlite", "URI"),
])
def test_paths_that_would_lose_every_value_are_refused(tmp_path, monkeypatch, path, says):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match=says):
        EvaluationStore(path)
    assert list(tmp_path.iterdir()) == []  # nothing created


_OPEN_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from _games_for_parallel import QuadraticGame
from shapleig import BudgetedGame, EvaluationStore
from shapleig.errors import StoreError
try:
    BudgetedGame(QuadraticGame(5, seed=0), 32, store=EvaluationStore(sys.argv[2]))
except StoreError as exc:
    print("REFUSED", exc)
else:
    print("OPENED")
"""


def test_a_store_file_with_two_hard_links_is_refused_by_two_processes(tmp_path):
    """Each name of a hard-linked file gets its own write-ahead log and lock files, so two
    processes writing through two names corrupt it: both names are refused."""
    path = tmp_path / "s.sqlite"
    _stored(path)
    link = tmp_path / "link.sqlite"
    os.link(path, link)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outs = [subprocess.run([sys.executable, "-c", _OPEN_SCRIPT, str(REPO / "tests"), str(name)], env=env,
                           capture_output=True, text=True, timeout=120, check=True).stdout for name in (path, link)]
    for out in outs:
        assert out.startswith("REFUSED") and "hard links" in out, out
    os.unlink(link)  # one name again: usable, and nothing was damaged
    with EvaluationStore(path) as store:
        assert len(store) == 4


# -- item 6: hangs ------------------------------------------------------------------------------
class _FakeClock:
    """This process's monotonic clock for leases, advanced by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("host, pid", [("elsewhere", 1), ("here", "parent")])
def test_a_claim_whose_owner_clock_runs_ahead_is_taken_over_after_the_lease(tmp_path, monkeypatch, host, pid):
    """The owner wrote its heartbeat with a wall clock one hour ahead, then stopped refreshing it
    (it died on another host, or hangs here): the claim is taken over once this process has seen
    it unchanged for ``lease_seconds`` of its own monotonic clock (simulated here), and not before."""
    import socket

    from shapleig.runs.claims import ClaimTable

    path = tmp_path / "s.sqlite"
    _stored(path, n=1)
    host = socket.gethostname() if host == "here" else host
    pid = os.getppid() if pid == "parent" else pid  # a live process that is not this one
    _sql(path, f"INSERT INTO claims (coalition, owner, host, pid, heartbeat) VALUES "
               f"('11000', 'skewed:1:x', '{host}', {pid}, {time.time() + 3600.0})")
    clock = _FakeClock()
    monkeypatch.setattr(ClaimTable, "clock", clock)
    store = EvaluationStore(path, lease_seconds=60.0)
    for advance in (0.0, 30.0, 29.9):  # 59.9 s unchanged: still the owner's
        clock.now += advance
        found, _, mine, busy = store.claim(ROWS[[1]])
        assert busy.tolist() == [True] and not mine.any() and not found.any()
    clock.now += 0.2  # 60.1 s unchanged: taken over
    found, _, mine, busy = store.claim(ROWS[[1]])
    assert mine.tolist() == [True] and not busy.any()
    store.release(ROWS[[1]])
    store.close()


def test_a_run_waiting_for_a_skewed_dead_claim_finishes(tmp_path):
    """End to end, real clocks: a run needing the coalition waits one lease (0.5 s), then
    evaluates it (before: it waited for ever)."""
    path = tmp_path / "s.sqlite"
    _stored(path, n=1)
    _sql(path, "INSERT INTO claims (coalition, owner, host, pid, heartbeat) VALUES "
               f"('11000', 'skewed:1:x', 'elsewhere', 1, {time.time() + 3600.0})")
    store = EvaluationStore(path, lease_seconds=0.5)
    game = QuadraticGame(P, seed=0)
    budgeted = BudgetedGame(game, 8, store=store)
    values = _within(20, lambda: budgeted(ROWS[[1]]))
    np.testing.assert_array_equal(values, game.values(ROWS[[1]]))
    assert budgeted.n_game_evaluations == 1
    store.close()


def test_a_refreshed_claim_of_a_skewed_clock_is_waited_for(tmp_path, monkeypatch):
    """Control: a claim whose heartbeat keeps changing is live whatever its owner's clock says
    (before, a heartbeat an hour behind was taken over at once, although refreshed)."""
    from shapleig.runs.claims import ClaimTable

    path = tmp_path / "s.sqlite"
    _stored(path, n=1)
    _sql(path, "INSERT INTO claims (coalition, owner, host, pid, heartbeat) VALUES "
               f"('11000', 'skewed:1:x', 'elsewhere', 1, {time.time() - 3600.0})")
    clock = _FakeClock()
    monkeypatch.setattr(ClaimTable, "clock", clock)
    store = EvaluationStore(path, lease_seconds=60.0)
    for k in range(6):  # 6 minutes, refreshed every 30 s (lease / 2): still busy every time
        found, _, mine, busy = store.claim(ROWS[[1]])
        assert busy.tolist() == [True] and not mine.any() and not found.any()
        _sql(path, f"UPDATE claims SET heartbeat = {time.time() - 3600.0 + k + 1}")
        clock.now += 30.0
    store.close()


def test_a_fifo_or_other_non_regular_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.sqlite"
    os.mkfifo(fifo)
    try:
        with pytest.raises(StoreError, match=r"not a regular file"):
            _within(10, lambda: EvaluationStore(fifo))
    finally:
        # release a header check blocked in open() (old code), so no thread is left hanging
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(fifo) else None
        if fd is not None:
            os.close(fd)
    with pytest.raises(StoreError, match=r"not a regular file"):
        EvaluationStore("/dev/null")


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False


# -- item 7: raw exceptions ---------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["³", "٣", "+5", " 5", "5.0"], ids=["superscript3", "arabic3", "plus5", "space5", "5.0"])
def test_meta_n_players_that_is_not_ascii_digits_is_a_store_error(tmp_path, bad):
    path = tmp_path / "s.sqlite"
    _stored(path)
    _sql(path, f"UPDATE meta SET value = '{bad}' WHERE key = 'n_players'")
    with pytest.raises(StoreError, match=r"n_players .* is not a positive integer"):
        BudgetedGame(QuadraticGame(P, seed=0), 8, store=path)


@pytest.mark.parametrize("big", [10**400, -(10**400)], ids=["10**400", "-10**400"])
def test_a_game_returning_an_integer_beyond_float64_names_the_coalition(big):
    game = FunctionGame(lambda Z: [big if z.sum() == 2 else int(z.sum()) for z in Z], P)
    sign = "-" if big < 0 else ""
    with pytest.raises(NonFiniteValueError, match=rf"game returned {sign}inf for coalition \{{0, 1\}}"):
        BudgetedGame(game, 2**P, max_retries=0)(ROWS)
