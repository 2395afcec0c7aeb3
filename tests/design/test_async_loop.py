"""The asynchronous design loop: exact conditioning on pending coalitions, equivalence with the
synchronous loop where they must agree, the default for concurrent evaluators, resume after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, ExecutorEvaluator, SerialEvaluator, ShaplEIG
from shapleig.design.async_loop import AsyncDesignLoop, uses_async
from shapleig.design.loop import DesignLoop
from shapleig.design.options import LoopOptions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from _games_for_parallel import QuadraticGame, read_log  # noqa: E402

P = 5


def _fixed(p: int = P) -> Hyperparameters:
    return Hyperparameters.hamming(np.linspace(0.6, 1.8, p), 1.3, 1e-3, 0.1)


def test_candidate_state_is_conditioned_on_the_pending_coalitions():
    """Mid-run, the EIG over the pool equals that of a posterior holding the pending coalitions
    with made-up values (the EIG does not depend on values)."""
    game = QuadraticGame(P, seed=1)
    with ThreadPoolExecutor(1) as pool:  # one worker: arrivals in submission order
        loop = AsyncDesignLoop(game, 20, batch_size=3, pool_size=64, seed=0, hyperparameters=_fixed(),
                               evaluator=ExecutorEvaluator(pool))
        loop.step()  # the design is submitted
        while loop._design is not None:  # its values arrive (early picks fill the free slots)
            loop.step()
        loop.step()
        loop.step()  # two arrivals, each refilled
        assert loop.n_pending == 3
        pending = loop._in_flight().pending_rows()
        held = loop._loop  # white box: the driven DesignLoop's candidate state
        held._candidates = None  # rebuilt from the archive and conditioned on what is pending
        eig = held._candidate_state().eig()
        X = np.concatenate([loop.X, pending])
        y = np.concatenate([loop.y, np.random.default_rng(5).normal(size=len(pending))])
        reference = ShapleyPosterior(_fixed(), X, y).candidates(loop.pool.W[held._cand_index]).eig()
        keep = np.isfinite(eig)
        assert keep.sum() == loop.available.sum() and keep.sum() > 10
        np.testing.assert_allclose(eig[keep], reference[keep], rtol=1e-8)
        loop.run()


def test_one_slot_async_run_equals_the_sequential_loop():
    """batch_size=1 asynchronous: select, evaluate, select again, as the sequential loop does."""
    game = QuadraticGame(P, seed=2)
    options = dict(pool_size=64, seed=3, hyperparameters=_fixed())
    sequential = DesignLoop(game, 18, **options)
    ref = sequential.run()
    with ThreadPoolExecutor(2) as pool:
        loop = AsyncDesignLoop(game, 18, batch_mode="async", evaluator=ExecutorEvaluator(pool), **options)
        est = loop.run()
    np.testing.assert_array_equal(loop.X, sequential.X)
    np.testing.assert_allclose(est.values, ref.values, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("overlap", [False, True], ids=["design-first", "design-overlap"])
def test_first_picks_are_the_synchronous_greedy_batch(overlap, monkeypatch):
    """Under fixed hyperparameters the first picks are the synchronous greedy batch, in its order,
    also when they are made while the design is still out (one worker: room appears as design
    values arrive)."""
    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", overlap)
    game = QuadraticGame(P, seed=2)
    options = dict(pool_size=64, seed=3, hyperparameters=_fixed(), batch_size=4)
    sync = DesignLoop(game, 18, **options)
    sync.step()
    sync.step()
    with ThreadPoolExecutor(1) as pool:
        loop = AsyncDesignLoop(game, 18, evaluator=ExecutorEvaluator(pool), **options)
        est = loop.run()
    np.testing.assert_array_equal(np.stack(loop.submitted[:4]), sync.selected[0])
    np.testing.assert_array_equal(loop.X[: P + 1], sync.X[: P + 1])  # the design first, in design order
    assert est.evaluations == 18 and len(loop.submitted) == 18 - (P + 1)


def test_async_is_the_default_for_concurrent_evaluators_only():
    options = LoopOptions(batch_size=4)
    with ThreadPoolExecutor(2) as pool:
        assert uses_async(options, ExecutorEvaluator(pool))
        assert not uses_async(LoopOptions(batch_size=4, batch_mode="sync"), ExecutorEvaluator(pool))
        assert not uses_async(LoopOptions(), ExecutorEvaluator(pool))  # batch_size 1: nothing to overlap
    assert not uses_async(options, SerialEvaluator())
    assert uses_async(LoopOptions(batch_mode="async"), None)
    with pytest.raises(ValueError, match="batch mode"):
        LoopOptions(batch_mode="sometimes")
    game = QuadraticGame(P, seed=0)
    with ThreadPoolExecutor(2) as pool:
        assert type(ShaplEIG(batch_size=2).make_loop(BudgetedGame(game, 12, evaluator=ExecutorEvaluator(pool)))) \
            is AsyncDesignLoop
        est = ShaplEIG(batch_size=3, pool_size=64).estimate(game, 16, seed=0, evaluator=ExecutorEvaluator(pool))
    assert est.info["batch_mode_used"] == "async" and est.evaluations == 16
    assert type(ShaplEIG(batch_size=2).make_loop(BudgetedGame(game, 12))) is DesignLoop


def test_pool_overlap_gives_free_workers_the_pools_next_coalitions():
    """``overlap_design="pool"``: workers the design leaves free get the pool's coalitions in its order."""
    game = QuadraticGame(P, seed=2, sleep=0.01)
    with ThreadPoolExecutor(P + 3) as pool:
        loop = AsyncDesignLoop(game, 3 * P, batch_size=P + 3, seed=0, pool_size=64, evaluator=ExecutorEvaluator(pool),
                               overlap_design="pool")
        est = loop.run()
    np.testing.assert_array_equal(np.stack(loop.submitted[:2]), loop.pool.W[:2])
    assert est.evaluations == 3 * P and len({row.tobytes() for row in loop.X}) == 3 * P
    with pytest.raises(ValueError, match="overlap_design"):
        AsyncDesignLoop(game, 3 * P, batch_size=2, overlap_design="early")


@pytest.mark.parametrize("overlap", [False, True, "pool"], ids=["design-first", "design-overlap", "pool-overlap"])
def test_async_run_spends_the_budget_on_distinct_coalitions_and_is_accurate(overlap, monkeypatch):
    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", overlap)
    game = QuadraticGame(6, seed=4, sleep=0.002)
    with ThreadPoolExecutor(4) as pool:
        loop = AsyncDesignLoop(game, 40, batch_size=4, seed=0, evaluator=ExecutorEvaluator(pool))
        est = loop.run()
    assert est.evaluations == 40 and loop.n_pending == 0
    assert len({row.tobytes() for row in loop.X}) == 40
    counts = [n for n, _ in est.trace]  # one read-out per arrival once the design is complete
    assert counts[-1] == 40 and counts[0] >= 7 and np.all(np.diff(counts) == 1)
    np.testing.assert_allclose(est.values, game.shapley_values(), atol=0.05)


# -- resume after a killed driver --------------------------------------------------------------
BUDGET, K, Q = 20, 12, 3
RUN = textwrap.dedent(
    """
    import sys
    from concurrent.futures import ThreadPoolExecutor
    sys.path.insert(0, {tests!r})
    from _games_for_parallel import QuadraticGame
    from shapleig import EvaluationStore, ExecutorEvaluator, ShaplEIG
    from shapleig.design.async_loop import AsyncDesignLoop
    AsyncDesignLoop.overlap_design = {overlap!r}
    game = QuadraticGame({p}, seed=7, sleep=0.01, log_path={log!r}, stop_after={k}, stop_file={stop!r})
    with ThreadPoolExecutor({q}) as pool:
        ShaplEIG(batch_size={q}, pool_size=64).estimate(game, {budget}, seed=3, store=EvaluationStore({store!r}),
                                                        evaluator=ExecutorEvaluator(pool))
    raise SystemExit("the run was not stopped")
    """
)


@pytest.mark.parametrize("k, overlap", [(4, True), (K, True), (K, False)],
                         ids=["in-design-overlap", "after-design-overlap", "after-design"])
def test_killed_async_run_resumes_with_no_evaluation_lost(tmp_path, k, overlap, monkeypatch):
    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", overlap)
    log, stop, store_path = str(tmp_path / "calls.log"), str(tmp_path / "stop"), str(tmp_path / "store.db")
    code = RUN.format(tests=str(TESTS), p=P, log=log, k=k, stop=stop, budget=BUDGET, store=store_path, q=Q,
                      overlap=overlap)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not os.path.exists(stop):
        if proc.poll() is not None:
            raise AssertionError(f"run ended before the kill point:\n{proc.stdout.read().decode()}")
        assert time.monotonic() < deadline, "run did not reach the kill point in time"
        time.sleep(0.05)
    time.sleep(0.5)  # evaluations that returned before the block are committed; the others hang
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    store = EvaluationStore(store_path)
    stored = len(store)  # the game blocks from the K-th call on; calls already past the check finish
    assert k <= stored < k + Q
    killed = {row.tobytes() for row in store.history()[0]}

    game = QuadraticGame(P, seed=7, log_path=log)
    with ThreadPoolExecutor(Q) as pool:
        loop = AsyncDesignLoop(game, BUDGET, seed=3,
                               batch_size=Q, pool_size=64, store=store, evaluator=ExecutorEvaluator(pool))
        resumed = loop.run()
    calls = read_log(log)
    assert len(calls) == BUDGET and len(set(calls)) == BUDGET  # no coalition evaluated twice
    assert killed <= {row.tobytes() for row in loop.X}  # every stored value was used: none lost
    assert loop.game.n_store_hits == stored

    # An uninterrupted run with the same completion order: every value now comes from the store,
    # in the order it was recorded.
    game.log_path = None
    with ThreadPoolExecutor(Q) as pool:
        replay_loop = AsyncDesignLoop(game, BUDGET, seed=3, batch_size=Q, pool_size=64, store=store,
                                      evaluator=ExecutorEvaluator(pool))
        replay = replay_loop.run()
    assert replay_loop.game.n_store_hits == BUDGET
    np.testing.assert_array_equal(replay_loop.X, loop.X)  # the same decisions, in the same order
    # the same estimate to rounding: with multithreaded BLAS, a background refit running beside the
    # driver's selection changes the last bits of some products (measured 8e-13 relative; exact
    # with OMP_NUM_THREADS=1)
    np.testing.assert_allclose(replay.values, resumed.values, rtol=1e-9, atol=1e-12)


def test_killed_dask_worker_loses_nothing(tmp_path):
    """A Dask worker process dies mid-evaluation: the scheduler runs the task again elsewhere, the
    asynchronous run finishes its budget, every value in the store once."""
    distributed = pytest.importorskip("distributed")
    from _games_for_parallel import WorkerKillingGame

    marker, log = str(tmp_path / "killed"), str(tmp_path / "calls.log")
    game = WorkerKillingGame(P, kill_size=2, marker=marker, seed=7, log_path=log)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as client:
        store = EvaluationStore(str(tmp_path / "store.db"))
        est = ShaplEIG(batch_size=2, pool_size=64).estimate(game, 16, seed=0, store=store,
                                                           evaluator=ExecutorEvaluator(client.get_executor()))
    assert os.path.exists(marker)  # a worker was killed
    assert est.evaluations == 16 and est.info["batch_mode_used"] == "async"
    X, _ = store.history()
    assert len(X) == 16 and len({row.tobytes() for row in X}) == 16
    calls = read_log(log)
    # the killed call never logged; Dask runs a task again when its finished result died with the
    # worker before reaching the client (at least once), so a repeat is possible only among the
    # batch in flight on that worker, and the store kept one value for each coalition
    assert set(calls) == {"".join("1" if b else "0" for b in row) for row in X}
    assert len(calls) - 16 <= 2


@pytest.mark.parametrize("overlap", [False, True])
def test_async_runs_select_through_the_acquisition_object(overlap, monkeypatch):
    """A user-defined acquisition runs asynchronously and its picks are the ones evaluated: it wants
    coalitions holding player 0 without player 1, and all 8 of them are evaluated (EIG's run does
    not); random picks run too."""
    from shapleig.design.acquisition import Acquisition

    class ZeroWithoutOne(Acquisition):
        def score(self, candidates):
            wanted = candidates.W[:, 0] & ~candidates.W[:, 1]
            return np.where(candidates.available, wanted.astype(float), -np.inf)

    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", overlap)
    game = QuadraticGame(P, seed=2)
    evaluated = {}
    for name, acquisition in (("user", ZeroWithoutOne()), ("eig", "eig"), ("random", "random")):
        with ThreadPoolExecutor(3) as pool:
            loop = AsyncDesignLoop(game, 18, batch_size=3, pool_size=64, seed=0, refit="never",
                                   acquisition=acquisition, evaluator=ExecutorEvaluator(pool))
            est = loop.run()
        assert est.evaluations == 18 and np.all(np.isfinite(est.values))
        evaluated[name] = np.asarray(loop.X, dtype=bool)
    wanted = {name: int((X[:, 0] & ~X[:, 1]).sum()) for name, X in evaluated.items()}
    assert wanted["user"] == 2 ** (P - 2), wanted
    assert wanted["eig"] < 2 ** (P - 2), wanted  # the check tells the object from the default


@pytest.mark.parametrize("workers", [1, 3])
def test_a_background_refit_is_adopted_once_batch_size_more_values_have_arrived(workers, monkeypatch):
    """A refit launched on t evaluations is adopted at the arrival that brings the archive to
    t + batch_size, before that step's pick, never earlier (the driver would wait for the fit) or
    later; decided by arrival counts only, so the same for one worker or three."""
    q, budget = 3, 24
    adopted: list[tuple[int, int, int]] = []  # (archive size, t fitted, arrivals still pending)
    adopt = AsyncDesignLoop._adopt_refit

    def spy(self):
        adopted.append((self.X.shape[0], self._refit[2], self.n_pending))
        adopt(self)
        assert self.fitted_on == adopted[-1][1]  # the kernels fitted on t are the ones in use

    monkeypatch.setattr(AsyncDesignLoop, "_adopt_refit", spy)
    game = QuadraticGame(P, seed=3)
    with ThreadPoolExecutor(workers) as pool:
        loop = AsyncDesignLoop(game, budget, batch_size=q, pool_size=64, seed=0, refit="every", final_refit=False,
                               evaluator=ExecutorEvaluator(pool))
        est = loop.run()
    assert est.evaluations == budget
    during = [(n, t) for n, t, pending in adopted if pending]  # adopted mid-run (not at finish)
    assert len(during) >= 3, adopted
    assert all(n == t + q for n, t in during), adopted
    # every refit launched was adopted, a new one launched at once on that archive (the schedule is "every")
    assert [t for _, t in during[1:]] == [n for n, _ in during[:-1]], adopted


class _AddedTimes(dict):
    """The loop's ``timings``, recording what each timed region adds to a total."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.added: list[tuple[str, float]] = []

    def __setitem__(self, key: str, value: float) -> None:
        self.added.append((key, value - self.get(key, 0.0)))
        super().__setitem__(key, value)


@pytest.mark.parametrize("overlap", [False, True], ids=["design-first", "design-overlap"])
def test_each_timed_region_adds_its_own_duration_and_a_fresh_loop_is_not_done(overlap, monkeypatch):
    """Every timed region (waiting for an arrival, absorbing it, selecting, the design step, adopting
    a refit) adds its duration to its total. On a fake clock that starts at 1e12 s and advances 1 s
    per reading, each addition is positive (a region subtracting its time adds a negative amount)
    and no larger than the time that passed (a region adding its start time adds 2e12 s). A loop not
    yet stepped has nothing pending and is not done."""
    import itertools
    import types

    import shapleig.design.async_loop as async_loop
    import shapleig.design.loop as sync_loop

    readings = itertools.count(10**12)  # one value per reading, also across threads
    clock = types.SimpleNamespace(perf_counter=lambda: float(next(readings)))
    monkeypatch.setattr(async_loop, "time", clock)
    monkeypatch.setattr(sync_loop, "time", clock)
    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", overlap)
    game = QuadraticGame(P, seed=2)
    with ThreadPoolExecutor(2) as pool:
        loop = AsyncDesignLoop(game, 16, batch_size=3, pool_size=64, seed=0, refit="every",
                               evaluator=ExecutorEvaluator(pool))
        assert loop.n_pending == 0 and not loop.done
        loop.timings = _AddedTimes(loop.timings)
        loop.run()
    elapsed = next(readings) - 10**12
    added = [(k, v) for k, v in loop.timings.added if k in ("selection_s", "update_s", "game_s")]
    assert {k for k, _ in added} == {"selection_s", "update_s", "game_s"}
    assert all(0 < v <= elapsed for _, v in added), added
    assert loop.n_refits >= 3  # refits were adopted along the way (their regions were timed)


@pytest.mark.parametrize("overlap, batch_size", [(False, 3), (True, 3), (True, 2), (True, 1)])
def test_the_design_is_evaluated_first_unless_overlapped(overlap, batch_size, monkeypatch):
    """Without overlap_design (or with one evaluation at a time) the first step evaluates the design
    and fits, as the sequential loop does; with it the design is submitted and the step returns at
    once. After the design at most batch_size coalitions are in flight."""
    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", overlap)
    # one worker: evaluations finish in the order they were submitted, so which values have arrived at
    # each step (design values or early picks) does not depend on how the threads were scheduled
    with ThreadPoolExecutor(1) as pool:
        loop = AsyncDesignLoop(QuadraticGame(P, seed=2), 16, batch_size=batch_size, pool_size=64, seed=0,
                               evaluator=ExecutorEvaluator(pool))
        loop.step()
        state = (loop.X.shape[0], loop.n_pending, loop.fitted_on)
        in_flight = []
        while loop.step():
            if loop.X.shape[0] >= P + 1:
                in_flight.append(loop.n_pending)
        loop.finish()
    overlapped = overlap and batch_size > 1
    assert state == ((0, P + 1, -1) if overlapped else (P + 1, 0, P + 1))
    assert max(in_flight) <= batch_size and loop.evaluations == 16
    if not overlapped:
        # each step after the design refills to batch_size; with the design overlapped, how much of the
        # budget went out as early picks while it was evaluated depends on when its values arrived
        assert max(in_flight) == batch_size


def test_no_acquisition_after_the_precision_target_is_met():
    """A target every std meets at once (tol far above the values' scale): the design's read-out meets
    it, nothing more is acquired, the final refit confirms it."""
    with ThreadPoolExecutor(2) as pool:
        loop = AsyncDesignLoop(QuadraticGame(P, seed=2), 16, batch_size=3, pool_size=64, seed=0, tol=1e6,
                               evaluator=ExecutorEvaluator(pool))
        est = loop.run()
    assert est.evaluations == P + 1 and loop.submitted == [] and loop.target_evaluations == P + 1


def test_early_picks_use_the_initial_hyperparameters_with_the_noise_at_a_unit_scale(monkeypatch):
    """While the design is out, the picks come from the first kernel's initial hyperparameters with
    the noise at a unit scale (raw noise 1e-3 is 1e-3 standardised), conditioned on the design.
    (Every built-in kernel starts from the same prior, so which kernel is first does not show here.)"""
    from shapleig.gp.fitting import initial_hyperparameters

    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", True)
    with ThreadPoolExecutor(1) as pool:
        loop = AsyncDesignLoop(QuadraticGame(P, seed=2), 16, batch_size=3, pool_size=64, seed=0, noise=1e-3,
                               noise_convention="raw", evaluator=ExecutorEvaluator(pool))
        loop.step()  # the design is submitted, its candidate state built
        design = loop._design
        hyper = initial_hyperparameters(loop.options.kernels[0], P, 1e-3)
        reference = ShapleyPosterior(hyper, design, np.zeros(P + 1)).candidates(loop.pool.W).eig()
        eig = loop._design_state.eig()
        keep = np.isfinite(reference)
        assert keep.sum() > 10 and np.array_equal(np.isfinite(eig), keep)
        np.testing.assert_allclose(eig[keep], reference[keep], rtol=1e-10)
        loop.run()


def test_the_design_is_not_overlapped_by_default():
    with ThreadPoolExecutor(2) as pool:
        loop = AsyncDesignLoop(QuadraticGame(P, seed=2), 16, batch_size=3, pool_size=64, seed=0,
                               evaluator=ExecutorEvaluator(pool))
        loop.step()
        assert (loop.X.shape[0], loop.n_pending) == (P + 1, 0)  # the design evaluated whole first
        loop.run()


class _HoldsTheGrandCoalition:
    """Evaluates on the driver threads; the grand coalition (in the design) waits until another
    coalition after the rest of the design has been evaluated: an acquisition arrives before the
    design is complete."""

    concurrent = True

    def __init__(self) -> None:
        self.evaluated = 0
        self.released = threading.Event()
        self.lock = threading.Lock()

    def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
        from shapleig.runs.evaluators import EvaluationRecord

        row = np.asarray(coalitions, dtype=bool)[0]
        if row.all():
            assert self.released.wait(60), "no acquisition arrived while the design was out"
        value = np.asarray(game(coalitions), dtype=float)
        on_result(EvaluationRecord(0, float(value[0]), 0.0, "ok", 1))
        with self.lock:
            self.evaluated += not row.all()
            if self.evaluated > P:  # the other p design rows and one acquisition
                self.released.set()
        return value


def test_acquisitions_that_arrive_during_the_design_are_read_out_with_it(monkeypatch):
    """With overlap_design an acquisition evaluated before the last design value is absorbed with
    the design: the first read-out covers them all, then one read-out per arrival; every
    acquisition is counted."""
    monkeypatch.setattr(AsyncDesignLoop, "overlap_design", True)
    budget = 14
    loop = AsyncDesignLoop(QuadraticGame(P, seed=2), budget, batch_size=3, pool_size=64, seed=0,
                           evaluator=_HoldsTheGrandCoalition())
    est = loop.run()
    counts = [n for n, _ in est.trace]
    assert counts[0] > P + 1 and np.all(np.diff(counts) == 1) and counts[-1] == budget, counts
    assert loop.iteration == len(loop.submitted) == budget - (P + 1)


class _FailsAfter(QuadraticGame):
    """A QuadraticGame whose calls fail once ``good`` of them have succeeded."""

    def __init__(self, n_players: int, good: int) -> None:
        super().__init__(n_players, seed=2)
        self.good, self.calls, self.lock = good, 0, threading.Lock()

    def __call__(self, coalitions):
        with self.lock:
            self.calls += 1
            if self.calls > self.good:
                raise RuntimeError("the game broke")
        return super().__call__(coalitions)


def test_a_failure_is_raised_without_waiting_for_a_refit_running_in_the_background(monkeypatch):
    """The game fails while a background refit is still running (here held until the failure is
    out): the run raises at once; the refit finishes on its own."""
    import shapleig.design.loop as sync_loop
    from shapleig.errors import EvaluationFailedError

    real, held, refits = sync_loop.fit_kernels, threading.Event(), []

    def held_in_the_background(*args, **kwargs):
        if threading.current_thread().name.startswith("shapleig-refit"):
            refits.append(1)
            assert held.wait(60), "the test never released the refit"
        return real(*args, **kwargs)

    monkeypatch.setattr(sync_loop, "fit_kernels", held_in_the_background)
    outcome: dict = {}

    def run() -> None:
        with ThreadPoolExecutor(2) as pool:
            loop = AsyncDesignLoop(_FailsAfter(P, good=P + 1 + 5), 20, batch_size=3, pool_size=64, seed=0,
                                   refit="every", evaluator=ExecutorEvaluator(pool, max_retries=0))
            try:
                loop.run()
            except EvaluationFailedError as exc:
                outcome["error"] = exc

    runner = threading.Thread(target=run)
    runner.start()
    runner.join(60)  # raises at once; a run waiting for the held refit would still be running
    finished = not runner.is_alive()
    held.set()
    runner.join()
    assert finished, "the failure waited for the background refit"
    assert "the game broke" in str(outcome.get("error")) and refits
