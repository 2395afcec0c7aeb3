"""Seeded synthetic game families for the generality benchmark (``scripts/studies/benchmark_generality.py``).

Each family draws a game of p players from a seed and serves it as a full value table
(:class:`shapleig_tasks.tables.TableGame`): the 2^p values are enumerated once, so the exact Shapley values
come from enumeration (``TableGame.exact_values``) and evaluations cost a lookup. The families
cover structures the public suites do not isolate:

- ``dominant``:   a few dominant players; ``v(S) = log(1 + sum_{i in S} w_i)`` with 2-3 weights
  in [3, 6] and the rest in [0, 0.3];
- ``unanimity``:  sparse high-order interactions, a sum of 6 unanimity games on coalitions of
  3 .. p/2 players with coefficients in [-1, 1] (:class:`shapleig_tasks.synthetic.SumOfUnanimityGame`);
- ``pairwise``:   additive plus noise-free pairwise terms, ``sum_i w_i z_i + sum_(i,j) b_ij z_i z_j``
  with w_i ~ N(0, 1) and p pairs b_ij ~ N(0, 1);
- ``symmetric``:  near-symmetric, ``3 sqrt(|S|) + 0.05 sum_{i in S} w_i`` (w_i ~ N(0, 1));
- ``voting``:     weighted voting ``1[sum_{i in S} c_i >= C]``, integer weights 1..9 plus one or two
  heavy players (10..20), quota half the total weight, rounded up
  (:class:`shapleig_tasks.synthetic.WeightedVotingGame`).

Instances: instance k of a family has p = ``SIZES[k % len(SIZES)]`` (8, 12, 16) and its own seed.
"""

from __future__ import annotations

import zlib
from typing import Callable

import numpy as np

from shapleig.games.coalitions import all_coalitions
from shapleig_tasks.catalog import Task
from shapleig_tasks.synthetic import SumOfUnanimityGame, WeightedVotingGame
from shapleig_tasks.tables import TableGame

SIZES = (8, 12, 16)


def _dominant(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.uniform(0.0, 0.3, p)
    heavy = rng.choice(p, size=int(rng.integers(2, 4)), replace=False)
    w[heavy] = rng.uniform(3.0, 6.0, heavy.size)
    return lambda Z: np.log1p(Z @ w)


def _unanimity(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    game = SumOfUnanimityGame(p, n_terms=6, seed=int(rng.integers(2**31)), variant="shapiq",
                              min_size=3, max_size=max(3, p // 2))
    return game


def _pairwise(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.normal(size=p)
    pairs = np.array([rng.choice(p, 2, replace=False) for _ in range(p)])
    b = rng.normal(size=p)
    return lambda Z: Z @ w + (Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]) @ b


def _symmetric(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    w = rng.normal(size=p)
    return lambda Z: 3.0 * np.sqrt(Z.sum(axis=1)) + 0.05 * (Z @ w)


def _voting(p: int, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    c = rng.integers(1, 10, p)
    heavy = rng.choice(p, size=int(rng.integers(1, 3)), replace=False)
    c[heavy] = rng.integers(10, 21, heavy.size)
    return WeightedVotingGame(c, int(np.ceil(c.sum() / 2)))


FAMILIES: dict[str, Callable[[int, np.random.Generator], Callable[[np.ndarray], np.ndarray]]] = {
    "dominant": _dominant,
    "unanimity": _unanimity,
    "pairwise": _pairwise,
    "symmetric": _symmetric,
    "voting": _voting,
}


def instance_seed(family: str, index: int) -> int:
    """The seed of instance ``index`` of ``family`` (stable across runs and Python versions)."""
    return zlib.crc32(f"{family}/{index}".encode()) & 0x7FFFFFFF


def make_game(family: str, index: int, n_players: int | None = None) -> TableGame:
    """Instance ``index`` of ``family`` as a full value table; p from :data:`SIZES` unless given."""
    if family not in FAMILIES:
        raise ValueError(f"unknown game family {family!r}; choose one of {sorted(FAMILIES)}")
    p = int(n_players) if n_players is not None else SIZES[index % len(SIZES)]
    if not 2 <= p <= 20:
        raise ValueError(f"the generality families are enumerated: need 2 <= p <= 20, got {p}")
    fn = FAMILIES[family](p, np.random.default_rng(instance_seed(family, index)))
    Z = all_coalitions(p)
    return TableGame(Z, np.asarray(fn(Z), dtype=np.float64), name=f"{family}-{p}/i={index}")


def family_tasks(families: list[str], instances: int, sizes: tuple[int, ...] | None = None) -> list[Task]:
    """Harness tasks: ``instances`` games of each family (group = the family)."""
    tasks = []
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"unknown game family {family!r}; choose one of {sorted(FAMILIES)}")
        for k in range(int(instances)):
            p = (sizes or SIZES)[k % len(sizes or SIZES)]
            tasks.append(Task(f"{family}-{p}/i={k}", family, "synthetic",
                              lambda f=family, k=k, p=p: make_game(f, k, p), f"{family} game, p = {p}, instance {k}"))
    return tasks


__all__ = ["FAMILIES", "SIZES", "family_tasks", "instance_seed", "make_game"]
