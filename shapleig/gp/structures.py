"""A read-out that shows structural disagreement: the fitted surrogate widened by other structures.

The fitted surrogate's kernels (``surrogate``, weighed by evidence) can all agree on one structure
that the design happened to favour: a smooth, nearly additive game after a few coalitions that
fit it exactly. A second family of kernels fitted on the same archive at the read-out (by default
the graded kernel of :mod:`shapleig.gp.kernels.graded`, whose free order variances put mass on high-order
structure, with its hyperparameters integrated) reads the same data under another structure. With
the fitted surrogate's posterior ``N(mu_0, Sigma_0)`` and the other families' ``N(mu_m, Sigma_m)``,
each family at the floored weight ``w_m = 1 / M`` (M families; the evidence cannot remove one),
the read-out is the law of total covariance about the fitted surrogate's mean:

    mean = mu_0,     Sigma = sum_m w_m (Sigma_m + (mu_m - mu_0)(mu_m - mu_0)^T).

The one exception is the design's probe kernel (``"probe"``, :mod:`shapleig.design.probe`), a family
only while the evidence is degenerate: it stands for "the structure every other family found does
not hold", so it carries :data:`PROBE_WEIGHT` (half the mass) and the others share the rest equally.
At 1/M the doubt was one voice against M - 1 families fitted to the same degenerate archive (all of
them certain of it), and runs whose structure was wrong stayed 10 standard deviations off.

The other exception is the rough family (``"rough"``, read out while no probe is): a Hamming kernel
whose correlation falls by :data:`ROUGH_CORRELATION` per mismatched player, its outputscale by
maximum likelihood, the structure "little generalises from one coalition to another". Its weight is
the evidence for it against the fitted surrogate, ``sigmoid(L_rough - L_fitted)`` with ``L`` each
one's leave-one-out log predictive density of the archive (:func:`~shapleig.gp.mixture.loo_log_density`),
floored at :data:`ROUGH_FLOOR`; the other families share the rest equally. Where the fitted
structure predicts each evaluation from the others far better, the rough family keeps the floor
(a small widening); where it does not (a game whose values the archive cannot relate, SOUM at 2p,
a threshold or voting game), it takes up to half the mass and more. A floor and not the 1/M of the
other families: at 1/M it widened every game (pooled coverage 0.98-0.99, docs/calibration.md §6).

The estimate is the fitted surrogate's (its accuracy is unchanged); the interval grows where the
structures disagree about phi, and by the other families' own uncertainty. Variances are combined in
standardised units (the families share the archive, hence the values' scale), as in
:mod:`shapleig.gp.mixture`.
"""

from __future__ import annotations

import numpy as np

from shapleig.gp.mixture import MixtureComponent, MixturePosterior

# the families read out beside the fitted surrogate (``structures=`` of GPOptions): "graded" (the
# graded kernel fitted on the final archive, hyperparameters integrated) and "kernels" (each kernel
# of the fitted surrogate alone, at its MAP: a kernel the evidence all but ruled out still counts)
# and "rough" (a rough Hamming kernel, weighed by its evidence against the fitted surrogate, floored)
STRUCTURE_FAMILIES = ("graded", "kernels", "additive", "rough")
# the default read-out's families (GPOptions.structures)
DEFAULT_STRUCTURES = ("kernels", "graded", "additive", "rough")
# the probe family's weight in the read-out (the module docstring): the doubt holds half the mass
PROBE_FAMILY = "probe"
PROBE_WEIGHT = 0.5
# the rough family (the module docstring): its kernel's correlation per mismatched player, and the
# least weight its evidence can give it (docs/calibration.md §6: 0.7 and 0.05 among 0.5-0.8 and
# 0.02-0.1 on the 749 runs of the calibration benchmarks)
ROUGH_FAMILY = "rough"
ROUGH_CORRELATION = 0.7
ROUGH_FLOOR = 0.05


def rough_share(fitted_density: float, rough_density: float, floor: float = ROUGH_FLOOR) -> float:
    """The rough family's weight: ``sigmoid(rough_density - fitted_density)`` within ``[floor, 1 - floor]``.

    Args:
        fitted_density: the fitted surrogate's leave-one-out log predictive density of the archive (nats).
        rough_density: the rough family's, on the same archive.
        floor: the least weight of the rough family and of the rest together.

    Returns:
        the weight, in ``[floor, 1 - floor]`` (``floor`` when either density is not finite).
    """
    gap = rough_density - fitted_density
    if not np.isfinite(gap):
        return float(floor)
    return float(np.clip(1.0 / (1.0 + np.exp(-np.clip(gap, -50.0, 50.0))), floor, 1.0 - floor))


class StructurePosterior:
    """The fitted mixture's mean with the covariance of several structure families (module docstring).

    Exposes what the read-out uses of a :class:`MixturePosterior` (mean, std, covariance, weights,
    components, primary): the fitted surrogate's for everything but the covariance.

    Args:
        fitted: the fitted surrogate's mixture (its mean is the estimate).
        others: ``{family name: mixture}`` on the same archive and index.
        shares: ``{family name: weight}`` of families whose weight is their own (the rough family's
            :func:`rough_share`); the probe family weighs :data:`PROBE_WEIGHT`; the others share the rest.
    """

    def __init__(self, fitted: MixturePosterior, others: dict[str, MixturePosterior],
                 shares: dict[str, float] | None = None) -> None:
        if not others:
            raise ValueError("a structure read-out needs at least one other family")
        for name, other in others.items():
            if other.n_players != fitted.n_players or other.mean.shape != fitted.mean.shape:
                raise ValueError(f"structure family {name!r} is about {other.mean.shape} terms, "
                                 f"the fitted surrogate about {fitted.mean.shape}")
        shares = dict(shares or {})
        if PROBE_FAMILY in others:
            shares[PROBE_FAMILY] = PROBE_WEIGHT
        unknown = [name for name in shares if name not in others]
        if unknown:
            raise ValueError(f"a share for {unknown[0]!r}, which is not a family of this read-out")
        if any(not 0.0 <= w < 1.0 for w in shares.values()) or sum(shares.values()) >= 1.0:
            raise ValueError(f"family shares must be in [0, 1) and sum below 1, got {shares}")
        self.fitted = fitted
        self.others = dict(others)
        self.shares = shares
        self._cov: np.ndarray | None = None

    @property
    def family_weights(self) -> dict[str, float]:
        """Each family's weight in the covariance (the fitted surrogate as ``"fitted"``); they sum to 1.

        ``1 / M`` each, except the families with a share of their own (the probe family:
        :data:`PROBE_WEIGHT`; the rough family: its evidence, floored), the others sharing the rest.
        """
        names = ["fitted", *self.others]
        equal = [name for name in names if name not in self.shares]
        rest = (1.0 - sum(self.shares.values())) / len(equal)
        return {name: self.shares.get(name, rest) for name in names}

    @property
    def n_players(self) -> int:
        """The number of players."""
        return self.fitted.n_players

    @property
    def mean(self) -> np.ndarray:
        """The fitted surrogate's mean, float64[d] (raw units)."""
        return self.fitted.mean

    @property
    def unit(self) -> float:
        """The values' scale ``s_y`` (raw = ``unit`` x standardised)."""
        return self.fitted.unit

    @property
    def primary(self) -> MixtureComponent:
        """The fitted surrogate's most probable kernel."""
        return self.fitted.primary

    @property
    def components(self) -> list[MixtureComponent]:
        """The fitted surrogate's components."""
        return self.fitted.components

    @property
    def all_components(self) -> list[MixtureComponent]:
        """The fitted surrogate's components, dropped ones included."""
        return self.fitted.all_components

    @property
    def weights(self) -> dict[str, float]:
        """The fitted surrogate's kernel weights (``{kernel: weight}``)."""
        return self.fitted.weights

    def standardized_covariance(self) -> np.ndarray:
        """The read-out covariance of phi, float64[d, d], standardised units (divided by ``unit**2``).

        Returns:
            float64[d, d], symmetric.
        """
        if self._cov is None:
            mu = self.fitted.mean / self.unit
            weights = self.family_weights
            cov = np.zeros((mu.shape[0], mu.shape[0]))
            for name, m in (("fitted", self.fitted), *self.others.items()):
                d = m.mean / self.unit - mu
                cov += weights[name] * (m.standardized_covariance() + np.outer(d, d))
            self._cov = 0.5 * (cov + cov.T)
        return self._cov.copy()

    @property
    def covariance(self) -> np.ndarray:
        """The read-out covariance, float64[d, d], raw units (``inf`` where beyond float64)."""
        with np.errstate(over="ignore"):
            return self.unit * (self.unit * self.standardized_covariance())

    @property
    def std(self) -> np.ndarray:
        """Marginal standard deviations, float64[d], raw units."""
        return self.unit * np.sqrt(np.clip(np.diag(self.standardized_covariance()), 0.0, None))

    def disagreement(self) -> dict[str, float]:
        """Per family, the largest ``|mu_m - mu_0| / std`` over the terms (how far it moves the estimate).

        Returns:
            ``{family name: max over terms of |mean difference| / read-out std}``.
        """
        std = np.maximum(self.std, np.finfo(float).tiny)
        return {name: float(np.max(np.abs(m.mean - self.mean) / std)) for name, m in self.others.items()}


def check_structures(value: object) -> tuple[str, ...]:
    """``structures=`` normalised: a tuple of family names from :data:`STRUCTURE_FAMILIES`.

    Args:
        value: None / ``()`` (none), a family name, or a sequence of them.

    Returns:
        the family names, in order, without repeats.

    Raises:
        ValueError: an unknown family or a wrong type.
    """
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"structures must be None, a family name or a sequence of them, got {value!r}")
    unknown = [n for n in names if n not in STRUCTURE_FAMILIES]
    if unknown:
        raise ValueError(f"unknown structure family {unknown[0]!r}; choose from {STRUCTURE_FAMILIES}")
    unique = tuple(dict.fromkeys(names))
    # a tuple already normalised is kept as the same object (scikit-learn's clone checks identity)
    return value if isinstance(value, tuple) and value == unique else unique


__all__ = ["DEFAULT_STRUCTURES", "PROBE_FAMILY", "PROBE_WEIGHT", "ROUGH_CORRELATION", "ROUGH_FAMILY", "ROUGH_FLOOR",
           "STRUCTURE_FAMILIES", "StructurePosterior", "check_structures", "rough_share"]
