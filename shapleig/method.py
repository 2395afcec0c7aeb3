"""``ShaplEIG``: the estimator front of the design loop (one ``estimate(game, budget, seed)`` verb)."""

from __future__ import annotations

import copy
import time
from typing import Any, Callable, ClassVar

import numpy as np

from .design import DEFAULT_POOL_SIZE, leverage_design
from .estimate import BaseEstimator, ShapleyEstimate
from .game import BudgetedGame, Game
from .indices import check_index, default_hold_out_empty
from .kernel_choice import fit_kernels, resolve_surrogate, surrogate_ard
from .loop import DesignLoop, check_gp_options, check_loop_options, check_tolerance, min_budget
from .mixture import build_mixture
from .seeding import spawn_generators, spawn_seeds
from .surrogate import check_fit_engine, compute_threads


class ShaplEIG(BaseEstimator):
    """Bayesian experimental design for Shapley values (Rundel et al., ICML 2026).

    A Hamming-kernel GP surrogate; each step selects the coalition(s) with the largest closed-form
    expected information gain about the Shapley vector. The estimate is the posterior mean, with
    posterior std, covariance and an anytime trace. Configuration only here; work happens in
    :meth:`estimate` (see :class:`~shapleig.loop.DesignLoop` for the meaning of every option).
    ``acquisition="uncertainty"`` / ``"random"`` give the GP ablations.

    ``index`` / ``max_order`` choose what is estimated: the Shapley value (``"SV"``, default), Banzhaf
    values (``"BV"``) or pairwise interactions (``"k-SII"``, ``"SII"``, ``"STII"``, ``"FSII"`` with
    ``max_order=2``); the EIG is about the whole index vector (``acquisition_index="SV"`` acquires for
    the Shapley value instead, an ablation). The estimate's ``terms`` name the entries.
    ``hold_out_empty`` (None: the index's default) lets v(empty) enter exactly and fits the GP to the
    non-empty coalitions (docs/math.md §14.5).

    The default surrogate is ``"auto"``: a shared-lengthscale and an ARD Hamming kernel averaged by
    evidence, with leave-one-out calibrated uncertainty. :meth:`published` gives the ICML-paper
    configuration (ARD kernel, raw MAP posterior).
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
        ard: bool | None = None,
        hand_over: int = 0,
        callbacks: tuple = (),
        surrogate: str | None = None,
        calibrate: bool = True,
        tol: float | None = None,
        rtol: float | None = None,
        fit_engine: str = "numpy",
        index: str = "SV",
        max_order: int | None = None,
        acquisition_index: str | None = None,
        hold_out_empty: bool | None = None,
    ) -> None:
        # validate eagerly so a bad configuration fails before any evaluation
        self.index = check_index(index, max_order)[0]
        self.max_order = max_order  # as given (None: the index's own order), so set_params(index=...) works
        self.acquisition_index = None if acquisition_index is None else check_index(acquisition_index)[0]
        self.hold_out_empty = hold_out_empty
        self.acquisition = check_loop_options(
            acquisition, refit, hand_over, initial_design, noise, noise_convention, batch_size, pool_size, ard,
            surrogate,
        )
        check_tolerance(tol, rtol)
        self.refit = refit
        self.initial_design = initial_design
        self.pool_size = int(pool_size)
        self.batch_size = int(batch_size)
        self.noise = float(noise)
        self.noise_convention = noise_convention
        self.final_refit = bool(final_refit)
        self.progress = bool(progress)
        self.warm_start = bool(warm_start)
        self.surrogate = resolve_surrogate(surrogate, ard)  # validated by check_loop_options above
        self.calibrate = bool(calibrate)
        self.tol = tol
        self.rtol = rtol
        self.hand_over = int(hand_over)
        self.callbacks = tuple(callbacks)
        self.fit_engine = check_fit_engine(fit_engine)

    @classmethod
    def published(cls, **overrides: Any) -> "ShaplEIG":
        """The ICML-paper configuration (Rundel et al. 2026; shapiq's ``ShaplEIG`` defaults).

        One lengthscale per player (ARD), a MAP refit at every step by botorch's fit, the p + 1
        leverage design, 1024 candidates, fixed noise 1e-6 in standardised units and the
        uncalibrated MAP posterior. ``overrides`` change single options (e.g. ``refit="decaying"``).
        """
        options: dict[str, Any] = dict(surrogate="ard", calibrate=False, refit="every", initial_design="leverage",
                                       pool_size=DEFAULT_POOL_SIZE, noise=1e-6, noise_convention="standardized",
                                       final_refit=True, warm_start=False, fit_engine="gpytorch")
        options.update(overrides)
        return cls(**options)

    @property
    def ard(self) -> bool | None:
        """The older switch as a parameter: True for the ARD kernel alone, False for the shared one,
        None for the evidence-weighted pair (``surrogate="auto"``)."""
        return surrogate_ard(self.surrogate)

    def estimate(self, game: Game, budget: int, *, tol: float | None = None, rtol: float | None = None,
                 **kwargs: Any) -> ShapleyEstimate:
        """:meth:`BaseEstimator.estimate`, plus a precision target for this call.

        ``tol`` / ``rtol``: stop at the first step where every player's posterior std is at most
        ``tol`` (the game's units) or ``rtol * |v(N) - v(empty)|``; ``est.info["target_reached"]``
        and ``["target_evaluations"]`` say whether and when. They override the constructor's.
        """
        if tol is None and rtol is None:
            return super().estimate(game, budget, **kwargs)
        check_tolerance(tol, rtol)
        configured = copy.copy(self)  # this call's target only; the estimator stays as configured
        configured.tol, configured.rtol = tol, rtol
        return BaseEstimator.estimate(configured, game, budget, **kwargs)

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
            surrogate=self.surrogate,
            calibrate=self.calibrate,
            tol=self.tol,
            rtol=self.rtol,
            hand_over=self.hand_over,
            fit_engine=self.fit_engine,
            index=self.index,
            max_order=self.max_order,
            acquisition_index=self.acquisition_index,
            hold_out_empty=default_hold_out_empty(self.index) if self.hold_out_empty is None else bool(self.hold_out_empty),
        )

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        result = self.make_loop(game, seed).run()
        result.method = self.name if self.acquisition == "eig" else f"{self.name}-{self.acquisition}"
        return result


class GPLeverage(BaseEstimator):
    """The GP+Leverage ablation arm (docs/baselines.md §10): no acquisition, one leverage sample.

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
        ard: bool | None = None,
        threads: int | None = 1,
        surrogate: str | None = None,
        calibrate: bool = True,
    ) -> None:
        self.surrogate = check_gp_options(noise, noise_convention, ard, surrogate)
        self.noise = float(noise)
        self.noise_convention = noise_convention
        self.calibrate = bool(calibrate)
        self.threads = threads

    @property
    def ard(self) -> bool | None:
        """True for the ARD kernel alone, False for the shared one, None for both (``"auto"``)."""
        return surrogate_ard(self.surrogate)

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
            fits = fit_kernels(X, y, self.surrogate, seed=fit_seed, noise=self.noise,
                               noise_convention=self.noise_convention)
            post = build_mixture([(k.kernel, k.weight, k.hyper) for k in fits], X, y, calibrate=self.calibrate)
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
                "surrogate": self.surrogate,
                "ard": post.primary.name == "ard",
                "calibrate": self.calibrate,
                "kernel_weights": post.weights,
                "calibration": {c.name: c.tau for c in post.components},
                "noise_convention": self.noise_convention,
                "noise_standardized": h.noise,
                "fit_seconds": sum(k.fit.seconds for k in fits),
                "selection_seconds": time.perf_counter() - start,
                "fit_success": all(k.fit.success for k in fits),
                "lengthscales": h.lengthscales.tolist(),
                "outputscale": h.outputscale,
                "mean_constant": h.mean_constant,
                "jitter": primary.jitter,
            },
        )
