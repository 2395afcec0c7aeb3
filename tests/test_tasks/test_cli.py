"""The ``shapleig`` command: run, plot and demo as subprocesses; clear errors with exit status 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from shapleig_tasks.cli import main

ROOT = Path(__file__).resolve().parents[2]


def shapleig(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shapleig_tasks.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_run_then_plot_as_subprocesses(tmp_path: Path) -> None:
    out, fig = tmp_path / "res" / "results.parquet", tmp_path / "fig.png"
    run = shapleig("run", "--tasks", "wvg-7,wvg-7-q3", "--methods", "permutation", "kernelshap",
                   "--budgets", "2p", "16", "--seeds", "2", "--out", str(out), "--quiet")
    assert run.returncode == 0, run.stderr
    df = pd.read_parquet(out)
    assert len(df) == 2 * 2 * 2 * 2  # tasks x methods x budgets x seeds
    assert set(df.budget) == {14, 16} and set(df.seed) == {0, 1}
    assert "mean MSE" in run.stdout and "wvg-7-q3" in run.stdout
    plot = shapleig("plot", str(out), "--out", str(fig))
    assert plot.returncode == 0, plot.stderr
    assert fig.read_bytes()[:4] == b"\x89PNG" and "mean rank" in plot.stdout


def test_demo_quick_as_subprocess(tmp_path: Path) -> None:
    # a synthetic game keeps the default run fast; the LightGBM demo is the slow test below
    demo = shapleig("demo", "--quick", "--task", "wvg-7", "--methods", "shapleig:refit=never,pool_size=20", "permutation",
                    "--budgets", "9,10", "--out", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    df = pd.read_parquet(tmp_path / "demo" / "results.parquet")
    assert len(df) == 2 * 2 and df.seed.unique().tolist() == [0]  # --quick: one seed
    assert (tmp_path / "demo" / "mse.png").stat().st_size > 1000
    assert "mean MSE" in demo.stdout and "runs" in demo.stderr  # table and progress bar
    assert demo.stderr.startswith("wvg-7: exact values known")  # said before anything runs
    assert "3 estimator runs for 4 table rows (an anytime method runs once per seed" in demo.stderr
    last = demo.stdout.strip().splitlines()[-1]  # the verdict: what the table shows, with the MSE's units
    assert re.fullmatch(r"verdict: shapleig:pool_size=20,refit=never ranks (1st|2nd) at 9, (1st|2nd) at 10 "
                        r"evaluations of 2 methods by mean MSE over 1 seed\(s\); at 10 its MSE is \S+ \(game units\)², "
                        r"the best other \(permutation\) \S+ \(game units\)²", last), last
    mse = df[df.budget == 10].set_index("method_name")["mse"]
    assert (" ranks 1st" in last.split(" at 9")[0]) == bool(df[df.budget == 9].sort_values("mse").method_name.iloc[0]
                                                             == "shapleig")
    assert f"its MSE is {mse['shapleig']:.3g} " in last and f"(permutation) {mse['permutation']:.3g} " in last


@pytest.mark.slow
def test_demo_quick_on_the_lightgbm_game(tmp_path: Path) -> None:
    demo = shapleig("demo", "--quick", "--out", str(tmp_path / "demo"), timeout=600)
    assert demo.returncode == 0, demo.stderr
    df = pd.read_parquet(tmp_path / "demo" / "results.parquet")
    assert set(df.task) == {"hpi-diabetes-5"} and set(df.budget) == {12, 16}
    assert df.method_name.nunique() == 5 and (df.error == "").all()
    assert list((tmp_path / "demo" / "cache").rglob("*.npz"))  # the ground truth was cached


def test_bad_input_exits_2_as_subprocess(tmp_path: Path) -> None:
    res = shapleig("run", "--tasks", "no-such-task", "--methods", "permutation", "--budgets", "10",
                   "--out", str(tmp_path / "r.parquet"))
    assert res.returncode == 2
    assert "unknown task 'no-such-task'" in res.stderr and "vit-9" in res.stderr


def _fails(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


def test_clear_errors_before_any_evaluation(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "r.parquet")
    base = ["run", "--budgets", "10", "--seeds", "1", "--quiet"]
    err = _fails(capsys, *base, "--tasks", "wvg-7", "--methods", "nope", "--out", out)
    assert "unknown method 'nope'" in err and "shapleig" in err and "leverage-shap" in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = _fails(capsys, *base, "--tasks", "wvg-7", "--methods", "permutation", "--out", str(blocker / "r.parquet"))
    assert "not writable" in err and str(blocker) in err
    bad = tmp_path / "corrupt_3.npz"
    bad.write_bytes(b"garbage")
    err = _fails(capsys, *base, "--tasks", f"table:{bad}", "--methods", "permutation", "--out", out)
    assert "corrupt_3" in err
    err = _fails(capsys, *base, "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "2", "--out", out)
    assert "at least" in err
    err = _fails(capsys, "plot", str(tmp_path / "missing.parquet"), "--out", str(tmp_path / "f.png"))
    assert "does not exist" in err
    assert not list(tmp_path.glob("*.parquet"))


def test_listings(capsys) -> None:
    assert main(["tasks"]) == 0
    text = capsys.readouterr().out
    assert "airport-100" in text and "hpi-diabetes-8" in text and "vit-9" in text
    assert main(["methods"]) == 0
    text = capsys.readouterr().out
    assert "shapleig-uncertainty" in text and "svarm-plus" in text


def test_run_with_precision_target(tmp_path: Path, capsys) -> None:
    """--tol reaches the GP arms: runs stop early once every std is at most TOL; bad values exit 2."""
    out = tmp_path / "r.parquet"
    assert main(["run", "--tasks", "wvg-7", "--methods", "shapleig:refit=never", "--budgets", "40",
                 "--seeds", "1", "--tol", "10", "--out", str(out), "--quiet"]) == 0
    df = pd.read_parquet(out)
    assert json.loads(df.options[0])["tol"] == 10.0 and int(df.evaluations[0]) == 8  # the p + 1 design alone
    err = _fails(capsys, "run", "--tasks", "wvg-7", "--methods", "shapleig", "--budgets", "40", "--seeds", "1",
                 "--tol", "-1", "--out", str(out), "--quiet")
    assert "tol must be a positive" in err


def test_each_bad_input_is_refused_before_anything_runs(tmp_path: Path, capsys, monkeypatch) -> None:
    """Every case exits 2 with a message naming the problem, and nothing is evaluated: the
    ground truth and the estimators are never reached."""
    from shapleig_tasks import harness

    def must_not_run(*args, **kwargs):
        raise AssertionError("evaluation started despite bad input")

    monkeypatch.setattr(harness, "execute_plan", must_not_run)
    monkeypatch.setattr(harness, "ground_truth", must_not_run)
    out = str(tmp_path / "r.parquet")
    base = ["run", "--tasks", "wvg-7", "--methods", "permutation", "--quiet"]
    cases = [
        (["--budgets", "10", "--jobs", "0", "--out", out], "--jobs 0: give a positive number of workers"),
        (["--budgets", "10", "--jobs", "-3", "--out", out], "--jobs -3"),
        (["--budgets", "-5", "--out", out], "--budgets -5: budgets must be positive"),
        (["--budgets", "-2p", "--out", out], "--budgets -2p: budgets must be positive"),
        (["--budgets", "10", "-2p", "--out", out], "--budgets -2p"),
        (["--budgets", "0", "--out", out], "budget 0: budgets must be positive"),
        (["--budgets", "0p", "--out", out], "budget 0p: budgets must be positive"),
        (["--budgets", "10", "--seeds", "-1", "--out", out], "--seeds -1: seeds are non-negative integers"),
        (["--budgets", "10", "--seeds", "1.5", "--out", out], "bad seed '1.5': seeds are non-negative integers"),
        (["--budgets", "10", "--seeds", "0", "--out", out], "need at least one seed"),
        (["--budgets", "10", "--out", str(tmp_path / "x.csv")], "written as parquet; give a name ending in .parquet"),
        (["--budgets", "2", "--out", out], "at least"),
    ]
    for extra, message in cases:
        err = _fails(capsys, *base, *extra)
        assert message in err, (extra, err)
        assert "Traceback" not in err
    err = _fails(capsys, "run", "--tasks", "vit-9/first=0", "--methods", "permutation", "--budgets", "10",
                 "--out", out)
    assert "first=n selects the first n tables; n must be at least 1" in err
    assert not list(tmp_path.iterdir())


def test_plot_refuses_an_unknown_figure_format(tmp_path: Path, capsys) -> None:
    from shapleig_tasks.harness import results_frame, write_parquet

    results = write_parquet(results_frame([]), tmp_path / "r.parquet")
    err = _fails(capsys, "plot", str(results), "--out", str(tmp_path / "y.xyz"))
    assert "unknown format 'xyz'" in err and ".png" in err and ".pdf" in err
    assert not (tmp_path / "y.xyz").exists()


def test_jobs_minus_one_is_accepted() -> None:
    from shapleig_tasks.cli import build_parser

    args = build_parser().parse_args(["run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "10",
                                      "--jobs", "-1", "--out", "r.parquet"])
    assert args.jobs == -1
