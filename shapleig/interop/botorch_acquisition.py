"""botorch faces of the acquisition functions (docs/math.md §7, §10): any Acquisition, Shapley EIG, posterior variance, random.

``AcquisitionFunction`` subclasses over a fitted botorch model, for users who compose botorch
optimisers; the design loop uses the :class:`~shapleig.design.acquisition.Acquisition` objects of
:mod:`shapleig.design.acquisition` directly. :class:`AcquisitionFace` wraps any of them (a
user-defined subclass too); :class:`ShapleyEIG` and :class:`PosteriorVariance` are its EIG and
uncertainty faces.
"""

from __future__ import annotations

import numpy as np

from shapleig.extras import require_torch

require_torch("the botorch interop (shapleig.interop.botorch_acquisition)")  # before importing torch

import torch
from botorch.acquisition import AcquisitionFunction

from shapleig.design.acquisition import EIG, Acquisition, Uncertainty, make_acquisition
from shapleig.gp.posterior import ShapleyPosterior
from shapleig.gp.torch_model import model_hyperparameters


def posterior_from_model(model) -> ShapleyPosterior:
    """The Shapley posterior of a fitted ``SingleTaskGP`` from :func:`shapleig.gp.torch_model.build_model`.

    Reads the hyperparameters and the training data (raw values, via the outcome transform).

    Args:
        model: a fitted ``SingleTaskGP`` built by :func:`shapleig.gp.torch_model.build_model`.

    Returns:
        the :class:`~shapleig.gp.posterior.ShapleyPosterior` of the model's data and hyperparameters.
    """
    X = model.train_inputs[0].detach().cpu().numpy() > 0.5
    y_std = model.train_targets.detach().reshape(-1, 1)
    y_raw, _ = model.outcome_transform.untransform(y_std)
    y_raw = y_raw.reshape(-1).cpu().numpy()
    # build_model trains on values it standardised itself (scale-free); back to the game's units
    y_raw = y_raw * getattr(model, "shapleig_y_scale", 1.0) + getattr(model, "shapleig_y_mean", 0.0)
    return ShapleyPosterior(model_hyperparameters(model), X, y_raw)


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


class AcquisitionFace(_ShapleyAcquisition):
    """Any :class:`~shapleig.design.acquisition.Acquisition` as a botorch ``AcquisitionFunction``.

    ``forward(X: b x q x p) -> b``: for each q-batch, the sum over its rows of the acquisition's
    score of the row, each row conditioned on after it is scored (pending points first), as the
    loop's greedy batches do.

    Args:
        model: a fitted ``SingleTaskGP`` from :func:`shapleig.gp.torch_model.build_model`.
        acquisition: a registered name or an instance whose scores use the posterior
            (``uses_posterior``; random selection is :class:`RandomSelection`).
        posterior: the Shapley posterior (default: read from ``model``).
    """

    def __init__(self, model, acquisition: str | Acquisition, posterior: ShapleyPosterior | None = None) -> None:
        acq = make_acquisition(acquisition)
        if not acq.uses_posterior:
            raise ValueError(f"acquisition {acq.name!r} does not score with the posterior; for random selection "
                             f"use RandomSelection")
        super().__init__(model, posterior)
        self.acquisition = acq

    def _score(self, cand, j: int) -> float:
        return float(self.acquisition.score(cand)[j])

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """The joint score of each q-batch.

        Args:
            X: ``b x q x p`` (or ``q x p``) 0/1 coalitions.

        Returns:
            float64[b].
        """
        return self._values(X, self._score)


class ShapleyEIG(AcquisitionFace):
    """Expected information gain about the Shapley vector, ``-log(1 - b^T Sigma_phi^-1 b / v)``.

    ``forward(X: b x q x p) -> b``: joint EIG of each q-batch (sum of sequential conditioned EIGs).

    Args:
        model: a fitted ``SingleTaskGP`` from :func:`shapleig.gp.torch_model.build_model`.
        posterior: the Shapley posterior (default: read from ``model``).
    """

    def __init__(self, model, posterior: ShapleyPosterior | None = None) -> None:
        super().__init__(model, EIG(), posterior)


class PosteriorVariance(AcquisitionFace):
    """Uncertainty sampling: predictive variance of y(w) (raw units), summed sequentially over q.

    Args:
        model: a fitted ``SingleTaskGP`` from :func:`shapleig.gp.torch_model.build_model`.
        posterior: the Shapley posterior (default: read from ``model``).
    """

    def __init__(self, model, posterior: ShapleyPosterior | None = None) -> None:
        super().__init__(model, Uncertainty(), posterior)

    def _score(self, cand, j: int) -> float:
        s = float(self.posterior_phi.y_scale)  # s (s v): the square of s alone overflows near 1e155
        return s * (s * float(cand.predictive_variance()[j]))


class RandomSelection(AcquisitionFunction):
    """Random search as an acquisition: i.i.d. U(0, 1) scores per t-batch from a seeded generator.

    Args:
        model: the botorch model (unused by the scores, kept for botorch's interface).
        seed: the seed of the score generator.
    """

    def __init__(self, model, seed: int = 0) -> None:
        super().__init__(model)
        self._rng = np.random.default_rng(seed)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Random scores, one per t-batch.

        Args:
            X: ``b x q x p`` (or ``q x p``) coalitions.

        Returns:
            ``float64[b]``, i.i.d. U(0, 1).
        """
        b = 1 if X.dim() == 2 else X.shape[0]
        return torch.tensor(self._rng.random(b), dtype=torch.float64)
