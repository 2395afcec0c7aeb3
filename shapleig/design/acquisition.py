"""Acquisition functions over coalitions: Shapley EIG, posterior variance, random (docs/math.md §7, §10).

Two faces of the same computation:

- botorch :class:`~botorch.acquisition.AcquisitionFunction` subclasses (:class:`ShapleyEIG`,
  :class:`PosteriorVariance`, :class:`RandomSelection`) with botorch's shapes: ``forward(X)`` takes a
  ``b x q x p`` tensor of 0/1 coalitions and returns ``b`` values. For ``q > 1`` the joint value is
  the sum of the sequentially conditioned per-point values (for the EIG this is the chain rule of
  mutual information, exact because conditioning under frozen hyperparameters does not depend on
  the observed values). Pending points (``set_X_pending``) are conditioned on first.
- :func:`select`, the vectorised pool path the design loop uses: greedy selection of ``q`` pool
  indices from a :class:`~shapleig.gp.posterior.CandidatePosterior`; exact under frozen
  hyperparameters for EIG and variance, uniform without replacement for random.

Ties (within a relative 1e-10, so that rounding does not decide between candidates that are equal
in exact arithmetic) go to the first index in pool order.
"""

from __future__ import annotations

import numpy as np

from shapleig.gp.posterior import CandidatePosterior

ACQUISITIONS = ("eig", "uncertainty", "random")
_ALIASES = {"variance": "uncertainty", "posterior_variance": "uncertainty", "shapley_eig": "eig"}


def check_acquisition(name: str) -> str:
    """Canonical acquisition name, or ValueError listing the valid names."""
    key = _ALIASES.get(name, name) if isinstance(name, str) else name
    if key not in ACQUISITIONS:
        raise ValueError(f"unknown acquisition {name!r}; choose one of {ACQUISITIONS}")
    return key




# -- pool path ----------------------------------------------------------------------------------

TIE_RTOL = 1e-10


def first_argmax(scores: np.ndarray, rtol: float = TIE_RTOL) -> int:
    """Index of the first score within ``rtol`` (relative) of the maximum: ties go to pool order.

    Complement pairs and permuted players give EIG values that are equal in exact arithmetic but
    differ in the last bits; a plain ``argmax`` would let rounding (BLAS, kernel evaluation order)
    decide between them. Scores of -inf (unavailable) never win.
    """
    scores = np.asarray(scores, dtype=np.float64)
    best = float(np.max(scores))
    if not np.isfinite(best):
        return int(np.argmax(scores))
    return int(np.flatnonzero(scores >= best - rtol * max(abs(best), 1e-300))[0])


def random_indices(available: np.ndarray, q: int, rng: np.random.Generator | None) -> np.ndarray:
    """``min(q, #available)`` distinct indices where ``available`` (bool[n]) is True, uniformly."""
    if rng is None:
        raise ValueError("random selection needs a numpy Generator rng")
    avail = np.flatnonzero(available)
    if not avail.size:
        return np.zeros(0, dtype=np.int64)
    return rng.choice(avail, size=min(int(q), avail.size), replace=False).astype(np.int64)


def select(
    acquisition: str,
    candidates: CandidatePosterior,
    q: int,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Greedy selection of ``q`` available pool indices (into ``candidates.W``), in pick order.

    ``"eig"``: argmax Shapley EIG, condition, repeat. ``"uncertainty"``: argmax predictive variance,
    condition, repeat. ``"random"``: ``q`` distinct available indices uniformly at random (``rng``
    required). Every pick is conditioned on, so ``candidates`` stays consistent with the archive the
    picks will join; fewer than ``q`` indices come back only when the pool runs out.
    """
    name = check_acquisition(acquisition)
    q = int(q)
    if q < 1:
        raise ValueError(f"q must be >= 1, got {q}")
    picks: list[int] = []
    if name == "random":
        chosen = random_indices(candidates.available, q, rng)
        for j in chosen:
            candidates.condition(int(j))
        return chosen
    score = candidates.eig if name == "eig" else candidates.predictive_variance
    for _ in range(q):
        if not candidates.available.any():
            break
        j = first_argmax(score())
        candidates.condition(j)
        picks.append(j)
    return np.asarray(picks, dtype=np.int64)


# -- botorch face -------------------------------------------------------------------------------







