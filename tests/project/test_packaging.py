"""Packaging: every package folder is installed, and the benchmark packages have names of their own.

The repository's ``tasks/`` and ``baselines/`` folders install as ``shapleig_tasks`` and
``shapleig_baselines``: a user's own ``tasks.py`` or ``baselines.py`` in the working directory must
not shadow them (it did while they installed as ``tasks`` and ``baselines``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

REPO = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_installed() -> None:
    config = _setuptools()
    folders = {v: k for k, v in config["package-dir"].items()}
    expected = set()
    for init in REPO.glob("*/**/__init__.py"):
        rel = init.parent.relative_to(REPO)
        if rel.parts[0] not in ("shapleig", "tasks", "baselines"):
            continue
        top = folders.get(rel.parts[0], rel.parts[0])
        expected.add(".".join((top, *rel.parts[1:])))
    assert expected == set(config["packages"])


def test_a_users_tasks_module_does_not_shadow_the_packages(tmp_path: Path) -> None:
    for name in ("tasks", "baselines"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('the user module was imported')\n")
    code = ("from shapleig_tasks.ml import DataValuationGame\n"
            "import shapleig_baselines as baselines\n"
            "print(baselines.get('kernelshap').name)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "kernelshap"


def test_the_dashboards_assets_and_the_demos_table_ship_as_package_data() -> None:
    """The page works offline from an installed package: its script and stylesheet, and the demo's
    precomputed exact values, are package data (a glob of pyproject.toml matches each file)."""
    from fnmatch import fnmatch

    globs = _setuptools()["package-data"]["shapleig_tasks"]
    files = [p for folder in ("tasks/dashboard_static", "tasks/data/demo") for p in (REPO / folder).rglob("*")
             if p.is_file()]
    assert {p.suffix for p in files} >= {".js", ".css", ".npz", ".json", ".md"}
    unshipped = [p.relative_to(REPO / "tasks").as_posix() for p in files
                 if not any(fnmatch(p.relative_to(REPO / "tasks").as_posix(), g) for g in globs)]
    assert not unshipped, unshipped
