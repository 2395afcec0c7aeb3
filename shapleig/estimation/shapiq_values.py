"""A result as shapiq ``InteractionValues`` that keeps its uncertainty (the extra ``shapleig[shapiq]``).

Behind ``ShapleyEstimate.to_interaction_values()``; the rest of the bridge (the approximator, the
way back) is :mod:`shapleig.interop.shapiq_bridge`. Importing this module without shapiq >= 1.8
raises an ``ImportError`` that names the extra.

shapiq's ``InteractionValues`` has no field for uncertainty. :class:`UncertainInteractionValues` is
its subclass that carries the posterior std (and covariance, when the method has one) of every term
through shapiq's operations:

==========================================  ===========================================================
operation                                   what happens to std and covariance
==========================================  ===========================================================
``copy.copy``, ``copy.deepcopy``, pickle    kept
``iv * c``, ``c * iv`` (c a real number)    std * abs(c), covariance * c**2
``-iv``                                     kept
``iv + c``, ``iv - c``, ``c - iv``          kept (a constant has no uncertainty)
``iv + iv2``, ``iv - iv2``                  the two are taken as *independent* estimates: covariances
                                            add (std = root of the summed variances) over the union of
                                            terms; ``iv2`` may also be exact shapiq values
                                            (``estimated=False``, variance 0); ``iv + iv`` is ``2 * iv``
                                            and ``iv - iv`` has std 0. Adding shapiq values that are
                                            estimated but carry no uncertainty raises ``ValueError``.
``abs(iv)``                                 std kept as an upper bound (Var|X| <= Var X); covariance
                                            dropped (None)
``get_n_order``, ``get_top_k``,             kept for the terms that remain
``get_top_k_interactions``, ``get_subset``,
``sparsify``
``iv.aggregate(others, "mean" | "sum")``    independent estimates: covariances summed (and / n**2 for
                                            the mean); "median", "max", "min" raise ``ValueError``
``save`` / ``to_json_file``, ``load`` /     kept: the JSON file gets a block ``"shapleig_uncertainty"``;
``from_json_file``, ``to_dict`` /           ``shapiq.InteractionValues.load`` returns this class again
``from_dict``                               once this module is imported (shapiq alone reads the values
                                            and leaves the block)
==========================================  ===========================================================

What returns a plain ``InteractionValues`` (no ``std`` attribute, so asking for one fails):
shapiq's module-level functions (``aggregate_interaction_values``, which its bar and beeswarm plots
use) and ``without_uncertainty()``. ``from_interaction_values`` of the bridge reads std and
covariance back into a :class:`~shapleig.estimation.result.ShapleyEstimate`.
"""

from __future__ import annotations

import importlib.metadata
import json
import numbers
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from shapleig.estimation.uncertainty_block import UNCERTAINTY_KEY, parse_uncertainty_block, read_json_object
from shapleig.games.indices import shapiq_index_name

MISSING_EXTRA = (
    "the shapiq bridge needs shapiq >= 1.8, the optional extra shapleig[shapiq]: "
    "pip install 'shapleig[shapiq]' (shapiq needs Python >= 3.12)"
)
MIN_SHAPIQ = (1, 8)

try:
    from shapiq.interaction_values import InteractionValues
except ImportError as exc:  # the optional extra is missing: name it
    raise ImportError(f"shapiq is not installed; {MISSING_EXTRA}") from exc
SHAPIQ_VERSION = importlib.metadata.version("shapiq")
if tuple(int(part) for part in SHAPIQ_VERSION.split(".")[:2]) < MIN_SHAPIQ:
    raise ImportError(f"shapiq {SHAPIQ_VERSION} is installed; {MISSING_EXTRA}")

# the former attribute names (kept as aliases of std / covariance)
STD_ATTRIBUTE = "shapleig_std"
COVARIANCE_ATTRIBUTE = "shapleig_covariance"

Term = tuple[int, ...]


class UncertainInteractionValues(InteractionValues):
    """shapiq ``InteractionValues`` with the std (and covariance) of its non-empty terms.

    Args:
        values: as for ``InteractionValues`` (an array with ``interaction_lookup``, or a dict).
        std: float64[d], the standard deviation of each term of ``uncertainty_terms`` (None: the
            square root of the covariance's diagonal).
        covariance: float64[d, d] or None (a method with std but no covariance).
        uncertainty_terms: the d terms std and covariance follow (default: the non-empty
            interactions, in lookup order). The empty interaction ``()`` (v(empty), evaluated)
            and terms not listed have std 0.
        **kwargs: the keywords of ``InteractionValues`` (index, max_order, n_players, ...).

    The module docstring lists what each shapiq operation does to the uncertainty.

    Examples:
        >>> import numpy as np
        >>> iv = UncertainInteractionValues(np.array([1.0, 2.0, 3.0]), std=np.array([0.1, 0.2]),
        ...     index="SV", max_order=1, min_order=0, n_players=2,
        ...     interaction_lookup={(): 0, (0,): 1, (1,): 2}, baseline_value=1.0)
        >>> (iv * 2).std.tolist(), (iv + iv).std_of((1,)), (iv - iv).std.tolist()
        ([0.2, 0.4], 0.4, [0.0, 0.0])
    """

    def __init__(self, values: Any, *, std: Any = None, covariance: Any = None,
                 uncertainty_terms: Sequence[Term] | None = None, **kwargs: Any) -> None:
        super().__init__(values, **kwargs)
        terms = ([_term(t) for t in uncertainty_terms] if uncertainty_terms is not None
                 else [t for t in self.interactions if len(t) > 0])
        self._set_uncertainty(terms, std, covariance)

    # -- the uncertainty -----------------------------------------------------------------------
    def _set_uncertainty(self, terms: list[Term], std: Any, covariance: Any) -> None:
        d = len(terms)
        if len(set(terms)) != d or () in terms:
            raise ValueError("uncertainty_terms must be distinct non-empty interactions")
        cov = None if covariance is None else np.array(covariance, dtype=np.float64)
        if cov is not None and (cov.shape != (d, d) or not np.isfinite(cov).all()):
            raise ValueError(f"covariance must be a finite float[{d}, {d}] matrix, got shape {cov.shape}")
        if std is None:
            if cov is None:
                raise ValueError("UncertainInteractionValues needs std or covariance")
            std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        std = np.array(std, dtype=np.float64).reshape(-1)
        if std.shape != (d,) or not np.isfinite(std).all() or (std < 0).any():
            raise ValueError(f"std must be {d} finite non-negative numbers (one per term), got shape {std.shape}")
        self._terms, self._std, self._cov = terms, std, cov

    @property
    def uncertainty_terms(self) -> list[Term]:
        """The terms ``std`` and ``covariance`` follow (non-empty interactions)."""
        return list(self._terms)

    @property
    def std(self) -> np.ndarray:
        """float64[d]: the standard deviation of each term of ``uncertainty_terms``."""
        return self._std.copy()

    @property
    def covariance(self) -> np.ndarray | None:
        """float64[d, d] over ``uncertainty_terms``, or None."""
        return None if self._cov is None else self._cov.copy()

    # the former attribute names
    shapleig_std = std
    shapleig_covariance = covariance

    def std_of(self, term: Iterable[int]) -> float:
        """The std of one term (0 for the empty interaction; ``KeyError`` for a term without one).

        Args:
            term: the players of the term, in any order.

        Returns:
            the term's standard deviation.
        """
        key = _term(term)
        if key == ():
            return 0.0
        try:
            return float(self._std[self._terms.index(key)])
        except ValueError:
            raise KeyError(f"no uncertainty for term {key}; the terms are {self._terms}") from None

    def without_uncertainty(self) -> InteractionValues:
        """A plain shapiq ``InteractionValues`` with the same values (the uncertainty dropped on purpose).

        Returns:
            a copy as shapiq's own class.
        """
        return InteractionValues.__copy__(self)

    def _embedded(self, terms: list[Term]) -> tuple[np.ndarray, np.ndarray | None]:
        """Variance and covariance over ``terms`` (0 for terms this object has no uncertainty for)."""
        pos = {t: k for k, t in enumerate(self._terms)}
        idx = np.array([pos.get(t, -1) for t in terms], dtype=np.int64)
        have = idx >= 0
        var = np.zeros(len(terms))
        var[have] = self._std[idx[have]] ** 2
        if self._cov is None:
            return var, None
        cov = np.zeros((len(terms), len(terms)))
        cov[np.ix_(have, have)] = self._cov[np.ix_(idx[have], idx[have])]
        return var, cov

    @classmethod
    def from_plain(cls, plain: InteractionValues, terms: list[Term], std: Any,
                   covariance: Any) -> UncertainInteractionValues:
        """``plain`` (a shapiq result) as this class with the given uncertainty (no re-validation of values).

        Args:
            plain: shapiq ``InteractionValues``; its values and lookup are taken as they are.
            terms: the d distinct non-empty terms ``std`` and ``covariance`` follow.
            std: float64[d], or None (the square root of the covariance's diagonal).
            covariance: float64[d, d], or None.

        Returns:
            an :class:`UncertainInteractionValues` (``plain`` is left unchanged).
        """
        out = cls.__new__(cls)
        out.__dict__.update({k: v for k, v in plain.__dict__.items() if k not in ("_terms", "_std", "_cov")})
        out._set_uncertainty(terms, std, covariance)
        return out

    def _restricted(self, plain: InteractionValues) -> UncertainInteractionValues:
        """``plain`` with this object's uncertainty for the terms it kept."""
        keep = [t for t in plain.interactions if len(t) > 0 and t in self._terms]
        idx = [self._terms.index(t) for t in keep]
        cov = None if self._cov is None else self._cov[np.ix_(idx, idx)]
        return self.from_plain(plain, keep, self._std[idx], cov)

    def _combined(self, plain: InteractionValues, parts: list[tuple[Any, float]]) -> UncertainInteractionValues:
        """``plain`` with the uncertainty of ``sum_k c_k X_k`` for independent ``X_k`` (``parts`` = (X_k, c_k)).

        An ``X_k`` without uncertainty must be exact (``estimated=False``).
        """
        terms = [t for t in plain.interactions if len(t) > 0]
        var, cov = np.zeros(len(terms)), np.zeros((len(terms), len(terms)))
        for other, c in parts:
            if not isinstance(other, UncertainInteractionValues):
                if getattr(other, "estimated", True):
                    raise ValueError(
                        "cannot combine with shapiq InteractionValues that are estimated but carry no uncertainty "
                        "(estimated=True, no std): the result's std would be unknown. Give them their std "
                        "(a ShapleyEstimate's to_interaction_values()) or drop ours with .without_uncertainty()")
                continue  # exact values: variance 0
            v, C = other._embedded(terms)
            var += c * c * v
            cov = None if cov is None or C is None else cov + c * c * C
        return self.from_plain(plain, terms, np.sqrt(var), cov)

    # -- shapiq's operations, with the uncertainty carried along -------------------------------
    def __copy__(self) -> UncertainInteractionValues:
        return self.from_plain(super().__copy__(), list(self._terms), self._std.copy(),
                          None if self._cov is None else self._cov.copy())

    def __mul__(self, other: Any) -> UncertainInteractionValues:
        if isinstance(other, bool) or not isinstance(other, numbers.Real):
            return NotImplemented
        c = float(other)
        return self.from_plain(super().__mul__(other), list(self._terms), self._std * abs(c),
                          None if self._cov is None else self._cov * (c * c))

    def __rmul__(self, other: Any) -> UncertainInteractionValues:
        return self.__mul__(other)

    def __neg__(self) -> UncertainInteractionValues:
        return self.from_plain(super().__neg__(), list(self._terms), self._std.copy(), self._cov)

    def __abs__(self) -> UncertainInteractionValues:
        # Var|X| = E X^2 - (E|X|)^2 <= E X^2 - (E X)^2 = Var X: the std stays an upper bound
        return self.from_plain(super().__abs__(), list(self._terms), self._std.copy(), None)

    def __add__(self, other: Any) -> UncertainInteractionValues:
        if other is self:  # perfectly correlated: iv + iv = 2 iv
            return self * 2
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return self.from_plain(super().__add__(float(other)), list(self._terms), self._std.copy(), self._cov)
        if not isinstance(other, InteractionValues):
            return super().__add__(other)  # shapiq's TypeError
        return self._combined(super().__add__(other), [(self, 1.0), (other, 1.0)])

    def __radd__(self, other: Any) -> UncertainInteractionValues:
        return self.__add__(other)

    def __sub__(self, other: Any) -> UncertainInteractionValues:
        if other is self:  # iv - iv is exactly zero
            out = InteractionValues.__add__(self, -self.without_uncertainty())
            terms = [t for t in out.interactions if len(t) > 0]
            return self.from_plain(out, terms, np.zeros(len(terms)), np.zeros((len(terms), len(terms))))
        return self.__add__(-other)

    def __rsub__(self, other: Any) -> UncertainInteractionValues:
        return (-self).__add__(other)

    def get_n_order(self, order: int | None = None, min_order: int | None = None,
                    max_order: int | None = None) -> UncertainInteractionValues:
        """Like shapiq's ``get_n_order``, the uncertainty kept for the terms that remain.

        Args:
            order: the one order to keep.
            min_order: the smallest order kept.
            max_order: the largest order kept.

        Returns:
            the selected terms, with their std and covariance.
        """
        return self._restricted(super().get_n_order(order=order, min_order=min_order, max_order=max_order))

    def get_top_k_interactions(self, k: int) -> UncertainInteractionValues:
        """Like shapiq's ``get_top_k_interactions``, the uncertainty kept for the terms that remain.

        Args:
            k: how many terms to keep (largest absolute value first).

        Returns:
            the ``k`` terms, with their std and covariance.
        """
        return self._restricted(super().get_top_k_interactions(k))

    def get_subset(self, players: list[int]) -> UncertainInteractionValues:
        """Like shapiq's ``get_subset``, the uncertainty kept for the terms that remain.

        Args:
            players: the players whose terms are kept.

        Returns:
            the terms within ``players``, with their std and covariance.
        """
        return self._restricted(super().get_subset(players))

    def sparsify(self, threshold: float = 1e-3) -> None:
        """Like shapiq's ``sparsify`` in place, the uncertainty kept for the terms that remain.

        Args:
            threshold: terms whose absolute value is below it are dropped.
        """
        super().sparsify(threshold)
        kept = self._restricted(InteractionValues.__copy__(self))
        self._terms, self._std, self._cov = kept._terms, kept._std, kept._cov

    def aggregate(self, others: Sequence[InteractionValues], aggregation: str = "mean") -> UncertainInteractionValues:
        """Like shapiq's ``aggregate``, the estimates taken as independent.

        Args:
            others: the other values, each with uncertainty or exact (``estimated=False``).
            aggregation: "mean" (covariances summed, divided by n**2) or "sum"; other modes have no
                Gaussian std and raise ``ValueError``.

        Returns:
            the aggregate with its std and covariance.
        """
        if aggregation not in ("mean", "sum"):
            raise ValueError(f"aggregation {aggregation!r} of estimates has no Gaussian std; use 'mean' or 'sum', "
                             f"or aggregate .without_uncertainty() copies")
        plain = super().aggregate(others, aggregation)
        c = 1.0 / (1 + len(others)) if aggregation == "mean" else 1.0
        return self._combined(plain, [(iv, c) for iv in (self, *others)])

    # -- files and dicts -----------------------------------------------------------------------
    def _uncertainty_block(self) -> dict[str, Any]:
        from shapiq.utils.saving import safe_tuple_to_str

        return {"terms": [safe_tuple_to_str(t) for t in self._terms], "std": self._std.tolist(),
                "covariance": None if self._cov is None else self._cov.tolist()}

    def to_json_file(self, path: Path, *, desc: str | None = None, created_from: object | None = None,
                     **kwargs: Any) -> None:
        """Write shapiq's JSON file plus the block ``"shapleig_uncertainty"`` (terms, std, covariance).

        Args:
            path: the file (shapiq adds ``.json`` when missing).
            desc: shapiq's description field.
            created_from: shapiq's provenance field.
            **kwargs: further keywords of shapiq's ``to_json_file``.
        """
        path = Path(path)
        super().to_json_file(path, desc=desc, created_from=created_from, **kwargs)
        path = path if path.name.endswith(".json") else path.with_suffix(".json")  # where shapiq wrote it
        data = json.loads(path.read_text(encoding="utf-8"))
        data[UNCERTAINTY_KEY] = self._uncertainty_block()
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def from_json_file(cls, path: Path) -> UncertainInteractionValues:
        """Read a file written by :meth:`to_json_file`; ``ValueError`` when it has no uncertainty block.

        Args:
            path: the JSON file.

        Returns:
            the values with their uncertainty.
        """
        path = Path(path)
        data = read_json_object(path)
        if UNCERTAINTY_KEY not in data:
            raise ValueError(f"{path} holds shapiq InteractionValues without uncertainty (no "
                             f"{UNCERTAINTY_KEY!r} block); load it with shapiq.InteractionValues.load")
        block = parse_uncertainty_block(data[UNCERTAINTY_KEY], str(path))  # checked before shapiq reads the file
        plain = _SHAPIQ_FROM_JSON_FILE.__func__(InteractionValues, path)
        return cls._from_block(plain, block, str(path))

    @classmethod
    def _from_block(cls, plain: InteractionValues, block: tuple[list, np.ndarray, np.ndarray | None],
                    where: str) -> UncertainInteractionValues:
        """The values of ``plain`` with a block parsed by :func:`parse_uncertainty_block`; ``where`` names its source."""
        from shapiq.utils.saving import safe_str_to_tuple

        raw, std, cov = block
        try:
            terms = [safe_str_to_tuple(t) if isinstance(t, str) else _term(t) for t in raw]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: a term of the {UNCERTAINTY_KEY!r} block is not shapiq's notation "
                             f"of a set of players: {exc}") from exc
        try:
            return cls.from_plain(plain, terms, std, cov)
        except ValueError as exc:
            raise ValueError(f"{where}: the {UNCERTAINTY_KEY!r} block does not fit the values: {exc}") from exc

    def to_dict(self) -> dict:
        """Like shapiq's ``to_dict`` plus the entry ``"shapleig_uncertainty"`` (terms, std, covariance).

        Returns:
            a JSON-ready dict that :meth:`from_dict` reads back.
        """
        return {**super().to_dict(), UNCERTAINTY_KEY: self._uncertainty_block()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UncertainInteractionValues:
        """Read a dict written by :meth:`to_dict`; ``ValueError`` when it has no uncertainty entry.

        Args:
            data: the dict.

        Returns:
            the values with their uncertainty.
        """
        if UNCERTAINTY_KEY not in data:
            raise ValueError(f"the dict has no {UNCERTAINTY_KEY!r} entry; use shapiq.InteractionValues.from_dict")
        block = parse_uncertainty_block(data[UNCERTAINTY_KEY], "the dict")
        plain = InteractionValues.from_dict({k: v for k, v in data.items() if k != UNCERTAINTY_KEY})
        return cls._from_block(plain, block, "the dict")

    def __repr__(self) -> str:
        return super().__repr__().replace("InteractionValues(", "UncertainInteractionValues(", 1)


def _term(term: Iterable[int]) -> Term:
    return tuple(sorted(int(i) for i in term))


# shapiq's own loader, and the registration: InteractionValues.load / from_json_file return this
# class for files that carry an uncertainty block (any other file loads exactly as before)
_SHAPIQ_FROM_JSON_FILE = InteractionValues.__dict__["from_json_file"]
if not getattr(_SHAPIQ_FROM_JSON_FILE, "__shapleig_dispatch__", False):

    def _dispatching_from_json_file(cls: type, path: Path) -> InteractionValues:
        path = Path(path)
        if cls is InteractionValues and path.name.endswith(".json") and path.is_file():
            with path.open("r", encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and UNCERTAINTY_KEY in data:
                return UncertainInteractionValues.from_json_file(path)
        return _SHAPIQ_FROM_JSON_FILE.__func__(cls, path)

    _dispatching_from_json_file.__doc__ = _SHAPIQ_FROM_JSON_FILE.__func__.__doc__
    _dispatching = classmethod(_dispatching_from_json_file)
    _dispatching.__shapleig_dispatch__ = True  # type: ignore[attr-defined]
    _dispatching.__shapleig_original__ = _SHAPIQ_FROM_JSON_FILE  # type: ignore[attr-defined]
    InteractionValues.from_json_file = _dispatching  # type: ignore[method-assign]
else:  # re-imported: keep shapiq's original loader
    _SHAPIQ_FROM_JSON_FILE = _SHAPIQ_FROM_JSON_FILE.__shapleig_original__


def to_interaction_values(estimate: Any) -> InteractionValues:
    """``estimate`` as shapiq ``InteractionValues``: the estimate's index, one entry per term.

    Orders 0..max_order (1, or 2 for pairwise interactions), n_players = p. Entry ``()`` and
    ``baseline_value`` hold v(empty) when the run evaluated it (shapiq's
    convention, so values sum to v(N)); without it both are 0 and only the other entries count.
    ``estimation_budget`` is the number of distinct evaluations spent. A result with a posterior
    gives an :class:`UncertainInteractionValues` (std and covariance kept through shapiq's
    operations, see the module docstring); one without (model-free methods) a plain ``InteractionValues``.

    Args:
        estimate: a :class:`~shapleig.estimation.result.ShapleyEstimate`.

    Returns:
        an :class:`UncertainInteractionValues`, or a plain ``InteractionValues`` without a posterior.
    """
    baseline = 0.0 if estimate.baseline is None else float(estimate.baseline)
    plain = _index_values(estimate, np.asarray(estimate.values, dtype=np.float64), baseline)
    if estimate.std is None:
        return plain
    terms = [tuple(T) for T in (getattr(estimate, "terms", None) or [(i,) for i in range(int(estimate.n_players))])]
    covariance = None if estimate.covariance is None else np.array(estimate.covariance, dtype=np.float64)
    return UncertainInteractionValues.from_plain(plain, terms, np.array(estimate.std, dtype=np.float64), covariance)


def std_interaction_values(estimate: Any) -> InteractionValues:
    """The posterior std of ``estimate`` as shapiq ``InteractionValues`` (its index and terms, ``()`` = 0).

    E.g. for ``shapiq.plot.bar_plot``. ``ValueError`` for methods without std.

    Args:
        estimate: a :class:`~shapleig.estimation.result.ShapleyEstimate` with a posterior std.

    Returns:
        a plain ``InteractionValues`` of the std.
    """
    if estimate.std is None:
        raise ValueError(f"method {estimate.method or '?'} reports no posterior std")
    return _index_values(estimate, np.asarray(estimate.std, dtype=np.float64), 0.0)


def _index_values(estimate: Any, per_term: np.ndarray, empty: float) -> InteractionValues:
    """InteractionValues of the estimate's index over its terms: ``()`` -> ``empty``, ``terms[k]`` -> ``per_term[k]``.

    The terms are the p singletons for the Shapley and Banzhaf values.
    """
    p = int(estimate.n_players)
    index = shapiq_index_name(getattr(estimate, "index", None) or "SV")
    terms = getattr(estimate, "terms", None) or [(i,) for i in range(p)]
    values = np.concatenate([[empty], per_term])
    lookup = {(): 0, **{tuple(T): k + 1 for k, T in enumerate(terms)}}
    return InteractionValues(
        values=values,
        index=index,
        max_order=max((len(T) for T in terms), default=1),
        min_order=0,
        n_players=p,
        interaction_lookup=lookup,
        estimated=not estimate.info.get("exact", False),  # a budget covering the game: enumerated
        estimation_budget=int(estimate.evaluations),
        baseline_value=empty,
        target_index=index,
    )


__all__ = [
    "MISSING_EXTRA",
    "SHAPIQ_VERSION",
    "UNCERTAINTY_KEY",
    "UncertainInteractionValues",
    "std_interaction_values",
    "to_interaction_values",
]
