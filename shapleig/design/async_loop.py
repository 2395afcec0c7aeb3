"""``AsyncDesignLoop``: ``batch_size`` evaluations in flight, the next coalition chosen as soon as one arrives.

ShaplEIG's EIG does not depend on observed values (docs/math.md §10), so under frozen
hyperparameters the candidate state conditioned on coalitions that are submitted but not yet
evaluated (pending) is exact: the next pick is the one a synchronous greedy batch would make after
them. The loop keeps ``q = batch_size`` coalitions in flight through
:class:`~shapleig.runs.in_flight.InFlight` (any ``concurrent.futures`` executor or a Dask client's
executor, via :class:`~shapleig.runs.evaluators.ExecutorEvaluator`). One step consumes one arrival:

1. append it to the archive and extend the posterior (same hyperparameters, O(t^2));
2. select as many coalitions as there are free slots, conditioned on every pending one, and submit
   them (the freed worker is busy again before any refit);
3. refit when the schedule asks, at most once per q arrivals, on a background thread: the loop goes
   on taking arrivals and refilling workers meanwhile, and adopts the new kernels once q more values
   have arrived (the candidate state is then rebuilt from the archive and conditioned on the
   pending coalitions).

The asynchronous loop is a scheduler over a :class:`~shapleig.design.loop.DesignLoop` it holds: it
decides when to select, submit, absorb and refit, and the DesignLoop does each through its public
steps (:meth:`~DesignLoop.start`, :meth:`~DesignLoop.select`, :meth:`~DesignLoop.select_on`,
:meth:`~DesignLoop.reserve`, :meth:`~DesignLoop.absorb`, :meth:`~DesignLoop.absorb_design`,
:meth:`~DesignLoop.capacity`, :meth:`~DesignLoop.start_refit` / :meth:`~DesignLoop.adopt_refit`),
as :class:`~shapleig.design.ask_tell.AskTell` does.

The initial design is evaluated whole before the first fit. With ``overlap_design``, workers it
leaves free get acquisitions chosen under the kernel's initial hyperparameters (conditioned on the
whole design) instead of waiting (higher utilisation, lower accuracy: off by default).

Decisions depend only on the order in which arrivals are consumed, which
:class:`~shapleig.runs.in_flight.InFlight` makes replayable: a run resumed on the store of a killed
run consumes the stored values in the order the killed run did, so it makes the same decisions
and reaches the same estimate as an uninterrupted run with that completion order. Compared with a
synchronous batch, step 2 uses the hyperparameters of the last refit (one arrival old), and the
anytime trace has one entry per arrival.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar, NamedTuple

import numpy as np

from shapleig._deprecated import warn_deprecated
from shapleig.design.loop import DesignLoop, RefitJob
from shapleig.design.options import LoopOptions
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.game import Game
from shapleig.gp.fitting import initial_hyperparameters
from shapleig.gp.posterior import CandidatePosterior, ShapleyPosterior
from shapleig.gp.priors import standardized_noise
from shapleig.runs.budget import BudgetedGame
from shapleig.runs.in_flight import Arrival, InFlight, is_concurrent
from shapleig.seeding import SeedLike


def uses_async(options: LoopOptions, evaluator: Any) -> bool:
    """Whether a loop with ``options`` on a game evaluated by ``evaluator`` runs asynchronously.

    It does with ``batch_mode="async"``, or ``"auto"`` with ``batch_size > 1`` and a concurrent
    evaluator.

    Args:
        options: the loop's options (``batch_mode``, ``batch_size``).
        evaluator: the game's evaluator (concurrent when its ``concurrent`` attribute is true).

    Returns:
        True for the asynchronous loop.
    """
    if options.batch_mode == "async":
        return True
    return options.batch_mode == "auto" and options.batch_size > 1 and is_concurrent(evaluator)


def loop_class(options: LoopOptions, evaluator: Any) -> type[DesignLoop] | type[AsyncDesignLoop]:
    """The loop a run with ``options`` on a game evaluated by ``evaluator`` uses (:func:`uses_async`).

    Args:
        options: the loop's options.
        evaluator: the game's evaluator.

    Returns:
        :class:`AsyncDesignLoop` or :class:`~shapleig.design.loop.DesignLoop`.
    """
    return AsyncDesignLoop if uses_async(options, evaluator) else DesignLoop


def design_loop(game: Any, budget: int | None = None, **kwargs: Any) -> DesignLoop | AsyncDesignLoop:
    """Deprecated: ``ShaplEIG.from_options(**options).make_loop(BudgetedGame(game, budget, ...), seed)``, or a loop class directly.

    The design loop for ``game`` (:func:`loop_class`, as ``ShaplEIG.make_loop`` chooses it), with
    the same arguments as ``DesignLoop``. Warns (``DeprecationWarning``) and builds the loop as before.

    Args:
        game: the game (or a budgeted game).
        budget: the evaluation budget (None: the budgeted game's remaining budget).
        **kwargs: ``DesignLoop``'s other arguments and loop options.

    Returns:
        the loop, not yet run.
    """
    warn_deprecated("shapleig.design.async_loop.design_loop")
    options = kwargs.get("options")
    values = {k: v for k, v in kwargs.items() if k in LoopOptions.names()}
    if options is None:
        options = LoopOptions(**values)
    elif values:
        options = options.replace(**values)
    evaluator = game.evaluator if isinstance(game, BudgetedGame) else kwargs.get("evaluator")
    return loop_class(options, evaluator)(game, budget, **kwargs)


class _BackgroundRefit(NamedTuple):
    """A refit running on the fitter thread."""

    future: Future
    job: RefitJob
    t: int  # archive size it fits on
    adopt_at: int  # archive size at which it is adopted (t + batch_size)


class AsyncDesignLoop:
    """A :class:`~shapleig.design.loop.DesignLoop` run with ``batch_size`` evaluations in flight (module docstring).

    Same arguments as ``DesignLoop``; the evaluator should run concurrently (an
    ``ExecutorEvaluator``): with a serial one, the in-flight evaluations call the game from
    ``batch_size`` threads of this process at once. The driven loop is :attr:`loop`; its attributes
    (``X``, ``y``, ``pool``, ``trace``, ``fits``, ``timings``, ...) read and write through this
    object too, as they did when this class was its subclass; callbacks receive this object.

    Args:
        game: a :class:`Game` or a :class:`BudgetedGame` (as for ``DesignLoop``).
        budget: distinct evaluations to spend (None: a BudgetedGame's remaining ones).
        seed: the loop seed.
        store: an ``EvaluationStore`` (or a path) that reuses and records values.
        evaluator: how coalitions are evaluated (concurrently: an ``ExecutorEvaluator``).
        max_retries: retries of a failing coalition.
        options: a :class:`~shapleig.design.options.LoopOptions`.
        overlap_design: submit the initial design and give the workers it leaves free picks under
            the initial hyperparameters (True or ``"prior"``), or the next available coalitions of the
            candidate pool in its order, the border layers (the smallest and largest coalitions)
            first (``"pool"``: value-independent, no kernel); None: the class default
            :attr:`overlap_design`, False.
        **option_values: keyword options (:class:`~shapleig.design.options.LoopOptions` fields).

    Example:
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> from shapleig import ExecutorEvaluator, FunctionGame
        >>> game = FunctionGame(lambda Z: Z.sum(axis=1) ** 2, n_players=4)
        >>> with ThreadPoolExecutor(3) as pool:
        ...     est = AsyncDesignLoop(game, 12, batch_size=3, pool_size=64, seed=0,
        ...                           evaluator=ExecutorEvaluator(pool)).run()
        >>> est.values.round(2).tolist()
        [4.0, 4.0, 4.0, 4.0]
    """

    # The default of ``overlap_design``. Off: it raised utilisation (ViT-16, 16 workers: 0.69 -> 0.77)
    # but cost accuracy (gm-MSE ratio to the sequential run 1.07 -> 1.19-1.26 in three runs of
    # 3 tables x 3 seeds), the prior's picks being poor.
    overlap_design: ClassVar[bool | str] = False

    def __init__(
        self,
        game: Game | BudgetedGame,
        budget: int | None = None,
        *,
        seed: SeedLike = 0,
        store: Any = None,
        evaluator: Any = None,
        max_retries: int = 1,
        options: LoopOptions | None = None,
        overlap_design: bool | None = None,
        **option_values: Any,
    ) -> None:
        # this object's own state first (__setattr__ hands names the driven loop holds to it)
        overlap = type(self).overlap_design if overlap_design is None else overlap_design
        if overlap not in (False, True, "prior", "pool"):
            raise ValueError(f"overlap_design must be False, True, 'prior' or 'pool', got {overlap!r}")
        self.overlap_design = overlap
        self._flight: InFlight | None = None  # made at the first submission (it reads the store's order then)
        self._submitted: list[np.ndarray] = []
        self._fitter: ThreadPoolExecutor | None = None  # the background refit's thread, made at the first refit
        self._refit: _BackgroundRefit | None = None
        # the overlapped initial design while it is being evaluated
        self._design: np.ndarray | None = None
        self._design_keys: set[bytes] = set()
        self._design_values: dict[bytes, float] = {}
        self._design_state: CandidatePosterior | None = None  # the prior's candidate state, given the design
        self._early: list[Arrival] = []  # acquisitions that arrived before the design was complete
        self._loop = DesignLoop(game, budget, seed=seed, store=store, evaluator=evaluator, max_retries=max_retries,
                                options=options, **option_values)
        self._loop.driver = self

    # -- the driven loop --------------------------------------------------------------------
    @property
    def loop(self) -> DesignLoop:
        """The :class:`~shapleig.design.loop.DesignLoop` this scheduler drives."""
        return self._loop

    def __getattr__(self, name: str) -> Any:
        # only public names this class does not define: the driven loop's public state and steps
        # (its private state stays its own: a scheduler reaches it through the public steps only)
        loop = self.__dict__.get("_loop")
        if loop is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(loop, name)

    def __setattr__(self, name: str, value: Any) -> None:
        loop = self.__dict__.get("_loop")
        if loop is not None and not name.startswith("_") and name not in self.__dict__ and name in vars(loop):
            setattr(loop, name, value)  # e.g. timings: the loop's own regions must see the new object
        else:
            object.__setattr__(self, name, value)

    @property
    def submitted(self) -> list[np.ndarray]:
        """Acquired coalitions in the order they were submitted (``X`` holds arrival order)."""
        return self._submitted

    # -- in flight --------------------------------------------------------------------------
    def _in_flight(self) -> InFlight:
        if self._flight is None:
            loop = self._loop
            # room for the whole design besides the batch: the executor queues what its workers cannot run
            self._flight = InFlight(loop.game, loop.options.batch_size + loop.n_players + 1)
        return self._flight

    @property
    def n_pending(self) -> int:
        """Coalitions submitted and not yet consumed."""
        return 0 if self._flight is None else self._flight.n_pending

    def _room(self) -> int:
        """How many coalitions may be submitted now (0 once the target is met or the budget is planned)."""
        n = self.n_pending
        return max(0, min(self._loop.options.batch_size - n, self._loop.capacity(outstanding=n)))

    @property
    def done(self) -> bool:
        """Whether the run is over: the budget or the acquisitions spent, nothing in flight."""
        if self._loop.pool is None:
            return False
        return self.n_pending == 0 and self._room() == 0

    # -- the initial design, overlapped with the first acquisitions -------------------------
    def _begin(self) -> None:
        """Start the initial design, overlapped with the first acquisitions when asked.

        The design is evaluated as the sequential loop does; with :attr:`overlap_design` (and
        ``batch_size > 1``) it is submitted instead and the loop does not wait for it: workers it
        leaves free get acquisitions chosen under the kernel's initial hyperparameters
        (docs/math.md §3), conditioned on the whole design and on each other (value-independent,
        so exact for those hyperparameters). The first fit runs once every design value is in.
        """
        loop = self._loop
        if loop.options.batch_size < 2 or not self.overlap_design:  # the sequential loop's start
            loop.start()
            return
        design = loop.start(evaluate=False)
        self._design, self._design_keys = design, {row.tobytes() for row in design}
        self._design_state = None if self.overlap_design == "pool" else self._prior_candidates(design)
        flight = self._in_flight()
        for row in design:
            flight.submit(row)

    def _prior_candidates(self, design: np.ndarray) -> CandidatePosterior:
        """Candidate state over the pool under the first kernel's initial hyperparameters, given the design.

        Values are not needed (the EIG does not depend on them): zeros stand in for them.
        """
        loop = self._loop
        opts = loop.options
        hyper = opts.hyperparameters  # fixed ones are the run's own
        if hyper is None:
            noise = standardized_noise(opts.noise, 1.0, opts.noise_convention)
            hyper = initial_hyperparameters(opts.kernels[0], loop.n_players, noise)
        posterior = ShapleyPosterior(hyper, design, np.zeros(len(design)), operator=loop.acquisition_operator)
        return posterior.candidates(loop.pool.W)

    def _design_step(self) -> None:
        """One step while the design is out: take one arrival and refill free workers.

        Free workers get picks under the prior state; once the design is complete, the loop fits
        and absorbs the early acquisitions (the last of them records the read-out).
        """
        arrival = self._in_flight().next()
        key = arrival.row.tobytes()
        if key in self._design_keys:
            self._design_values[key] = arrival.value
        else:
            self._early.append(arrival)
        if len(self._design_values) < len(self._design):
            self._submit_early(self._room())
            return
        design, self._design, self._design_state = self._design, None, None
        early, self._early = self._early, []
        values = np.array([self._design_values[row.tobytes()] for row in design])
        self._loop.absorb_design(design, values, record=not early)
        for i, arrival in enumerate(early):
            self._absorb(arrival, record=i == len(early) - 1)
        self._submit(self._room())  # workers freed by the last design values

    def _submit_early(self, room: int) -> None:
        """Select ``room`` coalitions on the prior's candidate state and start evaluating them."""
        if room < 1:
            return
        if self._design_state is None:  # "pool": the next available pool rows, in the pool's order
            self._start(np.flatnonzero(self._loop.available)[:room])
            return
        self._start(self._loop.select_on(self._design_state, room))

    # -- one step: one arrival ------------------------------------------------------------
    def step(self) -> bool:
        """Run one step: the initial design first, then one arrival at a time.

        Each step consumes one arrival (none on the first asynchronous step), refills the free
        slots and refits if due.

        Returns:
            False once the run is done.
        """
        loop = self._loop
        if loop.pool is None:
            self._begin()
            loop.end_step()
            return True
        if self.done:
            return False
        flight = self._in_flight()
        try:
            if self._design is not None:
                self._design_step()
            else:
                if flight.n_pending:
                    start = time.perf_counter()
                    arrival = flight.next()
                    loop.timings["game_s"] += time.perf_counter() - start  # waiting for the workers
                    self._absorb(arrival)
                    if self._refit is not None and loop.X.shape[0] >= self._refit.adopt_at:
                        self._adopt_refit()  # before selecting: this pick already uses the new kernels
                self._submit(self._room())
            if self._design is None and self.n_pending and self._async_refit_due():
                self._launch_refit()
        except BaseException:
            self._close_flight()
            raise
        loop.end_step()
        return True

    def _absorb(self, arrival: Arrival, record: bool = True) -> None:
        """Append an arrival to the archive and extend the posterior.

        The candidate state already holds it (it was conditioned on while pending).
        """
        self._loop.absorb(arrival.row[None], np.array([arrival.value]), record=record)

    def _submit(self, room: int) -> None:
        """Select ``room`` coalitions conditioned on everything pending and start evaluating them."""
        if room >= 1:
            self._start(self._loop.select(room, allow_refit=False))  # refits run in the background

    def _start(self, picks: np.ndarray) -> None:
        """Mark the pool rows ``picks`` pending and submit them."""
        flight = self._in_flight()
        for row in self._loop.reserve(picks):
            self._submitted.append(row.copy())
            flight.submit(row)

    # -- refits in the background ------------------------------------------------------------
    def _async_refit_due(self) -> bool:
        """Whether a refit starts now.

        It does when the schedule asks, none is running and ``batch_size`` arrivals have come
        since the last fit: as many refits as a synchronous run of q-batches makes (a refit per
        arrival would keep the driver, not the workers, busy).
        """
        loop = self._loop
        if self._refit is not None:
            return False
        return loop.X.shape[0] - loop.fitted_on >= loop.options.batch_size and loop.refit_due(1)

    def _launch_refit(self) -> None:
        """Start the due refit on a background thread, on the archive as it is now.

        It is adopted once ``batch_size`` more values have arrived (waiting for it then if need be), so the
        decisions depend on the order of arrivals only, never on how long a fit took.
        """
        job = self._loop.start_refit()
        if self._fitter is None:
            self._fitter = ThreadPoolExecutor(1, thread_name_prefix="shapleig-refit")
        self._refit = _BackgroundRefit(self._fitter.submit(job.run), job, job.t,
                                       job.t + self._loop.options.batch_size)

    def _adopt_refit(self) -> None:
        """Put the running refit's kernels in force (waiting for it if need be, timed as selection)."""
        refit, self._refit = self._refit, None
        start = time.perf_counter()
        fits = refit.future.result()  # usually done: it ran while batch_size values arrived
        self._loop.timings["selection_s"] += time.perf_counter() - start
        self._loop.adopt_refit(refit.job, fits)

    def _close_flight(self) -> None:
        if self._flight is not None:
            self._flight.close()
        if self._fitter is not None:
            self._fitter.shutdown(wait=False, cancel_futures=True)
            self._fitter = None

    # -- the end of the run -----------------------------------------------------------------
    def confirm_target(self) -> bool:
        """:meth:`DesignLoop.confirm_target`, its final refit after adopting a refit still running.

        Returns:
            as :meth:`DesignLoop.confirm_target`.
        """
        loop = self._loop
        if loop.target_evaluations is not None and self._refit is not None and loop.final_refit_due():
            self._adopt_refit()
        return loop.confirm_target()

    def finish(self) -> ShapleyEstimate:
        """As :meth:`DesignLoop.finish`, after adopting a refit still running.

        The final refit then sees every value; the driver threads are stopped.

        Returns:
            the estimate.
        """
        if self._refit is not None:
            self._adopt_refit()
        self._close_flight()
        return self._loop.finish()

    def run(self) -> ShapleyEstimate:
        """Run until the budget (or the pool) is spent, or the precision target is met; return the estimate.

        As :meth:`DesignLoop.run`: a target met under the step's hyperparameters is confirmed by the
        final refit, else the run goes on.

        Returns:
            the :class:`~shapleig.estimation.result.ShapleyEstimate`.
        """
        while True:
            while self.step():
                pass
            if self.confirm_target():
                return self.finish()

    def info(self) -> dict[str, Any]:
        """``DesignLoop.info`` plus ``"batch_mode_used": "async"``.

        Returns:
            ``{name: value}``.
        """
        return {**self._loop.info(), "batch_mode_used": "async"}

    def __repr__(self) -> str:
        loop = self._loop
        return (f"AsyncDesignLoop(p={loop.n_players}, budget={loop.budget}, batch_size={loop.options.batch_size}, "
                f"evaluations={loop.evaluations}, pending={self.n_pending})")
