"""The options of the GP estimators, each stated once: the single source of their defaults.

:class:`GPOptions` (:mod:`shapleig.gp.options`, re-exported here) holds what every GP arm shares
(the surrogate, its noise, the read-out, the fit engine); :class:`LoopOptions` adds the design
loop's (acquisition, refits, design, pool, batch, precision target, progress). Both are frozen
dataclasses whose fields declare their constraints (:mod:`shapleig.gp.constraints`): validation
and normalisation on construction are generated from them, so a bad option fails before anything
is evaluated, with an error naming the field. ``ShaplEIG``'s and ``GPLeverage``'s constructor
parameters, ``DesignLoop``'s keyword options, the harness's ``name:key=value`` options and the
option part of ``info()`` are all derived from these fields: a new option is one field here plus
the code that reads it (``loop.options.<name>``).

>>> LoopOptions(surrogate="ard").ard
True
>>> LoopOptions(pool_size=0)
Traceback (most recent call last):
...
ValueError: pool_size must be an int >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from shapleig.design.acquisition import Acquisition, acquisition_name, check_acquisition
from shapleig.design.initial import DEFAULT_POOL_SIZE, INITIAL_DESIGNS
from shapleig.design.refit import refit_name, refit_schedule
from shapleig.games.indices import check_index
from shapleig.gp.constraints import Boolean, Checked, Interval, OneOf, option
from shapleig.gp.options import EngineOptions, GPOptions, ModelOptions, OptionGroup, ReadoutOptions
from shapleig.gp.posterior import Hyperparameters

__all__ = ["BATCH_MODES", "DesignOptions", "FitOptions", "GPOptions", "LoopOptions", "ModelOptions", "OptionGroup",
           "ReadoutOptions", "keyword_signature", "options_from"]

BATCH_MODES = ("auto", "async", "sync")


def _refit(value: Any) -> Any:
    value = refit_name(value)  # a former name warns once, here, and is kept under its current name
    refit_schedule(value)  # validates the name (a callable is kept as it is)
    return value


def _callbacks(value: Any) -> tuple:
    callbacks = tuple(value)
    bad = [cb for cb in callbacks if not callable(cb)]
    if bad:
        raise TypeError(f"callbacks must be callables cb(loop), got {bad!r}")
    return callbacks


def _hyperparameters(value: Any) -> Hyperparameters | None:
    if value is not None and not isinstance(value, Hyperparameters):
        raise TypeError(f"hyperparameters must be a Hyperparameters instance or None, got {type(value).__name__}")
    return value


def _index(value: Any) -> str:
    return check_index(value)[0]


@dataclass(frozen=True, kw_only=True, repr=False)
class FitOptions(EngineOptions):
    """How and when the hyperparameters are fitted, beyond the refit schedule (``ShaplEIG``'s ``fitting``).

    ``ShaplEIG(fitting=FitOptions(fit_points=256))``; every field is also a flat option
    (``ShaplEIG.from_options(fit_points=256)``). The schedule itself is ``ShaplEIG``'s ``refit``.

    Args:
        fit_engine: as :class:`~shapleig.gp.options.EngineOptions`.
        threads: as :class:`~shapleig.gp.options.EngineOptions`.
        hand_over: the acquisition count at which the geometric refit schedule starts (offsets it).
        fit_points: a refit fits the hyperparameters on at most this many archive points (the
            p + 1 design points and a seeded uniform subset of the rest; when p + 1 exceeds it, the
            empty and grand coalitions and a seeded subset of the rest); the posterior always
            conditions on the whole archive. None: every point.
        final_refit: refit on the full archive before the final read-out.
        warm_start: start each refit from the previous hyperparameters.
        hyperparameters: fixed hyperparameters (standardised units): no fit ever runs.
    """

    hand_over: int = option(0, Interval(int, 0))
    fit_points: int | None = option(512, Interval(int, 16, none=True))
    final_refit: bool = option(True, Boolean())
    warm_start: bool = option(False, Boolean())
    hyperparameters: Hyperparameters | None = option(None, Checked(_hyperparameters, bad=(1.0, "fixed")))


@dataclass(frozen=True, kw_only=True, repr=False)
class DesignOptions(OptionGroup):
    """The design beyond the acquisition and the pool (``ShaplEIG``'s ``design``).

    ``ShaplEIG(design=DesignOptions(initial_design="uniform"))``; every field is also a flat option.

    Args:
        initial_design: ``"leverage"`` (paired uniform-size, default) or ``"uniform"``.
        max_candidates: cap on the candidates scored per step (None: the whole pool).
        batch_mode: how batches run: ``"auto"`` (default: asynchronous when ``batch_size > 1`` and
            the evaluator runs concurrently, e.g. an ``ExecutorEvaluator``; else synchronous),
            ``"async"`` (keep ``batch_size`` evaluations in flight, select the next coalition as soon
            as one arrives, conditioned on those pending: :mod:`shapleig.design.async_loop`) or
            ``"sync"`` (q coalitions per step, each batch awaited whole).
        acquisition_index: the index the EIG is about (None: ``index``); ``"SV"`` with an interaction
            ``index`` is the "EIG for SV" ablation.
        acquisition_order: the maximal order of the index the EIG is about (None: ``max_order`` when
            the EIG is about ``index``, else that index's own); e.g. ``max_order=3,
            acquisition_order=2`` reads out every term up to triples but designs for the pairs.
        probe_degenerate: while the fitted kernel predicts the archive almost exactly from itself
            (degenerate evidence, ``info["degenerate_evidence"]``: an additive game, a dictator, a
            function of the size), the acquisition scores the pool under a rough probe kernel
            (:mod:`shapleig.design.probe`, docs/math.md §13) until an evaluation breaks the structure or
            p probes in a row confirm it; True (default), False: always under the fitted kernel.
        large_archive: the archive size from which a step's cost stays near O(t) per evaluation
            (docs/benchmarks.md §3, large archives): a step selects a greedy batch of ceil(t / 64)
            coalitions (the EIG does not depend on values, so under the same hyperparameters these
            are the picks single steps would make), the candidate state covers at most 2048 available
            pool coalitions (a seeded subset, redrawn once half of it is used; also whenever the
            default pool was raised for the budget), the mixture keeps the kernels of weight >= 1e-3,
            and the default refit schedule refits at growth 1.5 in t. None: never.
    """

    initial_design: str = option("leverage", OneOf(INITIAL_DESIGNS, "initial design"))
    max_candidates: int | None = option(None, Interval(int, 1, none=True))
    batch_mode: str = option("auto", OneOf(BATCH_MODES, "batch mode"))
    acquisition_index: str | None = option(None, Checked(lambda v: v if v is None else _index(v), bad=("XYZ",)))
    acquisition_order: int | None = option(None, Interval(int, 1, none=True))
    probe_degenerate: bool = option(True, Boolean())
    large_archive: int | None = option(2048, Interval(int, 1, none=True))


@dataclass(frozen=True, kw_only=True)
class LoopOptions(GPOptions, FitOptions, DesignOptions):
    """Options of the design loop, hence of ``ShaplEIG``, flat: its own fields plus every group's.

    The groups (:class:`~shapleig.gp.options.ModelOptions`, :class:`~shapleig.gp.options.ReadoutOptions`,
    :class:`FitOptions`, :class:`DesignOptions`) and :class:`GPOptions` document their fields; here
    are the loop's own, which are ``ShaplEIG``'s top-level parameters. ``tol``, ``rtol`` and
    ``progress`` live here only: ``ShaplEIG.estimate(..., tol=...)`` forwards them to a copy of this
    object for one call, and the loop shows the one progress bar.

    Args:
        acquisition: ``"eig"`` (Shapley EIG), ``"uncertainty"`` (posterior variance), ``"random"``,
            ``"leverage"`` (any name registered in :mod:`shapleig.design.acquisition`), or an
            :class:`~shapleig.design.acquisition.Acquisition` instance (a user-defined subclass too).
        refit: ``"auto"`` (default: every step up to min(8p, 128) evaluations, then a geometric backstop in
            t plus an innovation trigger, :class:`~shapleig.design.refit.AutoRefit`), ``"auto:<k>"``
            (the same, every step only up to k p evaluations; ``"auto:1:1.125:2"``: about half the
            loop's time, docs/benchmarks.md §2), ``"every"``, ``"adaptive"``, ``"decaying"``,
            ``"geometric"``, ``"never"`` or a callable ``it -> bool`` (:mod:`shapleig.design.refit`).
        pool_size: candidate-pool size (exhaustive when 2^p - (p + 1) <= pool_size); the default
            1024 is raised to twice the acquisitions the budget allows when that is larger
            (budgets in the thousands; a given pool_size or max_candidates is kept).
        batch_size: q coalitions per step (exact greedy batch under frozen hyperparameters).
        tol: stop at the first step where every player's std is at most ``tol`` (the game's units).
        rtol: the same relative to ``|v(N) - v(empty)|``.
        progress: a tqdm progress bar over the evaluations (one bar, however the loop is run).
        callbacks: callables ``cb(loop)`` run after every step.
        index: what is estimated (docs/math.md §14): ``"SV"`` (default), ``"BV"``, or an
            interaction index ``"k-SII"``, ``"SII"``, ``"STII"``, ``"FSII"``, ``"FBII"``, ``"BII"``,
            ``"CHII"``, ``"Moebius"``, or any index registered with
            :func:`shapleig.games.indices.register_index`.
        max_order: the index's maximal order k: every term of 1..k players is estimated (None: its
            own, 1 for SV/BV, 2 for the interactions; the interactions take any k >= 1).
    """

    acquisition: str | Acquisition = option("eig", Checked(check_acquisition, bad=("greedy", 3, Acquisition)))
    refit: str | Callable[[int], bool] = option("auto", Checked(_refit, bad=("sometimes", 3)))
    pool_size: int = option(DEFAULT_POOL_SIZE, Interval(int, 1))
    batch_size: int = option(1, Interval(int, 1))
    tol: float | None = option(None, Interval(float, 0.0, open=True, none=True))
    rtol: float | None = option(None, Interval(float, 0.0, open=True, none=True))
    progress: bool = option(False, Boolean())
    callbacks: tuple = option((), Checked(_callbacks, bad=(3, (1, 2))))
    index: str = option("SV", Checked(_index, bad=("XYZ", None)))
    max_order: int | None = option(None, Interval(int, 1, none=True))

    def __post_init__(self) -> None:
        super().__post_init__()  # validates every field (LoopOptions' too: validate_fields sees them all)
        check_index(self.index, self.max_order)
        if self.acquisition_order is not None:
            check_index(self.acquisition_index or self.index, self.acquisition_order)
        refit_schedule(self.refit, hand_over=self.hand_over)

    def info(self) -> dict[str, Any]:
        """:meth:`GPOptions.info`, with the acquisition by name (an instance's ``name``).

        Returns:
            The options as plain values.
        """
        out = super().info()
        out["acquisition"] = acquisition_name(self.acquisition)
        return out


def keyword_signature(options: type[GPOptions]) -> inspect.Signature:
    """``(self, *, name=default, ...)`` for a constructor whose parameters are ``options``' fields.

    Args:
        options: the options class (:class:`LoopOptions` or :class:`GPOptions`).

    Returns:
        the signature, for ``__signature__`` of a constructor that takes ``**options``.
    """
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    fields = {f.name: f for f in dataclasses.fields(options)}
    # a class's own fields before its bases' (the loop's before the groups'), not dataclasses' base-first order
    order = [name for cls in options.__mro__ for name in vars(cls).get("__annotations__", {}) if name in fields]
    for f in (fields[name] for name in dict.fromkeys(order)):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.type))
    return inspect.Signature(params)


def options_from(options: type[GPOptions], values: Mapping[str, Any], owner: str) -> GPOptions:
    """``options(**values)`` with unknown names reported against ``owner``'s option list.

    Args:
        options: the options class.
        values: ``{name: value}`` of the options given.
        owner: who takes the options (e.g. ``"ShaplEIG"``), named in the error message.

    Returns:
        the options object.
    """
    unknown = sorted(set(values) - set(options.names()))
    if unknown:
        raise TypeError(f"{owner} got unknown option(s) {unknown}; its options: {', '.join(options.names())}")
    return options(**values)
