"""scripts/studies/benchmark_suites.py: the report on a small run (ratios, coverage, the anchor comparison)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("benchmark_suites", ROOT / "scripts" / "studies" / "benchmark_suites.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmark_suites"] = module
    spec.loader.exec_module(module)
    return module


def test_report_on_a_small_run(tmp_path, capsys):
    bs = _script()
    from shapleig_tasks import harness

    df = harness.run_benchmark(["california-le-8/seed=1"], ["shapleig:refit=never", "permutation"], ["2p", "4p"], 1,
                               progress=False)
    df.loc[df.method == "shapleig:refit=never", "method"] = bs.DEFAULT  # report the GP arm as the default
    anchors = tmp_path / "anchors.csv"
    pd.DataFrame({
        "game_type": ["CaliforniaHousing_LocalExplanation_Game"] * 2, "p": [8, 8],
        "table_file": ["model_name=gradient_boosting_imputer=marginal_1.npz"] * 2, "method": ["ShaplEIG", "KernelSHAP"],
        "budget_spec": ["2p", "2p"], "seed": [0, 0], "mse": [1e-3, 4e-3], "wall_s": [1.0, 0.1], "error": ["", ""],
    }).to_csv(anchors, index=False)
    bs.report(df, anchors)
    out = capsys.readouterr().out
    assert "ratio to the best other project method" in out and "coverage of the default's 95% intervals" in out
    mine = df[(df.method == bs.DEFAULT) & (df.budget_spec == "2p")].mse.iloc[0]
    assert f"{mine / 1e-3:.3g}" in out  # default / best shapiq on the anchor's table and seed
    cov = bs.coverage_rows(df[df.method == bs.DEFAULT])
    row = df[df.method == bs.DEFAULT].iloc[0]
    v, s, e = (np.asarray(row[c]) for c in ("values", "std", "exact"))
    assert cov.covered.iloc[0] == int(np.sum(np.abs(v - e) <= 1.959963984540054 * s)) and cov.players.iloc[0] == 8
    assert bs.gm(pd.Series([1e-2, 1e-4])) == pytest.approx(1e-3)
    assert cov.max_z.iloc[0] == pytest.approx(float(np.max(np.abs(v - e) / s)))
    wrong = {spec: int((g.max_z > 4).sum()) for spec, g in cov.groupby("budget_spec")}
    assert f"runs with some |error|/std > 4 (confidently wrong), per budget: 2p {wrong['2p']} of 1, " \
           f"4p {wrong['4p']} of 1" in out
    # the default alone (--methods shapleig): no ratio to other methods, the rest of the report still there
    bs.report(df[df.method == bs.DEFAULT], anchors)
    alone = capsys.readouterr().out
    assert "ratio to the best other project method" not in alone and "coverage of the default's 95% intervals" in alone


def test_paired_report_run_for_run(capsys):
    """Ratio = 10^(mean paired log10 difference); the paired t-test of the log10 MSEs."""
    bs = _script()
    rows = []
    # default 10x better than the other on seed 0, 100x on seed 1, 1000x on seed 2: mean diff -2
    for seed, (a, b) in enumerate([(1e-3, 1e-2), (1e-4, 1e-2), (1e-5, 1e-2)]):
        for method, mse in (("d", a), ("o", b)):
            rows.append({"group": "s", "budget_spec": "2p", "task": "s/seed=1", "seed": seed, "method": method,
                         "mse": mse})
    bs.paired_report(pd.DataFrame(rows), "d", "o")
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("s "))
    fields = line.split()
    assert float(fields[2]) == pytest.approx(0.01) and float(fields[3]) == pytest.approx(-2.0)
    assert float(fields[4]) == pytest.approx(1.0)  # sd of the differences -1, -2, -3
    # paired t: mean -2, sd 1, n 3 -> t = -2 sqrt(3) on 2 degrees of freedom: two-sided
    # p = 1 - 2 sqrt(3) / sqrt(2 + 12) = 0.0742 (the t(2) distribution's closed form)
    assert float(fields[5]) == pytest.approx(1 - 2 * 3**0.5 / 14**0.5, abs=5e-4)
    assert "over all cells 0.01" in out
