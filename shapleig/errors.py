"""Exceptions raised across the project; each message names the offending input."""

from __future__ import annotations


class ShapleigError(Exception):
    """Base class of the project's own errors."""


class BudgetError(ShapleigError, ValueError):
    """A budget is too small for a method's fixed phase, or not an integer."""


class BudgetExhaustedError(ShapleigError, RuntimeError):
    """An evaluation was requested beyond the budget; nothing was evaluated."""


class GameError(ShapleigError, ValueError):
    """A game is malformed or returned values that cannot be used (wrong count, NaN, inf)."""


class AcquisitionError(ShapleigError, ValueError):
    """An acquisition returned scores that cannot be used (wrong shape, NaN, nothing left to pick).

    The message names the acquisition's class; nothing is selected from such scores.
    """


class CoalitionError(ShapleigError, ValueError):
    """A coalition matrix has the wrong shape, dtype or entries."""


class EvaluationFailedError(ShapleigError, RuntimeError):
    """A game kept raising for a coalition after all retries; what was evaluated is kept."""


class NonFiniteValueError(EvaluationFailedError, GameError):
    """A game kept returning NaN or inf for a coalition; a GameError and an EvaluationFailedError."""


class StoreMismatchError(ShapleigError, ValueError):
    """An evaluation store written for one game was opened for a different game."""


class StoreError(ShapleigError, RuntimeError):
    """An evaluation store cannot be opened, read or written (not a store, damaged, read-only, disk full).

    What was already committed is kept.
    """


class StoreBusyError(StoreError):
    """Another live process is evaluating coalitions of this store and the store was opened with ``wait=False``."""


class NumericRangeError(GameError):
    """A game's values differ by too little next to their magnitude for float64 to resolve them.

    E.g. 1e9 + 1e-6 * v: every estimator would return rounding noise.
    """
