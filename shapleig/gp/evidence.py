"""Laplace approximation of a Hamming-kernel GP's log evidence around its MAP fit (docs/math.md §13).

BIC charges every hyperparameter ``(1/2) log t``. With 2p-8p evaluations most of ARD's p
lengthscales are barely constrained by the data; their posterior is close to their prior and their
true Occam factor is close to 1, so BIC keeps the shared kernel long after the data show that a few
players dominate. The Laplace approximation measures each parameter's Occam factor instead:

    log p(y | kernel) ~ -f(u*) + (1/2) g^T H^-1 g + (k/2) log(2 pi) - (1/2) log det H,

with ``f(u) = -log N(y~ | c, K + sigma^2 I) - log N(log l; loc, scale^2)``, the negative log joint
density over ``u = (c, raw_s, log l)`` (the lengthscale prior is LogNormal, so it is Gaussian in
``log l``). Only the k lengthscale coordinates are integrated: the constant mean and the
outputscale have flat priors, which make their Occam factors improper, so they are profiled
(held at the MAP; both kernels share them). ``g`` and ``H`` are the gradient and Hessian of f in
the lengthscale block at the MAP fit (``g`` is not exactly 0 there: the MAP is found in the fit's
softplus coordinates), the Hessian by central differences of the analytic gradient of
:mod:`shapleig.gp.numpy_fit` (2k gradient evaluations, each one Cholesky factor of the t x t kernel matrix).
Eigenvalues of H below ``MIN_CURVATURE`` are raised to it (a flat direction: the quadratic
expansion does not hold there). Used by ``surrogate="laplace"`` (:mod:`shapleig.gp.kernel_choice`).
"""

from __future__ import annotations

import math

import numpy as np

from shapleig.gp.numpy_fit import MapProblem
from shapleig.gp.posterior import Hyperparameters, standardize
from shapleig.gp.priors import MIN_LENGTHSCALE, inverse_softplus, sigmoid

# Finite-difference step in u (log-lengthscale, raw outputscale, mean constant).
STEP = 1e-4
MIN_CURVATURE = 1e-2
# The Hessian costs 2k + 1 evaluations of the MAP objective's gradient (k = p lengthscales for ARD),
# each O(t^2 p + t^3) with t >= p + 1 observations: O(p^4) per refit where BIC's weights cost nothing.
# Measured with ShaplEIG at budget p + 2 on a linear game (one thread): 3.6x the default's time at
# p = 200, 6x at p = 300, about 10x at p = 600 (one ARD evidence ~68 s there). Larger games are refused.
LAPLACE_MAX_PLAYERS = 200


def laplace_players_reason(n_players: int) -> str:
    """Why ``surrogate="laplace"`` refuses games above :data:`LAPLACE_MAX_PLAYERS` players (one phrase).

    Args:
        n_players: the number of players p.

    Returns:
        the phrase, with the count of gradient evaluations at p.
    """
    return (f"surrogate='laplace': its evidence differentiates the ARD kernel's gradient in each of the p lengthscales, "
            f"2p + 1 = {2 * int(n_players) + 1} evaluations per kernel and refit, O(p^4): about 10x the default "
            f"surrogate's time at p = 600; surrogate='auto' weighs the same kernels by BIC")


def _to_theta(problem: MapProblem, u: np.ndarray) -> np.ndarray:
    theta = u.copy()
    lsb = problem.lengthscale_block()
    theta[lsb] = inverse_softplus(np.maximum(np.exp(u[lsb]) - MIN_LENGTHSCALE, 1e-300))
    return theta


def _grad_u(problem: MapProblem, u: np.ndarray) -> tuple[float, np.ndarray]:
    """``f(u)`` and its gradient: the fit's objective times t, moved to log-lengthscale coordinates.

    The fit's objective holds ``-log p_LN(l)`` (density over l); over ``log l`` the density gains the
    Jacobian ``l``, so ``f = t * objective - sum(log l)``.
    """
    t = problem.X.shape[0]
    lsb = problem.lengthscale_block()  # the size kernel's coordinates, if any, follow (raw, profiled)
    theta = _to_theta(problem, u)
    value, g = problem.objective(theta)
    ls = np.exp(u[lsb])
    g = g * t
    g[lsb] = g[lsb] * ls / sigmoid(theta[lsb]) - 1.0
    return value * t - float(np.sum(u[lsb])), g


def laplace_log_evidence(X: np.ndarray, y: np.ndarray, hyper: Hyperparameters) -> float:
    """Laplace log evidence (nats) of the fitted kernel ``hyper`` (MAP, standardised units) on ``(X, y)``.

    ``X`` bool[t, p], ``y`` raw float64[t]. The kernel spec (``hyper.kernel``) must have a Hamming
    part, whose lengthscales are integrated (p of them for ARD, one shared; its prior as fitted,
    the ARD shrinkage of ``spread`` included); the other coordinates are profiled. Returns -inf
    when the objective cannot be evaluated (indefinite kernel matrix).

    Args:
        X: ``bool[t, p]`` coalitions.
        y: raw values ``float64[t]``.
        hyper: the fitted hyperparameters (MAP, standardised units) with their kernel spec.

    Returns:
        the log evidence in nats, or -inf.
    """
    y_std, _, _ = standardize(np.asarray(y, dtype=np.float64))
    problem = MapProblem.build(hyper.kernel, X, y_std, hyper.noise)
    lsb = problem.lengthscale_block()
    packed = problem.pack(0.0, hyper.params)
    k = lsb.stop - lsb.start
    ls = np.asarray(hyper.lengthscales, dtype=np.float64)[:k]
    if lsb.start != 2:
        raise ValueError(f"the Laplace evidence integrates the lengthscales of a leading Hamming part; "
                         f"kernel {hyper.kernel.name!r} has its lengthscales at {lsb}")
    u0 = np.concatenate([[hyper.mean_constant], packed[1:2], np.log(ls), packed[2 + k:]])
    d = 2 + k
    try:
        f0, g0 = _grad_u(problem, u0)
        H = np.zeros((u0.size, d))  # columns: the lengthscale block (the size kernel, like c and s, is profiled)
        for j in range(2, d):
            e = np.zeros(u0.size)
            e[j] = STEP
            H[:, j] = (_grad_u(problem, u0 + e)[1] - _grad_u(problem, u0 - e)[1]) / (2 * STEP)
    except np.linalg.LinAlgError:
        return -np.inf
    if not (np.isfinite(f0) and np.all(np.isfinite(g0)) and np.all(np.isfinite(H))):
        return -np.inf
    # the lengthscale block only: mean constant and outputscale are profiled (their flat priors
    # make their own Occam factors improper; both kernels share them)
    H, g0 = H[2:d, 2:d], g0[2:d]
    vals, vecs = np.linalg.eigh(0.5 * (H + H.T))
    vals = np.maximum(vals, MIN_CURVATURE)
    proj = vecs.T @ g0
    return float(-f0 + 0.5 * np.sum(proj**2 / vals) + 0.5 * (d - 2) * math.log(2 * math.pi)
                 - 0.5 * np.sum(np.log(vals)))
