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
from shapleig.gp.fitting import fit_hyperparameters
from shapleig.gp.posterior import Hyperparameters
from shapleig.gp.priors import DEFAULT_FIT_ENGINE, FitResult

SURROGATES = ("auto", "laplace", "shared", "ard")
# Kernels fitted per surrogate mode: name -> ard flag.
_BOTH = (("shared", False), ("ard", True))
_KERNELS = {"auto": _BOTH, "laplace": _BOTH, "shared": (("shared", False),), "ard": (("ard", True),)}


def check_surrogate(surrogate: str) -> str:
    """Validate a surrogate mode name (``"auto"``, ``"laplace"``, ``"shared"`` or ``"ard"``)."""
    if surrogate not in SURROGATES:
        raise ValueError(f"unknown surrogate {surrogate!r}; choose one of {SURROGATES}")
    return surrogate


def resolve_surrogate(surrogate: str | None, ard: bool | None) -> str:
    """The surrogate mode from the two ways of asking for it (``ard`` is the older switch).

    ``ard=True`` means ``"ard"``, ``ard=False`` means ``"shared"``; giving both with different
    meanings is an error. Neither gives the default ``"auto"``.
    """
    if ard is not None and not isinstance(ard, (bool, np.bool_)):
        raise ValueError(f"ard must be True (one lengthscale per player) or False (one shared), got {ard!r}")
    from_ard = None if ard is None else ("ard" if ard else "shared")
    if surrogate is None:
        return from_ard or "auto"
    check_surrogate(surrogate)
    if from_ard is not None and from_ard != surrogate:
        raise ValueError(f"surrogate={surrogate!r} contradicts ard={ard!r}; give one of the two")
    return surrogate


def surrogate_ard(surrogate: str) -> bool | None:
    """The ``ard`` switch equivalent to a surrogate mode: True (ARD), False (shared), None (auto)."""
    return {"ard": True, "shared": False}.get(check_surrogate(surrogate))


@dataclass(frozen=True)
class KernelFit:
    """One fitted kernel of a surrogate mode.

    kernel:      ``"shared"`` or ``"ard"``.
    fit:         the MAP fit (hyperparameters in standardised units, objective, timings).
    log_evidence: BIC approximation of ``log p(y | kernel)`` (nats); -inf if the fit failed.
    weight:      posterior model probability among the mode's kernels (sums to 1).
    """

    kernel: str
    fit: FitResult
    log_evidence: float
    weight: float

    @property
    def hyper(self) -> Hyperparameters:
        return self.fit.hyper


def n_hyperparameters(n_players: int, ard: bool, n_size: int = 0) -> int:
    """Fitted hyperparameters of a kernel: lengthscales (p or 1), outputscale, mean constant and
    the ``n_size`` parameters of the size kernel (docs/math.md §15)."""
    return (n_players if ard else 1) + 2 + int(n_size)


def n_extremes(X: np.ndarray) -> int:
    """How many of the two extreme coalitions (∅, N) the archive ``X`` (bool[t, p]) holds."""
    X = np.asarray(X, dtype=bool)
    return int((~X.any(axis=1)).any()) + int(X.all(axis=1).any())


def bic_log_evidence(fit: FitResult, n_obs: int, n_params: int) -> float:
    """``-t * objective - (d/2) log t``; -inf when the fit failed or has no objective."""
    if not fit.success or not np.isfinite(fit.neg_mll):
        return -np.inf
    return float(-n_obs * fit.neg_mll - 0.5 * n_params * np.log(n_obs))


def evidence_weights(log_evidence: np.ndarray) -> np.ndarray:
    """Normalised ``exp(log_evidence)``; uniform if every entry is -inf."""
    log_evidence = np.asarray(log_evidence, dtype=np.float64)
    if not np.isfinite(log_evidence).any():
        return np.full(log_evidence.shape, 1.0 / log_evidence.size)
    w = np.exp(log_evidence - np.max(log_evidence[np.isfinite(log_evidence)]))
    w[~np.isfinite(w)] = 0.0
    return w / w.sum()


SIZE_TRENDS = (True, False, "both")
# Warm refits of a kernel whose weight was below LAZY_WEIGHT run at most LAZY_ITERATIONS L-BFGS-B
# iterations: with 4 kernels (size_trend="both") most refits go to kernels the evidence rules out.
LAZY_WEIGHT = 1e-4
LAZY_ITERATIONS = 2


def check_size_trend(size_trend: bool | str) -> bool | str:
    """``size_trend``: False (no trend), True (every kernel with the trend) or ``"both"`` (each kernel
    with and without it, weighed by evidence: the trend is a nested alternative, docs/math.md §15)."""
    if isinstance(size_trend, (bool, np.bool_)):
        return bool(size_trend)
    if size_trend != "both":
        raise ValueError(f"size_trend must be True, False or 'both', got {size_trend!r}")
    return size_trend


def kernel_specs(surrogate: str, size_trend: bool | str = False) -> list[tuple[str, bool, bool]]:
    """The kernels a surrogate mode fits: ``(name, ard, with the size trend)``, in fitting order.

    With ``size_trend="both"`` every kernel of the mode comes twice, the plain one first (its name)
    and the one with the trend (its name + ``"+size"``); with True only the latter, named as the
    plain one (the trend is then simply part of the kernel).
    """
    check_surrogate(surrogate)
    trend = check_size_trend(size_trend)
    out: list[tuple[str, bool, bool]] = []
    for name, ard in _KERNELS[surrogate]:
        if trend == "both":
            out += [(name, ard, False), (f"{name}+size", ard, True)]
        else:
            out.append((name, ard, bool(trend)))
    return out


def fit_kernels(
    X: np.ndarray,
    y: np.ndarray,
    surrogate: str,
    *,
    seed: int,
    noise: float,
    noise_convention: str,
    previous: list[KernelFit] | None = None,
    warm_start: bool = False,
    engine: str = DEFAULT_FIT_ENGINE,
    cold_check: bool = False,
    jumps: bool = False,
    size_trend: bool | str = False,
    warm_options: dict | None = None,
    lazy_cold_check: bool = False,
) -> list[KernelFit]:
    """Fit every kernel of ``surrogate`` to ``X`` (bool[t, p]), ``y`` (float64[t]); return them weighted.

    ``previous`` (the last fits) serve as fallbacks when a fit fails and as warm starts when
    ``warm_start``. ``engine`` picks
    the fitting engine of :func:`~shapleig.gp.fitting.fit_hyperparameters` when it offers several.
    ``cold_check`` (with ``warm_start``): also fit each kernel from the docs/math.md §3 initial
    values and keep whichever of the two reaches the lower objective (a warm start cannot then
    stay stuck in a basin the data have left). ``jumps``: every kernel also fits the size kernel's
    jumps at the extremes in the archive; ``size_trend``: its trend in the size (True), or every
    kernel with and without it (``"both"``, :func:`kernel_specs`; docs/math.md §15).
    ``warm_options``: optimiser options of the warm-started fits (the cold check keeps the defaults).
    A warm fit of a kernel whose previous weight was below :data:`LAZY_WEIGHT` runs at most
    :data:`LAZY_ITERATIONS` iterations; a cold check fits it in full unless ``lazy_cold_check``
    (then it is skipped for such kernels).
    """
    t, p = X.shape
    specs = kernel_specs(surrogate, size_trend)
    n_jumps = n_extremes(X) if jumps else 0
    prev = {k.kernel: k.hyper for k in previous or ()}
    prev_weight = {k.kernel: k.weight for k in previous or ()}
    fits: list[FitResult] = []
    evidence: list[float] = []
    base = {} if engine is None else {"engine": engine}
    for i, (name, ard, trend) in enumerate(specs):
        extra = dict(base)
        if jumps or trend:
            extra.update(jumps=bool(jumps), size_trend=trend)
        warm = prev.get(name) if warm_start else None
        options = warm_options if warm is not None else None
        lazy = warm is not None and prev_weight.get(name, 1.0) < LAZY_WEIGHT and (lazy_cold_check or not cold_check)
        if lazy:
            # a kernel the evidence all but rules out is only nudged (its evidence stays current);
            # the next full cold check fits it properly again
            options = {**(options or {}), "maxiter": LAZY_ITERATIONS}
        fit = fit_hyperparameters(
            X, y, seed=int(seed) + i, noise=noise, noise_convention=noise_convention,
            warm_start=warm, fallback=prev.get(name), threads=None, ard=ard,
            optimizer_options=options, **extra,
        )
        if cold_check and warm_start and prev.get(name) is not None and not lazy:
            cold = fit_hyperparameters(
                X, y, seed=int(seed) + i, noise=noise, noise_convention=noise_convention,
                warm_start=None, fallback=prev.get(name), threads=None, ard=ard, **extra,
            )
            if cold.success and (not fit.success or cold.neg_mll < fit.neg_mll):
                fit = replace(cold, seconds=cold.seconds + fit.seconds)
            else:
                fit = replace(fit, seconds=cold.seconds + fit.seconds)
        fits.append(fit)
        if surrogate == "laplace" and fit.success and np.isfinite(fit.neg_mll):
            evidence.append(laplace_log_evidence(X, y, fit.hyper, ard))
        else:
            evidence.append(bic_log_evidence(fit, t, n_hyperparameters(p, ard, n_jumps + 2 * trend)))
    weights = evidence_weights(np.asarray(evidence)) if len(fits) > 1 else np.ones(1)
    return [KernelFit(spec[0], fit, float(ev), float(w)) for spec, fit, ev, w in zip(specs, fits, evidence, weights)]
