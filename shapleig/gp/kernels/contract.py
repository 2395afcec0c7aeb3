"""The kernel contract: the checks every kernel spec passes, runnable on any kernel (a user's too).

:func:`check_kernel` draws random valid params of a :class:`~shapleig.gp.kernels.spec.KernelSpec`
from its own packing (each part's fit coordinates at its initial params, perturbed: params the MAP
fit can reach), then checks on all 2^p coalitions of a small game (p <= :data:`DENSE_MAX_PLAYERS`):

- ``packing``: the coordinates round trip (``pack(unpack(raw)) = raw``, ``unpack(pack(params))`` is
  the same kernel), ``check_params`` accepts the params, and ``n_params`` counts what the fit learns
  (the parts' coordinates and a learned noise);
- ``hooks``: ``per_player`` is a bool, ``learned_noise`` None or a
  :class:`~shapleig.gp.kernels.noise.LearnedNoise`, ``describe`` plain (JSON) values,
  ``n_players`` None or p;
- ``matrix``: ``K = matrix(params, Z, Z)`` over every coalition is finite, symmetric and positive
  semi-definite, and every other route gives the same values: row by row, column by column, single
  entries, an arbitrary block, and ``diagonal``;
- ``fit``: each part's fit matrix (``FitTerms.evaluate``) on an archive (every coalition, shuffled)
  is the part's kernel matrix at the unpacked params;
- ``gradient``: each part's ``FitTerms.gradient`` against central finite differences of its share
  of the objective, ``-sum(W o K(raw)) / 2 - log prior(raw)`` for a random symmetric ``W`` (the
  gradient is linear in ``W``, so any ``W`` checks the formula the fit uses with
  ``W = alpha alpha^T - K^-1``), and the learned noise's likewise;
- ``index``: the index products the posterior uses, ``index_columns`` (all coalitions and a subset)
  and ``index_covariance``, against the dense operator ``B'`` (:func:`dense_index_matrix`, with and
  without the held-out empty coalition) times ``K``, for every index asked;
- ``twin``: for a kernel declaring a twin (:attr:`KernelSpec.twin`), ``from_twin`` of random twin
  params gives the twin's kernel: matrix, diagonal and index products (the graded kernel at g = 1 is
  the shared Hamming kernel). The twin is found part by part in the registry's base kernels
  (:data:`~shapleig.gp.kernels.registry.BASE_KERNELS`), or given as ``twin=``.

A failing check raises :class:`KernelContractError` (an ``AssertionError``) naming the check, the
kernel and the largest deviation; an exception the kernel raises inside a check is reported the
same way. Values compared by two exact routes agree to ``rtol`` relative to the largest entry;
finite differences to ``fd_rtol``.

>>> from shapleig.gp.kernels import Hamming, SizeKernel
>>> report = check_kernel(Hamming(ard=True) + SizeKernel(), n_players=4, indices=("SV",))
>>> report.kernel, list(report.checks), report.skipped
('ard+size', ['packing', 'hooks', 'matrix', 'fit', 'gradient', 'index'], {'twin': 'the kernel declares no twin'})
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from shapleig.games.coalitions import all_coalitions
from shapleig.gp.index_esp import IndexOperator
from shapleig.gp.kernels.noise import LearnedNoise
from shapleig.gp.kernels.registry import BASE_KERNELS
from shapleig.gp.kernels.spec import DENSE_MAX_PLAYERS, FitTerms, KernelSpec, SumKernel, dense_index_matrix

# the checks, in the order they run (a broken packing breaks every later draw, so it comes first)
CHECKS = ("packing", "hooks", "matrix", "fit", "gradient", "index", "twin")
# the sd of the perturbation of each fit coordinate around the packed initial params
PERTURBATION = 0.5
# the central differences' step in the raw coordinates
FD_STEP = 1e-6


class KernelContractError(AssertionError):
    """A kernel fails a check of the contract.

    Args:
        check: the failing check (one of :data:`CHECKS`).
        kernel: the kernel's name and class, as in the message.
        detail: what failed (the comparison, its largest deviation and where).

    Attributes:
        check: the failing check.
        kernel: the kernel's name and class.
    """

    def __init__(self, check: str, kernel: str, detail: str) -> None:
        self.check = check
        self.kernel = kernel
        super().__init__(f"kernel {kernel} fails the kernel contract's {check!r} check: {detail}")


@dataclass(frozen=True)
class KernelReport:
    """What :func:`check_kernel` checked on a kernel that passed.

    Attributes:
        kernel: the kernel's name.
        n_players: p, the players of the game checked on.
        checks: ``{check: worst deviation / allowed deviation}`` for every check run (<= 1; 0 for
            the ``hooks``, which compare no numbers).
        skipped: ``{check: why}`` for the checks that did not apply.
    """

    kernel: str
    n_players: int
    checks: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def check_kernel(spec: KernelSpec, n_players: int = 5, *, seed: int = 0,
                 indices: Sequence[str] = ("SV", "BV", "k-SII"), rtol: float = 1e-10, fd_rtol: float = 1e-5,
                 twin: KernelSpec | None = None) -> KernelReport:
    """Run the kernel contract (module docstring) on ``spec`` at random valid params.

    Args:
        spec: the kernel spec (a sum or a single kernel).
        n_players: p, at most :data:`DENSE_MAX_PLAYERS` (every check enumerates the 2^p coalitions;
            4 or 5 keeps it well under a second).
        seed: the seed of the params, the archive's order and ``W``.
        indices: the indices whose products are checked (each with and without the held-out empty
            coalition).
        rtol: the allowed deviation of values computed by two exact routes, relative to the largest.
        fd_rtol: the allowed deviation of a gradient from its central differences, relative to the
            largest entry.
        twin: the kernel ``spec`` reduces to at its twin's params; None: built from the registry
            when ``spec`` declares a twin.

    Returns:
        the :class:`KernelReport`.

    Raises:
        KernelContractError: naming the first failing check.
        ValueError: ``n_players`` or an index that cannot be checked.
    """
    if not isinstance(spec, KernelSpec):
        raise TypeError(f"check_kernel takes a KernelSpec, got {type(spec).__name__}")
    p = int(n_players)
    if not 1 <= p <= DENSE_MAX_PLAYERS:
        raise ValueError(f"the contract enumerates the 2^p coalitions: n_players must be in 1..{DENSE_MAX_PLAYERS}, "
                         f"got {n_players!r}")
    operators = [IndexOperator(p, index, hold_out_empty=hold) for index in indices for hold in (False, True)]
    return _Contract(spec, p, np.random.default_rng(seed), operators, float(rtol), float(fd_rtol)).run(twin)


def _joined(spec: KernelSpec, items: list) -> Any:
    """One entry per part as the spec takes params: the entry alone for a single kernel, else a tuple."""
    return items[0] if tuple(spec.parts) == (spec,) else tuple(items)


def _split(spec: KernelSpec, params: Any) -> list:
    return [params] if tuple(spec.parts) == (spec,) else list(params)


def registered_twin(spec: KernelSpec) -> KernelSpec | None:
    """The kernel ``spec`` declares as its twin, built from the registry; None without a twin.

    Each part with a twin (:meth:`KernelSpec.nested_twin`) is replaced by the base kernel of that
    name (:data:`~shapleig.gp.kernels.registry.BASE_KERNELS`), the other parts kept, as
    :meth:`KernelSpec.from_twin` maps params part by part.

    Args:
        spec: the kernel spec.

    Returns:
        the twin spec, or None.

    Raises:
        KeyError: a part's twin is no registered base kernel.
    """
    if spec.twin is None:
        return None
    parts = []
    for part in spec.parts:
        name = part.nested_twin(part.name)
        if name is not None and name not in BASE_KERNELS:
            raise KeyError(f"the twin {name!r} of part {part.name!r} is no registered base kernel (register_kernel)")
        parts.append(part if name is None else BASE_KERNELS[name])
    return parts[0] if len(parts) == 1 else SumKernel(tuple(parts)).renamed(spec.twin)


class _Contract:
    """One run of the contract on ``spec`` (the state the checks share)."""

    def __init__(self, spec: KernelSpec, p: int, rng: np.random.Generator, operators: list[IndexOperator],
                 rtol: float, fd_rtol: float) -> None:
        self.spec, self.p, self.rng, self.operators = spec, p, rng, operators
        self.rtol, self.fd_rtol = rtol, fd_rtol
        self.label = f"{spec.name!r} ({type(spec).__name__})"
        self.Z = all_coalitions(p)  # bit order: the columns of B'
        self.X = self.Z[rng.permutation(self.Z.shape[0])]  # the archive: distinct, both extremes, shuffled
        self.worst: dict[str, float] = {}
        self.skipped: dict[str, str] = {}

    # -- plumbing ----------------------------------------------------------------------------
    def fail(self, check: str, detail: str) -> None:
        raise KernelContractError(check, self.label, detail)

    def compare(self, check: str, what: str, got: Any, want: Any, rtol: float, scale: float | None = None) -> None:
        """``got`` equals ``want`` within ``rtol`` times the largest ``|want|`` (or ``scale``)."""
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        if got.shape != want.shape:
            self.fail(check, f"{what}: shape {got.shape}, expected {want.shape}")
        for name, value in (("the value", got), ("its reference", want)):  # NaN would compare as equal
            if not np.all(np.isfinite(value)):
                self.fail(check, f"{what}: {name} is not finite")
        err = np.abs(got - want)
        scale = float(np.abs(want).max(initial=0.0)) if scale is None else scale
        allowed = rtol * max(scale, np.finfo(np.float64).tiny)
        worst = float(err.max(initial=0.0))
        if worst > allowed:
            at = np.unravel_index(int(np.argmax(err)), err.shape)
            self.fail(check, f"{what}: deviation {worst:.3g} > allowed {allowed:.3g} at {tuple(int(i) for i in at)} "
                             f"(got {got[at]:.12g}, expected {want[at]:.12g})")
        self.worst[check] = max(self.worst.get(check, 0.0), worst / allowed)

    def step(self, check: str, body: Callable[[], None]) -> None:
        """Run ``body``; whatever it raises becomes a :class:`KernelContractError` naming ``check``."""
        self.worst.setdefault(check, 0.0)
        try:
            body()
        except KernelContractError:
            raise
        except Exception as exc:  # the kernel's own error inside a check: name the check
            raise KernelContractError(check, self.label, f"raised {type(exc).__name__}: {exc}") from exc

    def draw(self, spec: KernelSpec) -> tuple[list[FitTerms], list[np.ndarray], Any]:
        """Each part's fit terms on the archive, random coordinates around its initial params, the params there."""
        terms = [part.fit_terms(self.X) for part in spec.parts]
        raws = []
        for part, term in zip(spec.parts, terms):
            start = np.asarray(term.pack(part.initial_params(self.p)), dtype=np.float64)
            if start.shape != (term.n_params,):
                self.fail("packing", f"part {part.name!r}: pack gives shape {start.shape}, n_params is "
                                     f"{term.n_params}")
            raws.append(start + self.rng.normal(scale=PERTURBATION, size=start.shape))
        return terms, raws, _joined(spec, [term.unpack(raw) for term, raw in zip(terms, raws)])

    def run(self, twin: KernelSpec | None) -> KernelReport:
        spec = self.spec
        drawn: dict[str, Any] = {}

        def draw() -> None:
            drawn["terms"], drawn["raws"], drawn["params"] = self.draw(spec)

        self.step("packing", draw)
        terms, raws, params = drawn["terms"], drawn["raws"], drawn["params"]
        self.step("packing", lambda: self.packing(terms, raws, params))
        self.step("hooks", lambda: self.hooks(params))
        K: dict[str, np.ndarray] = {}
        self.step("matrix", lambda: K.setdefault("K", self.matrix(params)))
        self.step("fit", lambda: self.fit(terms, raws))
        self.step("gradient", lambda: self.gradient(terms, raws))
        self.step("index", lambda: self.index(params, K["K"]))
        if twin is None and spec.twin is None:
            self.skipped["twin"] = "the kernel declares no twin"
        else:
            self.step("twin", lambda: self.twin(twin if twin is not None else registered_twin(spec)))
        checks = {check: self.worst[check] for check in CHECKS if check in self.worst}
        return KernelReport(spec.name, self.p, checks, dict(self.skipped))

    # -- the checks --------------------------------------------------------------------------
    def packing(self, terms: list[FitTerms], raws: list[np.ndarray], params: Any) -> None:
        spec, Z = self.spec, self.Z
        for part, term, raw in zip(spec.parts, terms, raws):
            back = np.asarray(term.pack(term.unpack(raw)), dtype=np.float64)
            self.compare("packing", f"part {part.name!r}: pack(unpack(raw)) against raw", back, raw, self.rtol,
                         scale=max(float(np.abs(raw).max(initial=0.0)), 1.0))
        spec.check_params(params)
        again = _joined(spec, [term.unpack(term.pack(prm)) for term, prm in zip(terms, _split(spec, params))])
        self.compare("packing", "the kernel at unpack(pack(params)) against the kernel at params",
                     spec.matrix(again, Z, Z), spec.matrix(params, Z, Z), self.rtol)
        noise = spec.learned_noise
        learned = sum(term.n_params for term in terms) + int(noise is not None)
        if spec.n_params(self.X) != learned:
            self.fail("packing", f"n_params(X) = {spec.n_params(self.X)}, but the fit learns {learned} coordinates "
                                 f"(the parts' FitTerms.n_params{' and the learned noise' if noise else ''})")
        if noise is not None:
            values = np.array([1e-6, 1e-3, 0.2])
            self.compare("packing", "the learned noise's value(coordinate(noise))",
                         [noise.value(noise.coordinate(v)) for v in values], values, self.rtol, scale=1e-6)

    def hooks(self, params: Any) -> None:
        spec = self.spec
        if not isinstance(spec.per_player, bool):
            self.fail("hooks", f"per_player is {spec.per_player!r}, not a bool")
        if spec.learned_noise is not None and not isinstance(spec.learned_noise, LearnedNoise):
            self.fail("hooks", f"learned_noise is {spec.learned_noise!r}, not None or a LearnedNoise")
        described = spec.describe(params)
        if not isinstance(described, dict):
            self.fail("hooks", f"describe gives {type(described).__name__}, not a dict")
        try:
            json.dumps(described)
        except TypeError as exc:  # info is written as JSON
            self.fail("hooks", f"describe gives values that are not plain (JSON): {exc}")
        if spec.n_players(params) not in (None, self.p):
            self.fail("hooks", f"n_players(params) = {spec.n_players(params)!r} for params drawn for p = {self.p}")

    def matrix(self, params: Any) -> np.ndarray:
        spec, Z, rtol, m = self.spec, self.Z, self.rtol, self.Z.shape[0]
        K = np.asarray(spec.matrix(params, Z, Z), dtype=np.float64)
        if K.shape != (m, m) or not np.all(np.isfinite(K)):
            self.fail("matrix", f"matrix(Z, Z) over the {m} coalitions: shape {K.shape}, finite: "
                                f"{bool(np.all(np.isfinite(K)))}; expected a finite ({m}, {m})")
        self.compare("matrix", "symmetry: K against K^T", K, K.T, rtol)
        scale = float(np.abs(K).max())
        low = float(np.linalg.eigvalsh(0.5 * (K + K.T)).min())
        if low < -rtol * m * scale:
            self.fail("matrix", f"not positive semi-definite: smallest eigenvalue {low:.3g} (largest entry {scale:.3g})")
        self.compare("matrix", "row by row, matrix(z, Z)", np.vstack([spec.matrix(params, Z[i:i + 1], Z)
                                                                      for i in range(m)]), K, rtol)
        self.compare("matrix", "column by column, matrix(Z, z)", np.hstack([spec.matrix(params, Z, Z[j:j + 1])
                                                                            for j in range(m)]), K, rtol)
        pairs = self.rng.integers(0, m, size=(16, 2))
        self.compare("matrix", "entry by entry, matrix(z, z')",
                     [np.asarray(spec.matrix(params, Z[i:i + 1], Z[j:j + 1]))[0, 0] for i, j in pairs],
                     K[pairs[:, 0], pairs[:, 1]], rtol, scale=scale)
        rows, cols = self.rng.integers(0, m, 7), self.rng.integers(0, m, 5)  # repeats allowed
        self.compare("matrix", "a block, matrix(Z[a], Z[b])", spec.matrix(params, Z[rows], Z[cols]),
                     K[np.ix_(rows, cols)], rtol, scale=scale)
        self.compare("matrix", "diagonal(Z) against the diagonal of K", spec.diagonal(params, Z), np.diag(K), rtol)
        self.compare("matrix", "diagonal of a subset", spec.diagonal(params, Z[rows]), np.diag(K)[rows], rtol)
        return K

    def fit(self, terms: list[FitTerms], raws: list[np.ndarray]) -> None:
        X = self.X
        for part, term, raw in zip(self.spec.parts, terms, raws):
            K_fit, log_prior, _ = term.evaluate(raw)
            K_part = np.asarray(part.matrix(term.unpack(raw), X, X), dtype=np.float64)
            K_fit = np.zeros_like(K_part) if K_fit is None else K_fit  # None: the part is zero
            self.compare("fit", f"part {part.name!r}: the fit's matrix (FitTerms.evaluate) against matrix(X, X)",
                         K_fit, K_part, self.rtol, scale=float(np.abs(K_part).max(initial=0.0)) or 1.0)
            if not np.isfinite(log_prior):
                self.fail("fit", f"part {part.name!r}: log prior {log_prior!r}")

    def gradient(self, terms: list[FitTerms], raws: list[np.ndarray]) -> None:
        t = self.X.shape[0]
        A = self.rng.normal(size=(t, t))
        W = 0.5 * (A + A.T)  # the gradient's W is symmetric

        def share(term: FitTerms, raw: np.ndarray) -> float:  # -sum(W o K)/2 - log prior
            K, log_prior, _ = term.evaluate(raw)
            return (0.0 if K is None else -0.5 * float(np.sum(W * K))) - float(log_prior)

        for part, term, raw in zip(self.spec.parts, terms, raws):
            _, _, state = term.evaluate(raw)
            got = np.asarray(term.gradient(raw, W, state), dtype=np.float64)
            fd = np.array([(share(term, raw + FD_STEP * e) - share(term, raw - FD_STEP * e)) / (2 * FD_STEP)
                           for e in np.eye(raw.shape[0])])
            self.compare("gradient", f"part {part.name!r}: FitTerms.gradient against central differences", got, fd,
                         self.fd_rtol, scale=max(float(np.abs(fd).max(initial=0.0)), 1e-8))
        noise = self.spec.learned_noise
        if noise is not None:
            eta = noise.coordinate(1e-3) + float(self.rng.normal())
            trace = float(np.trace(W))

            def noise_share(e: float) -> float:
                return -0.5 * trace * noise.value(e) - noise.log_prior(e)[0]

            fd = (noise_share(eta + FD_STEP) - noise_share(eta - FD_STEP)) / (2 * FD_STEP)
            self.compare("gradient", "the learned noise's gradient against central differences",
                         noise.gradient(eta, trace), fd, self.fd_rtol, scale=max(abs(fd), 1e-8))

    def index(self, params: Any, K: np.ndarray) -> None:
        spec, Z, rtol, check = self.spec, self.Z, self.rtol, "index"
        rows = self.rng.integers(0, Z.shape[0], 6)
        for op in self.operators:
            B = dense_index_matrix(op)
            BK = B @ K
            self.compare(check, f"{op}: index_columns(Z) against B' K", spec.index_columns(params, op, Z), BK, rtol)
            self.compare(check, f"{op}: index_columns of a subset against B' K", spec.index_columns(params, op, Z[rows]),
                         BK[:, rows], rtol, scale=float(np.abs(BK).max()))
            M = np.asarray(spec.index_covariance(params, op), dtype=np.float64)
            self.compare(check, f"{op}: index_covariance against B' K B'^T", M, BK @ B.T, rtol)
            self.compare(check, f"{op}: index_covariance symmetric", M, M.T, rtol)

    def twin(self, twin: KernelSpec) -> None:
        spec, Z = self.spec, self.Z
        _, _, twin_params = self.draw(twin)
        params = spec.from_twin(twin_params)
        if params is None:
            self.fail("twin", f"from_twin gives None for params of its twin {twin.name!r}")
        params = spec.check_params(params)
        K = np.asarray(twin.matrix(twin_params, Z, Z), dtype=np.float64)
        self.compare("twin", f"the kernel at from_twin(params) against its twin {twin.name!r}",
                     spec.matrix(params, Z, Z), K, self.rtol)
        self.compare("twin", "the diagonal at from_twin(params) against the twin's", spec.diagonal(params, Z),
                     twin.diagonal(twin_params, Z), self.rtol)
        for op in self.operators:
            self.compare("twin", f"{op}: index_columns against the twin's", spec.index_columns(params, op, Z),
                         twin.index_columns(twin_params, op, Z), self.rtol)
            self.compare("twin", f"{op}: index_covariance against the twin's", spec.index_covariance(params, op),
                         twin.index_covariance(twin_params, op), self.rtol)


__all__ = ["CHECKS", "FD_STEP", "PERTURBATION", "KernelContractError", "KernelReport", "check_kernel",
           "registered_twin"]
