"""Games: the ``Game`` protocol, ``FunctionGame``, and the checks of games, values and budgets.

A game is any object with ``n_players: int`` and ``__call__(bool[m, n_players]) -> float[m]``
(shapiq's games are games as they are). Estimators spend budget on a game only through
:class:`~shapleig.runs.budget.BudgetedGame` (``shapleig/runs/budget.py``), which charges each
distinct coalition once, caches, checks values and talks to evaluation stores and evaluators.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from shapleig.errors import BudgetError, GameError
from shapleig.games.coalitions import format_coalition


@runtime_checkable
class Game(Protocol):
    """A cooperative game: ``game(Z)`` maps ``bool[m, n_players]`` to ``float[m]``."""

    n_players: int

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """The values of ``coalitions``: ``bool[m, n_players]`` -> ``float[m]``."""
        ...


class FunctionGame:
    """Wrap ``fn: bool[m, p] -> float[m]`` as a :class:`Game` with ``n_players = p``.

    The identity in evaluation stores is built from ``fn``'s content (code, defaults, closure, the
    module globals it reads); give a ``game_id`` when the values also depend on something the
    identity cannot see (a file ``fn`` reads, a remote service).

    Args:
        fn: the value function, ``bool[m, p] -> float[m]``.
        n_players: the number of players p (an int >= 2).
        name: the display name (default: ``fn.__name__``); not part of the identity.
        game_id: an optional label of what ``fn`` computes, part of the game's identity in evaluation stores.
    """

    def __init__(self, fn: Callable[[np.ndarray], Any], n_players: int, name: str | None = None,
                 game_id: str | None = None):
        if not callable(fn):
            raise GameError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.n_players = check_n_players(n_players)
        self.name = name or getattr(fn, "__name__", "function")
        self.game_id = None if game_id is None else str(game_id)

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """The values of ``coalitions`` (``bool[m, p]``): ``fn``'s output as float64[m]."""
        raw = np.asarray(self.fn(coalitions))
        # real numbers as float64; anything else (complex, text) is passed on unconverted, so the
        # evaluator refuses it naming what came back instead of numpy silently coercing it
        return raw.astype(np.float64) if raw.dtype.kind in "biuf" else raw

    def identity(self) -> dict[str, str]:
        """Identity components for evaluation stores (:mod:`shapleig.games.identity`).

        The function's content and the ``game_id``; the display name does not count.

        Returns:
            ``{component: text}``: ``fn.code``, ``fn.defaults``, ``fn.closure.<name>``, ``fn.global.<name>`` (and
            ``game_id``).
        """
        from shapleig.games.identity import function_identity

        out = function_identity(self.fn)
        if self.game_id is not None:
            out["game_id"] = self.game_id
        return out

    def __repr__(self) -> str:
        extra = f", game_id={self.game_id!r}" if self.game_id is not None else ""
        return f"FunctionGame({self.name}, n_players={self.n_players}{extra})"


def check_n_players(n_players: Any, minimum: int = 2) -> int:
    """Return ``n_players`` as an int, or raise :class:`GameError` if it is not an int >= minimum.

    Args:
        n_players: the value to check.
        minimum: the smallest number of players accepted.

    Returns:
        ``n_players`` as an int.
    """
    if isinstance(n_players, (bool, np.bool_)) or not isinstance(n_players, (int, np.integer)):
        raise GameError(f"n_players must be an integer, got {n_players!r}")
    if n_players < minimum:
        raise GameError(f"a game needs at least {minimum} players, got n_players = {n_players}")
    return int(n_players)


def check_game(game: Any, minimum_players: int = 2) -> int:
    """Validate that ``game`` looks like a :class:`Game`; return its number of players.

    Args:
        game: the object to check.
        minimum_players: the smallest number of players accepted.

    Returns:
        the game's number of players.
    """
    if not callable(game) or not hasattr(game, "n_players"):
        raise GameError(
            f"a game needs an integer attribute n_players and __call__(bool[m, p]) -> float[m]; "
            f"got {type(game).__name__}"
        )
    return check_n_players(game.n_players, minimum_players)


def real_values(values: Any) -> np.ndarray:
    """A game's raw output as a float64 array; :class:`GameError` unless every entry is a real number.

    Real numbers are bool, int or float. Complex numbers (numpy would drop their imaginary part with
    only a warning) and strings (numpy would parse ``"1.5"``) are refused, naming what came back.
    Python integers beyond float64's range (``10**400``) become ``inf``/``-inf``, so they are
    reported like any other non-finite value, naming the coalition (numpy would raise a bare
    OverflowError).

    Args:
        values: what the game returned.

    Returns:
        float64 array of the same shape.
    """
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise GameError(f"game returned values that are not numbers: {exc}") from exc
    kind = raw.dtype.kind
    if kind == "O":
        bad = [x for x in raw.ravel().tolist() if isinstance(x, (str, bytes, complex)) or not isinstance(
            x, (int, float, np.integer, np.floating, np.bool_))]
        if bad:
            raise GameError(f"game returned values that are not numbers: {bad[0]!r} "
                            f"({type(bad[0]).__name__}); return floats")
    elif kind == "c":
        raise GameError(f"game returned complex values ({raw.dtype}); return real numbers "
                        f"(e.g. the real part or the modulus, whichever the game means)")
    elif kind not in "biuf":
        raise GameError(f"game returned values that are not numbers (dtype {raw.dtype}, e.g. "
                        f"{raw.ravel()[:1].tolist()}); return floats")
    try:
        return raw.astype(np.float64)
    except OverflowError:  # a Python int beyond float64 (object array): +-inf, entry by entry
        return np.array([_int_to_float(x) for x in raw.ravel().tolist()], dtype=np.float64).reshape(raw.shape)
    except (TypeError, ValueError) as exc:
        raise GameError(f"game returned values that are not numbers: {exc}") from exc


def _int_to_float(x: Any) -> float:
    """``float(x)``, or ``+-inf`` for an integer too large for float64."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def as_value_vector(values: Any, n_coalitions: int) -> np.ndarray:
    """A game's raw output as ``float64[n_coalitions]``; :class:`GameError` on a wrong shape.

    Entries that are not real numbers raise too (:func:`real_values`). Accepts ``(m,)`` and
    ``(m, 1)``. Finiteness is not checked here (see :func:`check_game_values`).

    Args:
        values: what the game returned for ``n_coalitions`` coalitions.
        n_coalitions: the number of coalitions asked for.

    Returns:
        ``float64[n_coalitions]``.
    """
    v = real_values(values)
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.shape != (n_coalitions,):
        raise GameError(
            f"game returned shape {v.shape} for {n_coalitions} coalitions; expected ({n_coalitions},)"
        )
    return v


def check_game_values(values: Any, coalitions: np.ndarray) -> np.ndarray:
    """Validate a game's output for ``coalitions`` (``bool[m, p]``): ``float64[m]``, all finite.

    Args:
        values: what the game returned for ``coalitions``.
        coalitions: ``bool[m, p]``, the coalitions asked for (named in the error message).

    Returns:
        ``float64[m]``, all finite.
    """
    v = as_value_vector(values, coalitions.shape[0])
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        r = int(bad[0])
        raise GameError(
            f"game returned {v[r]} for coalition {format_coalition(coalitions[r])}"
            + (f" (and {bad.size - 1} more non-finite values)" if bad.size > 1 else "")
        )
    return v


def check_budget(budget: Any, minimum: int | None = 1, method: str | None = None) -> int:
    """Return ``budget`` as an int, or raise :class:`BudgetError` if it is not an int >= minimum.

    ``minimum=None`` checks the type only (callers that state a method's own minimum next).

    Args:
        budget: the value to check.
        minimum: the smallest budget accepted; None checks the type only.
        method: the method named in the error message.

    Returns:
        ``budget`` as an int.
    """
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)):
        raise BudgetError(f"budget must be an integer number of evaluations, got {budget!r}")
    if minimum is not None and budget < minimum:
        who = f"{method} needs" if method else "needs"
        raise BudgetError(f"budget {budget} is too small: {who} at least {minimum} evaluations")
    return int(budget)


def describe_game(game: Any) -> str:
    """Short readable name of a game for messages: ``module.Class(n_players=p)``.

    Args:
        game: any game.

    Returns:
        ``module.Class(n_players=p)``.
    """
    cls = type(game)
    return f"{cls.__module__}.{cls.__qualname__}(n_players={getattr(game, 'n_players', '?')})"




