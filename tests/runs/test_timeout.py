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
        _within(30, lambda: bg(ROWS))  # a hang guard; the message says the call was cut short
    # the value before the hung coalition was stored; the hung one twice as an error (the run
    # stops at the final failure, as for any failure)
    rows = EvaluationStore(tmp_path / "s.sqlite").records()
    assert sorted((r.status, "".join("1" if b else "0" for b in r.coalition)) for r in rows) == [
        ("error", "1100"), ("error", "1100"), ("ok", "1000")]
    assert _claims(tmp_path / "s.sqlite") == []  # its claim was released
    pid = int(rows[-1].error.split("worker process ")[1].split()[0]) if "worker process" in (rows[-1].error or "") else None
    assert pid is None or not _pid_alive(pid)  # the worker that hung is gone


def _exits_its_worker(Z):
    os._exit(3)  # the worker process dies mid-call


def test_a_call_reports_the_seconds_it_took(monkeypatch):
    """A call reports the game's time as the worker measured it, a call cut short (timed out, or its
    worker died) the time from its start to the failure: read here on a fake clock (1000 s at the
    start, 0.5 s later at the end), which a forked worker inherits."""
    import types

    import shapleig.runs.timeout as timeout_module
    from shapleig.runs.timeout import WorkerProcess

    for fn, expected in ((_hangs_on_pair, "TimeoutError: timed out after 0.5 s"),
                         (_exits_its_worker, "died (exit code 3) while evaluating")):
        readings = iter([1000.0, 1000.5])
        monkeypatch.setattr(timeout_module, "time", types.SimpleNamespace(perf_counter=lambda: next(readings)))
        worker = WorkerProcess(FunctionGame(fn, P), start_method="fork")
        try:
            values, seconds, error = worker.call(np.array([[1, 1, 0, 0]], dtype=bool), timeout=0.5)
        finally:
            worker.kill()
        assert values is None and expected in error and seconds == 0.5, (seconds, error)
    readings = iter([1000.0, 1000.5])  # read by the forked worker around the game's call
    worker = WorkerProcess(FunctionGame(_hangs_on_pair, P), start_method="fork")
    try:
        values, seconds, error = worker.call(ROWS[[0, 2]], timeout=30)
    finally:
        worker.close()
    assert error is None and values.tolist() == [1.0, 1.0] and seconds == 0.5


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_run_that_exits_without_closing_its_evaluator_ends_its_worker(tmp_path, method):
    """multiprocessing joins a non-daemon child at exit: a worker left running (waiting for the
    next call) would keep the finished run from exiting. The worker is a daemon: the run exits and
    the worker is gone. (A weakref.finalize made before multiprocessing is imported, as tempfile
    makes one, puts multiprocessing's exit handler before the evaluator's own.)"""
    code = textwrap.dedent(f"""
        import sys
        import tempfile
        scratch = tempfile.TemporaryDirectory()
        import numpy as np
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from _models_for_timeouts import PidGame
        from shapleig.runs.evaluators import SerialEvaluator
        evaluator = SerialEvaluator(timeout=60, start_method={method!r})
        evaluator.evaluate(PidGame(4, {str(tmp_path / "pids")!r}), np.eye(4, dtype=bool))
        print("evaluated", flush=True)
    """)
    try:  # the timeout is a hang guard only: the run exits as soon as it has evaluated
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("the run did not exit: a worker it left running held it") from exc
    assert out.returncode == 0 and out.stdout.strip() == "evaluated", out.stderr
    (worker,) = {int(line) for line in (tmp_path / "pids").read_text().split()}
    assert not _pid_alive(worker)


class _CountsLazily:
    """v(S) = |S|; counts its calls in ``calls``, an attribute made by the first call (so the copy in
    this process has none until a count is added to it)."""

    process_counters = ("calls",)

    def __init__(self, n_players: int) -> None:
        self.n_players = n_players

    def __call__(self, Z):
        self.calls = getattr(self, "calls", 0) + 1
        return np.asarray(Z, float).sum(axis=1)


def test_calls_counted_in_the_worker_are_added_to_the_game_here():
    game = _CountsLazily(P)
    evaluator = SerialEvaluator(chunk_size=1, timeout=30, start_method="fork")
    try:
        for row in ROWS:
            evaluator.evaluate(game, row[None, :].copy())
    finally:
        evaluator.close()
    assert game.calls == len(ROWS)


def test_the_timeout_is_validated_before_anything_runs():
    for bad in (0, -1, float("nan"), "2", True):
        with pytest.raises(ValueError, match="timeout must be"):
            SerialEvaluator(timeout=bad)
        with pytest.raises(ValueError, match="timeout must be"):
            ShaplEIG().estimate(QuadraticGame(P), 8, timeout=bad)


def test_only_the_three_supported_start_methods_are_accepted():
    """multiprocessing also offers "forkserver" on Linux, but its workers are children of the fork
    server and outlive a killed parent: refused by name, with the methods that are offered."""
    import multiprocessing as mp

    from shapleig.runs.timeout import check_start_method

    for bad in ("forkserver", "thread", "Fork", ""):
        with pytest.raises(ValueError, match=f"start_method must be one of .*got '{bad}'"):
            check_start_method(bad)
    if "forkserver" in mp.get_all_start_methods():
        with pytest.raises(ValueError, match=r"one of \['subprocess', 'spawn', 'fork'\], got 'forkserver'"):
            SerialEvaluator(timeout=1, start_method="forkserver")
    assert [check_start_method(m) for m in ("subprocess", "spawn", "fork")] == ["subprocess", "spawn", "fork"]
    assert check_start_method(None) == "subprocess"  # the POSIX default


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


# -- timeouts with real models and a persistent worker (issue 27, items 2, 4 and 9) ------------------

from _models_for_timeouts import HangsInWorkers, HangsOnceGame, LockedGame, PidGame  # noqa: E402


def _linear_data(d: int = 4, n: int = 200):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, X @ np.arange(1.0, d + 1) + np.sin(X[:, 0]) + rng.normal(scale=0.1, size=n)


def test_explain_with_a_timeout_gives_the_same_values_on_a_threaded_lightgbm_model():
    """LightGBM predicting with 2 OpenMP threads: a forked worker deadlocked on its first call
    (every evaluation timed out); the worker is now a fresh interpreter. Same values, same model
    calls (counted in the worker, added back to the parent's game)."""
    import shapleig

    lgb = pytest.importorskip("lightgbm")  # here, not at the top: worker processes import this module
    X, y = _linear_data()
    model = lgb.LGBMRegressor(n_estimators=20, num_leaves=7, n_jobs=2, verbose=-1).fit(X, y)
    kw = dict(budget=16, method="exact", progress=False)
    plain = shapleig.explain(model, X[:30], X[150], **kw)
    timed = _within(120, lambda: shapleig.explain(model, X[:30], X[150], timeout=10, **kw))
    np.testing.assert_allclose(timed.values, plain.values, rtol=1e-12, atol=1e-12)
    assert timed.info["model_calls"] == plain.info["model_calls"] > 0


def _torch_explanations(wrapped: bool) -> tuple[Any, Any]:
    """An MLP explained without and with a timeout (torch on 2 intra-op threads in this process);
    ``wrapped``: called through a lambda (sent by value) instead of as a module."""
    torch = pytest.importorskip("torch")
    import shapleig

    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).double()
        X, _ = _linear_data()
        kw = dict(budget=16, method="exact", progress=False)
        plain = shapleig.explain(net, X[:30], X[150], **kw)
        if wrapped:
            kw["predict"] = lambda Z: net(torch.as_tensor(Z)).detach().numpy()
        timed = _within(120, lambda: shapleig.explain(net, X[:30], X[150], timeout=10, **kw))
    finally:
        torch.set_num_threads(old)
    return plain, timed


def test_explain_with_a_timeout_on_a_torch_model():
    plain, timed = _torch_explanations(wrapped=False)
    np.testing.assert_allclose(timed.values, plain.values, rtol=1e-10, atol=1e-12)
    assert timed.info["model_calls"] == plain.info["model_calls"] > 0


@pytest.mark.slow
def test_explain_with_a_timeout_on_a_torch_model_behind_a_lambda():
    plain, timed = _torch_explanations(wrapped=True)
    np.testing.assert_allclose(timed.values, plain.values, rtol=1e-10, atol=1e-12)


def test_the_worker_is_reused_across_evaluations_and_closes_cleanly(tmp_path):
    """One worker serves every timed evaluation of a game (one evaluate() call per coalition, as
    with a store); close() ends it without a kill: the worker holds only its own pipe ends, so it
    sees the parent's stop at once and exits with status 0 (it used to be killed after 2 s)."""
    log = tmp_path / "pids"
    evaluator = SerialEvaluator(chunk_size=1, timeout=30)
    game = PidGame(P, str(log))
    for row in ROWS:
        evaluator.evaluate(game, row[None, :].copy(), max_retries=0)
    pids = set(log.read_text().split())
    assert len(pids) == 1 and int(pids.pop()) != os.getpid()
    worker = evaluator._slot["worker"]
    evaluator.close()
    assert not worker.alive and worker._exitcode(0) == 0  # exited by itself, not SIGKILLed (-9)


def test_a_worker_started_from_a_short_lived_thread_outlives_it(tmp_path):
    """Linux's parent-death signal fires when the *thread* that started the worker ends: workers are
    started from one long-lived launcher thread, so a run in a thread that ends keeps its worker."""
    log = tmp_path / "pids"
    evaluator = SerialEvaluator(chunk_size=1, timeout=30)
    game = PidGame(P, str(log))
    thread = threading.Thread(target=lambda: evaluator.evaluate(game, ROWS[:1].copy(), max_retries=0))
    thread.start()
    thread.join()
    time.sleep(0.5)  # (a worker tied to that thread would have been killed by now)
    try:
        evaluator.evaluate(game, ROWS[1:2].copy(), max_retries=0)
    finally:
        evaluator.close()
    assert len(set(log.read_text().split())) == 1


def test_a_worker_that_timed_out_is_replaced_and_the_retry_succeeds(tmp_path):
    game = HangsOnceGame(P, str(tmp_path / "hung"))
    records = []
    evaluator = SerialEvaluator(chunk_size=1, timeout=1.0)
    try:
        values = _within(60, lambda: evaluator.evaluate(game, ROWS, max_retries=1, on_result=records.append))
    finally:
        evaluator.close()
    np.testing.assert_array_equal(values, ROWS.sum(axis=1))
    assert [(r.status, r.attempt) for r in records] == [("error", 1), ("ok", 2), ("ok", 1), ("ok", 1)]
    assert "timed out after 1 s" in records[0].error
    assert not _pid_alive(int((tmp_path / "hung").read_text()))  # the hung worker was killed


def test_a_game_that_cannot_be_copied_to_a_worker_is_refused_before_any_evaluation(tmp_path):
    from shapleig.errors import GameError

    store = tmp_path / "s.sqlite"
    with pytest.raises(GameError, match=r"cannot be serialised: TypeError: cannot pickle '_thread.lock'.*"
                                        r"start_method='fork'"):
        BudgetedGame(LockedGame(P), 8, store=EvaluationStore(store, game_id="locked-sum"),
                     evaluator=SerialEvaluator(chunk_size=1, timeout=5))(ROWS)
    assert len(EvaluationStore(store)) == 0 and _claims(store) == []  # nothing evaluated, nothing held
    # the documented way out for a fork-safe game: the worker inherits it instead
    evaluator = SerialEvaluator(chunk_size=1, timeout=5, start_method="fork")
    try:
        np.testing.assert_array_equal(evaluator.evaluate(LockedGame(P), ROWS), ROWS.sum(axis=1))
    finally:
        evaluator.close()
    with pytest.raises(ValueError, match="start_method must be one of"):
        SerialEvaluator(timeout=1, start_method="thread")


def test_a_worker_copy_missing_state_changed_at_run_time_is_refused(tmp_path, monkeypatch):
    """A fresh worker imports the game's module from its file: a global the parent changed at run
    time would be evaluated with its old value. The worker's copy is digested and refused naming
    the difference; a forked worker (which inherits the state) evaluates it."""
    import importlib

    from shapleig.errors import GameError

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "runtime_state_game.py").write_text(
        "import numpy as np\nW = 1.0\ndef fn(Z):\n    return np.asarray(Z, float).sum(axis=1) * W\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("runtime_state_game")
    monkeypatch.setattr(mod, "W", 2.0)
    evaluator = SerialEvaluator(timeout=30)
    with pytest.raises(GameError, match=r"copy of the game differs.*global W: 2\.0 vs 1\.0.*start_method='fork'"):
        _within(120, lambda: evaluator.evaluate(FunctionGame(mod.fn, P), ROWS))
    forked = SerialEvaluator(timeout=30, start_method="fork")
    try:
        np.testing.assert_array_equal(forked.evaluate(FunctionGame(mod.fn, P), ROWS), 2.0 * ROWS.sum(axis=1))
    finally:
        forked.close()


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_the_other_start_methods_evaluate_the_same_values(method, tmp_path):
    evaluator = SerialEvaluator(timeout=30, start_method=method)
    try:
        values = _within(120, lambda: evaluator.evaluate(QuadraticGame(P), ROWS))
    finally:
        evaluator.close()
    np.testing.assert_allclose(values, QuadraticGame(P).values(ROWS))


def test_verify_re_evaluates_through_the_timeout(tmp_path, monkeypatch):
    """``EvaluationStore(verify=True)`` re-evaluates stored coalitions when a run resumes: with a
    timeout, in the worker, so a game that now hangs is abandoned instead of hanging the resume."""
    store = tmp_path / "s.sqlite"
    game = HangingGame(P, hang=["1000", "1100", "0010"], started_file=str(tmp_path / "started"))
    BudgetedGame(game, 8, store=store)(ROWS)  # SHAPLEIG_TEST_HANG unset: the values are stored
    monkeypatch.setenv("SHAPLEIG_TEST_HANG", "1")  # now every stored coalition hangs
    with pytest.raises(EvaluationFailedError, match=r"timed out after 0\.5 s"):
        _within(30, lambda: BudgetedGame(game, 8, store=EvaluationStore(store, verify=True),
                                         evaluator=SerialEvaluator(chunk_size=1, timeout=0.5), max_retries=0))


def test_the_explain_command_reports_a_timeout_as_a_failed_run_not_a_usage_error(tmp_path, capsys):
    import joblib
    import pandas as pd

    from shapleig_tasks.cli import main

    X, _ = _linear_data()
    pd.DataFrame(X, columns=list("abcd")).to_csv(tmp_path / "X.csv", index=False)
    joblib.dump(HangsInWorkers([1.0, 2.0, 3.0, 4.0]), tmp_path / "m.joblib")
    code = _within(60, lambda: main(["explain", "--model", str(tmp_path / "m.joblib"), "--data",
                                     str(tmp_path / "X.csv"), "--row", "0", "--budget", "8", "--background", "5",
                                     "--eval-timeout", "0.5"]))
    err = capsys.readouterr().err
    assert code == 1 and "failed" in err and "timed out after 0.5 s" in err and "--eval-timeout" in err, err
    assert len(err.strip().splitlines()) == 1


def test_the_executor_timeout_abandons_a_task_at_the_timeout_not_later():
    """A task sleeping 1.9 s under a 0.5 s timeout is abandoned (a timeout taken as 4x would let
    it finish: the abandonment, not a wall-clock figure, is what is asserted)."""
    def sleeps(Z):
        time.sleep(1.9)
        return np.asarray(Z, float).sum(axis=1)

    with ThreadPoolExecutor(1) as ex:
        with pytest.raises(EvaluationFailedError, match=r"timed out after 0\.5 s"):
            ExecutorEvaluator(ex, timeout=0.5).evaluate(FunctionGame(sleeps, P), ROWS[:1], max_retries=0)


@pytest.mark.parametrize("command", ["explain", "explain-rows"])
def test_the_explain_commands_report_a_timeout_as_a_failed_run(tmp_path, capsys, command):
    """Both explain commands: a timed-out model evaluation is a failed run (exit 1), not a usage error."""
    import joblib
    import pandas as pd

    from shapleig_tasks.cli import main

    X, _ = _linear_data()
    pd.DataFrame(X, columns=list("abcd")).to_csv(tmp_path / "X.csv", index=False)
    joblib.dump(HangsInWorkers([1.0, 2.0, 3.0, 4.0]), tmp_path / "m.joblib")
    where = ["--row", "0"] if command == "explain" else ["--rows", "0", "--quiet"]
    code = _within(60, lambda: main([command, "--model", str(tmp_path / "m.joblib"), "--data", str(tmp_path / "X.csv"),
                                     *where, "--budget", "8", "--background", "5", "--eval-timeout", "0.5",
                                     "--no-exact-if-cheap"]))
    err = capsys.readouterr().err
    assert code == 1 and "timed out after 0.5 s" in err and "--eval-timeout" in err, err
