"""A learned observation noise: the coordinate, prior and gradient a kernel's MAP fit adds for it.

A kernel whose fit also learns the noise (:attr:`~shapleig.gp.kernels.spec.KernelSpec.learned_noise`,
e.g. :class:`~shapleig.gp.kernels.graded.Graded`) hands the MAP problem a :class:`LearnedNoise`: the
noise is ``sigma^2 = NOISE_FLOOR + e^eta`` with ``eta ~ N(log NOISE_CENTRE, NOISE_LOG_SD^2)``, a prior
centred on the fixed noise of the other kernels and bounded below by :data:`NOISE_FLOOR`. The MAP
problem (:class:`~shapleig.gp.numpy_fit.MapProblem`) owns ``eta`` as the last coordinate of theta and
asks this object for its value, prior and gradient, so the engine never names the kernel.

>>> noise = LearnedNoise()
>>> noise.value(noise.coordinate(1e-4)) == 1e-4
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# the learned noise: sigma^2 = NOISE_FLOOR + exp(eta), eta ~ N(log NOISE_CENTRE, NOISE_LOG_SD^2)
NOISE_CENTRE = 1e-6
NOISE_LOG_SD = 3.0
NOISE_FLOOR = 1e-8
# eta is clipped to [_ETA_LOW, _ETA_HIGH] (the gradient is zero outside)
_ETA_LOW = -60.0
_ETA_HIGH = 10.0
_LOG_2PI = math.log(2.0 * math.pi)


def noise_value(eta: float) -> float:
    """The learned noise ``NOISE_FLOOR + e^eta`` (eta clipped to ``[-60, 10]``).

    Args:
        eta: the noise coordinate of theta.

    Returns:
        sigma^2, standardised.
    """
    return NOISE_FLOOR + math.exp(min(max(float(eta), _ETA_LOW), _ETA_HIGH))


def noise_coordinate(noise: float) -> float:
    """``eta`` with :func:`noise_value` ``(eta) = noise`` (at least the floor plus 1e-26).

    Args:
        noise: sigma^2, standardised.

    Returns:
        the noise coordinate eta.
    """
    return math.log(max(float(noise) - NOISE_FLOOR, 1e-26))


def noise_log_prior(eta: float) -> tuple[float, float]:
    """The noise coordinate's log prior, a normal around ``log NOISE_CENTRE``.

    Args:
        eta: the noise coordinate of theta.

    Returns:
        ``(log N(eta; log NOISE_CENTRE, NOISE_LOG_SD^2), its derivative)``.
    """
    z = (float(eta) - math.log(NOISE_CENTRE)) / NOISE_LOG_SD
    return -0.5 * z * z - math.log(NOISE_LOG_SD) - 0.5 * _LOG_2PI, -z / NOISE_LOG_SD


@dataclass(frozen=True)
class LearnedNoise:
    """The learned noise's share of the MAP problem: one coordinate ``eta`` (module docstring)."""

    def value(self, eta: float) -> float:
        """sigma^2 at ``eta`` (:func:`noise_value`).

        Args:
            eta: the noise coordinate of theta.

        Returns:
            sigma^2, standardised.
        """
        return noise_value(eta)

    def coordinate(self, noise: float) -> float:
        """``eta`` where sigma^2 is ``noise`` (:func:`noise_coordinate`).

        Args:
            noise: sigma^2, standardised.

        Returns:
            the noise coordinate eta.
        """
        return noise_coordinate(noise)

    def log_prior(self, eta: float) -> tuple[float, float]:
        """``(log prior of eta, its derivative)`` (:func:`noise_log_prior`).

        Args:
            eta: the noise coordinate of theta.

        Returns:
            ``(log density, d log density / d eta)``.
        """
        return noise_log_prior(eta)

    def gradient(self, eta: float, trace_w: float) -> float:
        """``d(-log N - log prior) / d eta`` given ``tr(W)`` (``W = alpha alpha^T - K^-1``).

        ``d(-log N)/d sigma^2 = -tr(W) / 2`` and ``d sigma^2 / d eta = e^eta`` inside the clip (zero
        outside), minus the prior's derivative.

        Args:
            eta: the noise coordinate of theta.
            trace_w: ``tr(W)``.

        Returns:
            the derivative.
        """
        inside = _ETA_LOW < eta < _ETA_HIGH
        return (-0.5 * trace_w * (noise_value(eta) - NOISE_FLOOR)) * inside - noise_log_prior(eta)[1]


# the one learned-noise model (its hyperparameters are module constants)
LEARNED_NOISE = LearnedNoise()


__all__ = ["LEARNED_NOISE", "NOISE_CENTRE", "NOISE_FLOOR", "NOISE_LOG_SD", "LearnedNoise", "noise_coordinate",
           "noise_log_prior", "noise_value"]
