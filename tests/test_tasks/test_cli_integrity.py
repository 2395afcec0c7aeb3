"""CLI input errors exit 2 with one line, before anything is evaluated (seeds, timeouts, files).

Run as ``python -m shapleig_tasks.cli`` in a subprocess, as a user would: that path once raised the
explain command's errors as tracebacks (the module ran twice, as ``__main__`` and as
``shapleig_tasks.cli``, with two different ``UsageError`` classes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "shapleig_tasks.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("argv, says", [
    (["explain", "--model", "missing.txt", "--data", "x.csv", "--row", "0"], "model file missing.txt does not exist"),
    (["explain", "--model", "missing.txt", "--data", "x.csv", "--row", "0", "--seed", "-1"],
     "--seed -1: seed must be a non-negative int"),
    (["explain", "--model", "missing.txt", "--data", "x.csv", "--row", "0", "--seed", str(2**63)],
     "seed must be below 2**63"),
    (["explain", "--model", "missing.txt", "--data", "x.csv", "--row", "0", "--eval-timeout", "-3"],
     "--eval-timeout must be a finite number of seconds > 0"),
    (["run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "20", "--seeds", f"{2**63},",
      "--out", "r.parquet"], "seeds are below 2**63"),
    (["run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "20", "--seeds", f"0-{2**64}",
      "--out", "r.parquet"], "seeds are below 2**63"),
    (["run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "20", "--seeds", str(10**12),
      "--out", "r.parquet"], "at most 100000 seeds"),
    (["run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "20", "--seeds", "2",
      "--out", "r.parquet", "--eval-timeout", "0"], "--eval-timeout must be a finite number of seconds > 0"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(argv, says, tmp_path, capsys, monkeypatch):
    from shapleig_tasks.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert not (tmp_path / "r.parquet").exists()


def test_python_dash_m_reports_explain_errors_in_one_line(tmp_path):
    """The ``python -m shapleig_tasks.cli`` path (a second copy of the module) exits 2 with one line too."""
    out = _cli("explain", "--model", "missing.txt", "--data", "x.csv", "--row", "0", "--seed", "-1", cwd=tmp_path)
    assert out.returncode == 2, out
    assert out.stderr.strip().splitlines() == ["shapleig explain: error: --seed -1: seed must be a non-negative int, "
                                               "got -1"], out.stderr


def test_the_largest_seed_runs_and_is_recorded(tmp_path, monkeypatch):
    from shapleig_tasks.cli import main

    monkeypatch.chdir(tmp_path)
    seed = 2**63 - 1
    assert main(["run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "16", "--seeds", f"{seed},",
                 "--out", "r.parquet", "--quiet"]) == 0
    import pandas as pd

    assert pd.read_parquet(tmp_path / "r.parquet")["seed"].tolist() == [seed]
