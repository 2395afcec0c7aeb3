"""Hyperparameters integrated for the read-out: Laplace proposal, importance sampling (docs/math.md §16).

A MAP fit reads the index posterior at one point of the hyperparameters; with 2p-8p evaluations
the order variances, the noise and the lengthscale are poorly determined, and the MAP posterior is
overconfident. :func:`integrated_kernels` replaces each fitted kernel by a weighted sample of its
hyperparameter posterior, and the mixture read-out (:mod:`shapleig.gp.mixture`) combines the
samples' posteriors by the law of total covariance, exactly as it combines kernels.

For one kernel with MAP coordinates theta* (the fit's own, :class:`~shapleig.gp.numpy_fit.MapProblem`;
the target density over them is ``exp(-t objective(theta))``, the MAP objective's):

- the Hessian H of ``t objective`` at theta*, by central differences of the analytic gradient,
  symmetrised, its eigenvalues raised to :data:`MIN_CURVATURE` (a flat or clipped direction: the
  proposal is no wider than sd 3 in the raw coordinates);
- ``n_draws`` draws from the proposal ``N(theta*, INFLATE^2 H^-1)``, plus theta* itself;
- self-normalised importance weights ``p(y, theta) / q(theta)`` (a draw whose kernel matrix fails
  has weight 0).

Each draw becomes a mixture component named ``"<kernel>~<i>"`` (:data:`DRAW_MARK`) with weight
``w_kernel w_i``; the component named as the kernel is the MAP, which keeps driving the acquisition
and the estimate (the mixture's mean is the MAP components'; the draws widen the covariance about
it, :attr:`~shapleig.gp.mixture.MixturePosterior.mean`).
"""

from __future__ import annotations

import math

import numpy as np

from shapleig.gp.kernel_choice import KernelFit
from shapleig.gp.numpy_fit import MapProblem
from shapleig.gp.posterior import Hyperparameters, standardize

DRAW_MARK = "~"
STEP = 1e-4
MIN_CURVATURE = 1.0 / 9.0
INFLATE = 1.5
# kernels whose evidence weight is below this keep their MAP alone
MIN_KERNEL_WEIGHT = 1e-3


def _hessian(problem: MapProblem, theta: np.ndarray) -> np.ndarray:
    t = problem.X.shape[0]
    n = theta.shape[0]
    H = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = STEP
        H[i] = (problem.objective(theta + e)[1] - problem.objective(theta - e)[1]) * (t / (2.0 * STEP))
    return 0.5 * (H + H.T)


def _log_target(problem: MapProblem, theta: np.ndarray) -> float:
    try:
        value = problem.objective(theta, grad=False)[0]
    except np.linalg.LinAlgError:
        return -math.inf
    return -problem.X.shape[0] * value if np.isfinite(value) else -math.inf


def hyperparameter_draws(X: np.ndarray, y: np.ndarray, hyper: Hyperparameters, n_draws: int,
                         rng: np.random.Generator) -> list[tuple[float, Hyperparameters]]:
    """``[(weight, hyperparameters)]``: the MAP ``hyper`` first, then ``n_draws`` importance draws.

    Args:
        X: the archive the kernel was fitted on, bool[t, p].
        y: its raw values, float64[t].
        hyper: the MAP fit (standardised units), its kernel fitted by the numpy engine.
        n_draws: proposal draws (0: the MAP alone, weight 1).
        rng: the draws' generator.

    Returns:
        Weights summing to 1 and the hyperparameters they belong to (draws of weight 0 dropped).

    Example:
        >>> import numpy as np
        >>> from shapleig.gp.kernels.graded import Graded, GradedParams
        >>> X = np.random.default_rng(0).random((12, 4)) < 0.5
        >>> h = Hyperparameters(Graded(), GradedParams(np.full(4, 0.5), 1.0, np.ones(3)), 1e-4)
        >>> draws = hyperparameter_draws(X, X.sum(axis=1) + 0.0, h, 4, np.random.default_rng(1))
        >>> bool(np.isclose(sum(w for w, _ in draws), 1.0))
        True
    """
    if n_draws <= 0:
        return [(1.0, hyper)]
    y_std, _, _ = standardize(y)
    problem = MapProblem.build(hyper.kernel, X, y_std, hyper.noise)
    theta0 = problem.pack(hyper.mean_constant, hyper.params, hyper.noise)
    try:
        H = _hessian(problem, theta0)
    except np.linalg.LinAlgError:
        return [(1.0, hyper)]
    if not np.all(np.isfinite(H)):
        return [(1.0, hyper)]
    vals, vecs = np.linalg.eigh(H)
    vals = np.maximum(vals, MIN_CURVATURE)
    root = vecs / np.sqrt(vals) * INFLATE  # proposal covariance root: INFLATE^2 H^-1 = root root^T
    n = theta0.shape[0]
    log_det = float(np.sum(np.log(np.sqrt(vals) / INFLATE)))  # log det(root^-1)
    z = np.vstack([np.zeros(n), rng.standard_normal((int(n_draws), n))])
    thetas = theta0 + z @ root.T
    log_q = -0.5 * np.sum(z**2, axis=1) + log_det
    log_p = np.array([_log_target(problem, th) for th in thetas])
    log_w = log_p - log_q
    if not np.isfinite(log_w[0]):
        return [(1.0, hyper)]
    w = np.exp(log_w - np.max(log_w[np.isfinite(log_w)]))
    w[~np.isfinite(w)] = 0.0
    w /= w.sum()
    out = [(float(w[0]), hyper)]
    for wi, th in zip(w[1:], thetas[1:]):
        if wi > 0.0:
            out.append((float(wi), problem.hyperparameters(th)))
    return out


def integrated_kernels(X: np.ndarray, y: np.ndarray, fits: list[KernelFit], n_draws: int,
                       seed: int) -> list[tuple[str, float, Hyperparameters]]:
    """The mixture's ``(name, weight, hyperparameters)`` with each kernel's hyperparameters integrated.

    Integrated by :func:`hyperparameter_draws`; kernels below :data:`MIN_KERNEL_WEIGHT`, or whose
    fit failed, keep their MAP alone.

    Args:
        X: ``float64[t, p]`` of 0/1, the archive.
        y: ``float64[t]`` raw values (standardised by :func:`hyperparameter_draws`, as the fits were).
        fits: the kernels' MAP fits.
        n_draws: hyperparameter draws per kernel.
        seed: seeds the draws (kernel i: ``seed + i``).

    Returns:
        ``(name, weight, hyperparameters)`` per component, draws named ``"<kernel>~<i>"``.
    """
    out: list[tuple[str, float, Hyperparameters]] = []
    for i, k in enumerate(fits):
        if k.weight < MIN_KERNEL_WEIGHT or not k.fit.success:
            out.append((k.kernel, k.weight, k.hyper))
            continue
        draws = hyperparameter_draws(X, y, k.hyper, n_draws, np.random.default_rng(int(seed) + i))
        out.append((k.kernel, k.weight * draws[0][0], draws[0][1]))
        out += [(f"{k.kernel}{DRAW_MARK}{j}", k.weight * w, h) for j, (w, h) in enumerate(draws[1:], start=1)]
    return out


__all__ = ["DRAW_MARK", "hyperparameter_draws", "integrated_kernels"]
