"""KernelSHAP (Covert-Lee closed form) and Unbiased KernelSHAP (Covert & Lee, AISTATS 2021).

Both sample from the Shapley kernel ``p(z) ∝ (p-1) / (C(p,|z|) |z| (p-|z|))`` over proper
coalitions (size ``∝ 1/(s(p-s))``, then a uniform set), work on the centred game
``v - v(empty)`` and are exactly efficient. Budget accounting (``accounting="distinct"`` or
``"draws"``, option ``draws``) is the one of :mod:`shapleig_baselines.lss`.

KernelSHAP solves the sampled constrained weighted least squares
``min_phi sum_z w_z (z^T phi - v(z))^2  s.t.  1^T phi = v(N)`` in closed form,
``phi = A^-1 (b - 1 (1^T A^-1 b - v(N)) / (1^T A^-1 1))`` with ``A = sum w_z z z^T`` and
``b = sum w_z z v(z)``. Options: ``paired`` (draw ``z`` and its complement together) and
``border`` (enumerate the outer size layers whose expected number of draws covers them, the
shapiq rule ``remaining * q_s >= C(p, s)`` with ``q`` renormalised over the layers left). When
the budget covers every proper coalition, all are enumerated with their exact kernel weights and
the result is the exact Shapley value.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import scipy.linalg

from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import border_layers, coalitions_of_size
from shapleig.games.numeric import power_of_two_scale
from shapleig.runs.budget import BudgetedGame

from .draws import DrawEstimator, evaluations_after_each_draw
from .sampling import (
    coalition_probability,
    draw_within_budget,
    interleave_complements,
    sample_coalitions,
    sample_kernel_size,
    size_distribution,
)

MAX_ENUMERATED_PLAYERS = 23  # full enumeration (2^p rows) only for small games
KS_TRACE_POINTS = 12  # each checkpoint costs one p x p solve


def harmonic(n: int) -> float:
    """``H_n = sum_{j<=n} 1/j``."""
    return float(np.sum(1.0 / np.arange(1, n + 1, dtype=np.float64))) if n > 0 else 0.0


def kernel_gram(n_players: int) -> np.ndarray:
    """Exact ``A = E[z z^T]`` under the Shapley kernel: ``1/2`` on the diagonal, ``rho`` off it.

    ``rho = sum_s q_s s(s-1) / (p(p-1))`` (0.26 / 0.3072 / 0.3344 for p = 5 / 8 / 12).
    """
    p = n_players
    q = size_distribution(p, "kernel")
    s = np.arange(p + 1, dtype=np.float64)
    rho = float(np.sum(q * s * (s - 1))) / (p * (p - 1))
    a = np.full((p, p), rho)
    np.fill_diagonal(a, 0.5)
    return a


def constrained_solve(gram: np.ndarray, b: np.ndarray, total: float) -> tuple[np.ndarray, str]:
    """``argmin phi^T G phi - 2 phi^T b  s.t.  1^T phi = total``: ``float64[p]`` and the solver used.

    Covert-Lee closed form through a Cholesky factor when ``G`` is well conditioned;
    otherwise (too few draws to span R^p) the minimum-norm solution of the KKT system
    ``[[G, 1], [1^T, 0]] [phi; lam] = [b; total]``, which is always consistent, so the
    constraint still holds.
    """
    p = b.shape[0]
    try:
        # Cholesky is the cheap path; a tiny pivot relative to the largest flags rank deficiency
        factor = scipy.linalg.cho_factor(gram, lower=True, check_finite=False)
        pivots = np.abs(np.diag(factor[0]))
        if pivots.min() ** 2 > 1e-10 * max(float(np.max(np.diag(gram))), 1e-300):
            x = scipy.linalg.cho_solve(factor, b, check_finite=False)
            y = scipy.linalg.cho_solve(factor, np.ones(p), check_finite=False)
            return x - y * (x.sum() - total) / y.sum(), "closed-form"
    except np.linalg.LinAlgError:
        pass
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = gram
    kkt[:p, p] = 1.0
    kkt[p, :p] = 1.0
    rhs = np.append(b, total)
    sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
    return sol[:p], "kkt-lstsq"


def enumerated_system(z: np.ndarray, v: np.ndarray, size_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact-weight part of the regression: ``sum_S P(S) z z^T`` and ``sum_S P(S) z v(S)``.

    ``z`` ``bool[m, p]`` enumerated coalitions, ``v`` centred values ``float64[m]``,
    ``P(S) = size_probs[|S|] / C(p, |S|)`` their kernel probabilities.
    """
    p = z.shape[1]
    w = coalition_probability(p, z.sum(axis=1), size_probs)
    zf = z.astype(np.float64)
    return (zf * w[:, None]).T @ zf, zf.T @ (w * v)


def combine_systems(
    gram_enum: np.ndarray,
    b_enum: np.ndarray,
    gram_draws: np.ndarray,
    b_draws: np.ndarray,
    n_draws: int,
    mass_rest: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Add sampled draws to the enumerated part: the draws (sums ``Z^T Z`` and ``Z^T v`` over
    ``n_draws`` draws from the kernel restricted to the other layers) stand for the kernel mass
    ``mass_rest`` of those layers, so each draw weighs ``mass_rest / n_draws``."""
    scale = mass_rest / n_draws
    return gram_enum + gram_draws * scale, b_enum + b_draws * scale


class KernelSHAP(DrawEstimator):
    """KernelSHAP, Covert-Lee closed form (the LSS paper's "KS"); consistent, efficient.

    ``paired``: draw a coalition and its complement together (both count as draws; a pair is
    taken whole or not at all). ``border``: enumerate outer layers first (see module doc).
    Defaults (no pairing, no border) are i.i.d. kernel sampling as in the LSS paper.
    """

    name: ClassVar[str] = "kernelshap"

    def __init__(
        self, *, paired: bool = False, border: bool = False, accounting: str = "distinct", draws: int | None = None
    ):
        super().__init__(accounting=accounting, draws=draws)
        self.paired = bool(paired)
        self.border = bool(border)

    @staticmethod
    def _enumerated(z: np.ndarray, v: np.ndarray, v0: float, scale: float, q: np.ndarray,
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact-weight system of the enumerated layers on the centred values ``(v - v0) /
        scale``; zeros when none are enumerated."""
        p = z.shape[1]
        if z.shape[0] == 0:
            return np.zeros((p, p)), np.zeros(p)
        return enumerated_system(z, v / scale - v0 / scale, q)

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        p = game.n_players
        rng = np.random.default_rng(seed)
        v0, vn = self.endpoints(game)
        q = size_distribution(p, "kernel")
        target = self.planned_draws(game) if self.accounting == "draws" else self.draws
        # draws mode: enumerated layers count as draws, and must still fit the BudgetedGame
        room = min(target, game.remaining) if self.accounting == "draws" else game.remaining

        # layers enumerated with exact weights: everything if it fits, else the border layers
        fits_all = p <= MAX_ENUMERATED_PLAYERS and room >= (1 << p) - 2
        if fits_all and self.accounting == "distinct" and self.draws is None:
            layers = list(range(1, p))
        elif self.border:
            layers = border_layers(p, room, q)
        else:
            layers = []
        n_enum = 0
        z_enum, v_enum = np.zeros((0, p), dtype=bool), np.zeros(0)
        if layers:
            z_enum = np.concatenate([coalitions_of_size(p, s) for s in layers])
            v_enum = game(z_enum)  # fits: the layers were chosen within the remaining budget
            n_enum = z_enum.shape[0]

        q_rest = q.copy()
        q_rest[layers] = 0.0
        mass_rest = float(q_rest.sum())
        trace: list[tuple[int, np.ndarray]] = []
        draws = None
        solver = "closed-form"
        if mass_rest > 1e-15:
            rest_sizes = np.flatnonzero(q_rest > 0)
            support = sum(math.comb(p, int(s)) for s in rest_sizes) if self.accounting == "distinct" else None
            rest_mask = q_rest > 0

            def sampler(start: int, m: int) -> np.ndarray:
                if self.paired:
                    return interleave_complements(sample_coalitions(rng, p, m // 2, q_rest))
                return sample_coalitions(rng, p, m, q_rest)

            max_draws = None
            if self.accounting == "draws":
                max_draws = max(0, target - n_enum)
            elif self.draws is not None:
                max_draws = self.draws
            if max_draws is not None and self.paired:
                max_draws -= max_draws % 2
            before = game.evaluations
            draws = draw_within_budget(
                game,
                sampler,
                max_draws=max_draws,
                support_size=support,
                in_support=lambda z: rest_mask[z.sum(axis=1)],
                block=2 if self.paired else 1,
            )
            tau = draws.n_draws
            # on v / 2^k (exact; results unchanged): sums near 1e308 would overflow, 1e-308 underflow
            scale = power_of_two_scale(v0, vn, v_enum, draws.values)
            gram, b = self._enumerated(z_enum, v_enum, v0, scale, q)
            if tau:
                zf = draws.coalitions.astype(np.float64)
                v = draws.values / scale - v0 / scale
                evals = evaluations_after_each_draw(before, draws)
                # anytime checkpoints from 2p draws on (fewer draws rarely span R^p)
                first = min(tau, 2 * p)
                ends = np.geomspace(first, tau, num=KS_TRACE_POINTS).round().astype(np.int64)
                ends = np.union1d(np.unique(ends), [tau])
                if self.paired:  # checkpoints at whole pairs
                    ends = np.unique(np.maximum(ends - ends % 2, 2))
                g_acc = np.zeros((p, p))
                b_acc = np.zeros(p)
                start = 0
                for end in ends:
                    seg = zf[start:end]
                    g_acc += seg.T @ seg
                    b_acc += seg.T @ v[start:end]
                    # importance weight of a sampled draw: (mass of the sampled layers) / draws
                    system = combine_systems(gram, b, g_acc, b_acc, end, mass_rest)
                    phi, solver = constrained_solve(*system, vn / scale - v0 / scale)
                    trace.append((int(evals[end - 1]), scale * phi))
                    start = end
        if not trace:
            scale = power_of_two_scale(v0, vn, v_enum)
            gram, b = self._enumerated(z_enum, v_enum, v0, scale, q)
            phi, solver = constrained_solve(gram, b, vn / scale - v0 / scale)
            trace.append((game.evaluations, scale * phi))
        values = trace[-1][1].copy()
        n_draws = (0 if draws is None else draws.n_draws) + n_enum
        return self.result(
            values,
            game,
            v0,
            draws,
            trace=trace,
            extra={
                "n_draws": n_draws,
                "enumerated_sizes": layers,
                "n_enumerated": n_enum,
                "solver": solver,
                "paired": self.paired,
                "draws_target": target,
            },
        )


def uks_coefficients(z: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw UKS weights for :func:`shapleig_baselines.lss.linear_estimate`: ``2 H_{p-1} v`` on members
    and ``2 H_{p-1} |S| v / p`` subtracted from everyone (``v`` centred, ``float64[tau]``)."""
    p = z.shape[1]
    h2 = 2.0 * harmonic(p - 1)
    s = z.sum(axis=1).astype(np.float64)
    return h2 * v, h2 * s * v / p


class UnbiasedKernelSHAP(DrawEstimator):
    """Unbiased KernelSHAP: KernelSHAP's sampled ``b`` with the exact ``A = E[z z^T]``.

    Per-sample form ``phi_i = v(N)/p + (1/tau) sum_k 2 H_{p-1} (1[i in S_k] - |S_k|/p) v(S_k)``
    (same LSS weights, kernel sampling). Unbiased for a fixed number of draws and exactly
    efficient.
    """

    name: ClassVar[str] = "unbiased-kernelshap"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        rng = np.random.default_rng(seed)
        p = game.n_players
        return self.linear_sampling_estimate(game, lambda m: sample_kernel_size(rng, p, m), uks_coefficients)


__all__ = [
    "KernelSHAP",
    "UnbiasedKernelSHAP",
    "combine_systems",
    "constrained_solve",
    "enumerated_system",
    "harmonic",
    "kernel_gram",
    "uks_coefficients",
]
