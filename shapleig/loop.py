"""``DesignLoop``: initial design -> fit -> acquire -> evaluate -> update, until the budget is spent.

Math doc §9. The loop spends budget only through a :class:`~shapleig.game.BudgetedGame`: the initial
design is evaluated with one call and every batch of ``q`` selected coalitions with one call (so an
evaluator can run a batch concurrently). Between refits the hyperparameters are frozen and the
candidate state is updated incrementally (exact, value-independent, §10); at a refit everything is
rebuilt from scratch. After every step the posterior mean under the hyperparameters in force is
appended to the trace, so the run is an anytime estimator.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Callable, Iterable

import numpy as np

from .acquisition import check_acquisition, random_indices, select
from .design import DEFAULT_POOL_SIZE, INITIAL_DESIGNS, CandidatePool, candidate_pool, initial_design
from .errors import BudgetError
from .estimate import ShapleyEstimate
from .game import BudgetedGame, Game, check_budget, check_game
from .posterior import CandidatePosterior, Hyperparameters, ShapleyPosterior, standardize
from .surrogate import (
    NOISE_CONVENTIONS,
    FitResult,
    check_fit_engine,
    compute_threads,
    fit_hyperparameters,
    refit_schedule,
    standardized_noise,
)

logger = logging.getLogger(__name__)

# Independent random streams derived from the loop seed (SeedSequence.spawn order).
_DESIGN, _POOL, _SELECT, _FIT = range(4)


def min_budget(n_players: int) -> int:
    """Smallest budget the loop accepts: the p + 1 design coalitions plus one acquisition."""
    return n_players + 2


def check_gp_options(noise: float, noise_convention: str, ard: bool) -> None:
    """Validate the GP surrogate's options (shared by every GP arm) before anything is evaluated."""
    if not isinstance(ard, (bool, np.bool_)):
        raise ValueError(f"ard must be True (one lengthscale per player) or False (one shared), got {ard!r}")
    if noise_convention not in NOISE_CONVENTIONS:
        raise ValueError(f"unknown noise convention {noise_convention!r}; choose one of {NOISE_CONVENTIONS}")
    standardized_noise(noise, 1.0, noise_convention)  # validates noise


def check_loop_options(
    acquisition: str,
    refit: str | Callable[[int], bool],
    hand_over: int,
    initial_design: str,
    noise: float,
    noise_convention: str,
    batch_size: int,
    pool_size: int,
    ard: bool = True,
) -> str:
    """Validate a loop configuration before anything is evaluated; return the acquisition name."""
    name = check_acquisition(acquisition)
    refit_schedule(refit, hand_over=hand_over)
    if initial_design not in INITIAL_DESIGNS:
        raise ValueError(f"unknown initial design {initial_design!r}; choose one of {INITIAL_DESIGNS}")
    check_gp_options(noise, noise_convention, ard)
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if int(pool_size) < 1:
        raise ValueError(f"pool_size must be >= 1, got {pool_size}")
    return name


class DesignLoop:
    """Bayesian experimental design for the Shapley values of ``game``.

    game:             a :class:`Game`, or an existing :class:`BudgetedGame` (then ``budget`` defaults
                      to its remaining evaluations and ``store``/``evaluator`` must be None).
    budget:           distinct evaluations to spend, empty and grand included; must exceed p + 1.
    acquisition:      ``"eig"`` (ShaplEIG), ``"uncertainty"`` (posterior variance) or ``"random"``.
    refit:            schedule name (``"every"``, ``"decaying"``, ``"geometric"``, ``"never"``) or a
                      callable ``it -> bool``; ``hand_over`` is the geometric schedule's offset.
    initial_design:   ``"leverage"`` (paired uniform-size) or ``"uniform"``.
    pool_size:        candidate pool size (exhaustive pool when 2^p - (p+1) <= pool_size).
    batch_size:       q coalitions selected per step (exact greedy batch under frozen hyperparameters).
    noise, noise_convention: fixed noise variance and its units (``"standardized"`` or ``"raw"``).
    final_refit:      refit on the full archive before the final read-out (unless just refitted).
    warm_start:       start each refit from the previous hyperparameters instead of the §3 values.
    ard:              one lengthscale per player (True, as published) or one shared by all (False):
                      far fewer parameters to fit from the p + 1 ... ~8p points of a small budget.
    callbacks:        callables ``cb(loop)`` run after every step.
    progress:         show a tqdm progress bar (evaluations).
    hyperparameters:  fixed hyperparameters (standardised units, used verbatim): no fit ever runs, so
                      the whole selection sequence is value-independent (§10).
    fit_engine:       ``"gpytorch"`` (botorch's fit) or ``"numpy"`` (:mod:`shapleig.fit`, same MAP
                      objective, analytic gradient, several times faster).
    max_retries:      retries of a coalition whose evaluation raises or returns NaN/inf, before the
                      loop stops with an error naming it (everything evaluated so far is kept).
    threads:          torch/BLAS threads while the loop computes (None: leave the pools alone); the
                      matrices are small and idle thread pools slow them down on shared machines.
    """

    def __init__(
        self,
        game: Game | BudgetedGame,
        budget: int | None = None,
        acquisition: str = "eig",
        refit: str | Callable[[int], bool] = "every",
        initial_design: str = "leverage",
        pool_size: int = DEFAULT_POOL_SIZE,
        batch_size: int = 1,
        seed: int = 0,
        callbacks: Iterable[Callable[["DesignLoop"], Any]] = (),
        progress: bool = True,
        noise: float = 1e-6,
        noise_convention: str = "standardized",
        final_refit: bool = True,
        store: Any = None,
        evaluator: Any = None,
        *,
        warm_start: bool = False,
        ard: bool = True,
        hand_over: int = 0,
        max_candidates: int | None = None,
        threads: int | None = 1,
        hyperparameters: Hyperparameters | None = None,
        max_retries: int = 1,
        fit_engine: str = "gpytorch",
    ) -> None:
        p = check_game(game)
        if isinstance(game, BudgetedGame):
            if store is not None or evaluator is not None:
                raise ValueError("pass store/evaluator to the BudgetedGame, not to a DesignLoop wrapping one")
            budget = game.remaining if budget is None else check_budget(budget)
            if budget > game.remaining:
                raise BudgetError(f"budget {budget} exceeds the {game.remaining} evaluations left in the BudgetedGame")
        elif budget is None:
            raise BudgetError("budget is required")
        else:
            budget = check_budget(budget)
        if budget < min_budget(p):
            raise BudgetError(
                f"budget {budget} is too small: ShaplEIG with p = {p} needs more than p + 1 = {p + 1} "
                f"evaluations (the initial design), i.e. at least {min_budget(p)}"
            )
        self.acquisition = check_loop_options(
            acquisition, refit, hand_over, initial_design, noise, noise_convention, batch_size, pool_size, ard
        )
        self.refit_name = refit if isinstance(refit, str) else getattr(refit, "__name__", "custom")
        self.schedule = refit_schedule(refit, hand_over=hand_over)
        if hasattr(self.schedule, "bind"):  # stateful schedules (e.g. "adaptive") read this loop
            self.schedule = self.schedule.bind(self)
        self.fit_engine = check_fit_engine(fit_engine)

        self.game = game if isinstance(game, BudgetedGame) else BudgetedGame(
            game, budget, store=store, evaluator=evaluator, max_retries=max_retries
        )
        self.n_players = p
        self.budget = int(budget)
        self.initial_design_name = initial_design
        self.pool_size = int(pool_size)
        self.max_candidates = max_candidates
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.callbacks = tuple(callbacks)
        self.progress = bool(progress)
        self.noise = float(noise)
        self.noise_convention = noise_convention
        self.final_refit = bool(final_refit)
        self.warm_start = bool(warm_start)
        self.ard = bool(ard)
        self.threads = threads
        if hyperparameters is not None and hyperparameters.n_players != p:
            raise ValueError(f"hyperparameters are for p = {hyperparameters.n_players}, the game has p = {p}")
        self.fixed_hyperparameters = hyperparameters

        seq = np.random.SeedSequence(self.seed)
        children = seq.spawn(4)
        self._design_rng = np.random.default_rng(children[_DESIGN])
        self._pool_rng = np.random.default_rng(children[_POOL])
        self._select_rng = np.random.default_rng(children[_SELECT])
        self._fit_seq = children[_FIT]
        self._start_evaluations = self.game.evaluations

        # state
        self.X = np.zeros((0, p), dtype=bool)
        self.y = np.zeros(0)
        self.pool: CandidatePool | None = None
        self.available: np.ndarray | None = None  # bool over the original pool
        self.hyper: Hyperparameters | None = None
        self.posterior: ShapleyPosterior | None = None
        self._candidates: CandidatePosterior | None = None
        self._cand_index: np.ndarray | None = None  # candidate-posterior index -> pool index
        self._fitted_on = -1  # archive size at the last fit
        self.iteration = 0  # acquisitions made so far ("it" of the schedule)
        self.n_steps = 0
        self.trace: list[tuple[int, np.ndarray]] = []
        self.fits: list[FitResult] = []
        self.selected: list[np.ndarray] = []  # per step, the pool rows picked
        # selection = fits + candidate state + acquisition; update = posterior extension + read-out
        self.timings: dict[str, float] = {"fit_s": 0.0, "selection_s": 0.0, "update_s": 0.0, "game_s": 0.0}
        self._max_acquisitions = self.budget - (p + 1)
        self._finished = False
        self._bar = None

    # -- properties ---------------------------------------------------------------------------
    @property
    def evaluations(self) -> int:
        """Evaluations this loop has charged so far."""
        return self.game.evaluations - self._start_evaluations

    @property
    def done(self) -> bool:
        if self.pool is None:
            return False
        return (
            self._finished
            or self.iteration >= self._max_acquisitions
            or self.evaluations >= self.budget
            or not self.available.any()
        )

    def estimate_values(self) -> np.ndarray:
        """Current estimate: posterior mean of phi under the hyperparameters in force, float64[p]."""
        if self.posterior is None:
            raise RuntimeError("no estimate before the first step")
        return self.posterior.mean.copy()

    # -- internals ----------------------------------------------------------------------------
    def _fit_seed(self, index: int) -> int:
        child = np.random.SeedSequence(self._fit_seq.entropy, spawn_key=self._fit_seq.spawn_key + (index,))
        return int(child.generate_state(1, dtype=np.uint32)[0])

    def _fit(self) -> None:
        if self.fixed_hyperparameters is not None:
            self.hyper = self.fixed_hyperparameters
            self._fitted_on = self.X.shape[0]
            self._rebuild()
            return
        result = fit_hyperparameters(
            self.X,
            self.y,
            seed=self._fit_seed(len(self.fits)),
            noise=self.noise,
            noise_convention=self.noise_convention,
            warm_start=self.hyper if (self.warm_start and self.hyper is not None) else None,
            fallback=self.hyper,
            threads=None,  # the loop already limits threads around every step
            ard=self.ard,
            engine=self.fit_engine,
        )
        self.fits.append(result)
        self.timings["fit_s"] += result.seconds
        if not result.success:
            logger.warning("fit %d failed (%s); keeping previous hyperparameters", len(self.fits), result.message)
        self.hyper = result.hyper
        self._fitted_on = self.X.shape[0]
        self._rebuild()

    def _rebuild(self) -> None:
        """Posterior and candidate state from scratch (after a refit or a noise change)."""
        self.posterior = ShapleyPosterior(self.hyper, self.X, self.y)
        self._candidates = None  # built lazily: the final read-out does not need it

    def _candidate_state(self) -> CandidatePosterior:
        if self._candidates is None:
            self._cand_index = np.flatnonzero(self.available)
            self._candidates = self.posterior.candidates(self.pool.W[self._cand_index])
        return self._candidates

    def _refresh_noise(self) -> None:
        """Under the raw-units convention the standardised noise follows s_y; rebuild if it moved."""
        if self.noise_convention != "raw" or self.hyper is None or self.fixed_hyperparameters is not None:
            return
        _, _, scale = standardize(self.y)
        new = standardized_noise(self.noise, scale, "raw")
        if new != self.hyper.noise:
            h = self.hyper
            self.hyper = Hyperparameters(h.lengthscales, h.outputscale, new, h.mean_constant)
            self._rebuild()

    def _record(self) -> None:
        self.trace.append((self.evaluations, self.estimate_values()))

    def _evaluate(self, Z: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        values = self.game(Z)  # one call per design / batch
        self.timings["game_s"] += time.perf_counter() - start
        return values

    def _initialize(self) -> None:
        p = self.n_players
        design = initial_design(self.initial_design_name, p, self._design_rng)
        values = self._evaluate(design)
        self.X, self.y = design.copy(), np.asarray(values, dtype=np.float64)
        self.pool = candidate_pool(p, design, self._pool_rng, self.pool_size, self.max_candidates)
        self.available = np.ones(len(self.pool), dtype=bool)
        if len(self.pool) < self._max_acquisitions:
            warnings.warn(
                f"candidate pool has {len(self.pool)} coalitions, fewer than the "
                f"{self._max_acquisitions} acquisitions the budget allows; stopping after "
                f"{p + 1 + len(self.pool)} evaluations",
                stacklevel=3,
            )
            self._max_acquisitions = len(self.pool)
        start = time.perf_counter()
        with compute_threads(self.threads):
            self._fit()
            self._record()
        self.timings["selection_s"] += time.perf_counter() - start

    def _refit_due(self, q: int) -> bool:
        if self.hyper is None:
            return True
        if self.fixed_hyperparameters is not None:
            return False
        if self._fitted_on == self.X.shape[0]:
            return False  # nothing new since the last fit (e.g. the fit right after the design)
        return any(self.schedule(self.iteration + i) for i in range(q))

    # -- public -------------------------------------------------------------------------------
    def step(self) -> bool:
        """Run one step (the initial design first, then one batch); returns False once done.

        Thread limits (``threads``) apply to the loop's own computations only, never to the game.
        """
        if self.pool is None:
            self._open_bar()
            self._initialize()
            self._after_step()
            return True
        if self.done:
            return False
        q = min(self.batch_size, self._max_acquisitions - self.iteration,
                self.budget - self.evaluations, int(self.available.sum()))
        start = time.perf_counter()
        with compute_threads(self.threads):
            if self._refit_due(q):
                self._fit()
            else:
                self._refresh_noise()
            if self.acquisition == "random":
                # no candidate state needed: same draw as select("random", ...) over the same mask
                picks = random_indices(self.available, q, self._select_rng)
            else:
                cand = self._candidate_state()
                picks = self._cand_index[select(self.acquisition, cand, q, self._select_rng)]
        self.timings["selection_s"] += time.perf_counter() - start
        Z = self.pool.W[picks]
        values = self._evaluate(Z)
        start = time.perf_counter()
        self.available[picks] = False
        self.X = np.concatenate([self.X, Z])
        self.y = np.concatenate([self.y, np.asarray(values, dtype=np.float64)])
        with compute_threads(self.threads):
            # Same hyperparameters: the extended posterior matches the conditioned candidate state.
            self.posterior = self.posterior.extend(Z, values)
            self._record()
        self.iteration += len(picks)
        self.selected.append(Z.copy())
        self.timings["update_s"] += time.perf_counter() - start
        self._after_step()
        return True

    def _open_bar(self) -> None:
        if self.progress and self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.budget, desc=f"shapleig {self.acquisition}", unit="eval")

    def _after_step(self) -> None:
        self.n_steps += 1
        if self._bar is not None:
            self._bar.n = self.evaluations
            self._bar.refresh()
        for cb in self.callbacks:
            cb(self)

    def finish(self) -> ShapleyEstimate:
        """Final refit (if enabled and the last fit missed evaluations) and the final estimate."""
        if self.pool is None:
            raise RuntimeError("finish() before any step")
        if self.final_refit and self._fitted_on != self.X.shape[0] and self.fixed_hyperparameters is None:
            start = time.perf_counter()
            with compute_threads(self.threads):
                self._fit()
            self.timings["selection_s"] += time.perf_counter() - start
            # the final read-out replaces the last anytime entry at the same evaluation count
            self.trace[-1] = (self.evaluations, self.estimate_values())
        self._finished = True
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        post = self.posterior
        empty = ~self.X.any(axis=1)
        baseline = float(self.y[np.flatnonzero(empty)[0]]) if empty.any() else None
        return ShapleyEstimate(
            values=post.mean.copy(),
            evaluations=self.evaluations,
            budget=self.budget,
            std=post.std.copy(),
            covariance=post.covariance.copy(),
            trace=list(self.trace),
            baseline=baseline,
            method="shapleig" if self.acquisition == "eig" else f"shapleig-{self.acquisition}",
            info=self.info(),
        )

    def run(self) -> ShapleyEstimate:
        """Run until the budget (or the pool) is spent; return the final estimate."""
        while self.step():
            pass
        return self.finish()

    def info(self) -> dict[str, Any]:
        """Diagnostics: configuration, timings (selection = fits + EIG over the pool, game excluded)."""
        h = self.hyper
        return {
            "acquisition": self.acquisition,
            "refit": "fixed" if self.fixed_hyperparameters is not None else self.refit_name,
            "initial_design": self.initial_design_name,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "noise": self.noise,
            "noise_convention": self.noise_convention,
            "noise_standardized": None if h is None else h.noise,
            "final_refit": self.final_refit,
            "warm_start": self.warm_start,
            "ard": self.ard,
            "fit_engine": self.fit_engine,
            "pool_size": self.pool_size,
            "pool_candidates": 0 if self.pool is None else len(self.pool),
            "pool_exhaustive": None if self.pool is None else self.pool.exhaustive,
            "pool_border_sizes": None if self.pool is None else list(self.pool.border_sizes),
            "iterations": self.iteration,
            "steps": self.n_steps,
            "n_fits": len(self.fits),
            "n_fit_failures": sum(not f.success for f in self.fits),
            "fit_attempts": sum(f.attempts for f in self.fits),
            "fit_seconds": self.timings["fit_s"],
            "selection_seconds": self.timings["selection_s"],
            "update_seconds": self.timings["update_s"],
            "game_seconds": self.timings["game_s"],
            "lengthscales": None if h is None else h.lengthscales.tolist(),
            "outputscale": None if h is None else h.outputscale,
            "mean_constant": None if h is None else h.mean_constant,
            "jitter": None if self.posterior is None else self.posterior.jitter,
        }

    def __repr__(self) -> str:
        return (f"DesignLoop(p={self.n_players}, budget={self.budget}, acquisition={self.acquisition!r}, "
                f"refit={self.refit_name!r}, evaluations={self.evaluations})")
