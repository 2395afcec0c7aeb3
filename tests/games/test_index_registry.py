"""The ``Index`` record and its registry (shapleig/games/indices.py, issue 28): every built-in record
passes its own checks, a wrong claim is refused naming the field, and a user-defined index (a
weighted Banzhaf value of order 1, a weighted Banzhaf interaction index of order 2) is one object
that the exact values, the GP's index products, ShaplEIG, the plots' labels, the shapiq names and
the method registry all read. References are computed here from the definitions (brute force over
the 2^p coalitions), never with the code under test."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from _dense_reference import dense_kernel

from shapleig import ShaplEIG, registry
from shapleig.estimation.exact import ExactShapley
from shapleig.games.game import FunctionGame
from shapleig.games.indices import (
    BUILTIN_INDICES,
    INDICES,
    Index,
    check_index,
    check_index_record,
    default_hold_out_empty,
    dense_index_operator,
    exact_index_values,
    get_index,
    index_from_shapiq,
    index_label,
    index_names,
    index_terms,
    is_efficient,
    register_index,
    shapiq_index_name,
    unregister_index,
)
from shapleig.gp.index_esp import IndexOperator

Q = Fraction(3, 10)


def wbv_weights(p: int):
    """Weighted Banzhaf (Marichal & Mathonet): each other player joins S with probability q."""
    return [Q**k * (1 - Q) ** (p - 1 - k) for k in range(p)], None


def wbii_weights(p: int):
    """Its order-2 version: the pair's derivative over S drawn the same way from the other p - 2."""
    return wbv_weights(p)[0], [Q**k * (1 - Q) ** (p - 2 - k) for k in range(p - 1)]


WBV = Index("test-WBV", order=1, efficient=False, weights=wbv_weights, label="weighted Banzhaf value (q = 0.3)")
WBII = Index("test-WBII", order=2, efficient=False, weights=wbii_weights, label="weighted Banzhaf interactions",
             shapiq_name=None)


@pytest.fixture
def user_indices():
    register_index(WBV)
    register_index(WBII)
    yield
    unregister_index(WBV.name)
    unregister_index(WBII.name)


def all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def brute_weighted_banzhaf(p: int, order: int) -> np.ndarray:
    """Rows ``E_S[Delta_T v(S)]`` with every player outside T in S independently with probability q,
    over bit-order columns: the definition, term by term and coalition by coalition."""
    q = float(Q)
    terms = [(i,) for i in range(p)] + (list(combinations(range(p), 2)) if order == 2 else [])
    B = np.zeros((len(terms), 1 << p))
    for row, T in enumerate(terms):
        others = [j for j in range(p) if j not in T]
        for S in range(1 << p):
            if any((S >> t) & 1 for t in T):
                continue
            k = bin(S).count("1")
            prob = q**k * (1 - q) ** (len(others) - k)
            for sub in range(1 << len(T)):  # Delta_T v(S) = sum_{L subset T} (-1)^{|T|-|L|} v(S + L)
                L = sum(1 << T[b] for b in range(len(T)) if (sub >> b) & 1)
                B[row, S | L] += prob * (-1) ** (len(T) - bin(sub).count("1"))
    return B


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# -- the built-in records ---------------------------------------------------------------------------

@pytest.mark.parametrize("index", BUILTIN_INDICES, ids=lambda i: i.name)
def test_builtin_records_pass_their_own_checks(index: Index) -> None:
    check_index_record(index)  # definition == weighted derivatives, efficiency, fast path
    assert get_index(index.name) is index and index.shapiq_name == index.name


def test_builtin_facts() -> None:
    assert index_names()[: len(INDICES)] == INDICES == ("SV", "BV", "k-SII", "SII", "STII", "FSII", "FBII", "BII",
                                                         "CHII", "Moebius")
    assert [get_index(n).order for n in INDICES] == [1, 1] + [2] * 8
    assert [n for n in INDICES if get_index(n).any_order] == list(INDICES[2:])
    assert [n for n in INDICES if is_efficient(n)] == ["SV", "k-SII", "STII", "FSII"]
    assert [n for n in INDICES if default_hold_out_empty(n)] == ["BV"]
    assert index_label("SV") == "Shapley value" and index_label("kADD-SHAP") == "kADD-SHAP"  # shapiq's own: its name
    assert index_label("FBII") == "FBII (order 2)" and index_label("k-SII", 3) == "k-SII (order 3)"
    assert shapiq_index_name("FBII") == "FBII" and index_from_shapiq("k-SII") is get_index("k-SII")
    assert index_from_shapiq("FBII") is get_index("FBII") and index_from_shapiq("kADD-SHAP") is None


# -- wrong claims are refused, naming the field -----------------------------------------------------

@pytest.mark.parametrize("field, value, message", [
    ("efficient", False, r"efficient=False but its terms sum to v\(N\) - v\(empty\)"),
    ("fast_path", "banzhaf", "fast_path='banzhaf' is the closed form"),
    ("definition", lambda p: dense_index_operator(p, "SII"), "its definition differs"),
    ("weights", lambda p: ([Fraction(1, p)] * (p - 1), None), "w1 needs"),
])
def test_a_wrong_claim_is_refused(field: str, value, message: str) -> None:
    record = dataclasses.replace(get_index("SV"), name="test-wrong", **{field: value})
    with pytest.raises(ValueError, match=message):
        register_index(record)
    assert "test-wrong" not in index_names()


def test_an_efficiency_claim_the_terms_do_not_keep_is_refused() -> None:
    record = dataclasses.replace(get_index("SII"), name="test-wrong", efficient=True)
    with pytest.raises(ValueError, match="do not sum to v"):
        register_index(record)


def test_bad_records_fail_on_construction() -> None:
    with pytest.raises(ValueError, match="order must be a positive integer"):
        Index("x", order=0, efficient=False, weights=wbv_weights, label="x")
    with pytest.raises(ValueError, match="any_order needs fast_path='weights'"):
        Index("x", order=1, efficient=False, weights=wbv_weights, label="x", fast_path="banzhaf", any_order=True)
    with pytest.raises(ValueError, match="fast_path must be one of"):
        Index("x", order=1, efficient=False, weights=wbv_weights, label="x", fast_path="esp")
    with pytest.raises(ValueError, match="non-empty string"):
        Index("", order=1, efficient=False, weights=wbv_weights, label="x")
    with pytest.raises(ValueError, match="order 2: weights"):
        check_index_record(Index("x", order=2, efficient=False, weights=wbv_weights, label="x"))
    with pytest.raises(ValueError, match="not a number"):
        check_index_record(Index("x", order=1, efficient=False, weights=lambda p: (["1"] * p, None), label="x"))


def test_names_are_not_taken_silently(user_indices) -> None:
    other = dataclasses.replace(WBV, label="another")
    with pytest.raises(ValueError, match="already registered"):
        register_index(other)
    register_index(WBV)  # the same record again: nothing changes
    with pytest.raises(ValueError, match="built-in index"):
        unregister_index("SV")
    with pytest.raises(ValueError, match="register your own"):
        check_index("test-nope")


def test_a_replaced_record_is_read_afresh(user_indices) -> None:
    """Caches are keyed by the record, so replacing an index under its name changes every product."""
    p = 5
    ls, s = np.linspace(0.4, 2.0, p), 1.2
    before = IndexOperator(p, WBV.name).hamming_covariance(ls, s)
    half = dataclasses.replace(WBV, weights=lambda p: ([Fraction(1, 2 ** (p - 1))] * p, None))
    register_index(half, replace=True)
    after = IndexOperator(p, WBV.name).hamming_covariance(ls, s)
    np.testing.assert_allclose(after, IndexOperator(p, "BV").hamming_covariance(ls, s), rtol=1e-12)
    assert rel(before, after) > 1e-3
    register_index(WBV, replace=True)


# -- a user-defined index is read everywhere --------------------------------------------------------

@pytest.mark.parametrize("record", [WBV, WBII], ids=lambda i: i.name)
@pytest.mark.parametrize("p", [3, 6])
def test_user_index_exact_values_and_dense_operator(user_indices, record: Index, p: int) -> None:
    B = brute_weighted_banzhaf(p, record.order)
    v = np.random.default_rng(p).normal(size=1 << p)
    np.testing.assert_allclose(exact_index_values(v, record.name), B @ v, atol=1e-12)
    np.testing.assert_allclose(dense_index_operator(p, record.name), B, atol=1e-14)
    assert index_terms(p, record.name) == [(i,) for i in range(p)] + (
        list(combinations(range(p), 2)) if record.order == 2 else [])


@pytest.mark.parametrize("record", [WBV, WBII], ids=lambda i: i.name)
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("hold_out", [False, True])
def test_user_index_gp_products_equal_dense(user_indices, record: Index, shared: bool, hold_out: bool) -> None:
    p = 6
    rng = np.random.default_rng(11)
    ls = np.full(p, 0.9) if shared else rng.uniform(0.1, 3.0, p)
    s = 1.3
    Z = all_sets(p)
    B = brute_weighted_banzhaf(p, record.order)
    if hold_out:
        B[:, 0] = 0.0  # B': v(empty) enters exactly
    K = dense_kernel(Z, ls, s)
    op = IndexOperator(p, record.name, hold_out_empty=hold_out)
    assert rel(op.hamming_columns(Z, ls, s), B @ K) < 1e-10
    assert rel(op.hamming_covariance(ls, s), B @ K @ B.T) < 1e-10
    # the size coefficients: the index of a game of the size alone, h(|S|)
    h = rng.normal(size=p + 1)
    assert rel(op.size_coefficients() @ h, B @ h[Z.sum(axis=1)]) < 1e-10


def test_user_index_runs_through_the_estimators_and_the_registry(user_indices) -> None:
    w = np.arange(1.0, 6.0)
    game = FunctionGame(lambda Z: Z @ w + 2.0 * Z[:, 0] * Z[:, 1], n_players=5)
    truth = w.copy()
    truth[:2] += 2.0 * float(Q)  # the other of the pair is present with probability q
    exact = ExactShapley(index=WBV.name).estimate(game, 32)
    np.testing.assert_allclose(exact.values, truth, atol=1e-12)
    est = ShaplEIG(index=WBV.name).estimate(game, 20, seed=0)
    assert est.index == WBV.name and est.terms == [(i,) for i in range(5)]
    assert np.max(np.abs(est.values - truth)) < 0.05  # an additive game plus one pair: nearly exact
    assert registry.index_options("shapleig", WBV.name) == {"index": WBV.name}
    with pytest.raises(ValueError, match="estimates the Shapley value only"):
        registry.index_options("shapleig-leverage", WBV.name)
    assert index_label(WBV.name) == "weighted Banzhaf value (q = 0.3)"
    from shapleig.explanation.plot import plot_explanation

    assert plot_explanation(est).axes[0].get_xlabel().startswith("weighted Banzhaf value (q = 0.3) (")
    for name in (WBV.name, WBII.name):  # shapiq has no weighted Banzhaf index: shapiq_name None
        with pytest.raises(ValueError, match="no shapiq counterpart"):
            shapiq_index_name(name)


# -- records travel between processes -----------------------------------------------------------------

@pytest.mark.parametrize("name", INDICES)
def test_builtin_operators_pickle(name: str) -> None:
    import pickle

    op = IndexOperator(5, name, hold_out_empty=True)
    back = pickle.loads(pickle.dumps(op))
    assert back == op and back.spec is get_index(name)  # a built-in record travels by name
    ls = np.linspace(0.5, 1.5, 5)
    np.testing.assert_array_equal(back.hamming_covariance(ls, 1.0), op.hamming_covariance(ls, 1.0))


def test_a_user_record_pickles_by_value(user_indices) -> None:
    import pickle

    back = pickle.loads(pickle.dumps(WBV))
    assert back == WBV and back.weights is wbv_weights  # its module-level weights function, by reference


def _ksii_but_sii_at_three(p: int, k: int):
    """k-SII's weights, except at order 3, where SII's (not efficient) stand in."""
    from shapleig.games import index_weights as iw

    return iw.sii_weights(p, k) if k == 3 else iw.ksii_weights(p, k)


def test_an_any_order_record_is_checked_at_every_order() -> None:
    """A claim that holds at the default order 2 but not at order 3 is refused, naming the order."""
    record = Index("test-orders", 2, True, _ksii_but_sii_at_three, "x", any_order=True)
    with pytest.raises(ValueError, match=r"efficient=True but its terms do not sum .* \(order 3\)"):
        register_index(record)
    from shapleig.games import index_weights as iw

    defined = dataclasses.replace(record, efficient=False, weights=iw.sii_weights,
                                  definition=lambda p, k: dense_index_operator(p, "SII", min(k, 2)) if k < 3
                                  else dense_index_operator(p, "BII", k))
    with pytest.raises(ValueError, match="its definition differs .* order 3"):
        register_index(defined)
    assert "test-orders" not in index_names()
