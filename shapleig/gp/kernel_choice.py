"""The surrogate chosen from the data: fit the candidate kernels, weigh them by their evidence.

``surrogate="auto"`` (the default) fits Hamming-kernel GPs with one lengthscale shared by all
players and with one per player (ARD); with ``size_trend="both"`` (the default) each of them also
with the size trend of docs/math.md §15, four kernels in all. They are weighed by a BIC
approximation of the log marginal likelihood, ``log p(y | kernel) ~ -t * objective - (d / 2) log t``,
with ``objective`` the MAP objective per observation and ``d`` the kernel's number of
hyperparameters. The shared kernel wins the small budgets, where p lengthscales cannot be
identified from ~2p values; ARD takes over once the data show that a few players dominate; the
trend, a nested alternative, is kept where it buys more than its penalty. ``"ard"`` and
``"shared"`` keep one base kernel. ``"laplace"`` weighs the kernels by a Laplace approximation of
the evidence over the lengthscales (:mod:`shapleig.gp.evidence`), an option (docs/math.md §13).

The fitted kernels are turned into one Shapley posterior, with calibrated uncertainty, by
:func:`shapleig.gp.mixture.build_mixture`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from shapleig.gp.evidence import laplace_log_evidence
from shapleig.gp.fit_result import FitResult
from shapleig.gp.fitting import fit_hyperparameters
from shapleig.gp.kernels import KernelSpec
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters


@dataclass(frozen=True)
class KernelFit:
    """One fitted kernel of a surrogate.

    Attributes:
        kernel: the kernel's name (``"shared"``, ``"ard"``, ``"shared+size"``, ...); its spec is
            ``hyper.kernel``.
        fit: the MAP fit (hyperparameters in standardised units, objective, timings).
        log_evidence: BIC (or Laplace) approximation of ``log p(y | kernel)`` (nats); -inf if the fit
            failed.
        weight: posterior model probability among the surrogate's kernels (sums to 1).
    """

    kernel: str
    fit: FitResult
    log_evidence: float
    weight: float

    @property
    def hyper(self) -> Hyperparameters:
        """The fitted hyperparameters (standardised units), with their kernel spec."""
        return self.fit.hyper


def bic_log_evidence(fit: FitResult, n_obs: int, n_params: int) -> float:
    """``-t * objective - (d/2) log t``; -inf when the fit failed or has no objective.

    Args:
        fit: the MAP fit.
        n_obs: the number of observations t.
        n_params: the number of fitted hyperparameters d.

    Returns:
        the log evidence in nats, or -inf.
    """
    if not fit.success or not np.isfinite(fit.neg_mll):
        return -np.inf
    return float(-n_obs * fit.neg_mll - 0.5 * n_params * np.log(n_obs))


def evidence_weights(log_evidence: np.ndarray) -> np.ndarray:
    """Normalised ``exp(log_evidence)``; uniform if every entry is -inf.

    Args:
        log_evidence: float64[k], log evidences (-inf allowed).

    Returns:
        float64[k] weights summing to 1.
    """
    log_evidence = np.asarray(log_evidence, dtype=np.float64)
    if not np.isfinite(log_evidence).any():
        return np.full(log_evidence.shape, 1.0 / log_evidence.size)
    w = np.exp(log_evidence - np.max(log_evidence[np.isfinite(log_evidence)]))
    w[~np.isfinite(w)] = 0.0
    return w / w.sum()


# Warm refits of a kernel whose weight was below LAZY_WEIGHT run at most LAZY_ITERATIONS L-BFGS-B
# iterations: with 4 kernels (size_trend="both") most refits go to kernels the evidence rules out.
LAZY_WEIGHT = 1e-4
LAZY_ITERATIONS = 2


@dataclass(frozen=True)
class RefitPlan:
    """How one refit of the loop fits its kernels (decided per refit by the loop and its schedule).

    Attributes:
        warm: start each kernel from its previous fit (``previous`` of :func:`fit_kernels`).
        cold_check: with ``warm``: also fit each kernel from its initial values and keep the lower objective
            (a warm start cannot then stay in a basin the data have left).
        warm_options: L-BFGS-B options of the warm-started fits (the cold check keeps scipy's).
        lazy_cold_check: skip the cold check of kernels the evidence all but ruled out.
    """

    warm: bool
    cold_check: bool
    warm_options: dict | None
    lazy_cold_check: bool

    @classmethod
    def cold(cls) -> "RefitPlan":
        """Every kernel from its initial values at scipy's tolerances (a one-off fit).

        Returns:
            a plan without warm starts.
        """
        return cls(warm=False, cold_check=False, warm_options=None, lazy_cold_check=False)


def fit_kernels(
    X: np.ndarray,
    y: np.ndarray,
    options: GPOptions,
    *,
    seed: int,
    plan: RefitPlan,
    previous: list[KernelFit] | None,
) -> list[KernelFit]:
    """Fit every kernel of ``options.surrogate`` to ``X`` (bool[t, p]), ``y`` (float64[t]); return them weighted.

    The kernels are ``options.kernels`` (named modes and ``size_trend`` / ``jumps``, or the specs
    given), fitted by ``options.fit_engine`` with ``options.noise`` under ``options.noise_convention``
    and weighed by ``options.evidence``. ``previous`` (the last fits, or None) serve as fallbacks when
    a fit fails and as warm starts when ``plan.warm``. A warm fit of a kernel whose previous weight
    was below :data:`LAZY_WEIGHT` runs at most :data:`LAZY_ITERATIONS` iterations; a cold check fits
    it in full unless ``plan.lazy_cold_check`` (then it is skipped for such kernels). The i-th
    kernel's fit is seeded with ``seed + i``.

    Args:
        X: ``bool[t, p]`` coalitions.
        y: ``float64[t]`` raw values.
        options: the GP options (the surrogate's kernels, noise, engine).
        seed: the base seed (the i-th kernel's fit gets ``seed + i``).
        plan: how this refit starts and checks its fits.
        previous: the previous refit's fits (fallbacks and warm starts), or None.

    Returns:
        one :class:`KernelFit` per kernel, in ``options.kernels`` order, with evidence weights.
    """
    t = X.shape[0]
    specs = options.kernels
    prev = {k.kernel: k.hyper for k in previous or ()}
    prev_weight = {k.kernel: k.weight for k in previous or ()}
    fits: list[FitResult] = []
    evidence: list[float] = []
    for i, spec in enumerate(specs):
        name = spec.name
        warm = prev.get(name) if plan.warm else None
        fit_options = plan.warm_options if warm is not None else None
        lazy = warm is not None and prev_weight.get(name, 1.0) < LAZY_WEIGHT and (plan.lazy_cold_check
                                                                                 or not plan.cold_check)
        if lazy:
            # a kernel the evidence all but rules out is only nudged (its evidence stays current);
            # the next full cold check fits it properly again
            fit_options = {**(fit_options or {}), "maxiter": LAZY_ITERATIONS}
        fit = fit_hyperparameters(X, y, spec, options, seed=int(seed) + i, init=warm,
                                  fallback=prev.get(name), optimizer_options=fit_options)
        if plan.cold_check and plan.warm and prev.get(name) is not None and not lazy:
            cold = fit_hyperparameters(X, y, spec, options, seed=int(seed) + i, init=None,
                                       fallback=prev.get(name), optimizer_options=None)
            fit = _better_fit(fit, cold)
        # with the cold fits only (a warm fit starts from the last refit's MAP of this kernel already)
        start_from = twin_start(spec, specs[:i], fits) if (plan.cold_check or not plan.warm) and not lazy \
            else None
        if start_from is not None:
            # the kernel holds its twin as a special case (the graded kernel at g = 1 is the shared
            # one): also fit it from the twin's MAP and keep the better objective (from the prior's
            # mode it can settle in a poorer mode, e.g. a long lengthscale and free orders absorbing the rest)
            alt = fit_hyperparameters(X, y, spec, options, seed=int(seed) + i, init=start_from,
                                      fallback=prev.get(name), optimizer_options=None)
            fit = _better_fit(fit, alt)
        fits.append(fit)
        if options.evidence == "laplace" and fit.success and np.isfinite(fit.neg_mll):
            evidence.append(laplace_log_evidence(X, y, fit.hyper))
        else:
            # the mean constant and the kernel's fitted hyperparameters (the noise is fixed)
            evidence.append(bic_log_evidence(fit, t, 1 + spec.n_params(X)))
    weights = evidence_weights(np.asarray(evidence)) if len(fits) > 1 else np.ones(1)
    return [KernelFit(spec.name, fit, float(ev), float(w)) for spec, fit, ev, w in zip(specs, fits, evidence, weights)]


def _better_fit(fit: FitResult, other: FitResult) -> FitResult:
    """The better of ``fit`` and a second fit ``other`` of the same kernel, timed as both together.

    ``other`` wins when it succeeded and ``fit`` failed or has the larger objective; the result's
    ``seconds`` is the sum of both fits' seconds.
    """
    best = other if other.success and (not fit.success or other.neg_mll < fit.neg_mll) else fit
    return replace(best, seconds=other.seconds + fit.seconds)


def twin_start(spec: KernelSpec, fitted_specs: list[KernelSpec], fits: list[FitResult]) -> Hyperparameters | None:
    """Hyperparameters of ``spec`` at the MAP of its twin (:attr:`~shapleig.gp.kernels.spec.KernelSpec.twin`).

    The twin is the kernel ``spec`` holds as a special case, fitted before it in this refit; its
    params map through :meth:`~shapleig.gp.kernels.spec.KernelSpec.from_twin`, noise and mean
    constant kept. None when ``spec`` has no twin, the twin was not fitted (or failed), or its params
    do not map.

    Args:
        spec: the kernel about to be fitted.
        fitted_specs: the kernels fitted before it in this refit.
        fits: their fits, aligned with ``fitted_specs``.

    Returns:
        the warm start, or None.
    """
    twin = spec.twin
    if twin is None:
        return None
    for other, fit in zip(fitted_specs, fits):
        if other.name != twin or not fit.success:
            continue
        params = spec.from_twin(fit.hyper.params)
        return None if params is None else Hyperparameters(spec, params, fit.hyper.noise, fit.hyper.mean_constant)
    return None


def primary_per_player(kernels: list[KernelSpec], name: str) -> bool:
    """Whether the kernel named ``name`` among ``kernels`` has one lengthscale per player (:attr:`KernelSpec.per_player`).

    Args:
        kernels: the surrogate's kernel specs (``options.kernels``).
        name: a kernel's name in results (e.g. the heaviest fit's).

    Returns:
        its ``per_player``; False when no kernel has that name.
    """
    return any(spec.per_player for spec in kernels if spec.name == name)
