"""Fit the structure families of ``structures=`` on an archive and combine them with the fitted mixture.

See :mod:`shapleig.gp.structures` for the read-out itself; this module fits each family's kernels on
the final archive (cold, as a first fit: the families were never fitted during the run), integrates
their hyperparameters as their surrogate does, and builds their posterior about the same index.
"""

from __future__ import annotations

import numpy as np

from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.integrate import integrated_kernels
from shapleig.gp.kernel_choice import KernelFit, RefitPlan, fit_kernels
from shapleig.gp.kernels.registry import SURROGATE_SWITCH
from shapleig.gp.mixture import MixturePosterior, build_mixture, loo_log_density
from shapleig.gp.options import GPOptions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior
from shapleig.gp.structures import PROBE_FAMILY, ROUGH_CORRELATION, ROUGH_FAMILY, StructurePosterior, rough_share

# Above this many players the families are not fitted (their cold fits at p in the hundreds cost
# more than the run's own refits); the read-out is then the fitted surrogate's and ``info`` says so.
STRUCTURE_MAX_PLAYERS = 64


def family_options(options: GPOptions, family: str) -> GPOptions:
    """The GP options of one family: ``options`` with the family as surrogate, numpy engine, its own draws.

    Args:
        options: the run's GP options.
        family: the family's surrogate name.

    Returns:
        the family's :class:`GPOptions`.
    """
    shared = {name: getattr(options, name) for name in GPOptions.names()
              if name not in ("surrogate", SURROGATE_SWITCH, "integrate", "structures", "fit_engine")}
    return GPOptions(**shared, surrogate=family, fit_engine="numpy")


# the rough family's noise relative to its outputscale (near interpolation, as the fitted kernels' 1e-6)
ROUGH_RELATIVE_NOISE = 1e-6


def rough_family(X: np.ndarray, y: np.ndarray, operator: IndexOperator, calibrate: bool | str,
                 correlation: float = ROUGH_CORRELATION) -> MixturePosterior:
    """The rough family on an archive: the ``correlation`` Hamming kernel, outputscale by maximum likelihood.

    With ``K = s (K_0 + 1e-6 I)`` and the standardised values' residuals ``r``, the likelihood's
    maximum over s is ``s = r^T (K_0 + 1e-6 I)^-1 r / t``, the mean square of the unit-scale innovations.

    Args:
        X: ``bool[t, p]``, the archive.
        y: ``float64[t]`` raw values.
        operator: the index the posterior is about.
        calibrate: the read-out's calibration (the ``calibrate`` option).
        correlation: the kernel's correlation per mismatched player (default :data:`ROUGH_CORRELATION`).

    Returns:
        the family's :class:`MixturePosterior` (one kernel, ``"rough"``).
    """
    p = X.shape[1]
    unit = Hyperparameters.hamming_correlation(p, correlation, 1.0, ROUGH_RELATIVE_NOISE)
    innovations = ShapleyPosterior(unit, X, y, operator=operator).innovations()
    scale = max(float(innovations @ innovations) / max(innovations.size, 1), 1e-12)
    hyper = Hyperparameters.hamming_correlation(p, correlation, scale, ROUGH_RELATIVE_NOISE * scale)
    return build_mixture([(ROUGH_FAMILY, 1.0, hyper)], X, y, calibrate=calibrate, operator=operator)


def structure_posterior(  # noqa: PLR0913 - the archive, its rows, the options and the loop's fits, kept explicit
        fitted: MixturePosterior, X: np.ndarray, y: np.ndarray, rows: np.ndarray,
                        options: GPOptions, operator: IndexOperator, seed: int,
                        probe: Hyperparameters | None = None,
                        kernel_fits: list[KernelFit] | None = None) -> StructurePosterior | None:
    """The read-out of ``options.structures`` beside ``fitted`` (None when there is nothing to add).

    Families equal to the run's own surrogate add nothing and are skipped; so is every family when
    p exceeds :data:`STRUCTURE_MAX_PLAYERS` or the archive holds every coalition. ``"kernels"`` adds one family per fitted kernel of
    ``kernel_fits`` (each at its MAP, read out as the surrogate reads its kernels), when there are
    at least two. ``"rough"`` adds :func:`rough_family`, weighed by its evidence against ``fitted``
    (:func:`~shapleig.gp.structures.rough_share`), unless the probe family is there (the probe is
    the rough doubt while the evidence is degenerate).

    Args:
        fitted: the fitted surrogate's final mixture on ``(X, y)``.
        X: ``bool[t, p]``, the whole archive (the posterior's rows).
        y: ``float64[t]`` raw values.
        rows: the archive rows the fits use (int[m]; e.g. without the empty coalition for Banzhaf).
        options: the run's GP options (``options.structures`` names the families).
        operator: the index the posterior is about.
        seed: seeds the fits and draws (family i: ``seed + 100 i``).
        probe: fixed hyperparameters of one more family, ``"probe"`` (not fitted: the design's
            probe kernel, added while the evidence is degenerate); None: none.
        kernel_fits: the fitted surrogate's last kernel fits (for ``"kernels"``).

    Returns:
        the :class:`StructurePosterior`, or None.
    """
    families = [f for f in options.structures if f != options.surrogate]
    if (not families and probe is None) or X.shape[1] > STRUCTURE_MAX_PLAYERS or X.shape[0] >= 2 ** X.shape[1]:
        return None  # (every coalition evaluated: the game is known, no structure is left to doubt)
    others: dict[str, MixturePosterior] = {}
    shares: dict[str, float] = {}
    if probe is not None:
        others[PROBE_FAMILY] = build_mixture([(PROBE_FAMILY, 1.0, probe)], X, y, calibrate=options.calibrate, operator=operator)
    for i, family in enumerate(families):
        if family == ROUGH_FAMILY:
            if probe is None:
                others[family] = rough_family(X, y, operator, options.calibrate)
                shares[family] = rough_share(loo_log_density(fitted), loo_log_density(others[family]))
            continue
        if family == "kernels":
            usable = [k for k in (kernel_fits or []) if np.isfinite(k.log_evidence)]
            if len(usable) >= 2:
                for k in usable:
                    others[f"kernel:{k.kernel}"] = build_mixture([(k.kernel, 1.0, k.hyper)], X, y,
                                                                 calibrate=options.calibrate, operator=operator)
            continue
        opts = family_options(options, family)
        Xf, yf = X[rows], y[rows]
        fits = fit_kernels(Xf, yf, opts, seed=seed + 100 * i, plan=RefitPlan.cold(), previous=None)
        kernels = integrated_kernels(Xf, yf, fits, opts.draws, seed=seed + 100 * i + 50) if opts.draws \
            else [(k.kernel, k.weight, k.hyper) for k in fits]
        others[family] = build_mixture(kernels, X, y, calibrate=opts.calibrate, operator=operator)
    return StructurePosterior(fitted, others, shares) if others else None


__all__ = ["ROUGH_RELATIVE_NOISE", "STRUCTURE_MAX_PLAYERS", "family_options", "rough_family", "structure_posterior"]
