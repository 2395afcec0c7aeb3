"""Benchmark and reproduction scripts print consistent numbers (issue 28: scripts are thin CLIs over
tested modules, and what they print is checked, not only that ``--help`` runs).

Each test runs one script with its smallest options in a subprocess against this checkout (the mutation
script against a copy of it, so the suite never mutates the checkout) and checks WHAT IT PRINTS: the
fields are there, the numbers are finite and within their ranges, and printed quantities agree with
each other (a ratio equals the ratio of its printed parts, counts stay within the budget, efficient
estimators have a zero efficiency gap). Timings are never compared to a bound.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def run_script(relpath: str, *args: str, timeout: float = 300) -> str:
    """stdout of ``scripts/<relpath> args`` run against this checkout (exit 0 asserted)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, str(REPO / "scripts" / relpath), *args], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def table(out: str, header_start: str) -> list[list[str]]:
    """The whitespace-split rows after the line starting with ``header_start`` (to a blank or end)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(header_start))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if set(line.strip()) <= {"-"}:
            continue
        rows.append(line.split())
    return rows


def close(a: float, b: float, rel: float, abs_: float = 0.0) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def test_bench_baselines_counts_within_budget_and_errors_consistent() -> None:
    out = run_script("bench/bench_baselines.py", "--players", "8", "--budget", "200", "--seeds", "1")
    assert "game=airport p=8 T=200" in out
    rows = {r[0]: r for r in table(out, "method")}
    assert {"permutation", "kernelshap", "svarm", "regression-msr"} <= set(rows)
    for name, r in rows.items():
        evals, mse, max_dev, sum_err = int(r[2]), float(r[3]), float(r[4]), float(r[5])
        assert 0 < evals <= 200, name
        assert math.isfinite(mse) and mse > 0, name
        # the largest deviation bounds the root-mean-square one (both printed to 4 digits)
        assert max_dev >= math.sqrt(mse) * (1 - 1e-3), (name, max_dev, mse)
        assert sum_err >= 0
    assert int(rows["permutation"][2]) == 200  # a plain sampler spends its whole budget
    for efficient in ("permutation", "kernelshap", "leverage-shap", "regression-msr"):
        assert float(rows[efficient][5]) < 1e-8, efficient  # efficient by construction


def test_bench_esp_prints_one_positive_time_per_routine() -> None:
    # more coalitions than the 20 timed steps: each step conditions on a fresh candidate
    out = run_script("bench/bench_esp.py", "--players", "8", "--coalitions", "32", "--repeats", "1")
    rows = table(out, "p ")
    assert [r[0] for r in rows] == ["8"]
    times = [float(v) for v in rows[0][1:]]
    assert len(times) == 5 and all(math.isfinite(v) and v > 0 for v in times)


def test_bench_esp_too_few_coalitions_is_a_clear_error() -> None:
    run = subprocess.run([sys.executable, str(REPO / "scripts/bench/bench_esp.py"), "--coalitions", "16"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--coalitions must exceed the 20 timed" in run.stderr, run.stderr[-2000:]


def test_bench_explain_exact_reference_and_efficient_baselines() -> None:
    out = run_script("bench/bench_explain.py", "--budget", "20", "--background", "10", "--seeds", "1")
    assert re.search(r"exact: 1024 coalitions", out)  # diabetes: p = 10
    pattern = (r"^\s*(.+?): budget (\d+), MSE ([\d.e+-]+), [\d.e+-]+ s/run, (\d+) model calls, "
               r"own efficiency gap ([\d.e+-]+), \+-2 std coverage (\S+)$")
    rows = {m.group(1).strip(): m.groups()[1:] for m in re.finditer(pattern, out, re.MULTILINE)}
    assert set(rows) == {"shapleig", "kernelshap (paired)", "permutation"}, out
    for name, (budget, mse, calls, gap, cover) in rows.items():
        assert int(budget) == 20 and int(calls) >= 1
        assert math.isfinite(float(mse)) and float(mse) > 0, name
    assert float(rows["kernelshap (paired)"][3]) < 1e-8 and float(rows["permutation"][3]) < 1e-8
    assert 0 <= float(rows["shapleig"][4]) <= 1
    assert rows["permutation"][4] == "-"


def test_bench_timeout_overhead_accounting() -> None:
    out = run_script("bench/bench_timeout.py", "--evaluations", "5", "--repeats", "1", "--timeout", "5")
    start = float(re.search(r"worker start .*?:\s+([\d.]+) ms", out).group(1))
    steady = float(re.search(r"steady overhead per timed evaluation \(median\):\s+([\d.]+) ms", out).group(1))
    whole = float(re.search(r"overhead per evaluation over the run, start included:\s+([\d.]+) ms", out).group(1))
    assert start > 0 and steady > 0
    # the run's overhead includes the one worker start, spread over the 5 evaluations
    assert whole >= start / 5 - 0.1, (whole, start)
    assert "timed values equal the untimed ones: yes" in out


def test_svarm_airport_draws_within_budget() -> None:
    out = run_script("repro/svarm_airport.py", "--budgets", "2000", "--seeds", "1")
    rows = table(out, "method")
    names = [" ".join(r[:-5]) for r in rows]
    assert {"permutation", "svarm", "stratified-svarm", "svarm-plus (warmup)"} <= set(names), names
    for name, r in zip(names, rows):
        T, mse, draws = int(r[-5]), float(r[-4]), int(r[-2])
        assert T == 2000
        assert math.isfinite(mse) and mse > 0, name
        assert 0 < draws <= T + 100, name  # a "draw" is a sample of >= 1 evaluation (+ warm-up)


def test_bench_large_p_per_acquisition_times_are_the_ratio() -> None:
    out = run_script("bench/bench_large_p.py", "--players", "30", "--budget", "40")
    (r,) = table(out, "p ")
    p, budget, wall, acq, sel_per, end_per, end_step, wall_per, refits = (float(v) for v in r[:9])
    assert (p, budget) == (30, 40)
    assert 0 < acq <= budget - (p + 1) + 1  # acquisitions after the (p + 1)-coalition design
    assert refits >= 1
    assert close(wall_per, wall / acq, rel=0.2, abs_=0.01), r  # wall printed to 0.1 s
    assert 0 < sel_per <= wall_per + 0.01
    # the last tenth of the budget is single steps here: the largest of them bounds their mean
    assert 0 < end_per <= end_step + 0.01


def test_bench_fit_warm_start_reaches_the_cold_optimum() -> None:
    out = run_script("bench/bench_fit.py", "--sizes", "8:20", "--no-gpytorch")
    rows = table(out, "p ")
    assert [(r[0], r[1], r[2]) for r in rows] == [("8", "20", "shared"), ("8", "20", "ARD")]
    for r in rows:
        numpy_s, numpy_obj, warm_s, warm_dobj = float(r[8]), float(r[9]), float(r[14]), float(r[15])
        assert r[4] == "nan"  # no gpytorch column with --no-gpytorch
        assert numpy_s > 0 and warm_s > 0 and math.isfinite(numpy_obj)
        assert abs(warm_dobj) < 1e-3  # warm start from t-1's optimum finds the same objective


def test_bench_async_utilisation_is_busy_over_capacity() -> None:
    out = run_script("bench/bench_async.py", "--players", "6", "--budget", "20", "--q", "4",
                     "--median", "0.05")
    assert "p = 6, budget 20, q = 4" in out
    rows = [r for r in table(out, "mode") if r[1].isdigit()]
    assert {r[0] for r in rows} == {"async", "sync"}
    for mode, _seed, wall, busy, util, ideal, select, mse, held, util_held, after in rows:
        wall_f, busy_f, util_f, held_f = float(wall), float(busy), float(util), float(held)
        assert close(util_f, busy_f / (4 * wall_f), rel=0.05, abs_=0.01), (util, busy, wall)
        assert 0 < util_f <= 1 and 0 < float(ideal) <= 1
        assert math.isfinite(float(mse)) and float(mse) > 0
        # the workers are held until the last evaluation returns; the read-out comes after
        assert 0 < held_f <= wall_f + 0.005 and close(float(after), wall_f - held_f, rel=0, abs_=0.011)
        assert close(float(util_held), busy_f / (4 * held_f), rel=0.05, abs_=0.01) and util_f <= float(util_held) + 0.01
    means = dict(re.findall(r"^\s*(\w+)\s+mean utilisation ([\d.]+)", out, re.MULTILINE))
    held_means = dict(re.findall(r"^\s*(\w+)\s+mean utilisation .*while the workers are held ([\d.]+)", out,
                                 re.MULTILINE))
    for mode, _seed, _wall, _busy, util, *rest in rows:
        assert close(float(means[mode]), float(util), rel=0, abs_=0.006)  # one seed: mean = its row
        assert close(float(held_means[mode]), float(rest[-2]), rel=0, abs_=0.006)


def test_bench_async_list_schedule_and_its_simulated_ideal() -> None:
    spec = importlib.util.spec_from_file_location("bench_async_mod", REPO / "scripts" / "bench" / "bench_async.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # by hand: 1, 1 then 2 on two workers ends at 3 (busy 4 of 6); 2 first ends at 2 (busy 4 of 4)
    assert mod.list_schedule_utilisation([1.0, 1.0, 2.0], 2) == pytest.approx(4 / 6)
    assert mod.list_schedule_utilisation([2.0, 1.0, 1.0], 2) == pytest.approx(1.0)
    # equal times fill every worker; one worker is always busy
    assert mod.simulated_ideal_utilisation(4, 8, 1.0, 0.0, reps=3) == pytest.approx(1.0)
    assert mod.simulated_ideal_utilisation(1, 10, 1.0, 0.7, reps=3) == pytest.approx(1.0)
    ideal = mod.simulated_ideal_utilisation(8, 64, 0.2, 0.7, reps=200)
    assert 0.5 < ideal < 1.0
    out = run_script("bench/bench_async.py", "--simulate", "200", "--q", "8", "--budget", "64")
    assert f"mean utilisation {ideal:.3f}" in out


def test_bench_budget_ranges_tile_the_run() -> None:
    out = run_script("bench/bench_budget.py", "--settings", "6:30")
    m = re.search(r"p = 6, t = 30, refit \S+: selection ([\d.]+) s, wall ([\d.]+) s, game [\d.]+ s, (\d+) refits",
                  out)
    assert m, out
    assert float(m.group(1)) <= float(m.group(2)) + 0.05
    rows = table(out, "t range")
    spans = [tuple(int(v) for v in r[0].split("-")) for r in rows]
    assert spans[-1][1] == 30
    assert all(a < b for a, b in spans) and all(prev[1] == nxt[0] for prev, nxt in zip(spans, spans[1:]))
    assert all(float(r[1]) > 0 for r in rows)


def test_bench_overhead_total_is_selection_plus_update() -> None:
    out = run_script("bench/bench_overhead.py", "--players", "8", "--steps", "1", "--pool-size", "64")
    rows = table(out, "p ")
    assert [r[3] for r in rows] == ["every", "frozen"]
    for r in rows:
        p, t, pool = int(r[0]), int(r[1]), int(r[2])
        sel, fit, eig, upd, total = (float(v) for v in r[4:9])
        assert (p, t) == (8, 32) and 0 < pool <= 64
        assert close(total, sel + upd, rel=0, abs_=2e-4), r
        assert fit <= sel + 1e-4 and eig <= sel + 1e-4  # both are parts of the selection
    assert float(rows[1][5]) == 0.0  # frozen: no refit in the timed steps


def test_bench_scale_one_row_per_p() -> None:
    out = run_script("bench/bench_scale.py", "--players", "16", "--window", "1", "--pool-size", "64",
                     "--full-run-max-p", "16")
    lines = [line for line in out.splitlines() if re.match(r"^\s*16\s", line)]
    assert len(lines) == 1, out
    cells = lines[0].replace("|", " ").split()
    p, t, pool = (int(v) for v in cells[:3])
    assert p == 16 and t >= p + 1 and 0 < pool <= 64
    every, frozen, policy, run_per_it, fit_cold, fit_warm, rebuild, fits, trig, peak = (float(v) for v in cells[3:])
    assert min(every, frozen, policy, run_per_it, peak) > 0 and min(fit_cold, rebuild, fit_warm) >= 0
    assert 0 <= trig <= 1
    # every = fit cold + rebuild + frozen (fit and rebuild printed to 0.01 s)
    assert every == pytest.approx(fit_cold + rebuild + frozen, abs=0.011)
    # policy = (fits (fit cold + rebuild) + T frozen) / T over T = t - (p + 1) acquisitions
    T = t - (p + 1)
    assert policy == pytest.approx((fits * (fit_cold + rebuild) + T * frozen) / T, abs=fits * 0.01 / T + 0.002)
    assert fits >= 1


def test_bench_scale_per_iteration_costs() -> None:
    scale = load_script("bench/bench_scale.py")
    # 3 refits of 2 s + 0.5 s rebuild and 10 frozen steps of 0.1 s: (3 * 2.5 + 10 * 0.1) / 10 = 0.85 s
    costs = scale.per_iteration(fit_cold_s=2.0, rebuild_s=0.5, frozen_s=0.1, n_fits=3, iterations=10)
    assert costs["every_s"] == pytest.approx(2.6) and costs["policy_s"] == pytest.approx(0.85)


def test_bench_scale_backstop_fits_count_the_geometric_schedule() -> None:
    from shapleig.design.refit import AdaptiveRefit

    scale = load_script("bench/bench_scale.py")
    backstop = AdaptiveRefit()  # unbound: the geometric backstop alone
    for iterations in (2, 3, 5, 10, 17, 47, 100, 1000):
        assert scale.backstop_fits(iterations) == sum(bool(backstop(it)) for it in range(iterations)), iterations


@pytest.mark.slow
def test_bench_exact_if_cheap_enumeration_is_exact() -> None:
    out = run_script("bench/bench_exact_if_cheap.py")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| numpy") or line.startswith("| LightGBM")]
    assert len(rows) == 4, out
    for game, decision, _on_s, mse_on, _off_s, mse_off in rows:
        if decision.startswith("enumerate"):
            assert float(mse_on) == 0.0, game  # enumeration is the exact value
            if game.startswith("numpy"):
                assert 0 <= float(mse_off) < 1e-6, game  # the GP run on a cheap additive game is close
        else:
            assert decision.startswith("GP") and float(mse_on) == pytest.approx(float(mse_off), rel=0.05)


def test_bench_vs_shapiq_summary_matches_the_runs() -> None:
    from shapleig_tasks.tables import default_tables_dir

    root = default_tables_dir()
    if root is None or not (root / "ImageClassifier_Game" / "16").is_dir():
        pytest.skip("shared table suite not present")
    out = run_script("bench/bench_vs_shapiq.py", "--seeds", "1", "--budget", "40", "--methods", "shapleig")
    run_mse = float(re.search(r"shapleig seed 0: [\d.]+ s, mse ([\d.e+-]+)", out).group(1))
    gm = float(re.search(r"shapleig\s+[\d.]+ s per run\s+gm-MSE ([\d.e+-]+)", out).group(1))
    assert "budget 40 (p = 16)" in out
    assert math.isfinite(run_mse) and run_mse > 0
    assert gm == pytest.approx(run_mse, rel=1e-3)  # one seed: the geometric mean is that run's MSE


def load_script(relpath: str) -> ModuleType:
    """A script imported as a module (its ``main`` not run), to test its helper functions."""
    path = REPO / "scripts" / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # scripts import their sibling scripts
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def test_bench_breakeven_budget_for_interpolates_log_log() -> None:
    be = load_script("bench/bench_breakeven.py")
    res = {("b", 2): {"mse": 1e-1}, ("b", 4): {"mse": 1e-2}, ("b", 8): {"mse": 1e-4}}
    assert be.budget_for(res, "b", [2, 4, 8], 1.0) == 2.0  # reached at the first budget
    # 1e-3 is half-way (in log) between 1e-2 at 4 and 1e-4 at 8: the geometric mean of 4 and 8
    assert be.budget_for(res, "b", [2, 4, 8], 1e-3) == pytest.approx(math.sqrt(32), rel=1e-12)
    assert be.budget_for(res, "b", [2, 4, 8], 1e-2) == pytest.approx(4.0)
    assert be.budget_for(res, "b", [2, 4, 8], 1e-5) is None  # never reached
    over = {("b", 2): {"overhead": 1.0}, ("b", 4): {"overhead": 3.0}}
    assert be.overhead_at(over, "b", [2, 4], 3.0) == pytest.approx(2.0)


def test_bench_breakeven_lookup_reads_the_table_in_bit_order() -> None:
    be = load_script("bench/bench_breakeven.py")
    table = np.arange(8.0) * 10  # value of the coalition with bit code c is 10 c
    game = be.Lookup(table, "t")
    Z = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 1], [1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(game(Z), [0, 10, 20, 50, 70])
    assert game.n_players == 3 and game.seconds >= 0


def test_bench_breakeven_report_wall_and_break_even_from_its_parts(capsys: pytest.CaptureFixture) -> None:
    be = load_script("bench/bench_breakeven.py")
    p = 10
    multiples = {"shapleig": [2], "kernelshap-paired": [2, 4, 8], "leverage-shap": [2, 4]}
    res = {("shapleig", 2): {"overhead": 0.5, "mse": 1e-3},
           ("kernelshap-paired", 2): {"overhead": 0.0, "mse": 1e-1},
           ("kernelshap-paired", 4): {"overhead": 0.0, "mse": 1e-2},
           ("kernelshap-paired", 8): {"overhead": 0.0, "mse": 1e-4},
           ("leverage-shap", 2): {"overhead": 0.1, "mse": 1e-1},
           ("leverage-shap", 4): {"overhead": 0.1, "mse": 1e-2}}
    be.report("g", res, multiples, p)
    out = capsys.readouterr().out
    # wall at 10 ms per evaluation, budget 2p = 20: 0.5 + 0.2, 0 + 0.2, 0.1 + 0.2
    assert "| 10 ms | 0.7 / 0.2 / 0.3 |" in out
    # KernelSHAP reaches 1e-3 at sqrt(32) p: c = (0.5 - 0) / ((sqrt(32) - 2) * 10) s
    c = 0.5 / ((math.sqrt(32) - 2) * p)
    assert f"{math.sqrt(32):.2g}p, {c * 1000:.2g} ms" in out
    # Leverage SHAP never reaches it within 4p: bound (0.5 - 0.1) / ((4 - 2) * 10) s = 20 ms
    assert "> 4p, < 20 ms" in out


@pytest.mark.slow
def test_bench_breakeven_quick_wall_table_is_overhead_plus_budget_cost() -> None:
    out = run_script("bench/bench_breakeven.py", "--quick")
    for game, p in (("diabetes-explain", 10), ("bike-dv-10", 10)):
        section = out.split(f"### {game} (p = {p})")[1].split("###")[0]
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
                if re.match(r"^\| \dp \|", line)]
        overheads = {r[0]: (float(r[1]), float(r[3].split("/")[0]), float(r[4].split("/")[0])) for r in rows[:3]}
        assert set(overheads) == {"2p", "4p", "8p"}
        for r in rows[:3]:
            assert float(r[2]) > 0 and float(r[3].split("/")[1]) > 0  # MSEs
        walls = [line for line in section.splitlines() if line.startswith("| 1000 ms |")]
        cells = [c.strip() for c in walls[0].strip().strip("|").split("|")[1:]]
        for (budget, parts), cell in zip(overheads.items(), cells):
            b = int(budget[:-1]) * p
            for o, w in zip(parts, cell.split("/")):
                assert float(w) == pytest.approx(o + b * 1.0, rel=2e-3, abs=6e-3), (game, budget, cell)


def skip_without_tables(sub: str = "ImageClassifier_Game/16") -> None:
    from shapleig_tasks.tables import default_tables_dir

    root = default_tables_dir()
    if root is None or not (root / sub).is_dir():
        pytest.skip("shared table suite not present")


@pytest.mark.slow
def test_bench_dask_utilisation_and_wall_ratio_are_reciprocal() -> None:
    pytest.importorskip("distributed")
    skip_without_tables()
    out = run_script("bench/bench_dask.py", "--tables", "1", "--seeds", "1", "--median", "0.05",
                     "--workers", "2", "--budget", "2p")
    assert "p = 16, budget 32" in out and "LocalCluster 2 workers" in out
    runs = {r[0]: r for r in table(out, "mode table")}
    summary = {r[0]: r for r in table(out, "mode   util")}
    assert set(runs) == {"async", "sync"} and set(summary) == {"seq", "async", "sync"}
    seq_mse = float(summary["seq"][4])
    for mode, r in runs.items():
        wall, busy, util, ideal, ratio, mse = (float(v) for v in r[3:9])
        # wall ratio = wall / (busy / workers) = 1 / util (both printed to 2 decimals)
        assert util * ratio == pytest.approx(1.0, abs=0.02), r
        assert 0 < util <= 1 and 0 < ideal <= 1 and busy > 0 and wall > 0
        s = summary[mode]  # one table, one seed: the summary is this run
        assert float(s[1]) == util and float(s[3]) == ratio and float(s[4]) == pytest.approx(mse, rel=1e-3)
        assert float(s[5]) == pytest.approx(mse / seq_mse, rel=2e-3, abs=1e-3)
    assert float(summary["seq"][5]) == 1.0


def test_bench_indices_cells_are_geometric_means_and_ratios() -> None:
    ind = load_script("bench/bench_indices.py")
    if not ind.ANCHORS.is_file() or not (ind.GAMES / "CaliforniaHousing_LocalExplanation_Game").is_dir():
        pytest.skip("shared anchors/tables not present (set SHAPLEIG_SHARED)")
    out = run_script("bench/bench_indices.py", "--indices", "BV", "--seeds", "0", "1",
                     "--games", "CaliforniaHousing_LocalExplanation_Game")
    runs = re.findall(r"^BV CaliforniaHousing_LocalExplanation_Game (\d+)p seed (\d): mse (\S+) cover (\d+)/(\d+)",
                      out, re.MULTILINE)
    assert len(runs) == 6  # 3 budgets x 2 seeds
    cells = {}
    for line in out.split("per cell")[1].split("per index")[0].splitlines():
        m = re.search(r"(\d+)p\s+(\S+)\s+(\S+)\s+(\w+)\s+(\S+)\s+(True|False)$", line)
        if m:
            cells[m.group(1)] = [float(m.group(i)) for i in (2, 3, 5)]
    assert set(cells) == {"2", "4", "8"}
    for budget, (ours, best, ratio) in cells.items():
        mses = [float(r[2]) for r in runs if r[0] == budget]
        assert ours == pytest.approx(math.sqrt(mses[0] * mses[1]), rel=1e-2)  # geometric mean over seeds
        assert ratio == pytest.approx(ours / best, rel=1e-2)  # each printed to 3 digits
    geo = float(re.search(r"BV\s+geomean ([\d.]+)", out).group(1))
    ratios = [c[2] for c in cells.values()]
    assert geo == pytest.approx(math.prod(ratios) ** (1 / 3), rel=0.05, abs=1.5e-3)
    pooled = float(re.search(r"BV\s+min [\d.]+\s+pooled ([\d.]+)", out).group(1))
    covered = sum(int(r[3]) for r in runs) / sum(int(r[4]) for r in runs)
    assert pooled == pytest.approx(covered, abs=6e-4)


def test_bench_indices_order_games_filter_names_one_table_by_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    order = load_script("bench/bench_indices_order.py")
    if not order.ANCHORS.is_file() or not order.ANCHORS_B.is_file():
        pytest.skip("shared anchors not present (set SHAPLEIG_SHARED)")
    # ShaplEIG only: listing the runs then needs no shapiq (Python >= 3.12)
    monkeypatch.setattr(order, "shapiq_methods", lambda index, order_, wanted: [])

    def tables_of(games: list[str] | None) -> set[tuple[str, int]]:
        args = argparse.Namespace(games=games, indices=["k-SII"], seeds=[0], budgets=["16p"], methods=[],
                                  max_order=3)
        jobs = order._jobs(args)
        assert {j[-1] for j in jobs} <= {"ShaplEIG"}
        return {(j[1], j[2]) for j in jobs}

    # ImageClassifier_Game has a p = 9 and a p = 14 table: the type keeps both, "<type>/14" only the larger
    assert tables_of(["ImageClassifier_Game"]) == {("ImageClassifier_Game", 9), ("ImageClassifier_Game", 14)}
    assert tables_of(["ImageClassifier_Game/14", "SentimentAnalysis_Game"]) == {
        ("ImageClassifier_Game", 14), ("SentimentAnalysis_Game", 14)}
    assert tables_of(["ImageClassifier_Game/12"]) == set()  # no such table: nothing, not every table
    assert len(tables_of(None)) == len(order.tables())


def test_bench_indices_order_cells_are_geometric_means_with_pooled_coverage(tmp_path: Path) -> None:
    import pandas as pd

    order = load_script("bench/bench_indices_order.py")
    base = dict(suite="public", game_type="G", p=10, table_file="t.npz", index="k-SII", order=3, budget_spec="16p",
                budget=160, evaluations=160, wall_s=1.0, n_terms=175)
    runs = [("ShaplEIG", 0, 1e-4, 170), ("ShaplEIG", 1, 4e-4, 175),  # geometric mean 2e-4, 345/350 covered
            ("A", 0, 4e-3, None), ("A", 1, 4e-3, None),              # geometric (and arithmetic) mean 4e-3
            ("B", 0, 1e-3, None), ("B", 1, 9e-3, None)]              # geometric mean 3e-3 (arithmetic 5e-3)
    df = pd.DataFrame([dict(base, method=m, seed=s, mse=mse, covered=c) for m, s, mse, c in runs])
    out = tmp_path / "cells.csv"
    cells = order.summarise_order_k(df, str(out))
    assert len(cells) == 1
    cell = cells.iloc[0]
    assert cell.shapleig == pytest.approx(2e-4) and cell.best_shapiq == pytest.approx(3e-3)
    assert cell.best_method == "B" and cell.ratio == pytest.approx(2e-4 / 3e-3)
    assert cell.seeds == 2 and cell.coverage == pytest.approx(345 / 350) and not cell.full_table
    written = pd.read_csv(out)
    assert list(written.game) == ["G/10"] and written.ratio[0] == pytest.approx(2e-4 / 3e-3)
    assert written.coverage[0] == pytest.approx(345 / 350)


def test_bench_install_du_counts_regular_files_once(tmp_path: Path) -> None:
    inst = load_script("bench/bench_install.py")
    (tmp_path / "a").write_bytes(b"x" * 100)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 23)
    (tmp_path / "link").symlink_to(tmp_path / "a")  # a venv's symlinked interpreter is not counted
    assert inst.du(tmp_path) == 123


def test_bench_install_best_of_is_the_minimum_of_the_printed_times(tmp_path: Path) -> None:
    inst = load_script("bench/bench_install.py")
    counter = tmp_path / "n"
    counter.write_text("0")
    # each fresh interpreter prints a different number: 3, 2, 1 -> the best of 3 is 1
    code = (f"import pathlib; p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) + 1; "
            "p.write_text(str(n)); print('noise'); print(4 - n)")
    assert inst.best_of(Path(sys.executable), code, n=3) == 1.0
    assert counter.read_text() == "3"


@pytest.mark.slow
def test_bench_install_default_install_has_no_torch() -> None:
    out = run_script("bench/bench_install.py", "--extras", "", timeout=1200)  # minutes: a fresh venv + pip install
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| `pip install")]
    assert len(rows) == 1, out
    name, size, packages, torch, install, imp, first = rows[0]
    assert name == "`pip install .`" and torch == "no"  # the default install leaves the torch stack out
    assert float(size.split()[0]) > 0 and int(packages) > 1
    assert all(float(v.split()[0]) > 0 for v in (install, imp, first))
    assert float(first.split()[0]) >= float(imp.split()[0])  # a first run includes the import


def test_summarize_refit_ratios_and_geometric_means_of_a_hand_made_sweep(tmp_path: Path) -> None:
    """scripts/studies/summarize_refit.py on a sweep whose geometric means and ratios are known by hand."""
    import json

    import pandas as pd

    every = json.dumps({"ard": False, "refit": "every", "fit_engine": "numpy"})  # the default reference arm
    adaptive = json.dumps({"ard": False, "refit": "adaptive", "fit_engine": "numpy"})
    # the adaptive arm's MSE per (suite, budget) and seed; the reference's is 1e-2 everywhere
    mse = {("bike", "2p"): (5e-3, 5e-3), ("bike", "4p"): (4e-2, 4e-2), ("vit", "2p"): (4e-2, 1e-2),
           ("vit", "4p"): (1e-2, 1e-2)}
    rows = []
    for (group, budget), values in mse.items():
        for value in values:
            rows.append({"options": every, "group": group, "budget_spec": budget, "mse": 1e-2,
                         "selection_s": 1.0 if group == "vit" else 3.0, "error": None})
            rows.append({"options": adaptive, "group": group, "budget_spec": budget, "mse": value,
                         "selection_s": 0.5, "error": None})
    rows.append({"options": adaptive, "group": "vit", "budget_spec": "2p", "mse": 1e6, "selection_s": 99.0,
                 "error": "failed"})  # a failed run: left out
    path = tmp_path / "sweep.parquet"
    pd.DataFrame(rows).to_parquet(path)
    out = run_script("studies/summarize_refit.py", str(path))
    assert "== shared: gm-MSE ratio to 'fit_engine=numpy,refit=every'" in out
    ratio_block, gm_block = out.split("-- shared: gm-MSE")
    ratios = {r[0]: [float(v) for v in r[1:]] for r in table(ratio_block, "policy")}
    # columns: bike 2p, bike 4p, vit 2p, vit 4p (ratios to the reference), gm ratio, worst, selection s per run
    # vit 2p: the geometric mean of 4e-2 and 1e-2 is 2e-2, twice the reference's
    assert ratios["fit_engine=numpy,refit=adaptive"][:4] == [0.5, 4.0, 2.0, 1.0]
    gm_ratio, worst, selection = ratios["fit_engine=numpy,refit=adaptive"][4:]
    assert close(gm_ratio, (0.5 * 4.0 * 2.0 * 1.0) ** 0.25, rel=0, abs_=5e-4) and worst == 4.0
    assert selection == 0.5  # the failed run's 99 s left out
    # the reference: ratio 1 everywhere; its selection time is the mean over the largest budget's runs
    assert ratios["fit_engine=numpy,refit=every"] == [1.0] * 6 + [(1.0 + 3.0) / 2]
    gm = {r[0]: [float(v) for v in r[1:]] for r in table(gm_block, "policy")}
    assert gm["fit_engine=numpy,refit=adaptive"] == [5e-3, 4e-2, 2e-2, 1e-2]
    assert gm["fit_engine=numpy,refit=every"] == [1e-2] * 4


def test_bench_order_k_cost_term_count_and_memory_of_the_products() -> None:
    out = run_script("bench/bench_order_k_cost.py", "--players", "12", "14", "--order", "3", "--pool", "256")
    assert out.startswith("k-SII of order 3; pool 256")
    rows = table(out, "p ")
    assert [int(r[0]) for r in rows] == [12, 14]
    for r in rows:
        p, d, cov_mb = int(r[0]), int(r[1]), float(r[2])
        assert d == p + p * (p - 1) // 2 + p * (p - 1) * (p - 2) // 6  # terms of order 1 to 3
        assert close(cov_mb, d * d * 8 / 2**20, rel=0, abs_=0.05)  # a float64 d x d matrix, to 0.1 MB
        numbers = [float(v) for v in re.findall(r"[\d.]+", " ".join(r[3:]))]
        cov_shared, cov_ard, cov_ard_mb, cols_shared, cols_shared_mb, cols_ard, cols_ard_mb = numbers
        assert all(math.isfinite(v) and v >= 0 for v in numbers)
        # a product's traced peak holds at least its output (printed to whole MB)
        assert cov_ard_mb + 0.5 >= d * d * 8 / 2**20
        assert min(cols_shared_mb, cols_ard_mb) + 0.5 >= 256 * d * 8 / 2**20


def test_bench_loop_overhead_per_evaluation_costs_are_the_totals_over_t() -> None:
    out = run_script("bench/bench_loop_overhead.py", "--settings", "6:20", "7:24", "--seeds", "1")
    assert out.startswith("options default; median over seeds 0..0")
    pattern = re.compile(r"p=\s*(\d+) t=\s*(\d+):\s+([\d.]+) ms CPU / evaluation \(([\d.]+) s\),\s+([\d.]+) ms wall "
                         r"/ evaluation; refits (\d+), kernel fits (\d+); fits ([\d.]+) s, rest of selection "
                         r"([\d.]+) s, updates ([\d.]+) s")
    found = [m.groups() for m in map(pattern.search, out.splitlines()) if m]
    assert [(int(g[0]), int(g[1])) for g in found] == [(6, 20), (7, 24)]
    for g in found:
        t = int(g[1])
        cpu_ms, cpu_s, wall_ms = float(g[2]), float(g[3]), float(g[4])
        refits, kernel_fits = int(g[5]), int(g[6])
        fits, rest, updates = float(g[7]), float(g[8]), float(g[9])
        assert close(cpu_ms * t / 1e3, cpu_s, rel=0, abs_=0.005 + t * 0.005e-3)  # the per-evaluation figure is the total over t
        # the loop's own parts happen inside the run's wall time (each printed to 0.01 s)
        assert fits + rest + updates <= wall_ms * t / 1e3 + 0.015 + t * 0.005e-3
        assert 1 <= refits <= t and kernel_fits >= refits  # every refit fits at least one kernel


def test_bench_explain_rows_parallel_rows_give_the_serial_values() -> None:
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    out = run_script("bench/bench_explain_rows.py", "--rows", "2", "--budget", "16", "--background", "4",
                     "--jobs", "1", "2")
    pattern = re.compile(r"n_jobs=(\d+): (\d+) rows, budget (\d+): ([\d.]+) s wall, ([\d.]+)x the first, "
                         r"max \|value difference\| (\S+)$")
    found = [m.groups() for m in map(pattern.search, out.splitlines()) if m]
    assert [(int(g[0]), int(g[1]), int(g[2])) for g in found] == [(1, 2, 16), (2, 2, 16)]
    (_, _, _, first, first_ratio, first_diff), (_, _, _, second, ratio, diff) = found
    assert float(first_ratio) == 1.0 and float(first_diff) == 0.0
    assert float(diff) == 0.0  # rows in worker processes: the same values as one at a time, to the bit
    # the ratio is of the unrounded times; each printed time is off by at most 0.005 s
    s1, s2, r = float(first), float(second), float(ratio)
    assert s1 > 0 and s2 > 0
    assert abs(r - s2 / s1) <= 0.005 * (1 + r) / s1 + 0.006, (r, s1, s2)


def test_index_examples_table_is_the_top_terms_with_centred_intervals() -> None:
    out = run_script("studies/index_examples.py", "--budget", "4", "--top", "3", "--skip-hpi")
    head = re.search(r"### k-SII of one California-housing prediction \((\d+) of (\d+) coalitions\)", out)
    assert head is not None, out
    assert (int(head.group(1)), int(head.group(2))) == (4 * 8, 2**8)  # budget 4p on the 8-feature table
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| term")]
    assert len(rows) == 3  # --top
    estimates, exacts = [], []
    for _, estimate, interval, exact in rows:
        lo, hi = (float(v) for v in interval.strip("[]").split(","))
        assert lo <= float(estimate) <= hi
        assert close((lo + hi) / 2, float(estimate), rel=0, abs_=1.5e-4)  # a normal interval around the mean
        estimates.append(float(estimate))
        exacts.append(float(exact))
    assert [abs(v) for v in estimates] == sorted((abs(v) for v in estimates), reverse=True)  # the largest first
    summary = re.search(r"MSE over all (\d+) terms: (\S+); wall", out)
    assert summary is not None and int(summary.group(1)) == 8 + 8 * 7 // 2  # k-SII to order 2: 8 + 28 terms
    # the mean over all terms holds at least the shown terms' share (each error to 4 decimals)
    shown = sum((abs(e - x) - 1e-4) ** 2 for e, x in zip(estimates, exacts) if abs(e - x) > 1e-4)
    assert float(summary.group(2)) >= shown / 36


def test_bench_overhead_model_law_fits_its_printed_runs() -> None:
    out = run_script("bench/bench_overhead_model.py", "--players", "6", "8", "--seeds", "1")
    runs = [(int(p), int(t), float(s)) for p, t, s in re.findall(r"p=\s*(\d+) budget=\s*(\d+): ([\d.]+) s", out)]
    assert [(p, t) for p, t, _ in runs] == [(p, k * p) for p in (6, 8) for k in (2, 4, 8)]
    assert all(s > 0 for _, _, s in runs)
    law = dict(re.findall(r"^(OVERHEAD_\w+) = (\S+)$", out, re.M))
    scale, a, b = float(law["OVERHEAD_SCALE"]), float(law["OVERHEAD_BUDGET_POWER"]), float(law["OVERHEAD_PLAYERS_POWER"])
    # seconds = scale * budget^a * p^b, least squares on the logs of the printed runs (3 decimals each)
    data = np.array(runs, dtype=float)
    design = np.column_stack([np.ones(len(runs)), np.log(data[:, 1]), np.log(data[:, 0])])
    coef = np.linalg.lstsq(design, np.log(data[:, 2]), rcond=None)[0]
    assert close(np.log(scale), coef[0], rel=0, abs_=0.05) and close(a, coef[1], rel=0, abs_=0.02)
    assert close(b, coef[2], rel=0, abs_=0.05)
    ratio = data[:, 2] / (scale * data[:, 1] ** a * data[:, 0] ** b)
    spread = re.search(r"measured / law: median ([\d.]+), range ([\d.]+)\.\.([\d.]+)", out)
    assert spread is not None
    assert close(float(spread.group(1)), float(np.median(ratio)), rel=0.02, abs_=0.011)
    assert close(float(spread.group(2)), ratio.min(), rel=0.02, abs_=0.011)
    assert close(float(spread.group(3)), ratio.max(), rel=0.02, abs_=0.011)
    # enumeration: seconds per imputed value = seconds / (2^p coalitions x 50 background rows x p players)
    enum = [(int(p), float(s), float(v)) for p, s, v in re.findall(r"enumeration p=(\d+): ([\d.]+) s, (\S+) s per", out)]
    assert [p for p, _, _ in enum] == [8, 10, 12, 14]
    for p, seconds, per_value in enum:
        assert seconds > 0
        assert close(per_value, seconds / ((1 << p) * 50 * p), rel=0.0005 / seconds + 0.006)
    constant = float(re.search(r"ENUMERATION_S_PER_VALUE = (\S+)", out).group(1))
    assert close(constant, float(np.median([v for _, _, v in enum])), rel=0.006)


def test_bench_parallel_mse_table_ratios_and_verdicts_agree() -> None:
    out = run_script("bench/bench_parallel.py", "--players", "5", "--budget", "16", "--sleep", "0.01", "--q", "2",
                     "--workers", "2", "--mse-seeds", "2")
    assert out.startswith("p = 5, budget = 16, q = 2 on 2 processes vs q = 1 in-process")
    timed = re.search(r"ratio ([\d.]+) \(target <= 0.4: (PASS|FAIL)\)", out)
    assert timed is not None and (float(timed.group(1)) <= 0.4) == (timed.group(2) == "PASS")
    # the sleeping runs and the runs without the sleep make the same decisions
    assert "seed 0: timed (sleeping) runs give identical estimates: True" in out
    rows = table(out, "evaluations")
    counts = [int(r[0]) for r in rows]
    assert counts == sorted(counts) and counts[-1] == 16
    for r in rows:
        mse_1, mse_q, ratio = float(r[1].split("±")[0]), float(r[2].split("±")[0]), float(r[3])
        assert mse_1 > 0 and mse_q > 0
        assert close(ratio, mse_q / mse_1, rel=1e-3, abs_=6e-4)  # MSEs to 4 digits, the ratio to 3 decimals
    final = re.search(r"ratio of means ([\d.]+) \(target <= 1.2: (PASS|FAIL)\); geometric mean of per-seed ratios "
                      r"([\d.]+) \(95% CI ([\d.]+) to ([\d.]+)\); q=2 better on (\d+) of (\d+) seeds", out)
    assert final is not None, out
    of_means = float(final.group(1))
    assert close(of_means, float(rows[-1][3]), rel=0, abs_=1e-3)  # the table's last row, at the budget
    assert (of_means <= 1.2) == (final.group(2) == "PASS")
    geo, lo, hi = (float(final.group(k)) for k in (3, 4, 5))
    assert lo <= geo <= hi
    assert 0 <= int(final.group(6)) <= int(final.group(7)) == 2


def _listed_mutations(out: str) -> list[tuple[str, int, str, str, str]]:
    """``(path, line, old, new, mutated line)`` of ``mutation_round.py --list``; its count line checked."""
    import ast

    line_re = re.compile(r"^(\S+):(\d+) ('.*?'|\".*?\") (?:-> ('.*?'|\".*?\")|dropped): (.*)$")
    found = []
    lines = out.splitlines()
    for text in lines[:-1]:
        m = line_re.match(text)
        assert m is not None, text
        new = ast.literal_eval(m.group(4)) if m.group(4) else ""
        found.append((m.group(1), int(m.group(2)), ast.literal_eval(m.group(3)), new, m.group(5)))
    assert lines[-1] == f"{len(found)} mutations"
    return found


def test_mutation_round_lists_one_line_changes_of_the_current_source() -> None:
    args = ("studies/mutation_round.py", "--list", "--file", "in_flight", "--file", "runs/timeout")
    drawn = _listed_mutations(run_script(*args, "--per-file", "2", "--seed", "3"))
    assert drawn == _listed_mutations(run_script(*args, "--per-file", "2", "--seed", "3"))  # the seed fixes the draw
    every = _listed_mutations(run_script(*args, "--per-file", "0"))
    assert set(drawn) <= set(every) and len(every) > len(drawn)
    files = sorted({path for path, *_ in every})
    assert files == ["shapleig/runs/in_flight.py", "shapleig/runs/timeout.py"]
    assert sorted(path for path, *_ in drawn) == [files[0]] * 2 + [files[1]] * 2  # two per file
    for path, number, old, new, mutated in every:
        original = (REPO / path).read_text(encoding="utf-8").splitlines()[number - 1].strip()
        assert old and old != new and old in original, (path, number, old)
        # the printed line is the source line with one occurrence of old replaced by new
        starts = [i for i in range(len(original)) if original.startswith(old, i)]
        assert mutated in {original[:i] + new + original[i + len(old):] for i in starts}, (path, number, mutated)


def test_bench_store_times_every_operation_of_this_checkout(tmp_path: Path) -> None:
    # the script itself checks the store serves what it wrote (it exits non-zero otherwise)
    out = run_script("bench/bench_store.py", "--rows", "40", "--players", "6", "--repeats", "2",
                     "--code", str(REPO), "--folder", str(tmp_path))
    assert out.splitlines()[0] == (f"shapleig from {REPO / 'shapleig'}; 40 rows, p = 6, best of 2; "
                                   "microseconds per row")
    figures = {}
    for line in out.splitlines()[1:]:
        label, rest = line.split(maxsplit=1)
        figures[label] = {k.strip(): float(v) for k, v in re.findall(r"([a-z() ]+?)\s+([\d.]+)", rest)}
    assert set(figures["file"]) == {"append", "lookup", "records()", "history()", "open"}
    assert set(figures["memory"]) == {"append", "lookup", "records()", "history()"}  # nothing to reopen
    assert set(figures["digest"]) == {"digest (write)", "digest (check)"}
    assert all(v > 0 and math.isfinite(v) for f in figures.values() for v in f.values())
    assert list(tmp_path.iterdir()) == []  # the file store lived in a temporary folder inside --folder


def test_bench_import_best_is_at_most_the_median_and_nothing_heavy_loads() -> None:
    out = run_script("bench/bench_import.py", "--runs", "3")
    m = re.search(r"import shapleig: best ([\d.]+) s, median ([\d.]+) s over (\d+) fresh interpreters", out)
    assert m is not None, out
    best, median, runs = float(m.group(1)), float(m.group(2)), int(m.group(3))
    assert runs == 3 and 0 < best <= median
    assert "heavy modules imported: none" in out  # the default import leaves torch, scipy, pandas, ... out


def test_bench_trace_prints_the_per_step_costs_and_both_runs() -> None:
    out = run_script("bench/bench_trace.py", "--players", "5", "--steps", "4", "--repeats", "1")
    steps = dict(re.findall(r"^trace entry, (no fsync \(this code\)|an fsync per step): ([\d.]+) ms per step$", out,
                            re.M))
    assert set(steps) == {"no fsync (this code)", "an fsync per step"}
    assert all(float(v) > 0 for v in steps.values())
    runs = dict(re.findall(r"^ShaplEIG p=8 budget 64 on a file store, (with|without) the trace: ([\d.]+) s "
                           r"\(median of 1\)$", out, re.M))  # --repeats 1
    assert set(runs) == {"with", "without"} and all(float(v) > 0 for v in runs.values())


def test_bench_indices_runs_shapleig_alone_and_takes_any_option() -> None:
    order = load_script("bench/bench_indices_order.py")
    assert order.shapiq_methods("FBII", 3, []) == []  # `--methods` with no names: no shapiq import at all
    ind = load_script("bench/bench_indices.py")
    args = argparse.Namespace(max_order=3, acquisition_index=None, refit=None, hold_out_empty=None, calibrate=None,
                              surrogate=None, option=["initial_design=uniform", "fit_points=64", "structures=()"])
    est = ind.estimator("FBII", args)
    assert est.options.initial_design == "uniform" and est.options.fit_points == 64
    assert est.options.structures == () and est.options.max_order == 3 and est.options.index == "FBII"
    args.option = None
    assert ind.estimator("FBII", args).options.initial_design == "leverage"


# -- scripts/studies/promise_mutations.py: run on a copy, so the suite never mutates this checkout ------------

_PROMISES = "tests/project/test_promises.py"


def _copy_for_promise_mutations(root: Path) -> Path:
    """A copy under ``root`` of what the script and the promise tests need: the package, the tests' helpers, pytest's
    configuration and the script. (``shapleig_tasks``/``shapleig_baselines`` would still be imported from the
    installed checkout, so the mutations used here are of ``shapleig/`` only.)"""
    shutil.copytree(REPO / "shapleig", root / "shapleig", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tests" / "project").mkdir(parents=True)
    for helper in (REPO / "tests").glob("*.py"):  # conftest.py and the _*.py modules it and the tests import
        shutil.copy2(helper, root / "tests" / helper.name)
    shutil.copy2(REPO / _PROMISES, root / _PROMISES)
    (root / "scripts" / "studies").mkdir(parents=True)
    shutil.copy2(REPO / "scripts/studies/promise_mutations.py", root / "scripts/studies/promise_mutations.py")
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def _run_promise_mutations(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, str(root / "scripts/studies/promise_mutations.py"), *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def test_promise_mutations_catches_a_listed_mutation_and_restores_the_file(tmp_path: Path) -> None:
    root = _copy_for_promise_mutations(tmp_path)
    mutated = root / "shapleig/gp/kernel_choice.py"
    before = mutated.read_bytes()
    run = _run_promise_mutations(root, "--only", "BIC penalty")
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert len(lines) == 2, run.stdout
    # the named test ran against the mutated copy and failed: pytest's summary line is quoted
    assert re.fullmatch(r"CAUGHT BIC penalty d log t instead of d/2 log t \(\d+ s\): 1 failed in [\d.]+s", lines[0]), \
        lines[0]
    assert lines[1] == "caught 1 of 1"
    assert mutated.read_bytes() == before  # restored byte for byte


def test_promise_mutations_reports_a_survivor_and_a_missing_text_and_exits_1(tmp_path: Path) -> None:
    root = _copy_for_promise_mutations(tmp_path)
    store = root / "shapleig/runs/store.py"
    before = store.read_bytes()
    line = 'PRAGMA synchronous = FULL")  # a committed value survives'
    assert before.decode().count(line) == 1
    mutations = [  # a reworded comment: the named test passes with it, so the mutation survives
                 {"name": "comment reworded", "file": "shapleig/runs/store.py", "old": line,
                  "new": line.replace("survives", "is kept"), "tests": [f"{_PROMISES} -k 'synchronous_full'"]},
                 {"name": "text not there", "file": "shapleig/runs/store.py", "old": "no such text in the store",
                  "new": "", "tests": [f"{_PROMISES}::test_bic_log_evidence_by_hand"]}]
    listed = tmp_path / "mutations.json"
    listed.write_text(json.dumps(mutations))
    run = _run_promise_mutations(root, "--mutations-file", str(listed))
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert len(lines) == 3, run.stdout
    assert re.fullmatch(r"MISSED comment reworded \(\d+ s\): 1 passed, \d+ deselected in [\d.]+s", lines[0]), lines[0]
    assert lines[1] == "SKIP   text not there: the text to mutate occurs 0 times in shapleig/runs/store.py"
    assert lines[2] == "caught 0 of 1"  # a skipped mutation is not counted
    assert store.read_bytes() == before
    # --only filters a mutations file too; a malformed file is refused naming the entry and what is wrong
    run = _run_promise_mutations(root, "--mutations-file", str(listed), "--only", "not there")
    assert (run.returncode, run.stdout.splitlines()[-1]) == (0, "caught 0 of 0"), run.stdout
    listed.write_text(json.dumps([mutations[0], {k: v for k, v in mutations[1].items() if k != "tests"}]))
    run = _run_promise_mutations(root, "--mutations-file", str(listed))
    assert run.returncode == 1 and run.stdout == "", run.stdout
    assert "entry 1 must be an object with exactly the keys" in run.stderr, run.stderr


# -- scripts/docs/dashboard_screenshots.py -------------------------------------------------------------------

def _png_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` of a PNG, after checking its signature, every chunk's CRC and that the pixel data
    inflates to exactly the rows the header announces (8-bit RGB or RGBA, not interlaced)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + body), (path, kind)
        chunks.append((kind, body))
        at += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", [k for k, _ in chunks]
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(pixels) == height * (1 + width * (3 if colour == 2 else 4))  # a filter byte, then the row
    return width, height


def test_dashboard_screenshots_quick_writes_whole_page_pngs_of_the_paused_run_and_the_rows(tmp_path: Path) -> None:
    from _browser import require_chromium  # the script finds Chromium the same way (find_chromium)

    require_chromium()  # skipped without one, failed instead under SHAPLEIG_REQUIRE_BROWSER=1 (CI)
    pytest.importorskip("lightgbm")
    pytest.importorskip("sklearn")
    out = tmp_path / "shots"
    # the script's temporary folders go to a TMPDIR of their own, on a short path: Chromium puts its sockets
    # there, and a unix socket's path must stay under 108 bytes (tmp_path's can be longer)
    with tempfile.TemporaryDirectory(prefix="shots-") as tmp:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": tmp,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        run = subprocess.run([sys.executable, str(REPO / "scripts/docs/dashboard_screenshots.py"), "--out", str(out),
                              "--quick"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        # the run's store, the rows' folder and the browsers' profiles are removed (Chromium's own may stay)
        # a browser profile (shapleig-chromium-*) goes as Chromium exits: a race, not this script's promise
        left = sorted(p.name for p in Path(tmp).glob("shapleig-*") if not p.name.startswith("shapleig-chromium-"))
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert left == []
    lines = run.stdout.splitlines()
    assert len(lines) == 2, run.stdout
    study = re.fullmatch(r"wrote (.+): page 1200 x (\d+) px; the run paused at (\d+) of (\d+) evaluations, "
                         r"the page shows (\S+) spent", lines[0])
    rows = re.fullmatch(r"wrote (.+): page 1200 x (\d+) px; (\d+) rows explained, the page lists (\S+)", lines[1])
    assert study is not None and rows is not None, run.stdout
    assert (study.group(1), rows.group(1)) == (str(out / "dashboard-study.png"), str(out / "dashboard-explain-x.png"))
    assert sorted(p.name for p in out.iterdir()) == ["dashboard-explain-x.png", "dashboard-study.png"]
    # --quick: paused at 14 of 20 evaluations, and the page shows the run paused there; 2 rows, both listed
    assert study.groups()[2:] == ("14", "20", "14")
    assert rows.groups()[2:] == ("2", "2")
    for found in (study, rows):
        shot = Path(found.group(1))
        assert _png_size(shot) == (1200, int(found.group(2)))  # the whole page, at its printed height
        assert 600 <= int(found.group(2)) <= 6000
        assert shot.stat().st_size > 30_000  # charts and tables, not a blank page (a blank one is a few KB)


def test_bench_large_p_closed_form_shapley_matches_enumeration() -> None:
    """The benchmark's closed-form Shapley values of its synthetic game against enumerating all 2^p coalitions."""

    from shapleig.games.exact import exact_shapley
    from shapleig.games.game import FunctionGame

    bench = Path(__file__).resolve().parents[2] / "scripts" / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("bench_large_p_under_test", bench / "bench_large_p.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        from bench_fit import synthetic
    finally:
        sys.path.remove(str(bench))
    for p, seed in ((5, 0), (8, 3)):
        expected = exact_shapley(FunctionGame(lambda Z, s=seed: synthetic(Z, s), p))
        np.testing.assert_allclose(module.exact_shapley(p, seed), expected, rtol=0, atol=1e-12)


def test_index_noise_floor_walsh_energy_is_the_dense_expansion() -> None:
    """Each order's energy is sum_{|S| = d} c_S^2 with c_S = mean_z v(z) prod_{i in S} (2 z_i - 1)."""
    spec = importlib.util.spec_from_file_location("index_noise_floor", REPO / "scripts" / "bench" / "index_noise_floor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    p = 4
    values = np.random.default_rng(3).normal(size=2**p)
    Z = (np.arange(2**p)[:, None] >> np.arange(p)) & 1  # bit order: coalition code c at row c
    signs = 2.0 * Z - 1.0
    expected = np.zeros(p + 1)
    for code in range(2**p):
        members = [i for i in range(p) if code >> i & 1]
        c = float(np.mean(values * np.prod(signs[:, members], axis=1)))
        expected[len(members)] += c**2
    energy = module.walsh_energy_by_order(values)
    np.testing.assert_allclose(energy, expected, rtol=1e-12, atol=1e-15)
    assert energy[1:].sum() == pytest.approx(np.var(values), rel=1e-12)  # Parseval: the variance
