"""The Shapley posterior of a weighted set of GP surrogates: a Gaussian mixture over phi.

With kernels k_m of posterior probability w_m, each giving a Gaussian posterior
``N(mu_m, tau_m Sigma_m)`` over phi (``tau_m`` its calibration factor), phi is a mixture whose
mean and covariance are (law of total covariance)

    mu = sum_m w_m mu_m,     Sigma = sum_m w_m (tau_m Sigma_m + (mu_m - mu)(mu_m - mu)^T).

The spread between the kernels' means is part of the uncertainty. With ``jackknife=True`` (the
default read-out) each player's variance is then raised, where smaller, to the jackknife variance
of the estimate (``sum_m w_m`` of each kernel's, see
:meth:`~shapleig.gp.posterior.ShapleyPosterior.jackknife_covariance`), by scaling rows and columns
of the covariance: the correlations stay the GP's. The GP variance alone says how uncertain phi is
if the kernel describes the game; the jackknife says how much the estimate moves when one
evaluation is left out, which stays honest when the kernel does not.

Acquisition uses the most probable kernel (``primary``), whose candidate state keeps the exact
frozen-hyperparameter updates of :mod:`shapleig.gp.posterior`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior

# Kernels whose weight falls below this are dropped from the mixture until the next refit: their
# contribution to mean and covariance is below rounding, and extending them costs time.
MIN_WEIGHT = 1e-10
# The calibration factor is clipped to this range: a few LOO residuals of an interpolating GP can
# be extreme, and one factor rescales a kernel's whole covariance.
TAU_RANGE = (1e-2, 1e4)
# Up to this many observations the jackknife is recomputed at every read-out (O(t^3)); beyond, a
# mixture extended between refits keeps the per-player inflation of the last computation.
JACKKNIFE_EVERY_STEP = 256  # above the 8p <= 128 budgets of the benchmark suites (issue 18)


@dataclass(frozen=True)
class MixtureComponent:
    """One kernel's posterior in the mixture: ``weight`` w_m, calibration ``tau`` and the posterior."""

    name: str
    weight: float
    tau: float
    posterior: ShapleyPosterior


class MixturePosterior:
    """Gaussian mixture over phi from weighted :class:`ShapleyPosterior` components (raw units).

    ``components`` need not be normalised; weights below ``MIN_WEIGHT`` (after normalising) are
    dropped. Every component must share the archive.
    """

    def __init__(self, components: list[MixtureComponent], jackknife: bool = True,
                 inflation: np.ndarray | None = None) -> None:
        if not components:
            raise ValueError("a mixture needs at least one component")
        total = float(sum(c.weight for c in components))
        if not np.isfinite(total) or total <= 0:
            raise ValueError(f"mixture weights must be non-negative with a positive sum, got {total}")
        kept = [c for c in components if c.weight / total >= MIN_WEIGHT]
        norm = float(sum(c.weight for c in kept))
        self.components = [MixtureComponent(c.name, c.weight / norm, c.tau, c.posterior) for c in kept]
        p = {c.posterior.n_players for c in self.components}
        if len(p) != 1:
            raise ValueError(f"mixture components disagree on the number of players: {sorted(p)}")
        self.jackknife = bool(jackknife)
        self._inflation = inflation  # per-player std factor >= 1 (None: compute when needed)
        self._mean: np.ndarray | None = None
        self._cov: np.ndarray | None = None

    @property
    def n_players(self) -> int:
        return self.components[0].posterior.n_players

    @property
    def primary(self) -> MixtureComponent:
        """The component of largest weight (first on ties): it drives the acquisition."""
        return max(self.components, key=lambda c: c.weight)

    @property
    def weights(self) -> dict[str, float]:
        return {c.name: c.weight for c in self.components}

    @property
    def mean(self) -> np.ndarray:
        """Mixture mean of phi, float64[p]."""
        if self._mean is None:
            self._mean = sum(c.weight * c.posterior.mean for c in self.components)
        return self._mean.copy()

    def _gp_covariance(self) -> np.ndarray:
        """Law of total covariance over the kernels, each scaled by its calibration factor."""
        mu = self.mean
        cov = np.zeros((self.n_players, self.n_players))
        for c in self.components:
            d = c.posterior.mean - mu
            cov += c.weight * (c.tau * c.posterior.covariance + np.outer(d, d))
        return 0.5 * (cov + cov.T)

    @property
    def covariance(self) -> np.ndarray:
        """Mixture covariance of phi, float64[p, p]: calibrated within-kernel plus between-kernel,
        with each player's variance raised to the jackknife's where smaller (``jackknife=True``)."""
        if self._cov is None:
            cov = self._gp_covariance()
            if self.jackknife:
                f = self.inflation(cov)
                cov = cov * np.outer(f, f)
            self._cov = cov
        return self._cov.copy()

    def inflation(self, cov: np.ndarray | None = None) -> np.ndarray:
        """Per-player factor ``max(1, sd_jackknife / sd_gp)`` applied to the std, float64[p]."""
        if self._inflation is None:
            gp_cov = self._gp_covariance() if cov is None else cov
            jk = sum(c.weight * np.diag(c.posterior.jackknife_covariance()) for c in self.components)
            gp = np.clip(np.diag(gp_cov), 0.0, None)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(gp > 0, np.sqrt(np.clip(jk, 0.0, None) / gp), 1.0)
            self._inflation = np.maximum(1.0, np.nan_to_num(ratio, nan=1.0, posinf=1.0))
        return self._inflation.copy()

    @property
    def std(self) -> np.ndarray:
        """Marginal standard deviations of phi, float64[p] (rounding negatives clip to 0)."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

    def extend(self, X_new: np.ndarray, y_new: np.ndarray) -> "MixturePosterior":
        """Every component conditioned on the new evaluations (weights and calibration frozen)."""
        comps = [MixtureComponent(c.name, c.weight, c.tau, c.posterior.extend(X_new, y_new)) for c in self.components]
        t = comps[0].posterior.X.shape[0]
        keep = self._inflation if (self.jackknife and t > JACKKNIFE_EVERY_STEP) else None
        return MixturePosterior(comps, jackknife=self.jackknife, inflation=keep)


def loo_calibration(posterior: ShapleyPosterior) -> float:
    """Leave-one-out estimate of the outputscale relative to the fitted one: ``mean z_i^2``, clipped.

    ``z_i`` are the posterior's standardised LOO residuals (closed form, from its own Cholesky
    factor). MAP hyperparameters with a fixed 1e-6 noise make the GP overconfident on games it
    describes imperfectly; the residuals show by how much (Bachoc 2013).
    """
    z = posterior.loo_residuals()
    if z.size == 0 or not np.all(np.isfinite(z)):
        return 1.0
    return float(np.clip(np.mean(z**2), *TAU_RANGE))


def build_mixture(kernels: list[tuple[str, float, Hyperparameters]], X: np.ndarray, y: np.ndarray, *,
                  calibrate: bool = True, taus: dict[str, float] | None = None) -> MixturePosterior:
    """The Shapley posterior of weighted kernels ``(name, weight, hyperparameters)`` on archive ``(X, y)``.

    ``calibrate=True`` (the default read-out) scales each kernel by :func:`loo_calibration` (or by
    ``taus[name]`` when given, e.g. kept between refits) and floors variances at the jackknife's;
    ``False`` is the raw MAP posterior of the published setting.
    """
    comps = []
    for name, weight, hyper in kernels:
        post = ShapleyPosterior(hyper, X, y)
        tau = 1.0 if not calibrate else (taus[name] if taus is not None else loo_calibration(post))
        comps.append(MixtureComponent(name, weight, tau, post))
    return MixturePosterior(comps, jackknife=calibrate)
