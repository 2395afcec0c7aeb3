"""Dense references shared by the core's tests (written independently of the library)."""

from __future__ import annotations

import numpy as np


def dense_kernel(Z: np.ndarray, lengthscales: np.ndarray, s: float) -> np.ndarray:
    """Exponential form ``s exp(-(1/p) sum_j [z_j != z'_j] / l_j)`` over the rows of ``bool[m, p]``."""
    p = Z.shape[1]
    weighted = np.zeros((Z.shape[0], Z.shape[0]))
    for j in range(p):  # one player at a time keeps memory at O(4^p), not O(4^p p)
        weighted += (Z[:, None, j] != Z[None, :, j]) / lengthscales[j]
    return s * np.exp(-weighted / p)
