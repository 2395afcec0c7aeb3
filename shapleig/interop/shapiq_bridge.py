"""The bridge to shapiq (optional extra ``shapleig[shapiq]``; shapiq needs Python >= 3.12).

- :func:`to_interaction_values` (also ``ShapleyEstimate.to_interaction_values()``): a result as
  shapiq ``InteractionValues`` (its index, orders 0..max_order at any order, the empty interaction =
  v(empty); shapiq's FBII keeps its fitted intercept there instead, so compare FBII's orders >= 1),
  so shapiq's plots draw it. With a posterior it is an
  :class:`~shapleig.estimation.shapiq_values.UncertainInteractionValues`: std and covariance survive
  shapiq's arithmetic, ``get_n_order``, ``get_top_k``, copies and its JSON ``save`` / ``load``
  (the exact list is in :mod:`shapleig.estimation.shapiq_values`). :func:`from_interaction_values`
  goes back, std and covariance included; an order or index it cannot hold is refused, never
  truncated.
- :class:`ShapiqApproximator`: any estimator of this project as a shapiq ``Approximator`` under
  shapiq's constructor convention ``(n, max_order, index, random_state)``, e.g.
  ``shapiq.TabularExplainer(model, X, approximator=ShapiqApproximator(X.shape[1]))`` or a class in
  ``shapiq_benchmark.run``.
- The other direction, shapiq's approximators as methods here (``shapiq:PolySHAP``), is
  :class:`shapleig_baselines.shapiq_methods.ShapiqMethod`.

shapiq games need no adapter: they have ``n_players`` and map ``bool[m, p]`` coalition matrices to
values, so every estimator accepts them as games as they are.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

# isort: off
# first the guard: without shapiq >= 1.8 it raises the ImportError that names the extra
from shapleig.estimation.shapiq_values import (
    MISSING_EXTRA,
    SHAPIQ_VERSION,
    InteractionValues,
    UncertainInteractionValues,
    std_interaction_values,
    to_interaction_values,
)
from shapiq.approximator.base import Approximator
# isort: on

from shapleig.estimation.efficiency import condition_on_total
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.game import FunctionGame, check_game
from shapleig.games.index_dense import all_terms
from shapleig.games.indices import check_index, get_index, index_from_shapiq, index_names, is_efficient
from shapleig.runs.budget import BudgetedGame


def from_interaction_values(iv: InteractionValues, method: str = "", *, std: Any = None,
                            index: str | None = None) -> ShapleyEstimate:
    """Read shapiq ``InteractionValues`` as a :class:`ShapleyEstimate` with ``terms`` and ``index`` set.

    Args:
        iv: shapiq's values. The Shapley and Banzhaf values (``"SV"``, ``"BV"``) give the p
            singletons; an interaction index of any order k (k-SII, SII, STII, FSII, FBII, BII,
            CHII, Moebius, and shapiq's others) gives the p singletons, then the pairs, ..., then
            the k-sets, each order in lexicographic order. Entries missing from ``iv`` are 0
            (shapiq's convention for sparse results).
        method: the ``method`` of the result.
        std: float[d] or an ``InteractionValues`` of stds, overriding the uncertainty ``iv`` carries.
        index: the index the caller expects; another index in ``iv`` is refused.

    Returns:
        ``values[k] = iv[terms[k]]``, ``baseline = iv.baseline_value``, ``evaluations`` from
        ``iv.estimation_budget`` (0 when shapiq did not record it); ``std`` / ``covariance`` from an
        :class:`~shapleig.estimation.shapiq_values.UncertainInteractionValues` (or ``std=``), else None.

    Raises:
        ValueError: an entry of order 2 or more for the order-one indices SV and BV (the result
            would have to drop them: refused, never truncated); another index than ``index``; an
            ``iv`` that carries uncertainty for some of the terms only.
    """
    p, shapiq_name = int(iv.n_players), str(iv.index)
    ours = index_from_shapiq(shapiq_name)  # the registered index shapiq calls so; None: shapiq's own
    name = shapiq_name if ours is None else ours.name
    if index is not None and name != index:
        raise ValueError(f"the InteractionValues hold index {name!r}, not {index!r}")
    orders = {len(T) for T in iv.interactions}
    top = max(orders | {int(iv.max_order), 1})
    if ours is not None and not ours.supports(top):
        raise ValueError(
            f"InteractionValues of index {name!r} up to order {top}: a ShapleyEstimate of {name!r} holds "
            f"order {ours.order} only; refused rather than truncated (select orders explicitly with "
            f"iv.get_n_order(min_order=0, max_order={ours.order}) if you mean to)")
    terms = all_terms(p, top)
    values = np.array([float(iv[T]) for T in terms], dtype=np.float64)
    covariance = None
    if std is None and isinstance(iv, UncertainInteractionValues):
        own = iv.uncertainty_terms
        lacking = [T for T in terms if T not in own]
        if lacking:
            raise ValueError(f"the InteractionValues carry no uncertainty for terms {lacking[:5]}"
                             f"{' ...' if len(lacking) > 5 else ''} (dropped by get_top_k / get_subset?)")
        idx = [own.index(T) for T in terms]
        std = iv.std[idx]
        cov = iv.covariance
        covariance = None if cov is None else cov[np.ix_(idx, idx)]
    elif isinstance(std, InteractionValues):
        std = [float(std[T]) for T in terms]
    if std is not None:
        std = np.array(std, dtype=np.float64)
        if std.shape != values.shape:
            raise ValueError(f"std has shape {std.shape}; the values have {values.shape[0]} terms")
    return ShapleyEstimate(
        index=name,
        terms=terms,
        values=values,
        std=std,
        covariance=covariance,
        evaluations=int(iv.estimation_budget or 0),
        baseline=float(iv.baseline_value),
        method=method,
        info={"shapiq_index": shapiq_name, "shapiq_max_order": int(iv.max_order)},
    )


class _RegisteredIndices:
    """``ShapiqApproximator.valid_indices``, shapiq's declaration of what an approximator estimates.

    The registered indices that have a shapiq name, read when asked, so an index registered after
    import is included.
    """

    def __get__(self, obj: Any, owner: type) -> tuple[str, ...]:
        return tuple(name for name in index_names() if get_index(name).shapiq_name is not None)


class ShapiqApproximator(Approximator):
    """One of this project's estimators as a shapiq ``Approximator``, built as shapiq builds its own.

    Args:
        n: number of players (shapiq builds approximators before it sees the game).
        max_order: 1 for ``"SV"`` / ``"BV"`` (other orders are refused, ``ValueError``); any k >= 1
            for the interaction indices (default 2): every term of 1..k players is estimated.
        index: ``"SV"`` (default), ``"BV"``, ``"k-SII"``, ``"SII"``, ``"STII"``, ``"FSII"``,
            ``"FBII"``, ``"BII"``, ``"CHII"``, ``"Moebius"``, or any registered index with a shapiq
            name (:attr:`valid_indices`); default: the estimator's index.
        random_state: passed to ``estimator.estimate`` as its seed (None: fresh entropy, recorded
            in ``last_estimate.info["seed"]``); shapiq's explainers reset it with ``set_random_state``.
        estimator: e.g. ``ShaplEIG(refit="adaptive")`` or ``baselines.get("permutation")``; default
            ``ShaplEIG(index=index, max_order=max_order)``. Its index and order must be ``index``
            and ``max_order``.
        store: an ``EvaluationStore`` or a path: every evaluated coalition is recorded there and
            reused by a rerun on the same game (a killed run resumes).
        efficient: for the efficient indices (SV, k-SII, STII, FSII), make the terms sum exactly
            to v(N) - v(empty), as :func:`shapleig.explain` does: the posterior is conditioned on
            that total (:func:`~shapleig.estimation.efficiency.condition_on_total`; the std
            shrinks), or, without a covariance, the gap is split equally. v(empty) and v(N) are read
            from the run's cache (every method here evaluates them); the gap before the correction
            is in ``last_estimate.info["efficiency_gap"]``.

    ``approximate(budget, game)`` spends at most ``budget`` distinct evaluations, returns
    ``InteractionValues`` (an ``UncertainInteractionValues`` with std and covariance for methods
    with a posterior) and keeps the full result (std, covariance, trace) in ``last_estimate``.
    ``get_params`` / ``set_params`` make it work with ``sklearn.base.clone``; as a class it works in
    ``shapiq_benchmark.run({"ShaplEIG": ShapiqApproximator}, ...)``.

    Examples:
        >>> import numpy as np
        >>> approx = ShapiqApproximator(4, max_order=1, index="SV", random_state=0)
        >>> iv = approx.approximate(16, lambda Z: Z @ np.array([1.0, 2.0, 3.0, 4.0]))
        >>> [round(iv[(i,)], 6) for i in range(4)]
        [1.0, 2.0, 3.0, 4.0]
    """

    valid_indices = _RegisteredIndices()

    def __init__(self, n: int, max_order: int | None = None, index: str | None = None,
                 random_state: int | None = None, *, estimator: Any = None, store: Any = None,
                 efficient: bool = True) -> None:
        if callable(getattr(n, "estimate", None)):
            raise TypeError("the first argument is the number of players (shapiq's convention): "
                            "ShapiqApproximator(n, index=..., estimator=...)")
        if estimator is not None and not callable(getattr(estimator, "estimate", None)):
            raise TypeError(f"estimator needs an estimate(game, budget, seed=...) method; got {estimator!r}")
        own = getattr(estimator, "index", "SV") if estimator is not None else None
        index = index if index is not None else (own or "SV")
        own_order = getattr(estimator, "max_order", None) if estimator is not None else None
        max_order = max_order if max_order is not None else own_order
        index, max_order = check_index(index, max_order)  # refuses orders the index does not take
        if estimator is not None and own != index:
            raise ValueError(f"the estimator estimates index {own!r}, not {index!r}; "
                             f"build it with index={index!r}")
        if estimator is not None and check_index(own, own_order)[1] != max_order:
            raise ValueError(f"the estimator estimates {own!r} of order {check_index(own, own_order)[1]}, not "
                             f"{max_order}; build it with max_order={max_order}")
        super().__init__(n=int(n), max_order=max_order, index=index, min_order=0, random_state=random_state)
        self.estimator = estimator if estimator is not None else _default_estimator(index, max_order)
        self.store = store
        self.efficient = bool(efficient)
        self.last_estimate: ShapleyEstimate | None = None

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (scikit-learn convention; ``deep`` adds ``estimator__<name>``).

        Args:
            deep: also list the wrapped estimator's parameters as ``estimator__<name>``.

        Returns:
            ``{name: value}``.
        """
        params = {"n": self.n, "max_order": self.max_order, "index": self.index, "random_state": self._random_state,
                  "estimator": self.estimator, "store": self.store, "efficient": self.efficient}
        if deep and hasattr(self.estimator, "get_params"):
            params.update({f"estimator__{k}": v for k, v in self.estimator.get_params(deep=True).items()})
        return params

    def set_params(self, **params: Any) -> ShapiqApproximator:
        """Set parameters by name (``estimator__<name>`` reaches the wrapped estimator).

        Args:
            **params: ``random_state``, ``estimator``, ``store``, ``efficient`` or ``estimator__<name>``;
                ``n``, ``index`` and ``max_order`` are fixed (``ValueError``).

        Returns:
            the approximator itself.
        """
        nested = {k.split("__", 1)[1]: v for k, v in params.items() if k.startswith("estimator__")}
        for key, value in params.items():
            if key.startswith("estimator__"):
                continue
            if key == "random_state":
                self.set_random_state(value)
            elif key in ("estimator", "store", "efficient"):
                setattr(self, key, value)
            else:
                raise ValueError(f"ShapiqApproximator has no settable parameter {key!r} (n, index and "
                                 f"max_order are fixed: build a new approximator)")
        if nested:
            self.estimator.set_params(**nested)
        return self

    def approximate(self, budget: int, game: Any, **kwargs: Any) -> InteractionValues:
        """Run the estimator on ``game`` (a shapiq game or ``bool[m, n] -> float[m]`` callable).

        Args:
            budget: the most distinct coalitions evaluated.
            game: a shapiq game (with ``n_players``) or a callable ``bool[m, n] -> float[m]``.
            **kwargs: shapiq's further keywords (unused).

        Returns:
            ``InteractionValues`` (an ``UncertainInteractionValues`` for methods with a posterior);
            the full result is kept in ``last_estimate``.
        """
        game = as_game(game, self.n)
        budgeted = BudgetedGame(game, int(budget), store=self.store)
        est = self.estimator.estimate(budgeted, int(budget), seed=self._random_state)
        if est.index != self.index:
            raise ValueError(f"the estimator returned index {est.index!r}, not {self.index!r}")
        if est.max_order != self.max_order:
            raise ValueError(f"the estimator returned order {est.max_order}, not {self.max_order}")
        ends = np.zeros((2, self.n), dtype=bool)
        ends[1] = True
        if budgeted.is_cached(ends).all():  # read from the cache: no evaluation is charged
            empty, grand = (float(v) for v in budgeted(ends))
            est.baseline = empty
            if self.efficient and is_efficient(est.index):  # BV and SII need not sum to the total
                est.info["efficiency_gap"] = condition_on_total(est, grand - empty)
        self.last_estimate = est
        return to_interaction_values(est)

    def __repr__(self) -> str:
        return (f"ShapiqApproximator(n={self.n}, max_order={self.max_order}, index={self.index!r}, "
                f"random_state={self._random_state}, estimator={self.estimator!r}, store={self.store!r}, "
                f"efficient={self.efficient})")


def _default_estimator(index: str, max_order: int) -> Any:
    """``ShaplEIG`` for ``index`` at ``max_order`` (imported here: the bridge's other parts need no design loop)."""
    from shapleig.design.estimators import ShaplEIG

    if index == "SV":
        return ShaplEIG()
    return ShaplEIG(index=index) if max_order == get_index(index).order else ShaplEIG(index=index, max_order=max_order)


def as_game(game: Any, n_players: int) -> Any:
    """A shapiq game as it is (it has ``n_players``); a bare callable wrapped as a FunctionGame.

    Raises ``ValueError`` when the game's player count differs from ``n_players``.

    Args:
        game: a game with ``n_players``, or a callable ``bool[m, n] -> float[m]``.
        n_players: the number of players the approximator was built for.

    Returns:
        the game.
    """
    if hasattr(game, "n_players"):
        p = check_game(game)
        if p != n_players:
            raise ValueError(f"the game has {p} players but the approximator was built for n = {n_players}")
        return game
    fn: Callable[[np.ndarray], Any] = game
    return FunctionGame(fn, n_players, name=getattr(fn, "__name__", "shapiq-callable"))


__all__ = [
    "MISSING_EXTRA",
    "SHAPIQ_VERSION",
    "ShapiqApproximator",
    "UncertainInteractionValues",
    "as_game",
    "from_interaction_values",
    "std_interaction_values",
    "to_interaction_values",
]
