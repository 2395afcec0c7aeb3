"""``explain`` / ``shapleig explain`` / ``shapleig hpi`` for the Banzhaf value and pairwise interactions.

The imputer game of ``f(X) = X w + c X_0 X_1`` has Moebius coefficients of order <= 2 only, known in
closed form over the background ``B``: ``m({j}) = v({j}) - v(empty)`` and
``m({0, 1}) = c mean_b (x_0 - b_0)(x_1 - b_1)``. For such a game k-SII (order 2) is the Moebius
transform itself, and the Banzhaf value is ``m({j}) + m({0, 1}) / 2`` for j in {0, 1}.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import shapleig
from shapleig import registry

P = 5
W = np.array([1.0, 2.0, 0.0, -1.0, 0.5])
C = 3.0


def model(X: np.ndarray) -> np.ndarray:
    return X @ W + C * X[:, 0] * X[:, 1]


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(3)
    return rng.normal(size=(15, P)), rng.normal(size=P) + 1.0


def moebius(background: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float]:
    """m({j}) for each j and m({0, 1}), straight from the imputer's definition."""
    b = background
    single = W * (x - b.mean(axis=0))
    single[0] += C * np.mean((x[0] - b[:, 0]) * b[:, 1])  # v({0}) - v(empty): x_0 b_1 - b_0 b_1
    single[1] += C * np.mean((x[1] - b[:, 1]) * b[:, 0])
    pair = C * np.mean((x[0] - b[:, 0]) * (x[1] - b[:, 1]))
    return single, pair


def test_index_options_name_what_each_method_takes():
    assert registry.index_options("kernelshap", "SV") == {}
    assert registry.index_options("shapleig", "k-SII") == {"index": "k-SII"}
    assert registry.index_options("exact", "BV") == {"index": "BV"}
    assert registry.index_options("shapiq:KernelSHAPIQ", "FSII") == {"index": "FSII", "max_order": 2}
    with pytest.raises(ValueError, match="'kernelshap' estimates the Shapley value only.*shapleig"):
        registry.index_options("kernelshap", "k-SII")
    with pytest.raises(ValueError, match="unknown index"):
        registry.index_options("shapleig", "XYZ")


@pytest.mark.parametrize("method", ["exact", "shapleig"])
def test_exact_interactions_and_banzhaf_in_closed_form(case, method):
    """At budget 2^p every method enumerates: k-SII is the Moebius transform and sums to
    f(x) - baseline; the Banzhaf value is not efficient and is left as enumerated."""
    background, x = case
    single, pair = moebius(background, x)
    est = shapleig.explain(model, background, x, budget=1 << P, method=method, index="k-SII", progress=False)
    assert est.index == "k-SII" and est.terms[:P] == [(j,) for j in range(P)] and est.terms[P] == (0, 1)
    expected = np.zeros(len(est.terms))
    expected[:P], expected[P] = single, pair
    np.testing.assert_allclose(est.values, expected, atol=1e-10)
    np.testing.assert_allclose(est.values.sum(), est.info["prediction"] - est.baseline, atol=1e-10)

    bv = shapleig.explain(model, background, x, budget=1 << P, method=method, index="BV", progress=False)
    expected_bv = single.copy()
    expected_bv[:2] += pair / 2
    np.testing.assert_allclose(bv.values, expected_bv, atol=1e-10)
    assert "efficiency_gap" not in bv.info  # BV is not conditioned on the total


def test_gp_interactions_are_conditioned_on_the_total_below_full_budget(case):
    background, x = case
    est = shapleig.explain(model, background, x, budget=24, seed=0, index="FSII", progress=False,
                           exact_if_cheap=False)  # the GP below full budget, not the enumeration of this cheap game
    assert est.evaluations <= 24 and len(est.terms) == P + P * (P - 1) // 2
    np.testing.assert_allclose(est.values.sum(), est.info["prediction"] - est.baseline, rtol=1e-12)
    assert est.covariance.shape == (len(est.terms),) * 2
    sii = shapleig.explain(model, background, x, budget=24, seed=0, index="SII", progress=False, exact_if_cheap=False)
    assert "efficiency_gap" not in sii.info  # SII is not efficient


def test_wrong_index_for_a_method_or_an_estimator_object(case):
    background, x = case
    with pytest.raises(ValueError, match="'kernelshap' estimates the Shapley value only"):
        shapleig.explain(model, background, x, budget=20, method="kernelshap", index="k-SII")
    with pytest.raises(ValueError, match="give the index through index= only"):
        shapleig.explain(model, background, x, budget=20, method_options={"index": "BV"})
    with pytest.raises(ValueError, match="estimates index 'SV', not 'BV'"):
        shapleig.explain(model, background, x, budget=20, method=shapleig.ShaplEIG(), index="BV")


def test_plot_labels_pairs_and_names_the_index(case):
    background, x = case
    est = shapleig.explain(model, background, x, budget=1 << P, method="exact", index="k-SII", progress=False,
                           feature_names=list("abcde"))
    fig = shapleig.plot_explanation(est, max_display=4)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "a x b" in labels and labels[-1] == f"{len(est.terms) - 3} other terms"
    assert ax.get_xlabel().startswith("k-SII (order 2)")


def test_explain_command_index(tmp_path, capsys):
    lgb = pytest.importorskip("lightgbm")
    from shapleig_tasks.cli import main

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 4)), columns=["u", "v", "w", "z"])
    y = X.u * X.v + X.w
    lgb.LGBMRegressor(n_estimators=20, num_leaves=6, verbose=-1).fit(X, y).booster_.save_model(
        str(tmp_path / "m.txt"))
    X.to_csv(tmp_path / "X.csv", index=False)
    base = ["explain", "--model", str(tmp_path / "m.txt"), "--data", str(tmp_path / "X.csv"), "--row", "2",
            "--background", "20"]
    out = tmp_path / "v.parquet"
    assert main([*base, "--budget", "16", "--index", "k-SII", "--out", str(out)]) == 0
    table = pd.read_parquet(out)
    assert len(table) == 4 + 6 and "u x v" in set(table.term) and set(table["index"]) == {"k-SII"}
    assert "exact" in capsys.readouterr().out  # the budget covers the 2^4 coalitions: said on stdout
    np.testing.assert_allclose(table.value.sum(), table.prediction.iloc[0] - table.baseline.iloc[0], atol=1e-9)
    for argv, message in (([*base, "--index", "k-SII", "--method", "kernelshap"], "estimates the Shapley value only"),
                          ([*base, "--index", "BV", "--plot", str(tmp_path / "p.png"), "--kind", "waterfall"],
                           "do not sum to the prediction")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_hpi_interaction_table(tmp_path):
    pytest.importorskip("ConfigSpace")
    from shapleig_tasks.hpi import prepare_study

    hps = ["learning_rate", "num_leaves", "subsample"]
    study = prepare_study("lightgbm", "diabetes", hyperparameters=hps, index="FSII", inner_budget=2, n_folds=2,
                          out=tmp_path / "o")
    assert study.budget == 8  # 8p capped at the 2^3 coalitions
    result = study.run()
    table = result.table
    assert list(table.columns[:4]) == ["term", "value", "std", "order"] and len(table) == 6
    assert result.files["table"].name == "fsii.csv" and result.files["plot"].read_bytes()[:4] == b"\x89PNG"
    # at full budget the terms are the exact FSII of the enumerated game: efficient
    v = study.game(np.array([[True] * 3, [False] * 3]))
    np.testing.assert_allclose(table.value.sum(), v[0] - v[1], atol=1e-9)
