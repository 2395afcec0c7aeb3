"""Uncertainty that survives shapiq: ``UncertainInteractionValues`` through shapiq's arithmetic,
order and top-k selection, copies, dicts and JSON files (docs/guide.md §9 lists what keeps it).

Expected stds are computed from the ``ShapleyEstimate`` (the posterior the values came from), never
through the class under test. Skipped without shapiq >= 1.8 unless ``SHAPLEIG_REQUIRE_SHAPIQ=1``.
"""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from _optional import import_shapiq_bridge

import shapleig

pytestmark = pytest.mark.shapiq

bridge = import_shapiq_bridge()  # skips the module without shapiq >= 1.8, unless CI requires it
import shapiq  # noqa: E402  (after the skip: only reached with shapiq >= 1.8)

from shapleig.games.indices import index_terms  # noqa: E402

P = 5


def _game(shift: float = 0.0) -> shapleig.FunctionGame:
    w = np.linspace(0.5, 2.0, P) + shift

    def fn(Z: np.ndarray) -> np.ndarray:
        return np.sqrt(Z @ w) + 0.3 * Z[:, 0] * Z[:, 1] + 1.5

    return shapleig.FunctionGame(fn, P)


@pytest.fixture(scope="module")
def sv() -> shapleig.ShapleyEstimate:
    return shapleig.ShaplEIG(surrogate="shared", refit="never", pool_size=30).estimate(_game(), 12, seed=0)


@pytest.fixture(scope="module")
def sv2() -> shapleig.ShapleyEstimate:
    """An independent estimate of another game (another seed, another game)."""
    return shapleig.ShaplEIG(surrogate="shared", refit="never", pool_size=30).estimate(_game(0.3), 12, seed=1)


@pytest.fixture(scope="module")
def ksii() -> shapleig.ShapleyEstimate:
    return shapleig.ShaplEIG(index="k-SII", surrogate="shared", refit="never", pool_size=30).estimate(_game(), 20, seed=0)


def _std(iv, terms) -> np.ndarray:
    return np.array([iv.std_of(T) for T in terms])


def _cov(iv, terms) -> np.ndarray:
    idx = [iv.uncertainty_terms.index(T) for T in terms]
    return iv.covariance[np.ix_(idx, idx)]


def test_scaling_and_negation(sv: shapleig.ShapleyEstimate) -> None:
    iv = sv.to_interaction_values()
    terms = sv.terms
    assert isinstance(iv, bridge.UncertainInteractionValues)
    for scaled, c in ((iv * 2, 2.0), (2 * iv, 2.0), (iv * -0.5, -0.5), (-iv, -1.0)):
        assert isinstance(scaled, bridge.UncertainInteractionValues)
        np.testing.assert_allclose(_std(scaled, terms), abs(c) * sv.std, rtol=1e-15)
        np.testing.assert_allclose(_cov(scaled, terms), c * c * sv.covariance, rtol=1e-15)
        np.testing.assert_allclose([scaled[T] for T in terms], c * sv.values, rtol=1e-15)
    for shifted in (iv - 3.0, iv + 1, 3.0 - iv):  # a constant has no uncertainty
        np.testing.assert_array_equal(_std(shifted, terms), sv.std)
        np.testing.assert_array_equal(_cov(shifted, terms), sv.covariance)


def test_sums_of_independent_estimates_add_variances(sv, sv2) -> None:
    a, b = sv.to_interaction_values(), sv2.to_interaction_values()
    total, diff = a + b, a - b
    np.testing.assert_allclose(_std(total, sv.terms), np.sqrt(sv.std**2 + sv2.std**2), rtol=1e-14)
    np.testing.assert_allclose(_std(diff, sv.terms), np.sqrt(sv.std**2 + sv2.std**2), rtol=1e-14)
    np.testing.assert_allclose(_cov(total, sv.terms), sv.covariance + sv2.covariance, rtol=1e-14)
    np.testing.assert_allclose([diff[T] for T in sv.terms], sv.values - sv2.values, rtol=1e-13)
    # the same object is perfectly correlated: iv + iv = 2 iv, iv - iv = 0 exactly
    np.testing.assert_allclose(_std(a + a, sv.terms), 2 * sv.std, rtol=1e-15)
    zero = a - a
    assert np.all(_std(zero, sv.terms) == 0) and all(zero[T] == 0 for T in sv.terms)
    # sum() starts from 0
    np.testing.assert_allclose(_std(sum([a, b]), sv.terms), np.sqrt(sv.std**2 + sv2.std**2), rtol=1e-14)


def test_adding_exact_values_keeps_std_and_estimated_plain_values_fail(sv) -> None:
    iv = sv.to_interaction_values()
    exact = shapiq.ExactComputer(_game(), n_players=P)(index="SV", order=1)
    assert exact.estimated is False
    err = iv - exact  # an estimate minus the exact values: the error, with the estimate's std
    np.testing.assert_array_equal(_std(err, sv.terms), sv.std)
    estimated_plain = iv.without_uncertainty()
    assert type(estimated_plain) is shapiq.InteractionValues and estimated_plain.estimated
    with pytest.raises(ValueError, match="carry no uncertainty"):
        iv + estimated_plain
    with pytest.raises(ValueError, match="carry no uncertainty"):
        estimated_plain + iv


def test_abs_keeps_std_as_a_bound_and_drops_the_covariance(sv) -> None:
    iv = abs(sv.to_interaction_values())
    np.testing.assert_array_equal(_std(iv, sv.terms), sv.std)
    assert iv.covariance is None
    np.testing.assert_array_equal([iv[T] for T in sv.terms], np.abs(sv.values))


def test_order_top_k_subset_and_sparsify_keep_the_terms_uncertainty(ksii) -> None:
    iv = ksii.to_interaction_values()
    d = len(ksii.terms)
    singles = [T for T in ksii.terms if len(T) == 1]
    pairs = [T for T in ksii.terms if len(T) == 2]
    first, second = iv.get_n_order(1), iv.get_n_order(2)
    assert first.uncertainty_terms == singles and second.uncertainty_terms == pairs
    np.testing.assert_array_equal(first.std, ksii.std[:P])
    np.testing.assert_array_equal(second.covariance, ksii.covariance[P:, P:])
    top = iv.get_top_k(4)
    # shapiq ranks every entry, the empty interaction (v(empty)) included
    entries = [(), *ksii.terms]
    magnitude = np.abs(np.concatenate([[ksii.baseline], ksii.values]))
    largest = [entries[k] for k in np.argsort(-magnitude)[:4] if entries[k] != ()]
    assert sorted(top.uncertainty_terms) == sorted(largest)
    for T in largest:  # the largest terms and their stds
        assert top.std_of(T) == ksii.std[ksii.terms.index(T)]
    subset = iv.get_subset([0, 1])
    assert set(subset.uncertainty_terms) == {(0,), (1,), (0, 1)}
    assert subset.std_of((0, 1)) == ksii.std[ksii.terms.index((0, 1))]
    sparse = copy.copy(iv)
    threshold = float(np.median(np.abs(ksii.values)))
    sparse.sparsify(threshold)
    kept = [T for k, T in enumerate(ksii.terms) if abs(ksii.values[k]) >= threshold]
    assert sparse.uncertainty_terms == kept and 0 < len(kept) < d
    np.testing.assert_array_equal(sparse.std, [ksii.std[ksii.terms.index(T)] for T in kept])
    # a selection without all terms cannot come back as a whole estimate: refused, not filled in
    with pytest.raises(ValueError, match="no uncertainty for terms"):
        bridge.from_interaction_values(top)
    # but the full selection comes back exactly
    back = bridge.from_interaction_values(iv.get_n_order(min_order=0, max_order=2))
    np.testing.assert_array_equal(back.covariance, ksii.covariance)


def test_copies_pickles_dicts_and_json_files_keep_std_and_covariance(ksii, tmp_path: Path) -> None:
    iv = ksii.to_interaction_values()
    for twin in (copy.copy(iv), copy.deepcopy(iv), pickle.loads(pickle.dumps(iv)),
                 bridge.UncertainInteractionValues.from_dict(iv.to_dict())):
        assert isinstance(twin, bridge.UncertainInteractionValues)
        np.testing.assert_array_equal(_std(twin, ksii.terms), ksii.std)
        np.testing.assert_array_equal(_cov(twin, ksii.terms), ksii.covariance)
    path = tmp_path / "iv.json"
    iv.save(path)
    data = json.loads(path.read_text())
    assert data["metadata"]["index"] == "k-SII" and "shapleig_uncertainty" in data
    for loaded in (shapiq.InteractionValues.load(path), bridge.UncertainInteractionValues.load(path),
                   shapiq.InteractionValues.from_json_file(path)):
        assert isinstance(loaded, bridge.UncertainInteractionValues) and loaded == iv
        back = bridge.from_interaction_values(loaded)
        np.testing.assert_array_equal(back.values, ksii.values)
        np.testing.assert_array_equal(back.std, ksii.std)  # floats survive JSON exactly
        np.testing.assert_array_equal(back.covariance, ksii.covariance)
    # a file without the block loads as shapiq's plain class, and our class refuses it by name
    plain_path = tmp_path / "plain.json"
    iv.without_uncertainty().save(plain_path)
    assert type(shapiq.InteractionValues.load(plain_path)) is shapiq.InteractionValues
    with pytest.raises(ValueError, match="without uncertainty"):
        bridge.UncertainInteractionValues.load(plain_path)


def test_a_saved_file_with_a_damaged_block_is_refused_naming_the_file(ksii, tmp_path: Path) -> None:
    """Issue 34, item 7: the block a list raised ``TypeError: list indices must be integers``."""
    iv = ksii.to_interaction_values()
    path = tmp_path / "iv.json"
    iv.save(path)
    data = json.loads(path.read_text())
    block = data["shapleig_uncertainty"]
    for damaged, match in ((list(block.values()), "block is a JSON array"),
                           ({**block, "std": block["std"][:-1]}, "'std' has shape"),
                           ({**block, "terms": ["x,y"] + block["terms"][1:]}, "not shapiq's notation")):
        path.write_text(json.dumps({**data, "shapleig_uncertainty": damaged}))
        for load in (shapiq.InteractionValues.load, bridge.UncertainInteractionValues.load):
            with pytest.raises(ValueError, match=match) as info:
                load(path)
            assert str(path) in str(info.value) and "'shapleig_uncertainty' block" in str(info.value)
        with pytest.raises(ValueError, match=match):
            bridge.UncertainInteractionValues.from_dict({**iv.to_dict(), "shapleig_uncertainty": damaged})


def test_aggregate_mean_of_independent_estimates(sv, sv2) -> None:
    a, b = sv.to_interaction_values(), sv2.to_interaction_values()
    mean = a.aggregate([b], "mean")
    np.testing.assert_allclose(_std(mean, sv.terms), np.sqrt(sv.std**2 + sv2.std**2) / 2, rtol=1e-14)
    np.testing.assert_allclose([mean[T] for T in sv.terms], (sv.values + sv2.values) / 2, rtol=1e-14)
    with pytest.raises(ValueError, match="no Gaussian std"):
        a.aggregate([b], "median")


def test_shapiq_plots_draw_uncertain_values(sv, sv2, tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ivs = [sv.to_interaction_values(), sv2.to_interaction_values()]
    shapiq.plot.bar_plot(ivs, show=False)
    shapiq.plot.waterfall_plot(ivs[0], show=False)
    plt.savefig(tmp_path / "p.png")
    plt.close("all")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_bad_uncertainty_is_refused() -> None:
    kwargs = dict(index="SV", max_order=1, min_order=0, n_players=2, interaction_lookup={(): 0, (0,): 1, (1,): 2},
                  baseline_value=0.0)
    values = np.array([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="needs std or covariance"):
        bridge.UncertainInteractionValues(values, **kwargs)
    with pytest.raises(ValueError, match="non-negative"):
        bridge.UncertainInteractionValues(values, std=[0.1, -1.0], **kwargs)
    with pytest.raises(ValueError, match="2 finite"):
        bridge.UncertainInteractionValues(values, std=[0.1], **kwargs)
    iv = bridge.UncertainInteractionValues(values, covariance=np.diag([0.04, 0.09]), **kwargs)
    np.testing.assert_allclose(iv.std, [0.2, 0.3])
    assert iv.std_of(()) == 0.0 and index_terms(2) == iv.uncertainty_terms


@pytest.mark.parametrize("index", ["k-SII", "FBII"])
def test_an_order_three_estimate_round_trips_with_its_uncertainty(index: str, tmp_path: Path) -> None:
    est = shapleig.ShaplEIG(index=index, max_order=3, surrogate="shared", refit="never",
                            pool_size=30).estimate(_game(), 24, seed=0)
    iv = est.to_interaction_values()
    assert iv.index == index and iv.max_order == 3 and iv.uncertainty_terms == index_terms(P, index, 3)
    triples = [T for T in est.terms if len(T) == 3]
    third = iv.get_n_order(3)
    assert third.uncertainty_terms == triples
    np.testing.assert_array_equal(third.std, est.std[-len(triples):])
    np.testing.assert_array_equal(third.covariance, est.covariance[-len(triples):, -len(triples):])
    doubled = iv * 2.0
    np.testing.assert_array_equal(_std(doubled, est.terms), 2.0 * est.std)
    path = tmp_path / "order3.json"
    iv.save(path)
    loaded = shapiq.InteractionValues.load(path)
    back = bridge.from_interaction_values(loaded)
    assert back.index == index and back.terms == est.terms and back.max_order == 3
    np.testing.assert_array_equal(back.values, est.values)
    np.testing.assert_array_equal(back.std, est.std)
    np.testing.assert_array_equal(back.covariance, est.covariance)
    pairs = bridge.from_interaction_values(iv.get_n_order(min_order=0, max_order=2))
    assert pairs.max_order == 2 and pairs.terms == index_terms(P, index, 2)
