"""Ctrl-C during ``shapleig run`` keeps every finished run, and the same command resumes (issue 27).

Before: the table was written only at the end, so an interrupt at 70% left nothing to resume
although the README said ``run`` can be resumed. Now each finished run is journaled beside the
output (``<out>.partial.jsonl``, flushed per run); a rerun reads it and runs only the rest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapleig_baselines.permutation import PermutationSampling
from shapleig_tasks import harness
from shapleig_tasks.methods import MethodSpec

ROOT = Path(__file__).resolve().parents[2]


class InterruptedPermutation(PermutationSampling):
    """Permutation sampling that counts its runs and raises KeyboardInterrupt (Ctrl-C) at one of them."""

    calls = 0
    interrupt_at: int | None = None

    def _estimate(self, game, seed):
        type(self).calls += 1
        if type(self).calls == type(self).interrupt_at:
            raise KeyboardInterrupt
        return super()._estimate(game, seed)


def _spec() -> MethodSpec:
    return MethodSpec("permutation", factory=InterruptedPermutation, anytime=False)


def _run(out: Path, log: list[str]) -> pd.DataFrame:
    return harness.run_benchmark(["wvg-7"], [_spec()], ["2p", "4p"], 5, out=out, progress=False, log=log.append)


def test_an_interrupted_run_keeps_finished_runs_and_resumes(tmp_path):
    out = tmp_path / "results.parquet"
    InterruptedPermutation.calls, InterruptedPermutation.interrupt_at = 0, 8  # run 8 of 10 is interrupted
    log: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        _run(out, log)
    journal = harness.journal_path(out)
    assert not out.exists() and journal.is_file()
    kept = [json.loads(line) for line in journal.read_text().splitlines()]
    assert len(kept) == 7, kept  # the 7 finished runs (run 8 was cut)
    assert any("7 of 10 runs are kept" in line and "again to resume" in line for line in log), log

    InterruptedPermutation.calls, InterruptedPermutation.interrupt_at = 0, None
    log.clear()
    resumed = _run(out, log)
    assert InterruptedPermutation.calls == 3  # only the 3 runs the journal did not hold
    assert any("resuming: 7 of 10 runs" in line for line in log), log
    assert out.is_file() and not journal.exists()  # the table is written, the journal gone
    kept_walls = sorted(r["wall_s"] for entry in kept for r in entry["rows"])
    assert set(kept_walls) <= set(resumed["wall_s"])  # the kept rows, not recomputed ones

    InterruptedPermutation.calls = 0
    fresh = _run(tmp_path / "fresh.parquet", [])
    cols = ["task", "method", "budget", "seed", "evaluations", "mse"]
    pd.testing.assert_frame_equal(resumed[cols], fresh[cols])
    np.testing.assert_array_equal(np.stack(resumed["values"]), np.stack(fresh["values"]))


def test_the_journal_ignores_other_plans_errors_and_a_torn_line(tmp_path):
    out = tmp_path / "results.parquet"
    InterruptedPermutation.calls, InterruptedPermutation.interrupt_at = 0, 3
    with pytest.raises(KeyboardInterrupt):
        _run(out, [])
    journal = harness.journal_path(out)
    with open(journal, "a") as f:
        f.write('{"key": "another plan", "rows": [{"error": ""}]}\n{"key": "torn')  # killed mid-write
    InterruptedPermutation.calls, InterruptedPermutation.interrupt_at = 0, None
    _run(out, [])
    assert InterruptedPermutation.calls == 8  # 2 of 10 were kept


# The command as a user runs it, except that the journal's append announces the second finished run
# (a file) and then waits for the signal: the test sends SIGINT on that state, never after a time,
# so a fast machine cannot finish every run before the interrupt arrives.
_PAUSING_CLI = """
import signal, sys, time
from pathlib import Path
from shapleig_tasks import cli, harness

# a shell's background job starts with SIGINT ignored (so would this test's run): Ctrl-C reaches a
# foreground command, whose handler this restores
signal.signal(signal.SIGINT, signal.default_int_handler)
sentinel = Path(sys.argv[1])
append = harness.RunJournal.append


def append_then_wait(self, rows):
    append(self, rows)
    if self.n_kept == 2:
        sentinel.touch()
        while True:  # interrupted by the test's SIGINT (KeyboardInterrupt here, in the main thread)
            time.sleep(0.05)


harness.RunJournal.append = append_then_wait
sys.exit(cli.main(sys.argv[2:]))
"""


def test_ctrl_c_during_shapleig_run_then_the_same_command_resumes(tmp_path):
    """The command itself, interrupted with SIGINT once two of its runs are journaled."""
    out = tmp_path / "r.parquet"
    cli_args = ["run", "--tasks", "wvg-7", "--methods", "shapleig", "--budgets", "2p", "--seeds", "6",
                "--out", str(out), "--quiet"]
    args = [sys.executable, "-m", "shapleig_tasks.cli", *cli_args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    driver, sentinel = tmp_path / "pausing_cli.py", tmp_path / "two-runs-journaled"
    driver.write_text(_PAUSING_CLI)
    proc = subprocess.Popen([sys.executable, str(driver), str(sentinel), *cli_args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = harness.journal_path(out)
    deadline = time.monotonic() + 600  # a safety net for a broken run only: the signal waits for the state
    while not sentinel.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sentinel.exists(), proc.communicate(timeout=60)[1] if proc.poll() is not None else "no run journaled"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    n_kept = len(journal.read_text().splitlines())
    assert n_kept == 2 and not out.exists()
    done = subprocess.run(args[:-1], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"resuming: {n_kept} of 6 runs" in done.stderr
    assert len(pd.read_parquet(out)) == 6 and not journal.exists()
