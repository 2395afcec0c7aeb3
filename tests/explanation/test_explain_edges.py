"""``explain``'s edge paths (issue 27, items 7 and 8): column labels of mixed types or repeated,
seeds refused before the model is called, and plot formats refused before the run."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import shapleig
from shapleig.errors import GameError

W = np.array([1.0, -2.0, 0.5, 3.0])
RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 4))


class CountingModel:
    """A linear model that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, rows) -> np.ndarray:
        self.calls += 1
        return np.asarray(rows, dtype=float) @ W


def _closed_form(background: np.ndarray, x: np.ndarray) -> np.ndarray:
    return W * (x - background.mean(axis=0))  # interventional SHAP of a linear model


def test_mixed_type_column_labels_are_kept_as_they_are():
    """Labels ``[1, "0", 2.5, "x"]`` are distinct: the model gets them as they are (they used to be
    turned into text, and the row was then looked up by ``"1"``: KeyError)."""
    seen = []

    def predict(frame):
        seen.append(list(frame.columns))
        return frame.to_numpy() @ W

    labels = [1, "0", 2.5, "x"]
    frame = pd.DataFrame(X, columns=labels)
    est = shapleig.explain(None, frame.iloc[:20], frame.iloc[30], predict=predict, budget=16, method="exact",
                           progress=False)
    np.testing.assert_allclose(est.values, _closed_form(X[:20], X[30]), rtol=1e-10, atol=1e-12)
    assert all(cols == labels for cols in seen) and est.info["feature_names"] == ["1", "0", "2.5", "x"]


def test_labels_that_read_alike_are_named_with_repr():
    frame = pd.DataFrame(X, columns=[1, "1", "a", "b"])
    est = shapleig.explain(None, frame.iloc[:20], frame.iloc[30], predict=lambda f: f.to_numpy() @ W, budget=16,
                           method="exact", progress=False)
    assert est.info["feature_names"] == ["1", "'1'", "'a'", "'b'"]


@pytest.mark.parametrize("labels, twice", [([0, "0", 0.0, "x"], "[0.0]"), (["a", "a", "b", "c"], "['a']")])
def test_duplicate_column_labels_are_refused_naming_them(labels, twice):
    """pandas takes 0 and 0.0 (or "a" twice) for one column, so the model would get the wrong
    column: a clear error naming the repeated label (it used to be a KeyError, or a shape message)."""
    frame = pd.DataFrame(X, columns=labels)
    model = CountingModel()
    with pytest.raises(GameError, match="duplicate column labels " + re.escape(twice)):
        shapleig.explain(model, frame.iloc[:20], frame.iloc[30], budget=16, progress=False)
    assert model.calls == 0


def test_a_row_without_the_background_columns_is_refused_naming_them():
    frame = pd.DataFrame(X, columns=list("abcd"))
    with pytest.raises(GameError, match=r"x lacks the background's columns \['d'\]"):
        shapleig.explain(CountingModel(), frame.iloc[:20], frame.iloc[30].rename({"d": "e"}), budget=16,
                         progress=False)


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5, "0"])
def test_a_bad_seed_is_refused_before_the_model_is_called(seed):
    model = CountingModel()
    with pytest.raises((TypeError, ValueError)):
        shapleig.explain(model, X[:20], X[30], seed=seed, budget=16, progress=False)
    assert model.calls == 0


def test_a_bad_method_or_budget_is_refused_before_the_model_is_called():
    model = CountingModel()
    with pytest.raises(GameError, match="unknown method"):
        shapleig.explain(model, X[:20], X[30], method="nope", progress=False)
    with pytest.raises(shapleig.BudgetError):
        shapleig.explain(model, X[:20], X[30], budget=1.5, progress=False)
    assert model.calls == 0


def test_a_figure_format_matplotlib_cannot_write_is_refused_before_drawing(tmp_path):
    est = shapleig.explain(CountingModel(), X[:20], X[30], budget=16, method="exact", progress=False)
    for name in ("x.docx", "x.bmpx", "x"):
        with pytest.raises(ValueError, match="is not a format matplotlib writes; use one of .*\\.png"):
            shapleig.plot_explanation(est, out=tmp_path / name)
        assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["x.docx", "x.bmpx"])
def test_the_explain_command_refuses_a_plot_format_before_the_run(name, tmp_path, capsys):
    import joblib

    from shapleig_tasks.cli import main

    pd.DataFrame(X, columns=list("abcd")).to_csv(tmp_path / "X.csv", index=False)
    joblib.dump(CountingModel(), tmp_path / "m.joblib")
    with pytest.raises(SystemExit) as info:
        main(["explain", "--model", str(tmp_path / "m.joblib"), "--data", str(tmp_path / "X.csv"), "--row", "0",
              "--store", str(tmp_path / "s.sqlite"), "--plot", str(tmp_path / name)])
    captured = capsys.readouterr()
    assert info.value.code == 2 and "--plot" in captured.err and "not a format matplotlib writes" in captured.err
    assert captured.out == "" and not (tmp_path / "s.sqlite").exists()  # nothing ran
