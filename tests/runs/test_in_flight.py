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
from shapleig.games.coalitions import coalition_keys
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
    ``reported(row)`` is set once the call has reported everything. A coalition in ``fail`` raises
    instead, reporting nothing. With ``gate`` every call first waits for that event; with ``hold``
    it waits after reporting (its driver thread stays busy)."""

    concurrent = True

    def __init__(self, extra: dict[bytes, list] | None = None, fail: tuple[np.ndarray, ...] = (),
                 gate: threading.Event | None = None, hold: threading.Event | None = None) -> None:
        self.extra = extra or {}
        self.fail = {row.tobytes() for row in fail}
        self.gate, self.hold = gate, hold
        self.calls: list[bytes] = []
        self.started = threading.Event()  # set when a call begins
        self._events: dict[bytes, threading.Event] = {}
        self._lock = threading.Lock()

    def reported(self, row: np.ndarray) -> threading.Event:
        with self._lock:
            return self._events.setdefault(np.asarray(row, dtype=bool).tobytes(), threading.Event())

    def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
        row = np.asarray(coalitions, dtype=bool)[0]
        self.calls.append(row.tobytes())
        self.started.set()
        try:
            if self.gate is not None:
                assert self.gate.wait(60), "the test never opened the gate"
            if row.tobytes() in self.fail:
                raise RuntimeError("the game failed")
            value = float(game(coalitions)[0])
            on_result(EvaluationRecord(0, value, 0.0, "ok", 1))
            for outcome in self.extra.get(row.tobytes(), []):
                if isinstance(outcome, BaseException):
                    raise outcome
                on_result(EvaluationRecord(0, float(outcome), 0.0, "ok", 2))
            if self.hold is not None:
                assert self.hold.wait(60), "the test never let the call return"
        finally:
            self.reported(row).set()
        return np.array([value])


class ProtocolStore:
    """An EvaluationStore seen through the Store protocol's seven methods only (no ``records()``),
    recording releases. ``late=True``: ``lookup`` finds nothing, as when another process stores a
    value just after this one looked (``claim`` then finds it)."""

    def __init__(self, inner: EvaluationStore, late: bool = False, busy_once: bool = False) -> None:
        self.inner, self.late, self.released = inner, late, []
        self.busy_once, self.waits = busy_once, 0

    def bind(self, *args, **kwargs):
        return self.inner.bind(*args, **kwargs)

    def lookup(self, coalitions):
        if self.late:
            return np.zeros(len(coalitions), dtype=bool), np.full(len(coalitions), np.nan)
        return self.inner.lookup(coalitions)

    def claim(self, coalitions, hold_for=None):
        if self.busy_once:  # another live process holds the claim: busy, the first time
            self.busy_once = False
            m = len(coalitions)
            return np.zeros(m, dtype=bool), np.full(m, np.nan), np.zeros(m, dtype=bool), np.ones(m, dtype=bool)
        return self.inner.claim(coalitions, hold_for)

    def wait_for_others(self, coalitions):
        self.waits += 1
        return self.inner.wait_for_others(coalitions)

    def release(self, coalitions):
        self.released.append(np.array(coalitions, dtype=bool))
        return self.inner.release(coalitions)

    def append(self, *args, **kwargs):
        return self.inner.append(*args, **kwargs)

    def close(self):
        return self.inner.close()


def _stored(tmp_path, rows: np.ndarray) -> tuple[FunctionGame, EvaluationStore]:
    """The game and a store holding ``rows``' values, appended in row order."""
    game = FunctionGame(code_value, P)
    store = EvaluationStore(tmp_path / "s.sqlite")
    BudgetedGame(game, 10, store=store)(rows)
    return game, store


def _wait(event: threading.Event) -> None:
    assert event.wait(60), "the evaluator never reported"  # a safety net: the call reports at once


def _wait_arrived(flight: InFlight, row: np.ndarray) -> None:
    """Until the flight has registered ``row``'s outcome (a value or a failure)."""
    key = coalition_keys(row[None])[0]
    with flight._cond:
        assert flight._cond.wait_for(lambda: key in flight._arrived_keys, timeout=60), "never arrived"


def test_stored_values_come_first_in_store_order_before_new_arrivals(tmp_path):
    """A resumed run consumes what the killed run stored first, in the order it was stored, even when
    a value this run evaluated arrived before those coalitions were asked for."""
    game = FunctionGame(code_value, P)
    path = tmp_path / "s.sqlite"
    BudgetedGame(game, 10, store=EvaluationStore(path))(ROWS[:4])  # stored in the order 0, 1, 2, 3
    evaluator = ScriptedEvaluator()
    budgeted = BudgetedGame(game, 10, store=EvaluationStore(path), evaluator=evaluator)
    with InFlight(budgeted, 4) as flight:
        assert flight.pending_rows().shape == (0, P)
        flight.submit(ROWS[4])  # not stored: evaluated by this run
        _wait(evaluator.reported(ROWS[4]))  # it has arrived before the stored ones are asked for
        flight.submit(ROWS[3])
        flight.submit(ROWS[1])
        np.testing.assert_array_equal(flight.pending_rows(), ROWS[[4, 3, 1]])  # in submission order
        got = [flight.next() for _ in range(3)]
    assert [a.source for a in got] == ["store", "store", "game"]
    assert [a.value for a in got] == [2.0, 4.0, 5.0]  # rows 1 and 3 in store order, then row 4
    np.testing.assert_array_equal(np.stack([a.row for a in got]), ROWS[[1, 3, 4]])
    assert budgeted.n_store_hits == 2 and budgeted.n_game_evaluations == 1 and budgeted.n_waited == 0
    with pytest.raises(AttributeError):
        got[0].value = 0.0  # an arrival is a record: frozen


def test_the_store_order_counts_successful_records_only(tmp_path):
    """A coalition whose first attempt failed is ordered by its successful record."""
    game = FunctionGame(code_value, P)
    store = EvaluationStore(tmp_path / "s.sqlite")
    store.bind(game)
    store.append(ROWS[2], None, seconds=0.0, status="error", error="RuntimeError: once")
    store.append(ROWS[1], 2.0, seconds=0.0)
    store.append(ROWS[2], 3.0, seconds=0.0, attempt=2)
    budgeted = BudgetedGame(game, 10, store=store, evaluator=ScriptedEvaluator())
    with InFlight(budgeted, 2) as flight:
        flight.submit(ROWS[2])
        flight.submit(ROWS[1])
        assert [flight.next().value for _ in range(2)] == [2.0, 3.0]


def test_a_coalition_another_process_is_evaluating_is_waited_for_and_counted(tmp_path):
    game, store = _stored(tmp_path, ROWS[:4])
    wrapped = ProtocolStore(store, late=True, busy_once=True)
    evaluator = ScriptedEvaluator()
    budgeted = BudgetedGame(game, 10, store=wrapped, evaluator=evaluator)
    with InFlight(budgeted, 2) as flight:
        flight.submit(ROWS[2])  # busy elsewhere; stored by then when looked at again
        arrival = flight.next()
    assert (arrival.value, arrival.source, wrapped.waits, evaluator.calls) == (3.0, "store", 1, [])
    assert budgeted.n_waited == 1 and budgeted.n_store_hits == 1


def test_failed_attempts_are_counted_and_only_the_value_is_consumed():
    from shapleig.runs.in_flight import is_concurrent

    class RetriedOnce(ScriptedEvaluator):
        def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
            on_result(EvaluationRecord(0, None, 0.0, "error", 1, "RuntimeError: flaky"))
            return super().evaluate(game, coalitions, max_retries=max_retries, on_result=on_result)

    budgeted = BudgetedGame(FunctionGame(code_value, P), 10, evaluator=RetriedOnce())
    with InFlight(budgeted, 2) as flight:
        flight.submit(ROWS[2])
        assert flight.next().value == 3.0
    assert budgeted.n_failed_attempts == 1 and budgeted.evaluations == 1
    assert is_concurrent(RetriedOnce()) and not is_concurrent(object())  # read from `concurrent`, False if absent


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


def test_a_store_without_records_serves_stored_values_in_the_order_they_were_asked_for(tmp_path):
    """A store implementing only the protocol has no record order: stored values come first, in the
    order they were submitted (with ``records()`` they come in store order)."""
    game, store = _stored(tmp_path, ROWS[:4])
    for wrapped, order in ((ProtocolStore(store), [3.0, 2.0]), (store, [2.0, 3.0])):
        budgeted = BudgetedGame(game, 10, store=wrapped, evaluator=ScriptedEvaluator())
        with InFlight(budgeted, 3) as flight:
            flight.submit(ROWS[2])  # stored third
            flight.submit(ROWS[1])  # stored second
            got = [flight.next() for _ in range(2)]
        assert [a.value for a in got] == order and {a.source for a in got} == {"store"}


def test_a_value_stored_by_another_process_after_the_lookup_is_taken_from_the_store(tmp_path):
    game, store = _stored(tmp_path, ROWS[:4])
    evaluator = ScriptedEvaluator()
    budgeted = BudgetedGame(game, 10, store=ProtocolStore(store, late=True), evaluator=evaluator)
    with InFlight(budgeted, 2) as flight:
        flight.submit(ROWS[2])  # the lookup misses it; the claim finds it stored
        arrival = flight.next()
    assert arrival.value == 3.0 and arrival.source == "store" and evaluator.calls == []
    assert budgeted.n_store_hits == 1 and budgeted.n_game_evaluations == 0
    assert budgeted.n_waited == 0  # stored, not waited for: no other process was evaluating it


def test_a_failed_evaluation_releases_its_claim_and_is_raised(tmp_path):
    game, store = _stored(tmp_path, ROWS[:1])
    wrapped = ProtocolStore(store)
    budgeted = BudgetedGame(game, 10, store=wrapped, evaluator=ScriptedEvaluator(fail=(ROWS[3],)))
    with InFlight(budgeted, 2) as flight:
        flight.submit(ROWS[3])
        with pytest.raises(RuntimeError, match="the game failed"):
            flight.next()
    assert len(wrapped.released) == 1 and np.array_equal(wrapped.released[0], ROWS[3:4])
    assert budgeted.evaluations == 0


def test_slots_and_resubmissions():
    budgeted = BudgetedGame(FunctionGame(code_value, P), 10, evaluator=ScriptedEvaluator())
    with InFlight(budgeted, 1) as flight:  # one slot is a valid flight
        flight.submit(ROWS[0])
        with pytest.raises(ValueError, match="already pending or evaluated"):
            flight.submit(ROWS[0])  # pending
        with pytest.raises(RuntimeError, match="1 coalitions are already in flight"):
            flight.submit(ROWS[1])
        assert flight.next().value == 1.0
        with pytest.raises(ValueError, match="already pending or evaluated"):
            flight.submit(ROWS[0])  # consumed
        flight.submit(ROWS[1])
        assert flight.next().value == 2.0
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="slots must be a positive integer"):
            InFlight(budgeted, bad)


def test_the_budget_counts_what_is_in_flight():
    """A coalition is refused when the values charged plus those in flight would exceed the budget."""
    from shapleig.errors import BudgetExhaustedError

    budgeted = BudgetedGame(FunctionGame(code_value, P), 3, evaluator=ScriptedEvaluator())
    with InFlight(budgeted, 4) as flight:
        flight.submit(ROWS[0])
        flight.next()  # 1 charged
        flight.submit(ROWS[1])
        flight.submit(ROWS[2])  # 1 charged + 2 in flight = the budget
        with pytest.raises(BudgetExhaustedError, match=r"would exceed the budget \(1 used, 2 in flight, budget 3\)"):
            flight.submit(ROWS[3])
        flight.next()
        flight.next()
    assert budgeted.evaluations == 3


def test_close_does_not_wait_for_running_evaluations():
    """Closing stops the driver threads without waiting for the evaluations they wait on (those
    finish in the background)."""
    gate = threading.Event()
    evaluator = ScriptedEvaluator(gate=gate)
    flight = InFlight(BudgetedGame(FunctionGame(code_value, P), 10, evaluator=evaluator), 2)
    flight.submit(ROWS[0])
    _wait(evaluator.started)  # running (a task not yet started would be cancelled)
    closer = threading.Thread(target=flight.close)
    closer.start()
    closer.join(60)  # close returns at once; a close that waited would block until the gate opens
    returned = not closer.is_alive()
    gate.set()
    closer.join()
    assert returned, "close() waited for the running evaluation"
    _wait(evaluator.reported(ROWS[0]))  # the evaluation still finished, in the background


def test_after_a_failure_the_values_in_flight_are_charged_by_their_source(tmp_path):
    """The failure is raised once everything in flight has arrived; those values are charged (they
    were paid for), each counted as a store hit or a game evaluation by where it came from. Only
    the failed coalition's claim is released."""
    game, store = _stored(tmp_path, ROWS[:2])
    wrapped = ProtocolStore(store, late=True)
    budgeted = BudgetedGame(game, 10, store=wrapped, evaluator=ScriptedEvaluator(fail=(ROWS[3],)))
    with InFlight(budgeted, 4) as flight:
        flight.submit(ROWS[3])
        _wait_arrived(flight, ROWS[3])  # the failure comes first
        flight.submit(ROWS[4])  # evaluated by the game
        flight.submit(ROWS[5])  # evaluated by the game
        flight.submit(ROWS[1])  # found by the claim: stored meanwhile
        with pytest.raises(RuntimeError, match="the game failed"):
            flight.next()
        assert flight.n_pending == 0
    assert (budgeted.n_game_evaluations, budgeted.n_store_hits, budgeted.evaluations) == (2, 1, 3)
    assert [r.tolist() for r in wrapped.released] == [ROWS[3:4].tolist()]


def test_close_cancels_evaluations_that_have_not_started():
    """A coalition waiting for a driver thread when the flight is closed is never evaluated."""
    hold = threading.Event()
    evaluator = ScriptedEvaluator(hold=hold)
    flight = InFlight(BudgetedGame(FunctionGame(code_value, P), 10, evaluator=evaluator), 1)
    flight.submit(ROWS[0])
    assert flight.next().value == 1.0  # consumed; its driver thread is still busy in the call
    flight.submit(ROWS[1])  # waits for that thread
    flight.close()
    hold.set()
    flight._threads.shutdown(wait=True)  # every call that was going to run has run
    assert evaluator.calls == [ROWS[0].tobytes()]
