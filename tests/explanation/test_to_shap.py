"""Results as ``shap.Explanation``: values, base values, data and feature names as SHAP expects them,
the std beside them (SHAP's ``error_std``), and SHAP's waterfall, beeswarm and bar plots drawing
them. Needs the extra ``shapleig[shap]``: skipped without SHAP unless ``SHAPLEIG_REQUIRE_SHAP=1``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from _optional import import_or_skip

import shapleig

shap = import_or_skip("shap")
pytestmark = pytest.mark.shap

W = np.array([1.0, -2.0, 0.5, 3.0])


def model(X: np.ndarray) -> np.ndarray:
    return X @ W + 0.4 * X[:, 0] * X[:, 3]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(30, 4)), rng.normal(size=(6, 4))


def test_one_estimate_as_a_shap_explanation(data) -> None:
    bg, X = data
    est = shapleig.explain(model, bg, X[0], budget=12, seed=0, progress=False, exact_if_cheap=False,
                           feature_names=list("abcd"))
    exp = est.to_shap()
    assert isinstance(exp, shap.Explanation)
    np.testing.assert_array_equal(exp.values, est.values)
    assert exp.base_values == est.baseline and exp.feature_names == list("abcd")
    np.testing.assert_array_equal(exp.data, X[0])
    np.testing.assert_array_equal(exp.error_std, est.std)
    lo, hi = est.interval(0.95)
    np.testing.assert_allclose(exp.lower_bounds, lo) and np.testing.assert_allclose(exp.upper_bounds, hi)
    # SHAP's additivity: base value + values = the prediction
    assert exp.base_values + exp.values.sum() == pytest.approx(model(X[:1])[0], abs=1e-9)
    plain = shapleig.explain(model, bg, X[0], budget=12, method="kernelshap", progress=False).to_shap()
    assert plain.error_std is None and plain.lower_bounds is None


def test_rows_as_a_shap_explanation_keep_std_through_slicing(data) -> None:
    bg, X = data
    res = shapleig.explain_X(model, bg, X, budget=12, seed=0, progress=False, exact_if_cheap=False)
    exp = res.to_shap()
    assert exp.values.shape == (6, 4) and exp.base_values.shape == (6,) and exp.data.shape == (6, 4)
    np.testing.assert_array_equal(exp.values, res.values)
    np.testing.assert_array_equal(exp.error_std, res.std)
    np.testing.assert_array_equal(exp[2].error_std, res.std[2])  # one row keeps its std
    np.testing.assert_array_equal(exp[:, 1].error_std, res.std[:, 1])
    np.testing.assert_allclose(exp.base_values + exp.values.sum(axis=1), model(X), atol=1e-9)


def test_shap_plots_draw_them(data, tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bg, X = data
    res = shapleig.explain_X(model, bg, X, budget=12, seed=0, progress=False, exact_if_cheap=False)
    exp = res.to_shap()
    for name, draw in (("waterfall", lambda: shap.plots.waterfall(exp[0], show=False)),
                       ("waterfall-one", lambda: shap.plots.waterfall(res[1].to_shap(), show=False)),
                       ("beeswarm", lambda: shap.plots.beeswarm(exp, show=False)),
                       ("bar", lambda: shap.plots.bar(exp, show=False)),
                       ("bar-one", lambda: shap.plots.bar(exp[0], show=False))):
        draw()
        out = tmp_path / f"{name}.png"
        plt.savefig(out)
        plt.close("all")
        assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 5000, name


def test_an_interaction_estimate_gives_its_order_one_part_with_a_warning(data) -> None:
    from shapleig.estimation.shap_values import InteractionsLeftOutWarning

    bg, X = data
    est = shapleig.explain(model, bg, X[0], method="exact", index="k-SII", progress=False)
    with pytest.warns(InteractionsLeftOutWarning, match=r"k-SII estimate of order 2 .* left out: 6 pairs"):
        exp = est.to_shap()
    np.testing.assert_array_equal(exp.values, est.values[:4])  # the singletons, in player order
    assert exp.base_values == est.baseline
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(est.get_n_order(1).to_shap().values, exp.values)
    assert not [w for w in caught if issubclass(w.category, InteractionsLeftOutWarning)]  # selected: no warning
    third = shapleig.ShaplEIG(index="FSII", max_order=3).estimate(
        shapleig.FunctionGame(lambda Z: np.asarray(Z, dtype=float) @ W, 4), 12, seed=0)
    with pytest.warns(InteractionsLeftOutWarning, match="left out: 6 pairs, 4 triples"):
        exp3 = third.to_shap()
    np.testing.assert_array_equal(exp3.error_std, third.std[:4])
    rows = shapleig.explain_X(model, bg, X[:2], method="exact", index="k-SII", progress=False)
    with pytest.warns(InteractionsLeftOutWarning, match="6 pairs"):
        many = rows.to_shap()
    assert many.values.shape == (2, 4)
