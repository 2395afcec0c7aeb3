"""The structure read-out (shapleig.gp.structures) against a dense 2^p computation."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_kernel

from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import shapley_operator
from shapleig.gp.mixture import build_mixture
from shapleig.gp.posterior import Hyperparameters, standardize
from shapleig.gp.structures import StructurePosterior, check_structures

P = 5


def _archive(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Z = all_coalitions(P)
    n = 1 << P
    rows = np.concatenate([[0, n - 1], rng.choice(np.arange(1, n - 1), 10, replace=False)])
    y = 2.0 + 4.0 * rng.normal(size=rows.size)
    return Z, rows, y


def _dense_phi(Z, rows, y, hyper):
    """Raw-unit (mean, covariance) of phi from the dense GP over all 2^p coalitions."""
    y_tilde, _, scale = standardize(y)
    K = dense_kernel(Z, hyper.lengthscales, hyper.outputscale)
    Ks = K[np.ix_(rows, rows)] + hyper.noise * np.eye(rows.size)
    KxA = K[rows, :]
    c = hyper.mean_constant
    mu = c + KxA.T @ np.linalg.solve(Ks, y_tilde - c)
    Sigma = K - KxA.T @ np.linalg.solve(Ks, KxA)
    A = shapley_operator(P)
    return scale * (A @ mu), scale**2 * (A @ Sigma @ A.T)


@pytest.mark.parametrize("seed", [0, 1])
def test_structure_covariance_is_the_equal_weight_total_covariance_about_the_fitted_mean(seed):
    Z, rows, y = _archive(seed)
    X = Z[rows]
    smooth = Hyperparameters.hamming(np.full(P, 2.0), 1.3, 1e-6, 0.1)
    rough = Hyperparameters.hamming(np.array([0.1, 0.3, 0.2, 0.5, 0.15]), 0.7, 1e-4, -0.2)
    fitted = build_mixture([("smooth", 1.0, smooth)], X, y, calibrate=False)
    other = build_mixture([("rough", 1.0, rough)], X, y, calibrate=False)
    post = StructurePosterior(fitted, {"graded": other})
    m0, C0 = _dense_phi(Z, rows, y, smooth)
    m1, C1 = _dense_phi(Z, rows, y, rough)
    d = m1 - m0
    expected = 0.5 * (C0 + C1 + np.outer(d, d))
    scale = np.abs(expected).max()
    np.testing.assert_allclose(post.mean, m0, rtol=0, atol=1e-9 * np.abs(m0).max())
    np.testing.assert_allclose(post.covariance, expected, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(post.std, np.sqrt(np.diag(expected)), rtol=1e-9)
    assert post.family_weights == {"fitted": 0.5, "graded": 0.5}
    shift = post.disagreement()["graded"]
    assert shift == pytest.approx(float(np.max(np.abs(d) / np.sqrt(np.diag(expected)))), rel=1e-9)


def test_structure_readout_needs_another_family_on_the_same_terms():
    Z, rows, y = _archive(0)
    h = Hyperparameters.hamming(np.full(P, 1.0), 1.0, 1e-6)
    fitted = build_mixture([("a", 1.0, h)], Z[rows], y, calibrate=False)
    with pytest.raises(ValueError, match="at least one other family"):
        StructurePosterior(fitted, {})
    small = build_mixture([("b", 1.0, Hyperparameters.hamming(np.full(3, 1.0), 1.0, 1e-6))],
                          Z[rows][:, :3], y, calibrate=False)
    with pytest.raises(ValueError, match="structure family 'g'"):
        StructurePosterior(fitted, {"g": small})


def test_check_structures_normalises_and_refuses_unknown_families():
    assert check_structures(None) == ()
    assert check_structures("graded") == ("graded",)
    assert check_structures(["graded", "graded"]) == ("graded",)
    with pytest.raises(ValueError, match="unknown structure family 'ard'"):
        check_structures("ard")
    with pytest.raises(ValueError, match="structures must be"):
        check_structures(3)


def _three_families(seed: int, names: tuple[str, str], third: Hyperparameters):
    """A smooth fitted kernel, a rough family and ``third`` on one archive: the read-out and the dense posteriors."""
    Z, rows, y = _archive(seed)
    X = Z[rows]
    hypers = [Hyperparameters.hamming(np.full(P, 2.0), 1.3, 1e-6, 0.1),
              Hyperparameters.hamming(np.array([0.1, 0.3, 0.2, 0.5, 0.15]), 0.7, 1e-4, -0.2), third]
    fitted = build_mixture([("a", 1.0, hypers[0])], X, y, calibrate=False)
    others = {name: build_mixture([(name, 1.0, h)], X, y, calibrate=False) for name, h in zip(names, hypers[1:])}
    return StructurePosterior(fitted, others), [_dense_phi(Z, rows, y, h) for h in hypers]


def test_three_families_each_count_one_third_whatever_their_evidence():
    """The floored equal weights: a family is never weighed out (the dense total covariance, M = 3)."""
    post, dense = _three_families(2, ("b", "c"), Hyperparameters.hamming(np.full(P, 0.4), 2.0, 1e-5, 0.0))
    m0 = dense[0][0]
    expected = sum((C + np.outer(m - m0, m - m0)) / 3.0 for m, C in dense)
    np.testing.assert_allclose(post.covariance, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert post.family_weights == pytest.approx({"fitted": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_the_probe_family_holds_half_the_mass_and_the_others_share_the_rest():
    """While the evidence is degenerate the probe (the doubt) weighs 1/2, not 1/M (the dense total covariance)."""
    post, dense = _three_families(4, ("graded", "probe"), Hyperparameters.hamming(np.full(P, 0.3), 1.0, 1e-6, 0.0))
    m0 = dense[0][0]
    weights = (0.25, 0.25, 0.5)  # fitted and graded share the half the probe leaves
    expected = sum(w * (C + np.outer(m - m0, m - m0)) for w, (m, C) in zip(weights, dense))
    np.testing.assert_allclose(post.covariance, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert post.family_weights == pytest.approx({"fitted": 0.25, "graded": 0.25, "probe": 0.5})
    np.testing.assert_allclose(post.mean, m0, rtol=0, atol=1e-9 * np.abs(m0).max())


def test_the_kernels_and_additive_families_are_fitted_on_the_archive():
    """``structure_posterior``: one family per fitted kernel (its MAP alone) and the additive model."""
    from shapleig.gp.index_esp import IndexOperator
    from shapleig.gp.kernel_choice import RefitPlan, fit_kernels
    from shapleig.gp.options import GPOptions
    from shapleig.gp.structure_readout import structure_posterior

    Z, rows, y = _archive(3)
    X = Z[rows]
    options = GPOptions(structures=("kernels", "additive"))
    fits = fit_kernels(X, y, options, seed=0, plan=RefitPlan.cold(), previous=None)
    fitted = build_mixture([(k.kernel, k.weight, k.hyper) for k in fits], X, y, calibrate=True)
    post = structure_posterior(fitted, X, y, np.arange(len(rows)), options, IndexOperator(P), seed=0,
                               kernel_fits=fits)
    names = {f"kernel:{k.kernel}" for k in fits} | {"additive"}
    assert set(post.others) == names
    for k in fits:  # each kernel alone, as the surrogate reads its kernels
        alone = build_mixture([(k.kernel, 1.0, k.hyper)], X, y, calibrate=True)
        np.testing.assert_allclose(post.others[f"kernel:{k.kernel}"].mean, alone.mean, rtol=1e-12)
        np.testing.assert_allclose(post.others[f"kernel:{k.kernel}"].std, alone.std, rtol=1e-12)
    additive = post.others["additive"]
    assert set(additive.weights) <= {"additive", "additive+size"}
    np.testing.assert_allclose(post.mean, fitted.mean, rtol=1e-12)  # the estimate stays the fitted one
    assert structure_posterior(fitted, X, y, np.arange(len(rows)), GPOptions(structures=()), IndexOperator(P),
                               seed=0, kernel_fits=fits) is None
