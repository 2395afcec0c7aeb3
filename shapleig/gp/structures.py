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
STRUCTURE_FAMILIES = ("graded", "kernels", "additive")
# the default read-out's families (GPOptions.structures)
DEFAULT_STRUCTURES = ("kernels", "graded", "additive")
# the probe family's weight in the read-out (the module docstring): the doubt holds half the mass
PROBE_FAMILY = "probe"
PROBE_WEIGHT = 0.5


class StructurePosterior:
    """The fitted mixture's mean with the covariance of several structure families (module docstring).

    Exposes what the read-out uses of a :class:`MixturePosterior` (mean, std, covariance, weights,
    components, primary): the fitted surrogate's for everything but the covariance.

    Args:
        fitted: the fitted surrogate's mixture (its mean is the estimate).
        others: ``{family name: mixture}`` on the same archive and index.
    """

    def __init__(self, fitted: MixturePosterior, others: dict[str, MixturePosterior]) -> None:
        if not others:
            raise ValueError("a structure read-out needs at least one other family")
        for name, other in others.items():
            if other.n_players != fitted.n_players or other.mean.shape != fitted.mean.shape:
                raise ValueError(f"structure family {name!r} is about {other.mean.shape} terms, "
                                 f"the fitted surrogate about {fitted.mean.shape}")
        self.fitted = fitted
        self.others = dict(others)
        self._cov: np.ndarray | None = None

    @property
    def family_weights(self) -> dict[str, float]:
        """Each family's weight in the covariance (the fitted surrogate as ``"fitted"``); they sum to 1.

        ``1 / M`` each, except the probe family: :data:`PROBE_WEIGHT`, the others sharing the rest.
        """
        names = ["fitted", *self.others]
        if PROBE_FAMILY not in self.others:
            return {name: 1.0 / len(names) for name in names}
        rest = (1.0 - PROBE_WEIGHT) / (len(names) - 1)
        return {name: PROBE_WEIGHT if name == PROBE_FAMILY else rest for name in names}

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


__all__ = ["DEFAULT_STRUCTURES", "PROBE_FAMILY", "PROBE_WEIGHT", "STRUCTURE_FAMILIES", "StructurePosterior", "check_structures"]
