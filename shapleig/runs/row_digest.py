"""Per-row digests of the SQLite evaluation store: an edited, copied or moved row is refused when read.

Each store has its own random key (``meta`` row ``row_key``, 32 bytes as hex), created with the
game's identity when the store is bound. Each row of ``evaluations`` carries ``digest``: a 16-byte
keyed BLAKE2b (``hashlib.blake2b(key=...)``, BLAKE2's own MAC mode) under that key of every column
of the row, the row's ``id`` and the game's fingerprint included, each value encoded with its type
(a REAL value as its exact float64 bytes).
A row changed by any means (``UPDATE ... SET value = value + 1``; ``SET value = '1.5'``, which SQLite
stores as REAL 1.5; a row copied from another store, or moved to another ``id``) no longer matches
its digest, and the store refuses to serve it.

What it does not protect against: the key lives in the store file, so anyone who reads this module
and the file can compute valid digests for values of their choice. It catches accidental and naive
edits (a user's ``UPDATE``, a script or tool that rewrites values without knowing the scheme), not
a deliberate forgery. docs/integrity.md section 2.1 says more.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import struct
from typing import Any, Sequence

# every column of ``evaluations`` in the order they are digested (the digest itself last)
ROW_COLUMNS = ("id", "fingerprint", "coalition", "value", "seconds", "time", "status", "attempt", "error")
SELECT_ROW = ", ".join(ROW_COLUMNS) + ", digest"
DIGEST_BYTES = 16  # 128 bits
KEY_BYTES = 32
_PERSON = b"shapleig-row-v1"  # BLAKE2's personalisation: these digests mean nothing elsewhere
_DOUBLE = struct.Struct(">d").pack
_INT64 = struct.Struct(">q").pack
_KEY_TEXT = re.compile(f"[0-9a-f]{{{2 * KEY_BYTES}}}")


def new_row_key() -> str:
    """A fresh random key for one store, as the hex text stored in its ``meta`` table.

    Returns:
        ``2 * KEY_BYTES`` hex digits from the operating system's random source.
    """
    return secrets.token_hex(KEY_BYTES)


def parse_row_key(text: Any) -> bytes | None:
    """The key held in ``meta`` as bytes, or None when ``text`` is not ``2 * KEY_BYTES`` hex digits.

    Args:
        text: the ``row_key`` value of the ``meta`` table.

    Returns:
        the key, or None if ``text`` is not a key.
    """
    if not (isinstance(text, str) and _KEY_TEXT.fullmatch(text)):
        return None
    return bytes.fromhex(text)


def _encode(value: Any) -> bytes:
    """One column's value with its type and length, so that no two different rows encode the same way."""
    kind = type(value)  # exact types first: what SQLite returns and append writes
    if kind is float:  # + 0.0: SQLite reads a stored -0.0 back as 0.0
        return b"f" + _DOUBLE(value + 0.0)
    if kind is str:
        raw = value.encode("utf-8", "surrogatepass")
        return b"s%d:" % len(raw) + raw
    if kind is int:
        return b"i" + _INT64(value)
    if value is None:
        return b"n"
    if isinstance(value, (float, int, str)):  # a subclass (bool, a str subclass) is digested as SQLite stores it
        return _encode(float(value) if isinstance(value, float) else int(value) if isinstance(value, int) else
                       str(value))
    raw = bytes(value)
    return b"b%d:" % len(raw) + raw


def row_digest(key: bytes, row: Sequence[Any]) -> bytes:
    """The digest of one row of ``evaluations`` (its columns in :data:`ROW_COLUMNS` order).

    Args:
        key: the store's key (:func:`parse_row_key`).
        row: the values of :data:`ROW_COLUMNS`, as written (or as SQLite returns them).

    Returns:
        :data:`DIGEST_BYTES` bytes.
    """
    message = b"".join([_encode(v) for v in row])
    return hashlib.blake2b(message, key=key, digest_size=DIGEST_BYTES, person=_PERSON).digest()


def row_matches(key: bytes | None, row: Sequence[Any]) -> bool:
    """Whether a row read with :data:`SELECT_ROW` (columns, then its digest) matches its digest.

    Args:
        key: the store's key (None: the store has none, so no row can match).
        row: the row's columns in :data:`ROW_COLUMNS` order followed by its ``digest``.

    Returns:
        True when the digest is the one computed from the columns under ``key``.
    """
    stored = row[len(ROW_COLUMNS)]
    if key is None or not isinstance(stored, bytes):
        return False
    return hmac.compare_digest(stored, row_digest(key, row[: len(ROW_COLUMNS)]))


def next_row_id(conn: sqlite3.Connection) -> int:
    """The ``id`` SQLite's AUTOINCREMENT would give the next row (call inside the write transaction).

    Args:
        conn: a connection inside ``BEGIN IMMEDIATE`` (no other process can insert meanwhile).

    Returns:
        one more than the largest ``id`` ever used in ``evaluations``.
    """
    row = conn.execute("SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'evaluations'), 0), "
                       "COALESCE((SELECT MAX(id) FROM evaluations), 0)) + 1").fetchone()
    return int(row[0])


def insert_row(conn: sqlite3.Connection, key: bytes, row: Sequence[Any]) -> None:
    """Insert one row of ``evaluations`` with its digest (inside the caller's write transaction).

    The ``id`` is part of what is digested, so it is chosen here (:func:`next_row_id`) rather than
    by SQLite after the insert; both happen in the caller's ``BEGIN IMMEDIATE`` transaction, so
    another process cannot take the same ``id``.

    Args:
        conn: a connection inside ``BEGIN IMMEDIATE``.
        key: the store's key.
        row: the values of :data:`ROW_COLUMNS` except ``id`` (fingerprint, coalition, value,
            seconds, time, status, attempt, error).
    """
    full = (next_row_id(conn), *row)
    conn.execute(f"INSERT INTO evaluations ({', '.join(ROW_COLUMNS)}, digest) VALUES "
                 f"({', '.join('?' * (len(ROW_COLUMNS) + 1))})", (*full, row_digest(key, full)))


def rows_missing(conn: sqlite3.Connection) -> int:
    """How many ``id`` values SQLite handed out in ``evaluations`` are no longer there (deleted rows).

    Ids are handed out one after another (AUTOINCREMENT, and a rolled-back insert hands none out), so
    the largest id ever used (``sqlite_sequence``) minus the number of rows counts deletions, the last
    rows included.

    Args:
        conn: a connection to the store.

    Returns:
        the number of rows deleted (0 for an untouched store).
    """
    row = conn.execute("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'evaluations'), 0), "
                       "(SELECT COUNT(*) FROM evaluations)").fetchone()
    return int(row[0]) - int(row[1])


__all__ = ["DIGEST_BYTES", "ROW_COLUMNS", "SELECT_ROW", "insert_row", "new_row_key", "next_row_id", "parse_row_key",
           "row_digest", "row_matches", "rows_missing"]
