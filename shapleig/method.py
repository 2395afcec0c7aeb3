"""``ShaplEIG``: the estimator front of the design loop (one ``estimate(game, budget, seed)`` verb)."""

from __future__ import annotations

import time
from typing import Callable, ClassVar

import numpy as np

from .design import DEFAULT_POOL_SIZE, leverage_design
from .estimate import BaseEstimator, ShapleyEstimate
from .game import BudgetedGame
from .loop import DesignLoop, check_gp_options, check_loop_options, min_budget
from .posterior import ShapleyPosterior
from .seeding import spawn_generators, spawn_seeds
from .surrogate import check_fit_engine, compute_threads, fit_hyperparameters


class ShaplEIG(BaseEstimator):
    """Bayesian experimental design for Shapley values (Rundel et al., ICML 2026).

    A Hamming-kernel GP surrogate; each step selects the coalition(s) with the largest closed-form
    expected information gain about the Shapley vector. The estimate is the posterior mean, with
    posterior std, covariance and an anytime trace. Configuration only here; work happens in
    :meth:`estimate` (see :class:`~shapleig.loop.DesignLoop` for the meaning of every option).
    ``acquisition="uncertainty"`` / ``"random"`` give the GP ablations.
    """

    name: ClassVar[str] = "shapleig"

    def __init__(
        self,
        acquisition: str = "eig",
        refit: str | Callable[[int], bool] = "every",
        initial_design: str = "leverage",
        pool_size: int = DEFAULT_POOL_SIZE,
        batch_size: int = 1,
        noise: float = 1e-6,
        noise_convention: str = "standardized",
        final_refit: bool = True,
        progress: bool = False,
        warm_start: bool = False,
        ard: bool = True,
        hand_over: int = 0,
        callbacks: tuple = (),
        fit_engine: str = "gpytorch",
    ) -> None:
        # validate eagerly so a bad configuration fails before any evaluation
        self.acquisition = check_loop_options(
            acquisition, refit, hand_over, initial_design, noise, noise_convention, batch_size, pool_size, ard
        )
        self.refit = refit
        self.initial_design = initial_design
        self.pool_size = int(pool_size)
        self.batch_size = int(batch_size)
        self.noise = float(noise)
        self.noise_convention = noise_convention
        self.final_refit = bool(final_refit)
        self.progress = bool(progress)
        self.warm_start = bool(warm_start)
        self.ard = bool(ard)
        self.hand_over = int(hand_over)
        self.callbacks = tuple(callbacks)
        self.fit_engine = check_fit_engine(fit_engine)

    def min_budget(self, n_players: int) -> int:
        """``p + 2``: the p + 1 design coalitions and at least one acquisition."""
        return min_budget(n_players)

    def min_budget_reason(self, n_players: int) -> str:
        return (f"the p + 1 = {n_players + 1} initial-design evaluations (empty, grand and p - 1 "
                f"paired coalitions) plus at least one acquisition")

    def make_loop(self, game: BudgetedGame, seed: int = 0) -> DesignLoop:
        """The configured :class:`DesignLoop` on ``game``, spending its remaining budget."""
        return DesignLoop(
            game,
            None,
            acquisition=self.acquisition,
            refit=self.refit,
            initial_design=self.initial_design,
            pool_size=self.pool_size,
            batch_size=self.batch_size,
            seed=seed,
            callbacks=self.callbacks,
            progress=self.progress,
            noise=self.noise,
            noise_convention=self.noise_convention,
            final_refit=self.final_refit,
            warm_start=self.warm_start,
            ard=self.ard,
            hand_over=self.hand_over,
            fit_engine=self.fit_engine,
        )

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        result = self.make_loop(game, seed).run()
        result.method = self.name if self.acquisition == "eig" else f"{self.name}-{self.acquisition}"
        return result


class GPLeverage(BaseEstimator):
    """The GP+Leverage ablation arm (baselines.md §10): no acquisition, one leverage sample.

    At budget m it evaluates the empty and grand coalitions plus m - 2 distinct coalitions from the
    paired uniform-size sampler (the leverage-score distribution that also draws ShaplEIG's initial
    design), in one game call, fits ShaplEIG's GP once (MAP, same prior, noise and options) and
    reads out the posterior mean, std and covariance of the Shapley values. A new budget is a new
    sample, not an extension, so it is not anytime: the harness reruns it at every budget.
    """

    name: ClassVar[str] = "shapleig-leverage"
    anytime: ClassVar[bool] = False

    def __init__(
        self,
        noise: float = 1e-6,
        noise_convention: str = "standardized",
        ard: bool = True,
        threads: int | None = 1,
    ) -> None:
        check_gp_options(noise, noise_convention, ard)
        self.noise = float(noise)
        self.noise_convention = noise_convention
        self.ard = bool(ard)
        self.threads = threads

    def min_budget(self, n_players: int) -> int:
        return 3

    def min_budget_reason(self, n_players: int) -> str:
        return "the empty and grand coalitions plus at least one sampled coalition to fit the GP on"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        sample_rng = spawn_generators(seed, 2)[0]  # independent streams: sample (0), fit (1)
        fit_seed = spawn_seeds(seed, 2)[1]
        X = leverage_design(game.n_players, sample_rng, size=game.remaining)
        y = np.asarray(game(X), dtype=np.float64)
        start = time.perf_counter()
        with compute_threads(self.threads):
            fit = fit_hyperparameters(X, y, seed=fit_seed, noise=self.noise,
                                      noise_convention=self.noise_convention, ard=self.ard, threads=None)
            post = ShapleyPosterior(fit.hyper, X, y)
        h = fit.hyper
        return ShapleyEstimate(
            values=post.mean.copy(),
            std=post.std.copy(),
            covariance=post.covariance.copy(),
            trace=[(X.shape[0], post.mean.copy())],
            baseline=float(y[0]),
            method=self.name,
            info={
                "ard": self.ard,
                "noise_convention": self.noise_convention,
                "noise_standardized": fit.noise,
                "fit_seconds": fit.seconds,
                "selection_seconds": time.perf_counter() - start,
                "fit_success": fit.success,
                "lengthscales": h.lengthscales.tolist(),
                "outputscale": h.outputscale,
                "mean_constant": h.mean_constant,
                "jitter": post.jitter,
            },
        )
