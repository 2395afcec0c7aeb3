"""Evaluations in flight (shapleig.runs.in_flight): the replayable order of arrivals and the first
outcome of a coalition.

The evaluator here reports each coalition's outcome as the test scripts it and sets an event once
it has reported, so every test waits for a state, never for a time.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from shapleig import EvaluationStore, FunctionGame
from shapleig.runs.budget import BudgetedGame
from shapleig.runs.evaluators import EvaluationRecord
from shapleig.runs.in_flight import InFlight

P = 4
WEIGHTS = np.array([1.0, 2.0, 4.0, 8.0])  # a coalition's value is its bit code: arrivals are told apart by value
ROWS = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 0, 1, 0], [0, 1, 1, 0]], dtype=bool)


def code_value(Z: np.ndarray) -> np.ndarray:
    return np.asarray(Z, dtype=float) @ WEIGHTS


class ScriptedEvaluator:
    """Evaluates one coalition per call on the calling driver thread and reports its value, then any
    ``extra`` outcomes scripted for it (further values, or an exception raised after reporting).
    ``reported(row)`` is set once the call has reported everything."""

    concurrent = True

    def __init__(self, extra: dict[bytes, list] | None = None) -> None:
        self.extra = extra or {}
        self._events: dict[bytes, threading.Event] = {}
        self._lock = threading.Lock()

    def reported(self, row: np.ndarray) -> threading.Event:
        with self._lock:
            return self._events.setdefault(np.asarray(row, dtype=bool).tobytes(), threading.Event())

    def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
        row = np.asarray(coalitions, dtype=bool)[0]
        value = float(game(coalitions)[0])
        try:
            on_result(EvaluationRecord(0, value, 0.0, "ok", 1))
            for outcome in self.extra.get(row.tobytes(), []):
                if isinstance(outcome, BaseException):
                    raise outcome
                on_result(EvaluationRecord(0, float(outcome), 0.0, "ok", 2))
        finally:
            self.reported(row).set()
        return np.array([value])


def _wait(event: threading.Event) -> None:
    assert event.wait(60), "the evaluator never reported"  # a safety net: the call reports at once


def test_stored_values_come_first_in_store_order_before_new_arrivals(tmp_path):
    """A resumed run consumes what the killed run stored first, in the order it was stored, even when
    a value this run evaluated arrived before those coalitions were asked for."""
    game = FunctionGame(code_value, P)
    path = tmp_path / "s.sqlite"
    BudgetedGame(game, 10, store=EvaluationStore(path))(ROWS[:4])  # stored in the order 0, 1, 2, 3
    evaluator = ScriptedEvaluator()
    budgeted = BudgetedGame(game, 10, store=EvaluationStore(path), evaluator=evaluator)
    with InFlight(budgeted, 4) as flight:
        flight.submit(ROWS[4])  # not stored: evaluated by this run
        _wait(evaluator.reported(ROWS[4]))  # it has arrived before the stored ones are asked for
        flight.submit(ROWS[3])
        flight.submit(ROWS[1])
        got = [flight.next() for _ in range(3)]
    assert [a.source for a in got] == ["store", "store", "game"]
    assert [a.value for a in got] == [2.0, 4.0, 5.0]  # rows 1 and 3 in store order, then row 4
    np.testing.assert_array_equal(np.stack([a.row for a in got]), ROWS[[1, 3, 4]])
    assert budgeted.n_store_hits == 2 and budgeted.n_game_evaluations == 1


def test_only_the_first_outcome_of_a_coalition_counts():
    """An evaluator that reports a coalition twice (a retried task whose first run also finished) or
    fails after reporting its value: the first outcome is the one consumed."""
    twice, then_fails = ROWS[0], ROWS[1]
    evaluator = ScriptedEvaluator({twice.tobytes(): [99.0], then_fails.tobytes(): [RuntimeError("late failure")]})
    budgeted = BudgetedGame(FunctionGame(code_value, P), 10, evaluator=evaluator)
    with InFlight(budgeted, 2) as flight:
        for row in (twice, then_fails):
            flight.submit(row)
            _wait(evaluator.reported(row))  # both outcomes are in before anything is consumed
        got = {a.row.tobytes(): a.value for a in (flight.next(), flight.next())}
        assert flight.n_pending == 0
        with pytest.raises(RuntimeError, match="no coalition in flight"):
            flight.next()
    assert got == {twice.tobytes(): 1.0, then_fails.tobytes(): 2.0}
    assert budgeted.evaluations == 2
