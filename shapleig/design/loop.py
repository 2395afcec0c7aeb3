"""``DesignLoop``: initial design -> fit -> acquire -> evaluate -> update, until the budget is spent.

docs/math.md §9. The loop spends budget only through a :class:`~shapleig.runs.budget.BudgetedGame`: the initial
design is evaluated with one call and every batch of ``q`` selected coalitions with one call (so an
evaluator can run a batch concurrently). Between refits the hyperparameters are frozen and the
candidate state is updated incrementally (exact, value-independent, docs/math.md §10); at a refit everything is
rebuilt from scratch. After every step the posterior mean under the hyperparameters in force is
appended to the trace, so the run is an anytime estimator.
"""

from __future__ import annotations

import functools
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from shapleig.design.acquisition import (
    Acquisition,
    PoolView,
    acquisition_name,
    make_acquisition,
    method_name,
)
from shapleig.design.initial import (
    DEFAULT_POOL_SIZE,
    CandidatePool,
    candidate_pool,
    initial_design,
)
from shapleig.design.options import LoopOptions, options_from
from shapleig.design.probe import probe_hyperparameters
from shapleig.design.refit import AutoRefit, refit_schedule
from shapleig.design.trace_hook import record_finish, record_step, start_loop_trace
from shapleig.errors import BudgetError
from shapleig.estimation.base import evaluation_progress_bar
from shapleig.estimation.result import ShapleyEstimate
from shapleig.estimation.trace_record import TraceRecorder
from shapleig.games.game import Game, check_budget, check_game
from shapleig.games.indices import default_hold_out_empty
from shapleig.gp.fit_result import FitResult, kernel_info
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.integrate import integrated_kernels
from shapleig.gp.kernel_choice import KernelFit, RefitPlan, fit_kernels, primary_per_player
from shapleig.gp.mixture import MixturePosterior, build_mixture
from shapleig.gp.posterior import (
    CandidatePosterior,
    Hyperparameters,
    ShapleyPosterior,
    standardize,
)
from shapleig.gp.priors import standardized_noise
from shapleig.gp.structure_readout import structure_posterior
from shapleig.gp.structures import StructurePosterior
from shapleig.runs.budget import BudgetedGame
from shapleig.seeding import SeedLike, resolve_seed
from shapleig.threads import compute_threads

logger = logging.getLogger(__name__)
# Degenerate evidence (DesignLoop.degenerate_evidence): this quantile of the primary kernel's
# leave-one-out prediction errors within this fraction of the values' std, judged on at most this
# many evaluations
DEGENERATE_LOO_ERROR = 1e-2
DEGENERATE_QUANTILE = 0.9
DEGENERATE_MAX_POINTS = 256
# Probe steps in a row that leave the evidence degenerate before the design trusts the structure,
# per player (at least 3)
PROBE_CONFIRMATIONS_PER_PLAYER = 1.0
# Large archives (``large_archive``, docs/benchmarks.md §3): a step selects ceil(t / LARGE_BATCH_DIVISOR)
# coalitions, and a candidate state covers at most ACTIVE_CANDIDATES available pool rows. The state's
# L^-1 K(X, W) is t x n, so conditioning costs O(t n) per pick and rebuilding it O(t^2 n): with the
# default pool of twice the acquisitions (n ~ 2t) both grow a power of t faster than the archive.
LARGE_BATCH_DIVISOR = 64
ACTIVE_CANDIDATES = 2048
# ... and its mixture keeps the kernels of at least this weight (each holds t x t factors: 0.8 GB at t = 10^4)
LARGE_MIN_WEIGHT = 1e-3

# Independent random streams derived from the loop seed (SeedSequence.spawn order).
_DESIGN, _POOL, _SELECT, _FIT = range(4)


def min_budget(n_players: int) -> int:
    """Smallest budget the loop accepts: the p + 1 design coalitions plus one acquisition.

    Args:
        n_players: the number of players p.

    Returns:
        ``p + 2``.
    """
    return n_players + 2


@dataclass(frozen=True)
class RefitJob:
    """A refit prepared by :meth:`DesignLoop.start_refit`, on copies of its inputs.

    ``run()`` may be called on any thread while the loop goes on (the asynchronous loop's background
    refits); :meth:`DesignLoop.adopt_refit` then puts its kernels in force.

    Attributes:
        run: fits the kernels; returns the :class:`~shapleig.gp.kernel_choice.KernelFit` list.
        plan: how the kernels are fitted (warm or cold starts, cold checks).
        t: the archive size the refit fits on (its first ``t`` rows, or a subset of them).
    """

    run: Callable[[], list[KernelFit]]
    plan: RefitPlan
    t: int


def loop_budget(game: Game | BudgetedGame, budget: int | None, n_players: int, store: Any, evaluator: Any) -> int:
    """The budget a loop on ``game`` spends: checked against the game and against :func:`min_budget`.

    A :class:`BudgetedGame` brings its own store and evaluator and its remaining evaluations (the
    default budget); any other game needs a budget.

    Args:
        game: the game, or a :class:`BudgetedGame` (which brings its own store, evaluator and remaining
            budget).
        budget: the budget asked for; None: a BudgetedGame's remaining evaluations.
        n_players: the number of players p.
        store: the store given to the loop (must be None with a BudgetedGame).
        evaluator: the evaluator given to the loop (must be None with a BudgetedGame).

    Returns:
        the checked budget.
    """
    if isinstance(game, BudgetedGame):
        if store is not None or evaluator is not None:
            raise ValueError("pass store/evaluator to the BudgetedGame, not to a DesignLoop wrapping one")
        budget = game.remaining if budget is None else check_budget(budget)
        if budget > game.remaining:
            raise BudgetError(f"budget {budget} exceeds the {game.remaining} evaluations left in the BudgetedGame")
    elif budget is None:
        raise BudgetError("budget is required")
    else:
        budget = check_budget(budget, minimum=None)  # ShaplEIG's own minimum is stated below
    if budget < min_budget(n_players):
        raise BudgetError(
            f"budget {budget} is too small: ShaplEIG with p = {n_players} needs more than p + 1 = {n_players + 1} "
            f"evaluations (the initial design), i.e. at least {min_budget(n_players)}"
        )
    return int(budget)


def loop_operators(options: LoopOptions, n_players: int) -> tuple[IndexOperator, IndexOperator]:
    """The index read out (docs/math.md §14) and the one the EIG is about (the same unless asked otherwise).

    Args:
        options: the loop's options (``index``, ``max_order``, ``acquisition_index``,
            ``acquisition_order``, ``hold_out_empty``).
        n_players: the number of players p.

    Returns:
        ``(read_out, acquisition)``, two :class:`IndexOperator` (the same object unless ablated).
    """
    hold_out = default_hold_out_empty(options.index) if options.hold_out_empty is None else options.hold_out_empty
    operator = IndexOperator(n_players, options.index, options.max_order, hold_out_empty=hold_out)
    index = options.acquisition_index or options.index
    order = options.acquisition_order
    if order is None and index == options.index:
        order = operator.max_order
    acquisition = IndexOperator(n_players, index, order, hold_out_empty=hold_out)
    return operator, (operator if acquisition == operator else acquisition)


class DesignLoop:
    """Bayesian experimental design for the Shapley values of ``game``.

    :meth:`step` and :meth:`run` drive the loop sequentially. Schedulers drive it through its public
    steps instead (:class:`~shapleig.design.ask_tell.AskTell`,
    :class:`~shapleig.design.async_loop.AsyncDesignLoop`): :meth:`start` or :meth:`draw_design`,
    :meth:`absorb_design`, :meth:`capacity`, :meth:`select` / :meth:`select_on`, :meth:`reserve`,
    :meth:`absorb`, :meth:`start_refit` / :meth:`adopt_refit`, :meth:`end_step`,
    :meth:`confirm_target`, :meth:`finish`. Callbacks, the store's trace and the estimate's ``info``
    see the run as :attr:`driver` (this loop, or the scheduler that sets itself there).

    Args:
        game: a :class:`Game`, or an existing :class:`BudgetedGame` (then ``budget`` defaults to its
            remaining evaluations and ``store`` / ``evaluator`` must be None).
        budget: distinct evaluations to spend, empty and grand included; must exceed p + 1.
        seed: int, None or a numpy Generator (see :func:`shapleig.seeding.resolve_seed`).
        store: an ``EvaluationStore`` (or a path) that reuses and records values.
        evaluator: how new coalitions are evaluated (in process, or on an executor).
        max_retries: retries of a coalition whose evaluation raises or returns NaN/inf before the
            loop stops naming it (everything evaluated so far is kept).
        options: a :class:`~shapleig.design.options.LoopOptions`; keyword options (its field
            names: ``acquisition``, ``refit``, ``surrogate``, ``tol``, ...) build or override it.
            The loop keeps it whole as :attr:`options` and reads every option from it.
        **option_values: keyword options (:class:`~shapleig.design.options.LoopOptions` fields).

    Examples:
        >>> from shapleig import FunctionGame
        >>> game = FunctionGame(lambda Z: Z.sum(axis=1) ** 2, n_players=4)
        >>> est = DesignLoop(game, 12, seed=0, pool_size=64).run()
        >>> est.values.round(2).tolist()
        [4.0, 4.0, 4.0, 4.0]

        Stepping by hand (e.g. to watch the anytime estimate):

        >>> loop = DesignLoop(game, 12, seed=0, pool_size=64)
        >>> while loop.step():
        ...     pass
        >>> loop.evaluations, loop.finish().values.round(2).tolist()
        (12, [4.0, 4.0, 4.0, 4.0])
    """

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
        **option_values: Any,
    ) -> None:
        p = check_game(game)
        if options is None:
            options = options_from(LoopOptions, option_values, "DesignLoop")
        elif option_values:
            options = options.replace(**option_values)
        fixed = options.hyperparameters
        if fixed is not None and fixed.n_players != p:
            raise ValueError(f"hyperparameters are for p = {fixed.n_players}, the game has p = {p}")
        if options.max_players is not None and p > options.max_players:  # as ShaplEIG.estimate refuses it
            raise ValueError(f"the surrogate takes at most {options.max_players} players "
                             f"({options.max_players_reason(p)}); the game has p = {p}")
        self.n_players, self.budget = p, loop_budget(game, budget, p, store, evaluator)
        self.options = options.for_budget(self.budget, p)  # rough="auto" resolved for this budget
        self.identity_options = options  # as given ("auto" unresolved, as ShaplEIG's): the run's trace identity
        self.game = game if isinstance(game, BudgetedGame) else BudgetedGame(
            game, self.budget, store=store, evaluator=evaluator, max_retries=max_retries)
        self.operator, self.acquisition_operator = loop_operators(options, p)
        self._policy = refit_schedule(options.refit, hand_over=options.hand_over)  # AutoRefit: warm late refits
        # stateful schedules (e.g. "adaptive") read this loop
        self.schedule = self._policy.bind(self) if hasattr(self._policy, "bind") else self._policy
        self.seed = resolve_seed(seed)  # None / Generator allowed, as in estimate()
        children = np.random.SeedSequence(self.seed).spawn(4)
        self._design_rng, self._pool_rng, self._select_rng = (
            np.random.default_rng(children[i]) for i in (_DESIGN, _POOL, _SELECT))
        self._fit_seq = children[_FIT]
        self._start_evaluations = self.game.evaluations
        self._reset_state()

    def _reset_state(self) -> None:
        """The run's state before the first step: empty archive, no pool, no fit, no trace."""
        p = self.n_players
        # callbacks, the store's trace and the estimate's info see the run as this object: the loop,
        # or a scheduler driving it through its public steps (an AsyncDesignLoop sets itself)
        self.driver: Any = self
        self.X = np.zeros((0, p), dtype=bool)
        self.y = np.zeros(0)
        self.pool: CandidatePool | None = None
        self.available: np.ndarray | None = None  # bool over the original pool
        self.hyper: Hyperparameters | None = None  # of the primary (most probable) kernel
        self.posterior: ShapleyPosterior | None = None  # the primary kernel's: drives acquisition
        self.mixture: MixturePosterior | None = None  # every kernel's, weighted: the read-out
        self.kernel_fits: list[KernelFit] = []  # the fits of the last refit
        self._candidates: CandidatePosterior | None = None
        self._cand_index: np.ndarray | None = None  # candidate-posterior index -> pool index
        self._active_draws = 0  # seeded subsets of a raised pool drawn for candidate states
        self._pool_raised = False  # the default pool was raised to twice the acquisitions
        # selected coalitions whose values have not been absorbed yet (key -> pool index): the
        # candidate state is conditioned on them (exact, the EIG does not depend on their values)
        self._reserved: dict[bytes, int] = {}
        self._fitted_on = -1  # archive size at the last fit
        self._cold_fit_on = 0  # archive size at the last fit from the initial values
        self.iteration = 0  # acquisitions made so far ("it" of the schedule)
        self.n_steps = 0
        self.n_probe_steps = 0  # acquisitions under the probe kernel (degenerate evidence)
        self._probe_streak = 0  # probe steps in a row that left the evidence degenerate
        self.trace: list[tuple[int, np.ndarray]] = []
        self.trace_std: list[tuple[int, np.ndarray]] = []
        self.target_evaluations: int | None = None  # evaluations when the precision target was met
        self._next_target_check = 0  # evaluations before the target's read-out is checked again
        self.fits: list[FitResult] = []  # every kernel fit (auto: two per refit)
        self.n_refits = 0
        self.selected: list[np.ndarray] = []  # per step, the pool rows picked
        # selection = fits + candidate state + acquisition; update = posterior extension + read-out
        self.timings: dict[str, float] = {"fit_s": 0.0, "selection_s": 0.0, "update_s": 0.0, "game_s": 0.0}
        self._max_acquisitions = self.budget - (p + 1)
        self._finished = False
        self._bar = None  # a progress bar this loop opened (None when the caller's is in use)
        self._trace_recorder: TraceRecorder | None = None  # own_trace_recorder's, once started
        self._trace_started = False

    # -- properties ---------------------------------------------------------------------------
    @property
    def acquisition(self) -> str:
        """The acquisition's name (``options.acquisition``, a name or an instance's ``name``)."""
        return acquisition_name(self.options.acquisition)

    @functools.cached_property
    def acquisition_function(self) -> Acquisition:
        """The :class:`~shapleig.design.acquisition.Acquisition` that selects (one per loop for a name)."""
        return make_acquisition(self.options.acquisition)

    @property
    def refit_name(self) -> str:
        """The refit schedule's name (a callable's ``__name__``)."""
        refit = self.options.refit
        return refit if isinstance(refit, str) else getattr(refit, "__name__", "custom")

    @property
    def fixed_hyperparameters(self) -> Hyperparameters | None:
        """``options.hyperparameters``: fixed hyperparameters, no fit ever runs (None: fitted)."""
        return self.options.hyperparameters

    @property
    def ard(self) -> bool:
        """Whether the primary kernel has one lengthscale per player."""
        if self.kernel_fits:
            return primary_per_player(self.options.kernels, max(self.kernel_fits, key=lambda k: k.weight).kernel)
        return bool(self.options.ard)  # the older switch, True exactly for the one-kernel ARD surrogate

    @property
    def fitted_on(self) -> int:
        """Archive size at the last hyperparameter fit (-1 before the first)."""
        return self._fitted_on

    @property
    def evaluations(self) -> int:
        """Evaluations this loop has charged so far."""
        return self.game.evaluations - self._start_evaluations

    @property
    def done(self) -> bool:
        """Whether the loop has nothing left to do (budget, pool or precision target reached, or finished)."""
        if self.pool is None:
            return False
        return (
            self._finished
            or self.target_evaluations is not None
            or self.iteration >= self._max_acquisitions
            or self.evaluations >= self.budget
            or not self.available.any()
        )

    def estimate_values(self) -> np.ndarray:
        """Current estimate: posterior mean of phi under the hyperparameters in force, float64[p].

        Returns:
            float64[d], the posterior mean.
        """
        if self.mixture is None:
            raise RuntimeError("no estimate before the first step")
        return self.mixture.mean

    def estimate_std(self) -> np.ndarray:
        """Current posterior standard deviations of phi (calibrated mixture), float64[p].

        Returns:
            float64[d], the posterior standard deviations.
        """
        if self.mixture is None:
            raise RuntimeError("no estimate before the first step")
        return self.mixture.std

    def target_threshold(self) -> float | None:
        """The std every player must reach: max of ``tol`` and ``rtol * |v(N) - v(empty)|``.

        Returns:
            the threshold, or None without ``tol`` and ``rtol``.
        """
        tol, rtol = self.options.tol, self.options.rtol
        if tol is None and rtol is None:
            return None
        limits = [tol] if tol is not None else []
        if rtol is not None:
            empty, grand = ~self.X.any(axis=1), self.X.all(axis=1)
            if empty.any() and grand.any():
                span = abs(float(self.y[np.flatnonzero(grand)[0]] - self.y[np.flatnonzero(empty)[0]]))
                limits.append(rtol * span)
        return max(limits) if limits else None

    # -- internals ----------------------------------------------------------------------------
    def _fit_seed(self, index: int) -> int:
        child = np.random.SeedSequence(self._fit_seq.entropy, spawn_key=self._fit_seq.spawn_key + (index,))
        return int(child.generate_state(1, dtype=np.uint32)[0])

    def _refit_plan(self, t: int) -> RefitPlan:
        """How this refit fits its kernels.

        AutoRefit's refits past 2p start warm, with a cold check each time t has grown by its cold
        growth since the last cold fit.
        """
        policy, p = self._policy, self.n_players
        warm = isinstance(policy, AutoRefit) and policy.warm(t, p) and bool(self.kernel_fits)
        return RefitPlan(
            warm=self.options.warm_start or warm,
            cold_check=warm and policy.cold_check_due(t, self._cold_fit_on, p),
            warm_options=policy.warm_fit_options if warm else None,
            # late refits (fit_points rows) are the costly ones: ruled-out kernels skip the cold check
            lazy_cold_check=warm and policy.late(t, p),
        )

    def _fit(self) -> None:
        if self.fixed_hyperparameters is not None:
            self._fitted_on = self.X.shape[0]
            # fixed hyperparameters are used verbatim: no LOO rescaling (the jackknife floor stays)
            self._rebuild([("fixed", 1.0, self.fixed_hyperparameters)], taus={"fixed": 1.0})
            return
        # the loop already limits threads around every step
        job = self.start_refit()
        self._apply_fits(job.run(), job.plan, job.t)

    def start_refit(self) -> RefitJob:
        """Prepare the next hyperparameter refit on the archive as it is now (nothing is fitted yet).

        The job holds copies of its inputs, so it may run on another thread while the archive grows
        (the asynchronous loop's background refits); hand its result to :meth:`adopt_refit`. Counts
        the refit (``n_refits``), which seeds it.

        Returns:
            the :class:`RefitJob`; ``job.run()`` returns the fitted kernels.
        """
        self.n_refits += 1
        rows = self._fit_rows()
        if self.operator.hold_out_empty:  # the GP models the non-empty coalitions (docs/math.md §14.5)
            rows = rows[self.X[rows].any(axis=1)]
        t = self.X.shape[0]
        plan = self._refit_plan(t)
        X, y, options = self.X[rows], self.y[rows], self.options  # fancy indexing: copies
        seed, previous = self._fit_seed(self.n_refits - 1), list(self.kernel_fits)
        return RefitJob(lambda: fit_kernels(X, y, options, seed=seed, plan=plan, previous=previous), plan, t)

    def adopt_refit(self, job: RefitJob, fits: list[KernelFit]) -> None:
        """Put the kernels a :meth:`start_refit` job fitted in force (timed as selection).

        The posteriors and the candidate state are rebuilt on the whole archive (every row, also
        those that arrived while the job ran), conditioned on every reserved coalition.

        Args:
            job: the job :meth:`start_refit` returned.
            fits: what ``job.run()`` returned.
        """
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            self._apply_fits(fits, job.plan, job.t)
        self.timings["selection_s"] += time.perf_counter() - start

    def _apply_fits(self, fits: list[KernelFit], plan: RefitPlan, t: int) -> None:
        """Adopt the kernels fitted on the first ``t`` archive rows; the posterior uses every row."""
        if plan.cold_check or not plan.warm:
            self._cold_fit_on = t
        for k in fits:
            self.fits.append(k.fit)
            self.timings["fit_s"] += k.fit.seconds
            if not k.fit.success:
                logger.warning("fit %d (%s kernel) failed (%s); keeping previous hyperparameters",
                               len(self.fits), k.kernel, k.fit.message)
        self.kernel_fits = fits
        self._fitted_on = t
        kernels = [(k.kernel, k.weight, k.hyper) for k in fits]
        if self.large():  # the mixture renormalises the weights of the kernels kept
            kernels = [k for k in kernels if k[1] >= LARGE_MIN_WEIGHT] or [max(kernels, key=lambda k: k[1])]
        self._rebuild(kernels)

    def _fit_rows(self) -> np.ndarray:
        """Archive rows a refit fits on: all, or at most ``fit_points`` of them.

        Beyond ``fit_points``: the design plus a seeded subset (when p + 1 > fit_points: the empty
        and grand coalitions plus a seeded subset of the rest).

        The subset depends only on the loop seed and the refit count, so runs are deterministic;
        it bounds a refit's cost at O(fit_points^3) whatever t (the posterior uses every row).
        """
        t = self.X.shape[0]
        m = self.options.fit_points
        if m is None or t <= m:
            return np.arange(t)
        design = self.n_players + 1
        rng = np.random.default_rng(self._fit_seed(1_000_000 + self.n_refits))
        if m >= design:
            rest = design + rng.choice(t - design, m - design, replace=False)
            return np.concatenate([np.arange(design), np.sort(rest)])
        # p + 1 > fit_points (large p): the design alone exceeds the cap, so the m rows are a seeded
        # subset of the whole archive that always keeps the empty and grand coalitions (the anchors)
        anchors = np.flatnonzero(~self.X.any(axis=1) | self.X.all(axis=1))[:m]
        others = np.setdiff1d(np.arange(t), anchors)
        rest = rng.choice(others, m - anchors.size, replace=False)
        return np.sort(np.concatenate([anchors, rest]))

    def _rebuild(self, kernels: list[tuple[str, float, Hyperparameters]],
                 taus: dict[str, float] | None = None) -> None:
        """Posteriors and candidate state from scratch (after a refit or a noise change).

        ``kernels``: (name, weight, hyperparameters) of every kernel; ``taus`` keeps given
        calibration factors instead of computing them (see :func:`~shapleig.gp.mixture.build_mixture`).
        """
        # the old state goes first: at large t each posterior holds t x t factors
        self.mixture = self.posterior = self._candidates = None
        self.mixture = build_mixture(kernels, self.X, self.y, calibrate=self.options.calibrate, taus=taus,
                                     operator=self.operator)
        self.posterior = self.mixture.primary.posterior
        self.hyper = self.posterior.hyper
        self._candidates = None  # built lazily: the final read-out does not need it

    def _candidate_state(self) -> CandidatePosterior:
        """The candidate state over the available pool, conditioned on every reserved (pending) coalition."""
        if self._candidates is not None and self._active_spent(self._candidates):
            self._candidates = None  # half of a large archive's active subset is used: draw a fresh one
        if self._candidates is None:
            pending = np.sort(np.fromiter(self._reserved.values(), dtype=np.int64, count=len(self._reserved)))
            self._cand_index = self._candidate_rows(pending)
            cand = self.posterior.candidates(self.pool.W[self._cand_index], operator=self.acquisition_operator)
            for j in np.searchsorted(self._cand_index, pending):
                cand.condition(int(j))  # exact: the EIG does not depend on the values to come
            self._candidates = cand
        return self._candidates

    def large(self) -> bool:
        """Whether the archive has reached ``large_archive`` (batched steps, an active pool subset).

        Returns:
            the flag (False before the initial design and with ``large_archive=None``).
        """
        limit = self.options.large_archive
        return limit is not None and self.X is not None and self.X.shape[0] >= limit

    def step_size(self) -> int:
        """Coalitions the next :meth:`step` selects: ``batch_size``, at least ceil(t / 64) for large archives.

        Returns:
            the count (before the :meth:`capacity` limit).
        """
        q = self.options.batch_size
        if self.large():
            q = max(q, -(-self.X.shape[0] // LARGE_BATCH_DIVISOR))
        return q

    def _candidate_rows(self, pending: np.ndarray) -> np.ndarray:
        """Pool rows of a new candidate state (sorted): every available and every ``pending`` one.

        With more than :data:`ACTIVE_CANDIDATES` of them in a pool raised for the budget (or a large
        archive): the pending rows and a seeded subset of the available ones (a new subset per draw,
        deterministic per loop seed), so a candidate state costs O(t n) per pick with n bounded.
        """
        mask = self.available.copy()
        mask[pending] = True
        rows = np.flatnonzero(mask)
        if not (self._pool_raised or self.large()) or rows.size <= ACTIVE_CANDIDATES:
            return rows
        free = np.flatnonzero(self.available)
        rng = np.random.default_rng(self._fit_seed(2_000_000 + self._active_draws))
        self._active_draws += 1
        keep = rng.choice(free.size, max(ACTIVE_CANDIDATES - pending.size, 1), replace=False)
        return np.union1d(pending, free[keep])

    def _active_spent(self, cand: CandidatePosterior) -> bool:
        """Whether a subset candidate state has half of its candidates used while the pool has more."""
        if self._cand_index is None or self._cand_index.size >= int(self.available.sum()) + len(self._reserved):
            return False  # the state covers the whole available pool
        return int(cand.available.sum()) < ACTIVE_CANDIDATES // 2

    def _select(self, q: int) -> np.ndarray:
        """The acquisition's next ``q`` pool indices, conditioned on in the candidate state."""
        acquisition = self.acquisition_function
        if acquisition.uses_posterior and self._probing():
            return self._probe_select(acquisition, q)
        return self._pick(q, self._indexed_candidate_state)

    def _indexed_candidate_state(self) -> tuple[CandidatePosterior, np.ndarray]:
        """The loop's candidate state and the pool index of each of its candidates."""
        cand = self._candidate_state()  # sets _cand_index
        return cand, self._cand_index

    def _pick(self, q: int, state: Callable[[], tuple[CandidatePosterior, np.ndarray | None]]) -> np.ndarray:
        """The acquisition's ``q`` picks: on ``state()`` (built only when the acquisition needs it), else on the pool.

        ``state()`` returns a candidate state and the pool index of each of its candidates (None:
        its candidates are the pool's rows).
        """
        acquisition = self.acquisition_function
        if not acquisition.uses_posterior:  # no candidate state needed (random): the pool's availability
            return acquisition.select(PoolView(self.pool.W, self.available), q, self._select_rng)
        cand, index = state()
        picks = acquisition.select(cand, q, self._select_rng)
        return picks if index is None else index[picks]

    def _probing(self) -> bool:
        """Whether this step probes: ``probe_degenerate``, degenerate evidence, and the structure not yet confirmed.

        Each probe step that leaves the evidence degenerate (the probed coalitions were predicted
        too) confirms the structure once; after :data:`PROBE_CONFIRMATIONS_PER_PLAYER` times p in a row the design
        trusts it again (an exactly additive game is not probed to the end of the budget). Evidence
        that stops being degenerate resets the count.
        """
        if not self.options.probe_degenerate:
            return False
        if not self.degenerate_evidence():
            self._probe_streak = 0
            return False
        if self._structure_confirmed():
            return False
        self._probe_streak += 1
        return True

    def _structure_confirmed(self) -> bool:
        """Whether p probes in a row (at least 3) were predicted by the degenerate structure."""
        return self._probe_streak >= max(3, round(PROBE_CONFIRMATIONS_PER_PLAYER * self.n_players))

    def _probe_select(self, acquisition: Any, q: int) -> np.ndarray:
        """The acquisition's picks under the probe kernel (:mod:`shapleig.design.probe`), same archive."""
        index = self._candidate_rows(np.zeros(0, dtype=np.int64))
        probe = ShapleyPosterior(probe_hyperparameters(self.n_players, self.hyper.noise), self.X, self.y,
                                 operator=self.operator)
        self.n_probe_steps += 1
        self._candidates = None  # the fitted kernel's state is not conditioned on this pick: rebuild it when next used
        cand = probe.candidates(self.pool.W[index], operator=self.acquisition_operator)
        return index[acquisition.select(cand, q, self._select_rng)]

    def _refresh_noise(self) -> None:
        """Under the raw-units convention the standardised noise follows s_y; rebuild if it moved."""
        if self.options.noise_convention != "raw" or self.hyper is None or self.fixed_hyperparameters is not None:
            return
        _, _, scale = standardize(self.y)
        new = standardized_noise(self.options.noise, scale, "raw")
        if new != self.hyper.noise:
            self._rebuild([
                (c.name, c.weight, c.posterior.hyper.with_noise(new))
                for c in self.mixture.all_components
            ], taus={c.name: c.tau for c in self.mixture.all_components})

    def _record(self) -> None:
        std = self.estimate_std()
        self.trace.append((self.evaluations, self.estimate_values()))
        self.trace_std.append((self.evaluations, std))
        limit = self.target_threshold()
        # the anytime std is the fitted surrogate's; the wider read-out that must meet the target is
        # checked again only once the archive has grown by a tenth since its last failed check
        if (limit is not None and self.target_evaluations is None and float(np.max(std)) <= limit
                and self.evaluations >= self._next_target_check):
            self.target_evaluations = self.evaluations
        record_step(self.driver)  # the store's trace, for a reader watching the run

    def _evaluate(self, Z: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        values = self.game(Z)  # one call per design / batch
        self.timings["game_s"] += time.perf_counter() - start
        return values

    def _open_pool(self, design: np.ndarray) -> None:
        """The candidate pool around ``design`` (its coalitions excluded), all of it available."""
        p, opts = self.n_players, self.options
        # budgets in the thousands: the pool holds at least twice the acquisitions the budget allows
        # (a smaller pool would end the run early); below ~pool_size / 2 acquisitions nothing changes
        # (the default pool only: an explicit pool_size / max_candidates is kept as given)
        size = opts.pool_size
        if opts.pool_size == DEFAULT_POOL_SIZE and opts.max_candidates is None:
            size = max(size, 2 * self._max_acquisitions)
        # a pool raised for the budget is scored through seeded subsets of it (_candidate_rows)
        self._pool_raised = size > opts.pool_size
        self.pool = candidate_pool(p, design, self._pool_rng, size, opts.max_candidates)
        self.available = np.ones(len(self.pool), dtype=bool)
        if len(self.pool) < self._max_acquisitions:
            warnings.warn(
                f"candidate pool has {len(self.pool)} coalitions, fewer than the "
                f"{self._max_acquisitions} acquisitions the budget allows; stopping after "
                f"{p + 1 + len(self.pool)} evaluations",
                stacklevel=4,
            )
            self._max_acquisitions = len(self.pool)

    def refit_due(self, q: int) -> bool:
        """Whether the refit schedule asks for a refit over the next ``q`` acquisitions.

        Always before the first fit; never with fixed hyperparameters, nor when the archive has not
        grown since the last fit.

        Args:
            q: how many acquisitions the next selection makes.

        Returns:
            the flag.
        """
        if self.hyper is None:
            return True
        if self.fixed_hyperparameters is not None:
            return False
        if self._fitted_on == self.X.shape[0]:
            return False  # nothing new since the last fit (e.g. the fit right after the design)
        return any(self.schedule(self.iteration + i) for i in range(q))

    # -- public -------------------------------------------------------------------------------
    def start(self, *, evaluate: bool = True) -> np.ndarray:
        """Begin the run: the progress bar, the initial design and the candidate pool around it.

        Args:
            evaluate: evaluate the design now (one game call, timed as game time) and fit
                (:meth:`absorb_design`). False leaves the evaluations to the caller, who hands the
                values to :meth:`absorb_design`; the pool is open already, so coalitions can be
                selected meanwhile (:meth:`select_on`).

        Returns:
            ``bool[p + 1, p]``, the design coalitions in design order.
        """
        self._open_bar()
        design = self.draw_design()
        if evaluate:
            self.absorb_design(design, self._evaluate(design))
        else:
            self._open_pool(design)
        return design

    def draw_design(self) -> np.ndarray:
        """Draw the initial design (nothing is evaluated; call once per loop).

        Returns:
            ``bool[p + 1, p]``, the design coalitions in design order.
        """
        return initial_design(self.options.initial_design, self.n_players, self._design_rng)

    def absorb_design(self, design: np.ndarray, values: np.ndarray, *, record: bool = True) -> None:
        """Take the initial design's values: the candidate pool around it (unless open), the first fit and read-out.

        Args:
            design: ``bool[p + 1, p]``, the design :meth:`draw_design` (or :meth:`start`) returned,
                in its order.
            values: ``float64[p + 1]``, their values, charged to the game already.
            record: whether the anytime trace gets an entry (False when acquisitions evaluated
                meanwhile are absorbed next, the last of them recording).
        """
        self.X, self.y = np.array(design, dtype=bool), np.asarray(values, dtype=np.float64).copy()
        if self.pool is None:
            self._open_pool(design)
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            self._fit()
            if record:
                self._record()
        self.timings["selection_s"] += time.perf_counter() - start

    def capacity(self, outstanding: int | None = None) -> int:
        """How many more coalitions may be selected now.

        Bounded by the acquisitions left, the budget not yet charged or outstanding, and the
        available pool; 0 once the run is finished or its precision target is met.

        Args:
            outstanding: coalitions out for evaluation and not yet charged to the game (None: the
                reserved ones, marked by :meth:`reserve` and not yet taken by :meth:`absorb`). A
                scheduler that submits the design itself passes its own count.

        Returns:
            the count (0 before the pool is open).
        """
        if self.pool is None or self._finished or self.target_evaluations is not None:
            return 0
        if outstanding is None:
            outstanding = len(self._reserved)
        return max(0, min(self._max_acquisitions - self.iteration, self.budget - self.evaluations - outstanding,
                          int(self.available.sum())))

    def select(self, q: int, *, allow_refit: bool = True) -> np.ndarray:
        """The next ``q`` pool indices, conditioned on every reserved coalition (nothing is marked).

        Refits first when the refit schedule asks for one over the next ``q`` acquisitions and the
        archive has grown since the last fit (else the raw-units noise is refreshed); the picks are
        conditioned on in the candidate state, so a later :meth:`absorb` of their values keeps it exact.

        Args:
            q: how many coalitions (at most :meth:`capacity`).
            allow_refit: False: never refit here (the caller refits, e.g. in the background with
                :meth:`start_refit` / :meth:`adopt_refit`); the raw-units noise is still refreshed.

        Returns:
            ``int64[q]``, rows of ``pool.W``.
        """
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            if allow_refit and self.refit_due(q):
                self._fit()
            else:
                self._refresh_noise()
            picks = self._select(q)
        self.timings["selection_s"] += time.perf_counter() - start
        return picks

    def select_on(self, candidates: CandidatePosterior, q: int) -> np.ndarray:
        """The next ``q`` pool indices chosen on a given candidate state (nothing is marked, no refit).

        For selections before the first fit, e.g. on the prior's state while the initial design is
        being evaluated (the asynchronous loop's overlap). An acquisition that needs no posterior
        draws from the pool's availability as :meth:`select` does.

        Args:
            candidates: a candidate state over every row of ``pool.W``; an acquisition that uses
                it conditions it on its picks.
            q: how many coalitions (at most :meth:`capacity`).

        Returns:
            ``int64[q]``, rows of ``pool.W``.
        """
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            picks = self._pick(q, lambda: (candidates, None))
        self.timings["selection_s"] += time.perf_counter() - start
        return picks

    def reserve(self, picks: np.ndarray) -> np.ndarray:
        """Mark the pool rows ``picks`` (from :meth:`select`) as asked: pending until :meth:`absorb`.

        Args:
            picks: rows of ``pool.W``.

        Returns:
            ``bool[k, p]``, the coalitions.
        """
        for j in picks:
            self._reserved[self.pool.W[j].tobytes()] = int(j)
        self.available[picks] = False
        self.iteration += len(picks)
        return self.pool.W[picks].copy()

    def absorb(self, Z: np.ndarray, values: np.ndarray, *, record: bool = True) -> None:
        """Append evaluated acquisitions to the archive and extend the posterior (same hyperparameters).

        The candidate state already holds them (they were conditioned on when selected).

        Args:
            Z: ``bool[k, p]``, selected coalitions, reserved or not.
            values: ``float64[k]``, their values.
            record: whether the anytime trace gets an entry.
        """
        start = time.perf_counter()
        values = np.asarray(values, dtype=np.float64)
        for row in Z:
            self._reserved.pop(row.tobytes(), None)
        self.X = np.concatenate([self.X, Z])
        self.y = np.concatenate([self.y, values])
        with compute_threads(self.options.threads):
            # Same hyperparameters: the extended posterior matches the conditioned candidate state.
            self.mixture = self.mixture.extend(Z, values)
            self.posterior = self.mixture.primary.posterior
            if record:
                self._record()
        self.selected.append(Z.copy())
        self.timings["update_s"] += time.perf_counter() - start

    def step(self) -> bool:
        """Run one step (the initial design first, then one batch); returns False once done.

        Thread limits (``threads``) apply to the loop's own computations only, never to the game.

        Returns:
            True after a step that ran, False once the loop is done.
        """
        if self.pool is None:
            self.start()
            self.end_step()
            return True
        if self.done:
            return False
        picks = self.select(min(self.step_size(), self.capacity()))
        Z = self.pool.W[picks]
        values = self._evaluate(Z)
        # marked only once evaluated (a failed evaluation leaves the state as it was), and the
        # acquisitions counted after the step's trace entry, as they always were
        self.available[picks] = False
        self.absorb(Z, values)
        self.iteration += len(picks)
        self.end_step()
        return True

    def _open_bar(self) -> None:
        """The one progress bar (``options.progress``).

        The game's, when a caller (``estimate``) already attached one, else one this loop attaches
        to its game and closes at :meth:`finish`.
        """
        if self.options.progress and self._bar is None and self.game.progress_bar is None:
            self._bar = evaluation_progress_bar(self.game, self.n_players, self.budget,
                                                f"shapleig {self.acquisition}")

    def _close_bar(self) -> None:
        if self._bar is not None:
            self.game.progress_bar = None
            self._bar.close()
            self._bar = None

    def end_step(self) -> None:
        """Close a step: count it (``n_steps``) and run the callbacks, each called with :attr:`driver`."""
        self.n_steps += 1
        for cb in self.options.callbacks:
            cb(self.driver)

    def finish(self) -> ShapleyEstimate:
        """Final refit (if enabled and the last fit missed evaluations) and the final estimate.

        Returns:
            the final :class:`ShapleyEstimate`.
        """
        if self.pool is None:
            raise RuntimeError("finish() before any step")
        if self.final_refit_due():
            self._final_refit()
        if self.options.draws and self.kernel_fits and self.fixed_hyperparameters is None:
            self._integrate()
        self._read_structures()
        limit = self.target_threshold()
        if self.target_evaluations is None and limit is not None and float(np.max(self.estimate_std())) <= limit:
            self.target_evaluations = self.evaluations  # the budget ran out where the reported interval meets it
        if self.degenerate_evidence():
            logger.warning("degenerate evidence: the fitted kernel predicts the evaluations from each other almost "
                           "exactly (a low-dimensional structure such as an additive game, a dictator or a function "
                           "of the coalition size); the intervals assume that structure holds where the design did "
                           "not look (info['degenerate_evidence']); more evaluations test it")
        self._finished = True
        self._close_bar()
        est = self.current_estimate()
        record_finish(self.driver, est)  # the final read-out replaced the last entry: the store's trace follows
        return est

    def current_estimate(self) -> ShapleyEstimate:
        """The estimate on the archive so far, under the hyperparameters in force (no refit: the state is kept).

        :meth:`finish` returns it after the final refit and read-out.

        Returns:
            the :class:`ShapleyEstimate` (values, std, covariance, the anytime trace and ``info``).
        """
        if self.mixture is None:
            raise RuntimeError("no estimate before the first fit")
        post = self.mixture
        empty = ~self.X.any(axis=1)
        baseline = float(self.y[np.flatnonzero(empty)[0]]) if empty.any() else None
        return ShapleyEstimate(
            values=post.mean,
            evaluations=self.evaluations,
            budget=self.budget,
            std=post.std,
            covariance=post.covariance,
            trace=list(self.trace),
            trace_std=list(self.trace_std),
            baseline=baseline,
            method=method_name(self.acquisition_function),
            info=self.driver.info(),
            index=self.operator.index,
            terms=list(self.operator.terms),
        )

    def run(self) -> ShapleyEstimate:
        """Run until the budget (or the pool) is spent, or the precision target is met; return the estimate.

        A target met under the step's hyperparameters is confirmed by the final refit: if the
        refitted posterior misses it, the loop goes on acquiring.

        Returns:
            the :class:`ShapleyEstimate` (values, std, covariance, the anytime trace and ``info``).
        """
        while True:
            while self.step():
                pass
            if not self.confirm_target():
                continue
            return self.finish()

    def final_refit_due(self) -> bool:
        """Whether :meth:`finish` (and :meth:`confirm_target`) refit: ``final_refit`` on, fitted hyperparameters, rows since the last fit.

        Returns:
            the flag.
        """
        return self.options.final_refit and self._fitted_on != self.X.shape[0] and self.fixed_hyperparameters is None

    def _final_refit(self) -> None:
        """Refit on the whole archive; the read-out replaces the last anytime entry (same evaluations)."""
        start = time.perf_counter()
        with compute_threads(self.options.threads):
            self._fit()
        self.timings["selection_s"] += time.perf_counter() - start
        self.trace[-1] = (self.evaluations, self.estimate_values())
        self.trace_std[-1] = (self.evaluations, self.estimate_std())

    def _readout_rows(self) -> np.ndarray:
        """The archive rows the read-out's fits use: those of a refit (:meth:`_fit_rows`), without the empty coalition for held-out indices."""
        rows = self._fit_rows()
        if self.operator.hold_out_empty:
            rows = rows[self.X.any(axis=1)]
        return rows

    def _structure_readout(self) -> StructurePosterior | None:
        """The ``structures`` read-out beside the current mixture (None: nothing to add)."""
        if not self.options.structures or self.fixed_hyperparameters is not None or not self.kernel_fits:
            return None
        fitted = self.mixture.fitted if isinstance(self.mixture, StructurePosterior) else self.mixture
        with compute_threads(self.options.threads):
            # the probe kernel doubts a degenerate structure until the probes have confirmed it
            doubt = self.degenerate_evidence() and not self._structure_confirmed()
            probe = probe_hyperparameters(self.n_players, self.hyper.noise) if doubt else None
            return structure_posterior(fitted, self.X, self.y, self._readout_rows(), self.options, self.operator,
                                       seed=self._fit_seed(3_000_000 + self.n_refits), probe=probe,
                                       kernel_fits=self.kernel_fits)

    def _read_structures(self) -> None:
        """The structure families widen the final read-out (:mod:`shapleig.gp.structures`); the mean stays."""
        start = time.perf_counter()
        post = self._structure_readout()
        self.timings["selection_s"] += time.perf_counter() - start
        if post is not None:
            self.mixture = post
            self.trace_std[-1] = (self.evaluations, self.estimate_std())

    def degenerate_evidence(self) -> bool:
        """Whether the most probable kernel predicts 90% of the evaluations from the others (to 1% of their std).

        Then the archive is explained exactly by a low-dimensional structure (an additive game, a
        dictator, a function of the coalition size): the posterior is nearly certain everywhere, and
        its intervals are only as good as that structure, which the design may have confirmed on a
        slice of the game where it happens to hold. Judged on at most :data:`DEGENERATE_MAX_POINTS`
        evaluations (a seeded subset beyond).

        Returns:
            the flag (False before the first fit).
        """
        if self.posterior is None or self.X.shape[0] <= self.n_players + 1:
            return False
        errors = self.posterior.loo_errors(DEGENERATE_MAX_POINTS, np.random.default_rng(self.X.shape[0]))
        # a quantile, not the maximum: the empty and grand coalitions (or any lone coalition size) stand
        # apart from a structure that predicts all the others, e.g. one of the size alone
        return bool(np.quantile(np.abs(errors), DEGENERATE_QUANTILE) <= DEGENERATE_LOO_ERROR)

    def _integrate(self) -> None:
        """The final read-out with the hyperparameters integrated; replaces the last anytime entry.

        ``integrate`` draws per kernel around the last MAP fits (:mod:`shapleig.gp.integrate`).
        """
        start = time.perf_counter()
        rows = self._readout_rows()
        with compute_threads(self.options.threads):
            kernels = integrated_kernels(self.X[rows], self.y[rows], self.kernel_fits, self.options.draws,
                                         seed=self._fit_seed(2_000_000 + self.n_refits))
            self._rebuild(kernels)
        self.timings["selection_s"] += time.perf_counter() - start
        self.trace[-1] = (self.evaluations, self.estimate_values())
        self.trace_std[-1] = (self.evaluations, self.estimate_std())

    def confirm_target(self) -> bool:
        """Check a met precision target against the read-out a stop would report (after the final refit).

        Returns:
            False when the target was met but that read-out no longer meets it (the target is then
            reset and the run goes on acquiring, unless nothing is left to spend); True otherwise.
        """
        if self.target_evaluations is None:
            return True
        refit = self.final_refit_due()
        if refit:
            self._final_refit()
        # the interval a stopped run reports: with structures, the widened one (an honest tol)
        readout = self._structure_readout()
        if readout is None and not refit:
            return True  # the read-out that met the target is the one reported
        std = self.estimate_std() if readout is None else readout.std
        if float(np.max(std)) <= self.target_threshold():
            return True
        self._next_target_check = self.evaluations + max(1, self.evaluations // 10)
        self.target_evaluations = None
        return self.done  # nothing left to spend: finish with the target missed

    def own_trace_recorder(self) -> TraceRecorder | None:
        """The recorder of this loop's trace in its store, started at the first call (a loop run by hand).

        A run of ``estimate()`` records through the recorder it attached to the game instead
        (:func:`~shapleig.design.trace_hook.loop_recorder`); this one is started only when asked.

        Returns:
            the recorder, or None when the store cannot hold a trace (or there is no store).
        """
        if not self._trace_started:  # None is a result too: a store without a trace is not asked again
            self._trace_recorder, self._trace_started = start_loop_trace(self), True
        return self._trace_recorder

    def info(self) -> dict[str, Any]:
        """Diagnostics: configuration, timings (selection = fits + EIG over the pool, game excluded).

        Returns:
            ``{name: value}``: the options, the index, the hyperparameters, the refit schedule and the
            timings.
        """
        h = self.hyper
        return {
            **self.options.info(),
            "index": self.operator.index,
            "max_order": self.operator.max_order,
            "acquisition_index": self.acquisition_operator.index,
            "acquisition_order": self.acquisition_operator.max_order,
            "hold_out_empty": self.operator.hold_out_empty,
            "refit": "fixed" if self.fixed_hyperparameters is not None else self.refit_name,
            "seed": self.seed,
            "noise_standardized": None if h is None else h.noise,
            "ard": self.ard,
            "kernel_weights": None if self.mixture is None else self.mixture.weights,
            "calibration": None if self.mixture is None else {c.name: c.tau for c in self.mixture.components
                                                               if "~" not in c.name},
            "target_threshold": self.target_threshold() if self.pool is not None else None,
            "target_reached": self.target_evaluations is not None,
            "target_evaluations": self.target_evaluations,
            "pool_candidates": 0 if self.pool is None else len(self.pool),
            "pool_exhaustive": None if self.pool is None else self.pool.exhaustive,
            "pool_border_sizes": None if self.pool is None else list(self.pool.border_sizes),
            "iterations": self.iteration,
            "steps": self.n_steps,
            "n_fits": self.n_refits,
            "n_kernel_fits": len(self.fits),
            "n_fit_failures": sum(not f.success for f in self.fits),
            "fit_attempts": sum(f.attempts for f in self.fits),
            "fit_seconds": self.timings["fit_s"],
            "selection_seconds": self.timings["selection_s"],
            "update_seconds": self.timings["update_s"],
            "game_seconds": self.timings["game_s"],
            **kernel_info(h),
            "jitter": None if self.posterior is None else self.posterior.jitter,
            "degenerate_evidence": self.degenerate_evidence(),
            "probe_steps": self.n_probe_steps,
            "structures_readout": self._structures_info(),
        }

    def _structures_info(self) -> dict[str, Any] | None:
        """The structure read-out's family weights and disagreement (None when not in force)."""
        if not isinstance(self.mixture, StructurePosterior):
            return None
        return {"weights": self.mixture.family_weights, "max_shift_over_std": self.mixture.disagreement()}

    def __repr__(self) -> str:
        return (f"DesignLoop(p={self.n_players}, budget={self.budget}, acquisition={self.acquisition!r}, "
                f"refit={self.refit_name!r}, evaluations={self.evaluations})")
