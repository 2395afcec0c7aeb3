"""Dense references shared by the core's tests (written independently of the library)."""

from __future__ import annotations

import numpy as np

from shapleig.gp.kernels import SizeParams


def dense_kernel(Z: np.ndarray, lengthscales: np.ndarray, s: float) -> np.ndarray:
    """Exponential form ``s exp(-(1/p) sum_j [z_j != z'_j] / l_j)`` over the rows of ``bool[m, p]``."""
    p = Z.shape[1]
    weighted = np.zeros((Z.shape[0], Z.shape[0]))
    for j in range(p):  # one player at a time keeps memory at O(4^p), not O(4^p p)
        weighted += (Z[:, None, j] != Z[None, :, j]) / lengthscales[j]
    return s * np.exp(-weighted / p)


def dense_surrogate_kernel(Z: np.ndarray, hyper) -> np.ndarray:
    """The surrogate's kernel over the rows of ``bool[m, p]``, coalition by coalition (docs/math.md §15):
    the Hamming kernel plus the size trend ``variance exp(-(u - u')^2 / (2 lengthscale^2))``
    over u = |z| / p and independent jumps at the empty and the grand coalition."""
    p = Z.shape[1]
    K = dense_kernel(Z, hyper.lengthscales, hyper.outputscale)
    empty, grand = ~Z.any(axis=1), Z.all(axis=1)
    u = Z.sum(axis=1) / p
    size = hyper.part(SizeParams) or SizeParams()  # all zero without a size part
    trend = size.variance * np.exp(-0.5 * (u[:, None] - u[None, :]) ** 2 / size.lengthscale**2)
    return K + trend + size.empty_jump * np.outer(empty, empty) + size.grand_jump * np.outer(grand, grand)
