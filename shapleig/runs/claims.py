"""The claims protocol of the evaluation store: who is evaluating which coalition right now.

Before a process evaluates a coalition it claims it (table ``claims``), in the same transaction
that checks the log; another process needing it waits for its value instead of paying for it
again. A claim of a dead process on this host, or one not refreshed for ``lease_seconds``, is
taken over; the owner refreshes its claims from a background thread every ``lease_seconds / 4``,
and only within each claim's hold, so a process stuck in one evaluation does not hold it for ever.
:class:`ClaimsProtocol` is a base of :class:`~shapleig.runs.store.EvaluationStore`, which provides
the connection, the lock and the log lookups it uses.
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

import numpy as np

from shapleig.errors import StoreBusyError, StoreError
from shapleig.games.coalitions import as_coalition_matrix, format_coalition

logger = logging.getLogger("shapleig.runs.store")


def encode_coalition(row: np.ndarray) -> str:
    """``bool[p]`` -> the ``'0'``/``'1'`` text of the store's ``coalition`` column."""
    return "".join("1" if b else "0" for b in row)


def decode_coalition(text: str) -> np.ndarray:
    """The store's ``coalition`` text -> ``bool[p]``."""
    return np.frombuffer(text.encode("ascii"), dtype=np.uint8) == ord("1")


_HOST = socket.gethostname()
_OWNERS: dict[int, str] = {}


def claim_owner() -> str:
    """This process's claim token: host, pid and a random part (pids repeat across containers)."""
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


class ClaimsProtocol:
    """Claim, wait for, release and keep alive the coalitions this process evaluates.

    Uses the store's ``conn``, ``_lock``, ``_stored``, ``_require_bound``, ``_explain``, ``path``,
    ``wait``, ``lease_seconds``, ``max_claim_seconds`` and the per-object state ``_claimed``,
    ``_heartbeat`` and ``_stop`` set up by the store's constructor.
    """

    def _claim_is_live(self, owner: str, host: str, pid: int, heartbeat: float, now: float) -> bool:
        if owner == claim_owner():
            return False  # ours (e.g. left over by an interrupted call): take it again
        if host == _HOST and (pid == os.getpid() or not _pid_alive(pid)):
            return False  # its process is gone (our pid now means that process died)
        return now - heartbeat <= self.lease_seconds

    def claim(self, coalitions: np.ndarray, hold_for: float | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Look ``coalitions`` (``bool[m, p]``) up and claim the missing ones, in one transaction.

        ``hold_for``: seconds for which the heartbeat keeps the new claims alive (e.g. the
        evaluation timeout times the attempts); after that (capped by ``max_claim_seconds``) they
        are no longer refreshed, so other processes take them over ``lease_seconds`` later even if
        this process hangs.

        Returns ``(found, values, mine, busy)`` (``bool[m]``, ``float64[m]``, ``bool[m]``,
        ``bool[m]``): stored values; coalitions this process now owns and must evaluate (and then
        :meth:`append`); coalitions another live process is evaluating. With ``wait=False`` a
        busy coalition raises :class:`StoreBusyError` instead.
        """
        fingerprint, p = self._require_bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        mine_codes: set[str] = set()
        busy_codes: dict[str, tuple] = {}
        hold = min(x for x in (hold_for, self.max_claim_seconds, float("inf")) if x is not None)
        hold = None if hold == float("inf") else hold
        with self._lock:
            try:
                with self.conn:
                    self.conn.execute("BEGIN IMMEDIATE")
                    stored = self._stored(fingerprint, codes)
                    now = time.time()
                    for code in dict.fromkeys(c for c in codes if c not in stored):
                        row = self.conn.execute(
                            "SELECT owner, host, pid, heartbeat FROM claims WHERE coalition = ?", (code,)
                        ).fetchone()
                        if row is not None and self._claim_is_live(*row, now):
                            busy_codes[code] = row
                            continue
                        self.conn.execute(
                            "INSERT OR REPLACE INTO claims (coalition, owner, host, pid, heartbeat) "
                            "VALUES (?, ?, ?, ?, ?)", (code, claim_owner(), _HOST, os.getpid(), now))
                        mine_codes.add(code)
                    if busy_codes and not self.wait:
                        raise StoreBusyError(self._busy_message(busy_codes))
            except sqlite3.Error as exc:
                raise StoreError(self._explain(exc, "could not record which coalitions this run evaluates")) from exc
            until = now + hold if hold is not None else float("inf")
            self._claimed.update(dict.fromkeys(mine_codes, until))
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
        return (f"evaluation store {self.path}: coalition {format_coalition(decode_coalition(code))}{more} is being "
                f"evaluated by process {pid} on host {host} (alive {time.time() - heartbeat:.0f} s ago)")

    def wait_for_others(self, coalitions: np.ndarray, poll: float = 0.05, max_poll: float = 1.0) -> None:
        """Sleep until at least one of ``coalitions`` is stored or no longer claimed by a live process."""
        fingerprint, p = self._require_bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        while True:
            time.sleep(poll)
            poll = min(2 * poll, max_poll)
            with self._lock:
                if self._stored(fingerprint, codes):
                    return
                now = time.time()
                for code in codes:
                    row = self.conn.execute(
                        "SELECT owner, host, pid, heartbeat FROM claims WHERE coalition = ?", (code,)).fetchone()
                    if row is None or not self._claim_is_live(*row, now):
                        return

    def release(self, coalitions: np.ndarray) -> None:
        """Drop this process's claims on ``coalitions`` (after a failure: others may evaluate them)."""
        _, p = self._require_bound()
        codes = [encode_coalition(row) for row in as_coalition_matrix(coalitions, p)]
        codes = [c for c in codes if c in self._claimed]
        if not codes or self._conn is None:
            return
        with self._lock:
            try:
                with self.conn:
                    self.conn.execute("BEGIN IMMEDIATE")
                    self.conn.executemany("DELETE FROM claims WHERE coalition = ? AND owner = ?",
                                          [(c, claim_owner()) for c in codes])
            except sqlite3.Error:
                logger.warning("evaluation store %s: could not release claims (they expire)", self.path)
            for c in codes:
                self._claimed.pop(c, None)
            self._claims_done()

    def _start_heartbeat(self) -> None:
        with self._lock:
            if self._heartbeat is not None and self._heartbeat.is_alive():
                return
            interval = self.lease_seconds / 4
            self._heartbeat = threading.Thread(target=ClaimsProtocol._beat, args=(weakref.ref(self), self._stop, interval),
                                               name="shapleig-store-heartbeat", daemon=True)
            self._heartbeat.start()

    def _claims_done(self) -> None:
        """Called (under the lock) when this object holds no more claims: end the heartbeat."""
        if not self._claimed:
            self._stop.set()

    @staticmethod
    def _beat(ref: "weakref.ref[ClaimsProtocol]", stop: threading.Event, interval: float) -> None:
        """Refresh this process's claims while it holds any, so others know it is alive. Ends when
        it holds none (the next claim starts a new thread) or the store is gone; it keeps only a
        weak reference, so an unused store is still closed by garbage collection."""
        while True:
            stop.wait(interval)
            store = ref()
            if store is None:
                return
            with store._lock:
                stop.clear()
                if store._conn is None or not store._claimed:
                    store._heartbeat = None
                    return
                now = time.time()
                # only claims still within their hold: a hung evaluation's claim is not kept alive
                live = [code for code, until in store._claimed.items() if now <= until]
                try:
                    with store._conn:
                        store._conn.execute("BEGIN IMMEDIATE")
                        store._conn.executemany("UPDATE claims SET heartbeat = ? WHERE owner = ? AND coalition = ?",
                                                [(now, claim_owner(), code) for code in live])
                except sqlite3.Error as exc:  # the run itself reports write problems
                    logger.warning("evaluation store %s: heartbeat failed: %s", store.path, exc)
            del store
