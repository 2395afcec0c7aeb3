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

Run: ``PYTHONPATH=. python scripts/studies/fault_injection.py --trials 60`` (about a minute on 2 cores);
``--trials 0 --creation-trials 50 --hang-trials 10`` runs only the two new campaigns.

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

    return ShaplEIG(refit="every", batch_size=CONFIGS[config]["batch_size"], pool_size=64)


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
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "trials": [asdict(t) for t in campaign.trials]},
                                              indent=1))


if __name__ == "__main__":
    import fault_injection  # the module by name, so run processes and pool workers find FaultGame

    fault_injection.main()
