"""``AskTell``: ShaplEIG's design loop driven from outside, as Optuna's ask-and-tell.

The caller evaluates coalitions wherever it likes (SLURM array jobs, Ray tasks, a thread pool, a
notebook) and tells the values back::

    run = ShaplEIG().ask_tell(n_players, budget, seed=0, store="study.sqlite")
    while not run.done:
        Z = run.ask(4)             # bool[k, p], k <= 4; conditioned on every pending coalition
        run.tell(Z, evaluate(Z))   # any order, any subset of the pending coalitions
    est = run.result()

The object drives a :class:`~shapleig.design.loop.DesignLoop` through its public steps
(:meth:`~DesignLoop.draw_design`, :meth:`~DesignLoop.absorb_design`, :meth:`~DesignLoop.select`,
:meth:`~DesignLoop.reserve`, :meth:`~DesignLoop.absorb`): a selection is conditioned on every
coalition asked and not yet told (exact, the EIG does not depend on values, docs/math.md §10), and
refits run at ask time on the values told so far, when the loop's refit schedule asks for one. Told
values are charged through a :class:`~shapleig.runs.budget.BudgetedGame` (validated, cached and,
with a store, committed to it as the loop's own evaluations are).

Resuming: a new run with the same options, seed and store replays the decisions; a coalition it
selects whose value the store holds is told from the store at once and never asked again, so the
first coalitions a resumed run asks are the ones the killed driver left pending. The replay is
exact when the resumed driver asks in the same pattern as the first (the same ``q`` at each ask,
each batch told before the next ask, e.g. a sequential ``ask(1)`` / ``tell`` loop).

Telling from another process: a worker that opens the same store reports values with
:func:`shapleig.design.tell_store.tell_store`; :meth:`AskTell.sync` tells the driver the stored
values of its pending coalitions (``ask``, ``done`` and ``result`` sync first). A value for a
coalition not asked yet waits in the store and is taken when the run asks it, as on resume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from shapleig.errors import CoalitionError
from shapleig.games.coalitions import as_coalition_matrix, coalition_keys, format_coalition

if TYPE_CHECKING:  # annotations only: a worker process telling the store does not import the loop (scipy)
    from shapleig.design.loop import DesignLoop
    from shapleig.estimation.result import ShapleyEstimate


def check_told(Z: Any, y: Any, n_players: int) -> tuple[np.ndarray, list[bytes], np.ndarray]:
    """``Z`` and ``y`` found fit to tell: coalitions of the right width, each once, one finite value each.

    Args:
        Z: ``bool[k, p]`` (or one coalition ``bool[p]``; 0/1 integers accepted).
        y: ``float[k]`` (a scalar for one coalition), their values.
        n_players: the number of players p.

    Returns:
        ``(Z bool[k, p], keys, values float64[k])``, keys as :func:`~shapleig.games.coalitions.coalition_keys`.

    Raises:
        CoalitionError: ``Z`` has the wrong shape or dtype, or repeats a coalition.
        ValueError: ``y`` does not hold one finite value per coalition.
    """
    Z = as_coalition_matrix(Z, n_players)
    keys = coalition_keys(Z)
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must hold one number per coalition: {exc}") from exc
    if values.ndim == 0 and len(keys) == 1:
        values = values[None]
    if values.shape != (len(keys),):
        raise ValueError(f"y must hold one value per coalition: shape ({len(keys)},), got {values.shape}")
    if len(set(keys)) != len(keys):
        raise CoalitionError("Z repeats a coalition: tell each value once")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"value {values[bad[0]]} for coalition {format_coalition(Z[bad[0]])} is not finite: "
                         f"nothing was told (tell a finite value, or leave the coalition pending)")
    return Z, keys, values


class ToldValues:
    """The game an ask/tell run charges: it returns the values told for the coalitions asked.

    Its identity (``n_players`` and ``game_id``) is what an evaluation store records, so a store
    written by a run on another labelled game is refused.

    Args:
        n_players: the number of players p.
        game_id: a label of the game whose values are told (None: none).
    """

    def __init__(self, n_players: int, game_id: str | None = None) -> None:
        self.n_players = n_players
        self.game_id = game_id
        self._values: dict[bytes, float] = {}

    def identity(self) -> dict[str, str]:
        """What identifies the game in an evaluation store.

        Returns:
            ``{"ask_tell": game_id}`` (an empty label without one).
        """
        return {"ask_tell": self.game_id or ""}

    def load(self, keys: list[bytes], values: np.ndarray) -> None:
        """Hold one tell's values until the budgeted game charges them (replacing the previous tell's).

        Values the store already held are not asked of this game: replacing keeps none of them.

        Args:
            keys: the coalitions' keys (:func:`~shapleig.games.coalitions.coalition_keys`).
            values: ``float64[k]``, their values.
        """
        self._values = dict(zip(keys, values.tolist()))

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """The told values of ``coalitions`` (each told value is handed out once)."""
        keys = coalition_keys(as_coalition_matrix(coalitions, self.n_players))
        missing = [i for i, k in enumerate(keys) if k not in self._values]
        if missing:  # e.g. a store opened with verify=True: an ask/tell run cannot evaluate coalitions
            raise RuntimeError(f"no value was told for coalition {format_coalition(coalitions[missing[0]])}")
        return np.array([self._values.pop(k) for k in keys], dtype=np.float64)


class AskTell:
    """A ShaplEIG run whose coalitions the caller evaluates: ``ask``, evaluate anywhere, ``tell``.

    Made by :meth:`shapleig.ShaplEIG.ask_tell` (see the module docstring for the resume rule). One
    driver calls ``ask`` and ``tell`` (the object is not locked for concurrent calls); the
    evaluations themselves may run anywhere, and with a store other processes may report values
    into it (:func:`~shapleig.design.tell_store.tell_store`) for :meth:`sync` to pick up.

    Args:
        loop: the design loop to drive, not yet started; its game is a :class:`~shapleig.runs.budget.BudgetedGame`
            of a :class:`ToldValues`.
        method: the method name the estimate reports.

    Example:
        >>> from shapleig import ShaplEIG
        >>> run = ShaplEIG(pool_size=64).ask_tell(4, 12, seed=0)
        >>> while not run.done:
        ...     Z = run.ask(3)
        ...     run.tell(Z, Z.sum(axis=1) ** 2.0)
        >>> run.result().values.round(2).tolist()
        [4.0, 4.0, 4.0, 4.0]
    """

    def __init__(self, loop: DesignLoop, method: str) -> None:
        self._loop = loop
        self._told = loop.game.game
        self._method = method
        self._design = loop.draw_design()
        self._design_keys = {k: i for i, k in enumerate(coalition_keys(self._design))}
        self._design_asked = 0  # design rows handed out so far (in design order)
        self._design_values: dict[bytes, float] | None = {}  # None once the design is absorbed
        self._pending: dict[bytes, np.ndarray] = {}  # asked, not yet told, in asking order
        self._synced: set[bytes] = set()  # asked, then taken from the store by sync(): a tell of them is a no-op
        self._settled = False  # the precision target (if any) was confirmed: nothing more to ask
        self._final: ShapleyEstimate | None = None

    # -- state ----------------------------------------------------------------------------------
    @property
    def loop(self) -> DesignLoop:
        """The driven :class:`~shapleig.design.loop.DesignLoop` (archive ``X``/``y``, trace, fits)."""
        return self._loop

    @property
    def n_players(self) -> int:
        """The number of players p."""
        return self._loop.n_players

    @property
    def budget(self) -> int:
        """Distinct coalitions the run may evaluate."""
        return self._loop.budget

    @property
    def told(self) -> int:
        """Values told (or taken from the store) so far."""
        return self._loop.evaluations

    @property
    def pending(self) -> np.ndarray:
        """``bool[k, p]``: coalitions asked and not yet told, in asking order."""
        if not self._pending:
            return np.zeros((0, self.n_players), dtype=bool)
        return np.stack(list(self._pending.values()))

    @property
    def done(self) -> bool:
        """Whether nothing is pending and nothing is left to ask (budget, pool or precision target reached).

        With a store, the values other processes stored for pending coalitions are told first (:meth:`sync`).
        """
        self.sync()
        return self._is_done()

    def _is_done(self) -> bool:
        """:attr:`done` without syncing."""
        return self._nothing_to_ask() and not self._pending

    def _nothing_to_ask(self) -> bool:
        """Whether no coalition can be asked now (a met precision target is confirmed first, as the loop does)."""
        if self._design_values is not None:
            return False  # the design is still being asked or told
        if self._settled:
            return True
        if self._loop.capacity() > 0:
            return False
        if self._pending:
            return True  # the budget is fully asked: the target is confirmed once everything is told
        self._settled = self._loop.confirm_target()  # False: the target was withdrawn, capacity is back
        return self._settled or self._loop.capacity() == 0

    # -- ask ------------------------------------------------------------------------------------
    def ask(self, q: int = 1) -> np.ndarray:
        """The next coalitions to evaluate, conditioned on every pending one.

        The p + 1 initial-design coalitions come first, at most ``q`` at a time; acquisitions can
        only be chosen once all of them are told (until then ``ask`` returns fewer rows, possibly
        none). Beyond the budget, ``ask`` returns fewer than ``q`` rows, and none once the budget is
        fully asked (or the pool spent, or the precision target met): it never raises for that.
        With a store, the values other processes stored for pending coalitions are told first
        (:meth:`sync`), and selected coalitions whose values it holds are told from it at once.

        Args:
            q: the most coalitions wanted (a positive int).

        Returns:
            ``bool[k, p]`` with ``0 <= k <= q``: distinct coalitions never asked before.

        Raises:
            ValueError: ``q`` is not a positive integer.
        """
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, (int, np.integer)) or q < 1:
            raise ValueError(f"q must be a positive integer, got {q!r}")
        self.sync()
        while True:
            Z = self._select(int(q))
            self._pending.update(zip(coalition_keys(Z), Z))
            fresh = self._tell_stored(Z)
            if len(fresh) or not len(Z):  # everything selected was stored: the replay goes on
                return fresh

    def _select(self, q: int) -> np.ndarray:
        """The next ``q`` (or fewer) design rows or acquisitions, marked asked."""
        if self._design_values is not None:
            first = self._design_asked
            self._design_asked = min(len(self._design), first + q)
            return self._design[first:self._design_asked].copy()
        if self._nothing_to_ask():
            return np.zeros((0, self.n_players), dtype=bool)
        loop = self._loop
        return loop.reserve(loop.select(min(q, loop.capacity())))

    def _tell_stored(self, Z: np.ndarray) -> np.ndarray:
        """Tell the rows of ``Z`` the store holds; return the others."""
        store = self._loop.game.store
        if store is None or not len(Z):
            return Z
        found, values = store.lookup(Z)
        if found.any():
            self.tell(Z[found], values[found])
        return Z[~found]

    # -- tell -----------------------------------------------------------------------------------
    def sync(self) -> int:
        """Tell the values the store holds for pending coalitions (stored by any process).

        A worker process reports values with :func:`~shapleig.design.tell_store.tell_store`; this
        takes those of coalitions the run asked and is waiting for, in asking order, as one
        :meth:`tell` (each charged once, the stored value used). Values of coalitions not asked
        yet stay in the store until the run asks them. :meth:`ask`, :attr:`done` and
        :meth:`result` call it first; without a store it does nothing.

        Returns:
            how many pending coalitions were told from the store.
        """
        store = self._loop.game.store
        if store is None or not self._pending:
            return 0
        Z = self.pending
        found, values = store.lookup(Z)
        if not found.any():
            return 0
        self.tell(Z[found], values[found])
        self._synced.update(coalition_keys(Z[found]))
        return int(found.sum())

    def tell(self, Z: np.ndarray, y: np.ndarray) -> None:
        """Values of asked coalitions, in any order, any subset of the pending ones.

        Everything is checked before anything is recorded: a bad call changes nothing. With a
        store, a value another process stored for the coalition wins over the one told (charged
        once); a coalition :meth:`sync` already took from the store is left as it is (its told
        value is checked, then ignored).

        Args:
            Z: ``bool[k, p]`` (or one coalition ``bool[p]``), pending coalitions.
            y: ``float[k]``, their values (finite).

        Raises:
            CoalitionError: ``Z`` has the wrong shape, repeats a coalition, or holds one that was
                never asked or was told already.
            ValueError: ``y`` does not hold one finite value per coalition.
        """
        Z, keys, values = check_told(Z, y, self.n_players)
        self._check_pending(Z, keys)
        fresh = np.array([k not in self._synced for k in keys], dtype=bool)
        if not fresh.all():  # reported through the store and synced before this tell: the stored value stands
            Z, values = Z[fresh], values[fresh]
            keys = [k for k, f in zip(keys, fresh) if f]
        if not keys:
            return
        self._told.load(keys, values)
        charged = self._loop.game(Z)  # validated, cached, stored; a value another process stored wins
        for k in keys:
            del self._pending[k]
        design = np.array([k in self._design_keys for k in keys])
        if design.any():
            self._take_design([k for k, d in zip(keys, design) if d], charged[design])
        if (~design).any():
            self._loop.absorb(Z[~design], charged[~design])

    def _check_pending(self, Z: np.ndarray, keys: list[bytes]) -> None:
        """Refuse coalitions neither pending nor synced from the store (CoalitionError naming the first)."""
        for row, key in zip(Z, keys):
            if key not in self._pending and key not in self._synced:
                told = bool(self._loop.game.is_cached(row[None])[0])
                raise CoalitionError(f"coalition {format_coalition(row)} "
                                     + ("was told already" if told else "was never asked (not pending)"))

    def _take_design(self, keys: list[bytes], values: np.ndarray) -> None:
        """Collect design values; with the last one, the loop fits and the acquisitions start."""
        self._design_values.update(zip(keys, values.tolist()))
        if len(self._design_values) == len(self._design):
            ordered = np.array([self._design_values[k] for k in coalition_keys(self._design)])
            self._design_values = None
            self._loop.absorb_design(self._design, ordered)

    # -- read-out -------------------------------------------------------------------------------
    def result(self) -> ShapleyEstimate:
        """The estimate on the values told so far.

        With a store, pending values other processes stored are told first (:meth:`sync`). Once
        :attr:`done`, the loop's final estimate (final refit and read-out, as
        :meth:`shapleig.ShaplEIG.estimate` returns it; computed once). Before, the anytime
        estimate under the hyperparameters in force (the run is not changed by asking).

        Returns:
            the :class:`~shapleig.estimation.result.ShapleyEstimate` (values, std, ``info``).

        Raises:
            RuntimeError: the p + 1 initial-design values are not all told yet.
        """
        self.sync()
        if self._design_values is not None:
            raise RuntimeError(f"result() needs the values of all p + 1 = {len(self._design)} initial-design "
                               f"coalitions to fit the surrogate; {len(self._design_values)} told so far")
        if not self._is_done():
            est = self._loop.current_estimate()
        elif self._final is None:
            est = self._final = self._loop.finish()
        else:
            est = self._final
        est.method = self._method
        est.info["pending"] = len(self._pending)
        return est

    def __repr__(self) -> str:
        return (f"AskTell(p={self.n_players}, budget={self.budget}, told={self.told}, "
                f"pending={len(self._pending)}, done={self._is_done()})")
