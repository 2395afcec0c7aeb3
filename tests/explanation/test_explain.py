"""``shapleig.explain``: the interventional imputer game on scikit-learn and LightGBM models.

Checked against independent references: a linear model's interventional Shapley values are
``w_i (x_i - mean(background_i))`` in closed form, and enumeration (``exact_shapley``) of the same
game at full budget; plus efficiency, one model call per batch, and the plot.
"""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest

import shapleig
from shapleig import GameError, exact_shapley
from shapleig.estimation.efficiency import condition_on_total
from shapleig.explanation.imputer import ImputerGame, model_predict

lgb = pytest.importorskip("lightgbm")
sklearn_datasets = pytest.importorskip("sklearn.datasets")


@pytest.fixture(scope="module")
def diabetes():
    X, y = sklearn_datasets.load_diabetes(return_X_y=True, as_frame=True)
    return X, y


@pytest.fixture(scope="module")
def lgbm6(diabetes):
    X, y = diabetes
    X = X.iloc[:, :6]
    model = lgb.LGBMRegressor(n_estimators=30, num_leaves=8, verbose=-1, random_state=0).fit(X, y)
    return model, X.iloc[:30], X.iloc[200]


def _efficiency_gap(est) -> float:
    return abs(est.values.sum() - (est.info["prediction"] - est.baseline))


def test_imputer_game_matches_definition_and_batches_one_call(diabetes):
    X, _ = diabetes
    bg, x = X.to_numpy()[:7, :4], X.to_numpy()[50, :4]
    seen = []

    def f(rows):
        seen.append(rows.shape)
        return rows @ np.array([1.0, -2.0, 0.5, 3.0]) + rows[:, 0] * rows[:, 3]

    game = ImputerGame(f, bg, x)
    seen.clear()
    rng = np.random.default_rng(0)
    Z = rng.random((9, 4)) < 0.5
    v = game(Z)
    assert seen == [(9 * 7, 4)] and game.calls == 1  # one model call for the batch
    for z, value in zip(Z, v):
        rows = np.where(z, x, bg)
        assert value == pytest.approx(f(rows).mean(), rel=1e-12, abs=1e-12)
    # a row cap splits the batch without changing the values
    small = ImputerGame(f, bg, x, max_rows=20)
    seen.clear()
    np.testing.assert_allclose(small(Z), v, rtol=1e-12)
    assert seen == [(14, 4)] * 4 + [(7, 4)]
    # stores tell explanations of different rows apart
    assert game.identity() != ImputerGame(f, bg, x + 1.0).identity() == ImputerGame(f, bg, x + 1.0).identity()


def test_linear_model_closed_form_and_exact_method():
    """p = 10: enumeration of the imputer game equals w_i (x_i - mean(bg_i)) for a linear model."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 10))
    y = X @ rng.normal(size=10) + 0.1 * rng.normal(size=200)
    model = LinearRegression().fit(X, y)
    bg, x = X[:25], X[120]
    est = shapleig.explain(model, bg, x, method="exact", budget=2**10)
    closed = model.coef_ * (x - bg.mean(axis=0))
    np.testing.assert_allclose(est.values, closed, atol=1e-10)
    assert est.baseline == pytest.approx(model.predict(bg).mean(), rel=1e-12)
    assert est.info["prediction"] == pytest.approx(model.predict(x[None, :])[0], rel=1e-12)
    assert _efficiency_gap(est) < 1e-9
    with pytest.raises(shapleig.BudgetError, match=r"needs budget >= 1024 .*all 2\^10 coalitions"):
        shapleig.explain(model, bg, x, method="exact", budget=100)


def test_lightgbm_shapleig_efficient_and_exact_at_full_budget(lgbm6):
    model, bg, x = lgbm6
    p = 6
    reference = exact_shapley(ImputerGame(model_predict(model), bg, x))
    # a small budget: efficient to 1e-6 whatever the GP's interpolation error (exact_if_cheap=False:
    # this 6-feature model is near the timing boundary where enumeration would be chosen instead)
    est = shapleig.explain(model, bg, x, budget=12, seed=0, exact_if_cheap=False)
    assert est.evaluations == 12 and est.method == "shapleig"
    assert _efficiency_gap(est) < 1e-6
    assert est.std.shape == (p,) and np.all(est.std >= 0)
    assert est.baseline == pytest.approx(model.predict(bg).mean(), rel=1e-12)
    assert est.info["feature_names"] == list(bg.columns)
    # the conditioned covariance has the all-ones vector in its null space (the sum is known)
    assert np.abs(est.covariance.sum(axis=1)).max() < 1e-8 * np.abs(est.covariance).max()
    # full budget: the posterior interpolates all 2^p values (tiny GP noise), so it is exact
    full = shapleig.explain(model, bg, x, budget=2**p, seed=0,
                            method=shapleig.ShaplEIG.from_options(noise=1e-10, refit="never"))
    assert full.evaluations == 2**p
    np.testing.assert_allclose(full.values, reference, atol=1e-6 * np.abs(reference).max())
    assert _efficiency_gap(full) < 1e-6
    # the exact method agrees with enumeration of the same game to rounding
    np.testing.assert_allclose(shapleig.explain(model, bg, x, method="exact").values, reference, atol=1e-9)


def test_lightgbm_classifier_p10_baseline_exact_at_full_budget():
    """Binary LightGBM classifier, p = 10: positive-class probability; a regression baseline at
    full budget equals enumeration; a non-efficient baseline is made efficient."""
    import shapleig_baselines as baselines

    X, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    X = X[:, :10]
    model = lgb.LGBMClassifier(n_estimators=20, num_leaves=6, verbose=-1, random_state=0).fit(X, y)
    bg, x = X[:12], X[300]
    reference = exact_shapley(ImputerGame(model_predict(model), bg, x))
    est = shapleig.explain(model, bg, x, budget=2**10, method=baselines.get("regression-msr"), seed=0)
    np.testing.assert_allclose(est.values, reference, atol=1e-9)
    assert est.info["prediction"] == pytest.approx(model.predict_proba(x[None, :])[0, 1], rel=1e-12)
    assert est.baseline == pytest.approx(model.predict_proba(bg)[:, 1].mean(), rel=1e-12)
    owen = shapleig.explain(model, bg, x, budget=60, method=baselines.get("owen"), seed=1)
    assert owen.evaluations <= 60 and _efficiency_gap(owen) < 1e-6
    assert owen.info["efficiency_gap"] != 0.0  # Owen sampling is not efficient by itself
    other = shapleig.explain(model, bg, x, budget=2**10, method=baselines.get("regression-msr"), output=0)
    np.testing.assert_allclose(other.values, -reference, atol=1e-9)


def test_sklearn_dataframe_model_keeps_feature_names(diabetes):
    """A scikit-learn forest fitted on a DataFrame gets DataFrames back (no feature-name warning)."""
    from sklearn.ensemble import RandomForestRegressor

    X, y = diabetes
    X = X.iloc[:, :5]
    model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")  # sklearn's array-input warning
        est = shapleig.explain(model, X.iloc[:20], X.iloc[[70]], budget=16, seed=2)
    assert _efficiency_gap(est) < 1e-6
    reference = exact_shapley(ImputerGame(model.predict, X.iloc[:20], X.iloc[70]))
    assert np.abs(est.values - reference).max() < 0.25 * np.abs(reference).max()
    # full budget (2^5 coalitions): Leverage SHAP's regression is exact, so explain equals enumeration
    import shapleig_baselines as baselines

    full = shapleig.explain(model, X.iloc[:20], X.iloc[[70]], budget=2**5, method=baselines.get("leverage-shap"))
    assert full.evaluations == 2**5
    np.testing.assert_allclose(full.values, reference, atol=1e-9)


def test_categorical_dataframe_additive_model_closed_form():
    """Mixed numeric / categorical columns reach the model with their dtypes; an additive model's
    interventional values are g_j(x_j) - mean_b g_j(b_j)."""
    import pandas as pd

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.normal(size=40), "b": pd.Categorical(rng.choice(["x", "y", "z"], 40)),
                       "c": rng.integers(0, 5, 40)})

    def f(frame):
        assert isinstance(frame.dtypes["b"], pd.CategoricalDtype) and frame.dtypes["c"] == df.dtypes["c"]
        return 2.0 * frame["a"].to_numpy() + 1.5 * (frame["b"] == "y").to_numpy() + 0.3 * frame["c"].to_numpy()

    bg, x = df.iloc[:15], df.iloc[30]
    est = shapleig.explain(f, bg, x, method="exact")
    closed = [2.0 * (x["a"] - bg["a"].mean()), 1.5 * ((x["b"] == "y") - (bg["b"] == "y").mean()),
              0.3 * (x["c"] - bg["c"].mean())]
    np.testing.assert_allclose(est.values, closed, atol=1e-12)
    assert est.info["feature_names"] == ["a", "b", "c"]


def test_bad_input_fails_before_any_game_evaluation(lgbm6, diabetes):
    model, bg, x = lgbm6
    with pytest.raises(GameError, match="one row of 6 features"):
        shapleig.explain(model, bg, np.zeros(5))
    with pytest.raises(GameError, match="unknown method 'kernelshapp'; known methods: shapleig, "):
        shapleig.explain(model, bg, x, method="kernelshapp")
    with pytest.raises(GameError, match="cannot explain a str"):
        shapleig.explain("model", bg, x)
    X, y = diabetes
    multi = lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(X.iloc[:, :4], np.digitize(y, [100, 200]))
    with pytest.raises(GameError, match="3 outputs per row: choose one with output=0..2"):
        shapleig.explain(multi, X.iloc[:10, :4], X.iloc[3, :4])
    with pytest.raises(GameError, match="output must be an integer in 0..2"):
        shapleig.explain(multi, X.iloc[:10, :4], X.iloc[3, :4], output=5)
    with pytest.raises(shapleig.BudgetError, match="shapleig needs budget >= 8"):
        shapleig.explain(model, bg, x, budget=5)
    est = shapleig.explain(multi, X.iloc[:10, :4], X.iloc[3, :4], output=2, method="exact")
    assert est.info["prediction"] == pytest.approx(multi.predict_proba(X.iloc[[3], :4])[0, 2])


def test_condition_on_total_is_gaussian_conditioning():
    """The covariance update equals conditioning a joint Gaussian on the observed sum."""
    rng = np.random.default_rng(3)
    L = rng.normal(size=(4, 4))
    C = L @ L.T
    est = shapleig.ShapleyEstimate(values=rng.normal(size=4), covariance=C.copy(), std=np.sqrt(np.diag(C)))
    mean = est.values.copy()
    gap = condition_on_total(est, 2.5)
    assert gap == pytest.approx(2.5 - mean.sum())
    # joint of (phi, s = 1^T phi): condition phi on s = 2.5 with the textbook formula
    one = np.ones(4)
    k = C @ one / (one @ C @ one)
    np.testing.assert_allclose(est.values, mean + k * (2.5 - mean.sum()), atol=1e-12)
    np.testing.assert_allclose(est.covariance, C - np.outer(C @ one, C @ one) / (one @ C @ one), atol=1e-12)
    assert est.values.sum() == pytest.approx(2.5, abs=1e-12)
    plain = shapleig.ShapleyEstimate(values=np.array([1.0, 2.0, 3.0]))
    condition_on_total(plain, 9.0)
    np.testing.assert_allclose(plain.values, [2.0, 3.0, 4.0])


@pytest.fixture(scope="module")
def small_explanation(lgbm6):
    model, bg, x = lgbm6
    return shapleig.explain(model, bg, x, budget=14, seed=0)


@pytest.mark.parametrize("kind", ["bar", "waterfall"])
def test_plot_explanation_saved_and_backend_untouched(small_explanation, tmp_path, kind):
    from matplotlib.figure import Figure

    est = small_explanation
    backend = matplotlib.get_backend()
    out = tmp_path / "sub" / f"{kind}.png"
    fig = shapleig.plot_explanation(est, kind=kind, out=out, max_display=4)
    assert isinstance(fig, Figure) and matplotlib.get_backend() == backend
    assert out.read_bytes()[:4] == b"\x89PNG"
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "3 other features"
    with pytest.raises(ValueError, match="kind must be one of"):
        shapleig.plot_explanation(est, kind="pie")


def test_explain_command_on_saved_models(tmp_path, capsys, diabetes):
    """``shapleig explain`` on a LightGBM text model and a joblib scikit-learn model: the printed
    values are those of ``shapleig.explain`` on the same background; bad input exits with 2."""
    import joblib
    import pandas as pd
    from sklearn.linear_model import Ridge

    from shapleig_tasks.cli import main

    X, y = diabetes
    X = X.iloc[:, :5]
    data = X.assign(target=y)
    data.to_csv(tmp_path / "X.csv", index=False)
    booster = lgb.LGBMRegressor(n_estimators=20, num_leaves=6, verbose=-1).fit(X, y).booster_
    booster.save_model(str(tmp_path / "model.txt"))
    joblib.dump(Ridge().fit(X, y), tmp_path / "ridge.joblib")

    fig = tmp_path / "e.png"
    assert main(["explain", "--model", str(tmp_path / "model.txt"), "--data", str(tmp_path / "X.csv"),
                 "--row", "3", "--budget", "12", "--background", "20", "--plot", str(fig),
                 "--method", "shapleig-leverage"]) == 0
    out = capsys.readouterr().out
    assert "row 3: prediction" in out and fig.read_bytes()[:4] == b"\x89PNG"
    back = pd.read_csv(tmp_path / "X.csv")[list(X.columns)]  # the model's feature names pick columns
    ref = shapleig.explain(lgb.Booster(model_file=str(tmp_path / "model.txt")),
                           back.sample(20, random_state=0), back.iloc[3], budget=12, seed=0,
                           method="shapleig-leverage")
    top = int(np.argmax(np.abs(ref.values)))
    assert f"{ref.values[top]:.3g}" in out and X.columns[top] in out

    # the Ridge model has feature names too; the exact method on 2^5 coalitions
    assert main(["explain", "--model", str(tmp_path / "ridge.joblib"), "--data", str(tmp_path / "X.csv"),
                 "--row", "441", "--method", "exact", "--background", "30"]) == 0
    assert "exact, 32 coalitions evaluated" in capsys.readouterr().out
    # a budget above 2^5 with the default method: enumerated, said on a line of its own
    assert main(["explain", "--model", str(tmp_path / "model.txt"), "--data", str(tmp_path / "X.csv"),
                 "--row", "3", "--budget", "5000", "--background", "20"]) == 0
    out = capsys.readouterr().out
    assert "budget 5000 > 2^5 = 32 coalitions: all evaluated, exact values" in out
    assert "shapleig, 32 coalitions evaluated" in out

    # a baseline with options by name, an evaluation store and a parquet of the values; the rerun
    # on the same store evaluates no coalition and gives the same values
    argv = ["explain", "--model", str(tmp_path / "ridge.joblib"), "--data", str(tmp_path / "X.csv"),
            "--row", "2", "--method", "kernelshap:paired=true", "--budget", "16", "--background", "10",
            "--store", str(tmp_path / "run.sqlite"), "--out", str(tmp_path / "v.parquet")]
    assert main(argv) == 0
    first = pd.read_parquet(tmp_path / "v.parquet")
    assert list(first["feature"].sort_values()) == sorted(X.columns) and (first["method_spec"] == "kernelshap:paired=true").all()
    assert first["value"].sum() == pytest.approx(first["prediction"][0] - first["baseline"][0], abs=1e-9)
    ref = shapleig.explain(joblib.load(tmp_path / "ridge.joblib"), back.sample(10, random_state=0), back.iloc[2],
                           budget=16, method="kernelshap", method_options={"paired": True})
    assert np.allclose(first.set_index("feature").loc[list(X.columns), "value"], ref.values)
    assert main(argv) == 0
    assert "kernelshap, 16 coalitions evaluated, 0 model calls" in capsys.readouterr().out
    assert np.allclose(pd.read_parquet(tmp_path / "v.parquet")["value"], first["value"])

    for argv, message in (
        (["--row", "999"], "--row 999: the data has 442 rows"),
        (["--row", "-1"], "--row -1: give a row position"),
        (["--row", "0", "--method", "kernelshap:pairs=true"], "--method:"),
        (["--row", "0", "--out", str(tmp_path / "v.csv")], "--out:"),
        (["--row", "0", "--method", "owen-x"], "unknown method 'owen-x'"),
        (["--row", "0", "--budget", "3"], "shapleig needs budget >= 7"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["explain", "--model", str(tmp_path / "model.txt"), "--data", str(tmp_path / "X.csv"), *argv])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["explain", "--model", str(tmp_path / "nope.txt"), "--data", str(tmp_path / "X.csv"), "--row", "0"])
    assert "model file" in capsys.readouterr().err


def test_explain_takes_every_registered_method_by_name(lgbm6):
    """Baselines by name go through the same registry as the harness; efficiency holds for each."""
    model, bg, x = lgbm6
    exact = shapleig.explain(model, bg, x, method="exact")
    for name in ("kernelshap", "permutation", "shapleig-leverage"):
        est = shapleig.explain(model, bg, x, method=name, budget=48, seed=1)
        assert est.method == name
        np.testing.assert_allclose(est.values.sum(), exact.values.sum(), rtol=1e-9)
        assert np.abs(est.values - exact.values).max() < 0.5 * np.abs(exact.values).max()


def test_explain_seed_alias_store_and_method_options(tmp_path):
    """``random_state`` is ``seed``'s alias; ``store=`` makes a rerun evaluate no coalition;
    ``method_options`` configure a method given by name like the estimator object would."""
    from shapleig_baselines.kernelshap import KernelSHAP

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    def f(Z):
        return Z @ np.arange(1.0, 6.0) + Z[:, 0] * Z[:, 1]
    a = shapleig.explain(f, X[:10], X[0], budget=14, random_state=5, method="kernelshap",
                         method_options={"paired": True}, store=tmp_path / "s.sqlite")
    b = shapleig.explain(f, X[:10], X[0], budget=14, seed=5, method=KernelSHAP(paired=True))
    assert a.info["seed"] == 5 and np.array_equal(a.values, b.values)
    c = shapleig.explain(f, X[:10], X[0], budget=14, seed=5, method="kernelshap")
    assert not np.allclose(c.values, a.values)  # paired=True changed the design
    again = shapleig.explain(f, X[:10], X[0], budget=14, seed=5, method="kernelshap",
                             method_options={"paired": True}, store=tmp_path / "s.sqlite")
    assert again.info["model_calls"] == 0 and np.array_equal(again.values, a.values)
    with pytest.raises(ValueError, match="disagree"):
        shapleig.explain(f, X[:10], X[0], seed=1, random_state=2)


def test_to_frame_titles_and_std_labels():
    """``to_frame`` gives one row per player; the plot title names the row and the prediction;
    the std label says "posterior std" and appears only for methods with a posterior."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 4))
    def f(Z):
        return Z @ np.array([1.0, -1.0, 2.0, 0.5])
    # exact_if_cheap=False: the GP itself (this cheap game would otherwise be enumerated)
    est = shapleig.explain(f, X[:8], X[0], budget=12, feature_names=["a", "b", "c", "d"], exact_if_cheap=False)
    frame = est.to_frame()
    assert list(frame.columns) == ["player", "value", "std"] and list(frame["player"]) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(frame["value"], est.values)
    np.testing.assert_array_equal(frame["std"], est.std)
    est.info["row"] = 7
    ax = shapleig.plot_explanation(est).axes[0]
    assert ax.get_title().startswith(f"row 7: prediction {est.info['prediction']:.4g} (shapleig, 12 evaluations")
    # the error bars are labelled: what they are (a legend), the units (the axis)
    assert "± 1.96 posterior std (95% interval)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.get_xlabel() == "Shapley value (model output units)"
    segments = next(c for c in ax.collections if hasattr(c, "get_segments")).get_segments()
    half = sorted(abs(seg[1][0] - seg[0][0]) / 2 for seg in segments)
    np.testing.assert_allclose(half, sorted(1.96 * est.std))
    plain = shapleig.explain(f, X[:8], X[0], budget=12, method="permutation")
    assert plain.to_frame()["std"].isna().all() and list(plain.to_frame()["player"]) == ["x0", "x1", "x2", "x3"]
    game_est = shapleig.ShaplEIG().estimate(shapleig.FunctionGame(f, 4), 10, seed=0)
    assert list(game_est.to_frame()["player"]) == [0, 1, 2, 3]
    plain_ax = shapleig.plot_explanation(plain).axes[0]
    assert not any("std" in t.get_text() for t in plain_ax.get_legend().get_texts()) and "std" not in plain_ax.get_xlabel()


def test_negative_row_is_one_line_error_with_exit_2_from_python_m(tmp_path):
    """``python -m shapleig_tasks.cli explain --row -1``: exit 2 and one line on stderr (no traceback)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "shapleig_tasks.cli", "explain", "--model", "m.txt", "--data", "x.csv",
                           "--row", "-1"], capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={**__import__("os").environ, "PYTHONPATH": str(root)}, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "shapleig explain: error: --row -1: give a row position 0 .. n-1 (negative rows are not counted from the end)"]
def test_a_budget_above_two_to_the_d_returns_the_exact_values_and_says_so():
    rng = np.random.default_rng(0)
    w = rng.normal(size=10)
    bg, x = rng.normal(size=(20, 10)), rng.normal(size=10)
    with pytest.warns(shapleig.BudgetCoversGameWarning, match="budget 5000 > 2\\^10 = 1024"):
        est = shapleig.explain(lambda X: X @ w, bg, x, budget=5000, seed=0)
    # a linear model under the interventional imputer: phi_i = w_i (x_i - mean(background_i))
    np.testing.assert_allclose(est.values, w * (x - bg.mean(axis=0)), atol=1e-12)
    assert est.info["exact"] and est.evaluations == 1024 and np.all(est.std == 0)
    assert est.info["message"] == "budget 5000 > 2^10 = 1024 coalitions: all evaluated, exact values"


def test_a_budget_too_small_is_refused_even_where_enumeration_would_be_chosen(lgbm6, monkeypatch):
    """exact_if_cheap decides on a measured time; whether a too-small budget is an error must not."""
    import shapleig.explanation.explain as explain_module

    def always_enumerate(game, budget, seconds, gp_method):
        return {"enumerate": True, "reason": "forced by the test", "seconds_per_coalition": seconds}

    monkeypatch.setattr(explain_module, "decide", always_enumerate)
    model, bg, x = lgbm6
    with pytest.raises(shapleig.BudgetError, match="shapleig needs budget >= 8"):
        shapleig.explain(model, bg, x, budget=5)
    assert shapleig.explain(model, bg, x, budget=12).evaluations == 2 ** 6  # the forced decision holds
