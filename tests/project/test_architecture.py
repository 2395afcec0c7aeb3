"""docs/architecture.md lists every module, and the import contracts hold (no cycle, no upward import)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("shapleig", "baselines", "tasks")  # folders; installed as shapleig, shapleig_baselines, shapleig_tasks


def test_every_module_is_listed_in_the_architecture_page() -> None:
    page = (REPO / "docs/architecture.md").read_text()
    missing = [p.relative_to(REPO).as_posix() for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))
               if f"`{p.relative_to(REPO).as_posix()}`" not in page]
    assert not missing, f"modules missing from docs/architecture.md (python scripts/docs/architecture_tables.py): {missing}"


def test_every_listed_module_exists() -> None:
    page = (REPO / "docs/architecture.md").read_text()
    import re

    listed = re.findall(r"^\| `((?:shapleig|baselines|tasks)/[\w/]+\.py)` \|", page, flags=re.M)
    assert listed, "no module table found"
    gone = [path for path in listed if not (REPO / path).is_file()]
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"


@pytest.mark.skipif(importlib.util.find_spec("importlinter") is None, reason="import-linter not installed")
def test_import_contracts_hold() -> None:
    """tasks -> baselines -> shapleig, the core's layers downward only, no cycles (function-level too)."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    run = subprocess.run([exe, "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
