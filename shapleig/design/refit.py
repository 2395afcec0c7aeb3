"""Refit schedules of the design loop (docs/math.md §9): when the GP hyperparameters are refitted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from shapleig._deprecated import warn_deprecated

RefitSchedule = Callable[[int], bool]

# L-BFGS-B stopping rule of warm refits: from the previous MAP a step moves the optimum little,
# and the scipy defaults (ftol 2.2e-9, gtol 1e-5) spend most evaluations polishing digits that
# change no selection (docs/math.md §9)
WARM_FIT_OPTIONS = {"ftol": 1e-7, "gtol": 1e-4}


def _every(it: int) -> bool:
    return True


def _decaying(it: int) -> bool:
    """Research code's ``init_64_factor_4``: every step, then every 8, 16, 32."""
    if it < 64:
        return True
    if it < 192:
        return it % 8 == 0
    if it < 448:
        return it % 16 == 0
    return it % 32 == 0


def _never(it: int) -> bool:
    return it == 0


def _geometric(hand_over: int) -> RefitSchedule:
    def schedule(it: int) -> bool:
        k = it - hand_over
        return k == 0 or (k > 0 and (k & (k - 1)) == 0)

    return schedule


@dataclass(frozen=True)
class AdaptiveRefit:
    """Evidence-triggered refits with a geometric backstop (refit schedule ``"adaptive"``).

    A refit happens at every step of the backstop (the geometric schedule: it = 0, 1, 2, 4, 8, ...)
    and whenever the points added since the last fit are poorly predicted by the hyperparameters in
    force: with ``z`` their one-step-ahead standardised residuals
    (:meth:`~shapleig.gp.posterior.ShapleyPosterior.innovations`, i.e. their log predictive density
    under the current hyperparameters), when ``mean(z^2) > threshold`` (a calibrated model gives
    ``E[z^2] = 1``). Until bound to a loop (:meth:`bind`, done by ``DesignLoop``) it is the backstop
    alone. The decision reads only the archive and the posterior, so it is deterministic per seed.

    Attributes:
        threshold: the ``mean(z^2)`` above which the points added since the last fit trigger a refit.
        hand_over: the acquisition count at which the geometric backstop starts.
    """

    threshold: float = 4.0
    hand_over: int = 0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"threshold must be positive and finite, got {self.threshold}")
        if int(self.hand_over) < 0:
            raise ValueError(f"hand_over must be >= 0, got {self.hand_over}")

    @property
    def __name__(self) -> str:  # the loop reports a callable schedule by its __name__
        return "adaptive"

    def __call__(self, it: int) -> bool:
        """The backstop alone (unbound): whether acquisition ``it`` refits."""
        return _geometric(int(self.hand_over))(it)

    def bind(self, loop) -> RefitSchedule:
        """Schedule reading ``loop.X``, ``loop.posterior.innovations()`` and the archive size at the last fit.

        Args:
            loop: the :class:`~shapleig.design.loop.DesignLoop` (its ``X``, ``posterior`` and
                ``fitted_on``).

        Returns:
            the schedule ``it -> bool``.
        """
        backstop = _geometric(int(self.hand_over))

        def adaptive(it: int) -> bool:
            if backstop(it):
                return True
            t_fit, t = int(loop.fitted_on), int(loop.X.shape[0])
            if loop.posterior is None or t_fit < 0 or t <= t_fit:
                return False
            z = loop.posterior.innovations()[t_fit:t]
            return bool(z.size) and bool(np.mean(z**2) > self.threshold)

        adaptive.__name__ = "adaptive"
        return adaptive


@dataclass(frozen=True)
class AutoRefit:
    """The default refit policy (``"auto"``): every step while the archive is small, then sparse.

    With ``t`` evaluations in the archive and ``t_fit`` at the last fit, a refit is due when
    ``t <= every_until`` (every step: the budgets of the nine benchmark suites, up to 8p at p <= 16,
    stay exactly today's every-step runs), else when ``t >= growth * t_fit`` (a geometric backstop
    in t: O(log t) refits in all), else when the points added since the last fit are poorly
    predicted by the hyperparameters in force (``mean(z^2) > threshold`` of their one-step-ahead
    standardised residuals, as :class:`AdaptiveRefit`) and at least ``t_fit / min_gap_divisor``
    points were added (so a persistently misfitting model cannot force a refit at every step).
    Between refits the loop updates its posterior incrementally (``ShapleyPosterior.extend``).
    Refits beyond 2p evaluations (``early_warm``; else only the late ones) start warm from the
    last hyperparameters and stop at the tolerances ``warm_options`` (a step moves the MAP little),
    with a cold check (a second fit from the initial values, the better objective kept) whenever t
    has grown by ``cold_growth`` since the last cold fit (``late_cold_growth`` for late refits; the
    loop reads :meth:`warm`,
    :meth:`cold_check_due` and :attr:`warm_fit_options`). The decision reads only the archive and
    the posterior: deterministic per seed.

    Attributes:
        every_until: the archive size up to which every step refits; None: ``min(per_player * p, 128)``.
        per_player: with ``every_until`` None, every step refits up to ``per_player * p`` evaluations
            (at most 128): 8 for ``"auto"``; ``"auto:<k>"`` sets it.
        growth: a refit is due once the archive has grown by this factor since the last fit.
        threshold: the ``mean(z^2)`` above which the points added since the last fit trigger a refit.
        min_gap_divisor: an innovation-triggered refit needs at least ``t_fit / min_gap_divisor`` new
            points.
        early_warm: refits beyond 2p evaluations start warm (False: only the late ones).
        cold_growth: growth of the archive since the last cold fit that triggers a cold check, while every
            step refits.
        late_cold_growth: the same for late refits.
        warm_options: L-BFGS-B options of warm refits as ``(name, value)`` pairs; None: the optimiser's
            defaults.
        large_growth: the growth factor in place of ``growth`` once the loop's archive is large
            (``large_archive``): a refit there rebuilds O(t^3) factors, so O(log t) of them must stay few.
        large_gap_divisor: the same for ``min_gap_divisor``.
    """

    every_until: int | None = None  # None: min(per_player * p, 128)
    per_player: float = 8.0
    growth: float = 1.125
    threshold: float = 4.0
    min_gap_divisor: int = 32
    early_warm: bool = True
    cold_growth: float = 1.5
    late_cold_growth: float = 2.0
    warm_options: tuple[tuple[str, float], ...] | None = tuple(WARM_FIT_OPTIONS.items())
    large_growth: float = 1.5
    large_gap_divisor: int = 4

    def __post_init__(self) -> None:
        if not (np.isfinite(self.per_player) and self.per_player > 0):
            raise ValueError(f"per_player must be positive and finite, got {self.per_player}")
        for name in ("growth", "large_growth"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 1):
                raise ValueError(f"{name} must be a finite factor above 1, got {value}")
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"threshold must be positive and finite, got {self.threshold}")

    @property
    def __name__(self) -> str:
        return "auto"

    def __call__(self, it: int) -> bool:
        """Unbound (no loop to read): every acquisition ``it`` refits."""
        return True

    def until(self, n_players: int) -> int:
        """Archive size up to which every step refits (cold).

        Args:
            n_players: the number of players p.

        Returns:
            the archive size.
        """
        if self.every_until is not None:
            return int(self.every_until)
        return min(int(round(self.per_player * int(n_players))), 128)

    def sparse(self, t: int, n_players: int) -> bool:
        """Whether refits at archive size ``t`` are sparse (geometric in t, or triggered by the innovations).

        Args:
            t: the archive size.
            n_players: the number of players p.

        Returns:
            whether ``t`` is beyond :meth:`until`.
        """
        return t > self.until(n_players)

    def late(self, t: int, n_players: int) -> bool:
        """Whether a refit at archive size ``t`` is a late one: sparse, and beyond ``min(8p, 128)``.

        Late refits (on up to ``fit_points`` rows) cost most: their cold checks wait for the archive
        to grow by ``late_cold_growth`` and skip the kernels the evidence ruled out. Below
        ``min(8p, 128)`` a ruled-out kernel is still fitted in full at every cold check, so that it
        can come back (ARD, once the data show which players matter), however sparse the refits.

        Args:
            t: the archive size.
            n_players: the number of players p.

        Returns:
            whether ``t`` is beyond both :meth:`until` and ``min(8p, 128)``.
        """
        return self.sparse(t, n_players) and t > min(8 * int(n_players), 128)

    def warm(self, t: int, n_players: int) -> bool:
        """Whether a refit at archive size ``t`` starts warm (from the last hyperparameters).

        Args:
            t: the archive size.
            n_players: the number of players p.

        Returns:
            whether the refit starts warm.
        """
        return t > 2 * int(n_players) if self.early_warm else self.late(t, n_players)

    @property
    def warm_fit_options(self) -> dict | None:
        """L-BFGS-B options of warm refits (None: the optimiser's defaults)."""
        return None if self.warm_options is None else dict(self.warm_options)

    def cold_check_due(self, t: int, t_cold: int, n_players: int) -> bool:
        """Whether a warm refit at ``t`` also fits from the initial values.

        Due after growth ``cold_growth`` since the last cold fit while every step refits,
        ``late_cold_growth`` beyond (late refits fit on up to ``fit_points`` rows, and cost most).

        Args:
            t: the archive size.
            t_cold: the archive size at the last cold fit.
            n_players: the number of players p.

        Returns:
            whether the cold check is due.
        """
        growth = self.late_cold_growth if self.late(t, n_players) else self.cold_growth
        return t >= growth * t_cold

    def growth_factor(self, large: bool) -> float:
        """The archive's growth since the last fit that makes a refit due: ``large_growth`` or ``growth``.

        Args:
            large: the loop's archive is large (``large_archive``).

        Returns:
            the factor.
        """
        return self.large_growth if large else self.growth

    def due(self, t: int, t_fit: int, innovations: np.ndarray | None, n_players: int, large: bool = False) -> bool:
        """Whether a refit is due with ``t`` points in the archive, ``t_fit`` at the last fit.

        Args:
            t: the archive size.
            t_fit: the archive size at the last fit (< 0: never fitted).
            innovations: the one-step-ahead standardised residuals of the points added since the last fit,
                or None.
            n_players: the number of players p.
            large: the archive is large (``large_growth`` and ``large_gap_divisor`` apply).

        Returns:
            whether to refit now.
        """
        if t_fit < 0 or t <= self.until(n_players):
            return True
        if t <= t_fit:
            return False
        if t >= self.growth_factor(large) * t_fit:
            return True
        gap = self.large_gap_divisor if large else self.min_gap_divisor
        if innovations is None or t - t_fit < max(1, t_fit // gap):
            return False
        return bool(np.mean(innovations**2) > self.threshold)

    def bind(self, loop) -> RefitSchedule:
        """Schedule reading the loop's archive size, its size at the last fit and the innovations.

        Args:
            loop: the :class:`~shapleig.design.loop.DesignLoop` (its ``X``, ``posterior`` and archive size
                at the last fit).

        Returns:
            the schedule ``it -> bool``.
        """

        def auto(it: int) -> bool:
            t, t_fit, p = int(loop.X.shape[0]), int(loop.fitted_on), int(loop.n_players)
            large = bool(getattr(loop, "large", lambda: False)())
            between = self.sparse(t, p) and 0 <= t_fit < t and t < self.growth_factor(large) * t_fit
            z = loop.posterior.innovations()[t_fit:t] if between and loop.posterior is not None else None
            return self.due(t, t_fit, z, p, large)

        auto.__name__ = "auto"
        return auto


def _auto_with(name: str) -> AutoRefit:
    """``"auto:<k>[:<growth>[:<threshold>]]"``: :class:`AutoRefit` refitting every step up to k p evaluations."""
    parts = name.split(":")[1:]
    try:
        if not 1 <= len(parts) <= 3:
            raise ValueError
        values = [float(v) for v in parts]
        keys = ("per_player", "growth", "threshold")
        return AutoRefit(**dict(zip(keys, values)))
    except ValueError as exc:
        detail = f" ({exc})" if str(exc) else ""
        raise ValueError(f"bad refit schedule {name!r}{detail}: write auto:<k> (every step up to k p evaluations), "
                         f"auto:<k>:<growth> or auto:<k>:<growth>:<threshold>, e.g. auto:2 or auto:1:1.125:4") from None


REFIT_SCHEDULES = ("auto", "auto-cold", "every", "decaying", "geometric", "never", "adaptive")


# the schedules' former names: accepted with a DeprecationWarning (shapleig._deprecated)
_ALIASES = {"every_iteration": "every", "init_64_factor_4": "decaying"}


def refit_name(name: str | RefitSchedule) -> str | RefitSchedule:
    """``name`` itself, or a former schedule name's current one (with a ``DeprecationWarning``).

    Args:
        name: a schedule name or a callable.

    Returns:
        the current name for a former one (``"every_iteration"`` -> ``"every"``), else ``name`` unchanged.
    """
    if isinstance(name, str) and name in _ALIASES:
        warn_deprecated(f'refit="{name}"')
        return _ALIASES[name]
    return name


# complexity over budget: one branch per named schedule, a flat table
def refit_schedule(name: str | RefitSchedule, hand_over: int = 0) -> RefitSchedule:  # noqa: C901
    """Refit schedule ``it -> bool`` by name; ``it`` counts acquisitions from 0 after the design.

    ``"auto"`` (default, :class:`AutoRefit`), ``"auto:<k>[:<growth>[:<threshold>]]"`` (:class:`AutoRefit`
    refitting every step only up to k p evaluations, then sparse), ``"auto-cold"`` (every refit cold), ``"every"``, ``"decaying"`` (always if it < 64; it % 8 == 0 below 192; it % 16 == 0
    below 448; it % 32 == 0 after), ``"geometric"`` (it = hand_over + k with k = 0 or a power of two),
    ``"never"`` (only the initial fit at it = 0; the loop adds the final refit), ``"adaptive"``
    (:class:`AdaptiveRefit`: geometric backstop plus evidence-triggered refits; ``"adaptive:<t>"``
    sets its threshold). A callable is
    returned unchanged. The loop always fits when no hyperparameters exist yet.

    Args:
        name: a schedule name (see ``REFIT_SCHEDULES``, or ``"adaptive:<threshold>"``) or a callable ``it ->
            bool``, returned as it is.
        hand_over: the acquisition count at which the geometric schedules start.

    Returns:
        the schedule ``it -> bool``.
    """
    if callable(name):
        return name
    if isinstance(name, str) and name.startswith("auto:"):
        return _auto_with(name)
    if isinstance(name, str) and name.startswith("adaptive:"):
        try:
            threshold = float(name.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"bad refit schedule {name!r}: write adaptive:<threshold>, e.g. adaptive:4") from None
        return AdaptiveRefit(threshold=threshold, hand_over=int(hand_over))
    key = refit_name(name)
    if key == "auto":
        return AutoRefit()
    if key == "auto-cold":  # the previous default: every refit up to min(8p, 128) cold
        return AutoRefit(early_warm=False, cold_growth=2.0, late_cold_growth=2.0, warm_options=None)
    if key == "every":
        return _every
    if key == "decaying":
        return _decaying
    if key == "never":
        return _never
    if key == "adaptive":
        return AdaptiveRefit(hand_over=int(hand_over))
    if key == "geometric":
        if int(hand_over) < 0:
            raise ValueError(f"hand_over must be >= 0, got {hand_over}")
        return _geometric(int(hand_over))
    raise ValueError(f"unknown refit schedule {name!r}; choose one of {REFIT_SCHEDULES}")
