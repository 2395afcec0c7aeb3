"""scripts/studies/async_overlap_accuracy.py: its report from a hand-made table, and one real run of each mode."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "studies" / "async_overlap_accuracy.py"


def _module():
    for path in (SCRIPT.parent, REPO / "scripts" / "bench"):
        sys.path.insert(0, str(path))
    try:
        spec = importlib.util.spec_from_file_location("async_overlap_accuracy", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for path in (SCRIPT.parent, REPO / "scripts" / "bench"):
            sys.path.remove(str(path))
    return module


AO = _module()


def test_report_is_the_run_for_run_gm_and_the_cells_above_125(capsys):
    rows = []
    # two cells of one suite: 4p runs at ratios 2 and 2 (cell 2x), 8p at ratios 0.5 and 1 (cell 0.71x)
    for budget, ratios in (("4p", (2.0, 2.0)), ("8p", (0.5, 1.0))):
        for seed, ratio in enumerate(ratios):
            key = {"set": "families", "suite": "soum", "game": "soum-8/i=0", "budget": budget, "seed": seed}
            rows.append({**key, "mode": "plain", "mse": 1e-3, "util": 0.5, "ideal": 0.8, "wall_s": 1.0})
            rows.append({**key, "mode": "overlap", "mse": 1e-3 * ratio, "util": 0.6, "ideal": 0.8, "wall_s": 1.0})
    AO.report(pd.DataFrame(rows))
    line = capsys.readouterr().out.strip()
    gm = np.exp(np.mean(np.log([2.0, 2.0, 0.5, 1.0])))
    assert f"MSE gm {gm:.3f} over 4 runs" in line
    assert "cells above 1.25x: 1 of 2 (worst 2.00, soum 4p)" in line
    assert "utilisation 0.600 (0.750 of ideal) against 0.500 (0.625)" in line


@pytest.mark.slow
def test_one_game_runs_in_every_mode(tmp_path):
    out = tmp_path / "ov.parquet"
    assert AO.main(["--sets", "families", "--seeds", "1", "--budgets", "2", "--median", "0.001",
                    "--out", str(out)]) == 0
    results = pd.read_parquet(out)
    assert set(results["mode"]) == {"plain", "overlap", "reordered"}
    assert np.all(np.isfinite(results["mse"])) and np.all(results["util"] > 0)
