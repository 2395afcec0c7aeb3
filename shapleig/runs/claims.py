"""Claims of the SQLite evaluation store: who is evaluating which coalition right now.

Before a process evaluates a coalition it claims it (table ``claims``), in the same transaction
that checks the log; another process needing it waits for its value instead of paying for it
again. The owner refreshes its claims from a background thread every ``lease_seconds / 4``, and
only within each claim's hold, so a process stuck in one evaluation does not hold it for ever.

A claim is taken over when

- its process is dead (same host: the pid is checked at once), or
- its heartbeat has not changed for ``lease_seconds``. Clocks of different hosts cannot be
  compared (one running an hour ahead would otherwise hold its claims for an hour after dying,
  one running behind would lose them while alive), so the heartbeat is read as a token: this
  process notes, on its own monotonic clock, when it first saw each claim's current heartbeat,
  and takes the claim over once it has seen it unchanged for ``lease_seconds``. On the claim's
  own host, where the clock is the same, a heartbeat older than the lease is stale at once.

:class:`ClaimTable` holds this process's claims of one store and talks to the store only through
the small public interface :class:`ClaimsBackend` (a transaction, a lookup, the bound game),
which :class:`~shapleig.runs.store.EvaluationStore` provides.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from typing import Callable, ContextManager, Protocol

import numpy as np

from shapleig.errors import StoreBusyError, StoreError
from shapleig.games.coalitions import as_coalition_matrix, format_coalition

logger = logging.getLogger("shapleig.runs.store")


def encode_coalition(row: np.ndarray) -> str:
    """``bool[p]`` -> the ``'0'``/``'1'`` text of the store's ``coalition`` column.

    Args:
        row: one coalition, ``bool[p]``.

    Returns:
        ``p`` characters, ``'1'`` for a member.
    """
    return "".join("1" if b else "0" for b in row)


def decode_coalition(text: str) -> np.ndarray:
    """The store's ``coalition`` text -> ``bool[p]``.

    Args:
        text: the column's text, ``p`` characters ``'0'``/``'1'``.

    Returns:
        ``bool[p]``.
    """
    return np.frombuffer(text.encode("ascii"), dtype=np.uint8) == ord("1")


def readable_code(code: object) -> str:
    """A stored coalition code as ``{0, 2}`` for messages, or as stored (``repr``) if it is not a code.

    Args:
        code: the ``coalition`` column of a row, possibly edited into something else.

    Returns:
        the coalition's members, or the ``repr`` of what is stored.
    """
    if isinstance(code, str) and code and set(code) <= {"0", "1"}:
        return format_coalition(decode_coalition(code))
    return repr(code)


_HOST = socket.gethostname()
_OWNERS: dict[int, str] = {}


def claim_owner() -> str:
    """This process's claim token: host, pid and a random part (pids repeat across containers).

    Returns:
        ``"host:pid:random"``, the same for every call in this process.
    """
    pid = os.getpid()
    if pid not in _OWNERS:
        _OWNERS[pid] = f"{_HOST}:{pid}:{uuid.uuid4().hex[:12]}"
    return _OWNERS[pid]


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` on this host is running (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


class ClaimsBackend(Protocol):
    """What :class:`ClaimTable` needs of its store (public methods of ``EvaluationStore``)."""

    path: str

    def transaction(self, doing: str) -> ContextManager[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` under the store's lock, committed on exit.

        :class:`StoreError` (saying what it was ``doing``) when SQLite fails.

        Args:
            doing: what the transaction does, quoted in the error message.

        Returns:
            a context manager yielding the connection.
        """
        ...

    def reading(self) -> ContextManager[sqlite3.Connection]:
        """The connection under the store's lock, outside any transaction.

        Returns:
            a context manager yielding the connection.
        """
        ...

    def stored_values(self, codes: list[str]) -> dict[str, float]:
        """``{code: value}`` of the stored successful evaluations among ``codes``.

        Args:
            codes: coalition codes (:func:`encode_coalition`).

        Returns:
            the stored values by code (codes without a successful evaluation are absent).
        """
        ...

    def bound(self) -> tuple[str, int]:
        """``(fingerprint, n_players)`` of the game the store is bound to.

        Returns:
            the fingerprint of the bound game and its number of players.
        """
        ...

    @property
    def is_open(self) -> bool:
        """Whether the store's connection is open."""
        ...


class ClaimTable:
    """This process's claims on one store: claim, wait for others, release, keep alive.

    Args:
        store: the store (held through a weak reference, so an unused store is still closed by
            garbage collection while a heartbeat runs).
        wait: wait for coalitions other live processes evaluate (True) or raise
            :class:`StoreBusyError` (False).
        lease_seconds: how long a claim's heartbeat may stay unchanged before it is taken over.
        max_claim_seconds: the heartbeat refreshes a claim for at most this long (None: no limit
            beyond the claim's own ``hold_for``).
    """

    clock: Callable[[], float] = staticmethod(time.monotonic)  # this process's clock for leases

    def __init__(self, store: ClaimsBackend, *, wait: bool, lease_seconds: float,
                 max_claim_seconds: float | None):
        self._store = weakref.ref(store)
        self.wait = wait
        self.lease_seconds = lease_seconds
        self.max_claim_seconds = max_claim_seconds
        self._lock = threading.RLock()
        # coalitions this process has claimed and not yet stored -> wall time until which the
        # heartbeat refreshes the claim (inf: as long as this process lives)
        self._claimed: dict[str, float] = {}
        # other processes' claims: code -> (owner, heartbeat, when this process first saw that
        # heartbeat, on its monotonic clock)
        self._seen: dict[str, tuple[str, float, float]] = {}
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    @property
    def store(self) -> ClaimsBackend:
        """The store these claims belong to (``StoreError`` once it was garbage-collected)."""
        store = self._store()
        if store is None:
            raise StoreError("the evaluation store of these claims is gone")
        return store

    @property
    def held(self) -> list[str]:
        """Codes of the coalitions this process holds claims on."""
        with self._lock:
            return list(self._claimed)

    def _is_live(self, code: str, owner: str, host: str, pid: int, heartbeat: float) -> bool:
        """Whether another process's claim on ``code`` still holds (see the module docstring)."""
        if owner == claim_owner():
            return False  # ours (e.g. left over by an interrupted call): take it again
        if host == _HOST:
            if pid == os.getpid() or not _pid_alive(pid):
                return False  # its process is gone (our pid now means that process died)
            if time.time() - heartbeat > self.lease_seconds:
                return False  # same host, same clock: a stale heartbeat shows at once
        now = self.clock()
        with self._lock:
            seen = self._seen.get(code)
            if seen is None or seen[:2] != (owner, heartbeat):
                self._seen[code] = (owner, heartbeat, now)  # refreshed (or new) since we last looked
                return True
        return now - seen[2] <= self.lease_seconds

    def claim(self, coalitions: np.ndarray, hold_for: float | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Look ``coalitions`` up and claim the missing ones (:meth:`shapleig.runs.store_protocol.Store.claim`).

        ``hold_for`` also caps how long the heartbeat refreshes the new claims (with
        ``max_claim_seconds``).

        Args:
            coalitions: ``bool[m, p]``.
            hold_for: seconds the evaluation of the claimed coalitions may take at most (None: unknown).

        Returns:
            ``(found, values, mine, busy)``: ``bool[m]``, ``float64[m]``, ``bool[m]``, ``bool[m]``.
        """
        store = self.store
        _, p = store.bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        mine_codes: set[str] = set()
        busy_codes: dict[str, tuple] = {}
        hold = min(x for x in (hold_for, self.max_claim_seconds, float("inf")) if x is not None)
        # lock order: the store's lock (inside transaction) may be held while taking this table's
        # lock, never the reverse (the store's append calls forget() under its own lock)
        with store.transaction("could not record which coalitions this run evaluates") as conn:
            stored = store.stored_values(codes)
            now = time.time()
            for code in dict.fromkeys(c for c in codes if c not in stored):
                row = conn.execute("SELECT owner, host, pid, heartbeat FROM claims WHERE coalition = ?",
                                   (code,)).fetchone()
                if row is not None and self._is_live(code, *row):
                    busy_codes[code] = row
                    continue
                conn.execute("INSERT OR REPLACE INTO claims (coalition, owner, host, pid, heartbeat) "
                             "VALUES (?, ?, ?, ?, ?)", (code, claim_owner(), _HOST, os.getpid(), now))
                mine_codes.add(code)
            if busy_codes and not self.wait:
                raise StoreBusyError(self._busy_message(busy_codes))  # rolls the transaction back
            with self._lock:
                self._claimed.update(dict.fromkeys(mine_codes, now + hold))
                for code in mine_codes | set(stored):
                    self._seen.pop(code, None)
        if mine_codes:
            self._start_heartbeat()
        found = np.array([c in stored for c in codes], dtype=bool)
        values = np.array([stored.get(c, np.nan) for c in codes], dtype=np.float64)
        mine = np.array([c in mine_codes for c in codes], dtype=bool)
        busy = np.array([c in busy_codes for c in codes], dtype=bool)
        if busy_codes:
            logger.info(self._busy_message(busy_codes) + "; waiting for its values")
        return found, values, mine, busy

    def _busy_message(self, busy: dict[str, tuple]) -> str:
        code, (_, host, pid, heartbeat) = next(iter(busy.items()))
        more = f" (and {len(busy) - 1} more coalitions)" if len(busy) > 1 else ""
        seen = self._seen.get(code)
        age = (f"heartbeat {time.time() - heartbeat:.0f} s ago" if host == _HOST else
               f"heartbeat unchanged for {self.clock() - seen[2]:.0f} s as seen here" if seen else "")
        return (f"evaluation store {self.store.path}: coalition {format_coalition(decode_coalition(code))}{more} is "
                f"being evaluated by process {pid} on host {host}" + (f" ({age})" if age else ""))

    def wait_for_others(self, coalitions: np.ndarray, poll: float = 0.05, max_poll: float = 1.0) -> None:
        """Sleep until at least one of ``coalitions`` is stored or no longer claimed by a live process.

        Args:
            coalitions: ``bool[m, p]``, coalitions reported busy by :meth:`claim`.
            poll: the first wait in seconds (doubled after each look).
            max_poll: the longest wait between two looks, in seconds.
        """
        store = self.store
        _, p = store.bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        while True:
            time.sleep(poll)
            poll = min(2 * poll, max_poll, self.lease_seconds / 4)
            with store.reading() as conn:
                if store.stored_values(codes):
                    return
                for code in codes:
                    row = conn.execute(
                        "SELECT owner, host, pid, heartbeat FROM claims WHERE coalition = ?", (code,)).fetchone()
                    if row is None or not self._is_live(code, *row):
                        return

    def release(self, coalitions: np.ndarray) -> None:
        """Drop this process's claims on ``coalitions`` (after a failure: others may evaluate them).

        Args:
            coalitions: ``bool[m, p]``.
        """
        store = self.store
        _, p = store.bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        with self._lock:
            codes = [c for c in codes if c in self._claimed]
        if not codes or not store.is_open:
            return
        try:
            with store.transaction("could not release claims") as conn:
                conn.executemany("DELETE FROM claims WHERE coalition = ? AND owner = ?",
                                 [(c, claim_owner()) for c in codes])
        except StoreError:
            logger.warning("evaluation store %s: could not release claims (they expire)", store.path)
        self.forget(codes)

    def forget(self, codes: list[str]) -> None:
        """These claims ended (the values were stored, or the claims deleted): stop refreshing them.

        The heartbeat ends with the last one.

        Args:
            codes: coalition codes (:func:`encode_coalition`).
        """
        with self._lock:
            for c in codes:
                self._claimed.pop(c, None)
            if not self._claimed:
                self._stop.set()

    def stop(self) -> None:
        """End the heartbeat (the store is closing)."""
        self._stop.set()

    def _start_heartbeat(self) -> None:
        with self._lock:
            if self._heartbeat is not None and self._heartbeat.is_alive():
                return
            interval = self.lease_seconds / 4
            self._heartbeat = threading.Thread(target=ClaimTable._beat, args=(weakref.ref(self), self._stop, interval),
                                               name="shapleig-store-heartbeat", daemon=True)
            self._heartbeat.start()

    @staticmethod
    def _beat(ref: "weakref.ref[ClaimTable]", stop: threading.Event, interval: float) -> None:
        """Refresh this process's claims while it holds any, so others know it is alive.

        Ends when it holds none (the next claim starts a new thread) or the store is gone; it keeps only a weak
        reference, so an unused store is still closed by garbage collection.
        """
        while True:
            stop.wait(interval)
            table = ref()
            if table is None:
                return
            store = table._store()
            with table._lock:
                stop.clear()
                if store is None or not store.is_open or not table._claimed:
                    table._heartbeat = None
                    return
                now = time.time()
                # only claims still within their hold: a hung evaluation's claim is not kept alive
                live = [code for code, until in table._claimed.items() if now <= until]
            try:  # a claim stored meanwhile has no row left: its update changes nothing
                with store.transaction("heartbeat failed") as conn:
                    conn.executemany("UPDATE claims SET heartbeat = ? WHERE owner = ? AND coalition = ?",
                                     [(now, claim_owner(), code) for code in live])
            except StoreError as exc:  # the run itself reports write problems
                logger.warning("%s", exc)
            except ValueError:  # the store was closed meanwhile: its claims went with it
                return
            del table, store
