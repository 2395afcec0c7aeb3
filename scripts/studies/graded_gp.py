"""A self-contained prototype of the graded Walsh-kernel GP for read-out studies (issue 29, phase 1).

Not library code: a research prototype that ``graded_prototype.py`` fits on the archives the
current default chose. Everything is in standardised units (y as the library standardises it).

Model (shared lengthscale l; docs/math.md §3, §15 and ``shapleig/gp/walsh.py``):

    k(z, z') = g_tail K(z, z') + (1 - g_tail) kappa + sum_{k=1..K} (g_k - g_tail) K^(k)(z, z')
               + k_size(|z|, |z'|) + sigma^2 [z = z'],

K the Hamming kernel (outputscale s, lengthscale l), K^(k) its order-k Walsh part, ``g_tail`` 1
("hamming" tail) or g_K ("last": the last free order's factor continues), k_size the size trend
(no jumps). With one lengthscale every Hamming-side entry depends on the Hamming distance d only,
so the kernel is a table over d = 0..p and every gradient is a contraction of ``W = (alpha alpha^T -
K^-1)/2`` aggregated by distance (O(t^2) per evaluation besides the Cholesky).

Hyperparameters theta (unconstrained) and priors (all proper, so evidences compare):
    c ~ N(0, 2^2)                     constant mean
    log s ~ N(0, 3^2)                 outputscale of the Hamming part
    log l ~ N(mu0 - sd0^2, sd0^2)     the library's LogNormal(mu0, sd0) lengthscale prior as optimised
                                      (density of l without Jacobian = this normal in log l)
    log g_k ~ N(0, G_SD^2)            per-order variance factors (g = 1: the Hamming kernel)
    log size_var ~ N(log 0.1, 3^2), log size_len ~ N(log 0.5, 1)   (the size trend)
    eta ~ N(log noise0, NOISE_SD^2),  sigma^2 = noise_floor + e^eta  (learned noise)

The ARD variant (``ard_spread``) gives every player its own log lengthscale u_j = u + delta_j with
delta ~ N(0, spread^2) shrunk toward the shared one; its kernel goes through the walsh.py routes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize

from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels import size_kernel_matrix
from shapleig.gp.posterior import standardize
from shapleig.gp.priors import lengthscale_prior_params
from shapleig.gp.walsh import (
    graded_index_columns,
    graded_index_covariance,
    krawtchouk_table,
    order_kernel_rho_vjp,
    order_kernels,
    walsh_coordinates,
)

LOG2PI = math.log(2 * math.pi)


def chol(K: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor with escalating jitter (1e-12 x mean diagonal, tenfold per failure)."""
    try:
        return np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        pass
    base = float(np.mean(np.diag(K))) * 1e-12
    for attempt in range(8):
        try:
            return np.linalg.cholesky(K + base * 10.0**attempt * np.eye(K.shape[0]))
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("kernel matrix not positive definite even with jitter")


@dataclass(frozen=True)
class Spec:
    """One surrogate: free orders K (0 = plain Hamming), tail rule, size trend, noise, ARD spread."""

    name: str
    orders: int = 3
    tail: str = "hamming"
    trend: bool = False
    learn_noise: bool = False
    noise: float = 1e-6  # the fixed noise, or the centre of the learned noise's prior
    noise_sd: float = 3.0
    noise_floor: float = 1e-12
    g_sd: float = 2.0
    ard_spread: float | None = None  # None: shared lengthscale
    # "iid": log g_k ~ N(0, g_sd^2) independently; "rw": a random walk over the orders,
    # log g_1 ~ N(0, g_sd^2), log g_k - log g_{k-1} ~ N(0, rw_sd^2): deviations from the geometric
    # law are charged order by order, so an unconstrained order follows its neighbour
    g_prior: str = "iid"
    rw_sd: float = 1.0


@dataclass
class Layout:
    names: list[str] = field(default_factory=list)
    mean: list[float] = field(default_factory=list)
    sd: list[float] = field(default_factory=list)

    def add(self, name: str, mean: float, sd: float) -> None:
        self.names.append(name)
        self.mean.append(mean)
        self.sd.append(sd)

    def index(self, name: str) -> int:
        return self.names.index(name)


class Problem:
    """The negative log joint density -log p(y, theta) of one spec on one archive."""

    def __init__(self, X: np.ndarray, y_std: np.ndarray, spec: Spec) -> None:
        self.X = np.asarray(X, dtype=bool)
        self.y = np.asarray(y_std, dtype=np.float64)
        self.spec = spec
        self.t, self.p = self.X.shape
        Xf = self.X.astype(np.float64)
        self.dist = (Xf @ (1 - Xf).T + (1 - Xf) @ Xf.T).round().astype(np.int64)
        self.sizes = self.X.sum(axis=1)
        self.size_pairs = (self.sizes[:, None] * (self.p + 1) + self.sizes[None, :]).ravel()
        self.kraw = np.array([krawtchouk_table(self.p, k) for k in range(4)])
        mu0, sd0 = lengthscale_prior_params(self.p)
        L = Layout()
        L.add("c", 0.0, 2.0)
        L.add("log_s", 0.0, 3.0)
        L.add("log_l", mu0 - sd0**2, sd0)
        for k in range(1, spec.orders + 1):
            L.add(f"log_g{k}", 0.0, spec.g_sd)
        if spec.trend:
            L.add("log_size_var", math.log(0.1), 3.0)
            L.add("log_size_len", math.log(0.5), 1.0)
        if spec.learn_noise:
            L.add("eta", math.log(spec.noise), spec.noise_sd)
        if spec.ard_spread is not None:
            for j in range(self.p):
                L.add(f"delta{j}", 0.0, spec.ard_spread)
        self.layout = L
        self.prior_mean = np.array(L.mean)
        self.prior_sd = np.array(L.sd)

    @property
    def dim(self) -> int:
        return len(self.layout.names)

    def initial(self) -> np.ndarray:
        th = self.prior_mean.copy()
        th[self.layout.index("log_s")] = math.log(math.log(2.0))
        if self.spec.trend:
            th[self.layout.index("log_size_var")] = math.log(0.5)
        return th

    # -- hyperparameters --------------------------------------------------------------------------
    def unpack(self, th: np.ndarray) -> dict:
        L, sp = self.layout, self.spec
        out = {"c": th[0], "s": math.exp(th[1]), "l": math.exp(th[2]),
               "g": np.array([math.exp(th[L.index(f"log_g{k}")]) for k in range(1, sp.orders + 1)])}
        out["g_tail"] = 1.0 if (sp.tail == "hamming" or sp.orders == 0) else float(out["g"][-1])
        out["size_var"] = math.exp(th[L.index("log_size_var")]) if sp.trend else 0.0
        out["size_len"] = math.exp(th[L.index("log_size_len")]) if sp.trend else 0.5
        out["noise"] = sp.noise_floor + math.exp(th[L.index("eta")]) if sp.learn_noise else sp.noise
        if sp.ard_spread is not None:
            i0 = L.index("delta0")
            out["lengthscales"] = np.exp(th[2] + th[i0:i0 + self.p])
        else:
            out["lengthscales"] = np.full(self.p, out["l"])
        return out

    def size_kernel(self, h: dict) -> np.ndarray | None:
        if not self.spec.trend:
            return None
        return size_kernel_matrix(self.p, 0.0, 0.0, h["size_var"], h["size_len"])

    # -- kernel -----------------------------------------------------------------------------------
    def _shared_table(self, h: dict) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Kernel over Hamming distance d = 0..p and its derivatives by parameter name."""
        p, s, length = self.p, h["s"], h["l"]
        x = 1.0 / (p * length)
        b = math.exp(-x)
        rho = math.tanh(0.5 * x)
        kappa = s * ((1.0 + b) / 2.0) ** p
        d = np.arange(p + 1, dtype=np.float64)
        ham = s * np.exp(-x * d)
        gt = h["g_tail"]
        K = self.spec.orders
        parts = [kappa * rho**k * self.kraw[k] for k in range(K + 1)]  # orders 0..K
        table = gt * ham + (1.0 - gt) * parts[0]
        for k in range(1, K + 1):
            table = table + (h["g"][k - 1] - gt) * parts[k]
        dlogk, drho = p * b * x / (1.0 + b), -x * (1.0 - rho**2) / 2.0
        dl = gt * ham * d * x + (1.0 - gt) * parts[0] * dlogk
        for k in range(1, K + 1):
            dl = dl + (h["g"][k - 1] - gt) * parts[k] * (dlogk + k * drho / rho)
        der = {"log_s": table.copy(), "log_l": dl}
        for k in range(1, K + 1):
            if self.spec.tail == "last" and k == K:
                # g_K multiplies every order >= K: the Hamming kernel minus orders 0..K-1
                der[f"log_g{k}"] = h["g"][k - 1] * (ham - sum(parts[:K]))
            else:
                der[f"log_g{k}"] = h["g"][k - 1] * parts[k]
        return table, der

    def kernel(self, h: dict) -> np.ndarray:
        """K(X, X) + k_size + sigma^2 I (float64[t, t])."""
        if self.spec.ard_spread is None:
            table, _ = self._shared_table(h)
            K = table[self.dist]
        else:
            K = self._ard_kernel(h)
        KS = self.size_kernel(h)
        if KS is not None:
            K = K + KS.ravel()[self.size_pairs].reshape(self.t, self.t)
        K[np.diag_indices(self.t)] += h["noise"]
        return K

    def _ard_kernel(self, h: dict) -> np.ndarray:
        from shapleig.gp.esp import hamming_kernel

        ls, s, gt = h["lengthscales"], h["s"], h["g_tail"]
        rho, kappa = walsh_coordinates(ls, s)
        K = gt * hamming_kernel(self.X, self.X, ls, s) + (1.0 - gt) * kappa
        if self.spec.orders:
            parts = order_kernels(self.X, self.X, rho, kappa, tuple(range(1, self.spec.orders + 1)))
            K = K + np.tensordot(h["g"] - gt, parts, axes=1)
        return K

    # -- objective --------------------------------------------------------------------------------
    def log_prior(self, th: np.ndarray) -> tuple[float, np.ndarray]:
        z = (th - self.prior_mean) / self.prior_sd
        value = float(-0.5 * np.sum(z**2) - np.sum(np.log(self.prior_sd)) - 0.5 * self.dim * LOG2PI)
        grad = -z / self.prior_sd
        K = self.spec.orders
        if self.spec.g_prior == "rw2" and K >= 2:
            # second differences of (log g_0 = 0, log g_1, ..., log g_K): the log variance per order,
            # log g_k + k log rho, is a priori linear in k (the geometric law, at a rate the data set)
            # and bends only where the data insist; unit Jacobian
            i1 = self.layout.index("log_g1")
            lg = np.concatenate([[0.0], th[i1:i1 + K]])
            zi = z[i1 + 1:i1 + K]
            value += float(0.5 * np.sum(zi**2))
            grad[i1 + 1:i1 + K] += zi / self.prior_sd[i1 + 1:i1 + K]
            d2 = (lg[2:] - 2 * lg[1:-1] + lg[:-2]) / self.spec.rw_sd
            value += float(-0.5 * np.sum(d2**2) + np.sum(np.log(self.prior_sd[i1 + 1:i1 + K]))
                           - (K - 1) * math.log(self.spec.rw_sd))
            gl = np.zeros(K + 1)
            gl[2:] -= d2 / self.spec.rw_sd
            gl[1:-1] += 2 * d2 / self.spec.rw_sd
            gl[:-2] -= d2 / self.spec.rw_sd
            grad[i1:i1 + K] += gl[1:]
        if self.spec.g_prior == "rw" and K >= 2:
            # replace the independent terms of log g_2..g_K by increments (unit Jacobian)
            i1 = self.layout.index("log_g1")
            lg = th[i1:i1 + K]
            zi = z[i1 + 1:i1 + K]
            value += float(0.5 * np.sum(zi**2))
            grad[i1 + 1:i1 + K] += zi / self.prior_sd[i1 + 1:i1 + K]
            inc = np.diff(lg) / self.spec.rw_sd
            value += float(-0.5 * np.sum(inc**2) + np.sum(np.log(self.prior_sd[i1 + 1:i1 + K]))
                           - (K - 1) * math.log(self.spec.rw_sd))
            gi = np.zeros(K)
            gi[1:] -= inc / self.spec.rw_sd
            gi[:-1] += inc / self.spec.rw_sd
            grad[i1:i1 + K] += gi
        return value, grad

    def objective(self, th: np.ndarray, grad: bool = True):
        """``-log N(y; c, K) - log prior(theta)`` and its gradient (1e25 beyond 12 prior sds or
        where the kernel cannot be factorised: outside the region any fit or draw should reach)."""
        if np.any(np.abs(th - self.prior_mean) > 12.0 * self.prior_sd):
            return (1e25, np.zeros_like(th)) if grad else 1e25
        h = self.unpack(th)
        try:
            K = self.kernel(h)
            cf = (chol(K), True)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError, OverflowError):
            return (1e25, np.zeros_like(th)) if grad else 1e25
        r = self.y - h["c"]
        alpha = cho_solve(cf, r, check_finite=False)
        logdet = 2.0 * np.log(np.diag(cf[0])).sum()
        lp, dlp = self.log_prior(th)
        value = 0.5 * r @ alpha + 0.5 * logdet + 0.5 * self.t * LOG2PI - lp
        if not np.isfinite(value):
            return (1e25, np.zeros_like(th)) if grad else 1e25
        if not grad:
            return float(value)
        Kinv = cho_solve(cf, np.eye(self.t), check_finite=False)
        W = 0.5 * (np.outer(alpha, alpha) - Kinv)  # d log N / d K
        g = np.zeros_like(th)
        L = self.layout
        g[0] = -alpha.sum()
        if self.spec.ard_spread is None:
            _, der = self._shared_table(h)
            Wd = np.bincount(self.dist.ravel(), weights=W.ravel(), minlength=self.p + 1)
            for name, dtab in der.items():
                g[L.index(name)] = -float(Wd @ dtab)
        else:
            self._ard_gradient(h, W, g)
        if self.spec.trend:
            q = self.p + 1
            Ws = np.bincount(self.size_pairs, weights=W.ravel(), minlength=q * q).reshape(q, q)
            a = np.arange(q, dtype=np.float64)
            D2 = ((a[:, None] - a[None, :]) / (h["size_len"] * self.p)) ** 2
            R = h["size_var"] * np.exp(-0.5 * D2)
            g[L.index("log_size_var")] = -float(np.sum(Ws * R))
            g[L.index("log_size_len")] = -float(np.sum(Ws * R * D2))
        if self.spec.learn_noise:
            g[L.index("eta")] = -float(np.trace(W)) * (h["noise"] - self.spec.noise_floor)
        return float(value), g - dlp

    def _ard_gradient(self, h: dict, W: np.ndarray, g: np.ndarray) -> None:
        """Gradient of the ARD graded kernel: log s, log l (shared part), log g_k, delta_j."""
        from shapleig.gp.esp import hamming_kernel

        L, sp = self.layout, self.spec
        ls, s, gt = h["lengthscales"], h["s"], h["g_tail"]
        p = self.p
        rho, kappa = walsh_coordinates(ls, s)
        Kh = hamming_kernel(self.X, self.X, ls, s)
        K = sp.orders
        parts = order_kernels(self.X, self.X, rho, kappa, tuple(range(0, K + 1)))
        Ktot = gt * Kh + (1.0 - gt) * parts[0] + sum(((h["g"][k - 1] - gt) * parts[k] for k in range(1, K + 1)),
                                                        np.zeros_like(Kh))
        g[L.index("log_s")] = -float(np.sum(W * Ktot))
        for k in range(1, K + 1):
            if sp.tail == "last" and k == K:
                g[L.index(f"log_g{k}")] = -float(h["g"][k - 1] * np.sum(W * (Kh - parts[:K].sum(axis=0))))
            else:
                g[L.index(f"log_g{k}")] = -float(h["g"][k - 1] * np.sum(W * parts[k]))
        # per-player log lengthscale u_j: Hamming part d/du_j = K m_j x_j (x_j = 1/(p l_j));
        # Walsh parts through rho_j and log kappa (d log kappa/d rho_j = -1/(1 + rho_j))
        x = 1.0 / (p * ls)
        Xf = self.X.astype(np.float64)
        G = W * Kh
        mism = np.einsum("aj,aj->j", Xf, G @ (1 - Xf)) + np.einsum("aj,aj->j", 1 - Xf, G @ Xf)
        du = gt * mism * x
        drho_du = -x * (1.0 - rho**2) / 2.0
        walsh = (1.0 - gt) * np.sum(W * parts[0]) * (-1.0 / (1.0 + rho))  # order 0: kappa only
        for k in range(1, K + 1):
            coef = h["g"][k - 1] - gt
            if coef == 0.0:
                continue
            walsh = walsh + coef * (order_kernel_rho_vjp(W, self.X, self.X, rho, kappa, k)
                                    - np.sum(W * parts[k]) / (1.0 + rho))
        du = du + walsh * drho_du
        g[L.index("log_l")] = -float(du.sum())
        i0 = L.index("delta0")
        g[i0:i0 + p] = -du


# -- fitting, Laplace, importance sampling ----------------------------------------------------------

@dataclass
class Fit:
    problem: Problem
    theta: np.ndarray
    value: float  # -log p(y, theta*)
    hessian: np.ndarray | None = None
    log_evidence: float = -np.inf  # Laplace


def fit_map(problem: Problem, starts: list[np.ndarray] | None = None, maxiter: int = 500) -> Fit:
    starts = starts or [problem.initial()]
    best = None
    for th0 in starts:
        res = minimize(problem.objective, th0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})
        if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
            best = res
    return Fit(problem, np.asarray(best.x), float(best.fun))


def default_starts(problem: Problem) -> list[np.ndarray]:
    """The prior-centred start and a smoother one with the free orders spread out."""
    a = problem.initial()
    b = a.copy()
    b[2] += 1.5
    L = problem.layout
    for k, v in zip(range(1, problem.spec.orders + 1), (1.0, -1.0, -2.0)):
        b[L.index(f"log_g{k}")] = v
    return [a, b]


def laplace(fit: Fit, h: float = 1e-4) -> Fit:
    """Hessian of -log p(y, theta) at the MAP by central differences of the gradient; Laplace evidence."""
    pr, th = fit.problem, fit.theta
    d = th.size
    H = np.zeros((d, d))
    for i in range(d):
        e = np.zeros(d)
        e[i] = h
        H[:, i] = (pr.objective(th + e)[1] - pr.objective(th - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    w, V = np.linalg.eigh(H)
    # a flat or non-convex direction: no wider than the widest prior (the likelihood only narrows)
    w = np.maximum(w, 1.0 / float(np.max(pr.prior_sd)) ** 2)
    H = (V * w) @ V.T
    fit.hessian = H
    fit.log_evidence = -fit.value + 0.5 * d * LOG2PI - 0.5 * float(np.sum(np.log(w)))
    return fit


def importance_samples(fit: Fit, n: int, rng: np.random.Generator, df: float = 5.0,
                       inflate: float = 1.2) -> tuple[np.ndarray, np.ndarray]:
    """Draws from a multivariate t around the MAP (scale inflate^2 H^-1) and their log weights
    ``log p(y, theta) - log q(theta)`` (unnormalised; comparable across specs: proper priors)."""
    from scipy.special import gammaln

    pr = fit.problem
    d = fit.theta.size
    cov = np.linalg.inv(fit.hessian) * inflate**2
    Lc = np.linalg.cholesky(0.5 * (cov + cov.T))
    zs = rng.standard_normal((n, d))
    chi = rng.chisquare(df, n)
    draws = fit.theta + (zs @ Lc.T) * np.sqrt(df / chi)[:, None]
    logdet = 2.0 * np.log(np.diag(Lc)).sum()
    maha = np.einsum("ij,ij->i", *(2 * [solve_triangular(Lc, (draws - fit.theta).T, lower=True).T]))
    logq = (gammaln((df + d) / 2) - gammaln(df / 2) - 0.5 * d * math.log(df * math.pi) - 0.5 * logdet
            - 0.5 * (df + d) * np.log1p(maha / df))
    logp = np.array([-pr.objective(th, grad=False) for th in draws])
    return draws, logp - logq


# -- index read-out -------------------------------------------------------------------------------

def index_posterior(problem: Problem, th: np.ndarray, y_mean: float, y_scale: float,
                    operator: IndexOperator) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean (float64[d]) and covariance (float64[d, d]) of the index, raw units."""
    h = problem.unpack(th)
    ls, s = h["lengthscales"], h["s"]
    KS = problem.size_kernel(h)
    g = h["g"] if problem.spec.orders else np.ones(1)
    gt = h["g_tail"]
    psi = graded_index_columns(problem.X, ls, s, g, operator, gt, size_kernel=KS)
    M = graded_index_covariance(ls, s, g, operator, gt, size_kernel=KS)
    K = problem.kernel(h)
    Lk = chol(K)
    r = problem.y - h["c"]
    a = solve_triangular(Lk, r, lower=True)
    Yt = solve_triangular(Lk, psi.T, lower=True)
    mean = y_scale * (Yt.T @ a)
    cov = M - Yt.T @ Yt
    return mean, y_scale**2 * 0.5 * (cov + cov.T)


def influence_scale(problem: Problem, th: np.ndarray, operator: IndexOperator,
                    drop_extremes: bool = True) -> np.ndarray:
    """Per-term std factors ``sqrt(clip(tau_j, 1, 1e4))`` of the influence read-out (docs/math.md §13) at ``th``.

    ``tau_j = sum_i psi_ij^2 z_i^2 / sum_i psi_ij^2``: z_i the standardised leave-one-out residual
    of observation i, ``psi_ij = [Psi K^-1]_ji / sqrt([K^-1]_ii)``. ``drop_extremes`` leaves the
    empty and grand coalitions out of the sums (they are always observed, and on data valuation
    they carry nearly all of the weight while saying nothing about extrapolation).
    """
    h = problem.unpack(th)
    ls, s = h["lengthscales"], h["s"]
    g = h["g"] if problem.spec.orders else np.ones(1)
    psi = graded_index_columns(problem.X, ls, s, g, operator, h["g_tail"], size_kernel=problem.size_kernel(h))
    L = chol(problem.kernel(h))
    Kinv = cho_solve((L, True), np.eye(problem.t), check_finite=False)
    alpha = Kinv @ (problem.y - h["c"])
    q = np.diag(Kinv)
    psi2 = (psi @ Kinv) ** 2 / q[None, :]
    z2 = alpha**2 / q
    if drop_extremes:
        keep = (problem.sizes > 0) & (problem.sizes < problem.p)
        psi2, z2 = psi2[:, keep], z2[keep]
    total = psi2.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(total > 0, (psi2 @ z2) / total, 1.0)
    return np.sqrt(np.clip(np.nan_to_num(tau, nan=1.0), 1.0, 1e4))


def mixture(means: list[np.ndarray], covs: list[np.ndarray], weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Law of total covariance over weighted Gaussian read-outs."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    mu = sum(wi * m for wi, m in zip(w, means))
    cov = sum(wi * (c + np.outer(m - mu, m - mu)) for wi, m, c in zip(w, means, covs))
    return mu, cov


def standardized(y: np.ndarray) -> tuple[np.ndarray, float, float]:
    return standardize(y)


def self_check(seed: int = 0) -> float:
    """Largest relative error of every spec's analytic gradient against central differences, and of
    its kernel against :func:`shapleig.gp.walsh.graded_kernel` plus the size kernel, on a random archive."""
    from shapleig.gp.walsh import graded_kernel

    rng = np.random.default_rng(seed)
    p, t = 7, 30
    X = rng.random((t, p)) < 0.5
    y = np.sin(X @ rng.normal(size=p)) + 0.3 * (X[:, 0] & X[:, 1])
    ys, _, _ = standardized(y)
    worst = 0.0
    for spec in (Spec("G"), Spec("GL", tail="last", trend=True, learn_noise=True), Spec("P", orders=0, trend=True),
                 Spec("Q", g_prior="rw2", rw_sd=4.0, learn_noise=True),
                 Spec("QA", g_prior="rw2", rw_sd=4.0, learn_noise=True, ard_spread=2.0)):
        pr = Problem(X, ys, spec)
        th = pr.initial() + 0.3 * rng.standard_normal(pr.dim)
        _, g = pr.objective(th)
        # h = 1e-4: the objective is large (a nearly interpolating GP), smaller steps are rounding-bound
        fd = np.array([(pr.objective(th + e, False) - pr.objective(th - e, False)) / 2e-4 for e in 1e-4 * np.eye(pr.dim)])
        worst = max(worst, float(np.abs(g - fd).max() / np.abs(fd).max()))
        h = pr.unpack(th)
        ref = graded_kernel(X, X, h["lengthscales"], h["s"], h["g"] if spec.orders else [1.0], h["g_tail"])
        KS = pr.size_kernel(h)
        if KS is not None:
            ref = ref + KS[np.ix_(pr.sizes, pr.sizes)]
        ref[np.diag_indices(t)] += h["noise"]
        worst = max(worst, float(np.abs(pr.kernel(h) - ref).max() / np.abs(ref).max()))
    return worst


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Self-check of the graded prototype GP: analytic gradients against "
                                             "central differences, kernels against shapleig.gp.walsh.")
    ap.add_argument("--seed", type=int, default=0)
    err = self_check(ap.parse_args().seed)
    print(f"largest relative error (gradients, kernels): {err:.2e}")
    raise SystemExit(0 if err < 1e-6 else 1)
