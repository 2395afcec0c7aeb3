"""Exact values by default for cheap small games.

Enumerate the 2^p coalitions when that is expected to cost less than running the GP surrogate on the
budget.

:func:`shapleig.explain` times one model call on ``1 + n_bg`` rows (the explained row and the
background: about one coalition's work) before the run. With that time ``t`` per coalition and the
GP's selection overhead ``o`` per evaluation, a GP run costs about ``budget * (t + o)`` and
enumeration about ``2^p * t`` (an upper bound: enumeration evaluates coalitions in large batches,
the GP one or a few per step). The game is enumerated when ``2^p * t`` is below half the GP's cost
(a margin, so a noisy timing near the boundary keeps the requested method), p <= 16, and the
method is a design-loop GP arm (ShaplEIG and its variants; the model-free methods and GP+Leverage's
single fit have little overhead to save). ``o`` is
:data:`GP_OVERHEAD_S_PER_EVALUATION`, measured by ``scripts/bench/bench_breakeven.py``
(docs/benchmarks.md). The decision depends on a measured time, so it can differ between machines:
``exact_if_cheap=False`` keeps the requested method (and bitwise reproducibility).
"""

from __future__ import annotations

from typing import Any

# ShaplEIG's selection time per evaluation, kept below every figure scripts/bench/bench_breakeven.py
# measured at p = 10 and budgets 2p..8p (26-100 ms per evaluation, docs/benchmarks.md §11): a
# conservative figure, so enumeration is chosen only where it clearly pays
GP_OVERHEAD_S_PER_EVALUATION = 0.01
# enumerate only when it is expected to cost less than this fraction of the GP run
MARGIN = 0.5
MAX_ENUMERATED_PLAYERS = 16


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


def enumeration_decision(n_players: int, budget: int, seconds_per_coalition: float, gp_method: bool) -> dict[str, Any]:
    """Whether enumerating the game pays, with the figures behind it (for ``est.info``).

    Args:
        n_players: p.
        budget: the requested budget.
        seconds_per_coalition: the measured time of one coalition's model call.
        gp_method: whether the requested method is a GP arm.

    Returns:
        ``{"enumerate": bool, "reason": str, "seconds_per_coalition", "enumeration_s", "gp_s"}``.

    Examples:
        >>> enumeration_decision(6, 20, 1e-4, True)["enumerate"]
        True
        >>> enumeration_decision(10, 20, 1e-2, True)["enumerate"]
        False
    """
    full = 1 << n_players if n_players < 63 else None
    t = max(float(seconds_per_coalition), 0.0)
    out: dict[str, Any] = {"seconds_per_coalition": t, "gp_overhead_s_per_evaluation": GP_OVERHEAD_S_PER_EVALUATION}
    if not gp_method:
        return {**out, "enumerate": False, "reason": "not a GP method"}
    if full is None or n_players > MAX_ENUMERATED_PLAYERS:
        return {**out, "enumerate": False, "reason": f"p = {n_players} > {MAX_ENUMERATED_PLAYERS}"}
    if budget >= full:
        return {**out, "enumerate": False, "reason": "the budget covers the game"}
    enumeration, gp = full * t, budget * (t + GP_OVERHEAD_S_PER_EVALUATION)
    out.update(enumeration_s=enumeration, gp_s=gp)
    if enumeration < MARGIN * gp:
        return {**out, "enumerate": True,
                "reason": f"enumerating 2^{n_players} = {full} coalitions (~{enumeration:.3g} s) costs less than "
                          f"the GP on {budget} (~{gp:.3g} s): exact values"}
    return {**out, "enumerate": False, "reason": f"enumeration (~{enumeration:.3g} s) would not pay against the "
                                                  f"GP (~{gp:.3g} s)"}


__all__ = ["GP_OVERHEAD_S_PER_EVALUATION", "MARGIN", "MAX_ENUMERATED_PLAYERS", "enumeration_decision", "is_gp_method"]
