"""``EvaluationStore``: an append-only SQLite log of evaluated coalitions.

Expensive evaluations must never be lost. A :class:`~shapleig.game.BudgetedGame` given a store
looks every new coalition up there first (a stored value is reused, not re-evaluated, but still
charged to the budget) and appends each evaluation, and each failed attempt, in its own committed
transaction as soon as it arrives. A run killed at any point and started again with the same seed
therefore replays the stored values and continues where it stopped, ending with the same estimate.

A store belongs to one game: the first ``BudgetedGame`` that uses it records the game's
fingerprint (:func:`shapleig.game.game_fingerprint`, plus the store's ``game_id``), and any other
game is refused with :class:`~shapleig.errors.StoreMismatchError`. Rows are never updated or
deleted.

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
=============  =====================================================================

Table ``meta`` holds ``fingerprint``, ``game`` (a readable description), ``n_players``,
``game_id`` and ``created``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from .coalitions import as_coalition_matrix
from .errors import StoreMismatchError
from .game import check_game, describe_game, game_fingerprint

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
    error TEXT
);
CREATE INDEX IF NOT EXISTS evaluations_ok ON evaluations (coalition) WHERE status = 'ok';
"""

_LOOKUP_CHUNK = 500  # SQLite limits the number of bound parameters per statement


@dataclass(frozen=True)
class StoredEvaluation:
    """One row of the log (see the module docstring for the columns)."""

    id: int
    fingerprint: str
    coalition: np.ndarray  # bool[p]
    value: float | None
    seconds: float
    time: float
    status: str
    attempt: int
    error: str | None


def _encode(row: np.ndarray) -> str:
    return "".join("1" if b else "0" for b in row)


def _decode(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("ascii"), dtype=np.uint8) == ord("1")


class EvaluationStore:
    """Append-only SQLite log of one game's evaluated coalitions (``path``: file, or ``":memory:"``).

    game_id: optional label hashed into the game fingerprint, for games that the automatic
             fingerprint cannot tell apart (e.g. the same class with different hidden data).

    Pass it to ``DesignLoop(..., store=...)``, ``estimate(..., store=...)`` or
    ``BudgetedGame(..., store=...)``. Usable as a context manager; picklable (reopens by path).
    """

    def __init__(self, path: str | os.PathLike[str], *, game_id: str | None = None):
        self.path = os.fspath(path)
        self.game_id = None if game_id is None else str(game_id)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._connect()

    def _connect(self) -> None:
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        # isolation_level=None: we open each transaction ourselves and commit it at once.
        # check_same_thread=False: callbacks may run on executor threads; self._lock serialises.
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA synchronous = FULL")  # a committed value survives a crash
        self._conn.executescript(_SCHEMA)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"the evaluation store at {self.path} is closed")
        return self._conn

    # -- game identity ----------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        """The ``meta`` table as a dict (empty until a game is bound)."""
        with self._lock:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    @property
    def fingerprint(self) -> str | None:
        """Fingerprint of the game this store belongs to, or None if none is bound yet."""
        return self.meta().get("fingerprint")

    def bind(self, game: Any) -> str:
        """Claim the store for ``game`` (first use) or check that it belongs to it.

        Returns the fingerprint. Raises :class:`StoreMismatchError` naming both games when the
        store was written for a different game.
        """
        p = check_game(game)
        fingerprint = game_fingerprint(game, self.game_id)
        description = describe_game(game) + (f" [game_id={self.game_id}]" if self.game_id else "")
        with self._lock, self.conn:
            self.conn.execute("BEGIN IMMEDIATE")  # two processes binding at once: one wins
            meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                self.conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [
                        ("fingerprint", fingerprint),
                        ("game", description),
                        ("n_players", str(p)),
                        ("game_id", self.game_id or ""),
                        ("created", repr(time.time())),
                    ],
                )
                return fingerprint
        if meta["fingerprint"] != fingerprint or int(meta["n_players"]) != p:
            raise StoreMismatchError(
                f"the evaluation store at {self.path} was written for game {meta['game']} "
                f"(fingerprint {meta['fingerprint']}); refusing to use it for game {description} "
                f"(fingerprint {fingerprint}). Use a new store path for this game, or the same "
                f"game and game_id that wrote it."
            )
        return fingerprint

    def _require_bound(self) -> tuple[str, int]:
        meta = self.meta()
        if not meta:
            raise ValueError(
                f"the evaluation store at {self.path} is not bound to a game yet (call bind(game))"
            )
        return meta["fingerprint"], int(meta["n_players"])

    # -- reading ----------------------------------------------------------------------------
    def lookup(self, coalitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stored values of ``coalitions`` (``bool[m, p]``): ``(found bool[m], values float64[m])``.

        ``values`` is NaN where not found. If a coalition was stored twice (two runs racing on
        one file), the first value wins, so every reader sees the same value.
        """
        fingerprint, p = self._require_bound()
        z = as_coalition_matrix(coalitions, p)
        codes = [_encode(row) for row in z]
        stored: dict[str, float] = {}
        with self._lock:
            for s in range(0, len(codes), _LOOKUP_CHUNK):
                chunk = sorted(set(codes[s : s + _LOOKUP_CHUNK]))
                marks = ",".join("?" * len(chunk))
                rows = self.conn.execute(
                    "SELECT coalition, value FROM evaluations WHERE status = 'ok' "
                    f"AND fingerprint = ? AND coalition IN ({marks}) ORDER BY id",
                    [fingerprint, *chunk],
                ).fetchall()
                for code, value in rows:
                    stored.setdefault(code, float(value))
        found = np.array([c in stored for c in codes], dtype=bool)
        values = np.array([stored.get(c, np.nan) for c in codes], dtype=np.float64)
        return found, values

    def records(self) -> list[StoredEvaluation]:
        """Every row (attempts included), in insertion order."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT id, fingerprint, coalition, value, seconds, time, status, attempt, error "
                "FROM evaluations ORDER BY id"
            ).fetchall()
        return [
            StoredEvaluation(r[0], r[1], _decode(r[2]), r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows
        ]

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """Successful evaluations: coalitions ``bool[t, p]`` and values ``float64[t]``, in order."""
        _, p = self._require_bound()
        ok = [r for r in self.records() if r.status == "ok"]
        if not ok:
            return np.zeros((0, p), dtype=bool), np.zeros(0)
        return np.stack([r.coalition for r in ok]), np.array([r.value for r in ok], dtype=np.float64)

    def __len__(self) -> int:
        """Number of successful evaluations logged."""
        with self._lock:
            row = self.conn.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'ok'").fetchone()
        return int(row[0])

    def __iter__(self) -> Iterator[StoredEvaluation]:
        return iter(self.records())

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
        """Log one attempt for ``coalition`` (``bool[p]``) and commit it before returning."""
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
        with self._lock, self.conn:
            self.conn.execute("BEGIN")
            self.conn.execute(
                "INSERT INTO evaluations "
                "(fingerprint, coalition, value, seconds, time, status, attempt, error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (fingerprint, _encode(row[0]), value, float(seconds), time.time(), status,
                 int(attempt), error),
            )

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
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
        return {"path": self.path, "game_id": self.game_id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path, self.game_id = state["path"], state["game_id"]
        self._lock = threading.Lock()
        self._conn = None
        self._connect()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"{len(self)} evaluations"
        return f"EvaluationStore({self.path!r}, {state})"
