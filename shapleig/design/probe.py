"""The probe kernel: where the design goes while the fitted surrogate explains the archive degenerately.

A design driven by the fitted kernel's EIG trusts that kernel. When every evaluation so far fits an
exactly additive game, or one of the coalition size alone (``DesignLoop.degenerate_evidence``), the
fitted posterior is nearly certain everywhere and its EIG no longer says which coalition would
refute the structure: a threshold game whose first coalitions all satisfy ``v = z_0`` stays
``[1, 0, ..., 0]`` with a std of 3e-4. While the evidence is degenerate the loop instead scores the
pool under a fixed rough Hamming kernel (correlation :data:`PROBE_CORRELATION` per mismatched
player, unit outputscale), conditioned on the same archive: the coalitions about whose Shapley
contribution a rough game would be most uncertain, i.e. those farthest from every structure the
archive has already pinned down. The first evaluation that breaks the degenerate fit hands the
design back to the fitted kernel.
"""

from __future__ import annotations

from shapleig.gp.posterior import Hyperparameters

# per mismatched player the probe kernel's correlation falls by this factor (1/3: rough, high orders alive)
PROBE_CORRELATION = 1.0 / 3.0


def probe_hyperparameters(n_players: int, noise: float) -> Hyperparameters:
    """The probe kernel: shared Hamming lengthscale with ``exp(-1 / (p l)) = PROBE_CORRELATION``.

    Args:
        n_players: the number of players p.
        noise: the noise variance (standardised units), e.g. the fitted kernel's.

    Returns:
        the probe's :class:`~shapleig.gp.posterior.Hyperparameters` (outputscale 1, mean 0).
    """
    return Hyperparameters.hamming_correlation(n_players, PROBE_CORRELATION, 1.0, noise)


__all__ = ["PROBE_CORRELATION", "probe_hyperparameters"]
