"""Kernel specs (shapleig/gp/kernels/): composition with ``+`` against dense 2^p references written
from the definitions, the MAP objective of a sum (value and gradient), the registry, and the worked
example of docs/architecture.md §5 (a user-defined kernel) run through ShaplEIG. The checks every
kernel passes on its own (routes, gradients, packing, index products against the dense operator,
twins) are the kernel contract, run on every kernel in tests/gp/test_kernel_contract.py."""

from __future__ import annotations

import numpy as np
import pytest
from _dense_reference import dense_kernel, dense_surrogate_kernel
from _docs_kernel import Linear, LinearParams

from shapleig.games.coalitions import all_coalitions
from shapleig.gp import kernels as kernel_registry
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels import (
    Hamming,
    HammingParams,
    SizeKernel,
    SizeParams,
    register_kernel,
    surrogate_kernels,
)
from shapleig.gp.kernels.additive import Additive, AdditiveParams
from shapleig.gp.kernels.rough import Rough, RoughParams
from shapleig.gp.kernels.spec import DENSE_MAX_PLAYERS, KernelSpec, SumKernel
from shapleig.gp.numpy_fit import MapProblem
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior, standardize


def dense_linear(Z: np.ndarray, variance: float) -> np.ndarray:
    """``variance * mean_j s_j s'_j`` with s = 2z - 1, entry by entry (not the spec's product form)."""
    p = Z.shape[1]
    out = np.zeros((Z.shape[0], Z.shape[0]))
    for j in range(p):
        s = np.where(Z[:, j], 1.0, -1.0)
        out += np.equal.outer(s, s) * 2.0 - 1.0
    return variance * out / p


def random_params(spec: KernelSpec, p: int, rng: np.random.Generator):
    """Random valid params of ``spec`` (parts in order)."""
    if isinstance(spec, SumKernel):
        return tuple(random_params(part, p, rng) for part in spec.parts)
    if isinstance(spec, Hamming):
        ls = rng.uniform(0.1, 3.0, p) if spec.ard else np.full(p, rng.uniform(0.1, 3.0))
        return HammingParams(ls, float(rng.uniform(0.5, 2.0)))
    if isinstance(spec, SizeKernel):
        jumps = rng.uniform(0.1, 1.0, 2) if spec.jumps else (0.0, 0.0)
        if not spec.trend:  # no trend: its lengthscale is no coordinate and stays at the default
            return SizeParams(*jumps)
        return SizeParams(*jumps, float(rng.uniform(0.2, 1.0)), float(rng.uniform(0.2, 1.0)))
    if isinstance(spec, Linear):
        return LinearParams(float(rng.uniform(0.2, 1.5)))
    if isinstance(spec, Rough):
        return RoughParams(float(rng.uniform(0.05, 0.5)))
    if isinstance(spec, Additive):
        return AdditiveParams(float(rng.uniform(0.2, 1.5)), p)
    raise TypeError(spec)


def dense_part(spec: KernelSpec, params, Z: np.ndarray) -> np.ndarray:
    """One part's kernel over the rows of ``Z``, from the definitions (tests/_dense_reference.py)."""
    if isinstance(spec, Hamming):
        return dense_kernel(Z, params.lengthscales, params.outputscale)
    if isinstance(spec, SizeKernel):
        plain = Hyperparameters(Hamming(ard=True) + spec, (HammingParams(np.ones(Z.shape[1]), 1.0), params), 1e-6)
        return dense_surrogate_kernel(Z, plain) - dense_kernel(Z, np.ones(Z.shape[1]), 1.0)
    if isinstance(spec, Linear):
        return dense_linear(Z, params.variance)
    if isinstance(spec, Rough):  # white noise: r on the diagonal of distinct coalitions, 0 elsewhere
        same = np.array([[np.array_equal(a, b) for b in Z] for a in Z])
        return params.variance * same
    if isinstance(spec, Additive):  # a * mean_j s_j s'_j with s = 2z - 1 (the docs' Linear kernel)
        return dense_linear(Z, params.variance)
    raise TypeError(spec)


SUMS = [
    Hamming(ard=False) + SizeKernel(trend=True, jumps=False),
    Hamming(ard=True) + SizeKernel(trend=False, jumps=True),
    Hamming(ard=True) + SizeKernel(trend=True, jumps=True),
    Hamming(ard=False) + Linear(),
    Hamming(ard=True) + Linear() + SizeKernel(trend=True, jumps=True),
    Hamming(ard=False) + Rough(),
    Hamming(ard=True) + SizeKernel(trend=True, jumps=True) + Rough(),
    Additive() + Rough(),
    Additive() + SizeKernel(trend=True, jumps=False) + Rough(),
]


def _ids(specs):
    return [f"{i}-{s.name}" + "".join(f"-trend{q.trend:d}-jumps{q.jumps:d}" for q in s.parts if isinstance(q, SizeKernel))
            for i, s in enumerate(specs)]


# -- composition -------------------------------------------------------------------------------

def test_plus_flattens_and_names() -> None:
    spec = Hamming(ard=False) + SizeKernel(trend=True) + Linear()
    assert isinstance(spec, SumKernel) and len(spec.parts) == 3
    assert spec.name == "shared+size+linear" and spec.renamed("mine").name == "mine"
    assert (Hamming(ard=False) + (SizeKernel() + Linear())).parts == spec.parts
    assert spec == Hamming(ard=False) + SizeKernel(trend=True) + Linear() and hash(spec) == hash(spec.renamed(None))
    with pytest.raises(TypeError):
        SumKernel((Hamming(ard=True), "size"))


@pytest.mark.parametrize("spec", SUMS, ids=_ids(SUMS))
def test_sum_matrix_and_diagonal_are_the_sums_of_the_parts_and_match_dense(spec: SumKernel) -> None:
    """The sum against the parts' definitions (the other routes of the matrix, the diagonal and the index
    products against this matrix: the kernel contract, tests/gp/test_kernel_contract.py)."""
    p = 5
    rng = np.random.default_rng(len(spec.parts))
    params = random_params(spec, p, rng)
    Z = all_coalitions(p)
    K = spec.matrix(params, Z, Z)
    dense = sum(dense_part(part, prm, Z) for part, prm in zip(spec.parts, params))
    np.testing.assert_allclose(K, dense, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(K, sum(part.matrix(prm, Z, Z) for part, prm in zip(spec.parts, params)),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(spec.diagonal(params, Z), sum(part.diagonal(prm, Z) for part, prm in
                                                              zip(spec.parts, params)), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("index,hold_out_empty", [("SV", False), ("k-SII", True), ("FSII", False)])
@pytest.mark.parametrize("spec", SUMS, ids=_ids(SUMS))
def test_a_sums_index_products_are_the_sums_of_its_parts(spec: SumKernel, index: str, hold_out_empty: bool) -> None:
    """(Every kernel's index products against the dense operator times its matrix: the kernel contract.)"""
    p = 5
    params = random_params(spec, p, np.random.default_rng(3))
    op = IndexOperator(p, index, hold_out_empty=hold_out_empty)
    Z = all_coalitions(p)
    cols = spec.index_columns(params, op, Z)
    M = spec.index_covariance(params, op)
    np.testing.assert_allclose(cols, sum(part.index_columns(prm, op, Z) for part, prm in zip(spec.parts, params)),
                               rtol=1e-13, atol=1e-15 * np.abs(cols).max())
    np.testing.assert_allclose(M, sum(part.index_covariance(prm, op) for part, prm in zip(spec.parts, params)),
                               rtol=1e-12, atol=1e-14 * np.abs(M).max())
    np.testing.assert_array_equal(M, M.T)


def test_a_zero_part_is_skipped_exactly() -> None:
    """A size part with zero variances leaves every product bit for bit the Hamming kernel's (the
    fixture of tests/design/test_same_results.py depends on it)."""
    p = 6
    rng = np.random.default_rng(0)
    ham = HammingParams(rng.uniform(0.2, 2.0, p), 1.3)
    plain = Hyperparameters(Hamming(ard=True), ham, 1e-6, 0.2)
    summed = Hyperparameters(Hamming(ard=True) + SizeKernel(trend=False, jumps=True), (ham, SizeParams()), 1e-6, 0.2)
    Z = all_coalitions(p)
    X, y = Z[rng.choice(1 << p, 20, replace=False)], rng.normal(size=20)
    for op in (IndexOperator(p, "SV"), IndexOperator(p, "k-SII", hold_out_empty=True)):
        np.testing.assert_array_equal(summed.index_covariance(op), plain.index_covariance(op))
        np.testing.assert_array_equal(summed.index_columns(op, Z), plain.index_columns(op, Z))
    a, b = ShapleyPosterior(plain, X, y), ShapleyPosterior(summed, X, y)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.covariance, b.covariance)
    np.testing.assert_array_equal(a.candidates(Z).eig(), b.candidates(Z).eig())


def test_the_dense_fallback_is_for_small_p_only() -> None:
    p = DENSE_MAX_PLAYERS + 1
    spec = Hamming(ard=False) + Linear()
    params = (HammingParams(np.ones(p), 1.0), LinearParams(0.5))
    with pytest.raises(ValueError, match=r"kernel 'linear' \(Linear\) has no closed-form index products.*p <= 10"):
        spec.index_covariance(params, IndexOperator(p, "SV"))
    # the Hamming part alone has closed forms at any p
    assert Hamming(ard=False).index_covariance(params[0], IndexOperator(p, "SV")).shape == (p, p)


# -- fitting -------------------------------------------------------------------------------------

def _archive(p: int, t: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Z = all_coalitions(p)
    idx = np.concatenate([[0, (1 << p) - 1], rng.choice(np.arange(1, (1 << p) - 1), t - 2, replace=False)])
    X = Z[idx]
    y = X @ rng.normal(size=p) + 0.5 * X[:, 0] * X[:, 1] + 0.3 * np.sqrt(X.sum(axis=1))
    return X, standardize(y)[0]


# every part type in one sum: each part's gradient is the kernel contract's; here the MAP objective
# that assembles them (mean constant, Cholesky, the sum's coordinates)
MAP_SPECS = [Hamming(ard=True, spread=0.5) + Linear() + SizeKernel(trend=True, jumps=True) + Rough(),
             Additive() + SizeKernel(trend=True, jumps=False) + Rough()]


@pytest.mark.parametrize("spec", MAP_SPECS, ids=_ids(MAP_SPECS))
def test_the_gradient_of_the_map_objective_matches_finite_differences(spec: KernelSpec) -> None:
    X, y = _archive(6, 24, 1)
    problem = MapProblem.build(spec, X, y, 1e-4)
    assert problem.n_params == 1 + spec.n_params(X) == 1 + sum(part.n_params(X) for part in spec.parts)
    theta = np.random.default_rng(2).normal(scale=0.5, size=problem.n_params)
    _, g = problem.objective(theta)
    h = 1e-6
    fd = np.array([(problem.objective(theta + h * e, grad=False)[0] - problem.objective(theta - h * e, grad=False)[0])
                   / (2 * h) for e in np.eye(problem.n_params)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("spec", MAP_SPECS, ids=_ids(MAP_SPECS))
def test_the_map_problem_packs_the_mean_and_every_part(spec: KernelSpec) -> None:
    p = 6
    X, y = _archive(p, 20, 3)
    problem = MapProblem.build(spec, X, y, 1e-6)
    params = random_params(spec, p, np.random.default_rng(4))
    mean, back = problem.unpack(problem.pack(0.7, params))
    assert mean == 0.7
    for got, want in zip(back, params):
        for name in vars(want):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-10)


def test_the_objective_is_the_dense_negative_log_joint() -> None:
    """The MAP objective of a sum at its parts' values equals -log N(y; c, K + noise I) computed from
    the dense kernel (priors: the Hamming lengthscales' LogNormal and the trend's, flat elsewhere)."""
    p = 5
    X, y = _archive(p, 16, 5)
    spec = Hamming(ard=True) + Linear() + SizeKernel(trend=False, jumps=True)
    params = random_params(spec, p, np.random.default_rng(6))
    problem = MapProblem.build(spec, X, y, 1e-4)
    value, _ = problem.objective(problem.pack(0.3, params), grad=False)
    K = sum(dense_part(part, prm, X) for part, prm in zip(spec.parts, params)) + 1e-4 * np.eye(X.shape[0])
    r = y - 0.3
    nll = 0.5 * r @ np.linalg.solve(K, r) + 0.5 * np.linalg.slogdet(K)[1] + 0.5 * len(y) * np.log(2 * np.pi)
    ham = Hamming(ard=True).fit_terms(X)
    assert value * len(y) == pytest.approx(nll - ham.log_prior(params[0].lengthscales)[0], rel=1e-10)


# -- hyperparameters and the registry ---------------------------------------------------------

def test_hyperparameters_are_structured_and_checked_against_their_spec() -> None:
    ham = HammingParams(np.array([0.5, 1.0, 2.0]), 1.3)
    spec = Hamming(ard=True) + SizeKernel(trend=True)
    h = Hyperparameters(spec, (ham, SizeParams(variance=0.4, lengthscale=0.3)), 1e-6, 0.1)
    assert h.n_players == 3 and h.outputscale == 1.3 and h.part(SizeParams).variance == 0.4 and h.part(HammingParams) is ham
    assert h == Hyperparameters(spec, (HammingParams([0.5, 1.0, 2.0], 1.3), SizeParams(0.0, 0.0, 0.4, 0.3)), 1e-6, 0.1)
    assert hash(h) == hash(Hyperparameters(spec, h.params, 1e-6, 0.1)) and h != h.with_noise(1e-3)
    assert h.describe()["size_kernel"]["size_variance"] == 0.4 and h.describe()["mean_constant"] == 0.1
    with pytest.raises(ValueError, match="one per part"):
        Hyperparameters(spec, ham, 1e-6)
    with pytest.raises(ValueError, match="HammingParams"):
        Hyperparameters(Hamming(ard=True), SizeParams(), 1e-6)
    with pytest.raises(ValueError, match="how many players"):
        Hyperparameters(SizeKernel(), SizeParams(variance=0.5), 1e-6)
    with pytest.raises(ValueError, match="noise"):
        Hyperparameters(Hamming(ard=True), ham, -1.0)


@pytest.mark.parametrize("trend", [False, True, "both"])
@pytest.mark.parametrize("jumps", [False, True])
def test_surrogate_modes_are_lists_of_specs_named_as_before(trend, jumps) -> None:
    specs = surrogate_kernels("auto", trend, jumps)
    names = [s.name for s in specs]
    assert names == (["shared", "shared+size", "ard", "ard+size"] if trend == "both" else ["shared", "ard"])
    for s in specs:
        ham = s.parts[0]
        assert isinstance(ham, Hamming) and ham.ard == s.name.startswith("ard")
        size = [q for q in s.parts if isinstance(q, SizeKernel)]
        has_trend = trend is True or (trend == "both" and s.name.endswith("+size"))
        assert (size[0].trend if size else False) == has_trend
        assert (size[0].jumps if size else False) == jumps
    assert surrogate_kernels("ard", False, False) == [Hamming(ard=True)]
    mine = Hamming(ard=False) + Linear()
    assert surrogate_kernels(mine, trend, jumps) == [mine]  # a spec is fitted as given


def test_register_kernel_adds_a_named_mode(monkeypatch) -> None:
    from shapleig import ShaplEIG

    monkeypatch.setattr(kernel_registry, "BASE_KERNELS", dict(kernel_registry.BASE_KERNELS))
    monkeypatch.setattr(kernel_registry, "SURROGATES", dict(kernel_registry.SURROGATES))
    register_kernel("shared+lin", Hamming(ard=False) + Linear())
    assert [k.name for k in surrogate_kernels("shared+lin", "both", False)] == ["shared+lin", "shared+lin+size"]
    assert ShaplEIG.from_options(surrogate="shared+lin", size_trend=False).options.kernels[0].parts[1] == Linear()
    with pytest.raises(ValueError, match="unknown surrogate"):
        ShaplEIG(surrogate="rbf")


def test_the_docs_kernel_runs_through_shapleig_and_estimates_an_additive_game() -> None:
    """The worked example's kernel as the surrogate: an additive game is estimated exactly (its
    Linear part describes it), with kernel names as given, and its Shapley columns equal the closed
    form ``A k_lin(., z) = (2 variance / p) (2 z - 1)`` (A (2 z_j - 1) = 2 e_j, docs/math.md §2)."""
    from shapleig import FunctionGame, ShaplEIG

    p = 6
    params = LinearParams(0.8)
    Z = all_coalitions(p)
    cols = Linear().index_columns(params, IndexOperator(p, "SV"), Z[:9])
    np.testing.assert_allclose(cols, (2 * 0.8 / p) * (2.0 * Z[:9].T - 1.0), rtol=1e-12, atol=1e-15)
    w = np.arange(1.0, p + 1)
    est = ShaplEIG(surrogate=Hamming(ard=False) + Linear()).estimate(FunctionGame(lambda Z: Z @ w, p), 14, seed=0)
    assert list(est.info["kernel_weights"]) == ["shared+linear"] and est.info["surrogate"] == "shared+linear"
    np.testing.assert_allclose(est.values, w, atol=1e-4)
    both = ShaplEIG(surrogate=[Hamming(ard=False), Hamming(ard=False) + Linear()]).estimate(
        FunctionGame(lambda Z: Z @ w, p), 14, seed=0)
    assert both.info["surrogate"] == ["shared", "shared+linear"] and set(both.info["kernel_weights"]) <= {
        "shared", "shared+linear"}


@pytest.mark.parametrize("trend", [False, "both"])
@pytest.mark.parametrize("jumps", [False, True])
def test_rough_both_pairs_each_kernel_with_its_rough_twin(trend, jumps) -> None:
    plain = surrogate_kernels("auto", trend, jumps, False)
    rough = surrogate_kernels("auto", trend, jumps, True)
    both = surrogate_kernels("auto", trend, jumps, "both")
    assert [s.name for s in both] == [n for s in plain for n in (s.name, f"{s.name}+rough")]
    assert both[0::2] == plain  # the kernels without the rough part, unchanged
    for with_part, expected in zip(both[1::2], rough):
        assert sum(isinstance(q, Rough) for q in with_part.parts) == 1
        assert with_part.parts == expected.parts  # the rough=True kernel under its "+rough" name
    # a kernel that carries its own rough part is not doubled
    additive = surrogate_kernels("additive", False, False, "both")
    assert [s.name for s in additive] == [s.name for s in surrogate_kernels("additive", False, False, False)]
    with pytest.raises(ValueError, match="rough must be True, False, 'both' or 'auto'"):
        surrogate_kernels("auto", trend, jumps, "always")


def test_rough_both_lets_the_evidence_choose_the_rough_part() -> None:
    """Nested alternatives weighed by BIC: the rough twins take the weight on a game with independent
    variation per coalition, the plain kernels on a smooth (additive) game."""
    from shapleig.gp.kernel_choice import RefitPlan, fit_kernels
    from shapleig.gp.options import GPOptions

    rng = np.random.default_rng(3)
    p = 7
    X = all_coalitions(p)[rng.permutation(2**p)[:96]]
    smooth = X @ np.linspace(0.5, 2.0, p)
    options = GPOptions(surrogate="shared", size_trend=False, rough="both")
    for y, rough_wins in ((smooth, False), (smooth + rng.normal(0.0, 1.0, len(X)), True)):
        fits = fit_kernels(X, y, options, seed=0, plan=RefitPlan.cold(), previous=None)
        weights = {k.kernel: k.weight for k in fits}
        assert set(weights) == {"shared", "shared+rough"}
        assert (weights["shared+rough"] > 0.9) is rough_wins and (weights["shared"] > 0.9) is not rough_wins, weights
