"""``tell_store``: report coalition values into an ask/tell run's store from any process.

The driver of an :class:`~shapleig.design.ask_tell.AskTell` run with ``store=`` asks coalitions and
hands them out (files, a queue, SLURM array jobs, Ray tasks); a worker that evaluated some opens
the same store and reports them here, without a driver object::

    shapleig.tell_store("study.sqlite", Z, y, n_players=6)   # in the worker, after evaluating Z

The driver's :meth:`~shapleig.design.ask_tell.AskTell.sync` (called by ``ask``, ``done`` and
``result``) then tells it the values of its pending coalitions. The values go through the store's
own write path: the store must already belong to an ask/tell run on the same ``n_players`` and
``game_id`` (checked by :meth:`~shapleig.runs.store_protocol.Store.bind`, so a store of another game
is refused), each coalition is claimed before its row is appended (with its keyed digest,
committed before this returns), and a coalition the store holds already keeps its stored value
(the first stored value wins, as everywhere).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from shapleig.design.ask_tell import ToldValues, check_told
from shapleig.errors import StoreError
from shapleig.games.game import check_n_players
from shapleig.runs.store import EvaluationStore, open_store


def tell_store(store: Any, Z: Any, y: Any, *, n_players: int, game_id: str | None = None,
               seconds: Any = None) -> int:
    """Report the values ``y`` of coalitions ``Z`` into the store of an ask/tell run.

    Everything is checked before anything is written: a bad call writes nothing. Coalitions need
    not be pending in the driver: a value the run has not asked yet waits in the store and is taken
    when the run asks that coalition.

    Args:
        store: the run's store: the path of its SQLite file (which must exist: the driver's
            ``ask_tell(..., store=path)`` creates it), or a store object
            (:class:`~shapleig.runs.store_protocol.Store`; left open).
        Z: ``bool[k, p]`` (or one coalition ``bool[p]``; 0/1 integers accepted), distinct coalitions.
        y: ``float[k]`` (a scalar for one coalition), their finite values.
        n_players: the number of players p of the run.
        game_id: the ``game_id`` the run was started with (None: none).
        seconds: wall-clock seconds each evaluation took, ``float[k]`` or one number for all
            (None: not recorded, 0); finite and >= 0.

    Returns:
        How many values were written; the others were stored already (by the driver, another
        worker or an earlier call) and keep their stored value.

    Raises:
        CoalitionError: ``Z`` has the wrong shape or dtype, or repeats a coalition.
        ValueError: ``y`` does not hold one finite value per coalition, or ``seconds`` is not
            one finite non-negative number per coalition.
        StoreError: there is no store at the path, or it belongs to no run yet.
        StoreMismatchError: the store belongs to another game (another ``n_players`` or
            ``game_id``, or a game that is not an ask/tell run); its message names what differs.
        GameError: ``n_players`` is not an integer >= 2.

    Example:
        >>> import numpy as np, shapleig
        >>> run = shapleig.ShaplEIG(pool_size=64).ask_tell(4, 8, seed=0, store=":memory:")
        >>> Z = run.ask(5)                                   # the initial design, handed out
        >>> shapleig.tell_store(run.loop.game.store, Z[:3], Z[:3].sum(axis=1) ** 2.0, n_players=4)
        3
        >>> run.sync(), run.told                             # what the driver takes from the store
        (3, 3)
    """
    p = check_n_players(n_players)
    Z, _, values = check_told(Z, y, p)
    took = _seconds(seconds, len(values))
    if not len(values):
        return 0
    opened = isinstance(store, (str, os.PathLike))
    if opened and (os.fspath(store) == ":memory:" or not os.path.exists(store)):
        raise StoreError(f"there is no evaluation store at {os.fspath(store)!r}: a worker tells values into the store "
                         f"of an ask/tell run, which ShaplEIG(...).ask_tell(..., store=path) creates; start the "
                         f"driver first, or check the path. Nothing was written.")
    target = open_store(store)
    try:
        if isinstance(target, EvaluationStore) and not target.meta():
            raise StoreError(f"the evaluation store at {target.path} belongs to no run yet (no game is recorded in "
                             f"it): start the driver's ask_tell(..., store=...) on it first. Nothing was written.")
        target.bind(ToldValues(p, game_id))  # StoreMismatchError for a store of another game
        return _append_new(target, Z, values, took)
    finally:
        if opened:
            target.close()


def _seconds(seconds: Any, k: int) -> np.ndarray:
    """``seconds`` as ``float64[k]`` (zeros for None); ValueError naming what is wrong."""
    if seconds is None:
        return np.zeros(k)
    try:
        took = np.broadcast_to(np.asarray(seconds, dtype=np.float64), (k,))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"seconds must be one number, or one per coalition ({k}): {exc}") from exc
    if not (np.isfinite(took) & (took >= 0)).all():
        raise ValueError(f"seconds must be finite and >= 0, got {np.asarray(seconds)!r}")
    return took


def _append_new(store: Any, Z: np.ndarray, values: np.ndarray, took: np.ndarray) -> int:
    """Append the coalitions of ``Z`` the store does not hold, each claimed first; how many were appended.

    A coalition another process is writing (the driver's ``tell``, another worker) is waited for,
    as :class:`~shapleig.runs.budget.BudgetedGame` waits: its stored value then wins.
    """
    pending = np.arange(len(Z))
    written = 0
    while pending.size:
        _, _, mine, busy = store.claim(Z[pending])  # stored already (found): kept as stored
        for i in pending[mine]:
            try:
                store.append(Z[i], float(values[i]), seconds=float(took[i]), status="ok")
            except BaseException:
                rest = pending[mine]
                store.release(Z[rest[rest >= i]])  # what this call did not write, others may
                raise
            written += 1
        pending = pending[busy]
        if pending.size:
            store.wait_for_others(Z[pending])
    return written
