"""Refit schedules of the design loop (docs/math.md §9): when the GP hyperparameters are refitted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

RefitSchedule = Callable[[int], bool]


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
        return _geometric(int(self.hand_over))(it)

    def bind(self, loop) -> RefitSchedule:
        """Schedule reading ``loop.X``, ``loop.posterior.innovations()`` and the archive size at the last fit."""
        backstop = _geometric(int(self.hand_over))

        def adaptive(it: int) -> bool:
            if backstop(it):
                return True
            t_fit, t = int(loop.fitted_on), int(loop.X.shape[0])
            if loop.posterior is None or t_fit < 0 or t <= t_fit:
                return False
            z = loop.posterior.innovations()[t_fit:t]
            return bool(np.mean(z**2) > self.threshold)

        adaptive.__name__ = "adaptive"
        return adaptive


REFIT_SCHEDULES = ("every", "decaying", "geometric", "never", "adaptive")


_ALIASES = {"every_iteration": "every", "init_64_factor_4": "decaying"}


def refit_schedule(name: str | RefitSchedule, hand_over: int = 0) -> RefitSchedule:
    """Refit schedule ``it -> bool`` by name; ``it`` counts acquisitions from 0 after the design.

    ``"every"`` (default), ``"decaying"`` (always if it < 64; it % 8 == 0 below 192; it % 16 == 0
    below 448; it % 32 == 0 after), ``"geometric"`` (it = hand_over + k with k = 0 or a power of two),
    ``"never"`` (only the initial fit at it = 0; the loop adds the final refit), ``"adaptive"``
    (:class:`AdaptiveRefit`: geometric backstop plus evidence-triggered refits; ``"adaptive:<t>"``
    sets its threshold). A callable is
    returned unchanged. The loop always fits when no hyperparameters exist yet.
    """
    if callable(name):
        return name
    if isinstance(name, str) and name.startswith("adaptive:"):
        try:
            threshold = float(name.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"bad refit schedule {name!r}: write adaptive:<threshold>, e.g. adaptive:4") from None
        return AdaptiveRefit(threshold=threshold, hand_over=int(hand_over))
    key = _ALIASES.get(name, name)
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
