"""Fault injection: kill -9 ShaplEIG runs that log to an evaluation store, resume them, count losses.

Each trial starts a run in its own process (forked from a server that has imported torch once, so
a trial costs a fraction of a second), kills it with SIGKILL at a random point, then resumes the
run from the store in this process and checks it against an uninterrupted run with the same seed.

Configurations (how coalitions are evaluated):

- ``serial``: the default evaluator with a store (one coalition per game call), ``batch_size=1``;
- ``chunk3``: a user-chosen ``SerialEvaluator(chunk_size=3)`` and ``batch_size=3``;
- ``pool``: ``ExecutorEvaluator`` on a ``ProcessPoolExecutor(2)``, ``batch_size=3``;
- ``dask``: ``ExecutorEvaluator`` on a Dask ``Client(processes=False).get_executor()``, ``batch_size=3``
  (skipped when ``distributed`` is not installed).

Fault points: ``design`` (inside the game during the initial design, before or after the value is
computed), ``batch`` (inside the game during an acquisition batch), ``refit`` (a timer fires while
the GP hyperparameters are being fitted), ``write`` (an SQLite statement of a store write starts
running: the insert, the claim release or the commit) and ``random`` (from outside, after a random
delay within the length of an uninterrupted run).

Figures per campaign:

- *finished evaluations*: values whose store write had returned before the kill (the run process
  records each one in a witness file right after the commit);
- *lost*: finished evaluations missing from the store after the kill (must be 0);
- *repeated*: coalitions evaluated again on resume although the store held them, plus coalitions
  stored twice (must be 0); coalitions whose evaluation was cut by the kill are evaluated again on
  resume and reported separately as *in flight*;
- *wrong values served*: stored values (after the kill) and values the resumed run used that
  differ from the game's (must be 0);
- *estimate differs*: resumed runs whose estimate is not bit-identical to the uninterrupted run
  (must be 0).

Two more campaigns (issue 20), run with ``--creation-trials`` and ``--hang-trials``:

- *concurrent creation*: ``--creation-processes`` processes released by one barrier open and bind
  the same new store, ``--creation-trials`` times; failed opens must be 0;
- *hung evaluations*: a process evaluates a list of coalitions and hangs for ever inside the game
  on one of them, with an evaluation timeout of 1 s; a second process sharing the store asks for
  the same coalitions and must finish, with the right values, well within the lease (30 s), and
  the hung process must report the timeout and leave no claim behind.

Issue 27 added five store-edge campaigns (``--link-trials``, ``--skew-trials``,
``--interrupt-trials``, ``--tamper``): a store written through two hard links by two processes, a
claim left by a dead process whose wall clock runs an hour ahead, ``shapleig run`` interrupted with
SIGINT and run again, and stores doctored with triggers, views and infinite values. Issue 34 added
``--edit``: stores whose finite values were edited by hand (``value + 1``, ``'1.5'``), a row deleted
and a row copied in from another game's store.

Run: ``PYTHONPATH=. python scripts/studies/fault_injection.py --trials 60`` (about a minute on 2 cores);
``--trials 0 --creation-trials 50 --hang-trials 10`` runs only the two new campaigns;
``--trials 0 --link-trials 5 --skew-trials 5 --interrupt-trials 3 --tamper`` the issue-27 ones;
``--trials 0 --edit`` issue 34's.

Issue 34 added ``--fifo``: ``shapleig run`` with a FIFO (no reader) at its run journal
``<out>.partial.jsonl`` (the store refused FIFOs, the journal path did not: the command blocked for
ever) or at the results table; each command must return promptly with exit 2 and one line naming the path.

*Model swaps* (issue 27), run with ``--swap-trials``: ``explain(A, store=s)`` then
``explain(B, store=s)`` where B is another LightGBM, scikit-learn or torch model, another
background or another row (must be refused naming the difference: 0 wrong values served), or A
rebuilt (reloaded from its model string, refitted identically: must be served with 0 model calls).
``tests/runs/test_fault_injection.py`` runs the same campaigns as slow tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO, REPO / "tests", REPO / "scripts" / "studies"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from _games_for_parallel import QuadraticGame, read_log  # noqa: E402

P, BUDGET, GAME_SEED = 5, 12, 7
KILL_PID = "SHAPLEIG_FAULT_KILL_PID"  # environment: the run process, inherited by pool workers
CONFIGS = {
    "serial": dict(batch_size=1, evaluator="default"),
    "chunk3": dict(batch_size=3, evaluator="chunk3"),
    "pool": dict(batch_size=3, evaluator="pool"),
    "dask": dict(batch_size=3, evaluator="dask"),
}
FAULTS = {
    "serial": ["design", "batch", "refit", "write", "random"],
    "chunk3": ["design", "batch", "refit", "write", "random"],
    "pool": ["design", "batch", "write", "random"],
    "dask": ["design", "batch", "write", "random"],
}
WRITE_STATEMENTS = ("INSERT INTO evaluations", "DELETE FROM claims", "COMMIT", "INSERT OR REPLACE INTO claims")


def _kill_run() -> None:
    os.kill(int(os.environ[KILL_PID]), signal.SIGKILL)
    time.sleep(60)  # never continue past the kill point


class FaultGame(QuadraticGame):
    """QuadraticGame that kills the run process at its ``kill_at``-th evaluation (counted over
    every process through the call log), ``before`` or after computing the value. Same
    parameters, hence same store identity, as the resumed game (which has ``kill_at=None``)."""

    def __init__(self, kill_at: int | None = None, before: bool = True, log_path: str | None = None):
        super().__init__(P, seed=GAME_SEED, log_path=log_path)
        self.kill_at = kill_at
        self.before = before

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=bool)
        out = np.empty(z.shape[0])
        for r, row in enumerate(z):
            due = self.kill_at is not None and len(read_log(self.log_path)) + 1 == self.kill_at
            if due and self.before:
                _kill_run()
            out[r] = super().__call__(row[None, :])[0]
            if due:
                _kill_run()
        return out


def _estimator(config: str) -> Any:
    from shapleig import ShaplEIG

    # synchronous batches: the campaign compares each resumed run with an independent uninterrupted
    # one, which only a synchronous run reproduces bit for bit (an asynchronous run's picks follow its
    # completion order; its resume is checked against a replay in tests/design/test_async_loop.py)
    return ShaplEIG.from_options(refit="every", batch_size=CONFIGS[config]["batch_size"], pool_size=64, batch_mode="sync")


def _evaluator(config: str, pool: Any = None, dask_client: Any = None) -> Any:
    from shapleig import ExecutorEvaluator, SerialEvaluator

    kind = CONFIGS[config]["evaluator"]
    if kind == "default":
        return None
    if kind == "chunk3":
        return SerialEvaluator(chunk_size=3)
    if kind == "pool":
        return ExecutorEvaluator(pool)
    return ExecutorEvaluator(dask_client.get_executor())


# -- the run process --------------------------------------------------------------------------
def run_to_be_killed(config: str, fault: str, point: int, detail: str, seed: int, folder: str) -> None:
    """Body of a trial's run process: set up the fault, signal ready, run until killed."""
    import shapleig.gp.kernel_choice  # the loop fits through kernel_choice.fit_kernels
    from shapleig import BudgetedGame, EvaluationStore

    os.setpgid(0, 0)  # its own process group: pool workers orphaned by the kill are cleaned up with it
    os.environ[KILL_PID] = str(os.getpid())
    folder_path = Path(folder)
    witness = os.open(folder_path / "committed.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    store = EvaluationStore(folder_path / "store.sqlite")
    real_append = store.append

    def append(coalition: np.ndarray, value: Any, **kw: Any) -> None:
        real_append(coalition, value, **kw)
        if kw.get("status", "ok") == "ok":  # committed: from now on it must never be lost
            os.write(witness, ("".join("1" if b else "0" for b in coalition) + "\n").encode())

    store.append = append  # type: ignore[method-assign]
    kill_at = None
    if fault in ("design", "batch"):
        kill_at = point
    elif fault == "refit":
        real_fit, calls = shapleig.gp.kernel_choice.fit_hyperparameters, [0]

        def fit(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if calls[0] == point:
                threading.Timer(float(detail), _kill_run).start()  # fires while the fit runs
            return real_fit(*args, **kwargs)

        shapleig.gp.kernel_choice.fit_hyperparameters = fit
    elif fault == "write":
        seen = [0]

        def trace(statement: str) -> None:
            if statement.startswith(detail):
                seen[0] += 1
                if seen[0] == point:
                    _kill_run()

        store.conn.set_trace_callback(trace)
    game = FaultGame(kill_at=kill_at, before=(detail == "before"), log_path=str(folder_path / "calls.log"))
    pool = dask_client = None
    if CONFIGS[config]["evaluator"] == "pool":
        pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
    elif CONFIGS[config]["evaluator"] == "dask":
        from distributed import Client

        dask_client = Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0")
    budgeted = BudgetedGame(game, BUDGET, store=store, evaluator=_evaluator(config, pool, dask_client))
    (folder_path / "ready").touch()
    _estimator(config).estimate(budgeted, BUDGET, seed=seed)
    (folder_path / "finished").touch()
    os._exit(0)  # skip interpreter teardown (pools, Dask) in a run that was meant to be killed


# -- one trial --------------------------------------------------------------------------------
@dataclass
class Trial:
    config: str
    fault: str
    point: int
    detail: str
    seed: int
    killed: bool = False
    finished_before_kill: int = 0  # values committed before the kill (witnessed)
    stored_at_kill: int = 0
    lost: int = 0
    repeated: int = 0
    in_flight: int = 0
    wrong_values: int = 0
    estimate_differs: bool = False
    seconds: float = 0.0


@dataclass
class Campaign:
    trials: list[Trial] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        t = self.trials
        return {
            "trials run": len(t),
            "faults injected": sum(x.killed for x in t),
            "finished evaluations before the kills": sum(x.finished_before_kill for x in t),
            "evaluations lost": sum(x.lost for x in t),
            "evaluations repeated": sum(x.repeated for x in t),
            "wrong values served": sum(x.wrong_values for x in t),
            "resumed estimates differing from an uninterrupted run": sum(x.estimate_differs for x in t),
            "in-flight evaluations redone on resume": sum(x.in_flight for x in t),
            "faults by point": {f: sum(x.killed for x in t if x.fault == f) for f in sorted({x.fault for x in t})},
            "faults by configuration": {c: sum(x.killed for x in t if x.config == c)
                                        for c in sorted({x.config for x in t})},
        }


def _codes(Z: np.ndarray) -> list[str]:
    return ["".join("1" if b else "0" for b in row) for row in Z]


class Injector:
    """Runs trials: forks run processes from a server that preloaded torch, resumes in-process."""

    def __init__(self, rng: np.random.Generator, configs: list[str]):
        self.rng = rng
        self.configs = configs
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "shapleig.design.estimators", "shapleig.runs.store", "fault_injection"])
        self.ctx = ctx
        self.pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) if "pool" in configs else None
        self.dask = None
        if "dask" in configs:
            from distributed import Client

            self.dask = Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0")
        self.references: dict[tuple[str, int], np.ndarray] = {}
        self.durations: dict[str, float] = {}

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
        if self.dask is not None:
            self.dask.close()

    def reference(self, config: str, seed: int) -> np.ndarray:
        """The uninterrupted run's estimate (no store), and its duration for random kills."""
        key = (config, seed)
        if key not in self.references:
            start = time.perf_counter()
            est = _estimator(config).estimate(FaultGame(), BUDGET, seed=seed)
            self.durations[config] = max(self.durations.get(config, 0.0), time.perf_counter() - start)
            self.references[key] = est.values
        return self.references[key]

    def draw(self, config: str) -> Trial:
        fault = str(self.rng.choice(FAULTS[config]))
        seed = int(self.rng.integers(0, 3))
        detail, point = "", 0
        if fault == "design":
            point, detail = int(self.rng.integers(1, P + 2)), str(self.rng.choice(["before", "after"]))
        elif fault == "batch":
            point, detail = int(self.rng.integers(P + 2, BUDGET + 1)), str(self.rng.choice(["before", "after"]))
        elif fault == "refit":
            point, detail = int(self.rng.integers(1, BUDGET - P)), f"{self.rng.uniform(0.0, 0.02):.4f}"
        elif fault == "write":
            detail = str(self.rng.choice(WRITE_STATEMENTS))
            point = int(self.rng.integers(1, P + 4))
        return Trial(config, fault, point, detail, seed)

    def run(self, trial: Trial) -> Trial:
        from shapleig import BudgetedGame, EvaluationStore

        start = time.perf_counter()
        reference = self.reference(trial.config, trial.seed)
        with tempfile.TemporaryDirectory(prefix="shapleig-fault-") as tmp:
            folder = Path(tmp)
            proc = self.ctx.Process(target=run_to_be_killed, args=(trial.config, trial.fault, trial.point,
                                                                   trial.detail, trial.seed, tmp))
            proc.start()
            deadline = time.monotonic() + 120
            while not (folder / "ready").exists() and proc.is_alive() and time.monotonic() < deadline:
                time.sleep(0.005)
            if trial.fault == "random":
                time.sleep(self.rng.uniform(0.0, self.durations[trial.config]))
                if proc.is_alive():
                    os.kill(proc.pid, signal.SIGKILL)
            proc.join(timeout=120)
            if proc.is_alive():
                proc.kill()
                proc.join()
                raise RuntimeError(f"trial {trial} did not stop")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # pool workers the killed run left behind
            trial.killed = proc.exitcode == -signal.SIGKILL and not (folder / "finished").exists()
            if proc.exitcode not in (0, -signal.SIGKILL):
                raise RuntimeError(f"trial {trial}: run process exited with {proc.exitcode}")

            committed = set(read_log(folder / "committed.log"))
            store = EvaluationStore(folder / "store.sqlite") if (folder / "store.sqlite").exists() else None
            stored_rows = []
            if store is not None and store.meta():
                X, _ = store.history()
                stored_rows = _codes(X)
                _, values = store.lookup(X)
                trial.wrong_values += int(np.sum(values != FaultGame().values(X)))  # as stored by the killed run
            stored = set(stored_rows)
            trial.finished_before_kill = len(committed)
            trial.stored_at_kill = len(stored)
            trial.lost = len(committed - stored)
            killed_calls = set(read_log(folder / "calls.log"))

            # resume with the same configuration (the pool and Dask client of this process)
            log = str(folder / "resume.log")
            game = FaultGame(log_path=log)
            budgeted = BudgetedGame(game, BUDGET, store=folder / "store.sqlite",
                                    evaluator=_evaluator(trial.config, self.pool, self.dask))
            est = _estimator(trial.config).estimate(budgeted, BUDGET, seed=trial.seed)
            resumed_calls = read_log(log)
            X, y = budgeted.history()
            final = EvaluationStore(folder / "store.sqlite")
            final_rows = _codes(final.history()[0])
            trial.repeated = (len(set(resumed_calls) & stored) + (len(resumed_calls) - len(set(resumed_calls)))
                              + (len(final_rows) - len(set(final_rows))))
            trial.in_flight = len((set(resumed_calls) & killed_calls) - stored)
            trial.wrong_values += int(np.sum(y != game.values(X)))  # as served to the resumed run
            trial.estimate_differs = not np.array_equal(est.values, reference)
            for s in (store, final, budgeted.store):
                if s is not None:
                    s.close()
        trial.seconds = time.perf_counter() - start
        return trial


def run_campaign(n_trials: int = 60, seed: int = 0, configs: list[str] | None = None,
                 log: Any = None) -> Campaign:
    """``n_trials`` trials spread over ``configs`` (default: all available), fault points drawn
    with ``seed``. ``log``: callable taking one line per trial."""
    if configs is None:
        configs = ["serial", "chunk3", "pool"]
        try:
            import distributed  # noqa: F401

            configs.append("dask")
        except ImportError:
            pass
    rng = np.random.default_rng(seed)
    injector = Injector(rng, configs)
    campaign = Campaign()
    try:
        for i in range(n_trials):
            trial = injector.run(injector.draw(configs[i % len(configs)]))
            campaign.trials.append(trial)
            if log is not None:
                log(f"{i + 1:3d} {trial.config:6s} {trial.fault:6s} point={trial.point:2d} {trial.detail:28s} "
                    f"killed={trial.killed!s:5s} committed={trial.finished_before_kill:2d} "
                    f"lost={trial.lost} repeated={trial.repeated} in_flight={trial.in_flight} "
                    f"wrong={trial.wrong_values} differs={trial.estimate_differs} ({trial.seconds:.1f} s)")
    finally:
        injector.close()
    return campaign


# -- concurrent creation of one new store ---------------------------------------------------------

def _create_store(args: tuple[str, Any]) -> str:
    path, barrier = args
    from _games_for_parallel import QuadraticGame

    from shapleig import EvaluationStore

    try:
        barrier.wait(timeout=60)
        store = EvaluationStore(path, timeout=60)
        store.bind(QuadraticGame(3, seed=0))
        store.close()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - counted and shown
        return f"{type(exc).__name__}: {exc}"


def run_creation_campaign(trials: int = 50, processes: int = 4) -> dict[str, Any]:
    """``processes`` processes released by one barrier open and bind the same new store, ``trials``
    times; every failure is counted (the schema is one transaction, so there must be none)."""
    ctx = multiprocessing.get_context("fork")
    failures: list[str] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, ctx.Manager() as manager, ctx.Pool(processes) as pool:
        for t in range(trials):
            barrier = manager.Barrier(processes)
            path = str(Path(folder) / f"new_{t}.sqlite")
            failures += [r for r in pool.map(_create_store, [(path, barrier)] * processes) if r != "ok"]
    return {"stores created": trials, "processes per store": processes, "opens": trials * processes,
            "failed opens": len(failures), "first failure": failures[0] if failures else "",
            "seconds": round(time.perf_counter() - start, 1)}


# -- hung evaluations on a shared store ----------------------------------------------------------

_HANG_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from _games_for_parallel import HangingGame
from shapleig import BudgetedGame, EvaluationStore
from shapleig.runs.evaluators import SerialEvaluator
rows = np.array([[c == "1" for c in code] for code in sys.argv[5].split(",")])
game = HangingGame(rows.shape[1], hang=[sys.argv[3]], started_file=sys.argv[4])
store = EvaluationStore(sys.argv[2], lease_seconds=float(sys.argv[7]))
try:
    BudgetedGame(game, len(rows), store=store, evaluator=SerialEvaluator(chunk_size=1, timeout=float(sys.argv[6])),
                 max_retries=0)(rows)
except Exception as exc:
    print("FAILED", type(exc).__name__, exc, flush=True)
else:
    print("DONE", flush=True)
"""


def run_hang_campaign(trials: int = 10, seed: int = 0, timeout: float = 1.0, lease: float = 30.0,
                      log: Any = None) -> dict[str, Any]:
    """Each trial: process A evaluates a random list of coalitions and hangs for ever on one of
    them (a real endless loop inside the game) with an evaluation ``timeout``; once it is stuck,
    this process (B) asks the store for the same coalitions. Counted: B runs that finished, B's
    wait, wrong values B served, A runs that reported the timeout, and claims left behind."""
    import subprocess

    from _games_for_parallel import HangingGame, QuadraticGame

    from shapleig import BudgetedGame, EvaluationStore

    rng = np.random.default_rng(seed)
    p = 6
    out = {"trials": trials, "timeout s": timeout, "lease s": lease, "B finished": 0, "B max wait s": 0.0,
           "wrong values served": 0, "A reported the timeout": 0, "claims left behind": 0}
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHAPLEIG_TEST_HANG": "1"}
    for t in range(trials):
        with tempfile.TemporaryDirectory() as folder:
            codes = sorted({"".join("1" if b else "0" for b in rng.random(p) < 0.5) for _ in range(8)})
            hung = codes[int(rng.integers(len(codes)))]
            store_path, started = str(Path(folder) / "s.sqlite"), str(Path(folder) / "started")
            proc = subprocess.Popen([sys.executable, "-c", _HANG_SCRIPT, str(REPO / "tests"), store_path, hung,
                                     started, ",".join(codes), str(timeout), str(lease)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.monotonic() + 120
                while not os.path.exists(started) and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                rows = np.array([[c == "1" for c in code] for code in codes])
                game = HangingGame(p, hang=[hung], started_file=os.devnull)
                begin = time.perf_counter()
                values = BudgetedGame(game, len(codes), store=EvaluationStore(store_path, lease_seconds=lease))(rows)
                waited = time.perf_counter() - begin
                a_out, _ = proc.communicate(timeout=120)
            finally:
                proc.kill()
            out["B finished"] += 1
            out["B max wait s"] = round(max(out["B max wait s"], waited), 2)
            out["wrong values served"] += int(np.sum(values != QuadraticGame(p).values(rows)))
            out["A reported the timeout"] += int("timed out after" in a_out)
            import sqlite3

            con = sqlite3.connect(store_path)
            out["claims left behind"] += con.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
            con.close()
            if log is not None:
                log(f"hang {t + 1:2d}: {len(codes)} coalitions, hung on {hung}; B waited {waited:.2f} s; "
                    f"A: {a_out.strip()[:90]}")
    return out


# -- model swaps (issue 27, item 1): explain never serves another model's values -------------------

def _swap_models(kind: str, rng: np.random.Generator) -> tuple[Any, Any, dict[str, Any], dict[str, Any], bool]:
    """``(model A, model B, explain arguments of A, of B, same)`` for one kind of swap; ``same``:
    B is A rebuilt (a control that must be served)."""
    d = 5
    X = rng.normal(size=(150, d))
    y = X @ rng.normal(size=d) + np.sin(X[:, 0])
    bg, row = X[:12], X[int(rng.integers(100, 150))]
    a_kw: dict[str, Any] = {"background": bg, "x": row}
    b_kw = dict(a_kw)
    if kind.startswith("lightgbm"):
        import lightgbm as lgb

        def booster(target: np.ndarray, rounds: int = 6) -> Any:
            return lgb.train({"verbose": -1, "num_threads": 1, "seed": 0}, lgb.Dataset(X, target), rounds)

        a = booster(y)
        b = {"lightgbm-retrained": lambda: booster(y * (1 + rng.random())), "lightgbm-more-trees": lambda: booster(y, 7),
             "lightgbm-reloaded": lambda: lgb.Booster(model_str=a.model_to_string())}[kind]()
        return a, b, a_kw, b_kw, kind == "lightgbm-reloaded"
    if kind.startswith("ridge"):
        from sklearn.linear_model import Ridge

        a = Ridge(alpha=1.0).fit(X, y)
        b = {"ridge-alpha": lambda: Ridge(alpha=2.0).fit(X, y), "ridge-refit": lambda: Ridge(alpha=1.0).fit(X, y + 1.0),
             "ridge-rebuilt": lambda: Ridge(alpha=1.0).fit(X, y)}[kind]()
        return a, b, a_kw, b_kw, kind == "ridge-rebuilt"
    if kind.startswith("torch"):
        import torch

        def linear(seed: int) -> Any:
            torch.manual_seed(seed)
            return torch.nn.Linear(d, 1).double()

        seed = int(rng.integers(1000))
        return linear(seed), linear(seed + (kind == "torch-weights")), a_kw, b_kw, kind == "torch-rebuilt"
    from sklearn.linear_model import Ridge

    model = Ridge().fit(X, y)
    if kind == "background":
        b_kw["background"] = X[12:24]
    elif kind == "row":
        b_kw["x"] = X[99]
    return model, model, a_kw, b_kw, False


SWAP_KINDS = ("lightgbm-retrained", "lightgbm-more-trees", "lightgbm-reloaded", "ridge-alpha", "ridge-refit",
              "ridge-rebuilt", "torch-weights", "torch-rebuilt", "background", "row")


def run_model_swap_campaign(trials: int = 30, seed: int = 0, log: Any = None) -> dict[str, Any]:
    """Each trial explains model A with a new store, then asks the same store for B: another
    model (LightGBM retrained or with one more tree, Ridge with another alpha or refitted, torch
    with other weights), another background or row (B must be refused, naming what differed), or A
    rebuilt (reloaded from its model string, refitted identically: B must be served, evaluating
    nothing). Counted: swaps refused, wrong values served, controls served, spurious refusals."""
    import warnings

    import shapleig
    from shapleig.errors import StoreMismatchError

    rng = np.random.default_rng(seed)
    out = {"trials": trials, "swaps": 0, "swaps refused naming the difference": 0, "wrong values served": 0,
           "controls": 0, "controls served": 0, "spurious refusals": 0}
    for t in range(trials):
        kind = SWAP_KINDS[t % len(SWAP_KINDS)]
        a, b, a_kw, b_kw, same = _swap_models(kind, rng)
        with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = str(Path(folder) / "s.sqlite")
            kw = {"budget": 32, "method": "exact", "progress": False}
            first = shapleig.explain(a, store=store, **a_kw, **kw)
            fresh = shapleig.explain(b, **b_kw, **kw)
            out["controls" if same else "swaps"] += 1
            try:
                second = shapleig.explain(b, store=store, **b_kw, **kw)
            except StoreMismatchError as exc:
                verdict = f"refused: {str(exc).split('What differs: ')[1].split('. Use')[0][:80]}"
                out["spurious refusals" if same else "swaps refused naming the difference"] += 1
            else:
                verdict = f"served ({second.info['model_calls']} model calls)"
                wrong = not np.allclose(second.values, fresh.values, rtol=1e-9, atol=1e-12)
                out["wrong values served"] += int(wrong)
                out["controls served"] += int(same and not wrong and second.info["model_calls"] == 0)
            del first
        if log is not None:
            log(f"swap {t + 1:2d} {kind:20s} {verdict}")
    return out


# ================================================================================================
# Issue 27 (store edges): hard links, clock skew, Ctrl-C of `shapleig run`, tampered schemas and
# non-finite values. Each campaign returns one dict of counts (printed by main() as one block).
# ================================================================================================

_OPEN_THROUGH = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from _games_for_parallel import QuadraticGame
from shapleig import BudgetedGame, EvaluationStore
from shapleig.errors import StoreError
from shapleig.games.coalitions import all_coalitions
rows = all_coalitions(10)[int(sys.argv[3])::2][:250]  # this process's half: 250 values, one commit each
try:
    BudgetedGame(QuadraticGame(10, seed=0), 1024, store=EvaluationStore(sys.argv[2]))(rows)
except StoreError as exc:
    print("REFUSED", "hard links" in str(exc), flush=True)
else:
    print("OPENED", len(rows), flush=True)
"""


def run_hard_link_campaign(trials: int = 5) -> dict[str, Any]:
    """Each trial: a store with 3 values gets a second hard link; two processes started at once
    write 250 values each, one through each name. Counted: opens refused naming the hard links
    (must be all), opens that went through, stores damaged afterwards (``PRAGMA integrity_check``)
    and values committed by a process but missing from the file (both must be 0)."""
    import sqlite3
    import subprocess

    from _games_for_parallel import QuadraticGame

    from shapleig import BudgetedGame, EvaluationStore
    from shapleig.games.coalitions import all_coalitions

    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    out = {"trials": trials, "opens": 0, "refused naming the links": 0, "opened": 0, "stores damaged": 0,
           "values lost": 0}
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as folder:
            path, link = Path(folder) / "s.sqlite", Path(folder) / "link.sqlite"
            with EvaluationStore(path) as store:
                BudgetedGame(QuadraticGame(10, seed=0), 1024, store=store)(all_coalitions(10)[-3:])
            os.link(path, link)
            procs = [subprocess.Popen([sys.executable, "-c", _OPEN_THROUGH, str(REPO / "tests"), str(name), str(k)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for k, name in enumerate((path, link))]
            committed = 3
            for proc in procs:
                text, _ = proc.communicate(timeout=300)
                out["opens"] += 1
                out["refused naming the links"] += int(text.startswith("REFUSED True"))
                if text.startswith("OPENED"):
                    out["opened"] += 1
                    committed += int(text.split()[1])
            con = sqlite3.connect(path)
            try:
                damaged = con.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
                left = con.execute("SELECT COUNT(DISTINCT coalition) FROM evaluations WHERE status='ok'").fetchone()[0]
            except sqlite3.DatabaseError:
                damaged, left = True, 0
            con.close()
            out["stores damaged"] += int(damaged)
            out["values lost"] += max(0, committed - left)
    return out


_SKEWED_OWNER = """
import sys, time
sys.path.insert(0, sys.argv[1])
_real = time.time
time.time = lambda: _real() + float(sys.argv[5])  # this process's wall clock runs ahead
import shapleig.runs.claims as claims
claims._HOST = "skewed-host"  # as if on another machine: its pid cannot be checked
import numpy as np
from _games_for_parallel import HangingGame
from shapleig import BudgetedGame, EvaluationStore
rows = np.array([[c == "1" for c in sys.argv[3]]])
BudgetedGame(HangingGame(rows.shape[1], hang=[sys.argv[3]], started_file=sys.argv[4]), 4,
             store=EvaluationStore(sys.argv[2], lease_seconds=1.0))(rows)
"""


def run_clock_skew_campaign(trials: int = 5, skew: float = 3600.0, lease: float = 1.0,
                            patience: float = 30.0) -> dict[str, Any]:
    """Each trial: process A, whose wall clock runs ``skew`` seconds ahead and which looks like
    another host, claims a coalition, writes one heartbeat and dies (SIGKILL) inside the game.
    This process (B, correct clock, lease ``lease``) then needs the coalition. Counted: B runs
    that finished within ``patience`` seconds, B's longest wait, wrong values served. Before the
    leases were read as heartbeat tokens on B's own clock, B waited ``skew`` seconds."""
    import subprocess

    from _games_for_parallel import HangingGame, QuadraticGame

    from shapleig import BudgetedGame, EvaluationStore

    env = {**os.environ, "PYTHONPATH": str(REPO), "SHAPLEIG_TEST_HANG": "1"}
    out = {"trials": trials, "skew s": skew, "lease s": lease, "B finished": 0, "B max wait s": 0.0,
           "B failed": 0, "wrong values served": 0}
    code = "110100"
    rows = np.array([[c == "1" for c in code]])
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as folder:
            store_path, started = str(Path(folder) / "s.sqlite"), str(Path(folder) / "started")
            proc = subprocess.Popen([sys.executable, "-c", _SKEWED_OWNER, str(REPO / "tests"), store_path, code,
                                     started, str(skew)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while not os.path.exists(started) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            proc.kill()  # dies holding its claim, heartbeat an hour in the future
            proc.communicate()
            result: dict[str, Any] = {}

            def b_run() -> None:
                try:
                    store = EvaluationStore(store_path, lease_seconds=lease)
                    game = HangingGame(6, hang=[code], started_file=os.devnull)  # A's game (hangs only in A)
                    result["values"] = BudgetedGame(game, 4, store=store)(rows)
                    store.close()
                except Exception as exc:  # noqa: BLE001 - counted
                    result["error"] = f"{type(exc).__name__}: {exc}"

            begin = time.perf_counter()
            worker = threading.Thread(target=b_run, daemon=True)
            worker.start()
            worker.join(patience)
            out["B failed"] += int("error" in result)
            if "values" in result:
                out["B finished"] += 1
                out["B max wait s"] = round(max(out["B max wait s"], time.perf_counter() - begin), 2)
                out["wrong values served"] += int(np.sum(result["values"] != QuadraticGame(6).values(rows)))
    return out


def run_interrupt_campaign(trials: int = 3, seed: int = 0, log: Any = None) -> dict[str, Any]:
    """Each trial: ``shapleig run`` (6 runs of the GP arm on wvg-7) gets SIGINT once a random
    number (1-4) of its runs are journaled; the same command is run again. Counted: interrupted
    commands that exited 130, runs kept, runs recomputed on resume although kept (must be 0),
    resumed tables incomplete (must be 0) and resumed tables differing from an uninterrupted run."""
    import subprocess

    import pandas as pd

    from shapleig_tasks.harness import journal_path

    rng = np.random.default_rng(seed)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    out = {"trials": trials, "exited 130": 0, "runs kept": 0, "kept runs recomputed": 0, "tables incomplete": 0,
           "tables differing from an uninterrupted run": 0}
    with tempfile.TemporaryDirectory() as folder:
        def command(name: str) -> list[str]:
            return [sys.executable, "-m", "shapleig_tasks.cli", "run", "--tasks", "wvg-7", "--methods", "shapleig",
                    "--budgets", "2p", "--seeds", "6", "--out", str(Path(folder) / name)]

        subprocess.run(command("reference.parquet") + ["--quiet"], env=env, cwd=folder, check=True,
                       capture_output=True, timeout=600)
        reference = pd.read_parquet(Path(folder) / "reference.parquet")
        for t in range(trials):
            out_path = Path(folder) / f"r{t}.parquet"
            journal = journal_path(out_path)
            wait_for = int(rng.integers(1, 5))
            # started as a terminal's foreground command: a campaign launched in the background
            # (``... &``) would otherwise pass on SIGINT ignored and no run would be interrupted
            proc = subprocess.Popen(command(out_path.name) + ["--quiet"], env=env, cwd=folder,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and proc.poll() is None:
                if journal.is_file() and len(journal.read_text().splitlines()) >= wait_for:
                    break
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)
            out["exited 130"] += int(proc.returncode == 130)
            kept = len(journal.read_text().splitlines()) if journal.is_file() else 0
            out["runs kept"] += kept
            done = subprocess.run(command(out_path.name), env=env, cwd=folder, capture_output=True, text=True,
                                  timeout=600)
            resumed_from = 0
            for line in done.stderr.splitlines():
                if line.startswith("resuming: "):
                    resumed_from = int(line.split()[1])
            out["kept runs recomputed"] += kept - resumed_from
            table = pd.read_parquet(out_path) if out_path.is_file() else None
            complete = table is not None and len(table) == len(reference) and not journal.exists()
            out["tables incomplete"] += int(not complete)
            if complete:
                cols = ["task", "method", "budget", "seed"]
                a = table.sort_values(cols)["values"].map(list).tolist()
                b = reference.sort_values(cols)["values"].map(list).tolist()
                out["tables differing from an uninterrupted run"] += int(a != b)
            if log is not None:
                log(f"interrupt {t + 1}: SIGINT after {wait_for} journaled runs; kept {kept}, resumed from "
                    f"{resumed_from}; exit {proc.returncode}")
    return out


_TRIGGERS_AND_VIEWS = (
    "CREATE TRIGGER sqlitex_rewrite AFTER INSERT ON evaluations BEGIN UPDATE evaluations SET value = value * 10 "
    "WHERE id = NEW.id; END",
    "CREATE TRIGGER SQLITE9 AFTER INSERT ON evaluations BEGIN UPDATE evaluations SET value = 0 WHERE id = NEW.id; END",
    "CREATE TRIGGER times_ten AFTER INSERT ON evaluations BEGIN UPDATE evaluations SET value = value * 10 "
    "WHERE id = NEW.id; END",
    "CREATE VIEW sqliteview AS SELECT * FROM evaluations",
    "CREATE VIEW sqlite0 AS SELECT 1",
    "CREATE VIEW v AS SELECT * FROM evaluations",
)


def run_tamper_campaign() -> dict[str, Any]:
    """Stores doctored by hand: a trigger or view (names that look internal included), a value
    set to +-9e999 before opening, and after opening (read back through a running store).
    Counted: doctored stores refused (StoreError) and wrong or non-finite values served."""
    import sqlite3

    from _games_for_parallel import QuadraticGame

    from shapleig import BudgetedGame, EvaluationStore
    from shapleig.errors import StoreError

    rows = np.tril(np.ones((6, 6), dtype=bool))
    game = QuadraticGame(6, seed=0)
    cases = [("schema", s) for s in _TRIGGERS_AND_VIEWS] + [("inf before open", v) for v in ("9e999", "-9e999")]
    cases += [("inf after open", v) for v in ("9e999", "-9e999")]
    out = {"doctored stores": len(cases), "refused": 0, "non-finite values served": 0, "wrong values served": 0}
    for kind, what in cases:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "s.sqlite"
            with EvaluationStore(path) as store:
                BudgetedGame(game, 64, store=store)(rows[:4])
            statement = what if kind == "schema" else f"UPDATE evaluations SET value = {what} WHERE id = 3"
            store = None
            try:
                if kind == "inf after open":
                    store = EvaluationStore(path)
                con = sqlite3.connect(path)
                con.execute(statement)
                con.commit()
                con.close()
                store = store or EvaluationStore(path)
                values = BudgetedGame(game, 64, store=store)(rows[:4])
            except StoreError:
                out["refused"] += 1
                continue
            finally:
                if store is not None:
                    store.close()
            out["non-finite values served"] += int(np.sum(~np.isfinite(values)))
            out["wrong values served"] += int(np.sum(values != game.values(rows[:4])))
    return out


# Issue 34: finite values edited by hand were served (the type and finiteness checks cannot see them).
_EDITS = (
    ("value + 1", "before open", "UPDATE evaluations SET value = value + 1 WHERE id = 3"),
    ("value = '1.5' (stored as REAL)", "before open", "UPDATE evaluations SET value = '1.5' WHERE id = 3"),
    ("value * (1 + 1e-15)", "before open", "UPDATE evaluations SET value = value * (1 + 1e-15) WHERE id = 3"),
    ("value + 1", "after open", "UPDATE evaluations SET value = value + 1 WHERE id = 3"),
    ("row deleted", "before open", "DELETE FROM evaluations WHERE id = 3"),
    ("row copied from another game's store, relabelled", "before open",
     "INSERT INTO evaluations (fingerprint, coalition, value, seconds, time, status, attempt, error{digest}) SELECT "
     "(SELECT value FROM main.meta WHERE key = 'fingerprint'), coalition, value, seconds, time, status, attempt, "
     "error{digest} FROM other.evaluations WHERE coalition = '111110'"),
)


def _hpi_score(cfg: Any) -> float:
    """The objective behind the HPI campaign's surrogate (a cheap stand-in for a tuning benchmark)."""
    return (-(cfg["a"] - 0.3) ** 2 + 0.1 * cfg["b"] + {"x": 0.0, "y": 0.5, "z": 0.2}[cfg["c"]]
            + 0.05 * cfg["a"] * cfg["b"] + 0.1 * np.log(cfg["d"]))


def run_hpi_campaign() -> dict[str, Any]:
    """HyperSHAP's tunability game (``shapleig.hpo.hypershap_game``, extra hypershap) on a store, then
    the same game with one thing changed that changes its values: the searcher's seed, its number
    of samples, the surrogate trained on the targets times 2 (issue 34: each was served the first
    game's values). Counted: variants whose values differ, variants refused by the store
    (StoreMismatchError) and values served that are not the variant's own."""
    from ConfigSpace import Categorical, ConfigurationSpace, Float, Integer
    from hypershap import ExplanationTask
    from sklearn.neighbors import KNeighborsRegressor

    from shapleig import BudgetedGame, EvaluationStore, all_coalitions
    from shapleig.errors import StoreMismatchError
    from shapleig.hpo import hypershap_game

    def task(scale: float = 1.0) -> Any:
        cs = ConfigurationSpace(seed=1)
        cs.add([Float("a", (0.0, 1.0), default=0.5), Integer("b", (1, 10), default=3),
                Categorical("c", ["x", "y", "z"], default="x"), Float("d", (1e-3, 1.0), log=True, default=0.1)])
        return ExplanationTask.from_function(cs, lambda cfg: scale * _hpi_score(cfg), n_samples=60,
                                             base_model=KNeighborsRegressor(n_neighbors=5, weights="distance"))

    rows = all_coalitions(4)
    variants = {"searcher seed 0 -> 1": lambda: hypershap_game(task(), "tunability", n_samples=200, seed=1),
                "samples 200 -> 100": lambda: hypershap_game(task(), "tunability", n_samples=100, seed=0),
                "surrogate on 2 y": lambda: hypershap_game(task(2.0), "tunability", n_samples=200, seed=0)}
    out = {"variants": len(variants), "variants whose values differ": 0, "refused": 0, "served own values": 0,
           "wrong values served": 0}
    for make in variants.values():
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "hpi.sqlite"
            first = hypershap_game(task(), "tunability", n_samples=200, seed=0)
            with EvaluationStore(path) as store:
                old = BudgetedGame(first, 16, store=store)(rows)
            variant = make()
            own = np.asarray(variant(rows))
            out["variants whose values differ"] += int(not np.allclose(own, old))
            try:
                with EvaluationStore(path) as store:
                    served = BudgetedGame(make(), 16, store=store)(rows)
            except StoreMismatchError:
                out["refused"] += 1
                continue
            wrong = int(np.sum(~np.isclose(served, own)))
            out["wrong values served"] += wrong
            out["served own values"] += int(wrong == 0)
    return out


def run_edit_campaign() -> dict[str, Any]:
    """Stores whose rows were edited by hand: a finite value changed (``+ 1``, the text ``'1.5'``,
    which SQLite stores as REAL 1.5, one unit in the last place), before opening and after opening
    (read back through a running store), a row deleted, and a row copied in from the store of
    another game with its fingerprint relabelled. Each store holds 4 values; the run asks for 5.
    Counted: edited stores refused (StoreError) and wrong values served."""
    import sqlite3

    from _games_for_parallel import QuadraticGame

    from shapleig import BudgetedGame, EvaluationStore
    from shapleig.errors import StoreError

    rows = np.tril(np.ones((6, 6), dtype=bool))[:5]
    game, other_game = QuadraticGame(6, seed=0), QuadraticGame(6, seed=1)
    out = {"edited stores": len(_EDITS), "refused": 0, "wrong values served": 0, "served": []}
    for what, when, statement in _EDITS:
        with tempfile.TemporaryDirectory() as folder:
            path, other = Path(folder) / "s.sqlite", Path(folder) / "other.sqlite"
            for where, g in ((path, game), (other, other_game)):
                with EvaluationStore(where) as store:
                    BudgetedGame(g, 64, store=store)(rows[: 4 if where == path else 5])
            store = EvaluationStore(path) if when == "after open" else None
            con = sqlite3.connect(path)
            columns = {r[1] for r in con.execute("PRAGMA table_info(evaluations)")}
            con.execute("ATTACH DATABASE ? AS other", (str(other),))
            con.execute(statement.format(digest=", digest" if "digest" in columns else ""))
            con.commit()
            con.close()
            try:
                store = store or EvaluationStore(path)
                values = BudgetedGame(game, 64, store=store)(rows)
            except StoreError:
                out["refused"] += 1
                continue
            finally:
                if store is not None:
                    store.close()
            wrong = int(np.sum(values != game.values(rows)))
            out["wrong values served"] += wrong
            out["served"].append(f"{what} ({when}): {wrong} wrong")
    return out


def run_fifo_campaign(patience: float = 120.0, log: Any = None) -> dict[str, Any]:
    """``shapleig run`` (a subprocess, as a user runs it) with a FIFO and no reader at one of its outputs:
    the run journal ``<out>.partial.jsonl`` or the results table. Counted: commands that returned
    (a command still blocked after ``patience`` seconds is killed and counted as hung: must be 0),
    that exited 2 with one line naming the FIFO, and FIFOs replaced by a file (must be 0)."""
    import subprocess

    from shapleig_tasks.harness import journal_path

    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cases = {"journal": journal_path, "results table": lambda out: out}
    out = {"commands": len(cases), "returned": 0, "hung (killed)": 0, "exited 2 naming the FIFO": 0,
           "FIFOs replaced": 0}
    for name, where in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            table = Path(folder) / "r.parquet"
            fifo = where(table)
            os.mkfifo(fifo)
            command = [sys.executable, "-m", "shapleig_tasks.cli", "run", "--tasks", "wvg-7", "--methods",
                       "kernelshap", "--budgets", "2p", "--seeds", "1", "--quiet", "--out", str(table)]
            proc = subprocess.Popen(command, env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            try:
                _, err = proc.communicate(timeout=patience)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                out["hung (killed)"] += 1
            else:
                out["returned"] += 1
                lines = err.strip().splitlines()
                out["exited 2 naming the FIFO"] += int(proc.returncode == 2 and len(lines) == 1
                                                       and f"{fifo} is a FIFO" in lines[0])
            out["FIFOs replaced"] += int(not fifo.is_fifo())
            if log is not None:
                log(f"FIFO at the {name}: exit {proc.returncode}; {err.strip()[:160]}")
    return out


def run_store_edge_campaigns(link_trials: int, skew_trials: int, interrupt_trials: int, tamper: bool,
                             seed: int = 0, log: Any = None, edit: bool = False) -> dict[str, Any]:
    """The issue-27 campaigns that were asked for (a count of 0 skips one), and issue 34's ``edit``."""
    found: dict[str, Any] = {}
    if link_trials > 0:
        found["hard links"] = run_hard_link_campaign(link_trials)
    if skew_trials > 0:
        found["clock skew"] = run_clock_skew_campaign(skew_trials)
    if interrupt_trials > 0:
        found["Ctrl-C of shapleig run"] = run_interrupt_campaign(interrupt_trials, seed, log=log)
    if tamper:
        found["tampered stores"] = run_tamper_campaign()
    if edit:
        found["edited values"] = run_edit_campaign()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--creation-trials", type=int, default=0,
                        help="also: this many new stores, each created by --creation-processes processes at once")
    parser.add_argument("--creation-processes", type=int, default=4)
    parser.add_argument("--hang-trials", type=int, default=0,
                        help="also: this many trials of a real hung evaluation (timeout 1 s) on a shared store")
    parser.add_argument("--swap-trials", type=int, default=0,
                        help="also: this many model swaps under explain(store=...) (another model, background or row)")
    parser.add_argument("--link-trials", type=int, default=0,
                        help="also: this many stores opened through two hard links by two processes at once")
    parser.add_argument("--skew-trials", type=int, default=0,
                        help="also: this many claims left by a dead process whose clock runs an hour ahead")
    parser.add_argument("--interrupt-trials", type=int, default=0,
                        help="also: this many `shapleig run` commands interrupted with SIGINT and run again")
    parser.add_argument("--tamper", action="store_true",
                        help="also: stores with triggers/views (internal-looking names) and +-inf values")
    parser.add_argument("--edit", action="store_true",
                        help="also: stores with a finite value edited by hand, a row deleted, a row copied in")
    parser.add_argument("--hpi", action="store_true",
                        help="also: a HyperSHAP game's store reused with another searcher seed, sample count or surrogate")
    parser.add_argument("--fifo", action="store_true",
                        help="also: `shapleig run` with a FIFO at its run journal or results table (must exit 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", nargs="+", default=None, choices=sorted(CONFIGS))
    parser.add_argument("--json", default=None, help="also write the summary and every trial to this file")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    start = time.perf_counter()
    summary: dict[str, Any] = {}
    campaign = Campaign()
    if args.trials > 0:
        campaign = run_campaign(args.trials, args.seed, args.configs, log=print)
        summary = campaign.summary()
        print(f"\nfault injection: {time.perf_counter() - start:.0f} s")
        for key, value in summary.items():
            print(f"  {key}: {value}")
    if args.creation_trials > 0:
        summary["concurrent creation"] = run_creation_campaign(args.creation_trials, args.creation_processes)
        print("\nconcurrent creation of one new store:")
        for key, value in summary["concurrent creation"].items():
            print(f"  {key}: {value}")
    if args.hang_trials > 0:
        summary["hung evaluations"] = run_hang_campaign(args.hang_trials, args.seed, log=print)
        print("\nhung evaluations on a shared store:")
        for key, value in summary["hung evaluations"].items():
            print(f"  {key}: {value}")
    if args.swap_trials > 0:
        summary["model swaps"] = run_model_swap_campaign(args.swap_trials, args.seed, log=print)
        print("\nmodel swaps under explain(store=...):")
        for key, value in summary["model swaps"].items():
            print(f"  {key}: {value}")
    edges = run_store_edge_campaigns(args.link_trials, args.skew_trials, args.interrupt_trials, args.tamper,
                                     args.seed, log=print, edit=args.edit)
    if args.fifo:
        edges["FIFO at an output of shapleig run"] = run_fifo_campaign(log=print)
    if args.hpi:
        edges["HyperSHAP game reused with one thing changed"] = run_hpi_campaign()
    for name, figures in edges.items():
        summary[name] = figures
        print(f"\n{name}:")
        for key, value in figures.items():
            print(f"  {key}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "trials": [asdict(t) for t in campaign.trials]},
                                              indent=1))


if __name__ == "__main__":
    import fault_injection  # the module by name, so run processes and pool workers find FaultGame

    fault_injection.main()
