"""Read an evaluation store while runs write it: a read-only view for ``shapleig dashboard`` and ``status``.

:class:`StoreView` opens the file with SQLite's read-only URI (``mode=ro``) for each refresh and
closes it again, reading only what was committed since the last refresh. It never writes the
database, holds a read transaction only while it reads (milliseconds), and in WAL mode (every
store) a reader never blocks a writer nor waits for one; a reader killed at any moment leaves no
lock behind (SQLite's locks are released with the process), and a writer killed mid-transaction
leaves nothing a reader sees. Like any SQLite reader of a WAL database it may create the empty
``-wal`` and ``-shm`` files beside the store when no writer has them open.

Every row it reads is checked against its digest (:mod:`shapleig.runs.row_digest`,
:mod:`shapleig.runs.trace_table`); a row that does not match makes the view report the problem
instead of its numbers. A store written by an earlier version (no digests) is shown, with a note.
:func:`study_summary` turns a view into the figures both the page and the terminal show: budget
spent and left, evaluations over time, the rate and the ETA from the measured times, coalitions
in flight, and the latest values with their std.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shapleig.errors import StoreError
from shapleig.estimation.result import ERROR_BAR_Z
from shapleig.runs.claims import _HOST, _pid_alive
from shapleig.runs.row_digest import ROW_COLUMNS, parse_row_key, row_matches
from shapleig.runs.trace_table import TraceEntry, TraceRun, latest_per_step, read_ends, read_entries, read_runs

_HEADER = b"SQLite format 3\x00"
RATE_WINDOW = 20  # the ETA's rate: seconds per evaluation over the last this many evaluations


def read_only_connection(path: str | os.PathLike[str], timeout: float = 2.0) -> sqlite3.Connection:
    """A connection that cannot write ``path`` (SQLite URI ``mode=ro``); never creates the database.

    Args:
        path: the store file.
        timeout: seconds to wait for a lock (only WAL recovery after a writer's crash takes one).

    Returns:
        the connection.

    Raises:
        StoreError: the path is missing, not a regular file (a FIFO would block) or not an SQLite database.
    """
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise StoreError(f"cannot read evaluation store {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"{path} is not an evaluation store: not a regular file")
    try:
        with open(path, "rb") as f:
            head = f.read(len(_HEADER))
    except OSError as exc:
        raise StoreError(f"cannot read evaluation store {path}: {exc.strerror or exc}") from exc
    if head != _HEADER:
        raise StoreError(f"{path} is not an evaluation store: not an SQLite database")
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open evaluation store {path} read-only: {exc}") from exc


@dataclass
class RunView:
    """One run on a store and its trace so far.

    Attributes:
        run: the run as recorded (:class:`~shapleig.runs.trace_table.TraceRun`).
        entries: every row of its trace read so far, in the order written.
        ended: ``(time, evaluations)`` when the run returned its estimate (None: running, or stopped).
    """

    run: TraceRun
    entries: list[TraceEntry] = field(default_factory=list)
    ended: tuple[float, int] | None = None

    @property
    def trace(self) -> list[TraceEntry]:
        """The latest entry of every step: the run's ``est.trace``."""
        return latest_per_step(self.entries)

    @property
    def labels(self) -> list[str]:
        """One label per term: the players' names (``x0``.. without), a pair as ``"a x b"``."""
        names = self.run.info.get("labels") or [f"x{j}" for j in range(int(self.run.info.get("n_players", 0)))]
        return [" x ".join(str(names[j]) if j < len(names) else f"x{j}" for j in term)
                for term in self.run.info.get("terms", [])]


@dataclass
class StoreView:
    """A read-only, incrementally refreshed view of one store (module docstring).

    Args:
        path: the store file.

    Attributes:
        path: the store file.
        meta: the ``meta`` table.
        times: the ``time`` (Unix seconds) of every successful evaluation, in order.
        seconds: the wall seconds each successful evaluation took.
        failed: failed attempts.
        claims: ``(host, pid, alive)`` of each coalition being evaluated (alive: None for another host).
        runs: the runs on the store, oldest first.
        problems: why numbers are not shown (a row that does not match its digest, a damaged file).
        notes: what else a reader should know (an earlier version's store, rows not checked).
        refreshed: Unix time of the last refresh (0: never).
    """

    path: str
    meta: dict[str, str] = field(default_factory=dict, init=False)
    times: list[float] = field(default_factory=list, init=False)
    seconds: list[float] = field(default_factory=list, init=False)
    failed: int = field(default=0, init=False)
    claims: list[tuple[str, int, bool | None]] = field(default_factory=list, init=False)
    runs: list[RunView] = field(default_factory=list, init=False)
    problems: list[str] = field(default_factory=list, init=False)
    notes: list[str] = field(default_factory=list, init=False)
    refreshed: float = field(default=0.0, init=False)
    _last_id: int = field(default=0, init=False, repr=False)  # the last evaluation row read

    def refresh(self) -> "StoreView":
        """Read what was committed since the last refresh (read-only; the connection is closed again).

        A problem (a row that does not match its digest, a damaged or vanished file) is recorded in
        :attr:`problems` and the numbers read before are kept.

        Returns:
            the view itself.
        """
        try:
            with contextlib.closing(read_only_connection(self.path)) as conn:
                self._read(conn)
            self.problems = []
        except (StoreError, sqlite3.Error) as exc:
            self.problems = [str(exc)]
        self.refreshed = time.time()
        return self

    def _read(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN")  # one snapshot for every table read below
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "evaluations" not in tables or "meta" not in tables:
                raise StoreError(f"{self.path} is not an evaluation store (no evaluations table)")
            self.meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            key = parse_row_key(self.meta.get("row_key"))
            self._read_evaluations(conn, key)
            self._read_claims(conn, tables)
            self._read_runs(conn, key)
        finally:
            conn.rollback()

    def _read_evaluations(self, conn: sqlite3.Connection, key: bytes | None) -> None:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(evaluations)")}
        checked = "digest" in columns
        select = ", ".join(ROW_COLUMNS) + (", digest" if checked else "")
        rows = conn.execute(f"SELECT {select} FROM evaluations WHERE id > ? ORDER BY id", (self._last_id,)).fetchall()
        if not checked:
            note = "written by an earlier version of shapleig (no row digests; they are added when a run opens it)"
            if note not in self.notes:
                self.notes.append(note)
        for row in rows:
            if checked and not row_matches(key, row):
                raise StoreError(f"evaluation store {self.path}: row {row[0]} does not match its digest (edited, "
                                 f"copied in or moved); its numbers are not shown")
            if row[6] == "ok":
                self.times.append(float(row[5]))
                self.seconds.append(float(row[4]))
            else:
                self.failed += 1
            self._last_id = int(row[0])

    def _read_claims(self, conn: sqlite3.Connection, tables: set[str]) -> None:
        rows = conn.execute("SELECT host, pid FROM claims").fetchall() if "claims" in tables else []
        self.claims = [(host, int(pid), _pid_alive(int(pid)) if host == _HOST else None) for host, pid in rows]

    def _read_runs(self, conn: sqlite3.Connection, key: bytes | None) -> None:
        known = {v.run.run: v for v in self.runs}
        ends = read_ends(conn, key, self.path)
        runs = []
        for run in read_runs(conn, key, self.path):
            view = known.get(run.run) or RunView(run)
            after = view.entries[-1].id if view.entries else 0
            view.entries.extend(read_entries(conn, key, self.path, run.run, after))
            view.ended = ends.get(run.run)
            runs.append(view)
        self.runs = runs

    @property
    def latest_run(self) -> RunView | None:
        """The run that wrote last (None before any run recorded its start)."""
        if not self.runs:
            return None
        return max(self.runs, key=lambda v: (v.entries[-1].time if v.entries else v.run.started))


def _fmt(x: float | None, digits: int = 4) -> str:
    """A number as both the page and the terminal print it (``-`` for none)."""
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.{digits}g}"


def duration(seconds: float | None) -> str:
    """``45 s``, ``12 min``, ``3.2 h``: a duration for a reader (``-`` for unknown).

    Args:
        seconds: the duration.

    Returns:
        the text.
    """
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _rate(times: list[float], seconds: list[float]) -> float | None:
    """Seconds of wall time per evaluation over the last ``RATE_WINDOW`` evaluations (measured)."""
    if len(times) >= 2:
        window = times[-RATE_WINDOW:]
        span = window[-1] - window[0]
        if span > 0:
            return span / (len(window) - 1)
    return seconds[-1] if seconds else None


def game_id_of(meta: dict[str, str]) -> str:
    """The game id of a store: the store's own (``EvaluationStore(game_id=)``), else the game's (in its identity).

    Args:
        meta: the store's ``meta`` table.

    Returns:
        the id, or ``""``.
    """
    if meta.get("game_id"):
        return meta["game_id"]
    try:
        identity = json.loads(meta.get("identity", "{}"))
    except ValueError:
        return ""
    return str(identity.get("game_id", "")) if isinstance(identity, dict) else ""


def study_summary(view: StoreView, now: float | None = None) -> dict[str, Any]:
    """The figures of one store, formatted once for the page and the terminal.

    Args:
        view: a refreshed :class:`StoreView`.
        now: the current Unix time (default: now).

    Returns:
        a dict: ``path``, ``game``, ``game_id``, ``method``, ``seed``, ``budget``, ``spent``, ``left``,
        ``stored``, ``failed``, ``rate`` (seconds per evaluation), ``eta``, ``in_flight``, ``workers``,
        ``last_write``, ``status``, ``problems``, ``notes``, ``run`` (the latest :class:`RunView` or None)
        and ``rows``: one ``{"term", "value", "std", "low", "high"}`` per term of its latest entry
        (texts, error bars +- 1.96 std).
    """
    now = time.time() if now is None else now
    run = view.latest_run
    trace = run.trace if run is not None else []
    last = trace[-1] if trace else None
    budget = run.run.budget if run is not None else None
    stored = len(view.times)
    spent = last.evaluations if last is not None else (min(stored, budget) if budget else stored)
    if run is not None and run.ended is not None:
        spent = max(spent, run.ended[1])
    left = None if budget is None else max(budget - spent, 0)
    rate = _rate(view.times, view.seconds)
    writes = [t for t in (view.times[-1] if view.times else None, last.time if last else None) if t is not None]
    last_write = now - max(writes) if writes else None
    if run is None:
        status = "no run recorded"
    elif run.ended is not None and (last is None or run.ended[1] >= last.evaluations):
        status = "finished"  # it returned its estimate (also short of its budget: whole permutations, a target met)
    else:
        status = "running" if any(alive for _, _, alive in view.claims) else "running or stopped"
    rows = []
    if last is not None:
        labels = run.labels if len(run.labels) == len(last.values) else [f"term {k}" for k in range(len(last.values))]
        for k, label in enumerate(labels):
            value = float(last.values[k])
            std = None if last.std is None else float(last.std[k])
            half = None if std is None else ERROR_BAR_Z * std
            rows.append({"term": label, "value": _fmt(value), "std": _fmt(std),
                         "low": _fmt(None if half is None else value - half),
                         "high": _fmt(None if half is None else value + half)})
    return {
        "path": view.path, "game": view.meta.get("game", "?"), "game_id": game_id_of(view.meta),
        "method": run.run.method if run else "-", "seed": run.run.seed if run else "-",
        "index": run.run.info.get("index", "SV") if run else "-", "units": (run.run.info.get("units") if run else None)
        or "game units", "budget": "-" if budget is None else str(budget), "spent": str(spent),
        "left": "-" if left is None else str(left), "stored": str(stored), "failed": str(view.failed),
        "rate": duration(rate) if rate is not None else "-",
        "eta": "0 s" if left == 0 or status == "finished" else duration(None if rate is None or left is None
                                                                       else rate * left),
        "in_flight": str(len(view.claims)), "workers": str(len({(h, p) for h, p, _ in view.claims})),
        "last_write": duration(last_write) + " ago" if last_write is not None else "-", "status": status,
        "problems": list(view.problems), "notes": list(view.notes), "run": run, "rows": rows,
        "steps": str(len(trace)), "runs": str(len(view.runs)),
    }


__all__ = ["RunView", "StoreView", "duration", "game_id_of", "read_only_connection", "study_summary"]
