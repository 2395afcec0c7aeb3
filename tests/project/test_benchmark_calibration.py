"""scripts/studies/benchmark_calibration.py: its per-run and per-cell figures from hand-made runs, and one
small run whose printed summary agrees with the table it wrote."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "studies" / "benchmark_calibration.py"


def _module():
    spec = importlib.util.spec_from_file_location("benchmark_calibration", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BC = _module()


def _row(method: str, seed: int, values, std, exact, wall: float = 1.0, budget: str = "2p") -> dict:
    return {"set": "families", "suite": "toy", "game": "toy-3", "method": method, "budget_spec": budget,
            "seed": seed, "values": list(values), "std": list(std), "exact": list(exact), "wall_s": wall, "error": ""}


def test_run_metrics_from_hand_values() -> None:
    # errors 0.1, 0.5, 0 with stds 0.1, 0.1, 0: z = 1, 5, 0 (a zero std covers a zero error only)
    m = BC.run_metrics(pd.DataFrame([_row("a", 0, [1.1, 2.5, 3.0], [0.1, 0.1, 0.0], [1.0, 2.0, 3.0])]))
    r = m.iloc[0]
    assert r.covered == 2 and r.players == 3
    assert r.z2 == pytest.approx(1.0 + 25.0)
    assert r.max_z == pytest.approx(5.0)
    assert r.mse == pytest.approx((0.01 + 0.25) / 3)
    infinite = BC.run_metrics(pd.DataFrame([_row("a", 0, [1.1], [0.0], [1.0])])).iloc[0]
    assert infinite.covered == 0 and np.isinf(infinite.max_z)


def test_cells_pool_players_and_pair_runs() -> None:
    rows = [
        _row("a", 0, [1.1, 2.0], [0.1, 1.0], [1.0, 2.0], wall=2.0),   # z 1, 0
        _row("a", 1, [1.5, 2.0], [0.1, 1.0], [1.0, 2.0], wall=2.0),   # z 5, 0: confidently wrong
        _row("b", 0, [1.2, 2.0], [1.0, 1.0], [1.0, 2.0], wall=1.0),
        _row("b", 1, [1.5, 2.0], [1.0, 1.0], [1.0, 2.0], wall=1.0),
    ]
    m = BC.run_metrics(pd.DataFrame(rows))
    cells = BC.cell_table(m, "a", "b")
    assert len(cells) == 1
    c = cells.iloc[0]
    assert c.runs == 2
    assert c.coverage == pytest.approx(3 / 4)
    assert c.rms_z == pytest.approx(np.sqrt((1 + 25) / 4))
    assert c.wrong == pytest.approx(0.5)
    # run for run: MSE (0.005, 0.125) against (0.02, 0.125): gm of the ratios 0.25 and 1
    assert c.mse_ratio == pytest.approx(0.5)
    assert c.time_ratio == pytest.approx(2.0)
    line = BC.summary_lines(m, cells, "a")[0]
    assert "coverage 0.750 pooled" in line and "50.0% of 2 runs" in line and "MSE 0.500x" in line


def test_methods_are_label_json_pairs() -> None:
    assert BC.parse_methods(None) == {"default": {}, "before": BC.BEFORE, "previous": BC.PREVIOUS}
    assert BC.BEFORE == {"structures": ["kernels", "graded", "additive"]}  # the default without the rough family
    assert BC.parse_methods(['x={"rough": true}', "previous="]) == {"x": {"rough": True}, "previous": BC.PREVIOUS}
    with pytest.raises(SystemExit, match="LABEL=JSON"):
        BC.parse_methods(["nolabel"])
    with pytest.raises(SystemExit, match="not JSON"):
        BC.parse_methods(["x={bad"])


def test_a_small_run_prints_what_its_table_holds(tmp_path: Path) -> None:
    out = tmp_path / "cal.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, str(SCRIPT), "--sets", "families", "--suites", "additive-pairs", "--quick",
                          "--methods", "default={}", "--out", str(out)], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    df = pd.read_parquet(out)
    assert len(df) == 2 and set(df.budget_spec) == {"2p", "4p"} and (df.error == "").all()
    m = BC.run_metrics(df)
    line = next(s for s in run.stdout.splitlines() if s.startswith("[families]"))
    coverage = float(re.search(r"coverage ([0-9.]+) pooled", line).group(1))
    assert coverage == pytest.approx(m.covered.sum() / m.players.sum(), abs=5e-4)


def test_the_tol_line_counts_stopped_runs_within_1_96_tol() -> None:
    rows = [_row("a", 0, [1.1, 2.0], [0.05, 0.05], [1.0, 2.0]), _row("a", 1, [1.3, 2.0], [0.05, 0.05], [1.0, 2.0]),
            _row("a", 2, [9.0, 2.0], [1.0, 1.0], [1.0, 2.0])]
    for r, stopped in zip(rows, (True, True, False)):
        r.update({"stopped_by_tol": stopped, "tol": 0.1})
    # stopped: errors 0.1 (<= 0.196) and 0.3 (> 0.196); the run not stopped is not counted
    assert BC.tol_line(pd.DataFrame(rows)) == "stopped by tol: 2 of 3 runs; every |error| <= 1.96 tol in 50.0% of them"


def test_every_game_runs_every_budget_seed_and_method() -> None:
    args = BC.parse_args(["--sets", "families", "threshold", "--suites", "voting", "threshold-6", "--instances", "2",
                          "--seeds", "3", "--rtol", "0.05"])
    todo = BC.jobs(args, {"a": {}, "b": {"rough": True}})
    # voting: 2 games x 3 budgets x 3 seeds; the threshold example: 2 budgets x 10 seeds; per method
    assert len(todo) == 2 * (2 * 3 * 3 + 2 * 10)
    assert len({(j["game"], j["budget_spec"], j["seed"], j["method"]) for j in todo}) == len(todo)
    assert all(j["options"]["rtol"] == 0.05 for j in todo) and {j["options"].get("rough") for j in todo} == {None, True}


def test_a_killed_campaign_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "cal.parquet"
    argv = ["--sets", "families", "--suites", "additive-pairs", "--quick", "--methods", "default={}", "--out", str(out)]
    todo = BC.jobs(BC.parse_args(argv), BC.parse_methods(["default={}"]))
    assert len(todo) == 2
    # a row of the first run as a killed campaign left it (marker values no run computes), then a cut line
    kept = {k: todo[0][k] for k in ("set", "suite", "game", "method", "budget_spec", "seed")}
    kept.update({"p": 3, "budget": 6, "error": "", "options": "{}", "values": [123.0], "std": [1.0],
                 "exact": [0.0], "wall_s": 0.0})
    # the same run with other options (another campaign's row) must not be taken
    other = {**kept, "options": '{"rough": true}', "values": [456.0]}
    checkpoint = Path(str(out) + ".partial.jsonl")
    checkpoint.write_text(BC.json.dumps(kept) + "\n" + BC.json.dumps(other) + "\n" + '{"set": "fam', encoding="utf-8")
    assert BC.main(argv) == 0
    df = pd.read_parquet(out)
    assert len(df) == 2 and not checkpoint.exists()
    reused = df[df.budget_spec == todo[0]["budget_spec"]].iloc[0]
    assert list(reused["values"]) == [123.0]
    fresh = df[df.budget_spec != todo[0]["budget_spec"]].iloc[0]
    assert len(fresh["values"]) > 1 and 456.0 not in list(fresh["values"])
