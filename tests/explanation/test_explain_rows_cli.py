"""``shapleig explain-rows``: the printed summary and written files are those of ``explain_X`` on the
same background; a rerun with the same --store folder resumes; bad input exits with status 2 first."""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

import shapleig
from shapleig_tasks.cli import main
from shapleig_tasks.explain_rows_cli import parse_rows


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 5)), columns=list("abcde"))
    y = X["a"] * 2 - X["b"] + X["c"] * X["d"]
    X.assign(target=y).to_csv(tmp_path / "X.csv", index=False)
    lgb.LGBMRegressor(n_estimators=15, num_leaves=6, verbose=-1).fit(X, y).booster_.save_model(str(tmp_path / "m.txt"))
    return tmp_path / "m.txt", tmp_path / "X.csv", X


def test_explain_rows_command_matches_explain_x_and_resumes(saved, tmp_path: Path, capsys, monkeypatch) -> None:
    model_path, data_path, X = saved
    args = ["explain-rows", "--model", str(model_path), "--data", str(data_path), "--drop", "target", "--rows", "0-2,5",
            "--budget", "12", "--background", "20", "--store", str(tmp_path / "rows"), "--out", str(tmp_path / "r.parquet"),
            "--summary", str(tmp_path / "s.csv"), "--plot", str(tmp_path / "p.png"), "--quiet", "--no-exact-if-cheap"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "4 rows explained by shapleig" in out and "global importance" in out
    values = pd.read_parquet(tmp_path / "r.parquet")
    assert sorted(values["row"].unique()) == [0, 1, 2, 5] and len(values) == 4 * 5
    booster = lgb.Booster(model_file=str(model_path))
    ref = shapleig.explain_X(booster, X.sample(20, random_state=0), X.iloc[[0, 1, 2, 5]], budget=12, seed=0,
                             progress=False, exact_if_cheap=False)
    np.testing.assert_allclose(values["value"].to_numpy().reshape(4, 5), ref.values, atol=1e-12)
    summary = pd.read_csv(tmp_path / "s.csv")
    np.testing.assert_allclose(summary.set_index("term").loc[ref.feature_names, "mean_abs"], ref.global_importance()[0],
                               rtol=1e-10)
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert len(list((tmp_path / "rows").glob("row-*.sqlite"))) == 4
    assert main(args) == 0  # the rerun replays the stores
    again = pd.read_parquet(tmp_path / "r.parquet")
    np.testing.assert_array_equal(again["value"], values["value"])
    jobs = [a if a != str(tmp_path / "rows") else str(tmp_path / "rows2") for a in args] + ["--jobs", "2"]
    real, asked = shapleig.explain_X, []
    monkeypatch.setattr(shapleig, "explain_X", lambda *a, **k: asked.append(k["n_jobs"]) or real(*a, **k))
    assert main(jobs) == 0 and asked == [2]  # two rows at once in worker processes: the same values
    np.testing.assert_allclose(pd.read_parquet(tmp_path / "r.parquet")["value"], values["value"], rtol=1e-10,
                               atol=1e-12)
    assert len(list((tmp_path / "rows2").glob("row-*.sqlite"))) == 4


@pytest.mark.parametrize("extra,message", [
    (["--rows", "3-1"], "end is before the start"),
    (["--rows", "200"], "the data has 80 rows"),
    (["--rows", "x"], "bad row"),
    (["--imputer", "marginal"], "choose one of"),
    (["--summary", "s.txt"], ".csv or .parquet"),
    (["--method", "nosuch"], "unknown method"),
    (["--jobs", "0"], "--jobs 0"),
])
def test_bad_input_exits_2_before_any_evaluation(saved, capsys, extra, message) -> None:
    model_path, data_path, _ = saved
    with pytest.raises(SystemExit) as done:
        main(["explain-rows", "--model", str(model_path), "--data", str(data_path), "--drop", "target", *extra])
    assert done.value.code == 2 and message in capsys.readouterr().err


def test_parse_rows() -> None:
    assert parse_rows("all", 3) == [0, 1, 2] and parse_rows("4,0-1", 5) == [4, 0, 1]
    with pytest.raises(ValueError, match="twice"):
        parse_rows("1,1", 5)
