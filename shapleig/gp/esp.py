"""Generating-polynomial (ESP) products of the Shapley operator A with the Hamming kernel.

All routines are float64 and never form a ``2^p`` object (docs/math.md §3-§5):

- :func:`hamming_kernel` -- ``k(z, z') = s exp(-(1/p) sum_j [z_j != z'_j] / l_j)``, botorch's
  ``ScaleKernel(CategoricalKernel(ard_num_dims=p))``.
- :func:`shapley_kernel_columns` -- the columns ``A k(., z)`` (docs/math.md §4), O(p^2) per coalition.
- :func:`prior_shapley_covariance` -- ``M = A K A^T`` by the parity route (docs/math.md §5), O(p^3).

Cross-check routes (same quantities, independent algebra) are public too:
:func:`shapley_kernel_columns_reference` (prefix/suffix convolution, O(p^3) per coalition),
:func:`shapley_kernel_columns_integral` (Owen's multilinear integral, Gauss-Legendre) and
:func:`prior_shapley_covariance_bivariate` (bivariate generating function, O(p^4)).

Factorised kernel: with ``alpha = s^(1/p)``, ``b_j = exp(-1/(p l_j))`` and ``beta_j = alpha b_j``,
``k(z, z') = prod_j (alpha if z_j == z'_j else beta_j)``. The routines factor ``alpha`` out of
every table (so all per-player factors are ``1`` or ``b_j``) and put ``s = alpha^p`` back at the
end. Every fold is max-normalised and its log-scale carried separately, so tables neither
overflow nor underflow at large p.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from shapleig.games.exact import shapley_weights

# Rows of coalitions handled per vectorised chunk in the column routines: the O(p^2) route stores
# one (p+1)-vector per player per coalition, so the chunk shrinks with p to bound memory (~32 MB).
_CHUNK_ELEMENTS = 1 << 22
_MAX_CHUNK = 1024
# Folds between max-normalisations in the O(p^2) column route (see _columns_fold).
_RENORM_EVERY = 16


@dataclass(frozen=True, eq=False)
class KernelFactors:
    """Per-player factors of the Hamming kernel (docs/math.md §3). Arrays are float64[p].

    ``one_minus_b`` and ``rho`` are computed directly to avoid cancellation.

    Attributes:
        n_players: the number of players p.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        alpha: ``s^(1/p)``.
        b: ``exp(-1/(p l))``, float64[p].
        beta: ``alpha b``, float64[p].
        one_minus_b: ``1 - b``, float64[p], computed directly.
        rho: ``(1-b)/(1+b) = tanh(1/(2 p l))``, float64[p].
        log_half_one_plus_b: ``log((1+b)/2)``, float64[p].
    """

    n_players: int
    lengthscales: np.ndarray
    outputscale: float
    alpha: float
    b: np.ndarray
    beta: np.ndarray
    one_minus_b: np.ndarray
    rho: np.ndarray
    log_half_one_plus_b: np.ndarray


def _check_hyper(lengthscales: np.ndarray, outputscale: float) -> tuple[np.ndarray, float]:
    lengthscales = np.asarray(lengthscales, dtype=np.float64)
    if lengthscales.ndim != 1 or lengthscales.shape[0] < 1:
        raise ValueError(f"lengthscales must be a non-empty float vector of shape (p,), got {lengthscales.shape}")
    if not np.all(np.isfinite(lengthscales)) or np.any(lengthscales <= 0):
        raise ValueError(f"lengthscales must be finite and positive, got {lengthscales}")
    outputscale = float(outputscale)
    if not np.isfinite(outputscale) or outputscale <= 0:
        raise ValueError(f"outputscale must be finite and positive, got {outputscale}")
    return lengthscales, outputscale


def kernel_factors(lengthscales: np.ndarray, outputscale: float) -> KernelFactors:
    """Factorised Hamming kernel for ARD ``lengthscales`` (float64[p]) and ``outputscale`` s.

    Args:
        lengthscales: float64[p] lengthscales (positive, finite).
        outputscale: the outputscale s (positive, finite).

    Returns:
        the :class:`KernelFactors`.
    """
    lengthscales, s = _check_hyper(lengthscales, outputscale)
    p = lengthscales.shape[0]
    x = 1.0 / (p * lengthscales)
    b = np.exp(-x)
    one_minus_b = -np.expm1(-x)
    alpha = s ** (1.0 / p)
    return KernelFactors(
        n_players=p,
        lengthscales=lengthscales,
        outputscale=s,
        alpha=alpha,
        b=b,
        beta=alpha * b,
        one_minus_b=one_minus_b,
        rho=np.tanh(0.5 * x),
        log_half_one_plus_b=np.log1p(-0.5 * one_minus_b),
    )


def _as_bool(Z: np.ndarray, p: int, name: str = "Z") -> np.ndarray:
    z = np.asarray(Z)
    if z.ndim == 1 and z.shape[0] == p:
        z = z[None, :]
    if z.ndim != 2 or z.shape[1] != p:
        raise ValueError(f"{name} must have shape (m, {p}), got {z.shape}")
    if z.dtype != np.bool_:
        if z.size and not np.isin(z, (0, 1)).all():
            raise ValueError(f"{name} must be a bool (or 0/1) coalition matrix")
        z = z.astype(bool)
    return z


def _positive_esp_rows(x: np.ndarray, kmax: int) -> np.ndarray:
    """``e_0..e_kmax`` of every row of non-negative ``x`` (float64[n, p]): float64[n, kmax+1].

    Folded player by player (positive terms only, no cancellation).
    """
    E = np.zeros((x.shape[0], kmax + 1))
    E[:, 0] = 1.0
    for r in range(x.shape[1]):
        E[:, 1:] = E[:, 1:] + x[:, r, None] * E[:, :-1]
    return E


def hamming_kernel(Z1: np.ndarray, Z2: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """Kernel matrix ``float64[m1, m2]``, ``k(z, z') = s exp(-(1/p) sum_j [z_j != z'_j] / l_j)``.

    Args:
        Z1: ``bool[m1, p]``.
        Z2: ``bool[m2, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[m1, m2].
    """
    lengthscales, s = _check_hyper(lengthscales, outputscale)
    p = lengthscales.shape[0]
    z1 = _as_bool(Z1, p, "Z1").astype(np.float64)
    z2 = _as_bool(Z2, p, "Z2").astype(np.float64)
    w = 1.0 / (p * lengthscales)
    # in place past the first product: at t = 10^4 every m1 x m2 temporary is 800 MB (same operations, same bits)
    if is_shared(lengthscales):
        # Integer mismatch counts |z1| + |z2| - 2 z1.z2 are exact in float64: one product, not two.
        g = z1 @ z2.T
        g *= 2.0
        d = z1.sum(axis=1)[:, None] + z2.sum(axis=1)[None, :]
        d -= g
        del g
        d *= -w[0]
    else:
        # Weighted mismatch count as two non-negative products (no cancellation): in z1 only + in z2 only.
        d = (z1 * w) @ (1.0 - z2).T
        d += ((1.0 - z1) * w) @ z2.T
        np.negative(d, out=d)
    np.exp(d, out=d)
    d *= s
    return d


def _chunks(m: int, p: int) -> tuple[range, int]:
    size = int(max(1, min(_MAX_CHUNK, _CHUNK_ELEMENTS // ((p + 1) * (p + 1)))))
    return range(0, m, size), size


def _gamma_delta(z: np.ndarray, kf: KernelFactors) -> tuple[np.ndarray, np.ndarray]:
    """Alpha-free factors for S_r = 0 (gamma) and S_r = 1 (delta): 1 where S_r agrees with z_r, else b_r."""
    b = kf.b[None, :]
    gamma = np.where(z, b, 1.0)
    delta = np.where(z, 1.0, b)
    return gamma, delta


def _rescaled(table: np.ndarray) -> tuple[np.ndarray, float]:
    """``(table / max|table|, log max|table|)``; an all-zero table is left as is (log-scale 0)."""
    mx = float(np.max(np.abs(table)))
    mx = mx if mx > 0 else 1.0
    return table / mx, float(np.log(mx))


def _normalise_rows(table: np.ndarray, logscale: np.ndarray) -> None:
    """Divide each row by its max-abs entry in place and add log(max) to ``logscale`` (rows)."""
    mx = np.max(np.abs(table), axis=1)
    mx = np.where(mx > 0, mx, 1.0)
    table /= mx[:, None]
    logscale += np.log(mx)


def _columns_fold(z: np.ndarray, kf: KernelFactors) -> np.ndarray:
    """O(p^2)-per-coalition route for one chunk: ``float64[p, m]`` (docs/math.md §4, 'O(p^2) variant').

    Tables are stored degree-major (``[a, coalition]``) and only their live degrees are touched:
    the prefix P_j has degrees 0..j and the suffix contraction h_{j+1} is read at degrees 0..j.
    """
    m, p = z.shape
    gamma, delta = _gamma_delta(z, kf)
    gamma, delta = np.ascontiguousarray(gamma.T), np.ascontiguousarray(delta.T)  # (p, m)
    omega = shapley_weights(p)  # omega[p] = 0
    # Suffix contractions h_r[a] = sum_k Q_r[k] omega(a+k), Q_r = prod_{q>=r}(gamma_q + delta_q x),
    # needed at a = 0..r-1. Every fold keeps the max within a factor 2 up / p down (one of
    # gamma, delta is 1; adjacent Shapley weights differ by < p), so renormalising every
    # _RENORM_EVERY folds is as safe as every fold.
    H = np.empty((p + 1, p + 1, m))
    Hs = np.empty((p + 1, m))
    H[p, :p] = (omega[:p] * p)[:, None]  # max of omega is 1/p
    Hs[p] = -np.log(p)
    for r in range(p - 1, 0, -1):
        h = H[r, :r]
        np.multiply(gamma[r], H[r + 1, :r], out=h)
        h += delta[r] * H[r + 1, 1 : r + 1]
        Hs[r] = Hs[r + 1]
        if (p - r) % _RENORM_EVERY == 0:
            _normalise_cols(h, Hs[r])
    out = np.empty((p, m))
    P = np.zeros((p + 1, m))
    P[0] = 1.0
    Ps = np.zeros(m)
    for j in range(p):
        g = np.einsum("am,am->m", P[: j + 1], H[j + 1, : j + 1])
        out[j] = g * np.exp(Ps + Hs[j + 1])
        if j < p - 1:
            # P_{j+1} = P_j * (gamma_j + delta_j x), degrees 0..j+1; update from the top down.
            P[j + 1] = delta[j] * P[j]
            if j > 0:
                top = delta[j] * P[: j]
                P[1 : j + 1] *= gamma[j]
                P[1 : j + 1] += top
            P[0] *= gamma[j]
            if (j + 1) % _RENORM_EVERY == 0:
                _normalise_cols(P[: j + 2], Ps)
    sign = np.where(z.T, 1.0, -1.0)
    return sign * (kf.outputscale * kf.one_minus_b)[:, None] * out


def _normalise_cols(table: np.ndarray, logscale: np.ndarray) -> None:
    """Divide each column by its max-abs entry in place and add log(max) to ``logscale``."""
    mx = np.max(np.abs(table), axis=0)
    mx = np.where(mx > 0, mx, 1.0)
    table /= mx
    logscale += np.log(mx)


def _columns_reference(z: np.ndarray, kf: KernelFactors) -> np.ndarray:
    """Reference prefix/suffix route, O(p^3) per coalition: explicit ``e^(-j)`` then contract."""
    m, p = z.shape
    gamma, delta = _gamma_delta(z, kf)
    omega = shapley_weights(p)
    Q = np.zeros((p + 1, m, p + 1))
    Qs = np.zeros((p + 1, m))
    Q[p][:, 0] = 1.0
    for r in range(p - 1, 0, -1):
        q = gamma[:, r, None] * Q[r + 1]
        q[:, 1:] += delta[:, r, None] * Q[r + 1][:, :-1]
        Qs[r] = Qs[r + 1]
        _normalise_rows(q, Qs[r])
        Q[r] = q
    out = np.empty((p, m))
    P = np.zeros((m, p + 1))
    P[:, 0] = 1.0
    Ps = np.zeros(m)
    for j in range(p):
        # e^(-j) = P_j * Q_{j+1}: degrees j and p-1-j.
        e = np.zeros((m, p + 1))
        for a in range(j + 1):
            e[:, a : a + p - j] += P[:, a, None] * Q[j + 1][:, : p - j]
        out[j] = (e @ omega) * np.exp(Ps + Qs[j + 1])
        Pn = gamma[:, j, None] * P
        Pn[:, 1:] += delta[:, j, None] * P[:, :-1]
        _normalise_rows(Pn, Ps)
        P = Pn
    sign = np.where(z.T, 1.0, -1.0)
    return sign * (kf.outputscale * kf.one_minus_b)[:, None] * out


@functools.lru_cache(maxsize=64)
def _gauss_legendre_unit(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1], read-only.

    Cached: numpy solves an eigenproblem for them at every call (about 0.4 ms at 8 nodes), and the
    loop asks for the same few node counts at every step.
    """
    x, w = np.polynomial.legendre.leggauss(int(n_nodes))
    t, w = 0.5 * (x + 1.0), 0.5 * w
    t.setflags(write=False)
    w.setflags(write=False)
    return t, w


def _columns_integral(z: np.ndarray, kf: KernelFactors) -> np.ndarray:
    """Owen's multilinear-integral route: Gauss-Legendre with ceil(p/2) nodes, in log space."""
    m, p = z.shape
    t, w = _gauss_legendre_unit(max(1, (p + 1) // 2))
    # q_r(t) = 1 - (1-b_r) t  (z_r = 0)  or  1 - (1-b_r)(1-t)  (z_r = 1); shape (m, nodes, p).
    tt = np.where(z[:, None, :], 1.0 - t[None, :, None], t[None, :, None])
    logq = np.log1p(-kf.one_minus_b[None, None, :] * tt)
    loo = logq.sum(axis=2, keepdims=True) - logq  # log prod_{r != j} q_r(t_n)
    mx = loo.max(axis=1, keepdims=True)
    integral = np.einsum("n,mnj->mj", w, np.exp(loo - mx)) * np.exp(mx[:, 0, :])
    sign = np.where(z, 1.0, -1.0)
    return (sign * integral * (kf.outputscale * kf.one_minus_b)[None, :]).T


def _columns(route, Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    kf = kernel_factors(lengthscales, outputscale)
    p = kf.n_players
    z = _as_bool(Z, p)
    m = z.shape[0]
    out = np.empty((p, m))
    starts, size = _chunks(m, p)
    for start in starts:
        out[:, start : start + size] = route(z[start : start + size], kf)
    return out


def shapley_kernel_columns(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """Columns ``A k(., z)`` for every row z of ``Z`` (bool[m, p]): ``float64[p, m]`` (docs/math.md §4).

    Entry j is positive exactly when j is in z. O(p^2) per coalition (suffix contraction folded
    with the Shapley weights, prefix tables carried forward), vectorised over chunks. With one
    shared lengthscale (all equal) the per-size tables of :func:`shared_size_tables` give every
    column in O(p).

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, m].
    """
    if is_shared(lengthscales):
        return shared_kernel_columns(Z, lengthscales, outputscale)
    return _columns(_columns_fold, Z, lengthscales, outputscale)


def is_shared(lengthscales: np.ndarray) -> bool:
    """True when every lengthscale equals the first (the shared-lengthscale kernel).

    Args:
        lengthscales: float64[p] lengthscales.

    Returns:
        whether all are equal.
    """
    ls = np.asarray(lengthscales, dtype=np.float64).reshape(-1)
    return ls.size > 0 and bool(np.all(ls == ls[0]))


def _logsumexp_cols(logs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``log sum_n w_n exp(logs[n, :])`` for positive weights, column-wise, without overflow."""
    mx = logs.max(axis=0)
    return mx + np.log(weights @ np.exp(logs - mx))


def shared_size_tables(n_players: int, lengthscale: float, outputscale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-size values of ``A k(., z)`` for the shared-lengthscale kernel: ``(inside, outside)``, float64[p+1].

    With every ``b_j = b``, entry j of ``A k(., z)`` depends only on m = |z| and on whether j is in z
    (docs/math.md §4, Owen's integral form): ``inside[m] = s (1-b) int_0^1 q1(t)^(m-1) q0(t)^(p-m) dt`` for
    j in z (m >= 1) and ``outside[m] = -s (1-b) int q1^m q0^(p-m-1) dt`` for j not in z (m <= p-1),
    with ``q1 = 1 - (1-b)(1-t)`` and ``q0 = 1 - (1-b) t``. The integrands are positive polynomials of
    degree p - 1, integrated exactly by ceil(p/2) Gauss-Legendre nodes in log space (no cancellation,
    no overflow at p = 1000). Unused entries (inside[0], outside[p]) are 0. O(p^2) for all sizes.

    Args:
        n_players: the number of players p.
        lengthscale: the shared lengthscale l.
        outputscale: the outputscale s.

    Returns:
        ``(inside, outside)``, two float64[p+1].
    """
    p = int(n_players)
    kf = kernel_factors(np.full(p, float(lengthscale)), outputscale)
    omb = kf.one_minus_b[0]
    t, w = _gauss_legendre_unit(max(1, (p + 1) // 2))
    log_q1 = np.log1p(-omb * (1.0 - t))[:, None]  # (nodes, 1)
    log_q0 = np.log1p(-omb * t)[:, None]
    m = np.arange(p + 1)[None, :]
    scale = kf.outputscale * omb
    inside = np.zeros(p + 1)
    outside = np.zeros(p + 1)
    inside[1:] = scale * np.exp(_logsumexp_cols((m[:, 1:] - 1) * log_q1 + (p - m[:, 1:]) * log_q0, w))
    outside[:-1] = -scale * np.exp(_logsumexp_cols(m[:, :-1] * log_q1 + (p - m[:, :-1] - 1) * log_q0, w))
    return inside, outside


def shared_kernel_columns(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """:func:`shapley_kernel_columns` for a shared lengthscale (all entries of ``lengthscales`` equal).

    O(p^2) tables once, then O(p) per coalition. ``float64[p, m]``.

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales, all equal.
        outputscale: the outputscale s.

    Returns:
        float64[p, m].
    """
    lengthscales, s = _check_hyper(lengthscales, outputscale)
    if not is_shared(lengthscales):
        raise ValueError("shared_kernel_columns needs equal lengthscales; use shapley_kernel_columns")
    p = lengthscales.shape[0]
    z = _as_bool(Z, p)
    inside, outside = shared_size_tables(p, lengthscales[0], s)
    sizes = z.sum(axis=1)
    return np.where(z, inside[sizes][:, None], outside[sizes][:, None]).T


def shared_prior_shapley_covariance(lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """:func:`prior_shapley_covariance` for a shared lengthscale: M has two values (docs/math.md §5, parity route).

    With every ``rho_j = rho``, ``e_k(rho_-i) = C(p-1, k) rho^k``, so
    ``M_ii = 4 kappa rho sum_{k even} C(p-1,k) rho^k / (k+1)^2`` and
    ``M_ij = 4 kappa rho^2 sum_{k odd} C(p-2,k) rho^k / (k+2)^2`` (all terms positive, summed in log
    space). O(p) plus the O(p^2) fill of the matrix.

    Args:
        lengthscales: float64[p] lengthscales, all equal.
        outputscale: the outputscale s.

    Returns:
        float64[p, p].
    """
    from scipy.special import gammaln

    lengthscales, s = _check_hyper(lengthscales, outputscale)
    if not is_shared(lengthscales):
        raise ValueError("shared_prior_shapley_covariance needs equal lengthscales; use prior_shapley_covariance")
    kf = kernel_factors(lengthscales, s)
    p = kf.n_players
    log_rho = np.log(kf.rho[0])
    log_kappa = np.log(s) + kf.log_half_one_plus_b.sum()

    def log_binom(n: int, k: np.ndarray) -> np.ndarray:
        return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)

    def log_sum(log_terms: np.ndarray) -> float:
        if log_terms.size == 0:
            return -np.inf
        mx = log_terms.max()
        return float(mx + np.log(np.exp(log_terms - mx).sum()))

    k = np.arange(0, p, 2)  # even k <= p - 1
    diag = log_sum(log_binom(p - 1, k) + k * log_rho - 2.0 * np.log(k + 1.0))
    k = np.arange(1, p - 1, 2)  # odd k <= p - 2
    off = log_sum(log_binom(p - 2, k) + k * log_rho - 2.0 * np.log(k + 2.0))
    M = np.full((p, p), 4.0 * np.exp(log_kappa + 2.0 * log_rho + off))
    np.fill_diagonal(M, 4.0 * np.exp(log_kappa + log_rho + diag))
    return M


def shapley_kernel_columns_reference(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """Cross-check of :func:`shapley_kernel_columns` by the reference O(p^3) prefix/suffix route.

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, m].
    """
    return _columns(_columns_reference, Z, lengthscales, outputscale)


def shapley_kernel_columns_integral(Z: np.ndarray, lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """Cross-check of :func:`shapley_kernel_columns` by the Gauss-Legendre integral form.

    Args:
        Z: ``bool[m, p]``.
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, m].
    """
    return _columns(_columns_integral, Z, lengthscales, outputscale)


def prior_shapley_covariance(lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """Prior covariance of the Shapley vector, ``M = A K A^T``: float64[p, p] (docs/math.md §5, parity route).

    ``M_ii = 4 kappa rho_i sum_{k even} e_k(rho_-i)/(k+1)^2``,
    ``M_ij = 4 kappa rho_i rho_j sum_{k odd} e_k(rho_-ij)/(k+2)^2``, ``kappa = s prod (1+b)/2``.
    Every summand is non-negative, so relative accuracy is ~p eps even when M is tiny. O(p^3);
    O(p^2) with a shared lengthscale (:func:`shared_prior_shapley_covariance`).

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, p].
    """
    if is_shared(lengthscales):
        return shared_prior_shapley_covariance(lengthscales, outputscale)
    return _prior_shapley_covariance_parity(lengthscales, outputscale)


def _prior_shapley_covariance_parity(lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """The general (ARD) parity route of :func:`prior_shapley_covariance`, O(p^3)."""
    kf = kernel_factors(lengthscales, outputscale)
    p = kf.n_players
    rho = kf.rho
    k = np.arange(p + 1)
    c_dia = np.where(k % 2 == 0, 1.0 / (k + 1.0) ** 2, 0.0)
    c_off = np.where(k % 2 == 1, 1.0 / (k + 2.0) ** 2, 0.0)
    log_kappa = np.log(kf.outputscale) + kf.log_half_one_plus_b.sum()

    def suffix(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # h_r[a] = sum_k e_k(rho_r..rho_{p-1}) c_{a+k}, rows r = 0..p (only 1..p used).
        h = np.zeros((p + 1, p + 1))
        hs = np.zeros(p + 1)
        h[p] = c
        for r in range(p - 1, 0, -1):
            row = h[r + 1].copy()
            row[:-1] += rho[r] * h[r + 1][1:]
            h[r], log_mx = _rescaled(row)
            hs[r] = hs[r + 1] + log_mx
        return h, hs

    h_dia, hs_dia = suffix(c_dia)
    h_off, hs_off = suffix(c_off)

    M = np.zeros((p, p))
    # T[i] = ESP vector of rho_{<j} without rho_i, for rows i < j (row log-scales in Ts).
    T = np.zeros((p, p + 1))
    Ts = np.zeros(p)
    F = np.zeros(p + 1)  # ESP of rho_0..rho_{j-1}
    F[0] = 1.0
    Fs = 0.0
    for j in range(p):
        # Diagonal entry j uses the prefix F_j.
        M[j, j] = 4.0 * rho[j] * np.exp(log_kappa + Fs + hs_dia[j + 1]) * np.dot(F, h_dia[j + 1])
        if j > 0:
            dots = T[:j] @ h_off[j + 1]
            M[:j, j] = 4.0 * rho[:j] * rho[j] * np.exp(log_kappa + Ts[:j] + hs_off[j + 1]) * dots
            # Fold rho_j into rows i < j.
            Tn = T[:j].copy()
            Tn[:, 1:] += rho[j] * T[:j, :-1]
            _normalise_rows(Tn, Ts[:j])  # Ts[:j] is a view: its log-scales grow in place
            T[:j] = Tn
        # Row j (excluding rho_j) is the prefix F_j; then fold rho_j into F.
        T[j] = F
        Ts[j] = Fs
        Fn = F.copy()
        Fn[1:] += rho[j] * F[:-1]
        F, log_mx = _rescaled(Fn)
        Fs += log_mx
    iu = np.triu_indices(p, 1)
    M[iu[1], iu[0]] = M[iu]
    return M


def _fold2(T: np.ndarray, b: float) -> np.ndarray:
    """Multiply bivariate coefficient tables ``T[..., a, b]`` by ``f(x,y) = 1 + xy + b(x + y)``."""
    out = T.copy()
    out[..., 1:, 1:] += T[..., :-1, :-1]
    out[..., 1:, :] += b * T[..., :-1, :]
    out[..., :, 1:] += b * T[..., :, :-1]
    return out


def _contract2(R: np.ndarray, b: float) -> np.ndarray:
    """Adjoint of :func:`_fold2` on contracted tables: ``R[c,d] + R[c+1,d+1] + b(R[c+1,d] + R[c,d+1])``."""
    out = R.copy()
    out[:-1, :-1] += R[1:, 1:]
    out[:-1, :] += b * R[1:, :]
    out[:, :-1] += b * R[:, 1:]
    return out


def prior_shapley_covariance_bivariate(lengthscales: np.ndarray, outputscale: float) -> np.ndarray:
    """Cross-check of :func:`prior_shapley_covariance` by the bivariate route (docs/math.md §5), O(p^4) time.

    ``M_ii = 2 s (1-b_i) sum omega(a) omega(b) F^(-i)_ab``,
    ``M_ij = s (1-b_i)(1-b_j) sum dw(a) dw(b) F^(-ij)_ab`` with ``dw(a) = omega(a+1) - omega(a)``
    and ``F = prod_r (1 + xy + b_r (x + y))``. Signed weights cancel, so relative accuracy is
    lower than the parity route's when M is tiny.

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.

    Returns:
        float64[p, p].
    """
    kf = kernel_factors(lengthscales, outputscale)
    p = kf.n_players
    b = kf.b
    s = kf.outputscale
    omega = shapley_weights(p)  # length p+1
    omega_ext = np.append(omega, 0.0)
    dw = omega_ext[1:] - omega_ext[:-1]  # length p+1, dw[p] = 0

    def suffix(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        R = np.zeros((p + 1, p + 1, p + 1))
        Rs = np.zeros(p + 1)
        R[p], Rs[p] = _rescaled(np.outer(weights, weights))
        for r in range(p - 1, 0, -1):
            R[r], log_mx = _rescaled(_contract2(R[r + 1], b[r]))
            Rs[r] = Rs[r + 1] + log_mx
        return R, Rs

    R_dia, Rs_dia = suffix(omega)
    R_off, Rs_off = suffix(dw)

    M = np.zeros((p, p))
    T = np.zeros((p, p + 1, p + 1))
    Ts = np.zeros(p)
    P = np.zeros((p + 1, p + 1))
    P[0, 0] = 1.0
    Ps = 0.0
    for j in range(p):
        M[j, j] = 2.0 * s * kf.one_minus_b[j] * np.exp(Ps + Rs_dia[j + 1]) * np.sum(P * R_dia[j + 1])
        if j > 0:
            dots = np.einsum("iab,ab->i", T[:j], R_off[j + 1])
            M[:j, j] = s * kf.one_minus_b[:j] * kf.one_minus_b[j] * np.exp(Ts[:j] + Rs_off[j + 1]) * dots
            Tn = _fold2(T[:j], b[j])  # a fresh contiguous array, so reshape gives a view
            _normalise_rows(Tn.reshape(j, -1), Ts[:j])
            T[:j] = Tn
        T[j] = P
        Ts[j] = Ps
        P, log_mx = _rescaled(_fold2(P, b[j]))
        Ps += log_mx
    iu = np.triu_indices(p, 1)
    M[iu[1], iu[0]] = M[iu]
    return M
