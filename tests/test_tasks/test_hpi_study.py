"""Hyperparameter-importance studies from a model and a dataset (shapleig_tasks.hpi, ``shapleig hpi``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ConfigSpace")

from shapleig.errors import GameError  # noqa: E402
from shapleig_tasks import cli  # noqa: E402
from shapleig_tasks.hpi import CVObjective, DataSpec, prepare_study, run_study  # noqa: E402


def test_quick_cli_writes_table_plot_and_store_and_resumes(tmp_path, capsys):
    out = tmp_path / "quick"
    assert cli.main(["hpi", "--quick", "--out", str(out)]) == 0
    for name in ("shapley.csv", "shapley.parquet", "shapley.png", "evaluations.sqlite", "study.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    table = pd.read_csv(out / "shapley.csv")
    assert list(table["hyperparameter"]) == ["learning_rate", "n_estimators", "num_leaves", "subsample"]
    assert np.isfinite(table["shapley"]).all() and (table["std"] > 0).all()
    summary = json.loads((out / "study.json").read_text())
    assert summary["evaluations"] == 12 and summary["from_store"] == 0
    # the same command again: every value from the store, no objective call, same table
    assert cli.main(["hpi", "--quick", "--out", str(out)]) == 0
    again = json.loads((out / "study.json").read_text())
    assert again["from_store"] == 12 and again["objective_calls_this_process"] == 0
    pd.testing.assert_frame_equal(pd.read_csv(out / "shapley.csv"), table)
    # another seed on the same folder is refused before anything is evaluated
    assert _exit_code(["hpi", "--quick", "--out", str(out), "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "holds another study (seed: 0 vs 1)" in err and "--out" in err and "accept_game_change" not in err
    assert "#" not in err.split("holds another study")[1]  # words, not digests


def _exit_code(argv) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code)


def test_csv_dataset_user_space_and_ablation(tmp_path):
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    frame = pd.DataFrame(x[:200, :6], columns=[f"f{i}" for i in range(6)])
    frame["label"] = np.where(y[:200] == 1, "benign", "malignant")
    csv = tmp_path / "cancer.csv"
    frame.to_csv(csv, index=False)
    from ConfigSpace import ConfigurationSpace, Float, Integer

    space = ConfigurationSpace(seed=0)  # small forests keep the fits cheap
    space.add([Integer("n_estimators", (5, 30), default=10), Float("max_features", (0.1, 1.0), default=1.0),
               Integer("min_samples_leaf", (1, 20), default=1)])
    path = tmp_path / "space.json"
    space.to_json(path)
    result = run_study(
        "random_forest", str(csv), target="label", space=str(path), study="ablation",
        target_config={"n_estimators": 25, "max_features": 0.3, "min_samples_leaf": 5},
        budget=8, method="permutation", n_folds=2, out=tmp_path / "abl", log=None,
    )
    assert result.estimate.evaluations <= 8
    assert set(result.table.columns) >= {"hyperparameter", "shapley", "std", "baseline", "target"}
    # budget 8 = 2^3 covers the game: every coalition evaluated, exact values with std 0
    assert result.estimate.info["exact"] and (result.table["std"] == 0).all()
    assert list(result.table["target"]) == ["0.3", "5", "25"]
    assert np.isfinite(result.estimate.values).all()
    summary = json.loads(result.files["summary"].read_text())
    assert summary["dataset"] == "cancer.csv" and summary["metric"] == "neg_log_loss"


def test_cv_objective_is_deterministic_and_picklable():
    import pickle

    obj = CVObjective("lightgbm", DataSpec.make("wine"), n_folds=2, seed=0)
    cfg = {"n_estimators": 10, "num_leaves": 4}
    a = obj(cfg)
    b = pickle.loads(pickle.dumps(obj))(cfg)
    assert a == b and obj.metric == "neg_log_loss" and a < 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(dataset="nope"), "neither a bundled dataset"),
    (dict(hyperparameters=["learning_rate", "depth"]), "no hyperparameters"),
    (dict(budget="1p"), "needs budget"),
    (dict(budget=10_000), "exceeds"),
    (dict(study="fanova"), "unknown study"),
    (dict(method="nosuch"), "unknown method"),
    (dict(metric="r2", dataset="wine"), "does not fit"),
    (dict(tuner="optuna-anneal"), "unknown Optuna sampler"),
    (dict(tuner="smac"), "unknown tuner"),
])
def test_bad_input_named_before_any_evaluation(tmp_path, kwargs, message):
    options = dict(budget="2p", out=tmp_path / "o", hyperparameters=["learning_rate", "num_leaves", "subsample"])
    options.update(kwargs)
    dataset = options.pop("dataset", "diabetes")
    with pytest.raises((ValueError, GameError), match=message):
        prepare_study("lightgbm", dataset, **options)
    assert not (tmp_path / "o" / "evaluations.sqlite").exists()


def test_cli_bad_input_exits_2(tmp_path, capsys):
    assert _exit_code(["hpi", "--dataset", str(tmp_path / "x.csv"), "--out", str(tmp_path)]) == 2
    assert "neither a bundled dataset" in capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [
    (["--dataset", "nosuch"], "--dataset nosuch"),
    (["--study", "sensitivity"], "--study sensitivity"),
    (["--budget", "5p"], "--budget 5p"),
    (["--dataset", "wine", "--inner-budget", "7"], "--dataset wine, --inner-budget 7"),
])
def test_quick_refuses_options_it_would_ignore(tmp_path, capsys, argv, named):
    assert _exit_code(["hpi", "--quick", "--out", str(tmp_path / "q"), *argv]) == 2
    err = capsys.readouterr().err
    assert f"would ignore {named}" in err and not (tmp_path / "q").exists()


def test_default_budget_never_exceeds_the_coalitions(tmp_path):
    """3 hyperparameters: 4p = 12 > 2^3 = 8, so the default budget is 8; an explicit 12 is refused."""
    hps = ["learning_rate", "num_leaves", "subsample"]
    study = prepare_study("lightgbm", "diabetes", hyperparameters=hps, out=tmp_path / "o")
    assert study.budget == 8
    assert prepare_study("lightgbm", "diabetes", hyperparameters=hps, budget="2p", out=tmp_path / "o").budget == 6
    with pytest.raises(ValueError, match="exceeds"):
        prepare_study("lightgbm", "diabetes", hyperparameters=hps, budget="4p", out=tmp_path / "o")


def test_plot_shapley_labelled_error_bars(tmp_path):
    """hpi plots use ± 1.96 std like explanation plots, say so in a legend only with a std, and name the units."""
    import matplotlib.pyplot as plt

    from shapleig_tasks import hpi

    table = pd.DataFrame({"hyperparameter": ["a", "b"], "shapley": [1.0, -0.5], "std": [0.1, 0.2], "rank": [1, 2]})
    captured = {}
    real = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        captured["fig"] = fig
        return real(fig, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        hpi.plot_shapley(table, tmp_path / "a.png", units="CV r2")
        ax = captured["fig"].axes[0]
        assert ax.get_xlabel() == "Shapley value (CV r2)"
        assert "± 1.96 posterior std (95% interval)" in [t.get_text() for t in ax.get_legend().get_texts()]
        segments = next(c for c in ax.collections if hasattr(c, "get_segments")).get_segments()
        half = sorted(abs(s[1][0] - s[0][0]) / 2 for s in segments)
        np.testing.assert_allclose(half, [0.196, 0.392])  # 1.96 * std
        hpi.plot_shapley(table.assign(std=np.nan), tmp_path / "b.png")
        ax = captured["fig"].axes[0]
        assert ax.get_xlabel() == "Shapley value (score units)"
        assert not any("std" in t.get_text() for t in ax.get_legend().get_texts())
    finally:
        plt.Figure.savefig = real


def test_run_study_is_quiet_as_a_library_call(tmp_path, capsys):
    run_study("lightgbm", "diabetes", hyperparameters=["learning_rate", "num_leaves", "subsample"],
              budget=6, method="permutation", inner_budget=2, n_folds=2, out=tmp_path / "q")
    assert capsys.readouterr().out == ""


def test_a_study_on_the_same_folder_is_told_what_differs_in_words(tmp_path):
    from shapleig.errors import StoreMismatchError

    kwargs = dict(hyperparameters=["learning_rate", "num_leaves", "subsample"], budget=6, method="permutation",
                  inner_budget=2, out=tmp_path / "s")
    run_study("lightgbm", "diabetes", n_folds=2, **kwargs)
    with pytest.raises(StoreMismatchError, match=r"another study \(folds: 2 vs 3\)"):
        prepare_study("lightgbm", "diabetes", n_folds=3, **kwargs)
    with pytest.raises(StoreMismatchError, match=r"folds: 2 vs 3; inner budget: 2 vs 3"):
        prepare_study("lightgbm", "diabetes", n_folds=3, **{**kwargs, "inner_budget": 3})
    prepare_study("lightgbm", "diabetes", n_folds=2, **kwargs)  # the same study resumes


def test_negative_seed_is_a_clear_error(tmp_path, capsys):
    assert _exit_code(["hpi", "--dataset", "diabetes", "--seed", "-1", "--out", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err
    assert "--seed -1" in err and "0 <= seed" in err and not (tmp_path / "n").exists()
