"""Exact values by default for cheap small games.

Enumerate the 2^p coalitions when that is expected to cost less than running the GP surrogate on the
budget.

**The model's cost.** :func:`shapleig.explain` calls the model once on ``1 + n_bg`` rows (the
explained row and the background: about one coalition's work) before the run, and times it. A model
call costs a fixed part per call and a part per row, ``a + n b``: enumeration evaluates the 2^p
coalitions in large batches (``max_rows`` imputed rows per call) and pays ``a`` once per batch,
the GP evaluates one coalition per call and pays it every time. When the first timing leaves the
decision open (enumeration would pay if the call's time were all fixed cost, and would not if it
were all per-row cost), a second call on the explained row alone splits the two:
``b = (t(1 + n_bg) - t(1)) / n_bg``, ``a = t(1) - b``.

Enumeration's own work (imputing 2^p n_bg rows, the exact values) adds a measured constant per
imputed value (:func:`enumeration_overhead_seconds`). **The GP's cost** is ``budget (a + n b)`` for the model plus the design loop's own time, predicted by
:func:`gp_overhead_seconds`: a power law in the budget and p fitted to the loop's measured time on
a free game (``scripts/bench/bench_overhead_model.py``, docs/benchmarks.md), scaled by the speed of
this machine at this moment (:func:`machine_speed`: a probe of the GP's own arithmetic timed now
against its time when the law was fitted, so a loaded or slower machine predicts a slower GP).

The game is enumerated when its predicted cost is below :data:`MARGIN` times the GP's (so a noisy
timing near the boundary keeps the requested method), p <= 16, and the method is a design-loop GP arm
(ShaplEIG and its variants; the model-free methods and GP+Leverage's single fit have little overhead
to save). ``info["exact_if_cheap"]`` keeps the figures: the model's cost per call and per row, the
predicted seconds of both paths and of the one taken (``predicted_s``), and what the run took
(``took_s``, added by :func:`shapleig.explain`). The decision depends on measured times, so it can
differ between machines: ``exact_if_cheap=False`` keeps the requested method (and bitwise
reproducibility).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

# enumerate only when it is expected to cost less than this fraction of the GP run
MARGIN = 0.5
MAX_ENUMERATED_PLAYERS = 16

# The design loop's own seconds per run on a free game, OVERHEAD_SCALE * budget^OVERHEAD_BUDGET_POWER *
# p^OVERHEAD_PLAYERS_POWER, fitted by scripts/bench/bench_overhead_model.py (default ShaplEIG, one
# thread, p = 6..16, budgets 2p..8p; docs/benchmarks.md), on a machine where the probe of
# machine_speed() took REFERENCE_PROBE_S
OVERHEAD_SCALE = 2.976e-3
OVERHEAD_BUDGET_POWER = 1.280
OVERHEAD_PLAYERS_POWER = 0.171
REFERENCE_PROBE_S = 2.70e-4
# enumeration's own seconds (imputing the rows, the store's bookkeeping, the exact values) per imputed
# value (coalition x background row x feature), fitted by the same script on a free model
ENUMERATION_S_PER_VALUE = 3.0e-8
# objective evaluations per timed repetition of the probe
PROBE_CALLS = 4
# the probe's speed factor is kept within these bounds (a stalled probe must not forbid the GP forever)
SPEED_BOUNDS = (0.25, 20.0)


@dataclass(frozen=True)
class ModelCost:
    """What one model call costs: ``per_call_s + rows * per_row_s``.

    Attributes:
        per_call_s: the fixed seconds of one call.
        per_row_s: the seconds per imputed row.
        rows_per_coalition: imputed rows of one coalition (the background rows it averages over).
        coalitions_per_call: coalitions enumeration puts in one call (``max_rows // rows``).
    """

    per_call_s: float
    per_row_s: float
    rows_per_coalition: int = 1
    coalitions_per_call: int = 1

    @property
    def coalition_s(self) -> float:
        """Seconds of one coalition evaluated alone (as the GP evaluates them)."""
        return self.per_call_s + self.rows_per_coalition * self.per_row_s

    def enumeration_s(self, n_coalitions: int) -> float:
        """Seconds to evaluate ``n_coalitions`` in batches of ``coalitions_per_call``.

        Args:
            n_coalitions: how many coalitions.

        Returns:
            the predicted seconds.
        """
        calls = math.ceil(n_coalitions / max(self.coalitions_per_call, 1))
        return calls * self.per_call_s + n_coalitions * self.rows_per_coalition * self.per_row_s


def split_cost(seconds_full: float, rows_full: int, seconds_one: float) -> tuple[float, float]:
    """``(per_call_s, per_row_s)`` from a call on ``rows_full`` rows and one on a single row.

    Args:
        seconds_full: the time of the call on ``rows_full`` rows.
        rows_full: its rows (> 1).
        seconds_one: the time of a call on one row.

    Returns:
        ``(per_call_s, per_row_s)``, both >= 0 (timing noise can make the one-row call the slower).

    Examples:
        >>> [round(v, 6) for v in split_cost(0.011, 11, 0.002)]
        [0.0011, 0.0009]
    """
    per_row = max(float(seconds_full) - float(seconds_one), 0.0) / max(int(rows_full) - 1, 1)
    return max(float(seconds_one) - per_row, 0.0), per_row


def gp_overhead_seconds(n_players: int, budget: int, speed: float = 1.0) -> float:
    """The design loop's own predicted seconds for a run of ``budget`` evaluations (the game excluded).

    Args:
        n_players: p.
        budget: the evaluations.
        speed: this machine's slowness relative to the one the law was fitted on (:func:`machine_speed`).

    Returns:
        the predicted seconds.

    Examples:
        >>> gp_overhead_seconds(10, 80) > gp_overhead_seconds(10, 40) > 0
        True
    """
    law = OVERHEAD_SCALE * float(budget) ** OVERHEAD_BUDGET_POWER * float(n_players) ** OVERHEAD_PLAYERS_POWER
    return law * float(speed)


def enumeration_overhead_seconds(n_players: int, rows_per_coalition: int, speed: float = 1.0) -> float:
    """Enumeration's own predicted seconds over the 2^p coalitions (the model's calls excluded).

    Args:
        n_players: p.
        rows_per_coalition: imputed rows per coalition.
        speed: this machine's slowness relative to the one the constant was fitted on.

    Returns:
        the predicted seconds.
    """
    return ENUMERATION_S_PER_VALUE * float(1 << int(n_players)) * int(rows_per_coalition) * int(n_players) * float(speed)


def _probe_problem() -> Callable[[], Any]:
    """One MAP objective and gradient of the shared Hamming kernel on a fixed archive (t = 40, p = 10)."""
    from shapleig.gp.numpy_fit import MapProblem
    from shapleig.gp.options import GPOptions

    rng = np.random.default_rng(0)
    X = rng.random((40, 10)) < 0.5
    y = X @ rng.normal(size=10)
    shared = GPOptions(surrogate="shared", size_trend=False).kernels[0]
    problem = MapProblem.build(shared, X, (y - y.mean()) / y.std(), 1e-4)
    theta = problem.pack(0.0, shared.initial_params(10))
    return lambda: problem.objective(theta)


def probe_seconds(repeats: int = 5) -> float:
    """Median seconds of :data:`PROBE_CALLS` evaluations of the GP's MAP objective (the probe), here and now.

    Args:
        repeats: timed repetitions (the median is kept).

    Returns:
        seconds.
    """
    call = _probe_problem()
    call()  # first use: imports and caches outside the timing
    times = []
    for _ in range(int(repeats)):
        start = time.perf_counter()
        for _ in range(PROBE_CALLS):
            call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))



def machine_speed() -> float:
    """How much slower this machine runs the GP's arithmetic now than where the overhead law was fitted.

    The probe's time over :data:`REFERENCE_PROBE_S`, within :data:`SPEED_BOUNDS` (a few milliseconds).

    Returns:
        the factor (> 1: slower).
    """
    low, high = SPEED_BOUNDS
    return float(min(max(probe_seconds() / REFERENCE_PROBE_S, low), high))


def is_gp_method(estimator: Any) -> bool:
    """Whether ``estimator`` is one of the design-loop GP arms, by its registry family.

    ShaplEIG and its variants select each evaluation; GP+Leverage fits once and has little overhead
    to save.

    Args:
        estimator: an estimator object.

    Returns:
        whether it belongs to the registry family "design-loop".
    """
    from shapleig import registry

    return getattr(estimator, "name", None) in set(registry.names(family="design-loop"))


def _as_cost(cost: ModelCost | float) -> ModelCost:
    """A per-coalition time alone: all of it per row, one row per coalition (enumeration's upper bound)."""
    if isinstance(cost, ModelCost):
        return cost
    return ModelCost(0.0, max(float(cost), 0.0))


def enumeration_decision(n_players: int, budget: int, cost: ModelCost | float, gp_method: bool, *,
                         speed: float = 1.0) -> dict[str, Any]:
    """Whether enumerating the game pays, with the figures behind it (for ``est.info``).

    Args:
        n_players: p.
        budget: the requested budget.
        cost: the model's :class:`ModelCost`, or the seconds of one coalition (then all of it per row).
        gp_method: whether the requested method is a GP arm.
        speed: this machine's slowness for the GP's arithmetic (:func:`machine_speed`).

    Returns:
        ``{"enumerate", "reason", "seconds_per_coalition", "model_s_per_call", "model_s_per_row", "speed",
        "gp_overhead_s", "enumeration_s", "gp_s", "predicted_s"}`` (the last five once the rule applies;
        ``predicted_s`` is the path chosen).

    Examples:
        >>> enumeration_decision(6, 20, 1e-4, True)["enumerate"]
        True
        >>> enumeration_decision(10, 20, 1e-2, True)["enumerate"]
        False
    """
    cost = _as_cost(cost)
    full = 1 << n_players if n_players < 63 else None
    out: dict[str, Any] = {"seconds_per_coalition": cost.coalition_s, "model_s_per_call": cost.per_call_s,
                           "model_s_per_row": cost.per_row_s, "speed": float(speed)}
    if not gp_method:
        return {**out, "enumerate": False, "reason": "not a GP method"}
    if full is None or n_players > MAX_ENUMERATED_PLAYERS:
        return {**out, "enumerate": False, "reason": f"p = {n_players} > {MAX_ENUMERATED_PLAYERS}"}
    if budget >= full:
        return {**out, "enumerate": False, "reason": "the budget covers the game"}
    overhead = gp_overhead_seconds(n_players, budget, speed)
    enumeration = cost.enumeration_s(full) + enumeration_overhead_seconds(n_players, cost.rows_per_coalition, speed)
    gp = budget * cost.coalition_s + overhead
    out.update(gp_overhead_s=overhead, enumeration_s=enumeration, gp_s=gp)
    if enumeration < MARGIN * gp:
        return {**out, "enumerate": True, "predicted_s": enumeration,
                "reason": f"enumerating 2^{n_players} = {full} coalitions (~{enumeration:.3g} s) costs less than "
                          f"the GP on {budget} (~{gp:.3g} s): exact values"}
    return {**out, "enumerate": False, "predicted_s": gp,
            "reason": f"enumeration (~{enumeration:.3g} s) would not pay against the GP (~{gp:.3g} s)"}


def decide(game: Any, budget: int, seconds_full: float, gp_method: bool, *, speed: float | None = None,
           clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """:func:`enumeration_decision` for an imputer game, from the timed call on ``1 + n_bg`` rows.

    The call's time alone bounds enumeration between "all of it fixed per call" and "all of it per
    row"; when the decision differs between the bounds, one more call on the explained row alone
    splits the two (:func:`split_cost`). The machine's speed is probed only when the rule applies.

    Args:
        game: the imputer game (``x``, ``background``, ``max_rows``, ``predict_rows``; a conditional
            imputer's ``k``).
        budget: the requested budget.
        seconds_full: the time of the model call on the explained row and the background.
        gp_method: whether the requested method is a GP arm.
        speed: this machine's slowness for the GP's arithmetic; None: :func:`machine_speed` (probed).
        clock: the clock timing the second call.

    Returns:
        the decision with its figures (:func:`enumeration_decision`; ``probed`` says whether the
        second call was made).
    """
    p, n_bg = game.n_players, int(game.background.shape[0])
    rows = min(int(getattr(game, "k", None) or n_bg), n_bg)
    per_call = max(int(getattr(game, "max_rows", n_bg)) // max(rows, 1), 1)
    applies = gp_method and p <= MAX_ENUMERATED_PLAYERS and budget < (1 << p)
    if speed is None:
        speed = machine_speed() if applies else 1.0
    # the two extremes of the first call's split: all of it fixed per call, all of it per row
    fixed = ModelCost(seconds_full, 0.0, rows, per_call)
    per_row = ModelCost(0.0, seconds_full / (1 + n_bg), rows, per_call)
    bounds = [enumeration_decision(p, budget, c, gp_method, speed=speed) for c in (fixed, per_row)]
    if not applies or bounds[0]["enumerate"] == bounds[1]["enumerate"]:
        return {**bounds[1], "probed": False}
    start = clock()
    game.predict_rows(game.x[None, :])
    a, b = split_cost(seconds_full, 1 + n_bg, clock() - start)
    return {**enumeration_decision(p, budget, ModelCost(a, b, rows, per_call), gp_method, speed=speed), "probed": True}


__all__ = ["MARGIN", "MAX_ENUMERATED_PLAYERS", "ModelCost", "decide", "enumeration_decision", "enumeration_overhead_seconds",
           "gp_overhead_seconds",
           "is_gp_method", "machine_speed", "probe_seconds", "split_cost"]
