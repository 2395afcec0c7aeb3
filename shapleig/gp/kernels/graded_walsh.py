"""The graded kernel's products from the order-k (Walsh) parts of the Hamming kernel (docs/math.md §16).

The graded kernel gives orders 1..K (K <= 3) their own variance factors g_k and every higher order a
common ``g_tail`` (1: the Hamming tail; ``g_tail = g_K``: the last factor continues):

    K_g = g_tail K + (1 - g_tail) K^(0) + sum_{k=1..K} (g_k - g_tail) K^(k),

so g = 1 is the Hamming kernel. Its values, diagonal, likelihood contraction and index products are
the Hamming products of :mod:`shapleig.gp.index_esp` plus the order-k parts of
:mod:`shapleig.gp.walsh` (same numerical route, every ESP of degree <= 3).
"""

from __future__ import annotations

import numpy as np

from shapleig.gp.esp import _as_bool, _positive_esp_rows, hamming_kernel
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.walsh import (
    MAX_ORDER,
    _as_operator,
    _mismatch_contraction,
    order_index_columns,
    order_index_covariance,
    order_kernel_rho_vjp,
    order_kernels,
    walsh_coordinates,
    walsh_coordinates_derivatives,
)


def _check_g(g, g_tail: float) -> tuple[np.ndarray, float]:
    g = np.atleast_1d(np.asarray(g, dtype=np.float64))
    if g.ndim != 1 or not 1 <= g.shape[0] <= MAX_ORDER:
        raise ValueError(f"g must hold the variance factors of orders 1..K, K <= {MAX_ORDER}, got shape {g.shape}")
    if not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f"g must be finite and non-negative, got {g}")
    g_tail = float(g_tail)
    if not np.isfinite(g_tail) or g_tail < 0:
        raise ValueError(f"g_tail must be finite and non-negative, got {g_tail}")
    return g, g_tail


def graded_kernel(Z1: np.ndarray, Z2: np.ndarray, lengthscales: np.ndarray, outputscale: float, g,
                  g_tail: float = 1.0) -> np.ndarray:
    """The graded kernel ``K_g(Z1, Z2)``: float64[m1, m2].

    ``g_tail K + (1 - g_tail) K^(0) + sum_{k=1..K} (g_k - g_tail) K^(k)`` with K the Hamming kernel of
    ``lengthscales`` (float64[p]) and ``outputscale``; ``g`` float64[K] (K <= 3) the variance factors
    of orders 1..K, ``g_tail`` that of every order above K (order 0 keeps 1).

    Args:
        Z1: ``bool[m1, p]``.
        Z2: ``bool[m2, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        g: float64[K] (K <= 3), the variance factors of orders 1..K.
        g_tail: the variance factor of every order above K (1: the Hamming tail).

    Returns:
        float64[m1, m2].

    Examples:
        >>> Z = np.array([[0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=bool)
        >>> ls = np.full(4, 0.7)
        >>> bool(np.allclose(graded_kernel(Z, Z, ls, 1.5, [1, 1, 1]), hamming_kernel(Z, Z, ls, 1.5)))
        True
    """
    g, g_tail = _check_g(g, g_tail)
    rho, kappa = walsh_coordinates(lengthscales, outputscale)
    K = g_tail * hamming_kernel(Z1, Z2, lengthscales, outputscale) + (1.0 - g_tail) * kappa
    parts = order_kernels(Z1, Z2, rho, kappa, tuple(range(1, g.shape[0] + 1)))
    return K + np.tensordot(g - g_tail, parts, axes=1)


def graded_kernel_vjp(W: np.ndarray, Z1: np.ndarray, Z2: np.ndarray, lengthscales: np.ndarray,
                      outputscale: float, g, g_tail: float = 1.0) -> dict[str, np.ndarray | float]:
    """``sum_ab W_ab d K_g(Z1, Z2)_ab / d theta`` for every hyperparameter theta of :func:`graded_kernel`.

    What a marginal-likelihood gradient needs (``W = (alpha alpha^T - K^-1) / 2``), in O(m1 m2 p):

    - ``"g"`` float64[K]: ``sum W K^(k)``; ``"g_tail"``: ``sum W (K - K^(0) - sum_{k<=K} K^(k))``;
    - ``"outputscale"``: ``sum W K_g / s`` (every part is proportional to s);
    - ``"lengthscales"`` float64[p]: the Hamming part ``g_tail sum W K [z_j != z'_j] / (p l_j^2)`` plus
      the Walsh parts through rho_j (:func:`order_kernel_rho_vjp`) and ``d log kappa / d rho_j =
      -1/(1 + rho_j)``, times ``d rho_j / d l_j`` (:func:`walsh_coordinates_derivatives`).

    Args:
        W: float64[m1, m2] weights.
        Z1: ``bool[m1, p]``.
        Z2: ``bool[m2, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        g: float64[K] (K <= 3), the variance factors of orders 1..K.
        g_tail: the variance factor of every order above K (1: the Hamming tail).

    Returns:
        ``{"g", "g_tail", "outputscale", "lengthscales"}``: each hyperparameter's contraction.
    """
    g, g_tail = _check_g(g, g_tail)
    ls = np.asarray(lengthscales, dtype=np.float64)
    s = float(outputscale)
    rho, kappa = walsh_coordinates(ls, s)
    p = rho.shape[0]
    z1, z2 = _as_bool(Z1, p, "Z1"), _as_bool(Z2, p, "Z2")
    W = np.asarray(W, dtype=np.float64)
    if W.shape != (z1.shape[0], z2.shape[0]):
        raise ValueError(f"W must have shape {(z1.shape[0], z2.shape[0])}, got {W.shape}")
    K = g.shape[0]
    ham = hamming_kernel(z1, z2, ls, s)
    parts = order_kernels(z1, z2, rho, kappa, tuple(range(K + 1)))  # orders 0..K
    wparts = np.einsum("ab,kab->k", W, parts)
    w_ham = float(np.sum(W * ham))
    total = g_tail * w_ham + (1.0 - g_tail) * wparts[0] + float(np.dot(g - g_tail, wparts[1:]))
    drho, _ = walsh_coordinates_derivatives(ls, s)
    d_rho = (1.0 - g_tail) * wparts[0] * (-1.0 / (1.0 + rho))  # order 0 is kappa alone
    for k in range(1, K + 1):
        if g[k - 1] != g_tail:
            d_rho = d_rho + (g[k - 1] - g_tail) * (order_kernel_rho_vjp(W, z1, z2, rho, kappa, k)
                                                   - wparts[k] / (1.0 + rho))
    d_ham = g_tail * _mismatch_contraction(W * ham, z1, z2) / (p * ls**2)
    return {"lengthscales": d_ham + d_rho * drho, "outputscale": total / s, "g": wparts[1:].copy(),
            "g_tail": w_ham - float(wparts.sum())}


def graded_diagonal(lengthscales: np.ndarray, outputscale: float, g, g_tail: float = 1.0) -> float:
    """``k_g(z, z)``, the same for every coalition.

    ``g_tail s + (1 - g_tail) kappa + sum_k (g_k - g_tail) kappa e_k(rho)`` (positive ESPs). The
    prior variance of f(z); not the outputscale unless g = 1.

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        g: float64[K] (K <= 3), the variance factors of orders 1..K.
        g_tail: the variance factor of every order above K (1: the Hamming tail).

    Returns:
        the prior variance ``k_g(z, z)`` (the same for every z).
    """
    g, g_tail = _check_g(g, g_tail)
    rho, kappa = walsh_coordinates(lengthscales, outputscale)
    e = _positive_esp_rows(rho[None, :], g.shape[0])[0]
    return float(g_tail * float(outputscale) + (1.0 - g_tail) * kappa + kappa * np.dot(g - g_tail, e[1:]))


def graded_index_columns(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float, g,
                         operator: IndexOperator | str = "SV", g_tail: float = 1.0,
                         size_kernel: np.ndarray | None = None) -> np.ndarray:
    """``B K_g(., z)`` for every row z of ``Z`` (bool[m, p]): float64[d, m].

    The Hamming columns of ``operator`` (:meth:`IndexOperator.hamming_columns`, which also adds the
    size kernel's ``beta size_kernel[:, |z|]``) times ``g_tail`` plus ``(g_k - g_tail) B K^(k)(., z)``; an
    operator holding the empty coalition out (docs/math.md §14.5) subtracts ``e k_g(empty, z)``.

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        g: float64[K] (K <= 3), the variance factors of orders 1..K.
        operator: the index operator, or an index name (``"SV"`` by default).
        g_tail: the variance factor of every order above K (1: the Hamming tail).
        size_kernel: float64[p+1, p+1] size kernel over coalition sizes
            (:func:`~shapleig.gp.kernels.size.size_kernel_matrix`), or None.

    Returns:
        float64[d, m].
    """
    g, g_tail = _check_g(g, g_tail)
    ls = np.asarray(lengthscales, dtype=np.float64)
    operator = _as_operator(operator, ls.shape[0])
    rho, kappa = walsh_coordinates(ls, outputscale)
    base = operator.without_hold_out()
    cols = g_tail * base.hamming_columns(Z, ls, outputscale)
    for k in range(1, g.shape[0] + 1):
        if g[k - 1] != g_tail:
            cols = cols + (g[k - 1] - g_tail) * order_index_columns(Z, rho, kappa, k, base)
    if operator.hold_out_empty:
        empty = np.zeros((1, operator.n_players), dtype=bool)
        cols = operator.held_out_columns(cols, graded_kernel(empty, Z, ls, outputscale, g, g_tail)[0])
    if size_kernel is not None:
        cols = cols + operator.size_columns(Z, size_kernel)
    return cols


def graded_index_covariance(lengthscales: np.ndarray, outputscale: float, g,
                            operator: IndexOperator | str = "SV", g_tail: float = 1.0,
                            size_kernel: np.ndarray | None = None) -> np.ndarray:
    """``B K_g B^T``: float64[d, d].

    ``size_kernel`` adds ``beta size_kernel beta^T``; a held-out empty coalition as in
    :meth:`IndexOperator.hamming_covariance`, with the graded kernel.

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        g: float64[K] (K <= 3), the variance factors of orders 1..K.
        operator: the index operator, or an index name (``"SV"`` by default).
        g_tail: the variance factor of every order above K (1: the Hamming tail).
        size_kernel: float64[p+1, p+1] size kernel over coalition sizes
            (:func:`~shapleig.gp.kernels.size.size_kernel_matrix`), or None.

    Returns:
        float64[d, d].
    """
    g, g_tail = _check_g(g, g_tail)
    ls = np.asarray(lengthscales, dtype=np.float64)
    operator = _as_operator(operator, ls.shape[0])
    rho, kappa = walsh_coordinates(ls, outputscale)
    base = operator.without_hold_out()
    M = g_tail * base.hamming_covariance(ls, outputscale)
    for k in range(1, g.shape[0] + 1):
        if g[k - 1] != g_tail:
            M = M + (g[k - 1] - g_tail) * order_index_covariance(rho, kappa, k, base)
    if operator.hold_out_empty:
        e = operator.empty_column()
        empty = np.zeros((1, operator.n_players), dtype=bool)
        u = graded_index_columns(empty, ls, outputscale, g, base, g_tail)[:, 0]
        M = M - np.outer(e, u) - np.outer(u, e) + graded_diagonal(ls, outputscale, g, g_tail) * np.outer(e, e)
    if size_kernel is not None:
        M = M + operator.size_covariance(size_kernel)
    return 0.5 * (M + M.T)



__all__ = ["graded_diagonal", "graded_index_columns", "graded_index_covariance", "graded_kernel", "graded_kernel_vjp"]
