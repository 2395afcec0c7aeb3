"""The GP surrogate's options, each stated once: :class:`GPOptions`, the single source of their defaults.

What every GP arm shares (the surrogate's kernels, its noise, the read-out, the fit engine) is one
frozen dataclass that validates and normalises itself from the constraints its fields declare
(:mod:`shapleig.gp.constraints`), so a bad option fails before anything is evaluated. The gp layer
takes this object whole (:func:`~shapleig.gp.kernel_choice.fit_kernels`,
:func:`~shapleig.gp.fitting.fit_hyperparameters`): no function below restates a default.
:class:`~shapleig.design.options.LoopOptions` extends it with the design loop's options.

>>> GPOptions(surrogate="ard").ard
True
>>> [k.name for k in GPOptions(size_trend=False).kernels]
['shared', 'ard']
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.gp.constraints import Boolean, Checked, Interval, OneOf, option, validate_fields
from shapleig.gp.evidence import LAPLACE_MAX_PLAYERS, laplace_players_reason
from shapleig.gp.kernels import KernelSpec
from shapleig.gp.kernels.registry import (
    check_rough,
    check_size_trend,
    check_surrogate,
    plain_hamming,
    resolve_rough,
    resolve_surrogate,
    surrogate_ard,
    surrogate_draws,
    surrogate_evidence,
    surrogate_kernels,
)
from shapleig.gp.mixture import check_calibrate
from shapleig.gp.posterior import Hyperparameters
from shapleig.gp.priors import DEFAULT_FIT_ENGINE, FIT_ENGINES, NOISE_CONVENTIONS, check_fit_engine
from shapleig.gp.structures import DEFAULT_STRUCTURES, check_structures


def _calibrate(value: Any) -> bool | str:
    check_calibrate(value)
    return bool(value) if isinstance(value, (bool, np.bool_)) else value


class OptionGroup:
    """What every options dataclass shares: validation from the fields' constraints, names, a copy with changes.

    Subclasses are frozen, keyword-only dataclasses whose fields are declared with
    :func:`~shapleig.gp.constraints.option` (default and constraint, stated once). A group built
    alone validates its own fields; the flat options (:class:`GPOptions`,
    :class:`~shapleig.design.options.LoopOptions`) inherit the groups' fields and validate them all.
    Its ``repr`` names only the fields that differ from their defaults.
    """

    def __post_init__(self) -> None:
        validate_fields(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in declaration order.

        Returns:
            the field names.
        """
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        """``{name: value}`` of every option (shallow: callables and arrays kept as they are).

        Returns:
            the options by name.
        """
        return {name: getattr(self, name) for name in self.names()}

    def changed(self) -> dict[str, Any]:
        """``{name: value}`` of the options that differ from their defaults.

        Returns:
            the changed options by name, in declaration order.
        """
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            default = f.default
            if default is dataclasses.MISSING or value is not default and not plain_equal(value, default):
                out[f.name] = value
        return out

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (validated as on construction).

        Args:
            **changes: the options to change, by name.

        Returns:
            a new options object of the same class.
        """
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.changed().items())})"


def plain_equal(value: Any, default: Any) -> bool:
    """``value == default`` as a plain bool (False where comparing is not a truth value).

    Args:
        value: an option's value.
        default: its default.

    Returns:
        whether they compare equal (an array or a failing comparison: False).
    """
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True, kw_only=True, repr=False)
class ModelOptions(OptionGroup):
    """The surrogate's model of the game beyond its kernels: noise, size trend, jumps, rough part.

    ``ShaplEIG(model=ModelOptions(noise=1e-4))``; every field is also a flat option
    (``ShaplEIG.from_options(noise=1e-4)``, the harness's ``shapleig:noise=1e-4``).

    Args:
        noise: fixed observation-noise variance, in the units named by ``noise_convention``.
        noise_convention: ``"standardized"`` (shapiq's, default) or ``"raw"`` (docs/math.md §3).
        jumps: every kernel also fits the variances of independent jumps of the surrogate at ∅ and N
            (the size kernel, docs/math.md §15): games whose empty or grand coalition stands apart (no
            data, no features) no longer force short lengthscales. Needs the numpy fit engine.
        size_trend: a smooth trend in the coalition size (the size kernel's squared-exponential part,
            docs/math.md §15): ``"both"`` (default: every kernel with and without it, weighed by
            evidence), True (always) or False (never; the published setting). Needs the numpy fit
            engine unless False. ``jumps`` and ``size_trend`` shape the named surrogates only.
        rough: every kernel of a named surrogate also fits the rough part of the game, a white-noise
            kernel (:mod:`shapleig.gp.kernels.rough`): independent variation of each coalition that the
            smooth kernels do not predict, uncertain wherever not evaluated. ``"auto"`` (default): on
            for budgets of at least 16 evaluations per player (``ROUGH_AUTO_MULTIPLE``), where its
            variance is identified, off below (the loop resolves it, :func:`~shapleig.gp.kernels.registry.resolve_rough`;
            docs/benchmarks.md §16); True: always; False: never (the published setting); ``"both"``:
            each kernel with and without it, weighed by evidence (twice the kernels to fit).
        hold_out_empty: v(empty) enters the index exactly and the GP is fitted to the non-empty
            coalitions (docs/math.md §14.5); None: the index's default (on for BV only). The design
            loop's option (``GPLeverage`` fits every coalition it samples).
    """

    noise: float = option(1e-6, Interval(float, 0.0, open=True))
    noise_convention: str = option("standardized", OneOf(NOISE_CONVENTIONS, "noise convention"))
    jumps: bool = option(False, Boolean())
    rough: bool | str = option("auto", Checked(check_rough, bad=("always", None)))
    size_trend: bool | str = option("both", Checked(check_size_trend, bad=("always", None)))
    hold_out_empty: bool | None = option(None, Boolean(none=True))


@dataclass(frozen=True, kw_only=True, repr=False)
class ReadoutOptions(OptionGroup):
    """How the final posterior is read out: calibration, integrated hyperparameters, structure families.

    ``ShaplEIG(readout=ReadoutOptions(structures=()))`` (each field also a flat option).

    Args:
        calibrate: the read-out (:mod:`shapleig.gp.mixture`): True / ``"influence"`` (default: each
            player's std raised by the influence-weighted leave-one-out calibration of its kernel),
            ``"jackknife"`` (the previous default: LOO outputscale and the jackknife floor, honest but
            often several times too wide), ``"gated"`` or False (the raw MAP posterior, the published
            read-out).
        integrate: hyperparameter draws per kernel at the final read-out (Laplace proposal,
            importance weights, law of total covariance; :mod:`shapleig.gp.integrate`); 0: the MAP
            alone; None (default): as the surrogate declares (:func:`~shapleig.gp.kernels.registry.surrogate_draws`;
            16 for the graded surrogates ``"graded"``, ``"graded-ard"``, ``"graded-auto"``), 0 otherwise.
            Acquisition and the anytime trace keep the MAP.
        structures: the structure families of the final read-out (:mod:`shapleig.gp.structures`,
            docs/math.md §13), fitted on the final archive: the interval becomes the law of total
            covariance over the fitted surrogate and each family, about the fitted surrogate's mean
            (the estimate is unchanged; the interval includes where the structures disagree about the
            index). Families: ``"kernels"`` (each of the surrogate's kernels alone), ``"graded"`` (the
            graded kernel, hyperparameters integrated), ``"additive"`` (the additive model with a
            white-noise remainder), ``"rough"`` (a rough Hamming kernel weighed by its leave-one-out
            evidence against the fitted surrogate, at least 0.05). Default: all four
            (docs/calibration.md); ``("kernels", "graded", "additive")``: the read-out before the rough
            family; None or ``()``: the fitted surrogate alone (the published read-out).
    """

    calibrate: bool | str = option(True, Checked(_calibrate, bad=("loo", 2.5)))
    integrate: int | None = option(None, Interval(int, 0, none=True))
    structures: tuple[str, ...] = option(DEFAULT_STRUCTURES, Checked(check_structures, bad=("ard", 3)))


@dataclass(frozen=True, kw_only=True, repr=False)
class EngineOptions(OptionGroup):
    """Where the hyperparameters are fitted: the fit engine and its threads (the fitting group's base).

    Args:
        fit_engine: ``"numpy"`` (default, torch-free) or ``"gpytorch"`` (botorch's fit, the published
            route; the plain Hamming kernel only).
        threads: torch/BLAS threads while computing (None leaves the pools alone).
    """

    fit_engine: str = option(DEFAULT_FIT_ENGINE, OneOf(FIT_ENGINES, "fit engine"))
    threads: int | None = option(1, Interval(int, 1, none=True))


@dataclass(frozen=True, kw_only=True)
class GPOptions(ModelOptions, ReadoutOptions, EngineOptions):
    """Options shared by every GP arm: the surrogate and the model, read-out and engine groups, flat.

    The groups (:class:`ModelOptions`, :class:`ReadoutOptions`, :class:`EngineOptions`) document
    their fields; here are the surrogate's.

    Args:
        surrogate: the kernels fitted and weighed by evidence (:mod:`shapleig.gp.kernels`):
            ``"auto"`` (default; None means it): a shared-lengthscale and an ARD Hamming kernel
            (each with and without the size trend, ``size_trend``); ``"shared"``; ``"ard"``
            (published); ``"laplace"`` (auto's kernels weighed by a Laplace evidence); ``"graded"``
            (the graded Walsh kernel with free order-1..3 variances and a learned noise,
            :mod:`shapleig.gp.kernels.graded`, hyperparameters integrated at the read-out); ``"graded-ard"``
            (the graded and the ARD kernel); ``"graded-auto"`` (the shared, graded and ARD kernels); or a
            :class:`~shapleig.gp.kernels.spec.KernelSpec` (e.g. ``Hamming(ard=False) + MyKernel()``)
            or a sequence of them, fitted as given.
        ard: the older switch: True means ``surrogate="ard"``, False ``"shared"``; normalised to
            agree with ``surrogate`` so ``clone()`` round-trips.
    """

    surrogate: Any = option(None, Checked(lambda v: v if v is None else check_surrogate(v), bad=("rbf", [1])))
    ard: bool | None = option(None, Boolean(none=True))

    def __post_init__(self) -> None:
        validate_fields(self)
        mode = resolve_surrogate(self.surrogate, self.ard)
        object.__setattr__(self, "surrogate", mode)
        object.__setattr__(self, "ard", surrogate_ard(mode))
        check_fit_engine(self.fit_engine)  # the gpytorch engine needs the extra shapleig[botorch]: say so now
        if self.fit_engine != "numpy":
            for name in ("jumps", "size_trend"):
                if getattr(self, name):
                    raise ValueError(f"{name}={getattr(self, name)!r} needs fit_engine='numpy' (the size kernel's "
                                     f"fit), got {self.fit_engine!r}; pass {name}=False to fit with gpytorch")
            odd = [k.name for k in self.kernels if not plain_hamming(k)]  # (rough="auto" is off on this engine)
            if odd:
                raise ValueError(f"fit_engine={self.fit_engine!r} fits the plain Hamming kernel only, not {odd}; "
                                 f"use fit_engine='numpy'")

    @property
    def kernels(self) -> list[KernelSpec]:
        """The kernel specs the surrogate fits, in order, named as in results (:func:`surrogate_kernels`).

        ``rough="auto"`` depends on the budget: unresolved (:meth:`for_budget`, which every loop
        applies) it reads as False, the kernels of a budget below ``ROUGH_AUTO_MULTIPLE`` p.
        """
        rough = False if self.rough == "auto" else self.rough
        return surrogate_kernels(self.surrogate, self.size_trend, self.jumps, rough)

    def for_budget(self, budget: int, n_players: int) -> Any:
        """These options for a run of ``budget`` evaluations on ``n_players`` players.

        ``rough="auto"`` becomes a bool (:func:`~shapleig.gp.kernels.registry.resolve_rough`); every
        other option stays.

        Args:
            budget: the run's evaluations (empty and grand included).
            n_players: p.

        Returns:
            ``self``, or a copy with ``rough`` resolved.
        """
        if self.rough != "auto":
            return self
        return self.replace(rough=resolve_rough(self.rough, budget, n_players, self.fit_engine))

    @property
    def draws(self) -> int:
        """Hyperparameter draws per kernel of the read-out (``integrate`` resolved)."""
        if self.integrate is not None:
            return int(self.integrate)
        return surrogate_draws(self.surrogate)

    @property
    def evidence(self) -> str:
        """How the kernels are weighed: ``"bic"`` or ``"laplace"`` (docs/math.md §13)."""
        return surrogate_evidence(self.surrogate)

    @property
    def max_players(self) -> int | None:
        """The most players the surrogate takes; None: no limit.

        :data:`~shapleig.gp.evidence.LAPLACE_MAX_PLAYERS` for the Laplace evidence (its cost grows as p^4).
        """
        return LAPLACE_MAX_PLAYERS if self.evidence == "laplace" else None

    def max_players_reason(self, n_players: int) -> str:
        """Why games above :attr:`max_players` are refused (one phrase, for the error message).

        Args:
            n_players: the number of players p.

        Returns:
            the phrase.
        """
        return laplace_players_reason(n_players)

    def info(self) -> dict[str, Any]:
        """The options as plain values for ``ShapleyEstimate.info`` (callables and kernels by name).

        Returns:
            the options by name, as plain values.
        """
        out: dict[str, Any] = {}
        for name, value in self.as_dict().items():
            if isinstance(value, KernelSpec):
                value = value.name
            elif isinstance(value, tuple) and value and all(isinstance(v, KernelSpec) for v in value):
                value = [v.name for v in value]
            elif callable(value):
                value = getattr(value, "__name__", "custom")
            elif name == "callbacks":
                value = len(value)
            elif isinstance(value, Hyperparameters):
                value = "fixed"
            out[name] = value
        return out
