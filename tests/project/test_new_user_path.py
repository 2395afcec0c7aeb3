"""A new user's path: what the README and the guide show runs as shown, and its rough edges are gone
(the hypershap extra named before a long run, distinct output folders, every method's options
listed, the demo's caches out of ``git status``, a license and a valid citation file)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_benchmark_hpi_names_the_hypershap_extra_before_the_run() -> None:
    code = ("import sys, runpy; sys.modules['hypershap'] = None; "
            "sys.argv = ['benchmark_hpi.py', '--hypershap', '--datasets', 'diabetes']; "
            f"runpy.run_path({str(REPO / 'scripts/studies/benchmark_hpi.py')!r}, run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "pip install -e '.[hypershap]'" in run.stderr and "tuning runs ready" not in run.stdout


def test_readme_and_guide_hpi_examples_write_to_different_folders() -> None:
    def outs(path: Path) -> list[str]:
        text = path.read_text()
        return [m for block in re.findall(r"```bash\n(.*?)```", text, re.S)
                for m in re.findall(r"shapleig hpi[^\n]*(?:\\\n[^\n]*)*?--out (\S+)", block)]

    readme, guide = outs(REPO / "README.md"), outs(REPO / "docs/guide.md")
    assert readme and guide
    everything = readme + guide
    assert len(everything) == len(set(everything)), everything


def test_methods_lists_every_methods_options(capsys) -> None:
    from shapleig_tasks.cli import main

    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    block = out.split("\nkernelshap ")[1].split("\n")[1]
    assert block.strip().startswith("options:") and "paired=False" in block
    assert "options of the GP arms" in out and "refit='auto'" in out and "pool_size=1024" in out
    assert "model (ModelOptions): noise=1e-06" in out and "fit_points=512" in out  # the groups, by name
    assert "svarm-plus" in out and "empty_strata='warmup'" in out
    assert "every method, its options" in (REPO / "README.md").read_text()  # the promise this test keeps


def test_demo_caches_are_not_untracked_files() -> None:
    ignore = (REPO / ".gitignore").read_text().split()
    assert "shapleig-demo/" in ignore or "/shapleig-demo/" in ignore
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    probe = REPO / "shapleig-demo" / "cache" / "probe.npz"
    created = not probe.exists()
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_bytes(b"x")
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout
        assert "shapleig-demo" not in status
    finally:
        if created:
            probe.unlink()


def test_license_and_citation() -> None:
    yaml = pytest.importorskip("yaml")
    license_text = (REPO / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "Permission is hereby granted" in license_text
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["license"] == "MIT"
    assert cff["title"] == "shapleig" and cff["authors"] and cff["message"]
    pref = cff["preferred-citation"]
    assert pref["type"] == "conference-paper" and "ShaplEIG" in pref["title"] and pref["year"] == 2026
    assert [a["family-names"] for a in pref["authors"]][:2] == ["Rundel", "Fumagalli"]
