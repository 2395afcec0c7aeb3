"""The options of the GP estimators, each stated once: the single source of their defaults.

:class:`GPOptions` holds what every GP arm shares (the surrogate, its noise, the read-out, the fit
engine); :class:`LoopOptions` adds the design loop's (acquisition, refits, design, pool, batch,
precision target). Both are frozen dataclasses that validate and normalise themselves on
construction, so a bad option fails before anything is evaluated. ``ShaplEIG``'s and
``GPLeverage``'s constructor parameters, ``DesignLoop``'s keyword options, the harness's
``name:key=value`` options and the option part of ``info()`` are all derived from these fields:
a new option is one field here plus the code that reads it.

>>> LoopOptions(surrogate="ard").ard
True
>>> LoopOptions(pool_size=0)
Traceback (most recent call last):
...
ValueError: pool_size must be >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from shapleig.design.acquisition import check_acquisition
from shapleig.design.initial import DEFAULT_POOL_SIZE, INITIAL_DESIGNS
from shapleig.design.refit import refit_schedule
from shapleig.games.indices import check_index
from shapleig.gp.kernel_choice import check_size_trend, resolve_surrogate, surrogate_ard
from shapleig.gp.mixture import check_calibrate
from shapleig.gp.posterior import Hyperparameters
from shapleig.gp.priors import NOISE_CONVENTIONS, check_fit_engine, standardized_noise


def check_tolerance(tol: float | None, rtol: float | None) -> None:
    """A precision target must be a positive finite number (or None for none)."""
    for name, value in (("tol", tol), ("rtol", rtol)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive finite number (a posterior std), got {value!r}")


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # normalising a frozen dataclass in __post_init__


@dataclass(frozen=True, kw_only=True)
class GPOptions:
    """Options shared by every GP arm.

    Args:
        noise: fixed observation-noise variance, in the units named by ``noise_convention``.
        noise_convention: ``"standardized"`` (shapiq's, default) or ``"raw"`` (docs/math.md §3).
        surrogate: ``"auto"`` (default; None means it): a shared-lengthscale and an ARD Hamming kernel
            averaged by evidence (:mod:`shapleig.gp.kernel_choice`); ``"shared"``; ``"ard"`` (published).
        ard: the older switch: True means ``surrogate="ard"``, False ``"shared"``; normalised to
            agree with ``surrogate`` so ``clone()`` round-trips.
        calibrate: the read-out (:mod:`shapleig.gp.mixture`): True / ``"influence"`` (default: each
            player's std raised by the influence-weighted leave-one-out calibration of its kernel),
            ``"jackknife"`` (the previous default: LOO outputscale and the jackknife floor, honest but
            often several times too wide), ``"gated"`` or False (the raw MAP posterior, the published
            read-out).
        fit_engine: ``"numpy"`` (default, torch-free) or ``"gpytorch"`` (botorch's fit, the published route).
        threads: torch/BLAS threads while computing (None leaves the pools alone).
        jumps: every kernel also fits the variances of independent jumps of the surrogate at ∅ and N
            (the size kernel, docs/math.md §15): games whose empty or grand coalition stands apart (no
            data, no features) no longer force short lengthscales. Needs the numpy fit engine.
        size_trend: a smooth trend in the coalition size (the size kernel's squared-exponential part,
            docs/math.md §15): ``"both"`` (default: every kernel with and without it, weighed by
            evidence), True (always) or False (never; the published setting). Needs the numpy fit
            engine unless False.
    """

    noise: float = 1e-6
    noise_convention: str = "standardized"
    surrogate: str | None = None
    ard: bool | None = None
    calibrate: bool | str = True
    fit_engine: str = "numpy"
    threads: int | None = 1
    jumps: bool = False
    size_trend: bool | str = "both"

    def __post_init__(self) -> None:
        mode = resolve_surrogate(self.surrogate, self.ard)
        _set(self, "surrogate", mode)
        _set(self, "ard", surrogate_ard(mode))
        if self.noise_convention not in NOISE_CONVENTIONS:
            raise ValueError(f"unknown noise convention {self.noise_convention!r}; choose one of {NOISE_CONVENTIONS}")
        standardized_noise(self.noise, 1.0, self.noise_convention)  # validates noise
        _set(self, "noise", float(self.noise))
        check_calibrate(self.calibrate)
        if not isinstance(self.calibrate, str):
            _set(self, "calibrate", bool(self.calibrate))
        check_fit_engine(self.fit_engine)
        _set(self, "jumps", bool(self.jumps))
        _set(self, "size_trend", check_size_trend(self.size_trend))
        for name in ("jumps", "size_trend"):
            if getattr(self, name) and self.fit_engine != "numpy":
                raise ValueError(f"{name}={getattr(self, name)!r} needs fit_engine='numpy' (the size kernel's fit), "
                                 f"got {self.fit_engine!r}; pass {name}=False to fit with gpytorch")
        if self.threads is not None and (isinstance(self.threads, bool) or int(self.threads) < 1):
            raise ValueError(f"threads must be a positive int or None, got {self.threads!r}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def as_dict(self) -> dict[str, Any]:
        """``{name: value}`` of every option (shallow: callables and arrays kept as they are)."""
        return {name: getattr(self, name) for name in self.names()}

    def info(self) -> dict[str, Any]:
        """The options as plain values for ``ShapleyEstimate.info`` (callables by name)."""
        out: dict[str, Any] = {}
        for name, value in self.as_dict().items():
            if callable(value):
                value = getattr(value, "__name__", "custom")
            elif name == "callbacks":
                value = len(value)
            elif isinstance(value, Hyperparameters):
                value = "fixed"
            out[name] = value
        return out

    def replace(self, **changes: Any) -> "GPOptions":
        """A copy with ``changes`` (validated as on construction)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class LoopOptions(GPOptions):
    """Options of the design loop, hence of ``ShaplEIG`` (plus :class:`GPOptions`).

    Args:
        acquisition: ``"eig"`` (Shapley EIG), ``"uncertainty"`` (posterior variance) or ``"random"``.
        refit: ``"auto"`` (default: every step up to min(8p, 128) evaluations, then a geometric backstop in
            t plus an innovation trigger, :class:`~shapleig.design.refit.AutoRefit`), ``"every"``,
            ``"adaptive"``, ``"decaying"``, ``"geometric"``, ``"never"`` or a callable ``it -> bool``
            (:mod:`shapleig.design.refit`); ``hand_over`` offsets the geometric schedule.
        fit_points: a refit fits the hyperparameters on at most this many archive points (the
            p + 1 design points and a seeded uniform subset of the rest); the posterior always
            conditions on the whole archive. None: every point.
        initial_design: ``"leverage"`` (paired uniform-size, default) or ``"uniform"``.
        pool_size: candidate-pool size (exhaustive when 2^p - (p + 1) <= pool_size); the default
            1024 is raised to twice the acquisitions the budget allows when that is larger
            (budgets in the thousands; a given pool_size or max_candidates is kept).
        max_candidates: cap on the candidates scored per step (None: the whole pool).
        batch_size: q coalitions per step (exact greedy batch under frozen hyperparameters).
        final_refit: refit on the full archive before the final read-out.
        warm_start: start each refit from the previous hyperparameters.
        tol: stop at the first step where every player's std is at most ``tol`` (the game's units).
        rtol: the same relative to ``|v(N) - v(empty)|``.
        progress: a tqdm progress bar over evaluations.
        callbacks: callables ``cb(loop)`` run after every step.
        hyperparameters: fixed hyperparameters (standardised units): no fit ever runs.
        index: what is estimated (docs/math.md §14): ``"SV"`` (default), ``"BV"``, or an order-2
            interaction index ``"k-SII"``, ``"SII"``, ``"STII"``, ``"FSII"``.
        max_order: the index's order (None: its own, 1 for SV/BV, 2 for interactions).
        acquisition_index: the index the EIG is about (None: ``index``); ``"SV"`` with an interaction
            ``index`` is the "EIG for SV" ablation.
        hold_out_empty: v(empty) enters the index exactly and the GP is fitted to the non-empty
            coalitions (docs/math.md §14.5); None: the index's default (on for BV only).
    """

    acquisition: str = "eig"
    refit: str | Callable[[int], bool] = "auto"
    hand_over: int = 0
    fit_points: int | None = 512
    initial_design: str = "leverage"
    pool_size: int = DEFAULT_POOL_SIZE
    max_candidates: int | None = None
    batch_size: int = 1
    final_refit: bool = True
    warm_start: bool = False
    tol: float | None = None
    rtol: float | None = None
    progress: bool = False
    callbacks: tuple = field(default=())
    hyperparameters: Hyperparameters | None = None
    index: str = "SV"
    max_order: int | None = None
    acquisition_index: str | None = None
    hold_out_empty: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_index(self.index, self.max_order)
        if self.acquisition_index is not None:
            check_index(self.acquisition_index)
        if self.hold_out_empty is not None:
            _set(self, "hold_out_empty", bool(self.hold_out_empty))
        _set(self, "acquisition", check_acquisition(self.acquisition))
        refit_schedule(self.refit, hand_over=self.hand_over)  # validates the name
        _set(self, "hand_over", int(self.hand_over))
        if self.initial_design not in INITIAL_DESIGNS:
            raise ValueError(f"unknown initial design {self.initial_design!r}; choose one of {INITIAL_DESIGNS}")
        for name in ("pool_size", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
            _set(self, name, int(value))
        if self.fit_points is not None:
            if isinstance(self.fit_points, bool) or int(self.fit_points) < 16:
                raise ValueError(f"fit_points must be an int >= 16 or None, got {self.fit_points!r}")
            _set(self, "fit_points", int(self.fit_points))
        if self.max_candidates is not None and int(self.max_candidates) < 1:
            raise ValueError(f"max_candidates must be >= 1 or None, got {self.max_candidates}")
        check_tolerance(self.tol, self.rtol)
        for name in ("tol", "rtol"):
            if getattr(self, name) is not None:
                _set(self, name, float(getattr(self, name)))
        for name in ("final_refit", "warm_start", "progress"):
            _set(self, name, bool(getattr(self, name)))
        _set(self, "callbacks", tuple(self.callbacks))


def keyword_signature(options: type[GPOptions]) -> inspect.Signature:
    """``(self, *, name=default, ...)`` for a constructor whose parameters are ``options``' fields."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for f in dataclasses.fields(options):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.type))
    return inspect.Signature(params)


def options_from(options: type[GPOptions], values: Mapping[str, Any], owner: str) -> GPOptions:
    """``options(**values)`` with unknown names reported against ``owner``'s option list."""
    unknown = sorted(set(values) - set(options.names()))
    if unknown:
        raise TypeError(f"{owner} got unknown option(s) {unknown}; its options: {', '.join(options.names())}")
    return options(**values)
