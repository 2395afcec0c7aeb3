"""Owen (multilinear) sampling and Halved Owen sampling (Okhrati & Lipani, ICPR 2020; docs/baselines.md §3).

Identity: ``phi_i = int_0^1 e_i(q) dq`` with ``e_i(q) = E[v(E + i) - v(E)]``, where ``E`` contains
every other player independently with probability ``q``.

One *draw* at inclusion probability ``q`` is one Bernoulli(q) set ``I`` over all players, shared
by all of them: ``h_j = v(I + j) - v(I - j)``. It costs ``v(I)`` plus the ``p`` single-flip
neighbours, ``p + 1`` evaluations for all ``p`` marginals (fewer when some are cached). The
estimate is the mean of ``h`` over all draws. Halved Owen draws ``q`` on ``[0, 1/2]`` and also uses
the complement of ``I`` (a Bernoulli(1 - q) set), averaging both: ``2 (p + 1)`` evaluations.

q grids (``grid=``):

- ``"stratified"`` (default, unbiased): ``Q`` equal cells, ``q_k = (k + U_k) / Q`` with one
  ``U_k ~ U(0, 1)`` per cell shared by its ``M`` draws (Halved: cells on ``[0, 1/2]``). Draws of a
  pass are taken in random order, so every prefix, and hence every trace point, is unbiased.
- ``"random"``: ``q ~ U(0, 1)`` per draw (Halved: ``U(0, 1/2)``), drawn until the next draw would
  not fit.
- ``"endpoint"`` (reproduction mode, biased): the fixed grid ``linspace(0, 1, Q)`` (Halved:
  ``linspace(0, 1/2, Q)``; ``Q = 1`` uses the midpoint), as in the SVARM code and shapiq. Its endpoint
  ``q = 0`` gets weight ``1/Q`` although little mass lies there for large ``p``.

Design size: with ``n_cells=None`` the number of cells is derived from the budget,
``Q = floor(remaining / (M * cost))``; with ``n_cells`` fixed and ``draws_per_cell=None`` the number
of draws per cell ``M`` is derived instead (e.g. the reproduction setting ``grid="endpoint",
n_cells=10, draws_per_cell=None``). A pass is a complete grid of ``Q * M`` draws and always fits.
Because repeated coalitions are free, a pass usually
leaves budget over (much of it at small ``p``, where neighbours repeat). By default
(``refill=False``) it stays unused: one pass keeps the estimator exactly unbiased. With
``refill=True`` further complete passes run on what is left and all draws are averaged; the size
of each later pass then depends on the earlier passes' cache hits, which correlate with the sets
drawn, and this bias is measurable on small games (about 5 standard errors over 1000 runs of
Halved Owen on the 7-player voting game at budget 60), so it is opt-in.
Not efficient.
"""

from __future__ import annotations

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.runs.budget import BudgetedGame

from .permutation import TRACE_POINTS, full_table_size
from .sampling import draw_within_budget

GRIDS = ("stratified", "random", "endpoint")

# Draws evaluated per call of the game (bounds the (draws, p+1, p) bool tensor kept in memory).
MAX_ROWS_PER_CALL = 1 << 17
# Safety cap on draws relative to the budget (only reachable when nearly everything is cached).
DRAW_CAP_FACTOR = 100


def _check_positive(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return int(value)


class OwenSampling(BaseEstimator):
    """Owen sampling with a shared Bernoulli set per draw (Algorithm 1 of Okhrati & Lipani).

    grid:           "stratified" (default), "random" or "endpoint" (see module docstring).
    draws_per_cell: M, draws per grid cell (default 2, the paper's); None = derived from budget.
    n_cells:        Q, grid cells; None (default) = derived from the remaining budget per pass.
    refill:         run further complete passes on budget left by cache hits (default False;
                    slightly biased, see the module docstring).

    ``info``: ``n_draws`` (Bernoulli sets drawn; Halved: antithetic pairs), ``n_passes``,
    ``first_pass`` = ``(Q, M)``, ``grid``, ``stopped``.
    """

    name = "owen"
    halved = False

    def __init__(
        self,
        *,
        grid: str = "stratified",
        draws_per_cell: int | None = 2,
        n_cells: int | None = None,
        refill: bool = False,
    ):
        if grid not in GRIDS:
            raise ValueError(f"unknown q grid {grid!r}; choose one of {GRIDS}")
        self.grid = grid
        self.draws_per_cell = _check_positive("draws_per_cell", draws_per_cell)
        self.n_cells = _check_positive("n_cells", n_cells)
        if grid != "random" and self.draws_per_cell is None and self.n_cells is None:
            raise ValueError("at most one of draws_per_cell and n_cells may be None (derived)")
        self.refill = bool(refill)

    # -- budget -------------------------------------------------------------------------------
    def _draw_cost(self, p: int) -> int:
        """Evaluations of one draw at most: I and its p neighbours (twice for Halved)."""
        return (2 if self.halved else 1) * (p + 1)

    def min_budget(self, n_players: int) -> int:
        cost = self._draw_cost(n_players)
        if self.grid != "random":
            cost *= (self.n_cells or 1) * (self.draws_per_cell or 1)
        support = full_table_size(n_players)
        return min(cost, support) if support is not None else cost

    def min_budget_reason(self, n_players: int) -> str:
        what = "the p+1 coalitions I and its single-flip neighbours" + (
            ", for I and its complement" if self.halved else ""
        )
        if self.grid == "random":
            return f"one draw: {what}"
        q = self.n_cells or 1
        m = self.draws_per_cell or 1
        return f"one pass of {q} cell(s) x {m} draw(s), each {what}"

    # -- draws --------------------------------------------------------------------------------
    def _sets(self, rng: np.random.Generator, q: np.ndarray, p: int) -> np.ndarray:
        """Rows ``bool[D * rows_per_draw, p]``: for each draw I, its p flips (and the same for ~I)."""
        base = rng.random((q.shape[0], p)) < q[:, None]
        flips = base[:, None, :] ^ np.eye(p, dtype=bool)[None, :, :]  # (D, p, p): I xor e_j
        block = np.concatenate([base[:, None, :], flips], axis=1)  # (D, p+1, p)
        if self.halved:
            block = np.concatenate([block, ~block], axis=1)  # complements: ~I and ~(I xor e_j)
        return block.reshape(-1, p)

    def _marginals(self, rows: np.ndarray, values: np.ndarray, p: int) -> np.ndarray:
        """``h`` per draw, ``float64[D, p]``, from rows and values in :meth:`_sets` layout."""
        per = p + 1
        halves = 2 if self.halved else 1
        z = rows.reshape(-1, halves, per, p)
        v = values.reshape(-1, halves, per)
        inside = z[:, :, 0, :]  # (D, halves, p): is j in the base set
        diff = v[:, :, :1] - v[:, :, 1:]  # v(base) - v(base xor e_j)
        h = np.where(inside, diff, -diff)  # = v(base + j) - v(base - j)
        return h.mean(axis=1)

    def _q_pass(self, rng: np.random.Generator, n_cells: int, m: int) -> np.ndarray:
        """The q of every draw of one pass (``float64[n_cells * m]``), in random order."""
        top = 0.5 if self.halved else 1.0
        if self.grid == "stratified":
            q = (np.arange(n_cells) + rng.random(n_cells)) / n_cells * top
        else:  # endpoint
            q = np.linspace(0.0, top, n_cells) if n_cells > 1 else np.array([top / 2])
        q = np.repeat(q, m)
        return q[rng.permutation(q.shape[0])]

    # -- estimate -----------------------------------------------------------------------------
    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        p = game.n_players
        rng = np.random.default_rng(seed)
        if self.grid == "random":
            h, evals_after, stopped, passes = self._run_random(game, rng)
        else:
            h, evals_after, stopped, passes = self._run_passes(game, rng)
        n = h.shape[0]
        cum = np.cumsum(h, axis=0)
        marks = np.unique(np.linspace(0, n, min(TRACE_POINTS, n) + 1).round().astype(np.int64))
        trace = [(int(evals_after[k - 1]), cum[k - 1] / k) for k in marks if k > 0]
        return ShapleyEstimate(
            values=cum[-1] / n if n else np.zeros(p),
            trace=trace,
            info={
                "n_draws": int(n),
                "grid": self.grid,
                "n_passes": len(passes),
                "first_pass": passes[0] if passes else None,  # (Q cells, M draws per cell)
                "stopped": stopped,
            },
        )

    def _run_random(self, game: BudgetedGame, rng: np.random.Generator):
        p = game.n_players
        block = self._draw_cost(p)
        top = 0.5 if self.halved else 1.0

        def sampler(start: int, m: int) -> np.ndarray:
            return self._sets(rng, rng.random(m // block) * top, p)

        e0 = game.evaluations
        support = full_table_size(p)
        draws = draw_within_budget(
            game, sampler, block=block, support_size=support, in_support=lambda z: np.ones(z.shape[0], bool)
        )
        h = self._marginals(draws.coalitions, draws.values, p)
        evals_after = (e0 + np.cumsum(draws.new))[block - 1 :: block]
        return h, evals_after, draws.stopped, []

    def _run_passes(self, game: BudgetedGame, rng: np.random.Generator):
        p = game.n_players
        cost = self._draw_cost(p)
        support = full_table_size(p)
        chunks: list[np.ndarray] = []
        evals: list[np.ndarray] = []
        passes: list[tuple[int, int]] = []
        n_draws = 0
        cap = DRAW_CAP_FACTOR * game.budget + 10_000
        stopped = "budget"
        fixed_cells = self.n_cells
        while True:
            if support is not None and game.evaluations >= support:
                stopped = "support"
                break
            if n_draws >= cap:
                stopped = "max_draws_cap"
                break
            room = game.remaining // cost  # draws that surely fit
            if fixed_cells is not None and fixed_cells != self.n_cells:
                q_cells, m = fixed_cells, room // fixed_cells  # endpoint refill: same grid
            else:
                q_cells = fixed_cells or (room // self.draws_per_cell)
                m = self.draws_per_cell or (room // q_cells)
            if q_cells * m > room or q_cells * m == 0:
                if passes or support is None or support > game.budget:
                    break
                # budget >= 2^p but below one nominal pass: everything fits, run the minimal pass
                q_cells, m = fixed_cells or 1, self.draws_per_cell or 1
            passes.append((int(q_cells), int(m)))
            q = self._q_pass(rng, q_cells, m)
            before = game.evaluations
            step = max(1, min(MAX_ROWS_PER_CALL // cost, -(-q.shape[0] // max(1, TRACE_POINTS // 2))))
            for a in range(0, q.shape[0], step):
                rows = self._sets(rng, q[a : a + step], p)
                values = game(rows)  # a complete pass was sized to fit: never refused
                h = self._marginals(rows, values, p)
                chunks.append(h)
                # all draws of one call share the evaluation count reached after the call
                evals.append(np.full(h.shape[0], game.evaluations))
            n_draws += q.shape[0]
            if not self.refill or (self.n_cells and self.draws_per_cell):
                stopped = "design"
                break
            if game.evaluations == before:
                # nothing new: later passes would most likely be free repeats as well
                stopped = "no_progress"
                break
            if self.grid == "endpoint" and fixed_cells is None:
                # the reproduction grid stays one grid: refill passes add draws per point only
                fixed_cells = q_cells
        if not chunks:
            return np.zeros((0, p)), np.zeros(0, dtype=np.int64), stopped, passes
        return np.concatenate(chunks), np.concatenate(evals), stopped, passes


class HalvedOwenSampling(OwenSampling):
    """Halved Owen sampling (Algorithm 2): q on [0, 1/2], each set used with its complement.

    Same options as :class:`OwenSampling`; a draw is an antithetic pair costing ``2 (p + 1)``.
    """

    name = "owen-halved"
    halved = True
