"""Seeded random streams: one seed drives everything, components get independent streams."""

from __future__ import annotations

import numpy as np


def spawn_generators(seed: int, n: int) -> list[np.random.Generator]:
    """``n`` independent generators derived from ``seed`` by ``SeedSequence.spawn``."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(int(seed)).spawn(n)]


def spawn_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent integer seeds (for torch, LightGBM, ...) derived from ``seed``."""
    return [int(s.generate_state(1, dtype=np.uint32)[0]) for s in np.random.SeedSequence(int(seed)).spawn(n)]
