"""Kill a design loop with SIGKILL mid-run, resume it from its EvaluationStore: no coalition is
evaluated twice, and the final estimate equals an uninterrupted run with the same seed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from shapleig import EvaluationStore

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from _games_for_parallel import QuadraticGame, read_log  # noqa: E402

P, BUDGET, SEED = 5, 14, 3
# Default run: hyperparameters fitted after the design and once more at the end (quick). The slow
# variant refits on a geometric schedule and is killed inside the initial design.
QUICK = dict(refit="never", seed=SEED, progress=False)
REFITS = dict(refit="geometric", hand_over=4, seed=SEED, progress=False)

# The run to be killed: once `stop_after` evaluations are logged, the game's next call writes
# `stop_file` and blocks until the test kills the process from outside.
RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from _games_for_parallel import QuadraticGame
    from shapleig import DesignLoop, EvaluationStore
    game = QuadraticGame({p}, seed=7, log_path={log!r}, stop_after={k}, stop_file={stop!r})
    DesignLoop(game, {budget}, store=EvaluationStore({store!r}), **{options!r}).run()
    raise SystemExit("the run was not stopped")
    """
)


def _run_and_kill(tmp_path: Path, k: int, options: dict) -> tuple[str, str]:
    log, stop, store = str(tmp_path / "calls.log"), str(tmp_path / "stop"), str(tmp_path / "store.db")
    code = RUN.format(tests=str(TESTS), p=P, log=log, k=k, stop=stop, budget=BUDGET, store=store,
                      options=options)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not os.path.exists(stop):
        if proc.poll() is not None:
            raise AssertionError(f"run ended before the kill point:\n{proc.stdout.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("run did not reach the kill point in time")
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    return log, store


@pytest.mark.parametrize(
    "k, options",
    [
        pytest.param(9, QUICK, id="after-design"),
        pytest.param(3, REFITS, id="in-design-with-refits", marks=pytest.mark.slow),
    ],
)
def test_killed_run_resumes_without_reevaluating(tmp_path, k, options):
    from shapleig import DesignLoop, ShaplEIG

    log, store_path = _run_and_kill(tmp_path, k, options)
    assert len(read_log(log)) == k
    store = EvaluationStore(store_path)
    assert len(store) == k  # every value was committed before the next evaluation started

    # Resume through the estimator front, with the same game (same fingerprint) and seed.
    game = QuadraticGame(P, seed=7, log_path=log)
    estimator_options = {key: v for key, v in options.items() if key != "seed"}
    resumed = ShaplEIG.from_options(**estimator_options).estimate(game, BUDGET, seed=SEED, store=store)
    calls = read_log(log)
    assert len(calls) == BUDGET and len(set(calls)) == BUDGET  # no coalition evaluated twice
    assert resumed.info["n_store_hits"] == k and resumed.info["n_game_evaluations"] == BUDGET - k
    assert len(store) == BUDGET

    # An uninterrupted run with the same seed (no store) ends with the same estimate.
    reference = DesignLoop(QuadraticGame(P, seed=7), BUDGET, **options).run()
    np.testing.assert_array_equal(resumed.values, reference.values)
    np.testing.assert_array_equal(resumed.std, reference.std)
    assert resumed.evaluations == reference.evaluations == BUDGET


@pytest.mark.parametrize("mode", ["raise", "nan"])
def test_loop_stops_on_a_failing_coalition_and_resumes_after_the_fix(tmp_path, mode):
    """A game that keeps failing (raising, or returning NaN) on the 11th coalition the loop asks
    for: the loop stops with EvaluationFailedError naming it, the 10 values before are in the
    store; rerun with the game repaired, it finishes like a run that never failed."""
    from _games_for_parallel import FailingGame

    from shapleig import DesignLoop, EvaluationFailedError
    from shapleig.games.coalitions import format_coalition

    reference_loop = DesignLoop(QuadraticGame(P, seed=7), BUDGET, **QUICK)
    reference = reference_loop.run()
    code = lambda row: "".join("1" if b else "0" for b in row)  # noqa: E731
    bad = reference_loop.X[10]
    log = str(tmp_path / "calls.log")
    # fails 2 times = 1 + max_retries (default 1), then the "repaired" game behaves
    game = FailingGame(P, bad=[code(bad)], mode=mode, failures=2, seed=7, log_path=log)
    store = EvaluationStore(tmp_path / "s.db")
    with pytest.raises(EvaluationFailedError, match=re.escape(f"coalition {format_coalition(bad)}")):
        DesignLoop(game, BUDGET, store=store, **QUICK).run()
    X, _ = store.history()
    np.testing.assert_array_equal(X, reference_loop.X[:10])
    assert [r.status for r in store][10:] == ["error" if mode == "raise" else "nonfinite"] * 2

    resumed = DesignLoop(game, BUDGET, store=store, **QUICK).run()
    np.testing.assert_array_equal(resumed.values, reference.values)
    calls = [c for c in read_log(log) if not c.startswith("!")]
    assert len(calls) == len(set(calls)) == BUDGET


def test_retries_configured_through_the_evaluator_reach_the_loop(tmp_path):
    """DesignLoop takes ``evaluator=``; an evaluator's own max_retries lets a loop survive a
    coalition (here the grand one, always in the design) that fails 3 times."""
    from _games_for_parallel import FailingGame

    from shapleig import DesignLoop, EvaluationFailedError, SerialEvaluator

    def game():
        return FailingGame(P, bad=["1" * P], mode="raise", failures=3, seed=7, log_path=str(log))

    log = tmp_path / "a.log"
    with pytest.raises(EvaluationFailedError, match=r"failed in 2 attempts \(max_retries = 1\)"):
        DesignLoop(game(), BUDGET, **QUICK).run()  # default: 1 retry
    log = tmp_path / "b.log"
    loop = DesignLoop(game(), BUDGET, evaluator=SerialEvaluator(max_retries=3), **QUICK)
    est = loop.run()
    assert est.evaluations == BUDGET and read_log(log).count("!" + "1" * P) == 3
    # the design is one batch call: it raised once, then {0..4} failed twice alone, then worked
    assert loop.game.accounting()["n_failed_attempts"] == 2
