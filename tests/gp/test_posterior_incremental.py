"""Incremental posterior extension (buffers, border updates) against the from-scratch computation."""

from __future__ import annotations

import numpy as np
import pytest

from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior


def _data(t: int, p: int, seed: int, offset: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.random((t, p)) < rng.uniform(0.1, 0.9, (t, 1))
    y = offset + X @ rng.normal(size=p) + 0.1 * np.sin(X.sum(1))
    return X, y


def _assert_same(a: ShapleyPosterior, b: ShapleyPosterior) -> None:
    scale = np.abs(b.covariance).max()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-9, atol=1e-10 * np.abs(b.mean).max())
    np.testing.assert_allclose(a.covariance, b.covariance, rtol=1e-8, atol=1e-10 * scale)
    np.testing.assert_allclose(a.shapley_kernel_columns, b.shapley_kernel_columns, rtol=1e-12, atol=0)
    Z = np.random.default_rng(1).random((5, a.n_players)) < 0.5
    for u, v in zip(a.predict(Z), b.predict(Z)):
        np.testing.assert_allclose(u, v, rtol=1e-8, atol=1e-10 * np.abs(v).max())


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_sequence_of_extensions_equals_scratch(shared, offset):
    p = 12
    X, y = _data(60, p, 0, offset)
    ls = np.full(p, 0.9) if shared else np.random.default_rng(2).uniform(0.2, 3.0, p)
    h = Hyperparameters.hamming(ls, 1.4, 1e-6, 0.1)
    post = ShapleyPosterior(h, X[:10], y[:10])
    t = 10
    for k in (1, 3, 1, 1, 7, 1, 2, 20, 1):
        post = post.extend(X[t : t + k], y[t : t + k])
        t += k
        _assert_same(post, ShapleyPosterior(h, X[:t], y[:t]))


def test_branching_keeps_every_posterior_valid():
    p = 8
    X, y = _data(30, p, 3)
    h = Hyperparameters.hamming(np.full(p, 1.1), 0.9, 1e-6, 0.0)
    base = ShapleyPosterior(h, X[:10], y[:10]).extend(X[10:12], y[10:12])
    left = base.extend(X[12:15], y[12:15])
    right = base.extend(X[20:22], y[20:22])  # second extension of the same posterior
    left2 = left.extend(X[15:16], y[15:16])
    _assert_same(base, ShapleyPosterior(h, X[:12], y[:12]))
    _assert_same(left, ShapleyPosterior(h, X[:15], y[:15]))
    _assert_same(left2, ShapleyPosterior(h, X[:16], y[:16]))
    Xr, yr = np.concatenate([X[:12], X[20:22]]), np.concatenate([y[:12], y[20:22]])
    _assert_same(right, ShapleyPosterior(h, Xr, yr))


def test_large_p_shared_extension():
    p = 300
    X, y = _data(400, p, 5)
    h = Hyperparameters.hamming(np.full(p, 0.2048 * np.sqrt(p)), 1.0, 1e-6, 0.0)
    post = ShapleyPosterior(h, X[:350], y[:350])
    for t in range(350, 400, 10):
        post = post.extend(X[t : t + 10], y[t : t + 10])
    _assert_same(post, ShapleyPosterior(h, X, y))


def test_indefinite_border_falls_back_to_refactorisation():
    p = 5
    X, y = _data(12, p, 4)
    h = Hyperparameters.hamming(np.full(p, 1.0), 1.0, 0.0, 0.0)  # no noise: a repeated row is singular
    post = ShapleyPosterior(h, X[:6], y[:6])
    ext = post.extend(X[:1], y[:1])
    assert ext.X.shape[0] == 7 and np.all(np.isfinite(ext.mean))
