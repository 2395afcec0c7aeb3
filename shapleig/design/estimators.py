"""The GP estimators: ``ShaplEIG`` (the front of the design loop) and ``GPLeverage`` (one fit on a leverage sample)."""

from __future__ import annotations

import copy
import inspect
import time
from typing import Any, Callable, ClassVar

import numpy as np

from shapleig.design.acquisition import Acquisition, Leverage, method_name
from shapleig.design.ask_tell import AskTell, ToldValues
from shapleig.design.async_loop import AsyncDesignLoop, loop_class
from shapleig.design.initial import DEFAULT_POOL_SIZE
from shapleig.design.loop import DesignLoop, min_budget
from shapleig.design.options import (
    DesignOptions,
    FitOptions,
    GPOptions,
    LoopOptions,
    ModelOptions,
    OptionGroup,
    ReadoutOptions,
    keyword_signature,
    options_from,
)
from shapleig.design.trace_hook import loop_trace_identity
from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.game import Game, check_budget, check_n_players
from shapleig.gp.fit_result import kernel_info
from shapleig.gp.kernel_choice import RefitPlan, fit_kernels, primary_per_player
from shapleig.gp.kernels.registry import SURROGATE_SWITCH
from shapleig.gp.mixture import build_mixture
from shapleig.gp.options import plain_equal
from shapleig.runs.budget import BudgetedGame
from shapleig.seeding import UNSET, SeedLike, resolve_seed, spawn_generators, spawn_seeds
from shapleig.threads import compute_threads

# ShaplEIG's parameters besides its option groups, and the groups by parameter name
TOP_LEVEL = ("surrogate", "acquisition", "refit", "index", "max_order", "tol", "rtol", "batch_size", "pool_size",
             "progress", "callbacks")
OPTION_GROUPS: dict[str, type[OptionGroup]] = {"model": ModelOptions, "readout": ReadoutOptions,
                                               "fitting": FitOptions, "design": DesignOptions}


def group_options(name: str, group: OptionGroup | None) -> dict[str, Any]:
    """The options of ShaplEIG's group ``name`` by name (empty for None, its defaults).

    Args:
        name: the group's parameter name (``"model"``, ``"readout"``, ``"fitting"``, ``"design"``).
        group: the group object given, or None.

    Returns:
        ``{option: value}`` of the group.

    Raises:
        TypeError: ``group`` is not the group's class.
    """
    kind = OPTION_GROUPS[name]
    if group is None:
        return {}
    if not isinstance(group, kind):
        raise TypeError(f"ShaplEIG's {name} must be a {kind.__name__} (None: its defaults), got "
                        f"{type(group).__name__}; e.g. {name}={kind.__name__}(...), or "
                        f"ShaplEIG.from_options(...) with the options by name")
    return group.as_dict()


class OptionsEstimator(BaseEstimator):
    """An estimator configured by an options dataclass (``options_class``): the GP arms.

    Its parameters are the dataclass's fields, stored as attributes so ``get_params`` /
    ``set_params`` / ``sklearn.clone`` work; :attr:`options` rebuilds (and so revalidates) the
    options object from them.
    """

    options_class: ClassVar[type[GPOptions]] = GPOptions

    def _store_options(self, options: GPOptions) -> None:
        for name in options.names():
            setattr(self, name, getattr(options, name))

    @property
    def options(self) -> GPOptions:
        """The validated options object built from the current parameters."""
        return self.options_class(**{name: getattr(self, name) for name in self.options_class.names()})

    @property
    def max_players(self) -> int | None:  # type: ignore[override]
        """The most players the configured surrogate takes (:attr:`GPOptions.max_players`; None: no limit)."""
        return self.options.max_players

    def max_players_reason(self, n_players: int) -> str:
        """Why a game above :attr:`max_players` is refused (one phrase, for the error message).

        Args:
            n_players: the number of players p.

        Returns:
            the phrase.
        """
        return self.options.max_players_reason(n_players)


class ShaplEIG(OptionsEstimator):
    """Bayesian experimental design for Shapley values (Rundel et al., ICML 2026).

    A Hamming-kernel GP surrogate of the game; each step evaluates the coalition(s) with the largest
    closed-form expected information gain about the Shapley vector. The estimate is the posterior
    mean, with posterior std, covariance and an anytime trace. The constructor stores options only;
    work happens in :meth:`estimate`. The default surrogate (``"auto"``) averages a
    shared-lengthscale and an ARD Hamming kernel by evidence, with calibrated uncertainty;
    :meth:`published` gives the ICML-paper configuration.

    ``index`` / ``max_order`` choose what is estimated: the Shapley value (``"SV"``, default), Banzhaf
    values (``"BV"``) or interactions of any order k (``"k-SII"``, ``"SII"``, ``"STII"``, ``"FSII"``,
    ``"FBII"``, ``"BII"``, ``"CHII"``, ``"Moebius"``; ``max_order=k``, 2 unless given: every term of
    1..k players); the EIG is about the whole index vector (``DesignOptions(acquisition_order=...)``
    chooses another order). The estimate's ``terms`` name the entries.

    Every parameter is keyword-only and validated at once (a bad value raises ``ValueError`` before
    anything is evaluated). The common ones are parameters; the rest sit in four option groups, each a
    small frozen dataclass (None: its defaults): ``model`` (:class:`~shapleig.gp.options.ModelOptions`:
    noise, size trend, jumps, rough part), ``readout`` (:class:`~shapleig.gp.options.ReadoutOptions`:
    calibration, integrated hyperparameters, structure families), ``fitting``
    (:class:`~shapleig.design.options.FitOptions`: engine, threads, fit points, warm starts, fixed
    hyperparameters) and ``design`` (:class:`~shapleig.design.options.DesignOptions`: initial design,
    candidates, batch mode, the index the EIG is about, probing). :meth:`from_options` takes any option
    by its flat name (as the harness's ``shapleig:key=value`` does).

    Args:
        surrogate: the kernels fitted and weighed by evidence: ``"auto"`` (default), ``"shared"``,
            ``"ard"`` (published), ``"laplace"``, ``"graded"``, ``"graded-ard"``, ``"graded-auto"``, or
            a :class:`~shapleig.gp.kernels.spec.KernelSpec` (or a sequence of them)
            (:class:`~shapleig.gp.options.GPOptions`).
        acquisition: ``"eig"`` (default), ``"uncertainty"``, ``"random"``, ``"leverage"`` or an
            :class:`~shapleig.design.acquisition.Acquisition` instance.
        refit: the refit schedule: ``"auto"`` (default), ``"auto:<k>"``, ``"every"``, ``"never"``, ... or
            a callable ``it -> bool`` (:class:`~shapleig.design.options.LoopOptions`).
        index: what is estimated: ``"SV"`` (default), ``"BV"``, ``"k-SII"``, ``"SII"``, ``"STII"``,
            ``"FSII"``, ``"FBII"``, ``"BII"``, ``"CHII"``, ``"Moebius"`` or a registered index.
        max_order: every term of 1..max_order players is estimated (None: the index's own).
        tol: stop once every std is at most ``tol`` (the game's units).
        rtol: the same relative to ``|v(N) - v(empty)|``.
        batch_size: q coalitions in flight (or per step).
        pool_size: the candidate-pool size.
        progress: one tqdm progress bar over the evaluations.
        callbacks: callables ``cb(loop)`` run after every step.
        model: the model group, or None for its defaults.
        readout: the read-out group, or None for its defaults.
        fitting: the fitting group, or None for its defaults.
        design: the design group, or None for its defaults.

    Examples:
        >>> import numpy as np
        >>> from shapleig import FunctionGame, ShaplEIG
        >>> game = FunctionGame(lambda Z: Z @ np.arange(1.0, 7.0), n_players=6)
        >>> est = ShaplEIG().estimate(game, budget=16, seed=0)
        >>> np.round(est.values, 3).tolist()
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        >>> est.evaluations <= 16 and est.std.shape == (6,)
        True
    """

    name: ClassVar[str] = "shapleig"
    options_class: ClassVar[type[LoopOptions]] = LoopOptions

    # keyword-only, each default that of its LoopOptions field (tests/design/test_options.py checks)
    def __init__(  # noqa: PLR0913 - the estimator's parameters, as in scikit-learn
        self,
        *,
        surrogate: Any = "auto",
        acquisition: str | Acquisition = "eig",
        refit: str | Callable[[int], bool] = "auto",
        index: str = "SV",
        max_order: int | None = None,
        tol: float | None = None,
        rtol: float | None = None,
        batch_size: int = 1,
        pool_size: int = DEFAULT_POOL_SIZE,
        progress: bool = False,
        callbacks: tuple = (),
        model: ModelOptions | None = None,
        readout: ReadoutOptions | None = None,
        fitting: FitOptions | None = None,
        design: DesignOptions | None = None,
    ) -> None:
        groups = {"model": model, "readout": readout, "fitting": fitting, "design": design}
        flat: dict[str, Any] = dict(surrogate=surrogate, acquisition=acquisition, refit=refit, index=index,
                                    max_order=max_order, tol=tol, rtol=rtol, batch_size=batch_size,
                                    pool_size=pool_size, progress=progress, callbacks=callbacks)
        for name, group in groups.items():
            flat.update(group_options(name, group))
        options = LoopOptions(**flat)  # the whole, cross-field checks included, before anything is evaluated
        for name in TOP_LEVEL:
            setattr(self, name, getattr(options, name))  # normalised (e.g. a former refit name, np.int64)
        for name, group in groups.items():
            setattr(self, name, group)  # as given: sklearn's clone checks the parameter is the object passed

    @classmethod
    def _check_keywords(cls, keywords: dict[str, Any]) -> None:
        """Name the group of an option given flat (``ShaplEIG(noise=...)``) instead of Python's bare TypeError."""
        for key in keywords:
            if key in TOP_LEVEL or key in OPTION_GROUPS:
                continue
            group = next((g for g, kind in OPTION_GROUPS.items() if key in kind.names()), None)
            if group is not None:
                kind = OPTION_GROUPS[group].__name__
                raise TypeError(f"ShaplEIG({key}=...): {key} is an option of the {group} group; pass "
                                f"ShaplEIG({group}={kind}({key}=...)) or ShaplEIG.from_options({key}=...)")
            if key == SURROGATE_SWITCH:
                raise TypeError("ShaplEIG(ard=...): ard is the older switch; pass surrogate='ard' (True) or "
                                "surrogate='shared' (False), or ShaplEIG.from_options(ard=...)")
            if key not in LoopOptions.names():
                raise TypeError(f"ShaplEIG got unknown option(s) [{key!r}]; its parameters: "
                                f"{', '.join(TOP_LEVEL + tuple(OPTION_GROUPS))}; every option by name: "
                                f"{', '.join(LoopOptions.names())}")

    @classmethod
    def from_options(cls, **options: Any) -> "ShaplEIG":
        """The estimator from options named flat (any field of :class:`~shapleig.design.options.LoopOptions`).

        What the harness's ``shapleig:key=value``, the command line and scripts use; each option
        lands in its group (``noise`` in ``model``, ``fit_points`` in ``fitting``, ...), and a group
        whose options are all at their defaults stays None.

        Args:
            **options: options by name (``ard`` included, the older switch); a group object under its
                parameter name (``model=ModelOptions(...)``) counts as its options by name.

        Returns:
            the estimator.

        Raises:
            TypeError: an unknown name, a group of the wrong type, or an option given both by name and
                in its group.

        Examples:
            >>> from shapleig import ShaplEIG
            >>> ShaplEIG.from_options(noise=1e-4, pool_size=64).model
            ModelOptions(noise=0.0001)
        """
        flat = {key: value for key, value in options.items() if key not in OPTION_GROUPS}
        for name in OPTION_GROUPS:
            values = group_options(name, options.get(name))
            twice = sorted(set(flat) & set(values))
            if twice:
                raise TypeError(f"{twice} given both by name and in {name}={options[name]!r}; give each option once")
            flat.update(values)
        return cls.from_loop_options(options_from(LoopOptions, flat, cls.__name__))

    @classmethod
    def from_loop_options(cls, options: LoopOptions) -> "ShaplEIG":
        """The estimator whose :attr:`options` are ``options``.

        Args:
            options: the flat options.

        Returns:
            the estimator.
        """
        params: dict[str, Any] = {name: getattr(options, name) for name in TOP_LEVEL}
        for name, kind in OPTION_GROUPS.items():
            group = kind(**{field: getattr(options, field) for field in kind.names()})
            params[name] = group if group.changed() else None
        return cls(**params)

    @property
    def options(self) -> LoopOptions:
        """The validated flat options built from the current parameters and groups."""
        flat: dict[str, Any] = {name: getattr(self, name) for name in TOP_LEVEL}
        for name in OPTION_GROUPS:
            flat.update(group_options(name, getattr(self, name)))
        return LoopOptions(**flat)

    def __repr__(self) -> str:
        params = inspect.signature(type(self)).parameters
        changed = {name: value for name, value in self.get_params().items()
                   if value is not params[name].default and not plain_equal(value, params[name].default)}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters; with ``deep``, also each given group's options as ``group__option``.

        Args:
            deep: add ``model__noise``-style entries for the groups that are set (scikit-learn's
                nested parameters, as for a pipeline's steps).

        Returns:
            ``{name: value}``.
        """
        params = super().get_params()
        if deep:
            for name in OPTION_GROUPS:
                if params[name] is not None:
                    params.update({f"{name}__{key}": value for key, value in params[name].as_dict().items()})
        return params

    def set_params(self, **params: Any) -> "ShaplEIG":
        """Change parameters, a group's option (``model__noise=1e-4``) or any option by name (``noise=1e-4``).

        Validated as in the constructor (scikit-learn's ``set_params``, nested parameters included).

        Args:
            **params: parameters, ``group__option`` pairs or options by name.

        Returns:
            the estimator itself.

        Raises:
            ValueError: a name that is none of these.
        """
        direct: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        flat: dict[str, Any] = {}
        for key, value in params.items():
            group, sep, field = key.partition("__")
            if sep and group in OPTION_GROUPS and field in OPTION_GROUPS[group].names():
                nested.setdefault(group, {})[field] = value
            elif key in self._param_names():
                direct[key] = value
            elif key in LoopOptions.names():
                flat[key] = value
            else:
                raise ValueError(f"{type(self).__name__} has no parameter {key!r}; its parameters: "
                                 f"{self._param_names()}, a group's option as group__option "
                                 f"(e.g. model__noise), or an option by name: {', '.join(LoopOptions.names())}")
        for group, fields in nested.items():
            current = direct.get(group, getattr(self, group)) or OPTION_GROUPS[group]()
            direct[group] = current.replace(**fields)
        if direct:
            super().set_params(**direct)
        if flat:
            values = {k: v for k, v in self.options.as_dict().items() if k != SURROGATE_SWITCH}  # ard: derived from surrogate
            rebuilt = type(self).from_loop_options(LoopOptions(**{**values, **flat}))
            self.__init__(**rebuilt.get_params(deep=False))  # type: ignore[misc]
        return self

    @classmethod
    def published(cls, **overrides: Any) -> "ShaplEIG":
        """The ICML-paper configuration (Rundel et al. 2026; shapiq's ``ShaplEIG`` defaults).

        One lengthscale per player (ARD), a MAP refit at every step by botorch's fit, the p + 1
        leverage design, 1024 candidates, fixed noise 1e-6 in standardised units and the
        uncalibrated MAP posterior (no structure read-out, no probing of degenerate evidence).

        Args:
            **overrides: single options to change, by flat name (e.g. ``refit="decaying"``).

        Returns:
            the estimator with the published options (and ``overrides``).
        """
        options: dict[str, Any] = dict(surrogate="ard", calibrate=False, refit="every", initial_design="leverage",
                                       pool_size=DEFAULT_POOL_SIZE, noise=1e-6, noise_convention="standardized",
                                       final_refit=True, warm_start=False, fit_engine="gpytorch", size_trend=False,
                                       rough=False, structures=(), probe_degenerate=False)
        options.update(overrides)
        return cls.from_options(**options)

    # argument count over budget: the public estimate() signature every method shares (game, budget, seed, store, ...)
    def estimate(  # noqa: PLR0913
        self,
        game: Game,
        budget: int,
        *,
        seed: SeedLike = UNSET,
        store: Any = None,
        evaluator: Any = None,
        max_retries: int = 1,
        timeout: float | None = None,
        random_state: SeedLike = UNSET,
        progress: bool = UNSET,
        tol: float | None = UNSET,
        rtol: float | None = UNSET,
    ) -> ShapleyEstimate:
        """:meth:`BaseEstimator.estimate`, with this call's ``progress`` and precision target.

        ``progress``, ``tol`` and ``rtol`` are options (:class:`~shapleig.design.options.LoopOptions`,
        their one home): given here they override the configured ones for this call only (validated
        before anything is evaluated; the estimator stays as configured), not given they are the
        configured ones. ``tol`` / ``rtol``: stop at the first step where every player's posterior
        std is at most ``tol`` (the game's units) or ``rtol * |v(N) - v(empty)|``;
        ``est.info["target_reached"]`` and ``["target_evaluations"]`` say whether and when.
        ``progress``: the one progress bar over the evaluations.

        Args:
            game: the game (or a :class:`BudgetedGame`).
            budget: distinct evaluations to spend.
            seed: as :meth:`BaseEstimator.estimate` (``random_state`` its alias).
            store: as :meth:`BaseEstimator.estimate`.
            evaluator: as :meth:`BaseEstimator.estimate`.
            max_retries: as :meth:`BaseEstimator.estimate`.
            timeout: as :meth:`BaseEstimator.estimate`.
            random_state: the alias of ``seed``.
            progress: the ``progress`` option for this call.
            tol: the ``tol`` option for this call.
            rtol: the ``rtol`` option for this call.

        Returns:
            The :class:`ShapleyEstimate`.

        Examples:
            >>> import numpy as np
            >>> from shapleig import FunctionGame, ShaplEIG
            >>> game = FunctionGame(lambda Z: Z @ np.arange(1.0, 6.0), n_players=5)
            >>> est = ShaplEIG().estimate(game, 24, seed=0, tol=0.05)  # stop once every std <= 0.05
            >>> est.info["target_reached"], est.evaluations < 24, bool(est.std.max() <= 0.05)
            (True, True, True)
            >>> np.round(est.values, 3).tolist()
            [1.0, 2.0, 3.0, 4.0, 5.0]
        """
        overrides = {name: value for name, value in (("progress", progress), ("tol", tol), ("rtol", rtol))
                     if value is not UNSET}
        configured = self
        if overrides:
            configured = copy.copy(self)  # this call's options only; the estimator stays as configured
            for name, value in overrides.items():
                setattr(configured, name, value)
        options = configured.options  # validates the overrides before anything is evaluated
        return BaseEstimator.estimate(configured, game, budget, seed=seed, store=store, evaluator=evaluator,
                                      max_retries=max_retries, timeout=timeout, random_state=random_state,
                                      progress=options.progress)

    def ask_tell(self, n_players: int, budget: int, *, seed: SeedLike = 0, store: Any = None,
                 game_id: str | None = None) -> AskTell:
        """A run whose coalitions the caller evaluates anywhere: ``ask`` / ``tell`` (:mod:`shapleig.design.ask_tell`).

        The run is the design loop :meth:`estimate` runs with these options and seed: a sequential
        ``ask(1)`` / ``tell`` loop asks the coalitions ``estimate`` evaluates and ends on its estimate.
        ``batch_size``, ``batch_mode``, ``progress`` and ``callbacks`` play no part (the caller chooses
        how many coalitions to ask at a time and watches the run itself). Unlike :meth:`estimate`, a budget of all 2^p coalitions is not
        enumerated: the run asks what the design loop selects.

        Args:
            n_players: the number of players p.
            budget: distinct coalitions the run may evaluate (at least p + 2).
            seed: a non-negative int, None (fresh entropy) or a numpy Generator (as in :meth:`estimate`).
            store: an evaluation store (or a path) that records every told value; a new run on the
                same store, options and seed resumes (told values reused, never asked again).
            game_id: a label of the game whose values are told, recorded in the store (a store of
                another label is refused).

        Returns:
            the :class:`~shapleig.design.ask_tell.AskTell` run, nothing asked yet.

        Raises:
            BudgetError: the budget is below p + 2.
        """
        p = check_n_players(n_players)
        budget = check_budget(budget, minimum=None)
        self.require_budget(p, budget)
        game = BudgetedGame(ToldValues(p, game_id), budget, store=store, max_retries=0)
        loop = DesignLoop(game, None, seed=resolve_seed(seed), options=self.options)
        return AskTell(loop, method_name(self.acquisition, self.name))

    def min_budget(self, n_players: int) -> int:
        """``p + 2``: the p + 1 design coalitions and at least one acquisition.

        Args:
            n_players: the number of players p.

        Returns:
            ``p + 2``.
        """
        return min_budget(n_players)

    def min_budget_reason(self, n_players: int) -> str:
        """Why the budget must cover the initial design and one acquisition (one phrase, for the error message).

        Args:
            n_players: the number of players p.

        Returns:
            the phrase, with the design's size.
        """
        return (f"the p + 1 = {n_players + 1} initial-design evaluations (empty, grand and p - 1 "
                f"paired coalitions) plus at least one acquisition")

    def make_loop(self, game: BudgetedGame, seed: int = 0) -> DesignLoop | AsyncDesignLoop:
        """The configured loop on ``game``, spending its remaining budget.

        An :class:`~shapleig.design.async_loop.AsyncDesignLoop` when ``batch_size > 1`` and the
        game's evaluator runs concurrently (``batch_mode="auto"``), or when ``batch_mode="async"``;
        a :class:`DesignLoop` otherwise (:func:`~shapleig.design.async_loop.loop_class`).

        Args:
            game: the budgeted game; the loop spends what remains of its budget.
            seed: the loop's integer seed.

        Returns:
            a :class:`DesignLoop` (or the asynchronous scheduler driving one), not yet run.
        """
        return loop_class(self.options, game.evaluator)(game, None, seed=seed, options=self.options)

    def trace_identity(self) -> tuple[str, dict[str, Any]]:
        """The method and options identifying a run in a store's trace: the same as a ``DesignLoop`` with these options.

        Returns:
            ``(method, options)`` (:func:`~shapleig.design.trace_hook.loop_trace_identity`).
        """
        return loop_trace_identity(self.options)

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        result = self.make_loop(game, seed).run()
        result.method = method_name(self.acquisition, self.name)
        return result


class GPLeverage(OptionsEstimator):
    """The GP+Leverage ablation arm (docs/baselines.md §10): no acquisition, one leverage sample.

    At budget m it evaluates the empty and grand coalitions plus m - 2 distinct coalitions from the
    paired uniform-size sampler (the leverage-score distribution that also draws ShaplEIG's initial
    design), in one game call, fits ShaplEIG's GP once (MAP, same prior, noise and options) and
    reads out the posterior mean, std and covariance of the Shapley values. A new budget is a new
    sample, not an extension, so it is not anytime: the harness reruns it at every budget.
    """

    name: ClassVar[str] = "shapleig-leverage"
    anytime: ClassVar[bool] = False

    options_class: ClassVar[type[GPOptions]] = GPOptions

    def __init__(self, **options: Any) -> None:
        self._store_options(options_from(GPOptions, options, type(self).__name__))

    __init__.__signature__ = keyword_signature(GPOptions)  # type: ignore[attr-defined]

    def min_budget(self, n_players: int) -> int:
        """Three evaluations: the empty and grand coalitions and one sampled coalition.

        Args:
            n_players: the number of players p (the minimum does not depend on it).

        Returns:
            3.
        """
        return 3

    def min_budget_reason(self, n_players: int) -> str:
        """Why the budget must be at least 3 (one phrase, for the error message).

        Args:
            n_players: the number of players p.

        Returns:
            the phrase.
        """
        return "the empty and grand coalitions plus at least one sampled coalition to fit the GP on"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        sample_rng = spawn_generators(seed, 2)[0]  # independent streams: sample (0), fit (1)
        fit_seed = spawn_seeds(seed, 2)[1]
        X = Leverage().design(game.n_players, game.remaining, sample_rng)
        y = np.asarray(game(X), dtype=np.float64)
        start = time.perf_counter()
        options = self.options.for_budget(X.shape[0], game.n_players)  # rough="auto" for this sample
        with compute_threads(options.threads):
            fits = fit_kernels(X, y, options, seed=fit_seed, plan=RefitPlan.cold(), previous=None)
            post = build_mixture([(k.kernel, k.weight, k.hyper) for k in fits], X, y, calibrate=options.calibrate)
        primary = post.primary.posterior
        h = primary.hyper
        return ShapleyEstimate(
            values=post.mean,
            std=post.std,
            covariance=post.covariance,
            trace=[(X.shape[0], post.mean)],
            trace_std=[(X.shape[0], post.std)],
            baseline=float(y[0]),
            method=self.name,
            info={
                **options.info(),
                "ard": primary_per_player(options.kernels, post.primary.name),
                "kernel_weights": post.weights,
                "calibration": {c.name: c.tau for c in post.components},
                "noise_standardized": h.noise,
                "fit_seconds": sum(k.fit.seconds for k in fits),
                "selection_seconds": time.perf_counter() - start,
                "fit_success": all(k.fit.success for k in fits),
                **kernel_info(h),
                "jitter": primary.jitter,
            },
        )
