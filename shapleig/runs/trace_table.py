"""The anytime trace of the runs on an evaluation store: tables ``trace_runs``, ``trace`` and ``trace_ends``.

Each step a run records what it would answer if stopped now: the estimate and std of every term,
the read-out's diagnostics (kernel weights, calibration, refits), the wall seconds its evaluations
took since the last entry, the process that recorded it and how many evaluations were in flight.
A reader (``shapleig dashboard``, ``shapleig status``) shows a study from these rows while it runs.

**Runs.** ``trace_runs`` holds one row per run: its id (a digest of the method, seed, budget and
options, so a resumed run finds its own rows), when it started, the method, seed and budget, and
JSON of the rest (index, terms, labels, units, options). **Entries.** ``trace`` holds one row per
written entry: ``step`` is the entry's position in ``est.trace``. A run resumed on the store replays
its steps and writes an entry only when no row holds it yet or when the latest row for that step
differs (a final refit that replaced the last read-out), so the latest row of every step is the
run's ``est.trace`` and a replayed step keeps the row, times and worker of the run that first made it.

**Ends.** ``trace_ends`` holds a row when a run returned its estimate (``id``, ``run``, ``time``,
``evaluations``): a run that stopped short of its budget (a baseline using whole permutations, a
precision target met) is finished, one without such a row is running or was stopped.

**Integrity.** Every row of the three tables carries a keyed digest of all its columns under the
store's key (:mod:`shapleig.runs.row_digest`; the message starts with the table's name, so a trace
row can never pass for an evaluation row or the other way round), written in the transaction that
inserts it and checked when the row is read. The trace is derived data (a resumed run recomputes
it from the evaluations), but it is what a reader shows as the study's current values: without
digests an edited entry would be shown as the run's answer beside evaluations that are all checked.
Rows are only inserted; ids are handed out in order, so deleted rows are seen as missing ids.

Columns of ``trace``: ``id``, ``run``, ``step``, ``evaluations``, ``time`` (Unix seconds when
written), ``eval_seconds`` (wall seconds spent evaluating since the previous entry; NULL when not
measured), ``worker`` (``host:pid``), ``pending`` (evaluations in flight), ``estimate`` and ``std``
(JSON lists, floats written exactly; ``std`` NULL without a posterior), ``diagnostics`` (JSON or
NULL), ``digest``.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from shapleig.errors import StoreError
from shapleig.runs.row_digest import row_digest

TRACE_SCHEMA = """
CREATE TABLE IF NOT EXISTS trace_runs (
    run TEXT PRIMARY KEY,
    started REAL NOT NULL,
    method TEXT NOT NULL,
    seed TEXT NOT NULL,
    budget INTEGER NOT NULL,
    info TEXT NOT NULL,
    digest BLOB
);
CREATE TABLE IF NOT EXISTS trace (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    step INTEGER NOT NULL,
    evaluations INTEGER NOT NULL,
    time REAL NOT NULL,
    eval_seconds REAL,
    worker TEXT NOT NULL,
    pending INTEGER NOT NULL,
    estimate TEXT NOT NULL,
    std TEXT,
    diagnostics TEXT,
    digest BLOB
);
CREATE INDEX IF NOT EXISTS trace_by_run ON trace (run, step);
CREATE TABLE IF NOT EXISTS trace_ends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    time REAL NOT NULL,
    evaluations INTEGER NOT NULL,
    digest BLOB
);
"""
RUN_COLUMNS = ("run", "started", "method", "seed", "budget", "info")
ENTRY_COLUMNS = ("id", "run", "step", "evaluations", "time", "eval_seconds", "worker", "pending", "estimate", "std",
                 "diagnostics")
END_COLUMNS = ("id", "run", "time", "evaluations")
TRACE_TABLES = {"trace_runs": set(RUN_COLUMNS) | {"digest"}, "trace": set(ENTRY_COLUMNS) | {"digest"},
                "trace_ends": set(END_COLUMNS) | {"digest"}}


@dataclass(frozen=True)
class TraceRun:
    """One run recorded in a store (a row of ``trace_runs``).

    Attributes:
        run: the run's id (16 hex digits).
        started: Unix time of its first record.
        method: the method's registry name.
        seed: the integer seed, as text.
        budget: the run's budget.
        info: the rest: ``index``, ``terms`` (lists of players), ``labels`` (player names or None),
            ``units``, ``params`` (the method's options), ``n_players``.
    """

    run: str
    started: float
    method: str
    seed: str
    budget: int
    info: dict[str, Any]


@dataclass(frozen=True)
class TraceEntry:
    """One entry of a run's anytime trace (the latest row written for its step).

    Attributes:
        id: the row's id (insertion order across all runs).
        run: the run's id.
        step: the entry's position in ``est.trace``.
        evaluations: evaluations spent when it was recorded.
        time: Unix time when it was written.
        eval_seconds: wall seconds spent evaluating since the previous entry (None: not measured).
        worker: ``host:pid`` of the process that wrote it.
        pending: evaluations in flight at that moment.
        values: float64[d], the estimate.
        std: float64[d], its std, or None.
        diagnostics: the read-out's diagnostics (kernel weights, calibration, ...), or None.
    """

    id: int
    run: str
    step: int
    evaluations: int
    time: float
    eval_seconds: float | None
    worker: str
    pending: int
    values: np.ndarray
    std: np.ndarray | None
    diagnostics: dict[str, Any] | None


def _digest(key: bytes, table: str, row: Sequence[Any]) -> bytes:
    """The keyed digest of a row of ``table``: the table's name first, so rows of two tables never share one."""
    return row_digest(key, (table, *row))


def _matches(key: bytes | None, table: str, row: Sequence[Any]) -> bool:
    """Whether ``row`` (its columns, then its digest) matches its digest."""
    stored = row[-1]
    if key is None or not isinstance(stored, bytes):
        return False
    return hmac.compare_digest(stored, _digest(key, table, row[:-1]))


def vector_text(values: Any) -> str | None:
    """A float vector as exact JSON (``repr`` of each float64), None for None.

    Args:
        values: a sequence of numbers, or None.

    Returns:
        JSON text such as ``[1.5, -0.25]``, or None.
    """
    if values is None:
        return None
    return json.dumps([float(v) for v in np.asarray(values, dtype=np.float64).ravel()])


def _vector(text: str | None) -> np.ndarray | None:
    return None if text is None else np.asarray(json.loads(text), dtype=np.float64)


def has_trace_tables(conn: sqlite3.Connection) -> bool:
    """Whether the store holds the trace tables (a store of an earlier version, not reopened since, has none).

    Args:
        conn: a connection to the store.

    Returns:
        True when both tables exist.
    """
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return set(TRACE_TABLES) <= names


def check_trace_columns(path: str, conn: sqlite3.Connection) -> None:
    """Refuse trace tables that lack a column this version writes (made by another program).

    Args:
        path: the store's path, for the message.
        conn: a connection to the store.

    Raises:
        StoreError: naming the table and the missing columns.
    """
    for table, columns in TRACE_TABLES.items():
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        if have and not columns <= have:
            raise StoreError(f"evaluation store {path}: table {table} lacks the columns "
                             f"{sorted(columns - have)}; it was not made by shapleig, refusing to use the store")


def insert_run(conn: sqlite3.Connection, key: bytes, run: TraceRun) -> bool:
    """Insert ``run`` unless a row for its id exists (inside the caller's write transaction).

    Args:
        conn: a connection inside ``BEGIN IMMEDIATE``.
        key: the store's key.
        run: the run to record.

    Returns:
        True when a row was inserted, False when the run was already recorded (a resumed run).
    """
    if conn.execute("SELECT 1 FROM trace_runs WHERE run = ?", (run.run,)).fetchone():
        return False
    row = (run.run, float(run.started), str(run.method), str(run.seed), int(run.budget),
           json.dumps(run.info, sort_keys=True, default=str))
    conn.execute(f"INSERT INTO trace_runs ({', '.join(RUN_COLUMNS)}, digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (*row, _digest(key, "trace_runs", row)))
    return True


def _next_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'trace'), 0), "
                       "COALESCE((SELECT MAX(id) FROM trace), 0)) + 1").fetchone()
    return int(row[0])


def _same(row: tuple, evaluations: int, estimate: str, std: str | None) -> bool:
    """Whether the stored entry (``ENTRY_COLUMNS`` order) holds this evaluation count, estimate and std."""
    return row[3] == evaluations and row[8] == estimate and row[9] == std


def insert_entry(conn: sqlite3.Connection, key: bytes, path: str, entry: dict[str, Any]) -> bool:
    """Insert one trace entry unless the store already holds it (inside the caller's write transaction).

    Which row it is compared with: with ``entry["occurrence"] = k`` (a step as the loop makes it, the
    k-th time this process records that step), the k-th row written for the step, so a resumed run
    replaying the steps (and final read-outs) of the run it resumes writes nothing; without it (the
    run's final trace), the latest row for the step, so the latest row of every step is ``est.trace``.
    The row compared with is checked against its digest first.

    Args:
        conn: a connection inside ``BEGIN IMMEDIATE``.
        key: the store's key.
        path: the store's path, for messages.
        entry: ``run``, ``step``, ``evaluations``, ``time``, ``eval_seconds``, ``worker``, ``pending``,
            ``values``, ``std``, ``diagnostics`` (a dict or None) and optionally ``occurrence``.

    Returns:
        True when a row was written, False when the store held the entry as it is.
    """
    estimate, std = vector_text(entry["values"]), vector_text(entry["std"])
    occurrence = entry.get("occurrence")
    order = "ORDER BY id DESC LIMIT 1" if occurrence is None else f"ORDER BY id LIMIT 1 OFFSET {int(occurrence)}"
    held = conn.execute(f"SELECT {', '.join(ENTRY_COLUMNS)}, digest FROM trace WHERE run = ? AND step = ? {order}",
                        (entry["run"], int(entry["step"]))).fetchone()
    if held is not None:
        check_entry_row(key, path, held)
        if _same(held, int(entry["evaluations"]), estimate, std):
            return False
    seconds = entry.get("eval_seconds")
    diagnostics = entry.get("diagnostics")
    row = (_next_id(conn), str(entry["run"]), int(entry["step"]), int(entry["evaluations"]), float(entry["time"]),
           None if seconds is None else float(seconds), str(entry["worker"]), int(entry["pending"]), estimate, std,
           None if diagnostics is None else json.dumps(diagnostics, sort_keys=True, default=_plain))
    conn.execute(f"INSERT INTO trace ({', '.join(ENTRY_COLUMNS)}, digest) VALUES "
                 f"({', '.join('?' * (len(ENTRY_COLUMNS) + 1))})", (*row, _digest(key, "trace", row)))
    return True


def _plain(value: Any) -> Any:
    """JSON for numpy scalars and arrays in diagnostics; the text of anything else."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def check_entry_row(key: bytes | None, path: str, row: tuple) -> None:
    """Refuse a row of ``trace`` (``ENTRY_COLUMNS``, then ``digest``) that does not match its digest.

    Args:
        key: the store's key.
        path: the store's path, for the message.
        row: the row as read.

    Raises:
        StoreError: naming the row, its run and step.
    """
    if not _matches(key, "trace", row):
        why = "has no digest" if row[-1] is None else "does not match its digest (it was edited or copied in)"
        raise StoreError(f"evaluation store {path}: trace row {row[0]} (run {row[1]}, step {row[2]}, "
                         f"{row[3]} evaluations) {why}; refusing to show or continue it")


def _check_run_row(key: bytes | None, path: str, row: tuple) -> None:
    if not _matches(key, "trace_runs", row):
        why = "has no digest" if row[-1] is None else "does not match its digest (it was edited or copied in)"
        raise StoreError(f"evaluation store {path}: the trace_runs row of run {row[0]} {why}; refusing to show it")


def insert_end(conn: sqlite3.Connection, key: bytes, run: str, evaluations: int, when: float) -> bool:
    """Record that ``run`` returned its estimate after ``evaluations`` (inside the caller's write transaction).

    Args:
        conn: a connection inside ``BEGIN IMMEDIATE``.
        key: the store's key.
        run: the run's id.
        evaluations: the evaluations it spent.
        when: the Unix time.

    Returns:
        True when a row was written (not when the run's end was recorded with these evaluations already).
    """
    if conn.execute("SELECT 1 FROM trace_ends WHERE run = ? AND evaluations = ?", (run, int(evaluations))).fetchone():
        return False
    last = conn.execute("SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'trace_ends'), 0), "
                        "COALESCE((SELECT MAX(id) FROM trace_ends), 0)) + 1").fetchone()[0]
    row = (int(last), str(run), float(when), int(evaluations))
    conn.execute(f"INSERT INTO trace_ends ({', '.join(END_COLUMNS)}, digest) VALUES (?, ?, ?, ?, ?)",
                 (*row, _digest(key, "trace_ends", row)))
    return True


def read_ends(conn: sqlite3.Connection, key: bytes | None, path: str) -> dict[str, tuple[float, int]]:
    """When each run returned its estimate: ``{run: (time, evaluations)}`` of its latest end, rows checked.

    Args:
        conn: a connection to the store.
        key: the store's key.
        path: the store's path, for messages.

    Returns:
        the ends ({} for a store without the table).

    Raises:
        StoreError: a row that does not match its digest.
    """
    if "trace_ends" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}:
        return {}
    out: dict[str, tuple[float, int]] = {}
    for row in conn.execute(f"SELECT {', '.join(END_COLUMNS)}, digest FROM trace_ends ORDER BY id").fetchall():
        if not _matches(key, "trace_ends", row):
            raise StoreError(f"evaluation store {path}: trace_ends row {row[0]} (run {row[1]}) does not match its "
                             f"digest; refusing to show it")
        out[row[1]] = (float(row[2]), int(row[3]))
    return out


def _missing_entries(conn: sqlite3.Connection) -> int:
    """Rows of ``trace`` deleted (ids handed out in order, as for ``evaluations``)."""
    row = conn.execute("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'trace'), 0), "
                       "(SELECT COUNT(*) FROM trace)").fetchone()
    return int(row[0]) - int(row[1])


def read_runs(conn: sqlite3.Connection, key: bytes | None, path: str) -> list[TraceRun]:
    """Every run recorded in the store, oldest first, each row checked against its digest.

    Args:
        conn: a connection to the store (read-only is enough).
        key: the store's key (None: no row can be checked, so any row is refused).
        path: the store's path, for messages.

    Returns:
        one :class:`TraceRun` per run; [] for a store without trace tables.

    Raises:
        StoreError: a row that does not match its digest, or deleted trace rows.
    """
    if not has_trace_tables(conn):
        return []
    rows = conn.execute(f"SELECT {', '.join(RUN_COLUMNS)}, digest FROM trace_runs ORDER BY started, run").fetchall()
    for row in rows:
        _check_run_row(key, path, row)
    return [TraceRun(r[0], r[1], r[2], r[3], int(r[4]), json.loads(r[5])) for r in rows]


def read_entries(conn: sqlite3.Connection, key: bytes | None, path: str, run: str,
                 after_id: int = 0) -> list[TraceEntry]:
    """The rows of ``run`` with an id above ``after_id``, in insertion order, each checked.

    Args:
        conn: a connection to the store.
        key: the store's key.
        path: the store's path, for messages.
        run: the run's id.
        after_id: read only rows written after this one (0: all).

    Returns:
        the entries, in the order they were written (several rows of one step: the later replaces
        the earlier; :func:`latest_per_step`).

    Raises:
        StoreError: a row that does not match its digest, or deleted trace rows.
    """
    if not has_trace_tables(conn):
        return []
    missing = _missing_entries(conn)
    if missing:
        raise StoreError(f"evaluation store {path}: {missing} trace row{'s were' if missing > 1 else ' was'} deleted; "
                         f"the trace is only ever appended to, refusing to show it")
    rows = conn.execute(f"SELECT {', '.join(ENTRY_COLUMNS)}, digest FROM trace WHERE run = ? AND id > ? ORDER BY id",
                        (run, int(after_id))).fetchall()
    out = []
    for row in rows:
        check_entry_row(key, path, row)
        out.append(TraceEntry(int(row[0]), row[1], int(row[2]), int(row[3]), float(row[4]),
                              None if row[5] is None else float(row[5]), row[6], int(row[7]), _vector(row[8]),
                              _vector(row[9]), None if row[10] is None else json.loads(row[10])))
    return out


def latest_per_step(entries: Sequence[TraceEntry]) -> list[TraceEntry]:
    """The latest entry of every step, by step: the run's ``est.trace``.

    Args:
        entries: entries of one run in insertion order.

    Returns:
        one entry per step, ordered by step.
    """
    latest: dict[int, TraceEntry] = {}
    for entry in entries:
        latest[entry.step] = entry
    return [latest[s] for s in sorted(latest)]


__all__ = ["END_COLUMNS", "ENTRY_COLUMNS", "RUN_COLUMNS", "TRACE_SCHEMA", "TRACE_TABLES", "TraceEntry", "TraceRun", "check_entry_row",
           "check_trace_columns", "has_trace_tables", "insert_end", "insert_entry", "insert_run", "latest_per_step",
           "read_ends", "read_entries", "read_runs", "vector_text"]
