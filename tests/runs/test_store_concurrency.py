"""Two processes on one evaluation store: no corruption, no coalition paid twice.

A resumed run started twice by mistake (two real processes, same store, same seed): every
coalition is evaluated by exactly one of them, the other waits for its value, and both end with
the estimate of an uninterrupted run. A claim held by a live process is reported (``wait=False``)
or waited for; a claim of a dead or silent process is taken over.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, ShaplEIG
from shapleig.errors import StoreBusyError
from shapleig.games.coalitions import all_coalitions

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from _games_for_parallel import QuadraticGame, read_log  # noqa: E402

P, BUDGET, SEED = 5, 14, 1

RUN = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, {tests!r})
    from _games_for_parallel import QuadraticGame
    from shapleig import ShaplEIG
    import shapleig.design.estimators  # the heavy imports first, then start together
    open({ready!r} + str(os.getpid()), "w").close()
    while not os.path.exists({go!r}):
        time.sleep(0.01)
    game = QuadraticGame({p}, seed=7, sleep=0.05, log_path={log!r})
    est = ShaplEIG(refit="never").estimate(game, {budget}, seed={seed}, store={store!r})
    print(json.dumps({{"values": est.values.tolist(), "game": est.info["n_game_evaluations"],
                      "waited": est.info["n_waited"], "evaluations": est.evaluations}}))
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def test_two_processes_on_one_store_pay_each_coalition_once(tmp_path):
    log, store = str(tmp_path / "calls.log"), str(tmp_path / "runs.sqlite")
    # a first run stored the initial design before it was stopped: both processes resume from it
    game = QuadraticGame(P, seed=7, log_path=log)
    est = ShaplEIG(refit="never")
    BudgetedGame(game, BUDGET, store=store)(all_coalitions(P)[[0, 31]])
    ready, go = str(tmp_path / "ready-"), str(tmp_path / "go")
    code = RUN.format(tests=str(TESTS), p=P, log=log, budget=BUDGET, seed=SEED, store=store, ready=ready, go=go)
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < 2:
        assert all(p.poll() is None for p in procs) and time.monotonic() < deadline
        time.sleep(0.02)
    Path(go).touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    calls = read_log(log)
    assert len(calls) == len(set(calls)) == BUDGET  # no coalition evaluated twice, none missing
    assert sum(r["game"] for r in results) == BUDGET - 2  # between them, each paid once
    assert all(r["evaluations"] == BUDGET for r in results)
    assert sum(r["waited"] for r in results) > 0  # they did run at the same time
    reference = est.estimate(QuadraticGame(P, seed=7), BUDGET, seed=SEED)
    for r in results:
        np.testing.assert_array_equal(r["values"], reference.values)
    con = sqlite3.connect(store)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = con.execute("SELECT coalition FROM evaluations WHERE status = 'ok'").fetchall()
    assert len(rows) == len(set(rows)) == BUDGET
    assert con.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0  # every claim released
    con.close()


BLOCK = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from _games_for_parallel import QuadraticGame
    from shapleig import BudgetedGame, EvaluationStore
    from shapleig.games.coalitions import all_coalitions
    game = QuadraticGame({p}, seed=7, log_path={log!r}, stop_after=0, stop_file={stop!r})
    BudgetedGame(game, 8, store=EvaluationStore({store!r}))(all_coalitions({p})[[5]])
    """
)


def test_a_live_claim_is_reported_or_waited_for_and_a_dead_one_taken_over(tmp_path):
    log, stop, store = str(tmp_path / "calls.log"), str(tmp_path / "stop"), str(tmp_path / "s.sqlite")
    BudgetedGame(QuadraticGame(P, seed=7), 8, store=store)  # bind the store
    code = BLOCK.format(tests=str(TESTS), p=P, log=log, stop=stop, store=store)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=_env())
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(stop):  # the other process has claimed coalition 5 and is "evaluating"
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        game = QuadraticGame(P, seed=7, log_path=log)
        impatient = BudgetedGame(game, 8, store=EvaluationStore(store, wait=False))
        with pytest.raises(StoreBusyError, match=rf"coalition {{0, 2}} is being evaluated by process {proc.pid} "
                                                 rf"on host {socket.gethostname()}"):
            impatient(all_coalitions(P)[[5]])
        assert read_log(log) == []  # nothing evaluated here
        patient = BudgetedGame(game, 8, store=EvaluationStore(store))
        os.kill(proc.pid, signal.SIGKILL)  # dies holding the claim
        proc.wait(timeout=30)
        np.testing.assert_array_equal(patient(all_coalitions(P)[[5]]), game.values(all_coalitions(P)[[5]]))
        assert read_log(log) == ["10100"]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_claims_of_other_hosts_expire_after_the_lease(tmp_path):
    """Another host's clock cannot be compared with ours: its claim is taken over once this
    process has seen its heartbeat unchanged for the lease, however old the heartbeat reads."""
    path = tmp_path / "s.sqlite"
    game = QuadraticGame(P, seed=7)
    BudgetedGame(game, 8, store=path)
    con = sqlite3.connect(path)
    now = time.time()
    con.executemany("INSERT INTO claims (coalition, owner, host, pid, heartbeat) VALUES (?, ?, ?, ?, ?)",
                    [("10000", "elsewhere:1:x", "elsewhere", 1, now),
                     ("01000", "elsewhere:1:x", "elsewhere", 1, now - 1000)])
    con.commit()
    store = EvaluationStore(path, lease_seconds=0.4)
    found, _, mine, busy = store.claim(np.eye(P, dtype=bool)[:2])
    assert busy.tolist() == [True, True] and not mine.any() and not found.any()
    time.sleep(0.2)
    con.execute("UPDATE claims SET heartbeat = heartbeat + 1 WHERE coalition = '10000'")  # still alive
    con.commit()
    time.sleep(0.3)  # 0.5 s since first seen: '01000' unchanged for longer than the lease
    found, _, mine, busy = store.claim(np.eye(P, dtype=bool)[:2])
    assert busy.tolist() == [True, False] and mine.tolist() == [False, True] and not found.any()
    con.close()
    store.release(np.eye(P, dtype=bool)[:2])
