"""Game-theoretic indices: ``Index`` records and their registry, terms, exact values (docs/math.md §14).

Every supported index is linear in the game. Up to order 2 each term T (a player or a pair) is a
*size-weighted discrete derivative*

    I(T) = sum_{S subset of N minus T} w_{|T|}(|S|) Delta_T v(S),
    Delta_{i} v(S) = v(S+i) - v(S),   Delta_{ij} v(S) = v(S+ij) - v(S+i) - v(S+j) + v(S),

with one weight vector per order (:func:`derivative_weights`), following shapiq 1.8.0's
definitions at ``max_order=2``:

- ``"SV"`` Shapley value, ``"BV"`` Banzhaf value (order 1 only);
- ``"SII"`` Shapley interaction index (order 1 = SV);
- ``"k-SII"`` (order 1 = SV + B_1 sum_j SII_ij, the Bernoulli aggregation with B_1 = -1/2);
- ``"STII"`` Shapley-Taylor (order 1 = the Moebius coefficient v(i) - v(empty));
- ``"FSII"`` Faithful Shapley (order 1 and 2 from Tsai et al.'s closed form).

The aggregated order-1 terms of k-SII and FSII are again size-weighted derivatives of one player
(docs/math.md §14.1), so every fast product of :mod:`shapleig.gp.index_esp` needs only the two weight
vectors. The dense operators here (:func:`dense_index_operator`) are built from the *definitions*
(Bernoulli aggregation, weighted least squares for FSII), independently of those weights, for tests.

Every per-index fact lives in one :class:`Index` record (name, order, efficiency, weights, label,
shapiq name, which fast route of the ESP products applies, the default hold-out of v(empty), the
dense definition), kept in a small registry beside them: the estimators, the GP products, the
plots, the shapiq bridge and the method registry read the record (:func:`get_index`), and a
user-defined index (any size-weighted derivative index of order 1 or 2, e.g. a weighted Banzhaf
value or Beta-Shapley) is one :func:`register_index` call (docs/architecture.md, "A new index").
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields
from fractions import Fraction
from functools import lru_cache
from itertools import combinations
from math import comb, factorial
from typing import Callable, Sequence

import numpy as np

from shapleig.errors import GameError

MAX_DENSE_PLAYERS = 12
MAX_EXACT_PLAYERS = 20
# the ESP routes of shapleig.gp.index_esp: the Shapley value's (shapleig.gp.esp), the Banzhaf value's
# closed forms, or the generic size-weighted derivative route that reads only the weights
FAST_PATHS = ("shapley", "banzhaf", "weights")
# the index every method estimates unless told otherwise
DEFAULT_INDEX = "SV"

# (w1, w2) as exact fractions: order-1 weights by |S| = 0..p-1, order-2 by |S| = 0..p-2 (or None)
Weights = tuple[tuple[Fraction, ...], tuple[Fraction, ...] | None]


@dataclass(frozen=True)
class Index:
    """Everything the package needs to know about one index (docs/math.md §14).

    A term T (a player, or a pair at order 2) is the size-weighted derivative
    ``I(T) = sum_{S subset of N minus T} w_|T|(|S|) Delta_T v(S)``; :attr:`weights` gives the two
    weight vectors, and from them alone the exact values, the GP's index products and the size
    coefficients follow.

    Args:
        name: what users write (``index="SV"``); also the ``index`` of the results.
        order: 1 (the p players' values) or 2 (the players, then the pairs).
        efficient: the terms sum to v(N) - v(empty) for every game (checked by
            :func:`register_index`); the efficient indices are drawn as waterfalls and conditioned
            on that total by ``explain``.
        weights: ``p -> (w1, w2)``: the weights of ``Delta_i v(S)`` by ``|S| = 0..p-1`` and (order
            2) of ``Delta_ij v(S)`` by ``|S| = 0..p-2``, else None; exact numbers (``int`` or
            ``Fraction``; a float is taken at its exact binary value): the GP products sum them
            without rounding (these are the fast-path coefficients of the ESP products,
            :mod:`shapleig.gp.index_esp`).
        label: the axis label of plots (``"Shapley value"``).
        shapiq_name: the index's name in shapiq (``InteractionValues.index``), or None when shapiq
            has no such index (the bridge then refuses it).
        fast_path: which route of the ESP products applies: ``"weights"`` (the generic route, any
            weights), or the closed forms ``"shapley"`` / ``"banzhaf"`` (their weights only).
        hold_out_empty: ShaplEIG's default for holding v(empty) out of the GP (docs/math.md §14.5).
        definition: ``p -> float64[d, 2^p]``, the dense operator from the index's own definition
            (for tests, p <= 12); None: built from :attr:`weights`.
        description: one line for listings.

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
    weights: Callable[[int], tuple[Sequence[Fraction | int], Sequence[Fraction | int] | None]]
    label: str
    shapiq_name: str | None = None
    fast_path: str = "weights"
    hold_out_empty: bool = False
    definition: Callable[[int], np.ndarray] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"Index name must be a non-empty string, got {self.name!r}")
        if isinstance(self.order, bool) or self.order not in (1, 2):
            raise ValueError(f"index {self.name!r}: order must be 1 or 2, got {self.order!r}")
        if not callable(self.weights):
            raise ValueError(f"index {self.name!r}: weights must be a function p -> (w1, w2), got {self.weights!r}")
        if self.fast_path not in FAST_PATHS:
            raise ValueError(f"index {self.name!r}: fast_path must be one of {FAST_PATHS}, got {self.fast_path!r}")
        if self.definition is not None and not callable(self.definition):
            raise ValueError(f"index {self.name!r}: definition must be a function p -> float64[d, 2^p] or None")

    def __reduce__(self) -> tuple:
        # a built-in record travels by name (the receiving process has the same one); any other by
        # value, so its weights function must be picklable (a module-level function, not a lambda)
        if self.name in _BUILTIN_NAMES and _REGISTRY.get(self.name) == self:
            return (get_index, (self.name,))
        return (Index, tuple(getattr(self, f.name) for f in fields(self)))

    def exact_weights(self, n_players: int) -> Weights:
        """``(w1, w2)`` for ``n_players`` as tuples of ``Fraction`` with their lengths checked.

        Args:
            n_players: p (>= 2 for order 2).

        Returns:
            ``w1`` of length p, ``w2`` of length p - 1 at order 2 (None at order 1).
        """
        return _exact_weights(self, int(n_players))


def _as_fractions(index: Index, which: str, values: Sequence[Fraction | int] | None, length: int) -> tuple[Fraction, ...]:
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
                         f"for p = {length + (1 if which == 'w1' else 2) - 1}, got {len(out)}")
    return tuple(out)


@lru_cache(maxsize=256)
def _exact_weights(index: Index, p: int) -> Weights:
    if p < index.order:
        raise ValueError(f"index {index.name!r} of order {index.order} needs at least {index.order} players, got p = {p}")
    w1, w2 = index.weights(p)
    one = _as_fractions(index, "w1", w1, p)
    if index.order == 1:
        if w2 is not None:
            raise ValueError(f"index {index.name!r} has order 1: weights(p) must give w2 = None")
        return one, None
    return one, _as_fractions(index, "w2", w2, p - 1)


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


def index_label(name: str) -> str:
    """The plot label of index ``name`` (``"Shapley value"``).

    An unregistered name (an index read from shapiq, e.g. ``"FBII"``) is its own label.

    Args:
        name: an index name.

    Returns:
        the label.
    """
    found = _REGISTRY.get(name)
    return name if found is None else found.label


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

    SV and BV have order 1; the interaction indices are supported at order 2 (the default); a
    registered index at its ``order``.

    Args:
        index: a registered name (or its :class:`Index`).
        max_order: None (the index's order) or the index's order.

    Returns:
        The name and the order.
    """
    spec = get_index(index)
    default = spec.order
    order = default if max_order is None else max_order
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or int(order) != default:
        raise ValueError(f"index {spec.name!r} is supported with max_order={default} only, got max_order={max_order!r}")
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
    """The terms of ``index``: the p singletons, then (order 2) the pairs in lexicographic order.

    Args:
        n_players: the number of players p.
        index: an index name or record.
        max_order: the interaction order; None: the index's own.

    Returns:
        the player tuples, ``[(0,), ..., (p-1,), (0, 1), ...]``.
    """
    _, order = check_index(index, max_order)
    p = int(n_players)
    terms: list[tuple[int, ...]] = [(i,) for i in range(p)]
    if order >= 2:
        terms += list(combinations(range(p), 2))
    return terms


def _aggregate(w1: list[Fraction], w2: list[Fraction], coef: Fraction, p: int) -> list[Fraction]:
    """Order-1 weights of ``I(i) + coef * sum_{j != i} I2(ij)`` (docs/math.md §14.1).

    Re-indexing the pair sum by R = S or S + j gives the weight of Delta_i v(R), |R| = k:
    ``w1(k) + coef * (k w2(k-1) - (p-1-k) w2(k))`` (w2 is zero outside 0..p-2).
    """
    def w2_at(k: int) -> Fraction:
        return w2[k] if 0 <= k <= p - 2 else Fraction(0)

    return [w1[k] + coef * (k * w2_at(k - 1) - (p - 1 - k) * w2_at(k)) for k in range(p)]


def _sv_weights(p: int) -> list[Fraction]:
    return [Fraction(factorial(k) * factorial(p - 1 - k), factorial(p)) for k in range(p)]


def _sii2_weights(p: int) -> list[Fraction]:
    return [Fraction(factorial(k) * factorial(p - 2 - k), factorial(p - 1)) for k in range(p - 1)]


def _stii_weights(p: int) -> tuple[list[Fraction], list[Fraction]]:
    # top order k = 2: (k/n) / C(n-1, |S|); order 1 < k: the Moebius coefficient v(i) - v(empty)
    return [Fraction(1)] + [Fraction(0)] * (p - 1), [Fraction(2, p * comb(p - 1, k)) for k in range(p - 1)]


def _fsii_weights(p: int) -> tuple[list[Fraction], list[Fraction]]:
    # Tsai et al. (2023), l = 2: a(T) = (2l-1)!/((l-1)!)^2 sum (n-|S|-1)!(|S|+l-1)!/(n+l-1)! Delta_T v(S);
    # FSII(pair) = a(pair), FSII(i) = a(i) - |T|/(l+|T|) C(l,|T|) sum_j a(ij) = a(i) - (2/3) sum_j a(ij).
    # The derivative weights of a(i) carry the constant 2 where the pairs' carry 6 (checked against the
    # least-squares definition, dense_index_operator, and shapiq's ExactComputer).
    a2 = [Fraction(6 * factorial(p - k - 1) * factorial(k + 1), factorial(p + 1)) for k in range(p - 1)]
    a1 = [Fraction(2 * factorial(p - k - 1) * factorial(k + 1), factorial(p + 1)) for k in range(p)]
    return _aggregate(a1, a2, Fraction(-2, 3), p), a2


def exact_derivative_weights(index: str | Index, n_players: int) -> Weights:
    """:func:`derivative_weights` as exact fractions (for the cancellation-free sums of :mod:`shapleig.gp.index_esp`).

    Args:
        index: an index name or record.
        n_players: the number of players p.

    Returns:
        ``(w1, w2)`` as fractions (``w2`` None for an order-1 index).
    """
    return get_index(index).exact_weights(int(n_players))


def derivative_weights(index: str | Index, n_players: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(w1 float64[p], w2 float64[p-1] or None)``: the weights of Delta_i v(S) and Delta_ij v(S) by |S|.

    Args:
        index: an index name or record.
        n_players: the number of players p.

    Returns:
        ``(w1, w2)``.
    """
    w1, w2 = exact_derivative_weights(index, n_players)
    return np.array([float(w) for w in w1]), (None if w2 is None else np.array([float(w) for w in w2]))


# -- exact values from a full table ---------------------------------------------------------------

def _sizes(p: int) -> np.ndarray:
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = np.zeros(1 << p, dtype=np.int64)
    for j in range(p):
        sizes += (codes >> j) & 1
    return sizes


def exact_index_values(values: np.ndarray, index: str | Index = "SV", max_order: int | None = None) -> np.ndarray:
    """Exact index values ``float64[d]`` (aligned with :func:`index_terms`) from bit-order values float64[2^p].

    O(d 2^p) by the size-weighted derivative form; p <= 20.

    Args:
        values: float64[2^p] game values in bit order (p <= 20).
        index: an index name or record.
        max_order: the interaction order; None: the index's own.

    Returns:
        float64[d], aligned with :func:`index_terms`.
    """
    _, order = check_index(index, max_order)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    p = int(np.log2(v.shape[0])) if v.shape[0] else 0
    if v.shape[0] != (1 << p) or p < 1:
        raise GameError(f"bit-order values need length 2^p, got {v.shape[0]}")
    if p > MAX_EXACT_PLAYERS:
        raise GameError(f"exact index values enumerate 2^p coalitions; p = {p} > {MAX_EXACT_PLAYERS}")
    w1, w2 = derivative_weights(index, p)
    codes = np.arange(1 << p, dtype=np.int64)
    sizes = _sizes(p)
    out = []
    for i in range(p):
        S = codes[((codes >> i) & 1) == 0]
        out.append(np.dot(w1[sizes[S]], v[S | (1 << i)] - v[S]))
    if order == 2:
        for i, j in combinations(range(p), 2):
            S = codes[(((codes >> i) & 1) == 0) & (((codes >> j) & 1) == 0)]
            bi, bj = 1 << i, 1 << j
            out.append(np.dot(w2[sizes[S]], v[S | bi | bj] - v[S | bi] - v[S | bj] + v[S]))
    return np.asarray(out)


# -- dense operators from the definitions (tests and references, p <= 12) -------------------------

def _all_sets(p: int) -> np.ndarray:
    codes = np.arange(1 << p, dtype=np.int64)
    return ((codes[:, None] >> np.arange(p)) & 1).astype(bool)


def _derivative_rows(p: int, terms: list[tuple[int, ...]], weight) -> np.ndarray:
    """Rows of ``sum_{S cap T = empty} weight(|T|, |S|) Delta_T v(S)`` over bit-order columns."""
    Z = _all_sets(p)
    sizes = Z.sum(axis=1)
    out = np.zeros((len(terms), 1 << p))
    for row, T in enumerate(terms):
        tmask = sum(1 << t for t in T)
        for code in range(1 << p):
            if code & tmask:
                continue
            w = weight(len(T), int(sizes[code]))
            if w == 0:
                continue
            for sub in range(1 << len(T)):
                L = sum(1 << T[q] for q in range(len(T)) if (sub >> q) & 1)
                out[row, code | L] += w * (-1) ** (len(T) - sub.bit_count())
    return out


def _fsii_dense(p: int) -> np.ndarray:
    """FSII of order 2 as the faithful least-squares fit.

    Minimise sum_S mu(S) (v(S) - sum_{T in S} e(T))^2 over e(empty), e(i), e(ij), with mu(S) =
    (p-1)/(C(p,|S|)|S|(p-|S|)) and the fit exact at the empty and grand coalitions (constraints,
    solved by the KKT system).
    """
    Z = _all_sets(p)
    terms = [()] + index_terms(p, "FSII", 2)
    X = np.array([[all(z[t] for t in T) for T in terms] for z in Z], dtype=np.float64)
    sizes = Z.sum(axis=1)
    inner = (sizes > 0) & (sizes < p)
    mu = np.zeros(1 << p)
    mu[inner] = (p - 1) / (np.array([comb(p, int(s)) for s in sizes[inner]]) * sizes[inner] * (p - sizes[inner]))
    G = X[inner].T @ (mu[inner, None] * X[inner])
    C = X[~inner]  # rows of the empty and grand coalitions
    n, c = len(terms), C.shape[0]
    KKT = np.block([[2 * G, C.T], [C, np.zeros((c, c))]])
    rhs_inner = np.zeros((n + c, 1 << p))
    rhs_inner[:n, inner] = 2 * (X[inner] * mu[inner, None]).T
    rhs_inner[n:, np.flatnonzero(~inner)] = np.eye(c)
    sol = np.linalg.solve(KKT, rhs_inner)
    return sol[1:n]  # drop the empty term (order 0) and the multipliers


def _from_weights(index: Index, p: int) -> np.ndarray:
    """The dense operator of a size-weighted derivative index, from its weights."""
    w1, w2 = index.exact_weights(p)
    terms = index_terms(p, index)
    return _derivative_rows(p, terms, lambda t, k: float(w1[k] if t == 1 else w2[k]))  # type: ignore[index]


def dense_index_operator(n_players: int, index: str | Index = "SV", max_order: int | None = None) -> np.ndarray:
    """Dense operator ``B`` (float64[d, 2^p], bit-order columns) with ``I = B v``, from the definitions.

    For tests (p <= 12). k-SII is the Bernoulli aggregation of SII rows, FSII the weighted
    least-squares fit, STII's order-1 rows the Moebius coefficients; none uses :func:`derivative_weights`.
    An index without a ``definition`` is built from its weights.

    Args:
        n_players: p, at most ``MAX_DENSE_PLAYERS``.
        index: an index name or :class:`Index` record.
        max_order: the interaction order (None: the index's own).

    Returns:
        ``float64[d, 2^p]``, one row per term of :func:`index_terms`.
    """
    check_index(index, max_order)
    spec = get_index(index)
    p = int(n_players)
    if p > MAX_DENSE_PLAYERS:
        raise GameError(f"dense index operators are for p <= {MAX_DENSE_PLAYERS}, got {p}")
    return spec.definition(p) if spec.definition is not None else _from_weights(spec, p)


def _sv_w(p: int, k: int) -> float:
    return 1.0 / (p * comb(p - 1, k))


def _sv_dense(p: int) -> np.ndarray:
    return _derivative_rows(p, [(i,) for i in range(p)], lambda t, k: _sv_w(p, k))


def _bv_dense(p: int) -> np.ndarray:
    return _derivative_rows(p, [(i,) for i in range(p)], lambda t, k: 0.5 ** (p - 1))


def _sii2_dense(p: int) -> np.ndarray:
    return _derivative_rows(p, list(combinations(range(p), 2)), lambda t, k: 1.0 / ((p - 1) * comb(p - 2, k)))


def _sii_dense(p: int) -> np.ndarray:
    return np.vstack([_sv_dense(p), _sii2_dense(p)])


def _ksii_dense(p: int) -> np.ndarray:
    # k-SII(S) = sum_{T >= S, |T| <= 2} B_{|T|-|S|} SII(T), Bernoulli B_0 = 1, B_1 = -1/2
    sii2 = _sii2_dense(p)
    agg = _sv_dense(p)
    for row, (i, j) in enumerate(combinations(range(p), 2)):
        agg[i] -= 0.5 * sii2[row]
        agg[j] -= 0.5 * sii2[row]
    return np.vstack([agg, sii2])


def _stii_dense(p: int) -> np.ndarray:
    moebius = np.zeros((p, 1 << p))
    for i in range(p):
        moebius[i, 1 << i] += 1.0
        moebius[i, 0] -= 1.0
    top = _derivative_rows(p, list(combinations(range(p), 2)), lambda t, k: 2.0 / (p * comb(p - 1, k)))
    return np.vstack([moebius, top])


# -- checking a record against its definition ------------------------------------------------------

CHECK_PLAYERS = (2, 3, 4, 5, 6)


def check_index_record(index: Index) -> None:
    """Verify ``index`` for p in :data:`CHECK_PLAYERS` (what :func:`register_index` runs).

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
        w1, _ = _exact_weights(index, p)
        B = _from_weights(index, p)
        if index.definition is not None:
            D = np.asarray(index.definition(p), dtype=np.float64)
            if D.shape != B.shape or not np.allclose(D, B, rtol=1e-9, atol=1e-12):
                raise ValueError(f"index {index.name!r}: its definition differs from its weighted derivatives "
                                 f"at p = {p} (check weights or definition)")
        if index.fast_path != "weights":
            reference = _sv_weights(p) if index.fast_path == "shapley" else [Fraction(1, 2 ** (p - 1))] * p
            if index.order != 1 or list(w1) != reference:
                raise ValueError(f"index {index.name!r}: fast_path={index.fast_path!r} is the closed form of the "
                                 f"{'Shapley' if index.fast_path == 'shapley' else 'Banzhaf'} value's weights only; "
                                 f"use fast_path='weights'")
        target = np.zeros(1 << p)
        target[-1], target[0] = 1.0, -1.0
        if not np.allclose(B.sum(axis=0), target, atol=1e-12):
            inefficient_at = p
    # efficient: the sum holds at every p (the Banzhaf value's does at p = 2 only)
    if bool(index.efficient) != (inefficient_at is None):
        raise ValueError(f"index {index.name!r}: efficient={index.efficient} but its terms "
                         + ("do not sum to v(N) - v(empty) for every game at p = " + str(inefficient_at)
                            if index.efficient else f"sum to v(N) - v(empty) for every game at p = {CHECK_PLAYERS}"))


# -- the built-in indices ---------------------------------------------------------------------------

def _sv_pair(p: int) -> tuple[list[Fraction], None]:
    return _sv_weights(p), None


def _bv_pair(p: int) -> tuple[list[Fraction], None]:
    return [Fraction(1, 2 ** (p - 1))] * p, None


def _ksii_weights(p: int) -> tuple[list[Fraction], list[Fraction]]:
    return _aggregate(_sv_weights(p), _sii2_weights(p), Fraction(-1, 2), p), _sii2_weights(p)


def _sii_weights(p: int) -> tuple[list[Fraction], list[Fraction]]:
    return _sv_weights(p), _sii2_weights(p)


BUILTIN_INDICES = (
    Index("SV", 1, True, _sv_pair, "Shapley value", "SV", fast_path="shapley",
          definition=_sv_dense, description="the Shapley value"),
    Index("BV", 1, False, _bv_pair, "Banzhaf value", "BV",
          fast_path="banzhaf", hold_out_empty=True, definition=_bv_dense, description="the Banzhaf value"),
    Index("k-SII", 2, True, _ksii_weights, "k-SII (order 2)", "k-SII", definition=_ksii_dense,
          description="k-Shapley interaction index (order 1 = SV - 1/2 sum_j SII_ij)"),
    Index("SII", 2, False, _sii_weights, "SII (order 2)", "SII",
          definition=_sii_dense, description="Shapley interaction index (order 1 = SV)"),
    Index("STII", 2, True, _stii_weights, "STII (order 2)", "STII", definition=_stii_dense,
          description="Shapley-Taylor interaction index (order 1 = v(i) - v(empty))"),
    Index("FSII", 2, True, _fsii_weights, "FSII (order 2)", "FSII", definition=_fsii_dense,
          description="Faithful Shapley interaction index (Tsai et al.)"),
)
# the built-in index names (index_names() adds the user's)
INDICES = tuple(index.name for index in BUILTIN_INDICES)
_BUILTIN_NAMES = frozenset(INDICES)
for _builtin in BUILTIN_INDICES:  # checked by tests/games/test_indices.py, not at every import
    register_index(_builtin, check=False)
del _builtin
