"""The one place the surrogate's names meet kernel objects: named base kernels and surrogate modes.

The registry names the kernels a surrogate mode fits: :data:`BASE_KERNELS` (``"shared"``, ``"ard"``:
:class:`~shapleig.gp.kernels.hamming.Hamming`; ``"graded"``: :class:`~shapleig.gp.kernels.graded.Graded`,
free variances of interaction orders 1..3 and a learned noise; ``"additive"``) and :data:`SURROGATES`
(``"auto"``, ``"laplace"``, ``"shared"``, ``"ard"``, ``"graded"``, ``"graded-ard"``: the graded and the
ARD kernel, ``"graded-auto"``: the shared, the graded and the ARD kernel, ``"additive"``);
:func:`surrogate_kernels` turns a mode and the ``size_trend`` / ``jumps`` / ``rough`` options into
kernel specs named as in results (``"shared"``, ``"ard"``, ``"shared+size"``, ``"ard+size"``).
:func:`register_kernel` adds a base kernel (and a mode of that name). Whatever else a mode implies is
declared here too, so the engine asks instead of naming kernels: how it weighs its kernels
(:func:`surrogate_evidence`), its read-out's hyperparameter draws (:func:`surrogate_draws`), the
older ``ard`` switch (:func:`resolve_surrogate`, :func:`surrogate_ard`), the info every fitted kernel
reports (:func:`info_defaults`) and which kernel the gpytorch engine fits (:func:`plain_hamming`).

>>> [k.name for k in surrogate_kernels("auto", size_trend="both", jumps=False)]
['shared', 'shared+size', 'ard', 'ard+size']
>>> surrogate_draws("graded"), surrogate_draws("auto")
(16, 0)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from shapleig.gp.kernels.additive import Additive
from shapleig.gp.kernels.graded import Graded
from shapleig.gp.kernels.hamming import Hamming, HammingParams
from shapleig.gp.kernels.rough import Rough
from shapleig.gp.kernels.size import SizeKernel, size_kernel_info
from shapleig.gp.kernels.spec import KernelSpec, SumKernel

# base kernels by name; a surrogate mode fits a tuple of them (each with the size kernel as the
# options say). register_kernel adds to both.
BASE_KERNELS: dict[str, KernelSpec] = {"shared": Hamming(ard=False), "ard": Hamming(ard=True), "graded": Graded(),
                                       "additive": SumKernel((Additive(), Rough()), alias="additive")}
SURROGATES: dict[str, tuple[str, ...]] = {
    "auto": ("shared", "ard"), "laplace": ("shared", "ard"), "shared": ("shared",), "ard": ("ard",),
    "graded": ("graded",), "graded-ard": ("graded", "ard"), "graded-auto": ("shared", "graded", "ard"),
    "additive": ("additive",),
}
# how a mode weighs its kernels: BIC (the default) or the Laplace evidence over the lengthscales
EVIDENCE: dict[str, str] = {"laplace": "laplace"}


def register_kernel(name: str, spec: KernelSpec, *, modes: Sequence[str] = ()) -> None:
    """Add ``spec`` as the base kernel ``name`` and as a surrogate mode of that name fitting it alone; ``modes``.

    Existing modes that should also fit it. The size kernel is added to it by the ``size_trend`` /
    ``jumps`` options as to the built-in ones.

    Args:
        name: the kernel's name (and the surrogate mode's).
        spec: the kernel spec.
        modes: existing modes that should also fit it.
    """
    if not isinstance(spec, KernelSpec):
        raise TypeError(f"register_kernel takes a KernelSpec, got {type(spec).__name__}")
    BASE_KERNELS[name] = spec.renamed(name) if spec.name != name else spec
    SURROGATES[name] = (name,)
    for mode in modes:
        check_surrogate(mode)
        if name not in SURROGATES[mode]:
            SURROGATES[mode] = (*SURROGATES[mode], name)


def check_surrogate(surrogate: Any) -> Any:
    """A surrogate.

    A mode name (:data:`SURROGATES`), a :class:`KernelSpec`, or a non-empty sequence of specs with
    distinct names; else ``ValueError``.

    Args:
        surrogate: a mode name, a :class:`KernelSpec`, or a sequence of specs.

    Returns:
        the surrogate (a sequence as a tuple).
    """
    if isinstance(surrogate, KernelSpec):
        return surrogate
    if isinstance(surrogate, (list, tuple)):
        specs = tuple(surrogate)
        if not specs or not all(isinstance(s, KernelSpec) for s in specs):
            raise ValueError(f"surrogate as a sequence must hold KernelSpec objects, got {surrogate!r}")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"the kernels of a surrogate need distinct names, got {names}")
        return specs
    if surrogate not in SURROGATES:
        raise ValueError(f"unknown surrogate {surrogate!r}; choose one of {tuple(SURROGATES)} or give a KernelSpec")
    return surrogate


def check_size_trend(size_trend: bool | str) -> bool | str:
    """``size_trend``.

    False (no trend), True (every kernel with the trend) or ``"both"`` (each kernel with and without
    it, weighed by evidence: the trend is a nested alternative, docs/math.md §15).

    Args:
        size_trend: False, True or ``"both"``.

    Returns:
        ``size_trend`` (a numpy bool as a bool).
    """
    return _false_true_or_both("size_trend", size_trend)


def _false_true_or_both(name: str, value: bool | str) -> bool | str:
    """``value`` of a nested alternative ``name``: a bool (numpy's as Python's) or ``"both"``, else ``ValueError``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value != "both":
        raise ValueError(f"{name} must be True, False or 'both', got {value!r}")
    return value


# rough="auto" turns the rough part on from this many evaluations per player: below it the rough
# variance is fitted from too few points and costs accuracy and coverage (docs/benchmarks.md §16)
ROUGH_AUTO_MULTIPLE = 16


def check_rough(rough: bool | str) -> bool | str:
    """``rough``.

    False (no rough part), True (every kernel with it), ``"both"`` (each kernel with and without
    it, weighed by evidence: the rough part is a nested alternative, as the size trend is) or
    ``"auto"`` (True from :data:`ROUGH_AUTO_MULTIPLE` evaluations per player, :func:`resolve_rough`).

    Args:
        rough: False, True, ``"both"`` or ``"auto"``.

    Returns:
        ``rough`` (a numpy bool as a bool).
    """
    if isinstance(rough, str) and rough == "auto":
        return rough
    try:
        return _false_true_or_both("rough", rough)
    except ValueError:
        raise ValueError(f"rough must be True, False, 'both' or 'auto', got {rough!r}") from None


def resolve_rough(rough: bool | str, budget: int, n_players: int, fit_engine: str = "numpy") -> bool | str:
    """``rough`` for a run of ``budget`` evaluations on ``n_players`` players: ``"auto"`` made a bool.

    ``"auto"`` is True when ``budget >= ROUGH_AUTO_MULTIPLE * n_players`` and the numpy engine fits
    (gpytorch fits the plain Hamming kernel only); every other value is returned as given.

    Args:
        rough: the ``rough`` option.
        budget: the run's evaluations (empty and grand included).
        n_players: p.
        fit_engine: the fit engine (``"numpy"`` or ``"gpytorch"``).

    Returns:
        False, True or ``"both"``.
    """
    rough = check_rough(rough)
    if rough != "auto":
        return rough
    return fit_engine == "numpy" and int(budget) >= ROUGH_AUTO_MULTIPLE * int(n_players)


def surrogate_kernels(surrogate: Any, size_trend: bool | str, jumps: bool,
                      rough: bool | str = False) -> list[KernelSpec]:
    """The kernels a surrogate fits, in fitting order, named as in results.

    A mode fits each of its base kernels; with ``size_trend="both"`` twice, the plain one first
    (its name) and the one with the size trend (its name + ``"+size"``), with True only the latter,
    named as the plain one (the trend is then simply part of the kernel); ``jumps`` adds the jumps
    of the size kernel to every one of them, ``rough=True`` the rough part (:class:`~shapleig.gp.kernels.rough.Rough`)
    without changing their names, ``rough="both"`` each kernel once without and once with it (its name
    + ``"+rough"``, right after it). A :class:`KernelSpec` (or a sequence of them) is fitted as given:
    ``size_trend``, ``jumps`` and ``rough`` shape the named modes only.

    Args:
        surrogate: a mode name, a :class:`KernelSpec`, or a sequence of specs.
        size_trend: False, True or ``"both"``.
        jumps: add the size kernel's jumps.
        rough: add the rough (white-noise) part of the game to every kernel: False, True or ``"both"``.

    Returns:
        the kernel specs.
    """
    surrogate = check_surrogate(surrogate)
    if isinstance(surrogate, KernelSpec):
        return [surrogate]
    if isinstance(surrogate, tuple):
        return list(surrogate)
    trend = check_size_trend(size_trend)
    rough = check_rough(rough)
    if rough == "auto":
        raise ValueError("rough='auto' depends on the budget: resolve it first (resolve_rough)")
    if rough == "both":
        # each kernel without the rough part, then with it (nested alternatives weighed by evidence)
        without = surrogate_kernels(surrogate, size_trend, jumps, False)
        with_rough = surrogate_kernels(surrogate, size_trend, jumps, True)
        return [k for a, b in zip(without, with_rough)
                for k in ((a,) if a == b else (a, b.renamed(f"{b.name}+rough")))]  # equal: it has its own
    out: list[KernelSpec] = []
    for name in SURROGATES[surrogate]:
        base = BASE_KERNELS[name]
        # one rough part at most (a kernel such as "additive" carries its own)
        extra: tuple[KernelSpec, ...] = (Rough(),) if rough and not any(isinstance(q, Rough) for q in base.parts) else ()
        plain = SumKernel((base, SizeKernel(trend=False, jumps=True), *extra), alias=name) if jumps else \
            (SumKernel((base, *extra), alias=name) if extra else base)
        with_trend = SumKernel((base, SizeKernel(trend=True, jumps=jumps), *extra), alias=name)
        if trend == "both":
            out += [plain, with_trend.renamed(f"{name}+size")]
        else:
            out.append(with_trend if trend else plain)
    return out


def surrogate_evidence(surrogate: Any) -> str:
    """How a surrogate weighs its kernels: ``"bic"`` or ``"laplace"`` (docs/math.md §13).

    Args:
        surrogate: a mode name, or specs.

    Returns:
        ``"bic"`` or ``"laplace"``.
    """
    return EVIDENCE.get(surrogate, "bic") if isinstance(surrogate, str) else "bic"


def plain_hamming(spec: KernelSpec) -> bool:
    """Whether ``spec`` is a Hamming kernel alone (the one kernel the gpytorch engine fits).

    Args:
        spec: a kernel spec.

    Returns:
        whether it is a :class:`Hamming` without ``spread``.
    """
    return isinstance(spec, Hamming) and spec.spread is None


# hyperparameter draws per kernel of a mode's read-out when ``integrate`` is None (the graded
# surrogates integrate their hyperparameters; the others read out the MAP)
GRADED_DRAWS = 16
DRAWS: dict[str, int] = {"graded": GRADED_DRAWS, "graded-ard": GRADED_DRAWS, "graded-auto": GRADED_DRAWS}
# the older option field that also names a surrogate (True: "ard", False: "shared"), normalised from it
SURROGATE_SWITCH = "ard"


def surrogate_draws(surrogate: Any) -> int:
    """Hyperparameter draws per kernel of a surrogate's read-out by default (:data:`DRAWS`; 0: the MAP).

    Args:
        surrogate: a mode name, or specs (0).

    Returns:
        the number of draws.
    """
    return DRAWS.get(surrogate, 0) if isinstance(surrogate, str) else 0


def resolve_surrogate(surrogate: Any, ard: bool | None) -> Any:
    """The surrogate from the two ways of asking for it (``ard`` is the older switch).

    ``ard=True`` means ``"ard"``, ``ard=False`` means ``"shared"``; giving both with different
    meanings is an error. Neither gives the default ``"auto"``. A :class:`KernelSpec` (or a
    sequence of them) is kept as given (then ``ard`` must be None).

    Args:
        surrogate: a surrogate name, a :class:`KernelSpec`, a sequence of them, or None.
        ard: the older switch (True: ARD, False: shared), or None.

    Returns:
        the surrogate (``"auto"`` when neither is given).
    """
    if ard is not None and not isinstance(ard, (bool, np.bool_)):
        raise ValueError(f"ard must be True (one lengthscale per player) or False (one shared), got {ard!r}")
    from_ard = None if ard is None else ("ard" if ard else "shared")
    if surrogate is None:
        return from_ard or "auto"
    surrogate = check_surrogate(surrogate)
    if from_ard is not None and from_ard != surrogate:
        raise ValueError(f"surrogate={surrogate!r} contradicts ard={ard!r}; give one of the two")
    return surrogate


def surrogate_ard(surrogate: Any) -> bool | None:
    """The ``ard`` switch equivalent to a surrogate: True (ARD), False (shared), None (any other).

    Args:
        surrogate: a resolved surrogate.

    Returns:
        True, False or None.
    """
    return {"ard": True, "shared": False}.get(surrogate) if isinstance(surrogate, str) else None


def info_defaults() -> dict[str, Any]:
    """The entries every fitted kernel reports in ``info``, at their values for a kernel without the part.

    A fitted kernel's :meth:`~shapleig.gp.kernels.spec.KernelSpec.describe` overrides them (a size
    part reports its own ``"size_kernel"``; without one it is all zero).

    Returns:
        ``{key: value}``.
    """
    return {"size_kernel": size_kernel_info(None)}


def hamming_hyperparameter_parts(lengthscales: Any, outputscale: float, *, per_player: bool) -> tuple[KernelSpec, Any]:
    """The plain Hamming kernel and its params, for :meth:`~shapleig.gp.posterior.Hyperparameters.hamming`.

    Args:
        lengthscales: float64[p] lengthscales.
        outputscale: the outputscale s.
        per_player: the ARD variant (True) or the shared one (False).

    Returns:
        ``(spec, params)``.
    """
    return Hamming(ard=per_player), HammingParams(lengthscales, outputscale)


__all__ = ["BASE_KERNELS", "DRAWS", "EVIDENCE", "GRADED_DRAWS", "ROUGH_AUTO_MULTIPLE", "SURROGATES", "SURROGATE_SWITCH", "check_rough", "check_size_trend",
           "check_surrogate", "hamming_hyperparameter_parts", "info_defaults", "plain_hamming", "register_kernel",
           "resolve_rough", "resolve_surrogate", "surrogate_ard", "surrogate_draws", "surrogate_evidence", "surrogate_kernels"]
