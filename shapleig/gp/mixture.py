"""The Shapley posterior of a weighted set of GP surrogates: a Gaussian mixture over phi.

With kernels k_m of posterior probability w_m, each giving a Gaussian posterior
``N(mu_m, tau_m Sigma_m)`` over phi (``tau_m`` its calibration factor), phi is a mixture whose
mean and covariance are (law of total covariance)

    mu = sum_m w_m mu_m,     Sigma = sum_m w_m (tau_m Sigma_m + (mu_m - mu)(mu_m - mu)^T).

The spread between the kernels' means is part of the uncertainty. The default read-out
(``calibrate=True``, ``"influence"``) scales each kernel's covariance by ``D Sigma_m D`` with
``D = diag(sqrt(max(1, tau_j)))``, ``tau_j`` the influence-weighted leave-one-out calibration of
:func:`influence_scale` (docs/math.md §13). The other read-outs raise each player's variance,
where smaller, to a floor, by scaling rows and columns of the covariance (the correlations stay
the GP's); the floor depends on the read-out (``floor``):

- ``"gated"`` (an option, ``calibrate="gated"``): the jackknife variance of the estimate (see
  :meth:`~shapleig.gp.posterior.ShapleyPosterior.jackknife_covariance`) summed over the kernels whose
  leave-one-out calibration factor exceeds 1 (``sum_m w_m [tau_m > 1] jk_m``): inflate only where
  the held-out residuals say the kernel is overconfident; and the kernels' disagreement
  ``(max_m mu_m,i - min_m mu_m,i)^2 / 4`` over every fitted kernel, whatever its weight: a kernel
  the evidence all but rules out still shows how far the estimate moves with the model;
- ``"jackknife"`` (``calibrate="jackknife"``, the previous default): the jackknife variance ``sum_m w_m jk_m`` of every kernel;
- ``"none"``: no floor (the raw or LOO-scaled mixture).

The GP variance alone says how uncertain phi is if the kernel describes the game; the jackknife
says how much the estimate moves when one evaluation is left out, which stays honest when the
kernel does not, but is often many times the error where the kernel fits.

Acquisition uses the most probable kernel (``primary``), whose candidate state keeps the exact
frozen-hyperparameter updates of :mod:`shapleig.gp.posterior`.

Variances are combined in standardised units (divided by the square of the values' scale ``s_y``,
shared by the components) and only the std is brought back to raw units (``s_y`` times), so values
near the float64 limit (1e155 and beyond, where ``s_y^2`` overflows) still give a finite std; the
raw :attr:`MixturePosterior.covariance` holds ``inf`` where it is not representable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shapleig.gp.index_esp import IndexOperator
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
# Variance floors of the read-out (see the module docstring).
FLOORS = ("gated", "jackknife", "none")
# calibrate= values of ShaplEIG / DesignLoop -> (LOO-scale the kernels, floor, influence scaling)
CALIBRATIONS = {True: (False, "none", True), "influence": (False, "none", True),
                "jackknife": (True, "jackknife", False), "gated": (True, "gated", False),
                False: (False, "none", False)}


def check_calibrate(calibrate: bool | str) -> tuple[bool, str, bool]:
    """``(scale by LOO, floor, influence scaling)`` of a ``calibrate`` option; else a ``ValueError``.

    True / ``"influence"`` (the default read-out), ``"jackknife"`` (the previous default: wide),
    ``"gated"`` or False (the raw MAP posterior).

    Args:
        calibrate: True, ``"influence"``, ``"jackknife"``, ``"gated"`` or False.

    Returns:
        ``(scale by LOO, floor, influence scaling)``.
    """
    key = bool(calibrate) if isinstance(calibrate, (bool, np.bool_)) else calibrate
    if not isinstance(key, (bool, str)) or key not in CALIBRATIONS:
        raise ValueError(f"calibrate must be True, False, 'influence', 'jackknife' or 'gated', got {calibrate!r}")
    return CALIBRATIONS[key]


@dataclass(frozen=True)
class MixtureComponent:
    """One kernel's posterior in the mixture: ``weight`` w_m, calibration ``tau`` and the posterior.

    Attributes:
        name: the kernel's name in results.
        weight: the mixture weight w_m.
        tau: the calibration factor of the kernel's covariance (1: none).
        posterior: the kernel's Shapley posterior.
        scale: per-term std factors float64[d] applied to the kernel's covariance (``D Sigma D``, the
            influence read-out); None for none.
    """

    name: str
    weight: float
    tau: float
    posterior: ShapleyPosterior
    scale: np.ndarray | None = None

    def reweighted(self, weight: float) -> "MixtureComponent":
        """The same component with another weight.

        Args:
            weight: the new weight.

        Returns:
            a new :class:`MixtureComponent`.
        """
        return MixtureComponent(self.name, weight, self.tau, self.posterior, self.scale)


class MixturePosterior:
    """Gaussian mixture over phi from weighted :class:`ShapleyPosterior` components (raw units).

    ``components`` need not be normalised; weights below ``MIN_WEIGHT`` (after normalising) are
    dropped from mean and covariance (the ``"gated"`` floor still reads their means, so they are
    kept and extended as ``all_components``). Every component must share the archive.
    ``jackknife=False`` means no floor whatever ``floor`` says.

    Args:
        components: the weighted components (weights need not be normalised).
        jackknife: whether the read-out has a variance floor (False: none, whatever ``floor`` says).
        inflation: per-player std factors >= 1 kept from before (None: computed when needed).
        floor: the floor: ``"gated"``, ``"jackknife"`` or ``"none"`` (see ``FLOORS``).
    """

    def __init__(self, components: list[MixtureComponent], jackknife: bool = True,
                 inflation: np.ndarray | None = None, floor: str = "gated") -> None:
        if not components:
            raise ValueError("a mixture needs at least one component")
        if floor not in FLOORS:
            raise ValueError(f"unknown variance floor {floor!r}; choose one of {FLOORS}")
        total = float(sum(c.weight for c in components))
        if not np.isfinite(total) or total <= 0:
            raise ValueError(f"mixture weights must be non-negative with a positive sum, got {total}")
        kept = [c for c in components if c.weight / total >= MIN_WEIGHT]
        norm = float(sum(c.weight for c in kept))
        self.components = [c.reweighted(c.weight / norm) for c in kept]
        self.floor = floor if jackknife else "none"
        # dropped kernels matter only to the gated floor's disagreement term
        self.all_components = [c.reweighted(c.weight / total) for c in components] \
            if self.floor == "gated" else list(self.components)
        p = {c.posterior.n_players for c in self.all_components}
        if len(p) != 1:
            raise ValueError(f"mixture components disagree on the number of players: {sorted(p)}")
        self.jackknife = self.floor != "none"
        self._inflation = inflation  # per-player std factor >= 1 (None: compute when needed)
        self._mean: np.ndarray | None = None
        self._cov: np.ndarray | None = None

    @property
    def n_players(self) -> int:
        """The number of players."""
        return self.components[0].posterior.n_players

    @property
    def primary(self) -> MixtureComponent:
        """The kernel (MAP) component of largest weight (first on ties): it drives the acquisition.

        Hyperparameter draws (names with ``"~"``, :mod:`shapleig.gp.integrate`) only read out.
        """
        fitted = [c for c in self.components if "~" not in c.name] or self.components
        return max(fitted, key=lambda c: c.weight)

    @property
    def weights(self) -> dict[str, float]:
        """Weight per kernel, a kernel's hyperparameter draws summed into it.

        Returns:
            ``{kernel name: normalised weight}``.
        """
        out: dict[str, float] = {}
        for c in self.components:
            name = c.name.split("~", 1)[0]
            out[name] = out.get(name, 0.0) + c.weight
        return out

    @property
    def mean(self) -> np.ndarray:
        """Mixture mean of phi, float64[p].

        With hyperparameter draws (names with ``"~"``, :mod:`shapleig.gp.integrate`) the mean is the
        fitted (MAP) kernels' mixture, renormalised: the draws widen the covariance (about this mean,
        :meth:`_gp_covariance`) but do not move the estimate (they bought calibration, not accuracy;
        and at 2p a few draws of a poorly identified lengthscale can move the mean far).
        """
        if self._mean is None:
            fitted = {c.name: c for c in self.components if "~" not in c.name}
            if fitted and len(fitted) < len(self.components):
                # each kernel's MAP mean, at the kernel's weight (its MAP's and its draws' together)
                weights = self.weights
                total = float(sum(weights[name] for name in fitted))
                self._mean = sum((weights[name] / total) * c.posterior.mean for name, c in fitted.items())
            else:
                self._mean = sum(c.weight * c.posterior.mean for c in self.components)
        return self._mean.copy()

    @property
    def unit(self) -> float:
        """The values' scale ``s_y`` (shared by the components): raw = ``unit`` x standardised."""
        return float(self.components[0].posterior.y_scale)

    def _standardized(self, posterior: ShapleyPosterior) -> float:
        """Factor turning ``posterior``'s standardised variances into this mixture's.

        1 when the components share the archive, as they must.
        """
        return (float(posterior.y_scale) / self.unit) ** 2

    def _gp_covariance(self) -> np.ndarray:
        """Law of total covariance over the kernels, each scaled by its calibration factor.

        In standardised units (divided by ``unit**2``), about :attr:`mean` (with hyperparameter
        draws, the MAP kernels' mean: the second moment about it, never below the mixture's covariance).
        """
        mu = self.mean / self.unit
        cov = np.zeros((mu.shape[0], mu.shape[0]))  # d x d: the index's terms
        for c in self.components:
            d = c.posterior.mean / self.unit - mu
            within = c.tau * self._standardized(c.posterior) * c.posterior.shapley_covariance
            if c.scale is not None:
                within = within * np.outer(c.scale, c.scale)
            cov += c.weight * (within + np.outer(d, d))
        return 0.5 * (cov + cov.T)

    def _covariance_standardized(self) -> np.ndarray:
        if self._cov is None:
            cov = self._gp_covariance()
            if self.jackknife:
                f = self.inflation(cov)
                cov = cov * np.outer(f, f)
            self._cov = cov
        return self._cov

    def standardized_covariance(self) -> np.ndarray:
        """The read-out covariance of phi in standardised units (divided by ``unit**2``), float64[d, d].

        Returns:
            float64[d, d], a copy.
        """
        return self._covariance_standardized().copy()

    @property
    def covariance(self) -> np.ndarray:
        """Mixture covariance of phi, float64[p, p], raw units.

        Calibrated within-kernel plus between-kernel, with each player's variance raised to the
        floor where smaller (see the module docstring); ``inf`` where beyond float64 (values near
        1e155 and above).
        """
        with np.errstate(over="ignore"):
            return self.unit * (self.unit * self._covariance_standardized())

    def variance_floor(self) -> np.ndarray:
        """Per-player variance floor of the read-out, float64[p], standardised units.

        Divided by ``unit**2``; zeros without a floor.

        Returns:
            float64[p], standardised units.
        """
        p = self.n_players
        if self.floor == "none":
            return np.zeros(p)
        if self.floor == "jackknife":
            return sum(c.weight * self._standardized(c.posterior)
                       * np.diag(c.posterior.jackknife_covariance(standardized=True)) for c in self.components)
        jk = sum((c.weight * self._standardized(c.posterior) * np.diag(c.posterior.jackknife_covariance(standardized=True))
                  for c in self.components if c.tau > 1.0), np.zeros(p))
        means = np.array([c.posterior.mean / self.unit for c in self.all_components])
        spread = 0.25 * (means.max(axis=0) - means.min(axis=0)) ** 2
        return np.maximum(jk, spread)

    def inflation(self, cov: np.ndarray | None = None) -> np.ndarray:
        """Per-player factor ``max(1, sd_floor / sd_gp)`` applied to the std, float64[p].

        Args:
            cov: the GP covariance in standardised units, as :meth:`_gp_covariance` returns it (None: computed).

        Returns:
            float64[p], each >= 1.
        """
        if self._inflation is None:
            gp_cov = self._gp_covariance() if cov is None else cov
            jk = self.variance_floor()
            gp = np.clip(np.diag(gp_cov), 0.0, None)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(gp > 0, np.sqrt(np.clip(jk, 0.0, None) / gp), 1.0)
            self._inflation = np.maximum(1.0, np.nan_to_num(ratio, nan=1.0, posinf=1.0))
        return self._inflation.copy()

    @property
    def std(self) -> np.ndarray:
        """Marginal standard deviations of phi, float64[p], raw units (rounding negatives clip to 0).

        The unit times the standardised std, so finite at any scale of the values.
        """
        return self.unit * np.sqrt(np.clip(np.diag(self._covariance_standardized()), 0.0, None))

    def extend(self, X_new: np.ndarray, y_new: np.ndarray) -> "MixturePosterior":
        """Every component conditioned on the new evaluations.

        Weights and calibration stay frozen; influence scales are recomputed up to
        ``JACKKNIFE_EVERY_STEP`` observations, kept beyond.

        Args:
            X_new: ``bool[k, p]`` new coalitions.
            y_new: ``float64[k]`` their raw values.

        Returns:
            a new :class:`MixturePosterior`.
        """
        comps = []
        for c in self.all_components:
            post = c.posterior.extend(X_new, y_new)
            scale = c.scale
            if scale is not None and post.X.shape[0] <= JACKKNIFE_EVERY_STEP:
                scale = influence_scale(post)
            comps.append(MixtureComponent(c.name, c.weight, c.tau, post, scale))
        t = comps[0].posterior.X.shape[0]
        keep = self._inflation if (self.jackknife and t > JACKKNIFE_EVERY_STEP) else None
        return MixturePosterior(comps, inflation=keep, floor=self.floor)


def loo_calibration(posterior: ShapleyPosterior) -> float:
    """Leave-one-out estimate of the outputscale relative to the fitted one: ``mean z_i^2``, clipped.

    ``z_i`` are the posterior's standardised LOO residuals (closed form, from its own Cholesky
    factor). MAP hyperparameters with a fixed 1e-6 noise make the GP overconfident on games it
    describes imperfectly; the residuals show by how much (Bachoc 2013).

    Args:
        posterior: a kernel's Shapley posterior.

    Returns:
        the factor ``tau``, clipped to ``TAU_RANGE``.
    """
    z = posterior.loo_residuals()
    if z.size == 0 or not np.all(np.isfinite(z)):
        return 1.0
    return float(np.clip(np.mean(z**2), *TAU_RANGE))


def loo_log_density(mixture: "MixturePosterior") -> float:
    """The mixture's leave-one-out log predictive density of its archive, summed over the observations.

    Observation i's density is the components' weighted mixture of their closed-form leave-one-out
    Gaussians ``N(e_i; 0, 1 / [K^-1]_ii)`` (standardised units, hyperparameters frozen; beyond 1000
    observations the same seeded subset of deletions for every component). How well a structure
    predicts each evaluation from the others: the evidence the read-out weighs the rough family by
    (:mod:`shapleig.gp.structures`). ``-inf`` without two observations.

    Args:
        mixture: the posterior (every component on the same archive).

    Returns:
        the summed log density (nats).
    """
    if any(c.posterior.X.shape[0] < 2 for c in mixture.components):
        return -np.inf
    dens = np.stack([c.posterior.loo_log_densities() for c in mixture.components])
    weights = [c.weight for c in mixture.components]
    w = np.asarray(weights) / np.sum(weights)
    top = np.max(dens, axis=0)
    return float(np.sum(top + np.log(np.sum(w[:, None] * np.exp(dens - top), axis=0))))


def influence_scale(posterior: ShapleyPosterior) -> np.ndarray:
    """Per-term std factors ``sqrt(max(1, tau_j))`` of the influence read-out, float64[d].

    ``tau_j`` the influence-weighted LOO calibration
    (:meth:`~shapleig.gp.posterior.ShapleyPosterior.influence_calibration`), clipped to
    ``TAU_RANGE``. Only inflates: a term whose observations are predicted better than claimed keeps
    the GP's std.

    Args:
        posterior: a kernel's Shapley posterior.

    Returns:
        float64[d], each >= 1.
    """
    tau = np.clip(posterior.influence_calibration(), 1.0, TAU_RANGE[1])
    return np.sqrt(tau)


def build_mixture(kernels: list[tuple[str, float, Hyperparameters]], X: np.ndarray, y: np.ndarray, *,
                  calibrate: bool | str, taus: dict[str, float] | None = None,
                  operator: IndexOperator | None = None) -> MixturePosterior:
    """The Shapley posterior of weighted kernels ``(name, weight, hyperparameters)`` on archive ``(X, y)``.

    ``calibrate`` (the ``calibrate`` option, :func:`check_calibrate`): True / ``"influence"`` scales
    each kernel's covariance by its influence-weighted LOO calibration; ``"jackknife"`` scales each
    kernel by :func:`loo_calibration` (or by ``taus[name]`` when given, e.g. kept between refits)
    and floors variances at every kernel's jackknife variance; ``"gated"`` floors them at the gated
    floor; False is the raw MAP posterior of the published setting. ``operator``: the index the
    posterior is about (None: the Shapley value; docs/math.md §14.4).

    Args:
        kernels: ``(name, weight, hyperparameters)`` per kernel.
        X: ``bool[t, p]``, the archive.
        y: ``float64[t]`` raw values.
        calibrate: the read-out (see above).
        taus: ``{kernel name: tau}`` to reuse instead of :func:`loo_calibration` (``"jackknife"`` only).
        operator: the index the posterior is about; None: the Shapley value.

    Returns:
        the :class:`MixturePosterior`.
    """
    scale, floor, influence = check_calibrate(calibrate)
    total = float(sum(w for _, w, _ in kernels))
    if floor != "gated" and total > 0:  # kernels the mixture drops need no posterior (only gated reads them)
        kernels = [k for k in kernels if k[1] / total >= MIN_WEIGHT] or list(kernels)
    comps = []
    for name, weight, hyper in kernels:
        post = ShapleyPosterior(hyper, X, y, operator=operator)
        tau = 1.0 if not scale else (taus[name] if taus is not None else loo_calibration(post))
        comps.append(MixtureComponent(name, weight, tau, post, influence_scale(post) if influence else None))
    return MixturePosterior(comps, floor=floor)
