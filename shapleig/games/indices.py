"""Game-theoretic indices: ``Index`` records and their registry, terms, exact values (docs/math.md §14).

Every supported index is linear in the game, and at a maximal order k each term T (|T| = t <= k) is a
*size-weighted discrete derivative*

    I(T) = sum_{S subset of N minus T} w_t(|S|) Delta_T v(S),
    Delta_T v(S) = sum_{L subset T} (-1)^(|T| - |L|) v(S + L),

with one weight vector per order (:func:`derivative_weights`), following shapiq 1.8.0's
definitions (:mod:`shapleig.games.index_weights`):

- ``"SV"`` Shapley value, ``"BV"`` Banzhaf value (order 1 only);
- ``"SII"``, ``"BII"``, ``"CHII"`` the Shapley, Banzhaf and Chaining interaction indices, ``"Moebius"``
  the Moebius transform (each order with its own base weights; order 1 of SII and CHII is the SV, of
  BII the BV);
- ``"k-SII"`` (SII aggregated with the Bernoulli numbers), ``"STII"`` Shapley-Taylor (Moebius
  coefficients below the top order), ``"FSII"`` and ``"FBII"`` the faithful Shapley and Banzhaf
  interaction indices (the weighted least-squares fits of order k).

The interaction indices take any maximal order k (``max_order``; 2 unless asked), their terms the p
singletons, then the pairs, ..., then the k-sets, each order in lexicographic order (shapiq's
``powerset`` order). The weights of the lower orders of k-SII, STII, FSII and FBII depend on k, so
every fast product of :mod:`shapleig.gp.index_esp` reads the k weight vectors at that order. The
dense operators here (:func:`dense_index_operator`, from :mod:`shapleig.games.index_dense`) are built
from the *definitions* (Bernoulli sums, least squares), independently of those weights, for tests.

Every per-index fact lives in one :class:`Index` record (name, default order, efficiency, weights,
label, shapiq name, which fast route of the ESP products applies, the default hold-out of v(empty),
the dense definition, whether it takes any order), kept in a small registry beside them: the
estimators, the GP products, the plots, the shapiq bridge and the method registry read the record
(:func:`get_index`), and a user-defined index (any size-weighted derivative index, e.g. a weighted
Banzhaf value or Beta-Shapley) is one :func:`register_index` call (docs/architecture.md, "A new index").
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Callable, Sequence

import numpy as np

from shapleig.errors import GameError
from shapleig.games import index_dense as dense
from shapleig.games import index_weights as iw
from shapleig.games.index_weights import OrderWeights

MAX_DENSE_PLAYERS = 12
MAX_EXACT_PLAYERS = 20
# the ESP routes of shapleig.gp.index_esp: the Shapley value's (shapleig.gp.esp), the Banzhaf value's
# closed forms, or the generic size-weighted derivative route that reads only the weights
FAST_PATHS = ("shapley", "banzhaf", "weights")
# the index every method estimates unless told otherwise
DEFAULT_INDEX = "SV"

# kept for records written against order <= 2: (w1, w2) as exact fractions (w2 None at order 1)
Weights = tuple[tuple[Fraction, ...], tuple[Fraction, ...] | None]


@dataclass(frozen=True)
class Index:
    """Everything the package needs to know about one index (docs/math.md §14).

    A term T (|T| = t <= k, the maximal order) is the size-weighted derivative
    ``I(T) = sum_{S subset of N minus T} w_t(|S|) Delta_T v(S)``; :attr:`weights` gives the weight
    vectors, and from them alone the exact values, the GP's index products and the size
    coefficients follow.

    Args:
        name: what users write (``index="SV"``); also the ``index`` of the results.
        order: the maximal order used when none is given (1: the p players' values; 2: the players,
            then the pairs; k: every term of 1..k players).
        efficient: the terms sum to v(N) - v(empty) for every game (at every order, for an
            ``any_order`` record; checked by :func:`register_index`); the efficient indices are
            drawn as waterfalls and conditioned on that total by ``explain``.
        weights: ``p -> (w_1, ..., w_order)``: the weights of ``Delta_T v(S)`` for the terms of t
            players by ``|S| = 0..p-t`` (an order-1 record may give ``(w1, None)``); with
            ``any_order``, ``(p, k) -> (w_1, ..., w_k)`` at the maximal order k. Exact numbers
            (``int`` or ``Fraction``; a float is taken at its exact binary value): the GP products
            sum them without rounding (these are the fast-path coefficients of the ESP products,
            :mod:`shapleig.gp.index_esp`).
        label: the axis label of plots (``"Shapley value"``).
        shapiq_name: the index's name in shapiq (``InteractionValues.index``), or None when shapiq
            has no such index (the bridge then refuses it).
        fast_path: which route of the ESP products applies: ``"weights"`` (the generic route, any
            weights), or the closed forms ``"shapley"`` / ``"banzhaf"`` (their weights only).
        hold_out_empty: ShaplEIG's default for holding v(empty) out of the GP (docs/math.md §14.5).
        definition: ``p -> float64[d, 2^p]`` (``(p, k) -> ...`` with ``any_order``), the dense
            operator from the index's own definition (for tests, p <= 12); None: built from
            :attr:`weights`.
        description: one line for listings.
        any_order: the record takes every maximal order k >= 1 (``max_order=k``); ``weights`` and
            ``definition`` then take k as their second argument.

    Example:
        >>> from fractions import Fraction
        >>> half = Index("BV-like", order=1, efficient=False, label="Banzhaf",
        ...              weights=lambda p: ([Fraction(1, 2 ** (p - 1))] * p, None))
        >>> half.exact_weights(3)[0]
        (Fraction(1, 4), Fraction(1, 4), Fraction(1, 4))
    """

    name: str
    order: int
    efficient: bool
    weights: Callable[..., Sequence[Sequence[Fraction | int] | None]]
    label: str
    shapiq_name: str | None = None
    fast_path: str = "weights"
    hold_out_empty: bool = False
    definition: Callable[..., np.ndarray] | None = None
    description: str = ""
    any_order: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"Index name must be a non-empty string, got {self.name!r}")
        if isinstance(self.order, bool) or not isinstance(self.order, (int, np.integer)) or self.order < 1:
            raise ValueError(f"index {self.name!r}: order must be a positive integer, got {self.order!r}")
        if not callable(self.weights):
            raise ValueError(f"index {self.name!r}: weights must be a function p -> (w1, ..., w_order), "
                             f"got {self.weights!r}")
        if self.fast_path not in FAST_PATHS:
            raise ValueError(f"index {self.name!r}: fast_path must be one of {FAST_PATHS}, got {self.fast_path!r}")
        if self.definition is not None and not callable(self.definition):
            raise ValueError(f"index {self.name!r}: definition must be a function p -> float64[d, 2^p] or None")
        if self.any_order and self.fast_path != "weights":
            raise ValueError(f"index {self.name!r}: any_order needs fast_path='weights' (the closed forms are "
                             f"of order 1)")

    def __reduce__(self) -> tuple:
        # a built-in record travels by name (the receiving process has the same one); any other by
        # value, so its weights function must be picklable (a module-level function, not a lambda)
        if self.name in _BUILTIN_NAMES and _REGISTRY.get(self.name) == self:
            return (get_index, (self.name,))
        return (Index, tuple(getattr(self, f.name) for f in fields(self)))

    def supports(self, max_order: int) -> bool:
        """Whether the record takes the maximal order ``max_order`` (its own, or any with ``any_order``).

        Args:
            max_order: k.

        Returns:
            whether ``max_order=k`` is supported.
        """
        return int(max_order) >= 1 if self.any_order else int(max_order) == self.order

    def exact_weights(self, n_players: int, max_order: int | None = None) -> OrderWeights:
        """``(w_1, ..., w_k)`` for ``n_players`` as tuples of ``Fraction`` with their lengths checked.

        Args:
            n_players: p (>= k).
            max_order: k; None: the record's order.

        Returns:
            ``w_t`` of length p - t + 1 (``|S| = 0..p-t``) for t = 1..k.
        """
        return _exact_weights(self, int(n_players), self.order if max_order is None else int(max_order))


def _as_fractions(index: Index, t: int, values: Sequence[Fraction | int] | None, length: int) -> tuple[Fraction, ...]:
    which = f"w{t}"
    if values is None:
        raise ValueError(f"index {index.name!r} has order {index.order}: weights(p) must give {which}, got None")
    out = []
    for w in values:
        if isinstance(w, bool) or not isinstance(w, (int, Fraction, float, np.integer, np.floating)):
            raise ValueError(f"index {index.name!r}: weight {w!r} of {which} is not a number (use int or Fraction)")
        if not np.isfinite(float(w)):
            raise ValueError(f"index {index.name!r}: weight {w!r} of {which} is not finite")
        out.append(Fraction(w) if not isinstance(w, (np.integer, np.floating)) else Fraction(w.item()))
    if len(out) != length:
        raise ValueError(f"index {index.name!r}: {which} needs {length} weights (|S| = 0..{length - 1}) "
                         f"for p = {length + t - 1}, got {len(out)}")
    return tuple(out)


@lru_cache(maxsize=512)
def _exact_weights(index: Index, p: int, k: int) -> OrderWeights:
    if not index.supports(k):
        raise ValueError(f"index {index.name!r} is supported with max_order={index.order} only, got max_order={k}")
    if p < k:
        raise ValueError(f"index {index.name!r} of order {k} needs at least {k} players, got p = {p}")
    given = list(index.weights(p, k) if index.any_order else index.weights(p))
    while len(given) > k and given[-1] is None:  # an order-1 record's (w1, None)
        given.pop()
    if len(given) != k:
        extra = [t + 1 for t, w in enumerate(given) if t >= k and w is not None]
        raise ValueError(f"index {index.name!r} has order {k}: weights(p) must give {k} weight vectors"
                         + (f" (w{extra[0]} must be None)" if extra else f", got {len(given)}"))
    return tuple(_as_fractions(index, t, w, p - t + 1) for t, w in enumerate(given, start=1))


_REGISTRY: dict[str, Index] = {}
_LOCK = threading.Lock()


def register_index(index: Index, *, replace: bool = False, check: bool = True) -> Index:
    """Make ``index`` usable by name everywhere.

    ``ShaplEIG(index=...)``, ``ExactShapley``, ``explain``, the harness, plots and the shapiq bridge
    read the registry.

    Args:
        index: the record.
        replace: allow replacing another record registered under the same name.
        check: verify the record against its own definition for p = 2..6: the weights have the
            right lengths, a ``definition`` equals the weighted derivatives, the closed-form
            ``fast_path`` claims hold (``"shapley"`` / ``"banzhaf"`` only with those weights), and
            ``efficient`` says whether the terms sum to v(N) - v(empty).

    Returns:
        ``index``.

    Raises:
        ValueError: the name is taken by another record (without ``replace``), or a check fails
            (the message names the field).

    Example:
        >>> from fractions import Fraction
        >>> q = Fraction(3, 10)
        >>> wbv = register_index(Index("WBV-0.3", order=1, efficient=False, label="weighted Banzhaf (q = 0.3)",
        ...                            weights=lambda p: ([q**k * (1 - q) ** (p - 1 - k) for k in range(p)], None)))
        >>> check_index("WBV-0.3")
        ('WBV-0.3', 1)
        >>> unregister_index("WBV-0.3")
    """
    if not isinstance(index, Index):
        raise TypeError(f"register_index takes an Index record, got {type(index).__name__}")
    if check:
        check_index_record(index)
    with _LOCK:
        old = _REGISTRY.get(index.name)
        if old is not None and old != index and not replace:
            raise ValueError(f"index name {index.name!r} is already registered ({old.label}); "
                             f"pass replace=True to replace it")
        _REGISTRY[index.name] = index
    return index


def unregister_index(name: str) -> None:
    """Remove the index registered under ``name`` (the built-in indices cannot be removed).

    Args:
        name: the index's name.
    """
    if name in INDICES:
        raise ValueError(f"{name!r} is a built-in index and cannot be removed")
    with _LOCK:
        _REGISTRY.pop(name, None)


def index_names() -> tuple[str, ...]:
    """Every registered index name: the built-in ones (:data:`INDICES`), then the user's.

    Returns:
        the names, in registration order.
    """
    return tuple(_REGISTRY)


def get_index(index: str | Index) -> Index:
    """The :class:`Index` registered under ``index`` (a record is returned as it is).

    Args:
        index: a registered name, or an :class:`Index`.

    Returns:
        The record.

    Raises:
        ValueError: an unknown name, listing the registered ones.
    """
    if isinstance(index, Index):
        return index
    found = _REGISTRY.get(index) if isinstance(index, str) else None
    if found is None:
        raise ValueError(f"unknown index {index!r}; choose one of {index_names()} "
                         f"(or register your own with shapleig.games.indices.register_index)")
    return found


def index_label(name: str, max_order: int | None = None) -> str:
    """The plot label of index ``name`` (``"Shapley value"``; ``"k-SII (order 3)"`` for an interaction index).

    An unregistered name (an index read from shapiq) is its own label.

    Args:
        name: an index name.
        max_order: the estimate's order, named for an index that takes any order (None: the record's).

    Returns:
        the label.
    """
    found = _REGISTRY.get(name)
    if found is None:
        return name
    return f"{found.label} (order {found.order if max_order is None else int(max_order)})" if found.any_order \
        else found.label


def is_efficient(name: str) -> bool:
    """Whether the terms of index ``name`` sum to v(N) - v(empty) for every game.

    False for a name that is not registered (e.g. an index read from shapiq).

    Args:
        name: an index name.

    Returns:
        whether the index is efficient.
    """
    found = _REGISTRY.get(name)
    return found is not None and found.efficient


def shapiq_index_name(name: str) -> str:
    """The shapiq name of index ``name``; an unregistered name (read from shapiq) is returned as it is.

    Args:
        name: an index name.

    Returns:
        shapiq's name (e.g. ``"SV"``, ``"k-SII"``).

    Raises:
        ValueError: a registered index with no shapiq counterpart (``shapiq_name=None``).
    """
    found = _REGISTRY.get(name)
    if found is None:
        return name
    if found.shapiq_name is None:
        raise ValueError(f"index {name!r} has no shapiq counterpart (its record's shapiq_name is None), "
                         f"so it cannot be shapiq InteractionValues")
    return found.shapiq_name


def index_from_shapiq(shapiq_name: str) -> Index | None:
    """The registered index whose shapiq name is ``shapiq_name``, or None.

    Args:
        shapiq_name: an index name in shapiq (``InteractionValues.index``).

    Returns:
        the :class:`Index`, or None.
    """
    return next((index for index in _REGISTRY.values() if index.shapiq_name == shapiq_name), None)


def check_index(index: str | Index, max_order: int | None = None) -> tuple[str, int]:
    """Canonical ``(index, max_order)``; ValueError for an unknown index or unsupported order.

    SV and BV have order 1; the interaction indices take any order k >= 1 (2 unless given); a
    registered index its ``order`` (any order with ``any_order``).

    Args:
        index: a registered name (or its :class:`Index`).
        max_order: None (the index's order) or the maximal order.

    Returns:
        The name and the order.
    """
    spec = get_index(index)
    order = spec.order if max_order is None else max_order
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or not spec.supports(int(order)):
        if spec.any_order:
            raise ValueError(f"index {spec.name!r} takes max_order = 1, 2, 3, ... (an integer >= 1), "
                             f"got max_order={max_order!r}")
        raise ValueError(f"index {spec.name!r} is supported with max_order={spec.order} only, got max_order={max_order!r}")
    return spec.name, int(order)


def default_hold_out_empty(index: str) -> bool:
    """Whether ShaplEIG holds v(empty) out of the GP by default for ``index`` (docs/math.md §14.5).

    On for the Banzhaf value, whose terms weigh v(empty) by 2^-(p-1) only: a game with a jump at the
    empty coalition (data valuation, feature selection) otherwise drags the fitted lengthscale down.
    A registered index says so in :attr:`Index.hold_out_empty`.

    Args:
        index: a registered index name.

    Returns:
        whether v(empty) is held out.
    """
    return get_index(index).hold_out_empty


def index_terms(n_players: int, index: str | Index = "SV", max_order: int | None = None) -> list[tuple[int, ...]]:
    """The terms of ``index``: the p singletons, then the pairs, ..., up to the order, each order lexicographic.

    Args:
        n_players: the number of players p.
        index: an index name or record.
        max_order: the interaction order; None: the index's own.

    Returns:
        the player tuples, ``[(0,), ..., (p-1,), (0, 1), ..., (0, 1, 2), ...]``.
    """
    _, order = check_index(index, max_order)
    return dense.all_terms(int(n_players), order)


def exact_derivative_weights(index: str | Index, n_players: int, max_order: int | None = None) -> OrderWeights:
    """:func:`derivative_weights` as exact fractions (for the cancellation-free sums of :mod:`shapleig.gp.index_esp`).

    Args:
        index: an index name or record.
        n_players: the number of players p.
        max_order: the maximal order k; None: the index's own.

    Returns:
        ``(w_1, ..., w_k)`` as fractions, ``w_t`` by ``|S| = 0..p-t``.
    """
    spec = get_index(index)
    return spec.exact_weights(int(n_players), check_index(spec, max_order)[1])


def derivative_weights(index: str | Index, n_players: int, max_order: int | None = None) -> list[np.ndarray]:
    """``[w_1, ..., w_k]`` (float64): the weights of ``Delta_T v(S)`` for the terms of t players by ``|S|``.

    Args:
        index: an index name or record.
        n_players: the number of players p.
        max_order: the maximal order k; None: the index's own.

    Returns:
        k arrays, ``w_t`` of length p - t + 1.
    """
    return [np.array([float(w) for w in wt]) for wt in exact_derivative_weights(index, n_players, max_order)]


# -- exact values from a full table ---------------------------------------------------------------

def exact_index_values(values: np.ndarray, index: str | Index = "SV", max_order: int | None = None) -> np.ndarray:
    """Exact index values ``float64[d]`` (aligned with :func:`index_terms`) from bit-order values float64[2^p].

    O(d 2^p 2^k) by the size-weighted derivative form; p <= 20.

    Args:
        values: float64[2^p] game values in bit order (p <= 20).
        index: an index name or record.
        max_order: the interaction order; None: the index's own.

    Returns:
        float64[d], aligned with :func:`index_terms`.
    """
    name, order = check_index(index, max_order)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    p = int(np.log2(v.shape[0])) if v.shape[0] else 0
    if v.shape[0] != (1 << p) or p < 1:
        raise GameError(f"bit-order values need length 2^p, got {v.shape[0]}")
    if p > MAX_EXACT_PLAYERS:
        raise GameError(f"exact index values enumerate 2^p coalitions; p = {p} > {MAX_EXACT_PLAYERS}")
    weights = derivative_weights(index, p, order)
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = dense.all_sets(p).sum(axis=1)
    out = []
    for T in index_terms(p, index, order):
        tmask = sum(1 << t for t in T)
        S = codes[(codes & tmask) == 0]
        deriv = np.zeros(S.shape[0])
        for sub in range(1 << len(T)):  # Delta_T v(S) = sum_{L subset T} (-1)^(|T|-|L|) v(S + L)
            L = sum(1 << T[q] for q in range(len(T)) if (sub >> q) & 1)
            deriv += (-1) ** (len(T) - sub.bit_count()) * v[S | L]
        out.append(np.dot(weights[len(T) - 1][sizes[S]], deriv))
    return np.asarray(out)


# -- dense operators from the definitions (tests and references, p <= 12) -------------------------

def _from_weights(index: Index, p: int, k: int) -> np.ndarray:
    """The dense operator of a size-weighted derivative index, from its weights."""
    w = index.exact_weights(p, k)
    return dense.derivative_rows(p, dense.all_terms(p, k), lambda t, s: float(w[t - 1][s]))


def dense_index_operator(n_players: int, index: str | Index = "SV", max_order: int | None = None) -> np.ndarray:
    """Dense operator ``B`` (float64[d, 2^p], bit-order columns) with ``I = B v``, from the definitions.

    For tests (p <= 12). k-SII is the Bernoulli aggregation of SII rows, FSII and FBII the
    least-squares fits, STII's lower orders the Moebius rows; none uses :func:`derivative_weights`
    (:mod:`shapleig.games.index_dense`). An index without a ``definition`` is built from its weights.

    Args:
        n_players: p, at most ``MAX_DENSE_PLAYERS``.
        index: an index name or :class:`Index` record.
        max_order: the interaction order (None: the index's own).

    Returns:
        ``float64[d, 2^p]``, one row per term of :func:`index_terms`.
    """
    _, k = check_index(index, max_order)
    spec = get_index(index)
    p = int(n_players)
    if p > MAX_DENSE_PLAYERS:
        raise GameError(f"dense index operators are for p <= {MAX_DENSE_PLAYERS}, got {p}")
    if p < k:
        raise ValueError(f"index {spec.name!r} of order {k} needs at least {k} players, got p = {p}")
    if spec.definition is None:
        return _from_weights(spec, p, k)
    return spec.definition(p, k) if spec.any_order else spec.definition(p)


# -- checking a record against its definition ------------------------------------------------------

CHECK_PLAYERS = (2, 3, 4, 5, 6)
# an any_order record is checked at the orders 1..min(p, CHECK_ORDERS)
CHECK_ORDERS = 4


def _check_at(index: Index, p: int, k: int) -> bool:
    """Check one (p, k); return whether the terms sum to v(N) - v(empty) for every game."""
    w = _exact_weights(index, p, k)
    B = _from_weights(index, p, k)
    if index.definition is not None:
        D = np.asarray(index.definition(p, k) if index.any_order else index.definition(p), dtype=np.float64)
        if D.shape != B.shape or not np.allclose(D, B, rtol=1e-9, atol=1e-12):
            raise ValueError(f"index {index.name!r}: its definition differs from its weighted derivatives "
                             f"at p = {p}" + (f", order {k}" if index.any_order else "") + " (check weights or definition)")
    if index.fast_path != "weights":
        reference = iw.sii_base(p, 1) if index.fast_path == "shapley" else iw.bii_base(p, 1)
        if index.order != 1 or list(w[0]) != reference:
            raise ValueError(f"index {index.name!r}: fast_path={index.fast_path!r} is the closed form of the "
                             f"{'Shapley' if index.fast_path == 'shapley' else 'Banzhaf'} value's weights only; "
                             f"use fast_path='weights'")
    target = np.zeros(1 << p)
    target[-1], target[0] = 1.0, -1.0
    return bool(np.allclose(B.sum(axis=0), target, atol=1e-12))


def check_index_record(index: Index) -> None:
    """Verify ``index`` for p in :data:`CHECK_PLAYERS` (what :func:`register_index` runs).

    An ``any_order`` record is checked at every order 1..min(p, :data:`CHECK_ORDERS`), the others at
    their order.

    Args:
        index: the record.

    Raises:
        ValueError: naming the field whose claim fails: ``weights`` (lengths, numbers),
            ``definition`` (differs from the weighted derivatives), ``fast_path`` (a closed form
            whose weights the record does not have) or ``efficient`` (the terms do or do not sum to
            v(N) - v(empty)).
    """
    inefficient_at = None
    for p in CHECK_PLAYERS:
        orders = range(1, min(p, CHECK_ORDERS) + 1) if index.any_order else (index.order,) if index.order <= p else ()
        for k in orders:
            if not _check_at(index, p, k) and inefficient_at is None:
                inefficient_at = p if not index.any_order else f"{p} (order {k})"
    # efficient: the sum holds at every p (the Banzhaf value's does at p = 2 only)
    if bool(index.efficient) != (inefficient_at is None):
        raise ValueError(f"index {index.name!r}: efficient={index.efficient} but its terms "
                         + ("do not sum to v(N) - v(empty) for every game at p = " + str(inefficient_at)
                            if index.efficient else f"sum to v(N) - v(empty) for every game at p = {CHECK_PLAYERS}"))


# -- the built-in indices ---------------------------------------------------------------------------

def _sv_pair(p: int) -> tuple[tuple[Fraction, ...], None]:
    return tuple(iw.sii_base(p, 1)), None


def _bv_pair(p: int) -> tuple[tuple[Fraction, ...], None]:
    return tuple(iw.bii_base(p, 1)), None


def _sv_dense(p: int) -> np.ndarray:
    return dense.derivative_rows(p, dense.all_terms(p, 1), lambda t, k: 1.0 / (p * comb(p - 1, k)))


def _bv_dense(p: int) -> np.ndarray:
    return dense.derivative_rows(p, dense.all_terms(p, 1), lambda t, k: 0.5 ** (p - 1))


def _ksii_dense(p: int, k: int) -> np.ndarray:
    return dense.ksii_dense(p, k, iw.bernoulli_numbers(k))


def _base_dense(base: str) -> Callable[[int, int], np.ndarray]:
    def definition(p: int, k: int) -> np.ndarray:
        return dense.base_dense(p, k, base)

    definition.__name__ = definition.__qualname__ = f"_{base.lower()}_dense"
    return definition


def _interaction(name: str, efficient: bool, weights: Callable[[int, int], OrderWeights],
                 definition: Callable[[int, int], np.ndarray], description: str) -> Index:
    return Index(name, 2, efficient, weights, name, name, definition=definition, description=description,
                 any_order=True)


BUILTIN_INDICES = (
    Index("SV", 1, True, _sv_pair, "Shapley value", "SV", fast_path="shapley",
          definition=_sv_dense, description="the Shapley value"),
    Index("BV", 1, False, _bv_pair, "Banzhaf value", "BV",
          fast_path="banzhaf", hold_out_empty=True, definition=_bv_dense, description="the Banzhaf value"),
    _interaction("k-SII", True, iw.ksii_weights, _ksii_dense,
                 "k-Shapley interaction index (SII aggregated with the Bernoulli numbers)"),
    _interaction("SII", False, iw.sii_weights, _base_dense("SII"), "Shapley interaction index (order 1 = SV)"),
    _interaction("STII", True, iw.stii_weights, dense.stii_dense,
                 "Shapley-Taylor interaction index (lower orders: the Moebius coefficients)"),
    _interaction("FSII", True, iw.fsii_weights, dense.fsii_dense, "Faithful Shapley interaction index (Tsai et al.)"),
    _interaction("FBII", False, iw.fbii_weights, dense.fbii_dense, "Faithful Banzhaf interaction index (Tsai et al.)"),
    _interaction("BII", False, iw.bii_weights, _base_dense("BII"), "Banzhaf interaction index (order 1 = BV)"),
    _interaction("CHII", False, iw.chii_weights, _base_dense("CHII"),
                 "Chaining interaction index (Marichal and Roubens; order 1 = SV)"),
    _interaction("Moebius", False, iw.moebius_weights, _base_dense("Moebius"),
                 "the Moebius transform (Harsanyi dividends) up to the order"),
)
# the built-in index names (index_names() adds the user's)
INDICES = tuple(index.name for index in BUILTIN_INDICES)
_BUILTIN_NAMES = frozenset(INDICES)
for _builtin in BUILTIN_INDICES:  # checked by tests/games/test_indices.py, not at every import
    register_index(_builtin, check=False)
del _builtin
