"""Tests for initial designs and candidate pools (ordering, exclusion, border trick)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from shapleig.design.initial import (
    border_sizes,
    candidate_pool,
    coalitions_of_size,
    initial_design,
    leverage_design,
    size_order,
    uniform_design,
)
from shapleig.games.coalitions import coalition_keys


def _keys(Z: np.ndarray) -> list[bytes]:
    return coalition_keys(Z)


@pytest.mark.parametrize("p", [2, 3, 6, 9, 20])
def test_leverage_design(p):
    d = leverage_design(p, np.random.default_rng(4))
    assert d.shape == (p + 1, p) and d.dtype == bool
    assert not d[0].any() and d[1].all()
    assert len(set(_keys(d))) == p + 1
    s = d[2:].sum(axis=1)
    assert ((s >= 1) & (s <= p - 1)).all()
    # paired sampler: rows come in complement pairs (the last one unpaired for even p)
    for r in range(2, p + 1 - ((p - 1) % 2), 2):
        np.testing.assert_array_equal(d[r + 1], ~d[r])
    np.testing.assert_array_equal(d, leverage_design(p, np.random.default_rng(4)))


def test_leverage_design_covers_sizes_uniformly():
    # sizes are uniform on 1..p-1 (leverage scores), not binomial as for uniform random subsets
    p, rng = 12, np.random.default_rng(0)
    sizes = np.concatenate([leverage_design(p, rng)[2:].sum(axis=1) for _ in range(300)])
    counts = np.bincount(sizes, minlength=p)[1:p] / sizes.size
    np.testing.assert_allclose(counts, 1 / (p - 1), atol=0.02)


def test_uniform_design_and_names():
    d = uniform_design(7, np.random.default_rng(1))
    assert d.shape == (8, 7) and len(set(_keys(d))) == 8
    assert not d[0].any() and d[1].all()
    np.testing.assert_array_equal(initial_design("uniform", 7, np.random.default_rng(1)), d)
    with pytest.raises(ValueError, match="leverage"):
        initial_design("sobol", 7, np.random.default_rng(1))


def test_size_order_and_layers():
    assert size_order(6) == [0, 6, 1, 5, 2, 4, 3]
    assert size_order(5) == [0, 5, 1, 4, 2, 3]
    layer = coalitions_of_size(5, 2)
    members = [tuple(np.flatnonzero(r)) for r in layer]
    assert members == list(itertools.combinations(range(5), 2))


def test_exhaustive_pool_order_and_exclusion():
    p = 6
    rng = np.random.default_rng(2)
    design = leverage_design(p, rng)
    pool = candidate_pool(p, design, rng)
    assert pool.exhaustive and len(pool) == 2**p - (p + 1)
    keys = _keys(pool.W)
    assert len(set(keys)) == len(keys) and not set(keys) & set(_keys(design))
    sizes = pool.W.sum(axis=1)
    order = size_order(p)
    ranks = np.array([order.index(s) for s in sizes])
    assert (np.diff(ranks) >= 0).all()  # 1, 5, 2, 4, 3 blocks
    assert list(dict.fromkeys(sizes.tolist())) == [1, 5, 2, 4, 3]
    design_keys = set(_keys(design))
    for k in (1, 2, 3):
        expected = [r for r in coalitions_of_size(p, k) if np.packbits(r).tobytes() not in design_keys]
        np.testing.assert_array_equal(pool.W[sizes == k], np.array(expected))


def test_border_sizes():
    assert border_sizes(16, 1024 + 15) == [1, 15]
    assert border_sizes(14, 1024 + 13) == [1, 13, 2, 12]
    assert border_sizes(32, 1024 + 31) == [1, 31]
    assert border_sizes(64, 1024 + 63) == []
    # 11 players: 1034 samples, 103.4 per size >= C(11,1); then (1034-22)/8 = 126.5 >= C(11,2) = 55
    assert border_sizes(11, 1034) == [1, 10, 2, 9]


def test_sampled_pool_with_border_trick():
    p = 14
    rng = np.random.default_rng(5)
    design = leverage_design(p, rng)
    pool = candidate_pool(p, design, rng, pool_size=1024)
    assert not pool.exhaustive and len(pool) == 1024
    assert pool.border_sizes == (1, 13, 2, 12)
    keys = _keys(pool.W)
    assert len(set(keys)) == 1024 and not set(keys) & set(_keys(design))
    sizes = pool.W.sum(axis=1)
    n_layers = sum(math.comb(p, k) for k in (1, 13, 2, 12))
    n_in_design = int(np.isin(design.sum(axis=1), [1, 2, 12, 13]).sum())
    head = n_layers - n_in_design
    assert list(dict.fromkeys(sizes[:head].tolist())) == [1, 13, 2, 12]
    tail = sizes[head:]
    assert not np.isin(tail, [0, 1, 2, 12, 13, 14]).any()  # enumerated layers are not re-drawn
    # deterministic given the generator
    rng2 = np.random.default_rng(5)
    pool2 = candidate_pool(p, leverage_design(p, rng2), rng2, pool_size=1024)
    np.testing.assert_array_equal(pool.W, pool2.W)


def test_small_sampled_pool():
    p = 7
    rng = np.random.default_rng(0)
    design = leverage_design(p, rng)
    pool = candidate_pool(p, design, rng, pool_size=30)
    assert not pool.exhaustive and len(pool) == 30 and pool.border_sizes == ()
    assert not set(_keys(pool.W)) & set(_keys(design))
    with pytest.raises(ValueError, match="pool_size"):
        candidate_pool(p, design, rng, pool_size=0)


def test_leverage_design_of_any_size():
    """size=m: empty, grand, then m - 2 distinct proper coalitions (the GP+Leverage arm's sample);
    the default size is p + 1 and gives the same rows as asking for p + 1."""
    p = 6
    X = leverage_design(p, np.random.default_rng(3), size=20)
    assert X.shape == (20, p) and len(set(coalition_keys(X))) == 20
    assert not X[0].any() and X[1].all() and (X[2:].sum(1) % p != 0).all()
    np.testing.assert_array_equal(leverage_design(p, np.random.default_rng(3)),
                                  leverage_design(p, np.random.default_rng(3), size=p + 1))
    assert leverage_design(3, np.random.default_rng(0), size=50).shape == (8, 3)  # support runs out
    with pytest.raises(ValueError, match="size >= 2"):
        leverage_design(p, np.random.default_rng(0), size=1)
