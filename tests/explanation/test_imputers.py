"""The baseline and conditional imputer games against their definitions (brute force, one coalition at a
time), and their store identity (the interventional imputer's, plus what makes them another game)."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

import shapleig
from shapleig.errors import GameError, StoreMismatchError
from shapleig.explanation.baseline_imputer import BaselineImputerGame
from shapleig.explanation.choose_imputer import imputer_game
from shapleig.explanation.conditional_imputer import ConditionalImputerGame
from shapleig.explanation.imputer import ImputerGame

W = np.array([1.0, -2.0, 0.5, 3.0])


def model(X: np.ndarray) -> np.ndarray:
    return X @ W + 0.7 * X[:, 0] * X[:, 1]


def _data(n: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    bg = rng.normal(size=(n, 4))
    bg[:, 1] = bg[:, 0] + 0.1 * rng.normal(size=n)  # dependent features: the conditional imputer sees it
    return bg, np.array([1.5, 1.4, -0.3, 0.2])


def _all(p: int) -> np.ndarray:
    return np.array(list(product([False, True], repeat=p)))


def test_baseline_imputer_is_f_of_x_on_s_and_the_reference_elsewhere() -> None:
    bg, x = _data()
    ref = bg.mean(axis=0)
    game = imputer_game(model, bg, x, imputer="baseline")
    assert isinstance(game, BaselineImputerGame)
    Z = _all(4)
    expected = [model(np.where(z, x, ref)[None, :])[0] for z in Z]
    np.testing.assert_allclose(game(Z), expected, rtol=1e-13)
    other = imputer_game(model, bg, x, imputer="baseline", imputer_options={"reference": np.zeros(4)})
    np.testing.assert_allclose(other(Z), [model(np.where(z, x, 0.0)[None, :])[0] for z in Z], rtol=1e-13)


@pytest.mark.parametrize("discrete", [False, True])
def test_conditional_imputer_matches_a_brute_force_nearest_neighbour_definition(discrete: bool) -> None:
    bg, x = _data()
    if discrete:  # many rows at the same distance: every tie at the k-th distance counts
        bg, x = np.round(bg), np.round(x)
    k = 5
    game = imputer_game(model, bg, x, imputer="conditional", imputer_options={"k": k})
    assert isinstance(game, ConditionalImputerGame)
    scale = bg.std(axis=0)
    Z = _all(4)
    expected = []
    for z in Z:
        dist = [sum(((b[j] - x[j]) / scale[j]) ** 2 for j in range(4) if z[j]) for b in bg]
        kth = sorted(dist)[k - 1]
        chosen = [b for b, d in zip(bg, dist) if d <= kth + 1e-12]  # ties at the k-th distance kept
        expected.append(np.mean([model(np.where(z, x, b)[None, :])[0] for b in chosen]))
    np.testing.assert_allclose(game(Z), expected, rtol=1e-12)
    # the empty coalition averages the whole background: v(empty) is the mean prediction
    assert game(Z[:1])[0] == pytest.approx(model(bg).mean(), rel=1e-13)
    # small batches (max_rows) give the same values
    small = ConditionalImputerGame(model, bg, x, k=k, max_rows=7)
    np.testing.assert_allclose(small(Z), expected, rtol=1e-12)


def test_conditional_imputer_follows_dependent_features() -> None:
    """Feature 1 copies feature 0 in the data: conditioning on x0 = 1.5 draws x1 near 1.5, so the
    model's term in x1 moves with x0 (the interventional imputer leaves it at the mean)."""
    bg, x = _data(n=200)
    f = lambda X: X[:, 1]  # noqa: E731 - depends on x1 only
    cond = shapleig.explain(f, bg, x, imputer="conditional", method="exact", progress=False)
    inter = shapleig.explain(f, bg, x, imputer="interventional", method="exact", progress=False)
    assert inter.values[0] == pytest.approx(0.0, abs=1e-12)  # f ignores x0 under the interventional imputer
    assert cond.values[0] > 0.3  # x0 carries information about x1
    assert cond.info["imputer"] == "conditional" and cond.values.sum() == pytest.approx(
        cond.info["prediction"] - cond.baseline, abs=1e-12)


def test_baseline_imputer_shapley_values_of_a_linear_model() -> None:
    bg, x = _data()
    f = lambda X: X @ W  # noqa: E731
    est = shapleig.explain(f, bg, x, imputer="baseline", method="exact", progress=False)
    np.testing.assert_allclose(est.values, W * (x - bg.mean(axis=0)), atol=1e-12)
    assert est.baseline == pytest.approx(f(bg.mean(axis=0)[None, :])[0])


def test_dataframe_background_keeps_columns_for_both_imputers() -> None:
    import pandas as pd

    bg, x = _data()
    frame = pd.DataFrame(bg, columns=list("abcd"))
    seen = []

    def f(X):
        seen.append(list(X.columns))
        return X.to_numpy() @ W

    for imputer in ("baseline", "conditional"):
        est = shapleig.explain(f, frame, frame.iloc[3], imputer=imputer, method="exact", progress=False)
        assert est.info["feature_names"] == list("abcd")
    assert all(cols == list("abcd") for cols in seen)


def test_store_identity_of_the_imputers(tmp_path) -> None:
    bg, x = _data()
    ref = bg.mean(axis=0)
    # the baseline imputer is the interventional imputer with a one-row background: the same game
    base = BaselineImputerGame(model, ref, x)
    inter = ImputerGame(model, ref[None, :], x)
    assert base.identity() == inter.identity()
    # the conditional imputer adds the imputer and k to the interventional imputer's identity
    cond = ConditionalImputerGame(model, bg, x, k=5)
    assert {k: v for k, v in cond.identity().items() if k not in ("imputer", "neighbours")} == \
        ImputerGame(model, bg, x).identity()
    store = tmp_path / "c.sqlite"
    shapleig.explain(model, bg, x, imputer="conditional", imputer_options={"k": 5}, budget=10, method="kernelshap",
                     store=store, progress=False)
    with pytest.raises(StoreMismatchError, match="neighbours"):
        shapleig.explain(model, bg, x, imputer="conditional", imputer_options={"k": 6}, budget=10,
                         method="kernelshap", store=store, progress=False)


def test_bad_imputer_input() -> None:
    bg, x = _data()
    with pytest.raises(GameError, match="unknown imputer 'marginal'"):
        shapleig.explain(model, bg, x, imputer="marginal")
    with pytest.raises(GameError, match="takes no option"):
        shapleig.explain(model, bg, x, imputer="conditional", imputer_options={"reference": x})
    with pytest.raises(GameError, match="positive integer"):
        imputer_game(model, bg, x, imputer="conditional", imputer_options={"k": 0})
    text = np.array([["a", 1.0]] * 3, dtype=object)
    with pytest.raises(GameError, match="numeric"):
        ConditionalImputerGame(lambda X: np.zeros(len(X)), text, text[0])
    with pytest.raises(GameError, match="one row"):
        BaselineImputerGame(model, bg[:2], x)
