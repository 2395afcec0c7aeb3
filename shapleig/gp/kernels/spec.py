"""The kernel-spec protocol: a surrogate kernel as a small object that composes with ``+``.

A :class:`KernelSpec` describes a kernel *family* (its structure, the priors and starting values of
its hyperparameters, how they map to the optimiser's coordinates); the *values* are a structured
params object (one per part, e.g. :class:`~shapleig.gp.kernels.hamming.HammingParams`), held with the
noise and the mean constant in :class:`~shapleig.gp.posterior.Hyperparameters`. Everything the GP
computes with a kernel goes through its spec, so a new kernel is one class here and nothing above
``shapleig/gp`` changes:

- values: :meth:`KernelSpec.matrix` ``k(Z1, Z2)``, :meth:`KernelSpec.diagonal` ``k(z, z)`` (the
  candidates' prior variances);
- the index products the posterior needs (docs/math.md §4, §5, §14): :meth:`KernelSpec.index_columns`
  ``B' k(., Z)`` and :meth:`KernelSpec.index_covariance` ``B' K B'^T`` for an
  :class:`~shapleig.gp.index_esp.IndexOperator` (``B'`` is ``B`` without its empty-coalition column
  when the operator holds v(empty) out, docs/math.md §14.5). A part without closed forms falls back
  to dense 2^p products for p <= :data:`DENSE_MAX_PLAYERS` and refuses larger p by name;
- the MAP fit (docs/math.md §3): :meth:`KernelSpec.fit_terms` gives the part's share of the
  objective on one archive as :class:`FitTerms` (coordinates, log prior, kernel matrix and its
  gradient), and :meth:`KernelSpec.n_params` its number of fitted hyperparameters (BIC);
- what the engine would otherwise have to learn by naming a kernel: :attr:`KernelSpec.per_player`
  (one lengthscale per player), :attr:`KernelSpec.learned_noise` (the fit also learns the noise,
  :mod:`shapleig.gp.kernels.noise`), and the warm start from a fitted *twin*, the kernel this one
  holds as a special case (:attr:`KernelSpec.twin`, :meth:`KernelSpec.from_twin`).

``a + b`` is a :class:`SumKernel`: ``k = k_a + k_b``, params a tuple aligned with ``parts``, every
product the sum of the parts' products. Sums flatten (``(a + b) + c`` has three parts).
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from shapleig.games.coalitions import all_coalitions
from shapleig.games.indices import Index, dense_index_operator
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.noise import LEARNED_NOISE, LearnedNoise

# The dense fallback of the index products enumerates all 2^p coalitions: K over them is 4^p
# entries (8 MB at p = 10).
DENSE_MAX_PLAYERS = 10


def finite_value(name: str, value: Any) -> float:
    """``value`` as a float, or ``ValueError`` naming ``name`` when it is not finite.

    Args:
        name: the value's name in the error.
        value: a number.

    Returns:
        the float.
    """
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


class FitTerms(abc.ABC):
    """One kernel part's share of the MAP objective on one archive ``X`` (bool[t, p]).

    The optimiser's vector is ``theta = (mean constant, part 0's coordinates, part 1's, ...)``; a
    part owns ``n_params`` consecutive coordinates ("raw" values, unconstrained). The objective is
    ``-log N(y | c 1, K + noise I) - sum of the parts' log priors`` with ``K`` the sum of the parts'
    matrices (docs/math.md §3).
    """

    n_params: int
    # the coordinates (within this part's) of lengthscales with a LogNormal prior, which the Laplace
    # evidence integrates (:mod:`shapleig.gp.evidence`); None: the part has none
    lengthscales: slice | None = None

    @abc.abstractmethod
    def pack(self, params: Any) -> np.ndarray:
        """The coordinates ``float64[n_params]`` of this part's ``params``.

        Args:
            params: this part's params.

        Returns:
            ``float64[n_params]``.
        """

    @abc.abstractmethod
    def unpack(self, raw: np.ndarray) -> Any:
        """The params at coordinates ``raw`` (``float64[n_params]``).

        Args:
            raw: ``float64[n_params]`` coordinates.

        Returns:
            the params.
        """

    @abc.abstractmethod
    def evaluate(self, raw: np.ndarray) -> tuple[np.ndarray | None, float, Any]:
        """``(K_part, log_prior, state)`` at ``raw``.

        The part's kernel matrix over the archive, float64[t, t] (None when it is identically zero),
        its log prior density (over its values, up to a constant) and whatever :meth:`gradient`
        needs again.

        Args:
            raw: ``float64[n_params]`` coordinates.

        Returns:
            ``(K_part, log_prior, state)``.
        """

    @abc.abstractmethod
    def gradient(self, raw: np.ndarray, W: np.ndarray, state: Any) -> np.ndarray:
        """``d(-log N - log prior) / d raw``, float64[n_params], given ``W`` and :meth:`evaluate`'s state.

        ``W = alpha alpha^T - K^-1`` with ``alpha = K^-1 (y - c)``; ``d(-log N)/d K_ab = -W_ab / 2``.

        Args:
            raw: ``float64[n_params]`` coordinates.
            W: ``alpha alpha^T - K^-1``, float64[t, t].
            state: what :meth:`evaluate` returned as its state at ``raw``.

        Returns:
            ``float64[n_params]``.
        """

    def resample(self, raw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Coordinates for a retry after a failed fit.

        The prior-carrying ones redrawn from their prior (default: unchanged; draws from ``rng`` in
        part order).

        Args:
            raw: ``float64[n_params]`` coordinates of the failed fit.
            rng: the random generator.

        Returns:
            ``float64[n_params]``.
        """
        return raw


class KernelSpec(abc.ABC):
    """A surrogate kernel family. Subclasses are frozen dataclasses (compared and hashed by value).

    A subclass implements :attr:`name`, :meth:`check_params`, :meth:`initial_params`,
    :meth:`matrix`, :meth:`fit_terms`; it overrides :meth:`diagonal`, :meth:`index_columns`,
    :meth:`index_covariance` when it has faster or closed forms (the defaults are exact but dense),
    and :meth:`warm_params`, :meth:`is_zero`, :meth:`describe`, :meth:`n_params` where useful.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The kernel's name in results (``info["kernel_weights"]``), unique within a surrogate."""

    @property
    def parts(self) -> tuple["KernelSpec", ...]:
        """The additive parts (``(self,)`` unless a sum)."""
        return (self,)

    def __add__(self, other: "KernelSpec") -> "SumKernel":
        if not isinstance(other, KernelSpec):
            return NotImplemented
        return SumKernel((*self.parts, *other.parts))

    @property
    def learned_noise(self) -> LearnedNoise | None:
        """The learned noise a MAP fit of this kernel adds (:mod:`shapleig.gp.kernels.noise`), or None.

        Default: :data:`~shapleig.gp.kernels.noise.LEARNED_NOISE` for a kernel with a true
        ``learn_noise`` field (e.g. :class:`~shapleig.gp.kernels.graded.Graded`), else None (the
        noise stays fixed); a sum: its first part's that learns one.
        """
        return LEARNED_NOISE if bool(getattr(self, "learn_noise", False)) else None

    @property
    def learns_noise(self) -> bool:
        """Whether a MAP fit of this kernel also learns the observation noise (:attr:`learned_noise`)."""
        return self.learned_noise is not None

    @property
    def per_player(self) -> bool:
        """Whether the kernel has one lengthscale per player (ARD-like; default False; a sum: any part)."""
        return False

    def nested_twin(self, name: str) -> str | None:
        """The name of this part's *twin* within a kernel named ``name``, or None (the default).

        The twin is the kernel this one holds as a special case (the graded kernel at g = 1 is the
        shared Hamming kernel), fitted before it in the same surrogate; :attr:`twin` asks each part.

        Args:
            name: the name of the kernel this part belongs to (its own for a single part).

        Returns:
            the twin's name, or None.
        """
        return None

    @property
    def twin(self) -> str | None:
        """The name of the kernel whose MAP is a warm start of this one (its twin), or None.

        The first part's :meth:`nested_twin` of this kernel's name.
        """
        return next((t for part in self.parts if (t := part.nested_twin(self.name)) is not None), None)

    def from_twin(self, params: Any) -> Any | None:
        """This kernel's params at its twin's fitted ``params`` (the special case), or None if they do not map.

        Default: ``params`` unchanged (the part is the twin's own); a kernel holding another
        overrides it.

        Args:
            params: the twin's params (this part's entry of them).

        Returns:
            the params, or None.
        """
        return params

    def renamed(self, name: str | None) -> "KernelSpec":
        """The same kernel under another name (None: its own); every spec dataclass has an ``alias`` field.

        Args:
            name: the new name, or None for the kernel's own.

        Returns:
            a copy of the spec.
        """
        return dataclasses.replace(self, alias=None if name is None else str(name))  # type: ignore[type-var]

    # -- values ------------------------------------------------------------------------------
    @abc.abstractmethod
    def check_params(self, params: Any) -> Any:
        """``params`` validated (``ValueError`` naming the problem) and normalised.

        Args:
            params: the kernel's params (its params object; a tuple for a sum).

        Returns:
            the normalised params.
        """

    @abc.abstractmethod
    def initial_params(self, n_players: int) -> Any:
        """The starting values of a cold fit (docs/math.md §3, §15).

        Args:
            n_players: the number of players p.

        Returns:
            the params.
        """

    def fallback_params(self, n_players: int) -> Any:
        """The values kept when a fit fails and nothing was fitted before (default: the initial ones).

        Args:
            n_players: the number of players p.

        Returns:
            the params.
        """
        return self.initial_params(n_players)

    def warm_params(self, params: Any | None, n_players: int) -> Any:
        """Starting values of a warm fit from ``params`` of a previous fit.

        ``params`` may come from another kernel of the same family; None: :meth:`initial_params`.

        Args:
            params: the previous params, or None.
            n_players: the number of players p.

        Returns:
            the params.
        """
        return self.initial_params(n_players) if params is None else self.check_params(params)

    def n_players(self, params: Any) -> int | None:
        """The number of players the params are for (None if they do not say).

        Args:
            params: the kernel's params.

        Returns:
            p, or None.
        """
        return None

    def is_zero(self, params: Any) -> bool:
        """True when ``params`` make the kernel identically zero (a sum then skips the part).

        Args:
            params: the kernel's params.

        Returns:
            whether the kernel is identically zero.
        """
        return False

    def describe(self, params: Any) -> dict[str, Any]:
        """The params as plain values, for ``info``.

        Args:
            params: the kernel's params.

        Returns:
            ``{name: value}``.
        """
        return {}

    @abc.abstractmethod
    def matrix(self, params: Any, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """``k(Z1, Z2)``: float64[m1, m2] for coalition matrices bool[m1, p], bool[m2, p].

        Args:
            params: the kernel's params.
            Z1: ``bool[m1, p]``.
            Z2: ``bool[m2, p]``.

        Returns:
            float64[m1, m2].
        """

    def diagonal(self, params: Any, Z: np.ndarray) -> np.ndarray:
        """``k(z, z)`` for every row of ``Z`` (bool[m, p]): float64[m].

        Args:
            params: the kernel's params.
            Z: ``bool[m, p]``.

        Returns:
            float64[m].
        """
        Z = np.asarray(Z, dtype=bool)
        return np.array([self.matrix(params, z[None, :], z[None, :])[0, 0] for z in Z], dtype=np.float64)

    def index_columns(self, params: Any, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """``B' k(., z)`` for every row z of ``Z``: float64[d, m], the prior Cov[I, f(z)].

        Default: dense, ``B'`` times the kernel over all 2^p coalitions (p <= :data:`DENSE_MAX_PLAYERS`).

        Args:
            params: the kernel's params.
            operator: the index operator ``B'`` (index, order, held-out empty coalition).
            Z: ``bool[m, p]``.

        Returns:
            float64[d, m].
        """
        B, every = _dense(self, operator)
        return B @ self.matrix(params, every, np.asarray(Z, dtype=bool).reshape(-1, operator.n_players))

    def index_covariance(self, params: Any, operator: IndexOperator) -> np.ndarray:
        """``B' K B'^T``: float64[d, d], the prior covariance of the index vector.

        Default: dense, over all 2^p coalitions (p <= :data:`DENSE_MAX_PLAYERS`).

        Args:
            params: the kernel's params.
            operator: the index operator ``B'``.

        Returns:
            float64[d, d].
        """
        B, every = _dense(self, operator)
        M = B @ self.matrix(params, every, every) @ B.T
        return 0.5 * (M + M.T)

    # -- fitting -----------------------------------------------------------------------------
    @abc.abstractmethod
    def fit_terms(self, X: np.ndarray) -> FitTerms:
        """This part's share of the MAP problem on archive ``X`` (bool[t, p]).

        Args:
            X: ``bool[t, p]``, the archive.

        Returns:
            the part's :class:`FitTerms`.
        """

    def n_params(self, X: np.ndarray) -> int:
        """Fitted hyperparameters on archive ``X`` (the BIC's count, docs/math.md §13).

        Args:
            X: ``bool[t, p]``, the archive.

        Returns:
            the count.
        """
        return int(sum(part.fit_terms(X).n_params for part in self.parts))


@lru_cache(maxsize=16)
def _dense_operator(index: Index, n_players: int, max_order: int, hold_out_empty: bool) -> np.ndarray:
    B = dense_index_operator(n_players, index, max_order)
    if hold_out_empty:  # B' = B - e 1_empty^T: the empty coalition (bit code 0) enters exactly
        B = B.copy()
        B[:, 0] = 0.0
    B.setflags(write=False)
    return B


def dense_index_matrix(operator: IndexOperator) -> np.ndarray:
    """The operator ``B'`` as a dense matrix over all 2^p coalitions (bit order, :func:`all_coalitions`).

    ``B`` from the index's definition (:func:`~shapleig.games.indices.dense_index_operator`), its
    empty-coalition column zero when the operator holds v(empty) out (docs/math.md §14.5). The dense
    fallback of the index products and the kernel contract (:mod:`shapleig.gp.kernels.contract`) use it.

    Args:
        operator: the index operator (p <= 12, the dense operators' limit).

    Returns:
        float64[d, 2^p], read-only (cached).
    """
    return _dense_operator(operator.spec, operator.n_players, operator.max_order, operator.hold_out_empty)


def _dense(spec: KernelSpec, operator: IndexOperator) -> tuple[np.ndarray, np.ndarray]:
    p = operator.n_players
    if p > DENSE_MAX_PLAYERS:
        raise ValueError(
            f"kernel {spec.name!r} ({type(spec).__name__}) has no closed-form index products, and the dense "
            f"fallback enumerates the 2^p coalitions (p <= {DENSE_MAX_PLAYERS}); got p = {p}. Implement "
            f"index_columns and index_covariance for it to use it at this p")
    return dense_index_matrix(operator), all_coalitions(p)


@dataclass(frozen=True)
class SumKernel(KernelSpec):
    """``k = k_1 + k_2 + ...`` (build it with ``+``). Params: a tuple aligned with :attr:`parts`.

    A part whose params make it identically zero (:meth:`KernelSpec.is_zero`, e.g. a size kernel
    whose jumps were not fitted) is skipped in every product.

    Attributes:
        kernels: the parts, in order (sums flatten).
        alias: the sum's name in results; None: the parts' names joined by "+".
    """

    kernels: tuple[KernelSpec, ...]
    alias: str | None = None

    def __post_init__(self) -> None:
        flat: list[KernelSpec] = []
        for k in self.kernels:
            if not isinstance(k, KernelSpec):
                raise TypeError(f"a kernel sum takes KernelSpec parts, got {type(k).__name__}")
            flat.extend(k.parts)
        if len(flat) < 2:
            raise ValueError("a kernel sum needs at least two parts")
        object.__setattr__(self, "kernels", tuple(flat))

    @property
    def name(self) -> str:
        """The name: ``alias``, else the parts' names joined by "+"."""
        return self.alias or "+".join(k.name for k in self.kernels)

    @property
    def parts(self) -> tuple[KernelSpec, ...]:
        """The additive parts."""
        return self.kernels

    @property
    def learned_noise(self) -> LearnedNoise | None:
        """The first part's learned noise, or None."""
        return next((noise for k in self.kernels if (noise := k.learned_noise) is not None), None)

    @property
    def per_player(self) -> bool:
        """Whether any part has one lengthscale per player."""
        return any(k.per_player for k in self.kernels)

    def from_twin(self, params: Any) -> tuple | None:
        """Each part's :meth:`KernelSpec.from_twin` of the twin's entry (None unless the twin has as many parts)."""
        previous = params if isinstance(params, tuple) else (params,)
        if len(previous) != len(self.kernels):
            return None
        out = tuple(k.from_twin(prm) for k, prm in zip(self.kernels, previous))
        return None if any(prm is None for prm in out) else out

    def _pairs(self, params: tuple) -> list[tuple[KernelSpec, Any]]:
        """The parts that contribute under ``params``, with their params."""
        return [(k, prm) for k, prm in zip(self.kernels, params) if not k.is_zero(prm)]

    def check_params(self, params: Any) -> tuple:
        """One params object per part, each checked by its part."""
        if not isinstance(params, (tuple, list)) or len(params) != len(self.kernels):
            raise ValueError(f"the params of {self.name!r} are a tuple of {len(self.kernels)} (one per part: "
                             f"{[k.name for k in self.kernels]}), got {params!r}")
        return tuple(k.check_params(prm) for k, prm in zip(self.kernels, params))

    def initial_params(self, n_players: int) -> tuple:
        """Each part's initial params."""
        return tuple(k.initial_params(n_players) for k in self.kernels)

    def fallback_params(self, n_players: int) -> tuple:
        """Each part's fallback params."""
        return tuple(k.fallback_params(n_players) for k in self.kernels)

    def warm_params(self, params: Any | None, n_players: int) -> tuple:
        # each part starts from the first part of the previous params of the same type (a plain
        # kernel's fit can start a sum's Hamming part), or from its initial values
        """Each part's warm start (from the matching entry of ``params``, or its initial values)."""
        previous = list(params) if isinstance(params, tuple) else ([] if params is None else [params])
        out = []
        for k in self.kernels:
            match = next((prm for prm in previous if isinstance(prm, type(k.initial_params(n_players)))), None)
            out.append(k.warm_params(match, n_players))
        return tuple(out)

    def n_players(self, params: tuple) -> int | None:
        """The players the parts' params agree on (None if none says)."""
        return next((n for k, prm in zip(self.kernels, params) if (n := k.n_players(prm)) is not None), None)

    def is_zero(self, params: tuple) -> bool:
        """True when every part is zero."""
        return not self._pairs(params)

    def describe(self, params: tuple) -> dict[str, Any]:
        """Each part's description, prefixed with its name."""
        out: dict[str, Any] = {}
        for k, prm in zip(self.kernels, params):
            out.update(k.describe(prm))
        return out

    def _total(self, params: tuple, product) -> np.ndarray | None:
        # the first term copied (a part may return a cached array), the rest added in place: a
        # kernel matrix at t = 10^4 is 800 MB, and ``total + term`` would hold three of them
        total = None
        for k, prm in self._pairs(params):
            term = product(k, prm)
            if total is None:
                total = np.array(term, dtype=np.float64)
            else:
                total += term
            del term
        return total

    def matrix(self, params: tuple, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """The sum of the non-zero parts' matrices."""
        K = self._total(params, lambda k, prm: k.matrix(prm, Z1, Z2))
        return K if K is not None else np.zeros((np.shape(Z1)[0], np.shape(Z2)[0]))

    def diagonal(self, params: tuple, Z: np.ndarray) -> np.ndarray:
        """The sum of the parts' diagonals."""
        d = self._total(params, lambda k, prm: k.diagonal(prm, Z))
        return d if d is not None else np.zeros(np.shape(Z)[0])

    def index_columns(self, params: tuple, operator: IndexOperator, Z: np.ndarray) -> np.ndarray:
        """The sum of the parts' index columns."""
        cols = self._total(params, lambda k, prm: k.index_columns(prm, operator, Z))
        return cols if cols is not None else np.zeros((operator.n_terms, np.shape(Z)[0]))

    def index_covariance(self, params: tuple, operator: IndexOperator) -> np.ndarray:
        """The sum of the parts' index covariances."""
        pairs = self._pairs(params)
        M = self._total(params, lambda k, prm: k.index_covariance(prm, operator))
        if M is None:
            return np.zeros((operator.n_terms,) * 2)
        return 0.5 * (M + M.T) if len(pairs) > 1 else M

    def fit_terms(self, X: np.ndarray) -> FitTerms:
        """The parts' fit terms, concatenated (:class:`SumTerms`)."""
        raise TypeError("a kernel sum has no fit terms of its own: the MAP problem takes each part's (parts)")

    def n_params(self, X: np.ndarray) -> int:
        """The parts' fitted hyperparameters, summed."""
        return int(sum(k.n_params(X) for k in self.kernels))
