"""Evaluation timeouts: a hung game call is abandoned, reported, and never blocks a shared store.

The hanging games here really hang (an endless sleep loop in the evaluating process); the worker
process running them is killed when the timeout passes. With a store, the hung coalition's claim
is released, so another process sharing the store takes it over well within the lease; claims
cover only the coalitions whose evaluation started, and the heartbeat stops refreshing a claim
once its hold runs out, so even a process stuck without a timeout loses it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame, ShaplEIG
from shapleig.errors import EvaluationFailedError
from shapleig.runs.claims import _pid_alive
from shapleig.runs.evaluators import ExecutorEvaluator, SerialEvaluator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _games_for_parallel import HangingGame, QuadraticGame  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
P = 4
ROWS = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]], dtype=bool)
HUNG = "1100"


def _hangs_on_pair(Z):
    for row in Z:
        if row[0] and row[1] and not row[2]:
            while True:
                time.sleep(0.05)
    return np.asarray(Z, float).sum(axis=1)


def _within(seconds: float, call) -> Any:
    """``call()`` in a thread; fail (instead of hanging the suite) if it has not returned in time."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("chunk_size", [1, pytest.param(None, marks=pytest.mark.slow)])
def test_a_hung_call_is_killed_retried_and_reported(chunk_size, tmp_path):
    evaluator = SerialEvaluator(chunk_size=chunk_size, timeout=0.5)
    bg = BudgetedGame(FunctionGame(_hangs_on_pair, P), 8, evaluator=evaluator, max_retries=1,
                      store=tmp_path / "s.sqlite")
    with pytest.raises(EvaluationFailedError, match=r"coalition \{0, 1\} failed in 2 attempts.*timed out after "
                                                    r"0\.5 s \(the evaluation was abandoned and its worker process"):
        _within(15, lambda: bg(ROWS))  # a hang guard; the message says the call was cut short
    # the value before the hung coalition was stored; the hung one twice as an error (the run
    # stops at the final failure, as for any failure)
    rows = EvaluationStore(tmp_path / "s.sqlite").records()
    assert sorted((r.status, "".join("1" if b else "0" for b in r.coalition)) for r in rows) == [
        ("error", "1100"), ("error", "1100"), ("ok", "1000")]
    assert _claims(tmp_path / "s.sqlite") == []  # its claim was released
    pid = int(rows[-1].error.split("worker process ")[1].split()[0]) if "worker process" in (rows[-1].error or "") else None
    assert pid is None or not _pid_alive(pid)  # the worker that hung is gone


def test_the_timeout_is_validated_before_anything_runs():
    for bad in (0, -1, float("nan"), "2", True):
        with pytest.raises(ValueError, match="timeout must be"):
            SerialEvaluator(timeout=bad)
        with pytest.raises(ValueError, match="timeout must be"):
            ShaplEIG().estimate(QuadraticGame(P), 8, timeout=bad)


def test_estimate_with_a_timeout_reports_the_hung_coalition():
    with pytest.raises(EvaluationFailedError, match=r"timed out after 0\.5 s"):
        ShaplEIG(refit="never").estimate(FunctionGame(_hangs_on_pair, P), 10, seed=0, timeout=0.5, max_retries=0)


def test_executor_evaluator_abandons_a_task_running_too_long():
    release, finished = threading.Event(), threading.Event()

    def slow_on_pair(Z):
        if Z[0, 0] and Z[0, 1]:
            release.wait(60)  # runs until the test lets it go
            finished.set()
        return np.asarray(Z, float).sum(axis=1)

    with ThreadPoolExecutor(2) as ex:
        try:
            with pytest.raises(EvaluationFailedError, match=r"\{0, 1\} failed in 1 attempt.*timed out after 0\.2 s"):
                BudgetedGame(FunctionGame(slow_on_pair, P), 8, evaluator=ExecutorEvaluator(ex, timeout=0.2),
                             max_retries=0)(ROWS)
            assert not finished.is_set()  # the run gave up on the call, it did not wait for it
        finally:
            release.set()


_SCRIPT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from _games_for_parallel import HangingGame
    from shapleig import BudgetedGame, EvaluationStore
    from shapleig.runs.evaluators import SerialEvaluator
    game = HangingGame(4, hang=[sys.argv[3]], started_file=sys.argv[4])
    timeout = float(sys.argv[5]) if sys.argv[5] != "none" else None
    store = EvaluationStore(sys.argv[2], lease_seconds=float(sys.argv[6]),
                            max_claim_seconds=float(sys.argv[7]) if sys.argv[7] != "none" else None)
    rows = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], dtype=bool)
    try:
        BudgetedGame(game, 8, store=store, evaluator=SerialEvaluator(chunk_size=1, timeout=timeout),
                     max_retries=0)(rows)
    except Exception as exc:
        print("FAILED", type(exc).__name__, exc, flush=True)
    else:
        print("DONE", flush=True)
""")


def _start_hanging_process(tmp_path: Path, timeout: str, lease: float, max_claim: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHAPLEIG_TEST_HANG": "1"}
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(ROOT / "tests"), str(tmp_path / "s.sqlite"), HUNG,
                             str(tmp_path / "started"), timeout, str(lease), max_claim],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the hanging process never started its evaluation"
        time.sleep(0.05)
    return proc


def _claims(path: Path) -> list[str]:
    import sqlite3

    con = sqlite3.connect(path)
    try:
        return [r[0] for r in con.execute("SELECT coalition FROM claims")]
    finally:
        con.close()


def test_a_second_process_takes_over_a_coalition_whose_evaluation_hung(tmp_path):
    """Process A hangs on 1100 with timeout 1 s; it claimed only the coalition it started. This
    process (B) needs the same coalitions: it evaluates the unclaimed ones at once, waits for
    1100 while A holds it, and evaluates it itself once A abandons it, well within the lease."""
    lease = 3600.0  # never expires here: the hand-over can only come from A's timeout
    proc = _start_hanging_process(tmp_path, timeout="1", lease=lease, max_claim="none")
    try:
        assert _claims(tmp_path / "s.sqlite") == [HUNG]  # only started work is claimed
        game = HangingGame(P, hang=[HUNG], started_file=str(tmp_path / "unused"))
        bg = BudgetedGame(game, 8, store=EvaluationStore(tmp_path / "s.sqlite", lease_seconds=lease))
        values = _within(60, lambda: bg(np.array([[0, 0, 1, 1], [1, 1, 0, 0]], dtype=bool)))  # a hang guard
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    np.testing.assert_allclose(values, QuadraticGame(P).values(np.array([[0, 0, 1, 1], [1, 1, 0, 0]], dtype=bool)))
    assert "FAILED EvaluationFailedError" in out and "timed out after 1 s" in out, (out, err)
    assert bg.accounting()["n_waited"] == 1


def test_the_heartbeat_stops_holding_a_claim_of_a_process_stuck_without_timeout(tmp_path):
    """A stuck process (no timeout, so nothing kills its call) keeps running its heartbeat; with
    ``max_claim_seconds`` the heartbeat stops refreshing the claim, and after the lease another
    process takes the coalition over."""
    proc = _start_hanging_process(tmp_path, timeout="none", lease=1.0, max_claim="1")
    try:
        game = HangingGame(P, hang=[HUNG], started_file=str(tmp_path / "unused"))
        bg = BudgetedGame(game, 8, store=EvaluationStore(tmp_path / "s.sqlite", lease_seconds=1.0))
        _within(15, lambda: bg(np.array([[1, 1, 0, 0]], dtype=bool)))  # a hang guard
        assert proc.poll() is None  # A is still stuck in its call: B did not wait for it to die
    finally:
        proc.kill()
        proc.communicate()
    assert bg.accounting()["n_game_evaluations"] == 1


def test_a_hung_worker_dies_with_its_parent(tmp_path):
    """A parent killed with SIGKILL cannot kill its worker: the kernel does (PR_SET_PDEATHSIG), so
    no hung evaluation outlives the run that started it."""
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signal is Linux only")
    proc = _start_hanging_process(tmp_path, timeout="60", lease=30.0, max_claim="none")
    worker = int((tmp_path / "started").read_text())  # written by the game, inside the worker
    assert worker != proc.pid and _pid_alive(worker)
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 10
    while _pid_alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _pid_alive(worker)
