"""The kernel contract (shapleig/gp/kernels/contract.py): every built-in kernel and the docs' user-defined
``Linear`` kernel pass it, and it catches broken kernels, naming the failing check.

Each broken kernel below is a working one with one promise broken on purpose (a gradient's sign, a
dropped prior term, an asymmetric matrix, an index product, the packing, the twin mapping ...): the
contract must stop it at that check, not pass it and not fail it elsewhere."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from _docs_kernel import Linear, LinearFit

from shapleig.games.indices import index_names
from shapleig.gp.kernels import (
    Additive,
    Graded,
    GradedParams,
    Hamming,
    HammingFit,
    KernelContractError,
    Rough,
    SizeKernel,
    check_kernel,
    surrogate_kernels,
)
from shapleig.gp.kernels.additive import AdditiveFit
from shapleig.gp.kernels.contract import CHECKS, registered_twin
from shapleig.gp.kernels.registry import SURROGATES
from shapleig.gp.priors import sigmoid

P = 5

BUILT_IN = [
    Hamming(ard=False), Hamming(ard=True), Hamming(ard=True, spread=0.5),
    SizeKernel(trend=True, jumps=True), Graded(), Graded(orders=1), Graded(learn_noise=False), Rough(), Additive(),
    Hamming(ard=False) + SizeKernel(trend=True, jumps=False),
    Hamming(ard=True) + SizeKernel(trend=False, jumps=True),
    Hamming(ard=True) + SizeKernel(trend=True, jumps=True) + Rough(),
    Graded() + SizeKernel(trend=True, jumps=True) + Rough(),
    Graded(orders=2) + Additive(),
    Additive() + SizeKernel(trend=True, jumps=False) + Rough(),
    Hamming(ard=False) + Linear(),
    Hamming(ard=True) + Linear() + SizeKernel(trend=True, jumps=True),
]


def _ids(specs: list) -> list[str]:
    return [f"{i}-{s.name}" for i, s in enumerate(specs)]


def registered_specs() -> list:
    """Every kernel a named surrogate mode fits, under every size / jump / rough option (distinct)."""
    out: list = []
    for mode in SURROGATES:
        for jumps in (False, True):
            for rough in (False, True):
                out += [s for s in surrogate_kernels(mode, "both", jumps, rough=rough) if s not in out]
    return out


@pytest.mark.parametrize("spec", BUILT_IN + [Linear()], ids=_ids(BUILT_IN) + ["docs-linear"])
def test_every_kernel_passes_the_contract_for_every_index(spec) -> None:
    """All registered indices, with and without the held-out empty coalition."""
    report = check_kernel(spec, P, seed=1, indices=index_names())
    assert report.kernel == spec.name and report.n_players == P
    assert list(report.checks) + list(report.skipped) == [c for c in CHECKS if c in report.checks or c in report.skipped]
    assert set(report.checks) | set(report.skipped) == set(CHECKS)
    assert all(0.0 <= ratio <= 1.0 for ratio in report.checks.values())
    assert ("twin" in report.checks) == (spec.twin is not None)


def test_every_registered_surrogate_kernel_passes_the_contract() -> None:
    specs = registered_specs()
    assert {"shared", "ard+size", "graded+size", "additive"} <= {s.name for s in specs}
    for spec in specs:
        check_kernel(spec, 4, seed=2)


def test_the_twin_of_a_graded_sum_is_built_from_the_registry() -> None:
    spec = Graded() + SizeKernel(trend=True, jumps=True)
    twin = registered_twin(spec)
    assert twin == (Hamming(ard=False) + SizeKernel(trend=True, jumps=True)).renamed("shared+size")
    assert registered_twin(Graded()) == Hamming(ard=False) and registered_twin(Hamming(ard=True)) is None
    assert check_kernel(spec, 4).checks["twin"] <= 1.0


def test_the_report_is_deterministic_given_the_seed() -> None:
    spec = Hamming(ard=True) + SizeKernel(trend=True, jumps=True)
    assert check_kernel(spec, 4, seed=3) == check_kernel(spec, 4, seed=3)


def test_bad_arguments_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="n_players must be in 1..10"):
        check_kernel(Hamming(ard=False), 11)
    with pytest.raises(TypeError, match="takes a KernelSpec"):
        check_kernel("shared")


# -- broken kernels: each must be stopped at its check -----------------------------------------

class FlippedFit(HammingFit):
    def gradient(self, raw, W, state):
        g = super().gradient(raw, W, state)
        g[0] = -g[0]  # the outputscale's derivative with the wrong sign
        return g


@dataclass(frozen=True)
class FlippedGradient(Hamming):
    def fit_terms(self, X):
        return FlippedFit(X, self.ard, self.spread)


class PriorDroppedFit(HammingFit):
    def gradient(self, raw, W, state):
        dlp = state[3]  # the lengthscales' log-prior derivative, left out of the gradient
        return super().gradient(raw, W, state) + np.concatenate([[0.0], dlp * sigmoid(raw[1:])])


@dataclass(frozen=True)
class PriorDropped(Hamming):
    def fit_terms(self, X):
        return PriorDroppedFit(X, self.ard, self.spread)


class NanFit(HammingFit):
    def gradient(self, raw, W, state):
        return super().gradient(raw, W, state) * np.nan


@dataclass(frozen=True)
class NanGradient(Hamming):
    def fit_terms(self, X):
        return NanFit(X, self.ard, self.spread)


@dataclass(frozen=True)
class Asymmetric(Linear):
    def matrix(self, params, Z1, Z2):
        Z1, Z2 = np.asarray(Z1, dtype=bool), np.asarray(Z2, dtype=bool)
        return super().matrix(params, Z1, Z2) + 1e-6 * (Z1[:, :1] & ~Z2[:, :1].T)


@dataclass(frozen=True)
class Indefinite(Additive):
    def matrix(self, params, Z1, Z2):
        return -super().matrix(params, Z1, Z2)


@dataclass(frozen=True)
class WrongDiagonal(Hamming):
    def diagonal(self, params, Z):
        return super().diagonal(params, Z) * (1.0 + 1e-7)


@dataclass(frozen=True)
class WrongColumn(Hamming):
    def index_columns(self, params, operator, Z):
        cols = super().index_columns(params, operator, Z).copy()
        cols[-1] *= 1.0 + 1e-7  # one term's column off
        return cols


@dataclass(frozen=True)
class IgnoresHoldOut(Additive):
    def index_covariance(self, params, operator):
        return super().index_covariance(params, operator.without_hold_out())


class SlippedUnpack(AdditiveFit):
    def unpack(self, raw):
        params = super().unpack(raw)
        return type(params)(params.variance * 1.001, params.n_players)


@dataclass(frozen=True)
class BrokenUnpack(Additive):
    def fit_terms(self, X):
        return SlippedUnpack(X)


@dataclass(frozen=True)
class MiscountedLinear(Linear):
    def n_params(self, X):
        return 2


class ScaledLinearFit(LinearFit):
    def evaluate(self, raw):  # a fit matrix that is not the kernel's
        K, log_prior, state = super().evaluate(raw)
        return 1.01 * K, log_prior, state


@dataclass(frozen=True)
class FitNotKernel(Linear):
    def fit_terms(self, X):
        return ScaledLinearFit(X)


@dataclass(frozen=True)
class ArrayDescribed(Linear):
    def describe(self, params):
        return {"variance": np.array([params.variance])}


@dataclass(frozen=True)
class WrongTwin(Graded):
    def from_twin(self, params):
        out = super().from_twin(params)
        return GradedParams(out.lengthscales, out.outputscale, np.full(self.orders, 1.5))  # not g = 1


@dataclass(frozen=True)
class UnknownTwin(Graded):
    def nested_twin(self, name):
        return "nowhere"


@dataclass(frozen=True)
class Raises(Linear):
    def index_covariance(self, params, operator):
        raise RuntimeError("not implemented for this operator")


BROKEN = [
    (FlippedGradient(ard=True), "gradient", "FitTerms.gradient against central differences"),
    (PriorDropped(ard=False), "gradient", "FitTerms.gradient against central differences"),
    (Hamming(ard=False) + PriorDropped(ard=True, alias="ard2"), "gradient", "part 'ard2'"),
    (NanGradient(ard=False), "gradient", "the value is not finite"),
    (Asymmetric(), "matrix", "symmetry"),
    (Indefinite(), "matrix", "not positive semi-definite"),
    (WrongDiagonal(ard=True), "matrix", "diagonal"),
    (WrongColumn(ard=False), "index", "index_columns"),
    (IgnoresHoldOut(), "index", "hold_out_empty=True): index_covariance"),
    (BrokenUnpack(), "packing", "pack(unpack(raw)) against raw"),
    (MiscountedLinear(), "packing", "n_params(X) = 2, but the fit learns 1"),
    (FitNotKernel(), "fit", "the fit's matrix"),
    (ArrayDescribed(), "hooks", "not plain (JSON)"),
    (WrongTwin(), "twin", "against its twin 'shared'"),
    (UnknownTwin() + SizeKernel(), "twin", "'nowhere' of part 'graded' is no registered base kernel"),
    (Raises(), "index", "raised RuntimeError: not implemented"),
]


@pytest.mark.parametrize("spec,check,detail", BROKEN, ids=[type(b[0]).__name__ + f"-{i}" for i, b in enumerate(BROKEN)])
def test_a_broken_kernel_is_stopped_at_its_check(spec, check, detail) -> None:
    with pytest.raises(KernelContractError) as caught:
        check_kernel(spec, 4, indices=("SV", "k-SII"))
    error = caught.value
    assert isinstance(error, AssertionError) and error.check == check, str(error)
    assert error.kernel == f"{spec.name!r} ({type(spec).__name__})"
    assert f"kernel {error.kernel} fails the kernel contract's {check!r} check" in str(error)
    assert detail in str(error)


def test_the_broken_kernels_are_otherwise_the_working_ones() -> None:
    """Each broken kernel differs from its base by its one broken promise (the test above is not vacuous
    by construction): the working bases pass, and a broken kernel fails only where it is broken."""
    for base in (Hamming(ard=True), Hamming(ard=False), Linear(), Additive(), Graded()):
        check_kernel(base, 4, indices=("SV", "k-SII"))
    # a broken index product leaves the matrix, fit and gradient checks passing (they run first)
    with pytest.raises(KernelContractError, match="'index' check"):
        check_kernel(WrongColumn(ard=False), 4)
    assert check_kernel(WrongColumn(ard=False), 4, indices=()).skipped == {"twin": "the kernel declares no twin"}

