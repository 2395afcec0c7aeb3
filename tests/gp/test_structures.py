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


def test_a_family_with_a_share_of_its_own_keeps_it_and_the_others_share_the_rest():
    """``shares``: the rough family's evidence weight; fitted and the third family split the rest (dense)."""
    post, dense = _three_families(5, ("b", "rough"), Hyperparameters.hamming(np.full(P, 0.2), 1.0, 1e-6, 0.0))
    post = StructurePosterior(post.fitted, post.others, {"rough": 0.2})
    m0 = dense[0][0]
    weights = (0.4, 0.4, 0.2)
    expected = sum(w * (C + np.outer(m - m0, m - m0)) for w, (m, C) in zip(weights, dense))
    np.testing.assert_allclose(post.covariance, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert post.family_weights == pytest.approx({"fitted": 0.4, "b": 0.4, "rough": 0.2})
    with pytest.raises(ValueError, match="'x', which is not a family"):
        StructurePosterior(post.fitted, post.others, {"x": 0.2})
    with pytest.raises(ValueError, match="shares must be in"):
        StructurePosterior(post.fitted, post.others, {"rough": 1.0})


def test_rough_share_is_the_floored_sigmoid_of_the_density_gap():
    from shapleig.gp.structures import ROUGH_FLOOR, rough_share

    assert ROUGH_FLOOR == 0.05
    assert rough_share(-10.0, -10.0) == pytest.approx(0.5)
    assert rough_share(-11.0, -10.0) == pytest.approx(1.0 / (1.0 + np.exp(-1.0)))  # 0.731: the rough one predicts better
    assert rough_share(-10.0, -12.0) == pytest.approx(1.0 / (1.0 + np.exp(2.0)))  # 0.119
    assert rough_share(-10.0, -40.0) == pytest.approx(0.05)  # far worse: the floor, never 0
    assert rough_share(-400.0, -10.0) == pytest.approx(0.95)  # far better: the rest keeps the floor
    assert rough_share(-np.inf, -10.0) == pytest.approx(0.05)
    assert rough_share(-10.0, -12.0, floor=0.2) == pytest.approx(0.2)


def test_loo_log_density_of_a_mixture_against_explicit_deletions():
    """Each observation's density under the weighted kernels, each refit-free deletion done densely."""
    from shapleig.gp.mixture import loo_log_density

    Z, rows, y = _archive(6)
    X = Z[rows]
    hypers = [Hyperparameters.hamming(np.full(P, 1.5), 1.2, 1e-4, 0.1),
              Hyperparameters.hamming(np.array([0.2, 0.4, 0.3, 0.6, 0.25]), 0.8, 1e-3, -0.1)]
    weights = [0.7, 0.3]
    mix = build_mixture([(f"k{i}", w, h) for i, (w, h) in enumerate(zip(weights, hypers))], X, y, calibrate=False)
    y_tilde, _, _ = standardize(y)
    total = 0.0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        density = 0.0
        for w, h in zip(weights, hypers):
            K = dense_kernel(X, h.lengthscales, h.outputscale) + h.noise * np.eye(len(y))
            c = h.mean_constant
            sol = np.linalg.solve(K[np.ix_(keep, keep)], K[keep, i])
            mean = c + sol @ (y_tilde[keep] - c)
            var = K[i, i] - K[i, keep] @ sol
            density += w * np.exp(-0.5 * (y_tilde[i] - mean) ** 2 / var) / np.sqrt(2 * np.pi * var)
        total += np.log(density)
    assert loo_log_density(mix) == pytest.approx(total, rel=1e-8)


def test_the_rough_family_has_correlation_07_per_player_and_the_likelihood_maximising_outputscale():
    from shapleig.gp.index_esp import IndexOperator
    from shapleig.gp.structure_readout import ROUGH_RELATIVE_NOISE, rough_family

    Z, rows, y = _archive(7)
    X = Z[rows]
    fam = rough_family(X, y, IndexOperator(P), calibrate=False)
    (comp,) = fam.components
    h = comp.posterior.hyper
    # two coalitions differing in d players correlate 0.7 ** d
    K = h.kernel_matrix(Z[[0, 1, 3, 7, 31]], Z[[0]])[:, 0] / h.outputscale
    np.testing.assert_allclose(K, 0.7 ** np.array([0, 1, 2, 3, 5]), rtol=1e-12)
    assert h.noise == pytest.approx(ROUGH_RELATIVE_NOISE * h.outputscale, rel=1e-12)
    y_tilde, _, _ = standardize(y)
    K0 = dense_kernel(X, h.lengthscales, 1.0) + ROUGH_RELATIVE_NOISE * np.eye(len(y))

    def loglik(s):
        sign, logdet = np.linalg.slogdet(s * K0)
        return -0.5 * y_tilde @ np.linalg.solve(s * K0, y_tilde) - 0.5 * logdet

    s = h.outputscale
    assert loglik(s) > loglik(1.1 * s) and loglik(s) > loglik(s / 1.1)
    assert s == pytest.approx(y_tilde @ np.linalg.solve(K0, y_tilde) / len(y), rel=1e-8)
    m, C = _dense_phi(Z, rows, y, h)
    np.testing.assert_allclose(fam.mean, m, rtol=0, atol=1e-9 * np.abs(m).max())
    np.testing.assert_allclose(fam.covariance, C, rtol=0, atol=1e-9 * np.abs(C).max())


def test_the_rough_family_takes_weight_where_the_archive_does_not_generalise():
    """``structure_posterior``: the rough family's share is its evidence, far above the floor on a sum of
    20 unanimity games of random orders (values the archive hardly relates) and at the floor on an
    additive game; never beside the probe."""
    from shapleig.gp.index_esp import IndexOperator
    from shapleig.gp.kernel_choice import RefitPlan, fit_kernels
    from shapleig.gp.options import GPOptions
    from shapleig.gp.structure_readout import structure_posterior

    Z = all_coalitions(P)
    rng = np.random.default_rng(8)
    rows = rng.choice(1 << P, 20, replace=False)
    X = Z[rows]
    options = GPOptions(structures=("rough",))
    shares = {}
    soum = sum(rng.normal() * np.all(X[:, rng.choice(P, k, replace=False)], axis=1) for k in rng.integers(1, P + 1, 20))
    for name, y in (("soum", soum.astype(float)), ("additive", X @ np.array([3.0, 1.0, 0.5, 2.0, 1.5]))):
        fits = fit_kernels(X, y, options, seed=0, plan=RefitPlan.cold(), previous=None)
        fitted = build_mixture([(k.kernel, k.weight, k.hyper) for k in fits], X, y, calibrate=True)
        post = structure_posterior(fitted, X, y, np.arange(rows.size), options, IndexOperator(P), seed=0,
                                   kernel_fits=fits)
        assert set(post.others) == {"rough"}
        shares[name] = post.family_weights["rough"]
        assert post.family_weights["fitted"] == pytest.approx(1.0 - shares[name])
        probe = Hyperparameters.hamming(np.full(P, 0.2), 1.0, 1e-6)
        with_probe = structure_posterior(fitted, X, y, np.arange(rows.size), options, IndexOperator(P), seed=0,
                                         probe=probe, kernel_fits=fits)
        assert set(with_probe.others) == {"probe"}
    assert shares["additive"] == pytest.approx(0.05)
    assert shares["soum"] > 0.3
