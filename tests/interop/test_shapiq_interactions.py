"""Every shapiq 1.8 approximator of SV, BV, k-SII, STII, FSII and FBII as a method here; shapiq games'
exact values of every index in the harness, also at order 3; what a ShapleyEstimate cannot hold refused,
never truncated; ``ShapiqApproximator`` as a drop-in at any order (shapiq's constructor convention,
``shapiq_benchmark.run``, ``TabularExplainer``), efficient for the efficient indices.

Exact references come from :func:`shapleig.games.indices.exact_index_values` on the full value table
(this project's definitions) or from shapiq's ``ExactComputer``, never from the code under test.
Skipped without shapiq >= 1.8 unless ``SHAPLEIG_REQUIRE_SHAPIQ=1``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _optional import import_shapiq_bridge

import shapleig

pytestmark = pytest.mark.shapiq

bridge = import_shapiq_bridge()  # skips the module without shapiq >= 1.8, unless CI requires it
import shapiq  # noqa: E402  (after the skip: only reached with shapiq >= 1.8)

from shapleig.games.indices import exact_index_values, index_terms, is_efficient  # noqa: E402
from shapleig_baselines.shapiq_methods import (  # noqa: E402
    ShapiqMethod,
    shapiq_approximators,
    shapiq_index_approximators,
)
from shapleig_tasks.catalog import Task  # noqa: E402
from shapleig_tasks.harness import run_benchmark  # noqa: E402

P = 5
INDICES = ("SV", "BV", "k-SII", "STII", "FSII", "FBII")
# what shapiq 1.8.0 cannot give as a whole estimate here: SHAP-IQ and SVARM-IQ estimate only the pairs
# of FSII and FBII (top order), RegressionMSR lists every index but its constructor takes SV and BV only
REFUSED = {("SHAPIQ", "FSII"), ("SVARMIQ", "FSII"), ("SHAPIQ", "FBII"), ("SVARMIQ", "FBII"),
           ("RegressionMSR", "k-SII"), ("RegressionMSR", "STII"), ("RegressionMSR", "FSII"),
           ("RegressionMSR", "FBII")}


def _fn(Z: np.ndarray) -> np.ndarray:
    Z = np.asarray(Z, dtype=bool)
    w = np.linspace(0.5, 2.0, Z.shape[1])
    return np.sqrt(Z @ w) + 0.3 * Z[:, 0] * Z[:, 1] - 0.2 * Z[:, 2] * Z[:, 3] * Z[:, 4] + 1.5


class ShapiqGame(shapiq.Game):
    """A shapiq game over :func:`_fn` (not normalised: v(empty) = 1.5)."""

    def value_function(self, coalitions: np.ndarray) -> np.ndarray:
        return _fn(coalitions)


def _table(p: int = P) -> np.ndarray:
    codes = np.arange(1 << p)
    return _fn(((codes[:, None] >> np.arange(p)) & 1).astype(bool))


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _combinations() -> list[tuple[str, str]]:
    return [(name, index) for index in INDICES for name in sorted(shapiq_approximators(index))]


@pytest.mark.parametrize("name,index", _combinations())
def test_every_shapiq_approximator_of_every_index_runs_or_is_refused(name: str, index: str) -> None:
    options = {"index": index, "max_order": 1 if index in ("SV", "BV") else 2, "random_state": None}
    options.pop("random_state")
    if (name, index) in REFUSED:
        with pytest.raises(ValueError, match=f"shapiq:{name}"):
            ShapiqMethod(name, options=options)
        return
    game = shapleig.FunctionGame(_fn, P)
    est = _quiet(ShapiqMethod(name, options=options).estimate, game, 24, seed=0)
    assert est.index == index and est.terms == index_terms(P, index) and est.evaluations <= 24
    assert np.isfinite(est.values).all() and est.method == f"shapiq:{name}"


def test_the_refused_combinations_are_all_listed() -> None:
    listed = set(_combinations())
    assert REFUSED <= listed
    # the interaction approximators the issue names are among the methods
    for name in ("KernelSHAPIQ", "SVARMIQ", "ProxySPEX", "SHAPIQ", "PermutationSamplingSTII", "RegressionFSII"):
        assert name in shapiq_index_approximators()


@pytest.mark.parametrize("index", INDICES)
def test_harness_runs_shapiq_interaction_methods_on_a_shapiq_game_with_exact_values(index: str) -> None:
    task = Task("shapiq-game", "shapiq-game", "synthetic", lambda: ShapiqGame(n_players=P, normalize=False))
    methods = {"SV": ["shapiq:KernelSHAP", "shapiq:KernelSHAPIQ"], "BV": ["shapiq:SVARM", "shapiq:RegressionMSR"],
               "k-SII": ["shapiq:KernelSHAPIQ", "shapiq:SVARMIQ", "shapiq:ProxySPEX"],
               "STII": ["shapiq:SVARMIQ", "shapiq:PermutationSamplingSTII"],
               "FSII": ["shapiq:RegressionFSII", "shapiq:ProxySHAP"],
               "FBII": ["shapiq:RegressionFBII", "shapiq:ProxySHAP"]}[index]
    df = _quiet(run_benchmark, [task], [*methods, "shapleig"], ["4p"], [0], index=index, progress=False)
    assert df.error.fillna("").eq("").all(), df.error.tolist()
    expected = exact_index_values(_table(), index)
    for exact in df.exact:
        np.testing.assert_allclose(exact, expected, atol=1e-12)
    assert set(df.method) == {*[f"{m}:index={index},max_order={1 if index in ('SV', 'BV') else 2}"
                                for m in methods if index != "SV"], *(methods if index == "SV" else []),
                              "shapleig" if index == "SV" else f"shapleig:index={index}"}


@pytest.mark.parametrize("index", ["k-SII", "STII", "FSII", "FBII", "BII", "CHII"])
def test_harness_scores_order_three_against_shapiq_exact_values(index: str) -> None:
    """``--index`` with ``--max-order 3``: the ground truth is shapiq's own exact values of order 3, equal
    to this project's (every term of 1..3 players), and every method estimates those terms."""
    task = Task("shapiq-game", "shapiq-game", "synthetic", lambda: ShapiqGame(n_players=P, normalize=False))
    methods = {"k-SII": ["shapiq:KernelSHAPIQ"], "STII": ["shapiq:PermutationSamplingSTII"],
               "FSII": ["shapiq:RegressionFSII"], "FBII": ["shapiq:RegressionFBII"], "BII": ["shapiq:SVARMIQ"],
               "CHII": ["shapiq:SHAPIQ"]}[index]
    df = _quiet(run_benchmark, [task], [*methods, "shapleig", "exact"], ["6p", "32"], [0], index=index, max_order=3,
                progress=False, skip_small=True)  # exact: 32 = 2^5 only
    assert df.error.fillna("").eq("").all(), df.error.tolist()
    expected = exact_index_values(_table(), index, 3)
    for exact in df.exact:
        np.testing.assert_allclose(exact, expected, atol=1e-9)  # shapiq's FSII: a least-squares solve
    assert set(df.max_order) == {3} and len(df["values"].iloc[0]) == len(index_terms(P, index, 3))
    assert set(df.method) == {f"{m}:index={index},max_order=3" for m in methods} | {
        f"shapleig:index={index},max_order=3", f"exact:index={index},max_order=3"}
    assert df[df.method_name == "exact"].mse.max() < 1e-16 and set(df[df.method_name == "exact"].budget) == {32}


def test_from_interaction_values_reads_every_order_and_refuses_what_it_cannot_hold() -> None:
    game = ShapiqGame(n_players=P, normalize=False)
    computer = shapiq.ExactComputer(game, n_players=P)
    for index in ("k-SII", "FBII", "CHII"):
        order3 = computer(index=index, order=3)
        est = bridge.from_interaction_values(order3)
        assert est.index == index and est.max_order == 3 and est.terms == index_terms(P, index, 3)
        np.testing.assert_array_equal(est.values, [order3[T] for T in est.terms])
        np.testing.assert_allclose(est.values, exact_index_values(_table(), index, 3), atol=1e-9)
    sv_with_pairs = computer(index="k-SII", order=2)
    sv_with_pairs.index = "SV"  # SV is order 1: pairs in it would be dropped, so it is refused
    with pytest.raises(ValueError, match="refused"):
        bridge.from_interaction_values(sv_with_pairs)
    with pytest.raises(ValueError, match="not 'STII'"):
        bridge.from_interaction_values(computer(index="FBII", order=2), index="STII")


def test_shapiq_methods_refuse_orders_and_indices_before_evaluation() -> None:
    assert ShapiqMethod("KernelSHAPIQ", options={"index": "k-SII", "max_order": 3}).max_order == 3
    assert ShapiqMethod("RegressionFBII", options={"index": "FBII", "max_order": 2}).index == "FBII"
    with pytest.raises(ValueError, match="max_order=1 only"):
        ShapiqMethod("ProxySHAP", options={"index": "BV", "max_order": 2})
    with pytest.raises(ValueError, match="only the top order of 'FBII'"):
        ShapiqMethod("SVARMIQ", options={"index": "FBII", "max_order": 3})
    with pytest.raises(ValueError, match="does not estimate index 'k-SII'.*KernelSHAPIQ"):
        ShapiqMethod("KernelSHAP", options={"index": "k-SII", "max_order": 2})


@pytest.mark.parametrize("index", ["SV", "k-SII", "STII", "FSII", "BV"])
def test_shapiq_approximator_sums_exactly_for_efficient_indices(index: str) -> None:
    order = 1 if index in ("SV", "BV") else 2
    approx = bridge.ShapiqApproximator(P, max_order=order, index=index, random_state=0)
    assert approx.estimator.index == index and approx.max_order == order
    iv = approx.approximate(20, _fn)
    total = _fn(np.ones((1, P), dtype=bool))[0] - _fn(np.zeros((1, P), dtype=bool))[0]
    terms = index_terms(P, index)
    s = sum(iv[T] for T in terms)
    if is_efficient(index):
        assert s == pytest.approx(total, abs=1e-12)
        assert approx.last_estimate.info["efficiency_gap"] != 0.0  # the correction did something
    else:
        assert "efficiency_gap" not in approx.last_estimate.info
    assert iv.baseline_value == pytest.approx(1.5) and iv.index == index


@pytest.mark.parametrize("index", ["k-SII", "STII", "FSII", "FBII"])
def test_shapiq_approximator_of_order_three(index: str) -> None:
    approx = bridge.ShapiqApproximator(P, max_order=3, index=index, random_state=0)
    assert approx.estimator.index == index and approx.estimator.max_order == 3 and approx.max_order == 3
    iv = approx.approximate(28, _fn)
    est = approx.last_estimate
    assert iv.index == index and iv.max_order == 3 and est.terms == index_terms(P, index, 3)
    assert isinstance(iv, bridge.UncertainInteractionValues) and iv.uncertainty_terms == est.terms
    exact = exact_index_values(_table(), index, 3)
    np.testing.assert_allclose([iv[T] for T in est.terms], est.values)
    assert np.mean(np.abs(est.values - exact) <= 1.96 * est.std) >= 0.9
    total = _fn(np.ones((1, P), dtype=bool))[0] - _fn(np.zeros((1, P), dtype=bool))[0]
    if is_efficient(index):
        assert sum(iv[T] for T in est.terms) == pytest.approx(total, abs=1e-12)


def test_shapiq_approximator_refuses_orders_and_estimators_of_another_index() -> None:
    with pytest.raises(ValueError, match="max_order=1 only"):
        bridge.ShapiqApproximator(P, max_order=2, index="BV")
    with pytest.raises(ValueError, match="of order 2, not 3"):
        bridge.ShapiqApproximator(P, max_order=3, index="k-SII", estimator=shapleig.ShaplEIG(index="k-SII"))
    with pytest.raises(ValueError, match="estimates index 'SV', not 'k-SII'"):
        bridge.ShapiqApproximator(P, index="k-SII", estimator=shapleig.ShaplEIG())
    with pytest.raises(TypeError, match="number of players"):
        bridge.ShapiqApproximator(shapleig.ShaplEIG(), 5)


def test_shapiq_benchmark_runs_the_approximator_class() -> None:
    from shapiq_benchmark import Benchmark, run

    bench = Benchmark(ShapiqGame(n_players=P, normalize=False))
    for index, order in (("SV", 1), ("k-SII", 2)):
        df = _quiet(run, bench, {"ShaplEIG": bridge.ShapiqApproximator, "KernelSHAPIQ": shapiq.KernelSHAPIQ},
                    budgets=[20], index=index, order=order, seeds=[0, 1])
        ours = df[df.approximator == "ShaplEIG"]
        assert (ours.status == "ok").all(), ours.error.tolist()
        assert ours.mse.max() < 0.05
    third = _quiet(run, bench, {"ShaplEIG": bridge.ShapiqApproximator}, budgets=[28], index="k-SII", order=3)
    assert (third.status == "ok").all(), third.error.tolist()


def test_tabular_explainer_with_the_default_estimator_and_k_sii() -> None:
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, P))
    model = GradientBoostingRegressor(n_estimators=20, random_state=0).fit(X, X[:, 0] * X[:, 1] + X[:, 2])
    approx = bridge.ShapiqApproximator(P, max_order=2, index="k-SII", random_state=0)
    explainer = shapiq.TabularExplainer(model, X[:20], approximator=approx, index="k-SII", max_order=2)
    iv = _quiet(explainer.explain, X[0], budget=24, random_state=0)
    est = approx.last_estimate
    assert isinstance(iv, bridge.UncertainInteractionValues) and iv.index == "k-SII" and est.index == "k-SII"
    np.testing.assert_array_equal([iv[T] for T in est.terms], est.values)
    total = model.predict(X[:1])[0] - model.predict(X[:20]).mean()
    assert sum(iv[T] for T in est.terms) == pytest.approx(total, abs=1e-9)
