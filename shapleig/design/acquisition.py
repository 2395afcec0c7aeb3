"""Acquisitions over a candidate pool: the Acquisition base class, its subclasses and registry (docs/math.md §7, §10).

An acquisition scores the pool's candidates given the posterior (botorch-style: the posterior in,
one value per candidate out) and selects a batch through :meth:`Acquisition.select` (default:
greedy argmax of the score, conditioning on every pick, which is exact under frozen
hyperparameters). Every acquisition derives from :class:`Acquisition`:

- :class:`EIG`: expected information gain about the index vector (the default, ``"eig"``);
- :class:`Uncertainty`: predictive variance of the game's value (``"uncertainty"``);
- :class:`RandomAcquisition`: uniform picks from the pool (``"random"``);
- :class:`Leverage`: the leverage-score (uniform-size) distribution, from the pool in the loop
  and as the whole one-shot sample of the GP+Leverage arm (``"leverage"``).

A name in the small registry beside them (:func:`register_acquisition`) is accepted wherever an
acquisition is (``ShaplEIG(acquisition="eig")``, the harness, the CLI, ``explain``); an instance,
including one of a user-defined subclass, is accepted by ``ShaplEIG(acquisition=...)`` as it is.
The botorch faces (``AcquisitionFunction`` subclasses over a fitted model) are in
:mod:`shapleig.interop.botorch_acquisition`.

Ties (within a relative 1e-10, so that rounding does not decide between candidates that are equal
in exact arithmetic) go to the first index in pool order.

Example:
    >>> import numpy as np
    >>> from shapleig import FunctionGame, ShaplEIG
    >>> from shapleig.design.acquisition import Acquisition
    >>> class LargestCoalition(Acquisition):
    ...     '''Evaluate the largest available coalition first.'''
    ...     def score(self, candidates):
    ...         return np.where(candidates.available, candidates.W.sum(axis=1), -np.inf)
    >>> game = FunctionGame(lambda Z: Z @ np.arange(1.0, 5.0), n_players=4)
    >>> est = ShaplEIG(acquisition=LargestCoalition()).estimate(game, budget=8, seed=0)
    >>> est.method, est.evaluations
    ('shapleig-largestcoalition', 8)
"""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar

import numpy as np

from shapleig._deprecated import deprecated_attributes, warn_deprecated
from shapleig.design.initial import leverage_design
from shapleig.errors import AcquisitionError
from shapleig.gp.posterior import CandidatePosterior

TIE_RTOL = 1e-10


def first_argmax(scores: np.ndarray, rtol: float = TIE_RTOL) -> int:
    """Index of the first score within ``rtol`` (relative) of the maximum: ties go to pool order.

    Complement pairs and permuted players give EIG values that are equal in exact arithmetic but
    differ in the last bits; a plain ``argmax`` would let rounding (BLAS, kernel evaluation order)
    decide between them. Scores of -inf (unavailable) never win.

    Args:
        scores: one score per candidate, float[n].
        rtol: relative tolerance of a tie with the maximum.

    Returns:
        The index of the first candidate within ``rtol`` of the best score.
    """
    scores = np.asarray(scores, dtype=np.float64)
    best = float(np.max(scores))
    if not np.isfinite(best):
        return int(np.argmax(scores))
    return int(np.flatnonzero(scores >= best - rtol * max(abs(best), 1e-300))[0])


def random_indices(available: np.ndarray, q: int, rng: np.random.Generator | None) -> np.ndarray:
    """``min(q, #available)`` distinct indices where ``available`` (bool[n]) is True, uniformly.

    Args:
        available: bool[n], the candidates that may be picked.
        q: how many to pick.
        rng: the generator drawing them (required).

    Returns:
        int64 indices into ``available``, in draw order.
    """
    if rng is None:
        raise ValueError("random selection needs a numpy Generator rng")
    avail = np.flatnonzero(available)
    if not avail.size:
        return np.zeros(0, dtype=np.int64)
    return rng.choice(avail, size=min(int(q), avail.size), replace=False).astype(np.int64)


def check_scores(scores: Any, candidates: Any, owner: str) -> np.ndarray:
    """``scores`` as float64[n] when an acquisition may return them for ``candidates``.

    The rules of :meth:`Acquisition.score`: one real score per candidate (shape ``(n,)``), never
    NaN, and, while a candidate is available, at least one available candidate above -inf.

    Args:
        scores: what the acquisition's ``score`` returned.
        candidates: the candidate posterior or :class:`PoolView` it scored (``available``, bool[n]).
        owner: the acquisition's class name, for the message.

    Returns:
        The scores as float64[n].

    Raises:
        AcquisitionError: naming ``owner`` and what is wrong.
    """
    available = np.asarray(candidates.available, dtype=bool)
    n = available.shape[0]
    arr = np.asarray(scores)
    if arr.dtype.kind not in "biuf":
        raise AcquisitionError(f"acquisition {owner}: score() returned {type(scores).__name__} of dtype "
                               f"{arr.dtype}, not real numbers; return float[{n}], one score per candidate")
    if arr.shape != (n,):
        raise AcquisitionError(f"acquisition {owner}: score() returned shape {arr.shape} for a pool of {n} "
                               f"candidates; return float[{n}], one score per candidate (-inf where not available)")
    out = arr.astype(np.float64)
    nan = np.flatnonzero(np.isnan(out))
    if nan.size:
        raise AcquisitionError(f"acquisition {owner}: score() returned NaN for {nan.size} of {n} candidates "
                               f"(first: candidate {nan[0]}); a score is never NaN (-inf excludes a candidate)")
    if available.any() and not np.any(out[available] > -np.inf):
        raise AcquisitionError(f"acquisition {owner}: score() gave all {int(available.sum())} available candidates "
                               f"-inf, so there is nothing to pick; -inf is for the candidates it excludes")
    return out


def _checked_score(score: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """``score`` whose result passes :func:`check_scores` (naming the instance's class) on every call."""

    @functools.wraps(score)
    def checked(self: Acquisition, candidates: Any) -> np.ndarray:
        return check_scores(score(self, candidates), candidates, type(self).__name__)

    checked.__checks_scores__ = True  # type: ignore[attr-defined]
    return checked


def _check_q(q: int) -> int:
    q = int(q)
    if q < 1:
        raise ValueError(f"q must be >= 1, got {q}")
    return q


class PoolView:
    """The pool without a posterior: what an acquisition with ``uses_posterior = False`` is given.

    It has the candidate posterior's ``W``, ``available``, ``n_candidates`` and ``condition`` (which
    only marks a pick unavailable), so such an acquisition runs on either.

    Args:
        W: bool[n, p], the pool's coalitions.
        available: bool[n], which of them may still be picked (copied).
    """

    def __init__(self, W: np.ndarray, available: np.ndarray) -> None:
        self.W = W
        self.available = np.array(available, dtype=bool)
        self.selected: list[int] = []

    @property
    def n_candidates(self) -> int:
        """Number of pool rows (available or not)."""
        return int(self.W.shape[0])

    def condition(self, j: int) -> float:
        """Mark candidate ``j`` picked (no posterior to update).

        Args:
            j: the pool index.

        Returns:
            0.0 (no information gain is computed).
        """
        j = int(j)
        if not self.available[j]:
            raise ValueError(f"candidate {j} was already picked")
        self.available[j] = False
        self.selected.append(j)
        return 0.0


class Acquisition(ABC):
    """Base of every acquisition: score the candidates given the posterior, select a batch.

    A subclass implements :meth:`score`; :meth:`select` (greedy: argmax, condition, repeat) gives
    its batches. ``name`` (default: the class name in lower case) names the arm: a run reports
    method ``"shapleig-<name>"`` (``method`` overrides that). An acquisition whose scores ignore the
    posterior sets ``uses_posterior = False``: the loop then hands it a :class:`PoolView` instead
    of building the candidate posterior. Instances should hold configuration, not run state: one
    instance may serve several runs (seeds, budgets, harness jobs).

    Scores are checked on every call of a subclass's :meth:`score` (:func:`check_scores`), so a
    broken acquisition stops at its first selection with an
    :class:`~shapleig.errors.AcquisitionError` naming its class instead of selecting from garbage:

    - one real number per candidate, float[n] with n = ``len(candidates.available)``;
    - NaN never (``argmax`` would pick it: a NaN is always a bug);
    - -inf means "never pick this one": the convention where ``available`` is False, and allowed for
      available candidates an acquisition excludes;
    - while a candidate is available, at least one available candidate must score above -inf
      (all -inf leaves nothing to pick);
    - +inf is allowed: such a candidate is picked first (ties among them to pool order);
    - entries where ``available`` is False are ignored by :meth:`select` (only available
      candidates are picked), so a finite value there is harmless.

    Example:
        >>> import numpy as np
        >>> class MaxVarianceOverSize(Acquisition):
        ...     '''Predictive variance divided by the coalition's size + 1.'''
        ...     def score(self, candidates):
        ...         return candidates.predictive_variance() / (1 + candidates.W.sum(axis=1))
        >>> MaxVarianceOverSize().name
        'maxvarianceoversize'
    """

    name: ClassVar[str] = "acquisition"
    method: ClassVar[str | None] = None
    uses_posterior: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:  # a subclass is its own arm, not its parent's
            cls.name = cls.__name__.lower()
        if "method" not in cls.__dict__:
            cls.method = None
        own = cls.__dict__.get("score")
        # every score() a subclass defines is checked where it is called (select, a subclass's own
        # select, super().score()), so no path selects from NaN or a score vector of the wrong length
        if callable(own) and not getattr(own, "__isabstractmethod__", False) \
                and not getattr(own, "__checks_scores__", False):
            cls.score = _checked_score(own)  # type: ignore[method-assign]

    @abstractmethod
    def score(self, candidates: CandidatePosterior) -> np.ndarray:
        """One score per candidate (larger is better); -inf where ``candidates.available`` is False.

        The rules (checked on every call, see the class docstring): float[n], no NaN, -inf to
        exclude, +inf picked first, at least one available candidate above -inf.

        Args:
            candidates: the candidate posterior (or a :class:`PoolView` when ``uses_posterior`` is
                False): ``W`` (bool[n, p]), ``available`` (bool[n]), ``eig()``,
                ``predictive_variance()`` (standardised units), ``cross_covariance()``,
                ``shapley_covariance``.

        Returns:
            float64[n].
        """

    def select(self, candidates: CandidatePosterior, q: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Greedy batch: ``q`` times argmax :meth:`score` (ties to pool order), condition on the pick.

        Every pick is conditioned on, so ``candidates`` stays consistent with the archive the picks
        will join; fewer than ``q`` indices come back only when the pool runs out.

        Args:
            candidates: the candidate posterior (or :class:`PoolView`), updated in place.
            q: the batch size, >= 1.
            rng: the loop's selection stream (unused by deterministic acquisitions).

        Returns:
            int64 pool indices (into ``candidates.W``) in pick order.
        """
        q = _check_q(q)
        picks: list[int] = []
        for _ in range(q):
            if not candidates.available.any():
                break
            # only available candidates can be picked, whatever the scores say elsewhere
            j = first_argmax(np.where(candidates.available, self.score(candidates), -np.inf))
            candidates.condition(j)
            picks.append(j)
        return np.asarray(picks, dtype=np.int64)

    def __eq__(self, other: object) -> bool:
        # same class and same configuration (arrays compared by value: options objects compare equal)
        if type(other) is not type(self) or vars(other).keys() != vars(self).keys():
            return False
        mine, theirs = vars(self), vars(other)
        return all(np.array_equal(mine[k], theirs[k]) if isinstance(mine[k], np.ndarray) else mine[k] == theirs[k]
                   for k in mine)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"


class EIG(Acquisition):
    """Expected information gain about the index vector: ``-log(1 - b^T Sigma_phi^-1 b / v)``.

    The default acquisition (docs/math.md §7); the batch is the exact greedy sequence under frozen
    hyperparameters (docs/math.md §10.2).
    """

    name = "eig"
    method = "shapleig"

    def score(self, candidates: CandidatePosterior) -> np.ndarray:
        """The Shapley EIG of every candidate (``candidates.eig()``).

        Args:
            candidates: the candidate posterior.

        Returns:
            float64[n], -inf where not available.
        """
        return candidates.eig()


class Uncertainty(Acquisition):
    """Uncertainty sampling: the predictive variance of the game's value at each candidate."""

    name = "uncertainty"

    def score(self, candidates: CandidatePosterior) -> np.ndarray:
        """The predictive variance (standardised units) of every candidate.

        Args:
            candidates: the candidate posterior.

        Returns:
            float64[n], -inf where not available.
        """
        return candidates.predictive_variance()


class RandomAcquisition(Acquisition):
    """Random search: ``q`` distinct available candidates, uniformly, from the loop's selection stream."""

    name = "random"
    uses_posterior = False

    def score(self, candidates: CandidatePosterior) -> np.ndarray:
        """Every available candidate scores the same (0): the choice among them is uniform.

        Args:
            candidates: the candidate posterior or :class:`PoolView`.

        Returns:
            float64[n]: 0 where available, -inf elsewhere.
        """
        return np.where(candidates.available, 0.0, -np.inf)

    def select(self, candidates: CandidatePosterior, q: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``min(q, #available)`` distinct available indices uniformly at random, each conditioned on.

        Args:
            candidates: the candidate posterior or :class:`PoolView`, updated in place.
            q: the batch size, >= 1.
            rng: the generator (required).

        Returns:
            int64 pool indices in draw order.
        """
        chosen = random_indices(candidates.available, _check_q(q), rng)
        for j in chosen:
            candidates.condition(int(j))
        return chosen


class Leverage(Acquisition):
    """The leverage-score distribution of the Shapley regression: every coalition size equally likely.

    The GP+Leverage arm (:class:`~shapleig.design.estimators.GPLeverage`) draws its whole sample
    from it at once (:meth:`design`: empty, grand and paired uniform-size coalitions). In the design
    loop it picks from the pool: a size uniformly among the sizes still available, then a
    coalition of that size uniformly, without looking at the posterior.
    """

    name = "leverage"
    method = "shapleig-leverage-pool"  # "shapleig-leverage" is the one-shot GP+Leverage arm
    uses_posterior = False

    def design(self, n_players: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """The one-shot sample: empty, grand, then ``size - 2`` paired uniform-size coalitions.

        Args:
            n_players: p.
            size: rows wanted (fewer when the proper coalitions run out).
            rng: the generator.

        Returns:
            bool[size, p].
        """
        return leverage_design(n_players, rng, size=size)

    def score(self, candidates: CandidatePosterior) -> np.ndarray:
        """Each available candidate's probability: 1 / (#sizes available x #available of its size).

        Args:
            candidates: the candidate posterior or :class:`PoolView`.

        Returns:
            float64[n], -inf where not available.
        """
        sizes = np.asarray(candidates.W, dtype=bool).sum(axis=1)
        avail = np.asarray(candidates.available, dtype=bool)
        counts = np.bincount(sizes[avail], minlength=int(sizes.max(initial=0)) + 1)
        n_sizes = int(np.count_nonzero(counts))
        out = np.full(sizes.shape[0], -np.inf)
        if n_sizes:
            out[avail] = 1.0 / (n_sizes * counts[sizes[avail]])
        return out

    def select(self, candidates: CandidatePosterior, q: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``min(q, #available)`` draws, each from :meth:`score`'s distribution over what is left.

        Args:
            candidates: the candidate posterior or :class:`PoolView`, updated in place.
            q: the batch size, >= 1.
            rng: the generator (required).

        Returns:
            int64 pool indices in draw order.
        """
        q = _check_q(q)
        if rng is None:
            raise ValueError("leverage selection needs a numpy Generator rng")
        picks: list[int] = []
        for _ in range(q):
            if not candidates.available.any():
                break
            prob = np.maximum(self.score(candidates), 0.0)  # -inf (unavailable) -> 0
            j = int(rng.choice(prob.size, p=prob / prob.sum()))
            candidates.condition(j)
            picks.append(j)
        return np.asarray(picks, dtype=np.int64)


# -- the registry: names -> acquisition classes -------------------------------------------------

_REGISTRY: dict[str, type[Acquisition]] = {}
_ALIASES: dict[str, str] = {}
_LOCK = threading.Lock()


def register_acquisition(cls: type[Acquisition], *, aliases: tuple[str, ...] = (),
                         replace: bool = False) -> type[Acquisition]:
    """Make ``cls`` available by its ``name`` (and ``aliases``); usable as a class decorator.

    Args:
        cls: an :class:`Acquisition` subclass whose constructor takes no argument.
        aliases: other names for it.
        replace: allow taking a name another class holds (a class of the same module and
            qualified name, defined again, always may).

    Returns:
        ``cls``.

    Example:
        >>> @register_acquisition
        ... class Widest(Acquisition):
        ...     def score(self, candidates):
        ...         return candidates.predictive_variance()
        >>> make_acquisition("widest")
        Widest()
        >>> unregister_acquisition("widest")
    """
    if not (isinstance(cls, type) and issubclass(cls, Acquisition)):
        raise TypeError(f"register_acquisition takes an Acquisition subclass, got {cls!r}")
    with _LOCK:
        for key in (cls.name, *aliases):
            old = _REGISTRY.get(key) or _REGISTRY.get(_ALIASES.get(key, ""))
            # the same class defined again (a re-run notebook cell or script) takes its name back
            redefined = old is not None and (old.__module__, old.__qualname__) == (cls.__module__, cls.__qualname__)
            if old is not None and old is not cls and not (replace or redefined):
                raise ValueError(f"acquisition name {key!r} is already registered ({old.__name__})")
        _REGISTRY[cls.name] = cls
        for alias in aliases:
            _ALIASES[alias] = cls.name
    return cls


def unregister_acquisition(name: str) -> None:
    """Remove the acquisition registered as ``name`` and its aliases (tests, notebooks).

    Args:
        name: its registered name.
    """
    with _LOCK:
        _REGISTRY.pop(name, None)
        for alias in [a for a, target in _ALIASES.items() if target == name]:
            del _ALIASES[alias]


def acquisition_names() -> tuple[str, ...]:
    """The registered names, in registration order (the built-in ones first).

    Returns:
        A tuple of names.
    """
    return tuple(_REGISTRY)


register_acquisition(EIG, aliases=("shapley_eig",))
register_acquisition(Uncertainty, aliases=("variance", "posterior_variance"))
register_acquisition(RandomAcquisition)
register_acquisition(Leverage)

# The former name table, now read from the registry with a DeprecationWarning.
__getattr__ = deprecated_attributes(__name__, {"ACQUISITIONS": acquisition_names})


def check_acquisition(value: str | Acquisition) -> str | Acquisition:
    """The canonical name of a registered acquisition, or the :class:`Acquisition` instance as given.

    Args:
        value: a registered name or alias (``"eig"``, ``"variance"``), or an instance.

    Returns:
        The canonical name (a string) or the instance itself.

    Raises:
        ValueError: an unknown name (the message lists the registered ones).
        TypeError: neither a string nor an instance (a class is refused with a hint to call it).
    """
    if isinstance(value, Acquisition):
        return value
    if isinstance(value, type) and issubclass(value, Acquisition):
        raise TypeError(f"acquisition must be an instance: {value.__name__}(), not the class {value.__name__}")
    if not isinstance(value, str):
        raise TypeError(f"acquisition must be a name ({', '.join(acquisition_names())}) or an Acquisition "
                        f"instance, got {type(value).__name__} {value!r}")
    key = _ALIASES.get(value, value)
    if key not in _REGISTRY:
        raise ValueError(f"unknown acquisition {value!r}; choose one of {acquisition_names()} "
                         f"or pass an Acquisition instance")
    return key


def make_acquisition(value: str | Acquisition) -> Acquisition:
    """The acquisition object for a name (a fresh instance) or the instance itself.

    Args:
        value: a registered name or alias, or an :class:`Acquisition` instance.

    Returns:
        An :class:`Acquisition`.
    """
    checked = check_acquisition(value)
    return checked if isinstance(checked, Acquisition) else _REGISTRY[checked]()


def acquisition_name(value: str | Acquisition) -> str:
    """The name an acquisition (name or instance) goes by (``"eig"``, a subclass's ``name``).

    Args:
        value: a registered name or alias, or an :class:`Acquisition` instance.

    Returns:
        The canonical name.
    """
    checked = check_acquisition(value)
    return checked.name if isinstance(checked, Acquisition) else checked


def method_name(value: str | Acquisition, base: str = "shapleig") -> str:
    """The method a design-loop run with this acquisition reports (``"shapleig"``, ``"shapleig-random"``).

    Args:
        value: a registered name or alias, or an :class:`Acquisition` instance.
        base: the estimator's own name.

    Returns:
        The acquisition's ``method`` when it sets one for the default base, else ``base-<name>``.
    """
    acq = make_acquisition(value)
    if acq.method is not None and base == "shapleig":
        return acq.method
    return f"{base}-{acq.name}" if acq.name != "eig" else base


def select(
    acquisition: str | Acquisition,
    candidates: CandidatePosterior,
    q: int,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Deprecated: ``make_acquisition(acquisition).select(candidates, q, rng)``, which this calls after warning.

    Greedy selection of ``q`` available pool indices (into ``candidates.W``), in pick order:
    ``"eig"`` argmax Shapley EIG, condition, repeat; ``"uncertainty"`` the same with the predictive
    variance; ``"random"`` ``q`` distinct available indices uniformly at random (``rng`` required).

    Args:
        acquisition: a registered name or an :class:`Acquisition` instance.
        candidates: the candidate posterior, updated in place.
        q: the batch size, >= 1.
        rng: the selection stream.

    Returns:
        int64 pool indices in pick order.
    """
    warn_deprecated("shapleig.design.acquisition.select")
    return make_acquisition(acquisition).select(candidates, q, rng)


__all__ = [
    "EIG",
    "Acquisition",
    "Leverage",
    "PoolView",
    "RandomAcquisition",
    "Uncertainty",
    "acquisition_name",
    "acquisition_names",
    "check_acquisition",
    "check_scores",
    "first_argmax",
    "make_acquisition",
    "method_name",
    "random_indices",
    "register_acquisition",
    "unregister_acquisition",
]
