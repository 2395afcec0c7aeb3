"""Acquisition functions over coalitions: Shapley EIG, posterior variance, random (docs/math.md §7, §10).

Two faces of the same computation:

- botorch :class:`~botorch.acquisition.AcquisitionFunction` subclasses (:class:`ShapleyEIG`,
  :class:`PosteriorVariance`, :class:`RandomSelection`) with botorch's shapes: ``forward(X)`` takes a
  ``b x q x p`` tensor of 0/1 coalitions and returns ``b`` values. For ``q > 1`` the joint value is
  the sum of the sequentially conditioned per-point values (for the EIG this is the chain rule of
  mutual information, exact because conditioning under frozen hyperparameters does not depend on
  the observed values). Pending points (``set_X_pending``) are conditioned on first.
- :func:`select`, the vectorised pool path the design loop uses: greedy selection of ``q`` pool
  indices from a :class:`~shapleig.posterior.CandidatePosterior`; exact under frozen
  hyperparameters for EIG and variance, uniform without replacement for random.

Ties (within a relative 1e-10, so that rounding does not decide between candidates that are equal
in exact arithmetic) go to the first index in pool order.
"""

from __future__ import annotations

import numpy as np
import torch
from botorch.acquisition import AcquisitionFunction

from .posterior import CandidatePosterior, ShapleyPosterior
from .surrogate import model_hyperparameters

ACQUISITIONS = ("eig", "uncertainty", "random")
_ALIASES = {"variance": "uncertainty", "posterior_variance": "uncertainty", "shapley_eig": "eig"}


def check_acquisition(name: str) -> str:
    """Canonical acquisition name, or ValueError listing the valid names."""
    key = _ALIASES.get(name, name) if isinstance(name, str) else name
    if key not in ACQUISITIONS:
        raise ValueError(f"unknown acquisition {name!r}; choose one of {ACQUISITIONS}")
    return key


def posterior_from_model(model) -> ShapleyPosterior:
    """The Shapley posterior of a fitted ``SingleTaskGP`` from :func:`shapleig.surrogate.build_model`.

    Reads the hyperparameters and the training data (raw values, via the outcome transform).
    """
    X = model.train_inputs[0].detach().cpu().numpy() > 0.5
    y_std = model.train_targets.detach().reshape(-1, 1)
    y_raw, _ = model.outcome_transform.untransform(y_std)
    y_raw = y_raw.reshape(-1).cpu().numpy()
    # build_model trains on values it standardised itself (scale-free); back to the game's units
    y_raw = y_raw * getattr(model, "shapleig_y_scale", 1.0) + getattr(model, "shapleig_y_mean", 0.0)
    return ShapleyPosterior(model_hyperparameters(model), X, y_raw)


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

class _ShapleyAcquisition(AcquisitionFunction):
    """Shared plumbing: a Shapley posterior (from the model unless given) and ``b x q x p`` batching."""

    def __init__(self, model, posterior: ShapleyPosterior | None = None) -> None:
        super().__init__(model)
        self.posterior_phi = posterior if posterior is not None else posterior_from_model(model)
        self.X_pending = None

    def _q_batches(self, X: torch.Tensor) -> np.ndarray:
        if X.dim() == 2:
            X = X.unsqueeze(0)
        if X.dim() != 3 or X.shape[-1] != self.posterior_phi.n_players:
            raise ValueError(
                f"X must be b x q x {self.posterior_phi.n_players} coalitions, got shape {tuple(X.shape)}"
            )
        return X.detach().cpu().numpy() > 0.5

    def _pending(self) -> np.ndarray:
        p = self.posterior_phi.n_players
        if self.X_pending is None:
            return np.zeros((0, p), dtype=bool)
        return self.X_pending.detach().cpu().numpy().reshape(-1, p) > 0.5

    def _conditioned_sum(self, Z: np.ndarray, value) -> float:
        """Sum over the q rows of ``value(candidates, j)`` with each row conditioned on after scoring."""
        pending = self._pending()
        cand = self.posterior_phi.candidates(np.concatenate([pending, Z]))
        for j in range(pending.shape[0]):
            cand.condition(j)
        total = 0.0
        for j in range(pending.shape[0], cand.n_candidates):
            total += value(cand, j)
            cand.condition(j)
        return total

    def _values(self, X: torch.Tensor, value) -> torch.Tensor:
        Zb = self._q_batches(X)
        out = [self._conditioned_sum(Z, value) for Z in Zb]
        return torch.tensor(out, dtype=torch.float64)


class ShapleyEIG(_ShapleyAcquisition):
    """Expected information gain about the Shapley vector, ``-log(1 - b^T Sigma_phi^-1 b / v)``.

    ``forward(X: b x q x p) -> b``: joint EIG of each q-batch (sum of sequential conditioned EIGs).
    """

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self._values(X, lambda cand, j: float(cand.eig()[j]))


class PosteriorVariance(_ShapleyAcquisition):
    """Uncertainty sampling: predictive variance of y(w) (raw units), summed sequentially over q."""

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        scale2 = self.posterior_phi.y_scale**2
        return self._values(X, lambda cand, j: scale2 * float(cand.predictive_variance()[j]))


class RandomSelection(AcquisitionFunction):
    """Random search as an acquisition: i.i.d. U(0, 1) scores per t-batch from a seeded generator."""

    def __init__(self, model, seed: int = 0) -> None:
        super().__init__(model)
        self._rng = np.random.default_rng(seed)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        b = 1 if X.dim() == 2 else X.shape[0]
        return torch.tensor(self._rng.random(b), dtype=torch.float64)
