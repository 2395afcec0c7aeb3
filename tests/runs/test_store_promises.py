"""Store promises pinned next to the code (issue 27, item 9: each one-line change below passed the
suite, or was caught only by project-level tests):

- ``verify_rtol`` 1e-9 (a value changed in its sixth digit is a changed game);
- ``PRAGMA journal_mode = WAL`` (readers are not blocked by a writer, so waiting processes read);
- the verify sample reads the *first* stored value of each coalition (``MIN(id)``), the one every
  reader is served;
- the claim hold covers every attempt of the chunk: ``timeout * (1 + chunk * attempts) + 1``.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore
from shapleig.errors import StoreError, StoreMismatchError
from shapleig.runs.evaluators import SerialEvaluator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import QuadraticGame  # noqa: E402

P = 5
ROWS = np.tril(np.ones((P, P), dtype=bool))


def _stored_scaling_the_third(path: Path, factor: float) -> None:
    """ROWS stored through the store's API, the third value multiplied by ``factor``: as if the game
    had returned it then (an edit by hand is refused by the row digests before verify runs)."""
    game = QuadraticGame(P, seed=0)
    values = game.values(ROWS)
    with EvaluationStore(path) as store:
        store.bind(game)
        for k, row in enumerate(ROWS):
            store.append(row, float(values[k]) * (factor if k == 2 else 1.0), seconds=0.0)


def test_verify_refuses_a_value_changed_in_its_sixth_significant_digit(tmp_path):
    path = tmp_path / "s.sqlite"
    _stored_scaling_the_third(path, 1 + 1e-6)
    assert EvaluationStore(path).verify_rtol == 1e-9
    with pytest.raises(StoreMismatchError, match=r"1 of 5 re-evaluated coalitions differ"):
        BudgetedGame(QuadraticGame(P, seed=0), 8, store=EvaluationStore(path, verify=True, verify_count=5))
    # a value equal up to rounding (relative 1e-12) is the same game
    _stored_scaling_the_third(tmp_path / "t.sqlite", 1 + 1e-12)
    BudgetedGame(QuadraticGame(P, seed=0), 8, store=EvaluationStore(tmp_path / "t.sqlite", verify=True, verify_count=5))


def test_the_store_is_in_wal_mode_so_a_writer_does_not_block_readers(tmp_path):
    path = tmp_path / "s.sqlite"
    with EvaluationStore(path) as store:
        BudgetedGame(QuadraticGame(P, seed=0), 2**P, store=store)(ROWS[:3])
    store = EvaluationStore(path, timeout=0.2)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writer = sqlite3.connect(path, isolation_level=None, timeout=0.2)
    writer.execute("BEGIN EXCLUSIVE")  # another process writing (in rollback-journal mode: no reader gets in)
    writer.execute("INSERT INTO meta (key, value) VALUES ('note', 'x')")
    try:
        found, values = store.lookup(ROWS[:3])  # would raise "database is locked" without WAL
        assert found.all()
        np.testing.assert_array_equal(values, QuadraticGame(P, seed=0).values(ROWS[:3]))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        store.close()


@pytest.mark.parametrize("wrong", ["first", "second"])
def test_verify_checks_the_value_readers_are_served_the_first_stored(tmp_path, wrong):
    """A coalition stored twice (two processes raced): readers get the first row. verify must
    re-check that one: a doctored first row is caught, a doctored second row (never served) is not
    a reason to refuse the store."""
    path = tmp_path / "s.sqlite"
    game = QuadraticGame(P, seed=0)
    store = EvaluationStore(path)
    store.bind(game)
    truth = float(game.values(ROWS[[2]])[0])
    first, second = (truth + 1.0, truth) if wrong == "first" else (truth, truth + 1.0)
    store.append(ROWS[2], first, seconds=0.0)
    store.append(ROWS[2], second, seconds=0.0)
    assert store.lookup(ROWS[[2]])[1][0] == first  # what readers are served
    store.close()
    verifying = EvaluationStore(path, verify=True, verify_count=3)
    if wrong == "first":
        with pytest.raises(StoreMismatchError, match=rf"stored {truth + 1.0!r}, now {truth!r}"):
            BudgetedGame(game, 8, store=verifying)
    else:
        BudgetedGame(game, 8, store=verifying)  # the served value is right


class _RecordingStore:
    """A one-process store (the Store protocol) that records the ``hold_for`` of each claim."""

    def __init__(self) -> None:
        self.values: dict[bytes, float] = {}
        self.holds: list[float | None] = []

    def bind(self, game: Any, evaluate: Any = None) -> str:
        return "recording"

    def lookup(self, coalitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys = [row.tobytes() for row in np.asarray(coalitions, dtype=bool)]
        found = np.array([k in self.values for k in keys], dtype=bool)
        return found, np.array([self.values.get(k, np.nan) for k in keys])

    def claim(self, coalitions: np.ndarray, hold_for: float | None = None):
        self.holds.append(hold_for)
        found, values = self.lookup(coalitions)
        return found, values, ~found, np.zeros_like(found)

    def wait_for_others(self, coalitions: np.ndarray) -> None:
        pass

    def release(self, coalitions: np.ndarray) -> None:
        pass

    def append(self, coalition, value, *, seconds, status="ok", attempt=1, error=None) -> None:
        if status == "ok":
            self.values.setdefault(np.asarray(coalition, dtype=bool).tobytes(), float(value))

    def close(self) -> None:
        pass


class _InProcessWithTimeout(SerialEvaluator):
    """A serial evaluator that declares a timeout (what the claim hold is computed from) but
    evaluates in this process: the hold is about the declared worst case, not about workers."""

    def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
        return SerialEvaluator(chunk_size=self.chunk_size).evaluate(game, coalitions, max_retries=max_retries,
                                                                    on_result=on_result)


@pytest.mark.parametrize("chunk, retries", [(1, 0), (1, 2), (3, 1)])
def test_the_claim_hold_covers_every_attempt_of_the_chunk(chunk, retries):
    """A chunk whose call fails is split into single calls, each retried: at most
    ``1 + chunk * (retries + 1)`` calls of ``timeout`` seconds each, plus one second of slack."""
    timeout = 2.5
    store = _RecordingStore()
    evaluator = _InProcessWithTimeout(chunk_size=chunk, max_retries=retries, timeout=timeout)
    BudgetedGame(QuadraticGame(P, seed=0), 8, store=store, evaluator=evaluator)(ROWS[:3])
    worst_case = timeout * (1 + chunk * (retries + 1)) + 1.0
    assert store.holds and all(h == worst_case for h in store.holds), (store.holds, worst_case)


def test_without_a_timeout_claims_are_held_while_the_process_lives():
    store = _RecordingStore()
    BudgetedGame(QuadraticGame(P, seed=0), 8, store=store)(ROWS[:3])
    assert store.holds == [None, None, None]


def test_a_store_error_is_not_a_mismatch(tmp_path):
    """Control for the tests above: a damaged file is a StoreError, never taken for another game."""
    bad = tmp_path / "s.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    with pytest.raises(StoreError) as info:
        EvaluationStore(bad)
    assert not isinstance(info.value, StoreMismatchError)
