"""The ``Store`` protocol: what a :class:`~shapleig.runs.budget.BudgetedGame` needs of an evaluation store.

:class:`~shapleig.runs.store.EvaluationStore` (an SQLite file shared by processes) is one
implementation; any object with these methods can be passed wherever a store is accepted
(``estimate(..., store=...)``, ``BudgetedGame(..., store=...)``, ``explain(..., store=...)``).
docs/architecture.md ("How to extend: a new store") shows a dict-backed one for tests and
ephemeral runs.

The contract, in the order ``BudgetedGame`` uses it:

1. :meth:`Store.bind` once, with the game: record it on first use, or check that the store was
   written for this game and raise :class:`~shapleig.errors.StoreMismatchError` otherwise.
   Returns an identifier of the game (any text; ``BudgetedGame.fingerprint``).
2. :meth:`Store.lookup` the coalitions it needs: stored values are reused (and still charged).
3. :meth:`Store.claim` the missing ones just before evaluating them: the store says which are
   stored meanwhile, which this process must evaluate (``mine``) and which another process is
   evaluating right now (``busy``); for the busy ones :meth:`Store.wait_for_others` sleeps until
   one of them is stored or abandoned, then ``claim`` is asked again. A store used by one process
   at a time claims every missing coalition and never reports one busy.
4. :meth:`Store.append` every attempt as it arrives (``status`` ``"ok"`` with a finite value, or
   ``"error"``/``"nonfinite"`` with ``value=None``); a successful value must be durable when it
   returns and ends this process's claim on the coalition.
5. :meth:`Store.release` what could not be evaluated (an evaluation failed for good), so others
   may take it.

Coalitions are ``bool[m, p]`` arrays (``bool[p]`` for :meth:`Store.append`); values ``float64``.
A store must never serve a non-finite value, nor one game's values to another.

Optionally, a store can hold the anytime trace of the runs on it (what ``shapleig dashboard`` and
``shapleig status`` show while a run goes): :data:`TRACE_METHODS`, ``start_trace_run(run)``,
``record_trace(entries)`` and ``end_trace_run(run, evaluations)`` as
:class:`~shapleig.runs.store.EvaluationStore` has them
(:mod:`shapleig.runs.trace_table`). A store without them runs every estimate the same and records
no trace; they are looked up with ``getattr(store, name, None)``, nothing else of a store is.

Whether an object is a store is decided by :func:`missing_store_methods` (ordinary attribute
access, as ``BudgetedGame`` uses the store), not by ``isinstance(obj, Store)`` alone: from Python
3.12 on, ``isinstance`` with a runtime-checkable protocol looks members up statically
(``inspect.getattr_static``), so a wrapper that forwards its methods through ``__getattr__`` is a
store for ``BudgetedGame`` but not for ``isinstance``. Classes that define the seven methods (as
:class:`~shapleig.runs.store.EvaluationStore` and the documented dict store do) pass both checks on
every supported Python.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Store(Protocol):
    """An evaluation store: a log of one game's evaluated coalitions (see the module docstring)."""

    def bind(self, game: Any, evaluate: Callable[[np.ndarray], np.ndarray] | None = None) -> str:
        """Record ``game`` on first use or check that the store belongs to it; an identifier of it.

        Args:
            game: the game whose values the store holds (``n_players``, ``__call__``).
            evaluate: how the run evaluates coalitions (``bool[k, p] -> float64[k]``, through its
                evaluator: timeout and retries included), for a store that re-evaluates stored values
                to verify them; a store may ignore it.

        Returns:
            Text identifying the game (e.g. a digest of its identity).
        """
        ...

    def lookup(self, coalitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stored values of ``coalitions``.

        Args:
            coalitions: ``bool[m, p]``.

        Returns:
            ``(found bool[m], values float64[m])``, values NaN where not found.
        """
        ...

    def claim(self, coalitions: np.ndarray, hold_for: float | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Look ``coalitions`` up and claim the missing ones for this process.

        Args:
            coalitions: ``bool[m, p]``.
            hold_for: seconds the evaluation of the claimed coalitions may take at most (None:
                unknown); a store shared by processes lets others take a claim over after it.

        Returns:
            ``(found, values, mine, busy)``: ``bool[m]``, ``float64[m]``, ``bool[m]``, ``bool[m]``.
        """
        ...

    def wait_for_others(self, coalitions: np.ndarray) -> None:
        """Return once one of ``coalitions`` (``bool[m, p]``, reported busy) is stored or abandoned.

        Args:
            coalitions: ``bool[m, p]``.
        """
        ...

    def release(self, coalitions: np.ndarray) -> None:
        """Drop this process's claims on ``coalitions`` (``bool[m, p]``) without storing values.

        Args:
            coalitions: ``bool[m, p]``.
        """
        ...

    def append(self, coalition: np.ndarray, value: float | None, *, seconds: float, status: str = "ok",
               attempt: int = 1, error: str | None = None) -> None:
        """Log one attempt at ``coalition``; durable when it returns.

        Args:
            coalition: ``bool[p]``.
            value: the finite value when ``status == "ok"``, else None.
            seconds: wall-clock seconds the game call took.
            status: ``"ok"``, ``"error"`` or ``"nonfinite"``.
            attempt: 1 for the first try, 2 for the first retry, ...
            error: what went wrong, for failed attempts.
        """
        ...

    def close(self) -> None:
        """Release what the store holds (connections, claims); it is not used afterwards."""
        ...


STORE_METHODS = ("bind", "lookup", "claim", "wait_for_others", "release", "append", "close")
# optional: a store that has both records the runs' anytime trace (shapleig.estimation.trace_record)
TRACE_METHODS = ("start_trace_run", "record_trace", "end_trace_run")


def missing_store_methods(obj: Any) -> list[str]:
    """The methods of :class:`Store` that ``obj`` lacks (empty: ``obj`` can be used as a store).

    Looked up by ordinary attribute access, so the answer is the same on Python 3.11 and 3.12+ for
    objects whose methods are forwarded dynamically (``__getattr__``), which
    ``isinstance(obj, Store)`` accepts on 3.11 and refuses from 3.12 on.

    Args:
        obj: any object.

    Returns:
        The names in :data:`STORE_METHODS` that are not callable attributes of ``obj``, in order.

    Example:
        >>> class Half:
        ...     def bind(self, game, evaluate=None):
        ...         return "id"
        >>> missing_store_methods(Half())
        ['lookup', 'claim', 'wait_for_others', 'release', 'append', 'close']
    """
    return [name for name in STORE_METHODS if not callable(getattr(obj, name, None))]


__all__ = ["STORE_METHODS", "TRACE_METHODS", "Store", "missing_store_methods"]
