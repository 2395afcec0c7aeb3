"""Fast products of index operators B with the Hamming kernel: ``B k(., Z)`` and ``B K B^T`` (docs/math.md §14).

:class:`IndexOperator` is what the kernel specs (:mod:`shapleig.gp.kernels`) need from an index to
give :class:`~shapleig.gp.posterior.ShapleyPosterior` its products: the ``terms``, the Hamming
kernel's columns ``B k(., z)`` (float64[d, m], :meth:`IndexOperator.hamming_columns`) and prior
covariance ``B K B^T`` (float64[d, d], :meth:`IndexOperator.hamming_covariance`), both in
polynomial time and never through a ``2^p`` object; the size kernel's through the size
coefficients (:meth:`IndexOperator.size_columns`, :meth:`IndexOperator.size_covariance`); and the
hold-out of the empty coalition for any kernel (:meth:`IndexOperator.held_out_columns`,
:meth:`IndexOperator.held_out_covariance`).

Which route an index takes is its record's ``fast_path`` (:class:`shapleig.games.indices.Index`):

- ``"shapley"`` (SV) delegates to :mod:`shapleig.gp.esp` (the existing, tested routes).
- ``"banzhaf"`` (BV) has closed forms: uniform weights make the derivative sums plain products, and
  the prior covariance is diagonal (docs/math.md §14.2).
- ``"weights"`` (the interaction indices at any order k, and any registered index) uses the
  size-weighted derivative form of :mod:`shapleig.games.indices`, reading only the record's k
  weight vectors (:mod:`shapleig.gp.index_generic`): columns by holding the players of each term out
  of the kernel's product (O(d p) per coalition for d terms), the covariance by the parity route
  generalised to any size weights (docs/math.md §14.3), whose per-size coefficients are exact
  rational sums.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb

import numpy as np

from shapleig.games.indices import Index, check_index, get_index, index_terms
from shapleig.gp.esp import (
    _as_bool,
    hamming_kernel,
    kernel_factors,
    prior_shapley_covariance,
    shapley_kernel_columns,
)
from shapleig.gp.index_generic import (
    MAX_GENERIC_PLAYERS,
    generic_kernel_columns,
    generic_prior_covariance,
    parity_coefficients,
)


class IndexOperator:
    """The linear map from a game to ``index`` values at ``max_order`` for ``n_players`` players.

    ``terms``: list of player tuples (singletons, then pairs, ..., up to ``max_order``, each order in
    lexicographic order); ``d = len(terms)``.

    ``hold_out_empty``: the operator B' = B minus its column of the empty coalition, whose value is
    known exactly once evaluated (docs/math.md §14.5): the GP then models the game on non-empty
    coalitions only, and ``I = B' f + empty_column() v(empty)``.

    Args:
        n_players: the number of players p (>= 1).
        index: an index name or :class:`~shapleig.games.indices.Index` record (``"SV"`` by default).
        max_order: the interaction order; None: the index's own.
        hold_out_empty: hold v(empty) out of the operator (B' = B without its empty column).
    """

    def __init__(self, n_players: int, index: str | Index = "SV", max_order: int | None = None, *,
                 hold_out_empty: bool = False) -> None:
        self.index, self.max_order = check_index(index, max_order)
        self.spec = get_index(index)  # the record: weights, fast path
        self.hold_out_empty = bool(hold_out_empty)
        self.n_players = int(n_players)
        if self.n_players < 1:
            raise ValueError(f"n_players must be >= 1, got {n_players}")
        if self.spec.fast_path == "weights" and self.n_players > MAX_GENERIC_PLAYERS:
            raise ValueError(f"index {self.index!r} is supported for p <= {MAX_GENERIC_PLAYERS}, got {self.n_players}")
        if self.max_order > self.n_players:
            raise ValueError(f"index {self.index!r} of order {self.max_order} needs at least {self.max_order} "
                             f"players, got p = {self.n_players}")
        self.terms = index_terms(self.n_players, self.spec, self.max_order)
        self._beta: np.ndarray | None = None

    @property
    def n_terms(self) -> int:
        """The number of terms d."""
        return len(self.terms)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexOperator):
            return NotImplemented
        return self._key() == other._key()

    def _key(self) -> tuple:
        return (self.spec, self.max_order, self.n_players, self.hold_out_empty)

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        held = ", hold_out_empty=True" if self.hold_out_empty else ""
        return f"IndexOperator(n_players={self.n_players}, index={self.index!r}, max_order={self.max_order}{held})"

    def without_hold_out(self) -> IndexOperator:
        """The same index and order with v(empty) inside the operator (B rather than B').

        Returns:
            this operator, or a copy without the hold-out.
        """
        if not self.hold_out_empty:
            return self
        return IndexOperator(self.n_players, self.spec, self.max_order)

    def empty_column(self) -> np.ndarray:
        """``B[:, empty]``, float64[d]: the coefficient of v(empty) in each term, ``(-1)^|T| w_|T|(0)``.

        Returns:
            float64[d].
        """
        weights = self.spec.exact_weights(self.n_players, self.max_order)
        at_zero = np.array([(-1) ** t * float(w[0]) for t, w in enumerate(weights, start=1)])
        return at_zero[np.array([len(T) for T in self.terms]) - 1]

    def size_coefficients(self) -> np.ndarray:
        """``beta``, float64[d, p+1].

        Term T of the index of any game h(|S|) that depends on the size alone is ``beta[T] @ h``
        (docs/math.md §15). Row T is
        ``beta_t(m) = sum_{k + l = m} C(p-t, k) w_t(k) (-1)^(t-l) C(t, l)`` (t = |T|), summed
        exactly; with ``hold_out_empty`` the entry of size 0 (the empty coalition's column) is 0.

        Returns:
            float64[d, p+1].
        """
        if self._beta is None:
            self._beta = _size_coefficients(self.spec, self.n_players, self.max_order, self.hold_out_empty)
        return self._beta

    def hamming_columns(self, Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
        """``B' k(., z)`` of the Hamming kernel for every row z of ``Z`` (bool[m, p]).

        float64[d, m], the prior Cov[I, f(z)] (``B' = B`` unless the operator holds v(empty) out).

        Args:
            Z: ``bool[m, p]``.
            lengthscales: float64[p] lengthscales.
            outputscale: the outputscale s.

        Returns:
            float64[d, m].
        """
        cols = self._base_columns(Z, lengthscales, outputscale)
        if self.hold_out_empty:
            empty = np.zeros((1, self.n_players), dtype=bool)
            cols = self.held_out_columns(cols, hamming_kernel(empty, Z, lengthscales, outputscale)[0])
        return cols

    def hamming_covariance(self, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
        """``B' K B'^T`` of the Hamming kernel: float64[d, d], the prior covariance of the index vector.

        Args:
            lengthscales: float64[p] lengthscales.
            outputscale: the outputscale s.

        Returns:
            float64[d, d].
        """
        M = self._base_covariance(lengthscales, outputscale)
        if self.hold_out_empty:
            u = self._base_columns(np.zeros((1, self.n_players), dtype=bool), lengthscales, outputscale)[:, 0]
            M = self.held_out_covariance(M, u, float(outputscale))
        return M

    def held_out_columns(self, cols: np.ndarray, k_empty: np.ndarray) -> np.ndarray:
        """``B' k(., z) = B k(., z) - e k(empty, z)`` from a kernel's ``B k(., Z)`` and ``k(empty, Z)``.

        docs/math.md §14.5.

        Args:
            cols: float64[d, m], a kernel's ``B k(., Z)``.
            k_empty: float64[m], ``k(empty, Z)``.

        Returns:
            float64[d, m].
        """
        return cols - np.outer(self.empty_column(), k_empty)

    def held_out_covariance(self, M: np.ndarray, u: np.ndarray, k_empty_empty: float) -> np.ndarray:
        """``B' K B'^T = M - e u^T - u e^T + k(empty, empty) e e^T``, symmetrised.

        From a kernel's ``M = B K B^T`` and ``u = B k(., empty)`` (docs/math.md §14.5).

        Args:
            M: float64[d, d], a kernel's ``B K B^T``.
            u: float64[d], ``B k(., empty)``.
            k_empty_empty: ``k(empty, empty)``.

        Returns:
            float64[d, d].
        """
        e = self.empty_column()
        M = M - np.outer(e, u) - np.outer(u, e) + k_empty_empty * np.outer(e, e)
        return 0.5 * (M + M.T)

    def size_columns(self, Z: np.ndarray, size_kernel: np.ndarray) -> np.ndarray:
        """``B' k_size(., z)`` for every row z of ``Z``.

        float64[d, m], from the size kernel over sizes 0..p (float64[p+1, p+1], docs/math.md §15):
        ``beta @ size_kernel[:, |z|]``.

        Args:
            Z: ``bool[m, p]``.
            size_kernel: float64[p+1, p+1], the size kernel over sizes 0..p.

        Returns:
            float64[d, m].
        """
        sizes = np.asarray(Z, dtype=bool).reshape(-1, self.n_players).sum(axis=1)
        return (self.size_coefficients() @ size_kernel)[:, sizes]

    def size_covariance(self, size_kernel: np.ndarray) -> np.ndarray:
        """``B' K_size B'^T = beta size_kernel beta^T``: float64[d, d] (docs/math.md §15).

        Args:
            size_kernel: float64[p+1, p+1], the size kernel over sizes 0..p.

        Returns:
            float64[d, d].
        """
        beta = self.size_coefficients()
        return beta @ size_kernel @ beta.T

    def _base_columns(self, Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
        if self.spec.fast_path == "shapley":
            return shapley_kernel_columns(Z, lengthscales, outputscale)
        if self.spec.fast_path == "banzhaf":
            return banzhaf_kernel_columns(Z, lengthscales, outputscale)
        return generic_kernel_columns(Z, lengthscales, outputscale, self.spec, self.max_order)

    def _base_covariance(self, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
        if self.spec.fast_path == "shapley":
            return prior_shapley_covariance(lengthscales, outputscale)
        if self.spec.fast_path == "banzhaf":
            return prior_banzhaf_covariance(lengthscales, outputscale)
        return generic_prior_covariance(lengthscales, outputscale, self.spec, self.max_order)


@lru_cache(maxsize=64)
def _size_coefficients(index: Index, p: int, k: int, hold_out_empty: bool) -> np.ndarray:
    rows = []
    for t, w in enumerate(index.exact_weights(p, k), start=1):
        beta = [Fraction(0)] * (p + 1)
        for m in range(p - t + 1):
            for l in range(t + 1):
                beta[m + l] += comb(p - t, m) * w[m] * (-1) ** (t - l) * comb(t, l)
        if hold_out_empty:
            beta[0] = Fraction(0)
        rows.append(np.array([float(b) for b in beta]))
    out = np.array([rows[len(T) - 1] for T in index_terms(p, index, k)])
    out.setflags(write=False)
    return out


def shapley_operator_for(n_players: int) -> IndexOperator:
    """The Shapley-value operator (the default everywhere).

    Args:
        n_players: the number of players p.

    Returns:
        the Shapley :class:`IndexOperator`.
    """
    return IndexOperator(n_players, "SV")


def as_operator(operator: IndexOperator | None, n_players: int) -> IndexOperator:
    """``operator``, or the Shapley operator for ``None``; checks the number of players.

    Args:
        operator: an operator, or None for the Shapley value.
        n_players: the number of players p the operator must be for.

    Returns:
        the operator.
    """
    if operator is None:
        return shapley_operator_for(n_players)
    if not isinstance(operator, IndexOperator):
        raise TypeError(f"operator must be an IndexOperator, got {type(operator).__name__}")
    if operator.n_players != n_players:
        raise ValueError(f"operator is for {operator.n_players} players, the kernel for {n_players}")
    return operator


# -- Banzhaf: closed forms ------------------------------------------------------------------------

def banzhaf_kernel_columns(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """``[B k(., z)]_i = s sign_i(z) (1 - b_i) prod_{r != i} (1 + b_r)/2``: float64[p, m] (docs/math.md §14.2).

    ``sign_i(z) = +1`` if i is in z, else -1. O(p) per coalition, any p.

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, m].
    """
    kf = kernel_factors(lengthscales, outputscale)
    z = _as_bool(Z, kf.n_players)
    log_half = kf.log_half_one_plus_b
    mag = kf.outputscale * kf.one_minus_b * np.exp(log_half.sum() - log_half)  # float64[p]
    return np.where(z, mag[None, :], -mag[None, :]).T


def prior_banzhaf_covariance(lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """``B K B^T = diag(4 kappa rho_i)``, ``kappa = s prod (1+b)/2`` (docs/math.md §14.2): float64[p, p].

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, p].
    """
    kf = kernel_factors(lengthscales, outputscale)
    kappa = np.exp(np.log(kf.outputscale) + kf.log_half_one_plus_b.sum())
    return np.diag(4.0 * kappa * kf.rho)


__all__ = [
    "MAX_GENERIC_PLAYERS", "IndexOperator", "as_operator", "banzhaf_kernel_columns", "generic_kernel_columns",
    "generic_prior_covariance", "parity_coefficients", "prior_banzhaf_covariance", "shapley_operator_for",
]
