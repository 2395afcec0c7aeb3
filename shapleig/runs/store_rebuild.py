"""``rebuild_store``: copy the rows of a refused evaluation store that still check into a new store.

An :class:`~shapleig.runs.store.EvaluationStore` whose rows were edited, copied in from elsewhere or
deleted is refused as a whole, and nothing in it is changed. :func:`rebuild_store` reads such a
store and writes a new one: the same game (its ``meta`` rows), every row that matches its digest
(and holds a finite REAL value or a failed attempt), in the same order, under a new key; the rows
it leaves out are listed. A run resumed on the new store evaluates the coalitions left out again.
The source file is only read.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sqlite3
import time
from dataclasses import dataclass

from shapleig.errors import StoreError
from shapleig.runs.claims import readable_code
from shapleig.runs.row_digest import SELECT_ROW, insert_row, new_row_key, parse_row_key, row_matches
from shapleig.runs.store import EvaluationStore, check_meta

logger = logging.getLogger("shapleig.runs.store")

# meta rows that belong to one file, not to the game: the rebuilt store gets its own
_OWN_META = ("row_key", "deleted_before_digests", "digests_added", "rebuilt_from")


@dataclass(frozen=True)
class RebuildReport:
    """What :func:`rebuild_store` did.

    Attributes:
        destination: the new store's path.
        kept: how many rows were copied.
        left_out: one line per row left out (its id, coalition and why).
    """

    destination: str
    kept: int
    left_out: list[str]


def _why_left_out(key: bytes, row: tuple) -> str | None:
    """Why a row (``SELECT_ROW`` columns, then ``typeof(value)``) is not copied, or None to copy it."""
    if not row_matches(key, row[:-1]):
        return "does not match its digest" if row[-2] is not None else "has no digest"
    if row[6] == "ok" and not (row[-1] == "real" and math.isfinite(row[3])):
        return f"holds a value that is not a finite number ({row[3]!r})"
    return None


def _read(source: str) -> tuple[dict[str, str], list[tuple]]:
    """The ``meta`` table and every row (``SELECT_ROW``, ``typeof(value)``) of the store at ``source``."""
    if not os.path.isfile(source):
        raise StoreError(f"no evaluation store at {source}")
    try:
        with contextlib.closing(sqlite3.connect(source)) as con:  # read only: nothing is written to the source
            columns = {r[1] for r in con.execute("PRAGMA table_info(evaluations)")}
            if columns and "digest" not in columns:
                raise StoreError(f"evaluation store {source} was written by a version of shapleig without row digests; "
                                 f"open it with EvaluationStore({source!r}), which adds them, instead of rebuilding it")
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            rows = con.execute(f"SELECT {SELECT_ROW}, typeof(value) FROM evaluations ORDER BY id").fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read evaluation store {source}: {exc}") from exc
    return meta, rows


def rebuild_store(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> RebuildReport:
    """Copy the rows of the store at ``source`` that match their digests into a new store at ``destination``.

    Use it when a store is refused because a row was edited, copied in or deleted: the values that
    still check are kept (in their order, so the first stored value of each coalition is still the
    one served), the rest are listed in the report and in a warning, and a run resumed on
    ``destination`` evaluates them again. ``source`` is only read.

    Args:
        source: the refused store.
        destination: a path that does not exist yet (the new store).

    Returns:
        a :class:`RebuildReport`.

    Raises:
        StoreError: ``source`` cannot be read, is not bound to a game, has no row key, or
            ``destination`` exists.
    """
    src, dst = os.fspath(source), os.fspath(destination)
    if os.path.lexists(dst):
        raise StoreError(f"{dst} exists; rebuild_store writes a new store: give a path that does not exist")
    meta, rows = _read(src)
    meta = check_meta(src, meta)
    key = parse_row_key(meta.get("row_key"))
    if not meta or key is None:
        raise StoreError(f"evaluation store {src} has no game or no row key in its meta table, so none of its rows "
                         f"can be checked; nothing to rebuild from")
    keep = [row for row in rows if _why_left_out(key, row) is None]
    left_out = [f"row {row[0]} (coalition {readable_code(row[2])}, value {row[3]!r}) "
                f"{_why_left_out(key, row)}" for row in rows if _why_left_out(key, row) is not None]
    new_key = new_row_key()
    copied = [(k, v) for k, v in meta.items() if k not in _OWN_META]
    copied += [("row_key", new_key), ("rebuilt_from", f"{src}: {len(keep)} rows kept, {len(left_out)} left out, "
                                                      f"at {time.time()!r}")]
    store = EvaluationStore(dst)
    try:
        with store.transaction("could not write the rebuilt store") as conn:
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", copied)
            for row in keep:  # new ids, in the same order; each digested under the new key
                insert_row(conn, bytes.fromhex(new_key), row[1:9])
    except BaseException:
        store.close()
        for leftover in (dst, dst + "-wal", dst + "-shm"):  # a store with no rows, created here
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)
        raise
    store.close()
    for line in left_out:
        logger.warning("rebuilding evaluation store %s into %s: left out %s", src, dst, line)
    return RebuildReport(dst, len(keep), left_out)


__all__ = ["RebuildReport", "rebuild_store"]
