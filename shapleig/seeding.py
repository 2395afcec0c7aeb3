"""Seeded random streams: one seed drives everything, components get independent streams."""

from __future__ import annotations

from typing import Any, Union

import numpy as np


def spawn_generators(seed: int, n: int) -> list[np.random.Generator]:
    """``n`` independent generators derived from ``seed`` by ``SeedSequence.spawn``.

    Args:
        seed: the root seed (a non-negative int).
        n: how many generators.

    Returns:
        ``n`` ``numpy.random.Generator`` objects with independent streams; the same ``seed`` gives the same list.
    """
    return [np.random.default_rng(s) for s in np.random.SeedSequence(int(seed)).spawn(n)]


def spawn_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent integer seeds (for torch, LightGBM, ...) derived from ``seed``.

    Args:
        seed: the root seed (a non-negative int).
        n: how many seeds.

    Returns:
        ``n`` integers in ``[0, 2**32)``; the same ``seed`` gives the same list.
    """
    return [int(s.generate_state(1, dtype=np.uint32)[0]) for s in np.random.SeedSequence(int(seed)).spawn(n)]


# ------------------------------------------------------------------------------------------
# The seed convention of every estimate() (docs/guide.md, section 10): one argument, ``seed``, with
# ``random_state`` accepted as its scikit-learn / shapiq alias.
SeedLike = Union[int, np.integer, np.random.Generator, None]

# Seeds are 0 <= seed < 2**63: a non-negative int64, which every consumer accepts (numpy's
# SeedSequence, torch.manual_seed, pandas/parquet int64 columns). Drawn seeds stay in that range.
SEED_LIMIT = 2**63
_MAX_DRAWN_SEED = SEED_LIMIT


class _Unset:
    """Marker for "argument not given" (distinguishes seed=None from no seed at all)."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


def resolve_seed(seed: Any = UNSET, random_state: Any = UNSET, *, default: int = 0) -> int:
    """The integer seed a run uses, from ``seed`` or its alias ``random_state``.

    Accepted: a non-negative int (numpy ints too) is used as is; ``None`` draws a fresh seed from
    OS entropy; a ``numpy.random.Generator`` draws one from the generator (advancing it, as
    scikit-learn does). Either way the returned int repeats the run when passed back as ``seed``.
    Neither given: ``default``. Both given and different: ``ValueError``. Anything else (floats,
    bools, negative ints, ints >= 2**63, strings, ``RandomState``) raises ``TypeError``/``ValueError`` naming it.

    Args:
        seed: a non-negative int, or None for a fresh seed drawn from the OS.
        random_state: scikit-learn's name for ``seed`` (an int, or None); give at most one of the two, or both equal.
        default: the seed when neither ``seed`` nor ``random_state`` is given.

    Returns:
        the seed, ``0 <= seed < 2**63``; passed back as ``seed`` it repeats the run.
    """
    if seed is not UNSET and random_state is not UNSET and not _same_seed(seed, random_state):
        raise ValueError(
            f"seed={seed!r} and random_state={random_state!r} disagree; random_state is an alias "
            f"of seed, give one of them"
        )
    value = seed if seed is not UNSET else random_state
    if value is UNSET:
        return int(default)
    if value is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] % _MAX_DRAWN_SEED)
    if isinstance(value, np.random.Generator):
        return int(value.integers(_MAX_DRAWN_SEED))
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"seed must be a non-negative int, None (fresh entropy) or a numpy.random.Generator; "
            f"got {value!r} ({type(value).__name__})"
        )
    if value < 0:
        raise ValueError(f"seed must be a non-negative int, got {value}")
    if value >= SEED_LIMIT:  # results tables store seeds as int64; torch seeds are int64 too
        raise ValueError(f"seed must be below 2**63 = {SEED_LIMIT}, got {value}")
    return int(value)


def _same_seed(a: Any, b: Any) -> bool:
    if a is b:
        return True
    ints = (int, np.integer)
    if isinstance(a, ints) and isinstance(b, ints) and not isinstance(a, (bool, np.bool_)) \
            and not isinstance(b, (bool, np.bool_)):
        return int(a) == int(b)
    return False
