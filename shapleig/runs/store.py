"""``EvaluationStore``: an append-only SQLite log of evaluated coalitions.

Expensive evaluations must never be lost. A :class:`~shapleig.runs.budget.BudgetedGame` given a store
looks every new coalition up there first (a stored value is reused, not re-evaluated, but still
charged to the budget) and appends each evaluation, and each failed attempt, in its own committed
transaction as soon as it arrives. A run killed at any point and started again with the same seed
therefore replays the stored values and continues where it stopped, ending with the same estimate.

**Identity.** A store belongs to one game: the first ``BudgetedGame`` that uses it records the
game's identity (:func:`shapleig.games.identity.game_identity`: its code, parameters or state, digested
by content, plus the store's ``game_id``) and its fingerprint. Any other game is refused with
:class:`~shapleig.errors.StoreMismatchError` naming what differed, unless the store is opened with
``accept_game_change=True`` (you vouch that the values are the same). ``verify=True`` re-evaluates
a random sample of stored coalitions when a run resumes and refuses the store if a value changed.

**Concurrency.** The file is in WAL mode with a busy timeout, so several processes can read and
write it. Before a coalition is evaluated, the process claims it (table ``claims``, in the same
transaction that checks the log); another process that needs it waits for its value instead of
paying for it again (or raises :class:`~shapleig.errors.StoreBusyError` with ``wait=False``).
A claim held by a dead process on this host, or whose heartbeat this process has seen unchanged
for ``lease_seconds`` on its own monotonic clock (the owner refreshes its claims from a background
thread, every ``lease_seconds / 4``; hosts' wall clocks are never compared, so a skewed clock
neither keeps a dead claim alive nor loses a live one), is taken over. A
claim covers only work that is starting (``BudgetedGame`` claims one chunk at a time for a serial
evaluator) and is refreshed only within its hold (an evaluation timeout's worst case, or
``max_claim_seconds``), so a process stuck in one evaluation does not hold it for ever.

**Files.** A file that is not an SQLite database, is damaged, is a database of something else,
or holds what a store never has (a trigger or a view, whatever its name; a value that is not
REAL or not finite; a damaged ``meta`` row; deleted rows) is refused with :class:`~shapleig.errors.StoreError`,
and so are paths that would lose values or block: an empty path, an SQLite URI (``file:...``), a
FIFO or other non-regular file, a file with several hard links (SQLite's write-ahead log and locks
live beside each name). A value made non-finite after opening is refused when read, naming its
coalition. The store implements :class:`~shapleig.runs.store_protocol.Store`; the schema of a new store is created
in one transaction, so processes creating it at once all succeed; so is a store that cannot be written
(read-only) when it is opened, and a write that fails (disk full) stops the run with an error
naming the value that was not stored. Rows are only ever inserted; nothing is unpickled.

**Row digests.** Every row carries a keyed digest of all its columns, its id and the game's
fingerprint included (:mod:`shapleig.runs.row_digest`; the key is in ``meta``), written in the
transaction that inserts it and checked on every read: a value edited after it was written, a row
copied from another store or moved to another id is refused, naming the row and its coalition, and
nothing in the store is changed; :func:`shapleig.runs.store_rebuild.rebuild_store` copies the rows
that still check into a new store. The key lives in the file: this catches edits by people and
programs that do not apply the scheme, not a deliberate forgery. A store written by an earlier
version (no ``digest`` column) gets its digests when it is first opened, once.

Table ``evaluations`` (one row per attempt):

=============  =====================================================================
id             insertion order
fingerprint    the game's fingerprint (hex)
coalition      ``'0'``/``'1'`` string of length p; character j is player j
value          float64 value when ``status = 'ok'``, else NULL
seconds        wall-clock seconds the game call took
time           Unix time (seconds) when the row was written
status         ``'ok'``, ``'error'`` (the game raised) or ``'nonfinite'`` (NaN or inf)
attempt        1 for the first try of the coalition in that run, 2 for its first retry, ...
error          what went wrong, for failed attempts
digest         16 bytes: keyed digest of the row's other columns (see above)
=============  =====================================================================

Table ``meta`` holds ``fingerprint``, ``identity`` (JSON of the identity components), ``game`` (a
readable description), ``n_players``, ``game_id``, ``created`` and ``row_key`` (the key of the
digests, 64 hex digits); a store given its digests when opened by this version also holds
``digests_added`` (when) and ``deleted_before_digests`` (ids already missing then), a rebuilt one
``rebuilt_from``. Table ``claims`` holds the
coalitions being evaluated right now: ``coalition``, ``owner``, ``host``, ``pid``, ``heartbeat``.
Tables ``trace_runs``, ``trace`` and ``trace_ends`` hold the anytime trace of the runs on the store, each row with
its digest under the same key (:mod:`shapleig.runs.trace_table`); a store of an earlier version
gets them, empty, when it is next opened.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import sqlite3
import stat
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from shapleig.errors import GameError, StoreError, StoreMismatchError
from shapleig.games.coalitions import as_coalition_matrix, format_coalition
from shapleig.games.game import as_value_vector, check_game, describe_game
from shapleig.games.identity import (
    game_identity,
    identity_differences,
    identity_digest,
    opaque_parts,
)
from shapleig.runs.claims import ClaimTable, claim_owner, decode_coalition, encode_coalition, readable_code
from shapleig.runs.row_digest import (
    ROW_COLUMNS,
    SELECT_ROW,
    insert_row,
    new_row_key,
    parse_row_key,
    row_digest,
    row_matches,
    rows_missing,
)
from shapleig.runs.store_protocol import Store, missing_store_methods
from shapleig.runs.trace_table import (
    TRACE_SCHEMA,
    TraceEntry,
    TraceRun,
    check_trace_columns,
    insert_end,
    insert_entry,
    insert_run,
    latest_per_step,
    read_ends,
    read_entries,
    read_runs,
)

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL,
    coalition TEXT NOT NULL,
    value REAL,
    seconds REAL NOT NULL,
    time REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'nonfinite')),
    attempt INTEGER NOT NULL,
    error TEXT,
    digest BLOB
);
CREATE INDEX IF NOT EXISTS evaluations_ok ON evaluations (coalition) WHERE status = 'ok';
CREATE TABLE IF NOT EXISTS claims (
    coalition TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    heartbeat REAL NOT NULL
);
"""
_TABLES = {
    "meta": {"key", "value"},
    "evaluations": {"id", "fingerprint", "coalition", "value", "seconds", "time", "status", "attempt", "error"},
}
_TYPES = {"evaluations": {"value": "REAL", "coalition": "TEXT", "status": "TEXT", "fingerprint": "TEXT",
                          "digest": "BLOB"}}
_ADDED_LATER = {"digest"}  # columns a store written by an earlier version lacks (added when it is opened)
_SQLITE_HEADER = b"SQLite format 3\x00"

_FINGERPRINT = re.compile("[0-9a-f]{32}")
_LOOKUP_CHUNK = 500  # SQLite limits the number of bound parameters per statement
_FLOAT_MAX = float(np.finfo(np.float64).max)


_REBUILD_HINT = ("To keep its other values, copy them into a new store with "
                 "shapleig.runs.store_rebuild.rebuild_store({path!r}, new_path) and resume from that one (what was "
                 "left out is evaluated again), or use a new store path.")


def _is_digits(text: Any) -> bool:
    """Whether ``text`` is ASCII digits (``'³'`` and ``'٣'`` are digits to ``str.isdigit``)."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def _identity_problems(text: Any) -> list[str]:
    """What is wrong with the ``identity`` row of ``meta`` (empty: nothing)."""
    try:
        identity = json.loads(text)
    except (TypeError, ValueError) as exc:
        return [f"identity is not valid JSON ({exc})"]
    if not (isinstance(identity, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in identity.items())):
        return ["identity is not a mapping of texts"]
    return []


def check_meta(path: str, meta: dict[str, str]) -> dict[str, str]:
    """``meta`` (a store's ``meta`` table as a dict) after checking the rows a bound store must have.

    Args:
        path: the store's path, for the message.
        meta: the ``meta`` table's ``{key: value}`` (empty while no game is bound).

    Returns:
        ``meta``, with ``game`` set to ``"?"`` when missing.

    Raises:
        StoreError: naming each damaged row (edited by hand or by a foreign program).
    """
    if not meta:
        return meta
    problems = []
    fp = meta.get("fingerprint")
    if not (isinstance(fp, str) and _FINGERPRINT.fullmatch(fp)):
        problems.append(f"fingerprint {fp!r} is not 32 hex digits")
    n = meta.get("n_players")
    if not (_is_digits(n) and int(n) >= 1):  # not '³' or '٣'
        problems.append(f"n_players {n!r} is not a positive integer")
    if "identity" in meta:
        problems += _identity_problems(meta["identity"])
    if "row_key" in meta and parse_row_key(meta["row_key"]) is None:
        problems.append("row_key is not 64 hex digits")
    if not _is_digits(meta.get("deleted_before_digests", "0")):
        problems.append(f"deleted_before_digests {meta['deleted_before_digests']!r} is not a count")
    if problems:
        raise StoreError(f"evaluation store {path} has a damaged meta table: {'; '.join(problems)}; "
                         f"refusing to use it (give a new file name)")
    meta.setdefault("game", "?")
    return meta


# the kinds of path that exist but are neither a regular file nor a folder, as messages name them
_SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def special_file_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder; None otherwise.

    Opening a FIFO blocks until another process opens its other end (for ever when none does),
    and a socket or device is no file to keep results in. The store refuses such paths, and the
    command line every file it writes (``shapleig_tasks.harness.check_output_path``).

    Args:
        path: the path (symbolic links are followed).

    Returns:
        ``"a FIFO (named pipe)"``, ``"a socket"``, ``"a character device"``, ``"a block device"`` or
        ``"a special file"``; None for a missing path, a regular file or a folder.

    Raises:
        OSError: the path cannot be inspected (other than by not existing).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((name for is_kind, name in _SPECIAL_FILES if is_kind(mode)), "a special file")


@dataclass(frozen=True)
class StoredEvaluation:
    """One row of the log (see the module docstring for the columns).

    Attributes:
        id: the row's id (insertion order).
        fingerprint: the fingerprint of the game the value belongs to.
        coalition: ``bool[p]``, the coalition.
        value: the value (None for a failed attempt).
        seconds: wall-clock seconds the game call took.
        time: when it was stored (seconds since the epoch).
        status: ``"ok"``, ``"error"`` or ``"nonfinite"``.
        attempt: 1 for the first try, 2 for the first retry, ...
        error: what went wrong, for failed attempts (else None).
    """

    id: int
    fingerprint: str
    coalition: np.ndarray  # bool[p]
    value: float | None
    seconds: float
    time: float
    status: str
    attempt: int
    error: str | None


def open_store(store: Any) -> Store:
    """``store`` itself if it implements :class:`~shapleig.runs.store_protocol.Store`, else a store at that path.

    Any :class:`~shapleig.runs.store_protocol.Store` (an :class:`EvaluationStore` or another) is
    used as it is; a path opens an :class:`EvaluationStore`.

    Args:
        store: a store object, or the path of an SQLite store file (``str`` or ``os.PathLike``).

    Returns:
        The store to use.

    Examples:
        >>> open_store(":memory:")
        EvaluationStore(':memory:', 0 evaluations)
    """
    if isinstance(store, (str, os.PathLike)):
        return EvaluationStore(store)
    missing = missing_store_methods(store)  # not isinstance(store, Store): see store_protocol
    if not missing:
        return store
    raise TypeError(f"store must be a file path or implement shapleig.runs.store_protocol.Store "
                    f"(missing: {', '.join(missing)}), got {type(store).__name__}")


class EvaluationStore:
    """Append-only SQLite log of one game's evaluated coalitions.

    Pass it (or just a path) to ``estimate(..., store=...)``, ``DesignLoop(..., store=...)`` or
    ``BudgetedGame(..., store=...)``. Usable as a context manager; picklable (reopens by path).

    Args:
        path: the database file (a regular file with one name: not a FIFO, a device or a file
            with several hard links), or ``":memory:"`` for a store that lives only as long as
            this object. An empty path and SQLite URIs (``file:...``) are refused: they open
            temporary or in-memory databases that would lose every value.
        game_id: optional label added to the game's identity, for games whose values depend on
            something the automatic identity cannot see (a file the game reads).
        accept_game_change: reuse the store even if the game's identity differs from the one that
            wrote it (a warning lists the differences); you vouch for the values.
        verify: when the store already holds values, re-evaluate ``verify_count`` stored coalitions
            drawn at random once on binding and refuse the store, listing those whose value differs
            (relative tolerance ``verify_rtol``); costs ``verify_count`` extra evaluations per resume.
        verify_rtol: the relative tolerance of ``verify``.
        wait: when another live process is evaluating a coalition this run needs, wait for its
            value (True) or raise :class:`StoreBusyError` (False).
        timeout: seconds to wait for SQLite locks held by other processes.
        lease_seconds: a claim not refreshed for this long (its process hung or its host died) is
            taken over; claims of dead processes on this host are taken at once.
        max_claim_seconds: the heartbeat refreshes a claim for at most this long after it was taken
            (None: while the process lives), so a process stuck in one evaluation loses its claim
            ``lease_seconds`` later. An evaluation ``timeout`` sets a per-claim limit of its own.
        verify_count: how many stored coalitions ``verify`` re-evaluates.

    Examples:
        >>> import numpy as np
        >>> from shapleig import FunctionGame, ShaplEIG
        >>> game = FunctionGame(lambda Z: Z @ np.arange(1.0, 6.0), n_players=5)
        >>> store = EvaluationStore(":memory:")
        >>> first = ShaplEIG().estimate(game, 12, seed=0, store=store)
        >>> len(store), first.info["n_game_evaluations"]
        (12, 12)
        >>> again = ShaplEIG().estimate(game, 12, seed=0, store=store)  # a resumed run pays nothing
        >>> again.info["n_game_evaluations"], bool(np.allclose(again.values, first.values))
        (0, True)
    """

    # argument count over budget: the public store options (path, game identity, locking, timeouts), keyword defaults
    def __init__(  # noqa: PLR0913
        self,
        path: str | os.PathLike[str],
        *,
        game_id: str | None = None,
        accept_game_change: bool = False,
        verify: bool = False,
        verify_rtol: float = 1e-9,
        verify_count: int = 3,
        wait: bool = True,
        timeout: float = 60.0,
        lease_seconds: float = 120.0,
        max_claim_seconds: float | None = None,
    ):
        self.path = os.fspath(path)
        self.game_id = None if game_id is None else str(game_id)
        self.accept_game_change = bool(accept_game_change)
        self.verify = bool(verify)
        self.verify_rtol = float(verify_rtol)
        self.verify_count = int(verify_count)
        if self.verify_count < 1:
            raise ValueError(f"verify_count must be >= 1, got {verify_count}")
        self.wait = bool(wait)
        self.timeout = float(timeout)
        self.lease_seconds = float(lease_seconds)
        self.max_claim_seconds = None if max_claim_seconds is None else float(max_claim_seconds)
        if self.max_claim_seconds is not None and not self.max_claim_seconds > 0:
            raise ValueError(f"max_claim_seconds must be > 0 or None, got {max_claim_seconds}")
        if not self.lease_seconds > 0 or not self.timeout >= 0:
            raise ValueError(f"lease_seconds must be > 0 and timeout >= 0, got {lease_seconds}, {timeout}")
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._verified = False
        self._row_key: bytes | None = None  # the key of the row digests, read from meta once bound
        self._claims = ClaimTable(self, wait=self.wait, lease_seconds=self.lease_seconds,
                                  max_claim_seconds=self.max_claim_seconds)
        self._connect()

    def _settings(self) -> dict[str, Any]:
        return {"game_id": self.game_id, "accept_game_change": self.accept_game_change, "verify": self.verify,
                "verify_rtol": self.verify_rtol, "verify_count": self.verify_count, "wait": self.wait, "timeout": self.timeout,
                "lease_seconds": self.lease_seconds, "max_claim_seconds": self.max_claim_seconds}

    # -- opening ----------------------------------------------------------------------------
    def _connect(self) -> None:
        memory = self.path == ":memory:"
        if not memory:
            self._check_path()
            if os.path.isdir(self.path):
                raise StoreError(f"evaluation store path {self.path} is a folder; give a file name such as runs.sqlite")
            parent = os.path.dirname(os.path.abspath(self.path))
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of evaluation store {self.path}: {exc}") from exc
            self._check_header()
            for target in (self.path, parent):  # WAL needs to create files beside the store
                if os.path.exists(target) and not os.access(target, os.W_OK):
                    raise StoreError(f"evaluation store {self.path} cannot be opened for writing: {target} "
                                     f"is read-only; copy the store to a writable folder to resume from it")
        try:
            # isolation_level=None: we open each transaction ourselves and commit it at once.
            # check_same_thread=False: callbacks and the heartbeat run on other threads; the lock
            # serialises them.
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open evaluation store {self.path}: {exc}") from exc
        try:
            self._check_contents(conn)
            conn.execute("PRAGMA synchronous = FULL")  # a committed value survives a crash
            self._when_unlocked(lambda: self._create_schema(conn, memory))
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(self._explain(exc, "cannot be opened for writing")) from exc
        except StoreError:
            conn.close()
            raise
        self._conn = conn

    def _create_schema(self, conn: sqlite3.Connection, memory: bool) -> None:
        if not memory:
            conn.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
        # the whole schema in one write transaction (a read-only file or folder fails here, not
        # mid-run): processes creating the same new store at once see none of it or all of it
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._check_contents(conn)  # again, under the lock: another process may have won
            for statement in filter(str.strip, (_SCHEMA + TRACE_SCHEMA).split(";")):
                conn.execute(statement)
            self._add_digests(conn)
            self._check_rows_complete(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise

    def _add_digests(self, conn: sqlite3.Connection) -> None:
        """Give the rows of a store written by an earlier version (no ``digest`` column) their digests, once.

        Runs inside the schema transaction, so processes opening the store at once add them once. What
        was edited before this point cannot be told apart from what was written: the warning says so.
        """
        if "digest" in {r[1] for r in conn.execute("PRAGMA table_info(evaluations)")}:
            return
        conn.execute("ALTER TABLE evaluations ADD COLUMN digest BLOB")
        if not check_meta(self.path, dict(conn.execute("SELECT key, value FROM meta").fetchall())):
            return  # not bound to a game yet: its key comes with the game (bind)
        text = new_row_key()
        key = bytes.fromhex(text)
        rows = conn.execute(f"SELECT {', '.join(ROW_COLUMNS)} FROM evaluations ORDER BY id").fetchall()
        conn.executemany("UPDATE evaluations SET digest = ? WHERE id = ?", [(row_digest(key, r), r[0]) for r in rows])
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [
            ("row_key", text), ("deleted_before_digests", str(rows_missing(conn))), ("digests_added", repr(time.time()))])
        logger.warning("evaluation store %s was written by an earlier version of shapleig, without per-row digests: "
                       "digests were added to its %d rows now; a value edited before this point cannot be detected",
                       self.path, len(rows))

    def _check_rows_complete(self, conn: sqlite3.Connection) -> None:
        """Refuse a store from which rows were deleted (a store only ever inserts; row ids are handed out in order)."""
        meta = check_meta(self.path, dict(conn.execute("SELECT key, value FROM meta").fetchall()))
        expected = int(meta.get("deleted_before_digests", "0"))  # gaps an earlier version's store already had
        missing = rows_missing(conn)
        if missing != expected:
            deleted = missing - expected
            what = (f"{deleted} row{' was' if deleted == 1 else 's were'} deleted" if deleted > 0 else
                    "SQLite's record of the row ids handed out (sqlite_sequence) was edited")
            raise StoreError(f"evaluation store {self.path}: {what}; a store only ever inserts rows, so it was edited "
                             f"by another program; refusing to use it. Nothing in it was changed. "
                             f"{_REBUILD_HINT.format(path=self.path)}")

    def _when_unlocked(self, action: Any) -> None:
        """Run ``action``, retrying for up to ``timeout`` seconds while SQLite reports the file locked.

        Switching a new file to WAL takes an exclusive lock for which SQLite does not wait (no busy handler), so
        processes creating one store at once would otherwise fail.
        """
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(delay * (1.0 + np.random.default_rng().random()))  # jitter: no lockstep retries
            delay = min(2 * delay, 0.2)

    def _check_path(self) -> None:
        """Refuse paths under which SQLite would lose every value or block.

        An empty path (a temporary database deleted on close), an SQLite URI (``file:...?mode=memory``), a file that is
        not a regular file (a FIFO would block the header read for ever), or a file with several hard links (SQLite
        keeps its write-ahead log and locks beside each *name*, so two processes writing through two names corrupt the
        file).
        """
        if not self.path.strip():
            raise StoreError("evaluation store path is empty: SQLite would open a temporary database that is "
                             "deleted when it is closed, losing every value; give a file name such as runs.sqlite")
        if self.path[:5].lower() == "file:":
            raise StoreError(f"evaluation store path {self.path!r} is an SQLite URI: it may open an in-memory or "
                             f"temporary database that loses every value; give a plain file path (or \":memory:\" "
                             f"for a store that lives only in this process, on purpose)")
        try:
            kind = special_file_kind(self.path)
            info = os.stat(self.path)  # follows symbolic links: the file SQLite will open
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"cannot read evaluation store {self.path}: {exc}") from exc
        if stat.S_ISDIR(info.st_mode):
            return  # named as a folder just below
        if kind is not None:
            raise StoreError(f"evaluation store path {self.path} is {kind}, not a regular file; "
                             f"SQLite needs a regular file: give a file name such as runs.sqlite")
        if info.st_nlink > 1:
            raise StoreError(
                f"evaluation store {self.path} has {info.st_nlink} hard links: SQLite keeps its write-ahead log "
                f"and locks beside each name, so processes writing through different names would corrupt it; "
                f"refusing to use it. Remove the other links (or copy the file) and use one name")

    def _check_header(self) -> None:
        try:
            with open(self.path, "rb") as f:
                head = f.read(len(_SQLITE_HEADER))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"cannot read evaluation store {self.path}: {exc}") from exc
        if head and head != _SQLITE_HEADER:
            raise StoreError(
                f"{self.path} is not an evaluation store: it is not an SQLite database "
                f"(it starts with {head[:8]!r}); refusing to use or overwrite it"
            )

    # complexity over budget: one check per way a file can fail to be a store, each with its own message
    def _check_contents(self, conn: sqlite3.Connection) -> None:  # noqa: C901
        """Refuse a damaged database, or one that holds something other than a store."""
        try:
            # every object, internal names included: a store never has a trigger or a view, so
            # none is let through whatever its name (LIKE 'sqlite_%' would also match 'sqlitex')
            objects = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
            check = conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a readable evaluation store (damaged or truncated?): {exc}") from exc
        if [tuple(r) for r in check] != [("ok",)]:
            problems = "; ".join(str(r[0]) for r in check[:3])
            raise StoreError(f"evaluation store {self.path} is damaged (SQLite integrity check: {problems})")
        tables = {name for kind, name in objects if kind == "table" and not name.startswith("sqlite_")}
        foreign = sorted(f"{kind} {name}" for kind, name in objects if kind in ("trigger", "view"))
        if foreign:  # a trigger can rewrite values as they are stored; a view is not ours either
            raise StoreError(
                f"{self.path} holds {', '.join(foreign)}, which an evaluation store never has (a trigger "
                f"could change values as they are written); refusing to use it. Give a new file name, "
                f"or drop them if you created them on purpose."
            )
        if not tables:
            return
        check_trace_columns(self.path, conn)
        for name, columns in _TABLES.items():
            info = conn.execute(f"PRAGMA table_info({name})").fetchall() if name in tables else []
            if not columns <= {r[1] for r in info}:
                raise StoreError(
                    f"{self.path} is an SQLite database but not an evaluation store (its tables: "
                    f"{sorted(tables)}); refusing to write into it. Give a new file name."
                )
            types = {r[1]: str(r[2]).upper() for r in info}
            wrong = {c: t for c, t in _TYPES.get(name, {}).items()
                     if types.get(c) != t and (c in types or c not in _ADDED_LATER)}
            if wrong:
                raise StoreError(f"evaluation store {self.path}: table {name} declares "
                                 f"{', '.join(f'{c} {types.get(c)}' for c in wrong)} instead of "
                                 f"{', '.join(f'{c} {t}' for c, t in wrong.items())}; refusing a tampered store")
        if "evaluations" in tables:
            bad = conn.execute("SELECT id, typeof(value) FROM evaluations WHERE status = 'ok' "
                               "AND typeof(value) != 'real' ORDER BY id LIMIT 1").fetchone()
            if bad is not None:
                raise StoreError(f"evaluation store {self.path} holds a non-numeric value ({bad[1]}) in row "
                                 f"{bad[0]}; a store only ever writes REAL values, refusing to use it")
            # SQLite holds inf (written as 9e999) but never NaN (it becomes NULL, refused above)
            bad = conn.execute("SELECT id, coalition, value FROM evaluations WHERE status = 'ok' AND "
                               "abs(value) > ? ORDER BY id LIMIT 1", (_FLOAT_MAX,)).fetchone()
            if bad is not None:
                raise StoreError(f"evaluation store {self.path} holds a non-finite value {bad[2]!r} in row {bad[0]} "
                                 f"(coalition {readable_code(bad[1])}); a store only ever writes finite values, "
                                 f"refusing to use it")

    def _explain(self, exc: sqlite3.Error, doing: str) -> str:
        text = str(exc)
        why = ""
        if "readonly" in text or "read-only" in text:
            why = " (the file or its folder is read-only)"
        elif "full" in text:
            why = " (the disk is full or the database reached its size limit)"
        return f"evaluation store {self.path} {doing}: {text}{why}"

    @property
    def conn(self) -> sqlite3.Connection:
        """The SQLite connection (``ValueError`` once the store is closed)."""
        if self._conn is None:
            raise ValueError(f"the evaluation store at {self.path} is closed")
        return self._conn

    @property
    def is_open(self) -> bool:
        """Whether the store's connection is open."""
        return self._conn is not None

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection under the store's lock, outside any transaction (for reads).

        Yields:
            The open ``sqlite3.Connection``.
        """
        with self._lock:
            yield self.conn

    @contextlib.contextmanager
    def transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) under the store's lock, committed on exit.

        It is rolled back if the block raises; a failing SQLite statement becomes
        :class:`StoreError` saying what it was ``doing``.

        Args:
            doing: what the transaction is for, for the error message ("could not release claims").

        Yields:
            The open ``sqlite3.Connection`` inside the transaction.
        """
        with self._lock:
            try:
                with self.conn as conn:  # commits on success, rolls back on an exception
                    conn.execute("BEGIN IMMEDIATE")
                    yield conn
            except sqlite3.Error as exc:
                raise StoreError(self._explain(exc, doing)) from exc

    # -- game identity ----------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        """The ``meta`` table as a dict (empty until a game is bound).

        Returns:
            ``{key: value}`` of the ``meta`` table (fingerprint, n_players, identity, versions).
        """
        with self._lock:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    @property
    def fingerprint(self) -> str | None:
        """Fingerprint of the game this store belongs to, or None if none is bound yet."""
        return self.meta().get("fingerprint")

    def bind(self, game: Any, evaluate: Any = None) -> str:
        """Claim the store for ``game`` (first use) or check that it belongs to it.

        Raises :class:`StoreMismatchError` naming what differs
        when the store was written for a different game (unless ``accept_game_change``), and
        :class:`GameError` when the game's identity cannot be digested and no ``game_id`` is set.
        With ``verify``, re-evaluates a random sample of stored coalitions the first time (see the class doc),
        through ``evaluate`` (``bool[k, p] -> float64[k]``) when given: ``BudgetedGame`` passes its
        evaluator's, so a verification honours the run's timeout and retries.

        Args:
            game: the game (its identity and number of players are recorded or compared).
            evaluate: what re-evaluates coalitions for ``verify`` (``bool[k, p] -> float64[k]``); None: the game itself.

        Returns:
            the store's fingerprint of the game.
        """
        p = check_game(game)
        identity = game_identity(game, self.game_id)
        opaque = opaque_parts(identity)
        if opaque and self.game_id is None and "game_id" not in identity:
            raise GameError(
                f"cannot tell this game apart from others for the evaluation store {self.path}: "
                f"{opaque} cannot be digested. Give the game an explicit identity: "
                f"FunctionGame(fn, n_players, game_id=...) or EvaluationStore(path, game_id=...)"
            )
        fingerprint = identity_digest(identity)
        description = describe_game(game) + (f" [game_id={self.game_id}]" if self.game_id else "")
        with self._lock:
            try:
                with self.conn:
                    self.conn.execute("BEGIN IMMEDIATE")  # two processes binding at once: one wins
                    meta = check_meta(self.path, dict(self.conn.execute("SELECT key, value FROM meta").fetchall()))
                    if not meta:
                        self.conn.executemany(
                            "INSERT INTO meta (key, value) VALUES (?, ?)",
                            [
                                ("fingerprint", fingerprint),
                                ("identity", json.dumps(identity, sort_keys=True)),
                                ("game", description),
                                ("n_players", str(p)),
                                ("game_id", self.game_id or ""),
                                ("created", repr(time.time())),
                                ("row_key", new_row_key()),  # with the game: every row is digested
                            ],
                        )
                        return fingerprint
            except sqlite3.Error as exc:
                raise StoreError(self._explain(exc, "could not record the game")) from exc
        stored = meta["fingerprint"]
        if int(meta["n_players"]) != p:
            raise StoreMismatchError(
                f"the evaluation store at {self.path} was written for game {meta['game']}; refusing "
                f"to use it for game {description}: n_players {meta['n_players']} vs {p}. Use a new store path."
            )
        if stored != fingerprint:
            old = json.loads(meta["identity"]) if "identity" in meta else None
            diffs = identity_differences(old, identity) if old is not None else [
                "the store was written by an older version that did not record what identifies a game"]
            if not self.accept_game_change:
                raise StoreMismatchError(
                    f"the evaluation store at {self.path} was written for game {meta['game']} "
                    f"(fingerprint {stored}); refusing to use it for game {description} "
                    f"(fingerprint {fingerprint}). What differs: {'; '.join(diffs)}. Use a new store "
                    f"path for this game; or, if the values are the same, open the store with "
                    f"EvaluationStore(path, accept_game_change=True)."
                )
            logger.warning("evaluation store %s: reusing values of a different game identity (%s)",
                           self.path, "; ".join(diffs))
        if self.verify and not self._verified:
            self._verify_sample(game, evaluate)
        return stored

    def _verify_sample(self, game: Any, evaluate: Any = None) -> None:
        """Re-evaluate up to ``verify_count`` stored coalitions drawn at random.

        A store doctored anywhere, not only in its first row, can be caught:
        :class:`StoreMismatchError` lists every coalition whose value changed.
        """
        with self._lock:
            key = self._key()
            rows = self.conn.execute(
                f"SELECT {SELECT_ROW} FROM evaluations WHERE status = 'ok' AND id IN (SELECT MIN(id) "
                "FROM evaluations WHERE status = 'ok' GROUP BY coalition) ORDER BY id").fetchall()
        if not rows:
            self._verified = True
            return
        # fresh entropy: which rows are checked must not be predictable from the run's seed
        pick = np.random.default_rng().choice(len(rows), size=min(self.verify_count, len(rows)), replace=False)
        chosen = [rows[i] for i in sorted(pick)]
        for row in chosen:  # an edited value is refused as such, not reported as a changed game
            self._check_row(key, row)
        Z = np.stack([decode_coalition(row[2]) for row in chosen])
        now = as_value_vector((evaluate or game)(Z.copy()), len(chosen))
        differ = [f"{format_coalition(Z[k])}: stored {float(row[3])!r}, now {float(now[k])!r}"
                  for k, row in enumerate(chosen)
                  if not np.isclose(now[k], float(row[3]), rtol=self.verify_rtol, atol=self.verify_rtol * 1e-3)]
        if differ:
            raise StoreMismatchError(
                f"the evaluation store at {self.path}: {len(differ)} of {len(chosen)} re-evaluated coalitions "
                f"differ ({'; '.join(differ)}), so the game now returns other values than the store holds: the "
                f"game changed since the store was written (or is not deterministic). Use a new store path."
            )
        self._verified = True

    def bound(self) -> tuple[str, int]:
        """``(fingerprint, n_players)`` of the game the store is bound to (``ValueError`` before :meth:`bind`).

        Returns:
            The fingerprint (32 hex digits) and the number of players.
        """
        return self._require_bound()

    def _require_bound(self) -> tuple[str, int]:
        meta = check_meta(self.path, self.meta())
        if not meta:
            raise ValueError(
                f"the evaluation store at {self.path} is not bound to a game yet (call bind(game))"
            )
        return meta["fingerprint"], int(meta["n_players"])

    # -- row digests (shapleig.runs.row_digest) ---------------------------------------------
    def _key(self) -> bytes | None:
        """The key of the row digests (None while no game is bound); :class:`StoreError` if a bound store lost it."""
        if self._row_key is None:
            meta = check_meta(self.path, self.meta())
            if meta:
                key = parse_row_key(meta.get("row_key"))
                if key is None:
                    raise StoreError(f"evaluation store {self.path} is bound to a game but its meta table has no "
                                     f"row_key, the key its rows are checked with (it was deleted, or a version of "
                                     f"shapleig without row digests bound this store); its values cannot be checked, "
                                     f"refusing to use it. Use a new store path.")
                self._row_key = key
        return self._row_key

    def _check_row(self, key: bytes | None, row: tuple) -> None:
        """Refuse a row (read with ``SELECT_ROW``) that does not match its digest, naming it."""
        if row_matches(key, row):
            return
        if key is None:
            why = "cannot be checked: the store holds rows but is not bound to a game, so it has no key"
        elif row[len(ROW_COLUMNS)] is None:
            why = ("has no digest: it was inserted by another program, or by a version of shapleig without row "
                   "digests writing into this store")
        else:
            why = ("does not match its digest: it was changed after it was written (an UPDATE of its value or "
                   "another column), or copied from another store, or moved to another id")
        status = "" if row[6] == "ok" else f"{row[6]!r} "
        raise StoreError(f"evaluation store {self.path}: row {row[0]} ({status}coalition {readable_code(row[2])}, value "
                         f"{row[3]!r}) {why}; refusing to use it. Nothing in the store was changed. "
                         f"{_REBUILD_HINT.format(path=self.path)}")

    # -- reading ----------------------------------------------------------------------------
    def _stored(self, fingerprint: str, codes: list[str]) -> dict[str, float]:
        """``{code: value}`` of the stored successful evaluations among ``codes`` (first wins), each checked."""
        stored: dict[str, float] = {}
        key = self._key()
        for s in range(0, len(codes), _LOOKUP_CHUNK):
            chunk = sorted(set(codes[s : s + _LOOKUP_CHUNK]))
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"SELECT {SELECT_ROW}, typeof(value) FROM evaluations WHERE status = 'ok' "
                f"AND fingerprint = ? AND coalition IN ({marks}) ORDER BY id",
                [fingerprint, *chunk],
            ).fetchall()
            for row in rows:
                code, value, kind = row[2], row[3], row[-1]
                # only REAL is ever written: text ('1.5'), integers or blobs were put there by hand
                if kind != "real" or not isinstance(value, float):  # never decoded, refused
                    raise StoreError(f"evaluation store {self.path} holds a non-numeric value "
                                     f"({type(value).__name__}, SQLite {kind}) for coalition {readable_code(code)}; "
                                     f"refusing to use it")
                if not math.isfinite(value):  # only finite values are ever written: 9e999 by hand
                    raise StoreError(f"evaluation store {self.path} holds a non-finite value {value!r} for "
                                     f"coalition {readable_code(code)}; refusing to use it")
                self._check_row(key, row[:-1])  # the value is the one written for this game and coalition
                stored.setdefault(code, float(value))
        return stored

    def stored_values(self, codes: list[str]) -> dict[str, float]:
        """The stored successful values among ``codes`` (the store's ``'0'``/``'1'`` texts).

        Args:
            codes: coalition codes of the bound game.

        Returns:
            ``{code: value}`` for the stored ones (the first stored value of each).
        """
        fingerprint, _ = self._require_bound()
        with self._lock:
            return self._stored(fingerprint, codes)

    def lookup(self, coalitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stored values of ``coalitions`` (``bool[m, p]``): ``(found bool[m], values float64[m])``.

        ``values`` is NaN where not found. If a coalition was stored twice, the first value wins,
        so every reader sees the same value.

        Args:
            coalitions: ``bool[m, p]``.

        Returns:
            ``(found, values)``: ``bool[m]`` and ``float64[m]`` (NaN where not found).
        """
        fingerprint, p = self._require_bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        with self._lock:
            stored = self._stored(fingerprint, codes)
        found = np.array([c in stored for c in codes], dtype=bool)
        values = np.array([stored.get(c, np.nan) for c in codes], dtype=np.float64)
        return found, values

    def records(self) -> list[StoredEvaluation]:
        """Every row (attempts included), in insertion order.

        Returns:
            one :class:`StoredEvaluation` per row.
        """
        with self._lock:
            key = self._key()
            rows = self.conn.execute(f"SELECT {SELECT_ROW} FROM evaluations ORDER BY id").fetchall()
        for row in rows:
            self._check_row(key, row)
        return [
            StoredEvaluation(r[0], r[1], decode_coalition(r[2]), r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows
        ]

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """Successful evaluations: coalitions ``bool[t, p]`` and values ``float64[t]``, in order.

        Returns:
            ``(coalitions, values)``: ``bool[t, p]`` and ``float64[t]``.
        """
        _, p = self._require_bound()
        ok = [r for r in self.records() if r.status == "ok"]
        if not ok:
            return np.zeros((0, p), dtype=bool), np.zeros(0)
        y = np.array([r.value for r in ok], dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise StoreError(f"evaluation store {self.path} holds a non-finite value {y[bad[0]]!r} in row "
                             f"{ok[bad[0]].id} (coalition {format_coalition(ok[bad[0]].coalition)}); refusing to use it")
        return np.stack([r.coalition for r in ok]), y

    def __len__(self) -> int:
        """Number of successful evaluations logged."""
        with self._lock:
            row = self.conn.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'ok'").fetchone()
        return int(row[0])

    def __iter__(self) -> Iterator[StoredEvaluation]:
        return iter(self.records())

    # -- claims: one process pays for each coalition (shapleig.runs.claims) -------------------
    def claim(self, coalitions: np.ndarray, hold_for: float | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Look ``coalitions`` (``bool[m, p]``) up and claim the missing ones, in one transaction.

        Args:
            coalitions: ``bool[m, p]``.
            hold_for: seconds for which the heartbeat keeps the new claims alive (e.g. the
                evaluation timeout times the attempts); after that (capped by ``max_claim_seconds``)
                they are no longer refreshed, so other processes take them over ``lease_seconds``
                later even if this process hangs.

        Returns:
            ``(found, values, mine, busy)`` (``bool[m]``, ``float64[m]``, ``bool[m]``, ``bool[m]``):
            stored values; coalitions this process now owns and must evaluate (and then
            :meth:`append`); coalitions another live process is evaluating. With ``wait=False`` a
            busy coalition raises :class:`StoreBusyError` instead.
        """
        return self._claims.claim(coalitions, hold_for)

    def wait_for_others(self, coalitions: np.ndarray) -> None:
        """Sleep until at least one of ``coalitions`` (``bool[m, p]``) is stored or no longer claimed by a live process.

        Args:
            coalitions: ``bool[m, p]``, coalitions :meth:`claim` reported busy.
        """
        self._claims.wait_for_others(coalitions)

    def release(self, coalitions: np.ndarray) -> None:
        """Drop this process's claims on ``coalitions`` (after a failure: others may evaluate them).

        Args:
            coalitions: ``bool[m, p]``.
        """
        self._claims.release(coalitions)

    # -- writing ----------------------------------------------------------------------------
    def append(
        self,
        coalition: np.ndarray,
        value: float | None,
        *,
        seconds: float,
        status: str = "ok",
        attempt: int = 1,
        error: str | None = None,
    ) -> None:
        """Log one attempt for ``coalition`` (``bool[p]``) and commit it before returning.

        A successful value also drops this process's claim on the coalition in the same
        transaction. :class:`StoreError` if the write fails (disk full, read-only): the message
        carries the value that could not be stored.

        Args:
            coalition: ``bool[p]``.
            value: the finite value when ``status == "ok"``, else None.
            seconds: wall-clock seconds the game call took.
            status: ``"ok"``, ``"error"`` or ``"nonfinite"``.
            attempt: 1 for the first try, 2 for the first retry, ...
            error: what went wrong, for failed attempts.
        """
        fingerprint, p = self._require_bound()
        row = as_coalition_matrix(coalition, p)
        if row.shape[0] != 1:
            raise ValueError(f"append takes one coalition, got {row.shape[0]}")
        if status == "ok":
            if value is None or not np.isfinite(value):
                raise ValueError(f"a successful evaluation needs a finite value, got {value!r}")
            value = float(value)
        else:
            value = None  # SQLite cannot hold NaN; the error column says what came back
        code = encode_coalition(row[0])
        with self._lock:
            key = self._key()
            if key is None:  # bound (above), and a bound store has its key (or _key raised): only if meta was emptied
                raise StoreError(f"evaluation store {self.path}: its meta table was emptied while it was open")
            try:
                with self.conn:
                    self.conn.execute("BEGIN IMMEDIATE")
                    # the row and its digest in one transaction: no process sees one without the other
                    insert_row(self.conn, key, (fingerprint, code, value, float(seconds), time.time(), status,
                                                int(attempt), error))
                    if status == "ok":
                        self.conn.execute("DELETE FROM claims WHERE coalition = ? AND owner = ?", (code, claim_owner()))
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                try:
                    n = self.conn.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'ok'").fetchone()[0]
                except sqlite3.Error:
                    n = "earlier"
                raise StoreError(
                    self._explain(exc, "could not be written")
                    + f". The {n} evaluations stored before are kept; the {status} result "
                    f"{value!r} of coalition {format_coalition(row[0])} was NOT stored."
                ) from exc
        if status == "ok":
            self._claims.forget([code])

    # -- the anytime trace of the runs (shapleig.runs.trace_table) ---------------------------
    def start_trace_run(self, run: TraceRun) -> bool:
        """Record a run in ``trace_runs`` unless it is recorded already (a resumed run).

        Args:
            run: the run (its id, method, seed, budget and info).

        Returns:
            True when the run was new.
        """
        self._require_bound()
        with self.transaction("could not record the run's trace") as conn:
            return insert_run(conn, self._trace_key(), run)

    def record_trace(self, entries: Sequence[dict[str, Any]]) -> int:
        """Append entries of a run's anytime trace in one transaction, leaving out those the store holds as they are.

        Args:
            entries: each with ``run``, ``step``, ``evaluations``, ``time``, ``eval_seconds``, ``worker``,
                ``pending``, ``values``, ``std`` and ``diagnostics`` (:func:`~shapleig.runs.trace_table.insert_entry`).

        Returns:
            how many rows were written.
        """
        self._require_bound()
        with self._lock:
            # not synced to disk at each step (evaluations are): the trace is derived, and a run resumed after a
            # power cut rewrites what was lost; the next evaluation's synced commit carries these pages too
            self.conn.execute("PRAGMA synchronous = NORMAL")
            try:
                with self.transaction("could not record the run's trace") as conn:
                    key = self._trace_key()
                    return sum(insert_entry(conn, key, self.path, entry) for entry in entries)
            finally:
                self.conn.execute("PRAGMA synchronous = FULL")

    def end_trace_run(self, run: str, evaluations: int) -> bool:
        """Record that ``run`` returned its estimate (a reader shows it finished, also short of its budget).

        Args:
            run: the run's id.
            evaluations: the evaluations it spent.

        Returns:
            True when a row was written.
        """
        self._require_bound()
        with self.transaction("could not record the run's end") as conn:
            return insert_end(conn, self._trace_key(), run, evaluations, time.time())

    def trace_ends(self) -> dict[str, tuple[float, int]]:
        """When each run on the store returned its estimate: ``{run: (time, evaluations)}``.

        Returns:
            the latest end of each run that ended.
        """
        with self._lock:
            return read_ends(self.conn, self._key(), self.path)

    def trace_runs(self) -> list[TraceRun]:
        """The runs recorded on this store, oldest first (each row checked against its digest).

        Returns:
            one :class:`~shapleig.runs.trace_table.TraceRun` per run.
        """
        with self._lock:
            return read_runs(self.conn, self._key(), self.path)

    def trace(self, run: str) -> list[TraceEntry]:
        """The anytime trace of ``run`` as the store holds it: the latest entry of every step.

        Args:
            run: the run's id (``est.info["trace_run"]``).

        Returns:
            one :class:`~shapleig.runs.trace_table.TraceEntry` per step, in step order.
        """
        with self._lock:
            return latest_per_step(read_entries(self.conn, self._key(), self.path, run))

    def _trace_key(self) -> bytes:
        key = self._key()
        if key is None:  # bound (checked by the caller), so only if meta was emptied
            raise StoreError(f"evaluation store {self.path}: its meta table was emptied while it was open")
        return key

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release this process's claims and close the connection (idempotent)."""
        self._claims.stop()
        held = self._claims.held
        if self._conn is not None and held:
            self.release(np.stack([decode_coalition(c) for c in held]))
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "EvaluationStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        if self.path == ":memory:":
            raise TypeError("an in-memory EvaluationStore cannot be pickled; use a file path")
        return {"path": self.path, **self._settings()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        self.__init__(state.pop("path"), **state)  # type: ignore[misc]

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"{len(self)} evaluations"
        return f"EvaluationStore({self.path!r}, {state})"
