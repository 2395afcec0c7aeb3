"""``ShaplEIG``: the estimator front of the design loop (one ``estimate(game, budget, seed)`` verb)."""

from __future__ import annotations

from typing import Callable, ClassVar

from .design import DEFAULT_POOL_SIZE
from .estimate import BaseEstimator, ShapleyEstimate
from .game import BudgetedGame
from .loop import DesignLoop, check_loop_options, min_budget


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
        hand_over: int = 0,
        callbacks: tuple = (),
    ) -> None:
        # validate eagerly so a bad configuration fails before any evaluation
        self.acquisition = check_loop_options(
            acquisition, refit, hand_over, initial_design, noise, noise_convention, batch_size, pool_size
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
        self.hand_over = int(hand_over)
        self.callbacks = tuple(callbacks)

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
            hand_over=self.hand_over,
        )

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        result = self.make_loop(game, seed).run()
        result.method = self.name if self.acquisition == "eig" else f"{self.name}-{self.acquisition}"
        return result
