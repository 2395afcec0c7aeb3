"""The anytime trace in the store (tables trace_runs, trace): est.trace and the store's trace are the
same data for every method, a resumed run continues its run's rows, and an edited, moved or deleted
trace row is refused when read, as evaluation rows are (docs/integrity.md section 2.1)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from shapleig import DesignLoop, EvaluationStore, ExecutorEvaluator, ShaplEIG, registry
from shapleig.errors import StoreError

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from _games_for_parallel import QuadraticGame  # noqa: E402
from _store_sql import run_sql as _sql  # noqa: E402

P, BUDGET, SEED = 6, 16, 3


def _rows(path: Path, table: str = "trace") -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
    finally:
        con.close()


def _same_as_store(est, path: Path) -> None:
    """est.trace (and est.trace_std) entry by entry, exactly, against the store's trace of its run."""
    with EvaluationStore(path) as store:
        stored = store.trace(est.info["trace_run"])
        runs = {r.run: r for r in store.trace_runs()}
    assert len(stored) == len(est.trace) > 0
    for k, (entry, (n, values)) in enumerate(zip(stored, est.trace)):
        assert entry.step == k and entry.evaluations == n
        np.testing.assert_array_equal(entry.values, values)  # exact: floats are written as their repr
    if len(est.trace_std) == len(est.trace):
        for entry, (_, std) in zip(stored, est.trace_std):
            np.testing.assert_array_equal(entry.std, std)
    else:
        assert all(entry.std is None for entry in stored)
    run = runs[est.info["trace_run"]]
    assert run.budget == BUDGET and run.seed == str(SEED) and run.info["n_players"] == P


def _async_shapleig(game, path):
    with ThreadPoolExecutor(3) as pool:
        return ShaplEIG(batch_size=3, pool_size=64).estimate(game, BUDGET, seed=SEED, store=path,
                                                             evaluator=ExecutorEvaluator(pool))


RUNS = {
    "designloop-by-hand": lambda game, path: DesignLoop(game, BUDGET, store=path, seed=SEED, pool_size=64).run(),
    "shapleig": lambda game, path: ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED, store=path),
    "shapleig-async": _async_shapleig,
    "permutation": lambda game, path: registry.get("permutation").build().estimate(game, BUDGET, seed=SEED,
                                                                                    store=path),
    "kernelshap": lambda game, path: registry.get("kernelshap").build().estimate(game, BUDGET, seed=SEED,
                                                                                  store=path),
    "regression-msr": lambda game, path: registry.get("regression-msr").build().estimate(game, BUDGET, seed=SEED,
                                                                                          store=path),
}


@pytest.mark.parametrize("method", sorted(RUNS))
def test_est_trace_and_the_stores_trace_are_the_same_data(tmp_path, method):
    path = tmp_path / "s.sqlite"
    est = RUNS[method](QuadraticGame(P, seed=1), path)
    _same_as_store(est, path)
    if method.startswith(("shapleig", "designloop")):  # the loop records its read-out's diagnostics at every step
        with EvaluationStore(path) as store:
            entries = store.trace(est.info["trace_run"])
        assert all(set(e.diagnostics["kernel_weights"]) for e in entries)
        assert all(e.worker == f"{os.uname().nodename}:{os.getpid()}" for e in entries)
        # a row per step as it ended, with the seconds the game took since the previous step; the final
        # refit's row evaluated nothing (NULL)
        seconds = [r[5] for r in _rows(path)]
        assert len(seconds) == len(est.trace) + 1 and seconds[-1] is None
        assert sum(seconds[:-1]) == pytest.approx(est.info["game_seconds"], rel=1e-9, abs=1e-12)


def test_an_exact_run_records_its_one_entry(tmp_path):
    path = tmp_path / "s.sqlite"
    est = ShaplEIG().estimate(QuadraticGame(4, seed=1), 16, seed=0, store=path)  # 2^4: enumerated
    with EvaluationStore(path) as store:
        (entry,) = store.trace(est.info["trace_run"])
    assert entry.evaluations == 16
    np.testing.assert_array_equal(entry.values, est.values)
    np.testing.assert_allclose(entry.values, QuadraticGame(4, seed=1).shapley_values(), atol=1e-12)


def test_the_final_refit_replaces_the_last_entry_and_a_rerun_writes_nothing(tmp_path):
    path = tmp_path / "s.sqlite"
    game = QuadraticGame(P, seed=1)
    first = ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED, store=path)
    rows = _rows(path)
    steps = [r[2] for r in rows]
    # one row per step, and the last step twice: its read-out as the step ended, then the final refit's
    assert steps == list(range(len(first.trace))) + [len(first.trace) - 1]
    _same_as_store(first, path)
    again = ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED, store=path)
    assert again.info["trace_run"] == first.info["trace_run"] and _rows(path) == rows  # replayed: nothing new
    other = ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED + 1, store=path)
    assert other.info["trace_run"] != first.info["trace_run"]
    with EvaluationStore(path) as store:
        assert [r.run for r in store.trace_runs()] == [first.info["trace_run"], other.info["trace_run"]]


# -- a run killed with SIGKILL and resumed ------------------------------------------------------------
KILLED = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from _games_for_parallel import QuadraticGame
    from shapleig import DesignLoop, EvaluationStore
    game = QuadraticGame({p}, seed=1, log_path={log!r}, stop_after={k}, stop_file={stop!r})
    DesignLoop(game, {budget}, store=EvaluationStore({store!r}), seed={seed}, pool_size=64).run()
    raise SystemExit("the run was not stopped")
    """
)


def _run_and_kill(tmp_path: Path, k: int) -> Path:
    log, stop, store = tmp_path / "calls.log", tmp_path / "stop", tmp_path / "s.sqlite"
    code = KILLED.format(tests=str(TESTS), p=P, log=str(log), k=k, stop=str(stop), budget=BUDGET, store=str(store),
                         seed=SEED)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not stop.exists():  # the game writes it when it reaches the kill point, then blocks
        if proc.poll() is not None:
            raise AssertionError(f"run ended before the kill point:\n{proc.stdout.read().decode()}")
        assert time.monotonic() < deadline, "the run did not reach the kill point"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    return store


def test_a_run_killed_mid_way_and_resumed_continues_its_trace(tmp_path):
    k = 11  # the design (7) and 4 acquisitions stored; the kill falls inside the 5th acquisition
    path = _run_and_kill(tmp_path, k)
    before = _rows(path)
    assert [r[3] for r in before] == [7, 8, 9, 10, 11]  # one entry per step the killed run finished
    with EvaluationStore(path) as store:
        assert store.trace_ends() == {}  # killed: it never returned an estimate
    resumed = ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED, store=path)
    with EvaluationStore(path) as store:
        assert list(store.trace_ends()) == [resumed.info["trace_run"]]
        assert store.trace_ends()[resumed.info["trace_run"]][1] == BUDGET
    after = _rows(path)
    assert after[: len(before)] == before  # the killed run's rows kept as they were (times, worker)
    assert {r[1] for r in after} == {resumed.info["trace_run"]}  # DesignLoop and ShaplEIG: one run
    assert [r[3] for r in after[len(before):]][:2] == [12, 13]  # continued where it stopped, nothing replayed twice
    _same_as_store(resumed, path)
    reference = DesignLoop(QuadraticGame(P, seed=1), BUDGET, seed=SEED, pool_size=64).run()
    assert [n for n, _ in reference.trace] == [n for n, _ in resumed.trace]
    for (_, a), (_, b) in zip(reference.trace, resumed.trace):
        np.testing.assert_array_equal(a, b)


# -- integrity: trace rows are checked as evaluation rows are -----------------------------------------
@pytest.fixture()
def traced(tmp_path) -> tuple[Path, str]:
    path = tmp_path / "s.sqlite"
    est = ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED, store=path)
    return path, est.info["trace_run"]


@pytest.mark.parametrize("edit", [
    "UPDATE trace SET estimate = replace(estimate, '[', '[1') WHERE id = 3",
    "UPDATE trace SET evaluations = evaluations + 1 WHERE id = 3",
    "UPDATE trace SET pending = 1 WHERE id = 3",
    "UPDATE trace SET std = NULL WHERE id = 3",
    "UPDATE trace SET id = 1000 WHERE id = 3",
])
def test_an_edited_trace_row_is_refused_when_read_and_when_a_run_resumes(traced, edit):
    path, run = traced
    _sql(path, edit)
    with EvaluationStore(path) as store, pytest.raises(StoreError, match=r"trace row \d+ .*(digest|deleted)"):
        store.trace(run)
    with pytest.raises(StoreError, match=r"trace row|deleted"):
        ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED, store=path)


def test_a_run_that_stops_short_of_its_budget_records_its_end(tmp_path):
    path = tmp_path / "s.sqlite"
    est = registry.get("permutation").build().estimate(QuadraticGame(P, seed=1), 10, seed=SEED, store=path)
    assert est.evaluations < 10  # whole permutations only
    with EvaluationStore(path) as store:
        assert store.trace_ends()[est.info["trace_run"]][1] == est.evaluations
        store.end_trace_run(est.info["trace_run"], est.evaluations)  # once per evaluation count
    assert len(_rows(path, "trace_ends")) == 1
    _sql(path, "UPDATE trace_ends SET evaluations = 10")
    with EvaluationStore(path) as store, pytest.raises(StoreError, match="trace_ends row 1 .*does not match"):
        store.trace_ends()


def test_a_deleted_trace_row_and_an_edited_run_row_are_refused(traced):
    path, run = traced
    _sql(path, "DELETE FROM trace WHERE id = 2")
    with EvaluationStore(path) as store, pytest.raises(StoreError, match="1 trace row was deleted"):
        store.trace(run)
    _sql(path, "UPDATE trace_runs SET budget = 99")
    with EvaluationStore(path) as store, pytest.raises(StoreError, match=f"trace_runs row of run {run} does not match"):
        store.trace_runs()


def test_a_trace_row_of_another_store_does_not_check_here(tmp_path, traced):
    path, run = traced
    other = tmp_path / "other.sqlite"
    ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED, store=other)
    row = _rows(other)[0]
    _sql(path, "DELETE FROM trace WHERE id = 1")  # the same run id, step and values: only the key differs
    con = sqlite3.connect(path)
    con.execute(f"INSERT INTO trace VALUES ({', '.join('?' * len(row))})", row)
    con.commit()
    con.close()
    with EvaluationStore(path) as store, pytest.raises(StoreError, match="does not match its digest"):
        store.trace(run)


def test_a_store_of_an_earlier_version_opens_and_gets_the_trace_tables(tmp_path):
    path = tmp_path / "s.sqlite"
    game = QuadraticGame(P, seed=1)
    est = ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED, store=path)
    # the file an earlier version wrote: no trace tables, no digest column, no row key
    _sql(path, "DROP TABLE trace", "DROP TABLE trace_runs", "DROP TABLE trace_ends", "ALTER TABLE evaluations DROP COLUMN digest",
         "DELETE FROM meta WHERE key = 'row_key'")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    from shapleig.runs.trace_table import has_trace_tables, read_runs

    assert not has_trace_tables(con) and read_runs(con, None, str(path)) == []  # a reader sees no trace, no error
    con.close()
    again = ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED, store=path)
    assert again.info["n_game_evaluations"] == 0
    np.testing.assert_array_equal(again.values, est.values)
    _same_as_store(again, path)


def test_trace_tables_made_by_another_program_are_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _sql(path, "CREATE TABLE trace (id INTEGER PRIMARY KEY, run TEXT)")
    with pytest.raises(StoreError, match=r"table trace lacks the columns \['diagnostics', 'digest'"):
        EvaluationStore(path)


def test_evaluations_stay_synced_to_disk_after_a_trace_write(traced):
    """Trace rows are committed without waiting for the disk (derived data); every evaluation still is."""
    path, run = traced
    with EvaluationStore(path) as store:
        assert store.conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        store.record_trace([{"run": run, "step": 99, "evaluations": BUDGET, "time": 0.0, "eval_seconds": None,
                             "worker": "w", "pending": 0, "values": np.zeros(P), "std": None, "diagnostics": None}])
        assert store.conn.execute("PRAGMA synchronous").fetchone() == (2,)


def test_a_store_that_cannot_record_the_run_leaves_the_callers_budgeted_game_as_it_was(tmp_path):
    from shapleig import BudgetedGame

    class Refusing(EvaluationStore):
        def start_trace_run(self, run):
            raise StoreError("cannot record the run (disk full)")

    with Refusing(tmp_path / "s.sqlite") as store:
        budgeted = BudgetedGame(QuadraticGame(P, seed=1), 30, store=store)
        with pytest.raises(StoreError, match="disk full"):
            ShaplEIG(pool_size=64).estimate(budgeted, BUDGET, seed=SEED)
        assert budgeted.budget == 30 and budgeted.evaluations == 0 and budgeted.trace_recorder is None
