"""Every script under scripts/ starts: ``--help`` exits 0 and prints its usage (a broken import or
a moved path fails here, not in a benchmark run weeks later)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "scripts").rglob("*.py"))


def test_scripts_are_grouped_by_purpose() -> None:
    groups = {p.parent.name for p in SCRIPTS}
    assert groups <= {"bench", "studies", "repro", "docs"}, groups
    assert not list((REPO / "scripts").glob("*.py")), "scripts belong in scripts/<bench|studies|repro|docs>/"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.relative_to(REPO / "scripts").as_posix() for p in SCRIPTS])
def test_script_help_runs(script: Path) -> None:
    run = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "usage" in run.stdout.lower()
