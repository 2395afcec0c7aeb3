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

The initial design is evaluated whole before the first fit. With ``AsyncDesignLoop.overlap_design``
set, workers it leaves free get acquisitions chosen under the kernel's initial hyperparameters
(conditioned on the whole design) instead of waiting (higher utilisation, lower accuracy: off by
default).

Decisions depend only on the order in which arrivals are consumed, which
:class:`~shapleig.runs.in_flight.InFlight` makes replayable: a run resumed on the store of a killed
run consumes the stored values in the order the killed run did, so it makes the same decisions
and reaches the same estimate as an uninterrupted run with that completion order. Compared with a
synchronous batch, step 2 uses the hyperparameters of the last refit (one arrival old), and the
anytime trace has one entry per arrival.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from shapleig._deprecated import warn_deprecated
from shapleig.design.acquisition import PoolView
from shapleig.design.initial import initial_design
from shapleig.design.loop import DesignLoop
from shapleig.design.options import LoopOptions
from shapleig.estimation.result import ShapleyEstimate
from shapleig.gp.fitting import initial_hyperparameters
from shapleig.gp.posterior import CandidatePosterior, ShapleyPosterior
from shapleig.gp.priors import standardized_noise
from shapleig.runs.budget import BudgetedGame
from shapleig.runs.in_flight import Arrival, InFlight, is_concurrent
from shapleig.threads import compute_threads


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


def design_loop(game: Any, budget: int | None = None, **kwargs: Any) -> DesignLoop:
    """Deprecated: ``ShaplEIG(**options).make_loop(BudgetedGame(game, budget, ...), seed)``, or a loop class directly.

    The design loop for ``game``, asynchronous when :func:`uses_async` says so: an
    :class:`AsyncDesignLoop` or a :class:`~shapleig.design.loop.DesignLoop`, with the same
    arguments as ``DesignLoop``. Warns (``DeprecationWarning``) and builds the loop as before.

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
    cls = AsyncDesignLoop if uses_async(options, evaluator) else DesignLoop
    return cls(game, budget, **kwargs)


class AsyncDesignLoop(DesignLoop):
    """:class:`~shapleig.design.loop.DesignLoop` with ``batch_size`` evaluations in flight (module docstring).

    Same arguments as ``DesignLoop``; the evaluator should run concurrently (an
    ``ExecutorEvaluator``): with a serial one, the in-flight evaluations call the game from
    ``batch_size`` threads of this process at once.

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

    # Free workers get picks under the initial hyperparameters while the design runs. Off by default:
    # it raised utilisation (ViT-16, 16 workers: 0.69 -> 0.77) but cost accuracy (gm-MSE ratio to the
    # sequential run 1.07 -> 1.19-1.26 in three runs of 3 tables x 3 seeds), the prior's picks being poor.
    overlap_design = False
    _flight: InFlight | None = None
    _design: np.ndarray | None = None  # the initial design while it is being evaluated
    _design_values: dict[bytes, float] | None = None
    _early: list[Arrival] | None = None  # acquisitions that arrived before the design was complete
    _fitter: ThreadPoolExecutor | None = None  # the background refit's thread
    _refit: tuple | None = None  # (future, plan, t fitted, archive size at which it is adopted)

    @property
    def submitted(self) -> list[np.ndarray]:
        """Acquired coalitions in the order they were submitted (``X`` holds arrival order)."""
        if "_submitted" not in self.__dict__:
            self._submitted: list[np.ndarray] = []
        return self._submitted

    # -- in flight --------------------------------------------------------------------------
    def _in_flight(self) -> InFlight:
        if self._flight is None:
            # room for the whole design besides the batch: the executor queues what its workers cannot run
            self._flight = InFlight(self.game, self.options.batch_size + self.n_players + 1)
        return self._flight

    @property
    def n_pending(self) -> int:
        """Coalitions submitted and not yet consumed."""
        return 0 if self._flight is None else self._flight.n_pending

    def _room(self) -> int:
        """How many coalitions may be submitted now (0 once the target is met or the budget is planned)."""
        if self._finished or self.target_evaluations is not None:
            return 0
        n = self.n_pending
        return max(0, min(self.options.batch_size - n, self._max_acquisitions - self.iteration,
                          self.budget - self.evaluations - n, int(self.available.sum())))

    @property
    def done(self) -> bool:
        """Whether the run is over: the budget or the acquisitions spent, nothing in flight."""
        if self.pool is None:
            return False
        return self.n_pending == 0 and self._room() == 0

    # -- the initial design, overlapped with the first acquisitions -------------------------
    def _initialize(self) -> None:
        """Start the initial design, overlapped with the first acquisitions when asked.

        The design is evaluated as the sequential loop does; with :attr:`overlap_design` (and
        ``batch_size > 1``) it is submitted instead and the loop does not wait for it: workers it
        leaves free get acquisitions chosen under the kernel's initial hyperparameters
        (docs/math.md §3), conditioned on the whole design and on each other (value-independent,
        so exact for those hyperparameters). The first fit runs once every design value is in.
        """
        if self.options.batch_size < 2 or not self.overlap_design:  # the sequential loop's start
            super()._initialize()
            return
        design = initial_design(self.options.initial_design, self.n_players, self._design_rng)
        self._open_pool(design)
        self._design, self._design_values, self._early = design, {}, []
        self._design_keys = {row.tobytes() for row in design}
        self._design_state = self._prior_candidates(design)
        flight = self._in_flight()
        for row in design:
            flight.submit(row)

    def _prior_candidates(self, design: np.ndarray) -> CandidatePosterior:
        """Candidate state under the first kernel's initial hyperparameters, given the design.

        Values are not needed (the EIG does not depend on them): zeros stand in for them.
        """
        opts = self.options
        hyper = opts.hyperparameters  # fixed ones are the run's own
        if hyper is None:
            noise = standardized_noise(opts.noise, 1.0, opts.noise_convention)
            hyper = initial_hyperparameters(opts.kernels[0], self.n_players, noise)
        posterior = ShapleyPosterior(hyper, design, np.zeros(len(design)), operator=self.acquisition_operator)
        return posterior.candidates(self.pool.W)

    def _design_step(self) -> None:
        """One step while the design is out: take one arrival and refill free workers.

        Free workers get picks under the prior state; once the design is complete, the loop fits
        and absorbs the early acquisitions.
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
        design, self._design = self._design, None
        self.X = design.copy()
        self.y = np.array([self._design_values[row.tobytes()] for row in design])
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            self._fit()
        self.timings["selection_s"] += time.perf_counter() - start
        for early in self._early:
            self._absorb(early, record=False)
        self._early = []
        self._record()
        self._submit(self._room())  # workers freed by the last design values

    def _submit_early(self, room: int) -> None:
        if room < 1:
            return
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            acquisition = self.acquisition_function
            if acquisition.uses_posterior:
                picks = acquisition.select(self._design_state, room, self._select_rng)
            else:  # drawn from the pool's availability; the design state still conditions on each pick
                picks = acquisition.select(PoolView(self.pool.W, self.available), room, self._select_rng)
                for j in picks:
                    self._design_state.condition(int(j))
        self.timings["selection_s"] += time.perf_counter() - start
        self._start(picks)

    # -- one step: one arrival ------------------------------------------------------------
    def step(self) -> bool:
        """Run one step: the initial design first, then one arrival at a time.

        Each step consumes one arrival (none on the first asynchronous step), refills the free
        slots and refits if due.

        Returns:
            False once the run is done.
        """
        if self.pool is None:
            return super().step()
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
                    self.timings["game_s"] += time.perf_counter() - start  # waiting for the workers
                    self._absorb(arrival)
                    if self._refit is not None and self.X.shape[0] >= self._refit[3]:
                        self._adopt_refit()  # before selecting: this pick already uses the new kernels
                self._submit(self._room())
            if self._design is None and self.n_pending and self._async_refit_due():
                self._launch_refit()
        except BaseException:
            self._close_flight()
            raise
        self._after_step()
        return True

    # -- refits in the background ------------------------------------------------------------
    def _launch_refit(self) -> None:
        """Start the due refit on a background thread, on the archive as it is now.

        It is adopted once ``batch_size`` more values have arrived (waiting for it then if need be), so the
        decisions depend on the order of arrivals only, never on how long a fit took.
        """
        job, plan, t = self._fit_job()
        if self._fitter is None:
            self._fitter = ThreadPoolExecutor(1, thread_name_prefix="shapleig-refit")
        self._refit = (self._fitter.submit(job), plan, t, t + self.options.batch_size)

    def _adopt_refit(self) -> None:
        future, plan, t, _ = self._refit
        self._refit = None
        start = time.perf_counter()
        fits = future.result()  # usually done: it ran while batch_size values arrived
        with compute_threads(self.options.threads):
            self._apply_fits(fits, plan, t)
        self.timings["selection_s"] += time.perf_counter() - start

    def _async_refit_due(self) -> bool:
        """Whether a refit starts now.

        It does when the schedule asks, none is running and ``batch_size`` arrivals have come
        since the last fit: as many refits as a synchronous run of q-batches makes (a refit per
        arrival would keep the driver, not the workers, busy).
        """
        if self._refit is not None:
            return False
        return self.X.shape[0] - self._fitted_on >= self.options.batch_size and self._refit_due(1)

    def _absorb(self, arrival: Arrival, record: bool = True) -> None:
        """Append an arrival to the archive and extend the posterior.

        The candidate state already holds it (it was conditioned on while pending).
        """
        self.absorb(arrival.row[None], np.array([arrival.value]), record=record)

    def _submit(self, room: int) -> None:
        """Select ``room`` coalitions conditioned on everything pending and start evaluating them."""
        if room < 1:
            return
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            self._refresh_noise()
            picks = self._select(room)
        self.timings["selection_s"] += time.perf_counter() - start
        self._start(picks)

    def _start(self, picks: np.ndarray) -> None:
        """Mark the pool rows ``picks`` pending and submit them."""
        flight = self._in_flight()
        for row in self.reserve(picks):
            self.submitted.append(row.copy())
            flight.submit(row)

    def _close_flight(self) -> None:
        if self._flight is not None:
            self._flight.close()
        if self._fitter is not None:
            self._fitter.shutdown(wait=False, cancel_futures=True)
            self._fitter = None

    def _final_refit(self) -> None:
        if self._refit is not None:
            self._adopt_refit()
        super()._final_refit()

    def finish(self) -> ShapleyEstimate:
        """As :meth:`DesignLoop.finish`, after adopting a refit still running.

        The final refit then sees every value; the driver threads are stopped.

        Returns:
            the estimate.
        """
        if self._refit is not None:
            self._adopt_refit()
        self._close_flight()
        return super().finish()

    def info(self) -> dict[str, Any]:
        """``DesignLoop.info`` plus ``"batch_mode_used": "async"``."""
        return {**super().info(), "batch_mode_used": "async"}
