"""The shapiq bridge (extra shapleig[shapiq], Python >= 3.12): InteractionValues round trip,
shapiq plots of our results, shapiq's explainer running ShaplEIG, shapiq's approximators as our
methods (incl. ``shapleig run``), shapiq games as they are.

Skipped without shapiq >= 1.8, unless ``SHAPLEIG_REQUIRE_SHAPIQ=1`` (CI's Python 3.12 leg), where a
missing shapiq fails instead.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _optional import import_shapiq_bridge

import shapleig
import shapleig_baselines as baselines
from shapleig_tasks.tables import SHIPPED_TABLES_DIR, TableGame

pytestmark = pytest.mark.shapiq

bridge = import_shapiq_bridge()  # skips the module without shapiq >= 1.8, unless CI requires it
import shapiq  # noqa: E402  (after the skip: only reached with shapiq >= 1.8)

ROOT = Path(__file__).resolve().parents[2]
VIT9_1 = SHIPPED_TABLES_DIR / "ImageClassifier_Game/9/model_name=vit_9_patches_1.npz"
ANCHORS = Path(os.environ.get("SHAPLEIG_SHARED") or ROOT.parent / "shared") / "data" / "anchors" / "shapiq-1.8.0_public.csv"


def _game(p: int = 6) -> shapleig.FunctionGame:
    w = np.linspace(0.5, 2.0, p)

    def fn(Z: np.ndarray) -> np.ndarray:
        return np.sqrt(Z @ w) + 0.3 * Z[:, 0] * Z[:, 1] + 1.5  # v(empty) = 1.5

    return shapleig.FunctionGame(fn, p)


def test_round_trip_keeps_values_baseline_and_player_count() -> None:
    game = _game()
    est = baselines.get("kernelshap").estimate(game, 40, seed=1)
    assert est.baseline_value == est.baseline == pytest.approx(1.5)
    iv = est.to_interaction_values()
    assert isinstance(iv, shapiq.InteractionValues)
    assert iv.n_players == 6 and iv.index == "SV" and iv.max_order == 1
    assert iv.baseline_value == pytest.approx(1.5) and iv[()] == pytest.approx(1.5)
    assert iv.estimation_budget == est.evaluations
    np.testing.assert_array_equal([iv[(i,)] for i in range(6)], est.values)
    back = bridge.from_interaction_values(iv)
    np.testing.assert_array_equal(back.values, est.values)
    assert back.baseline == est.baseline and back.n_players == 6 and back.evaluations == est.evaluations


def test_exact_estimate_is_efficient_in_shapiq() -> None:
    # at full budget KernelSHAP is exact, so shapiq's sum over all entries is v(N)
    game = _game(5)
    est = baselines.get("kernelshap").estimate(game, 32, seed=0)
    iv = est.to_interaction_values()
    grand = float(game(np.ones((1, 5), dtype=bool))[0])
    assert sum(iv[(i,)] for i in range(5)) + iv.baseline_value == pytest.approx(grand, abs=1e-9)
    np.testing.assert_allclose(est.values, shapleig.exact_shapley(game), atol=1e-9)


def test_shapiq_plots_draw_our_result(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    est = shapleig.ShaplEIG.from_options(ard=False, refit="never", pool_size=50).estimate(_game(), 12, seed=0)
    iv = est.to_interaction_values()
    names = [f"x{i}" for i in range(6)]
    for plot in (shapiq.plot.force_plot, shapiq.plot.waterfall_plot, shapiq.plot.bar_plot):
        arg = [iv] if plot is shapiq.plot.bar_plot else iv
        plot(arg, feature_names=names, show=False)
        out = tmp_path / f"{plot.__name__}.png"
        plt.savefig(out)
        plt.close("all")
        assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 1000


def test_shapiq_explainer_runs_shapleig() -> None:
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    model = LinearRegression().fit(X, X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]))
    approx = bridge.ShapiqApproximator(5, estimator=shapleig.ShaplEIG.from_options(ard=False, refit="never", pool_size=40))
    explainer = shapiq.TabularExplainer(model, X[:20], approximator=approx, index="SV", max_order=1)
    iv = explainer.explain(X[0], budget=16, random_state=3)
    est = approx.last_estimate
    assert est is not None and est.method == "shapleig" and est.info["seed"] == 3 and est.evaluations <= 16
    phi = np.array([iv[(i,)] for i in range(5)])
    np.testing.assert_array_equal(phi, est.values)
    # a linear model under the marginal imputer: the game is additive, phi_i = w_i (x_i - mean_i)
    expected = model.coef_ * (X[0] - X[:20].mean(axis=0))
    np.testing.assert_allclose(phi, expected, atol=0.05 * np.abs(expected).max())
    assert iv.baseline_value == pytest.approx(model.predict(X[:20]).mean())


def test_shapiq_games_are_accepted_as_they_are() -> None:
    from shapiq.game_theory.exact import ExactComputer

    table = TableGame.from_npz(VIT9_1)

    class TableAsShapiqGame(shapiq.Game):
        def value_function(self, coalitions: np.ndarray) -> np.ndarray:
            return table(coalitions)

    game = TableAsShapiqGame(n_players=9, normalize=False)
    est = baselines.get("leverage-shap").estimate(game, 512, seed=0)
    np.testing.assert_allclose(est.values, table.exact_values(), atol=1e-9)
    exact = ExactComputer(game=game, n_players=9)("SV")
    np.testing.assert_allclose([exact[(i,)] for i in range(9)], table.exact_values(), atol=1e-9)


@pytest.mark.parametrize("name", ["KernelSHAP", "LeverageSHAP", "PolySHAP", "kADDSHAP", "OddSHAP"])
def test_shapiq_methods_spend_through_our_budget_and_match_shapiq(name: str) -> None:
    table = TableGame.from_npz(VIT9_1)
    est = baselines.get(f"shapiq:{name}").estimate(table, 36, seed=2)
    direct = getattr(shapiq.approximator, name)(n=9, random_state=2).approximate(budget=36, game=table)
    np.testing.assert_allclose(est.values, [direct[(i,)] for i in range(9)], rtol=1e-10, atol=1e-12)
    assert est.evaluations <= 36 and est.info["random_state"] == 2 and est.method == f"shapiq:{name}"
    assert est.baseline == pytest.approx(table.empty_value)


def test_shapiq_methods_reproduce_the_public_anchor_results() -> None:
    if not ANCHORS.is_file():
        pytest.skip("shapiq anchor results (../shared) not present")
    rows = [r for r in csv.DictReader(ANCHORS.open()) if r["table_file"] == VIT9_1.name and r["p"] == "9"
            and r["method"] in ("KernelSHAP", "LeverageSHAP", "PolySHAP") and r["budget_spec"] == "4p"]
    assert len(rows) == 9
    table = TableGame.from_npz(VIT9_1)
    for r in rows:
        est = baselines.get(f"shapiq:{r['method']}").estimate(table, int(r["budget"]), seed=int(r["seed"]))
        mse = float(np.mean((est.values - table.exact_values()) ** 2))
        assert mse == pytest.approx(float(r["mse"]), rel=1e-6), r["method"]


def test_proxyspex_defaults_estimate_shapley_values() -> None:
    method = baselines.get("shapiq:ProxySPEX", hpo=False)
    approx = method.build(9, 0)
    assert approx.index == "SV" and approx.max_order == 1


def test_bad_shapiq_method_names_and_options_fail_before_evaluation() -> None:
    with pytest.raises(ValueError, match="unknown shapiq approximator 'NoSuch'.*KernelSHAP"):
        baselines.get("shapiq:NoSuch")
    with pytest.raises(ValueError, match="no option.*'pairing'"):
        baselines.get("shapiq:KernelSHAP", pairing=True)
    with pytest.raises(ValueError, match="set from the game and the seed"):
        baselines.get("shapiq:KernelSHAP", n=4)
    # an approximator behind a missing shapiq extra names that extra (SPEX: shapiq[sparse])
    from shapleig_baselines.shapiq_methods import shapiq_missing_extras
    from shapleig_tasks.methods import parse_method

    for name, message in shapiq_missing_extras().items():
        with pytest.raises(ValueError, match="pip install") as info:
            parse_method(f"shapiq:{name}")
        assert "unknown" not in str(info.value) and name in str(info.value), message


def test_shapleig_run_with_shapiq_methods(tmp_path: Path) -> None:
    import pandas as pd

    out = tmp_path / "r.parquet"
    run = subprocess.run(
        [sys.executable, "-m", "shapleig_tasks.cli", "run", "--tasks", "wvg-7", "vit-9/first=2", "--methods",
         "shapiq:PolySHAP", "shapiq:KernelSHAP:pairing_trick=true", "permutation", "--budgets", "2p", "4p",
         "--seeds", "2", "--out", str(out), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    df = pd.read_parquet(out)
    assert set(df.method) == {"shapiq:PolySHAP", "shapiq:KernelSHAP:pairing_trick=True", "permutation"}
    assert len(df) == 3 * 3 * 2 * 2 and (df.evaluations <= df.budget).all() and df.error.fillna("").eq("").all()
    assert df[df.method == "shapiq:PolySHAP"].mse.max() < 0.1


def test_interaction_values_keep_std_and_covariance() -> None:
    """The posterior std and covariance survive the trip into shapiq and back (and a copy)."""
    import copy

    est = shapleig.ShaplEIG(refit="never", pool_size=40).estimate(_game(), 14, seed=0)
    assert est.std is not None and est.covariance is not None
    iv = est.to_interaction_values()
    assert isinstance(iv, bridge.UncertainInteractionValues) and isinstance(iv, shapiq.InteractionValues)
    np.testing.assert_array_equal(iv.std, est.std)
    np.testing.assert_array_equal(iv.shapleig_std, est.std)  # the former name
    back = bridge.from_interaction_values(copy.deepcopy(iv))
    np.testing.assert_array_equal(back.std, est.std)
    np.testing.assert_array_equal(back.covariance, est.covariance)
    std_iv = bridge.std_interaction_values(est)
    assert std_iv[()] == 0.0 and [std_iv[(i,)] for i in range(6)] == list(est.std)
    # an explicit std= overrides what the values carry
    again = bridge.from_interaction_values(iv.without_uncertainty(), std=std_iv)
    np.testing.assert_array_equal(again.std, est.std)
    assert again.covariance is None
    # methods without a posterior: plain InteractionValues, which have no std to ask for
    plain = baselines.get("permutation").estimate(_game(), 20, seed=0).to_interaction_values()
    assert type(plain) is shapiq.InteractionValues and not hasattr(plain, "std")
    assert bridge.from_interaction_values(plain).std is None
    with pytest.raises(ValueError, match="no posterior std"):
        bridge.std_interaction_values(baselines.get("permutation").estimate(_game(), 20, seed=0))


def test_approximator_is_efficient_resumes_from_a_store_and_clones(tmp_path: Path) -> None:
    from sklearn.base import clone

    game = _game(6)
    ends = game(np.array([[False] * 6, [True] * 6]))
    total = float(ends[1] - ends[0])
    for estimator in (shapleig.ShaplEIG(refit="never", pool_size=40), baselines.get("permutation")):
        approx = bridge.ShapiqApproximator(6, random_state=2, estimator=estimator, store=tmp_path / f"{estimator.name}.sqlite")
        iv = approx.approximate(14, game)
        phi = np.array([iv[(i,)] for i in range(6)])
        assert phi.sum() == pytest.approx(total, abs=1e-12)  # exact efficiency
        assert iv.baseline_value == pytest.approx(float(ends[0]))
        gap = approx.last_estimate.info["efficiency_gap"]
        # the raw estimate was not efficient to this precision: the correction did something
        raw = estimator.estimate(game, 14, seed=2).values
        assert raw.sum() - total == pytest.approx(-gap, abs=1e-12)
        # the rerun on the store evaluates nothing new
        again = bridge.ShapiqApproximator(6, random_state=2, estimator=estimator, store=tmp_path / f"{estimator.name}.sqlite")
        again.approximate(14, game)
        assert again.last_estimate.info["n_store_hits"] == again.last_estimate.evaluations
        np.testing.assert_allclose([again.approximate(14, game)[(i,)] for i in range(6)], phi, atol=1e-12)
    twin = clone(bridge.ShapiqApproximator(6, random_state=4, estimator=shapleig.ShaplEIG(pool_size=40), efficient=False))
    assert isinstance(twin, bridge.ShapiqApproximator) and twin.n == 6 and twin._random_state == 4
    assert twin.estimator.pool_size == 40 and twin.efficient is False and twin.store is None
    assert twin.set_params(estimator__pool_size=30).estimator.pool_size == 30
@pytest.mark.parametrize("index", ["BV", "k-SII", "FSII"])
def test_index_estimates_round_trip_with_their_index_and_order(index: str) -> None:
    from shapleig.games.indices import exact_index_values, index_terms

    game = _game(4)
    est = shapleig.ShaplEIG(index=index, surrogate="shared").estimate(game, 16, seed=0)
    iv = est.to_interaction_values()
    order = 1 if index == "BV" else 2
    assert iv.index == index and iv.max_order == order
    for k, T in enumerate(index_terms(4, index)):
        assert iv[T] == est.values[k]
    back = bridge.from_interaction_values(iv)
    assert back.index == index and back.terms == est.terms
    # shapiq's own exact values of the same game agree with the full-budget estimate
    exact = shapiq.ExactComputer(game, n_players=4)(index=index, order=order)
    np.testing.assert_allclose([exact[T] for T in est.terms], est.values, atol=1e-4)
    codes = np.arange(16)
    table = game(((codes[:, None] >> np.arange(4)) & 1).astype(bool))
    np.testing.assert_allclose(exact_index_values(table, index), [exact[T] for T in est.terms], atol=1e-8)


def test_shapiq_approximator_takes_the_estimators_index() -> None:
    approx = bridge.ShapiqApproximator(5, random_state=0, estimator=shapleig.ShaplEIG(index="k-SII"))
    assert approx.index == "k-SII" and approx.max_order == 2
    iv = approx.approximate(20, _game(5))
    assert iv.index == "k-SII" and iv.max_order == 2 and len(approx.last_estimate.terms) == 15


@pytest.mark.parametrize("name,index", [("SVARMIQ", "k-SII"), ("RegressionFSII", "FSII"), ("SVARM", "BV")])
def test_shapiq_index_methods_reach_the_exact_index_at_full_budget(name: str, index: str) -> None:
    from shapleig.games.indices import exact_index_values
    from shapleig_baselines.shapiq_methods import ShapiqMethod

    game = _game(5)
    codes = np.arange(32)
    table = game(((codes[:, None] >> np.arange(5)) & 1).astype(bool))
    est = ShapiqMethod(name, options={"index": index, "max_order": 1 if index == "BV" else 2}).estimate(game, 32, seed=0)
    assert est.index == index
    np.testing.assert_allclose(est.values, exact_index_values(table, index), atol=1e-6)


PUBLIC_TABLES = [("CaliforniaHousing_LocalExplanation_Game/8", "model_name=gradient_boosting_imputer=marginal_1.npz"),
                 ("ImageClassifier_Game/9", "model_name=vit_9_patches_1.npz")]


@pytest.mark.parametrize("folder, name", PUBLIC_TABLES)
def test_order_three_exact_values_of_public_tables_equal_shapiqs(shared_games_dir, folder: str, name: str) -> None:
    """This project's exact values of every interaction index at order 3 against shapiq's ExactComputer."""
    from shapleig.games.indices import INDICES, exact_index_values, get_index, index_terms

    table = TableGame.from_npz(shared_games_dir / folder / name)
    p = table.n_players
    computer = shapiq.ExactComputer(table, n_players=p)
    for index in [n for n in INDICES if get_index(n).any_order]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # shapiq warns that CHII has no empty term
            ref = computer(index=index, order=3)
        ours = exact_index_values(table.bitorder_values, index, 3)
        theirs = np.array([ref[T] for T in index_terms(p, index, 3)])
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-9 * np.abs(theirs).max(), err_msg=index)
