"""The design loop's anytime trace, written to its evaluation store as each step ends.

Two calls from the loop: :func:`record_step` after a step appends to ``loop.trace``, and
:func:`record_finish` with the final estimate (whose last entry a final refit may have replaced).
The recorder is the one ``estimate()`` attached to the budgeted game, or, for a loop run by hand
on a store, the loop's own (:meth:`~shapleig.design.loop.DesignLoop.own_trace_recorder`, started by
:func:`start_loop_trace` at its first use; :mod:`shapleig.estimation.trace_record`). The loop's
diagnostics are read through ``getattr`` with defaults, so a loop without one of them still records
its estimate.
"""

from __future__ import annotations

from typing import Any

from shapleig.design.acquisition import method_name
from shapleig.estimation.result import ShapleyEstimate
from shapleig.estimation.trace_record import TraceRecorder, start_trace, supports_trace


def loop_recorder(loop: Any) -> TraceRecorder | None:
    """The recorder of ``loop``'s run: ``estimate()``'s, else the loop's own (started on first use).

    Args:
        loop: a :class:`~shapleig.design.loop.DesignLoop` (or the scheduler driving one).

    Returns:
        the recorder, or None when the loop's store cannot hold a trace (or there is no store).
    """
    recorder = getattr(loop.game, "trace_recorder", None)
    if recorder is not None:
        return recorder
    return loop.own_trace_recorder()


def start_loop_trace(loop: Any) -> TraceRecorder | None:
    """Start the trace of a loop run by hand on a store (its method, seed, budget, options and index).

    Args:
        loop: a :class:`~shapleig.design.loop.DesignLoop`.

    Returns:
        a new recorder, or None when the loop's store cannot hold a trace (or there is no store).
    """
    store = getattr(loop.game, "store", None)
    method, params = loop_trace_identity(getattr(loop, "identity_options", loop.options))
    return None if not supports_trace(store) else start_trace(
        loop.game, method=method, seed=loop.seed, budget=loop.budget, params=params,
        index=loop.operator.index, max_order=loop.operator.max_order)


def loop_trace_identity(options: Any) -> tuple[str, dict[str, Any]]:
    """The method name and options identifying a design-loop run in a store's trace.

    The same for ``ShaplEIG().estimate(..., store=)`` and a ``DesignLoop`` run by hand with the
    same options, so either resumes the other's trace; ``progress`` changes nothing in a run and is
    left out.

    Args:
        options: the loop's :class:`~shapleig.design.options.LoopOptions`.

    Returns:
        ``(method, options)``.
    """
    return method_name(options.acquisition), {k: v for k, v in options.info().items() if k != "progress"}


def loop_diagnostics(loop: Any) -> dict[str, Any]:
    """What the read-out of the loop's current step rests on: kernel weights, calibration, refits, noise.

    Args:
        loop: the design loop.

    Returns:
        ``{name: value}`` (plain numbers, texts and dicts).
    """
    out: dict[str, Any] = {"refits": getattr(loop, "n_refits", None), "fitted_on": getattr(loop, "fitted_on", None),
                           "acquisitions": getattr(loop, "iteration", None)}
    mixture = getattr(loop, "mixture", None)
    if mixture is not None:
        out["kernel_weights"] = {str(k): float(v) for k, v in dict(getattr(mixture, "weights", {}) or {}).items()}
        out["calibration"] = {c.name: float(c.tau) for c in getattr(mixture, "components", ())
                              if "~" not in c.name and getattr(c, "tau", None) is not None}
    hyper = getattr(loop, "hyper", None)
    if getattr(hyper, "noise", None) is not None:
        out["noise_standardized"] = float(hyper.noise)
    threshold = loop.target_threshold() if callable(getattr(loop, "target_threshold", None)) else None
    if threshold is not None:
        out["target_threshold"] = float(threshold)
        out["target_reached"] = getattr(loop, "target_evaluations", None) is not None
    return out


def record_step(loop: Any) -> None:
    """Write the entry the loop just appended to its trace (nothing without a store that holds a trace).

    Args:
        loop: the design loop, right after its ``_record``.
    """
    recorder = loop_recorder(loop)
    if recorder is None or not loop.trace:
        return
    evaluations, values = loop.trace[-1]
    std = loop.trace_std[-1][1] if len(loop.trace_std) == len(loop.trace) else None
    recorder.record_loop_step(len(loop.trace) - 1, evaluations, values, std,
                              game_seconds=float(loop.timings.get("game_s", 0.0)),
                              pending=int(getattr(loop, "n_pending", 0)), diagnostics=loop_diagnostics(loop))


def record_finish(loop: Any, est: ShapleyEstimate) -> None:
    """Write the entries of ``est.trace`` the store does not hold as they are (the final read-out).

    Args:
        loop: the design loop.
        est: the estimate ``finish()`` returns; its ``info["trace_run"]`` is set to the run's id.
    """
    recorder = loop_recorder(loop)
    if recorder is None:
        return
    recorder.sync(est.trace, est.trace_std, last_diagnostics=loop_diagnostics(loop))
    recorder.end(est.evaluations)
    est.info["trace_run"] = recorder.run_id


__all__ = ["loop_diagnostics", "loop_recorder", "loop_trace_identity", "record_finish", "record_step", "start_loop_trace"]
