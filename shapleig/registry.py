"""The one method registry: names -> estimators, with a description and an anytime flag.

The harness, the command line and :func:`shapleig.explain` all resolve methods here. The core
registers its own methods (the GP arms and ``exact``); other packages register theirs through the
``shapleig.methods`` entry-point group (a function taking no argument that calls :func:`register`),
so the core never imports them. ``baselines`` registers the model-free estimators and the
``shapiq:<Approximator>`` prefix this way.

>>> from shapleig import registry
>>> registry.get("shapleig-random").fixed
{'acquisition': 'random'}
>>> registry.build("shapleig-random").acquisition
'random'
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping

ENTRY_POINT_GROUP = "shapleig.methods"


@dataclass(frozen=True)
class Method:
    """A registered method.

    Args:
        name: the name users write (``"shapleig"``, ``"kernelshap"``).
        target: ``"module:attribute"`` of the estimator class (imported on first build).
        description: one line for listings.
        anytime: one run at the largest budget yields every smaller budget through its ``trace``.
        fixed: options the name fixes (a GP arm's acquisition); passing another value is an error.
        preset: a classmethod of the class that builds the configuration (``"published"``).
        family: ``"design-loop"`` (the ShaplEIG arms, which share the loop's options), ``"gp"``,
            ``"exact"`` or ``"baseline"``.
    """

    name: str
    target: str
    description: str
    anytime: bool = False
    fixed: Mapping[str, Any] = field(default_factory=dict)
    preset: str | None = None
    family: str = "baseline"

    def estimator_class(self) -> type:
        """The estimator class ``target`` names, imported on first use.

        Returns:
            the class.
        """
        module, attr = self.target.split(":")
        return getattr(importlib.import_module(module), attr)

    def build(self, **options: Any) -> Any:
        """A fresh estimator with ``options``; an option contradicting ``fixed`` raises ``ValueError``.

        Args:
            **options: the estimator's constructor options.

        Returns:
            the estimator (the class, or its ``preset`` classmethod, called with ``options`` and ``fixed``).
        """
        for key, value in self.fixed.items():
            if key in options and options[key] != value:
                hint = (f"use the method named for that {key} instead" if isinstance(options[key], str) else
                        f"pass the estimator object instead, e.g. ShaplEIG({key}={options[key]!r})")
                raise ValueError(f"method {self.name!r} fixes {key}={value!r}; got {key}={options[key]!r} ({hint})")
        cls = self.estimator_class()
        factory = getattr(cls, self.preset) if self.preset else cls
        return factory(**{**options, **self.fixed})


@dataclass(frozen=True)
class Prefix:
    """A family of methods named ``prefix + member`` (``shapiq:KernelSHAP``), built by ``builder``.

    Attributes:
        prefix: the prefix users write (``"shapiq:"``).
        builder: ``builder(member, options)`` builds the estimator of one member.
        description: one line for listings.
        members: a callable listing the members available here (empty when the extra is missing).
        indices: members take ``index=`` and ``max_order=`` (shapiq's approximators).
    """

    prefix: str
    builder: Callable[[str, dict[str, Any]], Any]
    description: str
    members: Callable[[], list[str]] = lambda: []
    indices: bool = False  # members take ``index=`` and ``max_order=`` (shapiq's approximators)


_METHODS: dict[str, Method] = {}
_PREFIXES: dict[str, Prefix] = {}
_providers_loaded = False
# Loading is guarded: threads calling build() on first use all wait for the complete registry (a
# flag set before loading let them see it half filled: "unknown method"). Re-entrant, so a
# provider that reads the registry while registering does not deadlock.
_LOCK = threading.RLock()
_loading = False

_CORE = (
    Method("shapleig", "shapleig.design.estimators:ShaplEIG",
           "ShaplEIG: GP surrogate (four kernels averaged by evidence), EIG about the index (anytime)",
           anytime=True, fixed={"acquisition": "eig"}, preset="from_options", family="design-loop"),
    Method("shapleig-published", "shapleig.design.estimators:ShaplEIG",
           "ShaplEIG as published (ICML 2026): ARD kernel, uncalibrated MAP posterior (anytime)",
           anytime=True, fixed={"acquisition": "eig"}, preset="published", family="design-loop"),
    Method("shapleig-uncertainty", "shapleig.design.estimators:ShaplEIG",
           "GP arm: acquire argmax posterior variance of f (anytime)", anytime=True,
           fixed={"acquisition": "uncertainty"}, preset="from_options", family="design-loop"),
    Method("shapleig-random", "shapleig.design.estimators:ShaplEIG",
           "GP arm: acquire a uniform pick from the pool (anytime)", anytime=True, fixed={"acquisition": "random"},
           preset="from_options", family="design-loop"),
    Method("shapleig-leverage", "shapleig.design.estimators:GPLeverage",
           "GP arm: one fit on a fresh paired uniform-size (leverage) sample per budget", family="gp"),
    Method("exact", "shapleig.estimation.exact:ExactShapley",
           "exact values: every coalition evaluated (budget 2^p, p <= 20)", family="exact"),
)


def register(method: Method, *, replace: bool = False) -> None:
    """Add ``method``; a name taken by another target raises ``ValueError`` unless ``replace``.

    Args:
        method: the method to add.
        replace: replace a method registered under the same name with another target.
    """
    with _LOCK:
        old = _METHODS.get(method.name)
        if old is not None and old != method and not replace:
            raise ValueError(f"method name {method.name!r} is already registered ({old.target})")
        _METHODS[method.name] = method


def register_prefix(prefix: Prefix) -> None:
    """Add a family of methods named ``prefix.prefix + member``.

    Args:
        prefix: the family to add (replacing one with the same prefix).
    """
    with _LOCK:
        _PREFIXES[prefix.prefix] = prefix


def _load_providers() -> None:
    """Register the core's methods, then every installed provider's (entry points), once.

    Other threads wait until all are registered. A provider that fails raises here, and loading is
    tried again on the next call (nothing is marked loaded half way).
    """
    global _providers_loaded, _loading
    if _providers_loaded:  # the common case, without the lock
        return
    with _LOCK:
        if _providers_loaded or _loading:  # loaded meanwhile, or a provider reading the registry
            return
        _loading = True
        try:
            for method in _CORE:
                register(method)
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                ep.load()()
            _providers_loaded = True
        finally:
            _loading = False


def names(family: str | None = None) -> list[str]:
    """Every registered method name (the core's first), or those of one ``family``; no prefix families.

    Args:
        family: ``"design-loop"``, ``"gp"``, ``"exact"`` or ``"baseline"``; None: every family.

    Returns:
        the names, the core's first.
    """
    _load_providers()
    # the core's first even when a provider registered before the core's were loaded
    core = {m.name for m in _CORE}
    ordered = [n for n in _METHODS if n in core] + [n for n in _METHODS if n not in core]
    return [n for n in ordered if family is None or _METHODS[n].family == family]


def prefixes() -> dict[str, Prefix]:
    """The registered prefix families (``{"shapiq:": ...}``).

    Returns:
        ``{prefix: Prefix}``.
    """
    _load_providers()
    return dict(_PREFIXES)


def unknown_method_message(name: str) -> str:
    """The error message for an unknown method: the name and every known one.

    Args:
        name: the unknown name.

    Returns:
        the message.
    """
    families = ", ".join(f"{p.prefix}<name> ({p.description})" for p in prefixes().values())
    return f"unknown method {name!r}; known methods: {', '.join(names())}" + (f", and {families}" if families else "")


def get(name: str) -> Method:
    """The :class:`Method` registered under ``name``; unknown names raise ``ValueError`` listing all.

    Args:
        name: a registered method name.

    Returns:
        the :class:`Method`.
    """
    _load_providers()
    if name not in _METHODS:
        raise ValueError(unknown_method_message(name))
    return _METHODS[name]


def find_prefix(name: str) -> Prefix | None:
    """The prefix family ``name`` belongs to, if any.

    Args:
        name: a method name.

    Returns:
        the :class:`Prefix` whose prefix ``name`` starts with, or None.
    """
    for prefix in prefixes().values():
        if name.startswith(prefix.prefix):
            return prefix
    return None


def build(name: str, **options: Any) -> Any:
    """A fresh estimator for ``name`` (a registered name or ``prefix + member``) with ``options``.

    Args:
        name: a registered name or ``prefix + member`` (``"shapiq:KernelSHAP"``).
        **options: the estimator's constructor options.

    Returns:
        the estimator.
    """
    family = find_prefix(name)
    if family is not None:
        return family.builder(name[len(family.prefix):], options)
    return get(name).build(**options)


def index_options(name: str, index: str, max_order: int | None = None) -> dict[str, Any]:
    """The constructor options that make method ``name`` estimate ``index`` (docs/math.md §14).

    ``{}`` for the Shapley value; ``{"index": index}`` for the ShaplEIG arms and ``exact`` (with
    ``"max_order"`` when it is not the index's default); ``{"index": index, "max_order": order}`` for
    prefix families that take them (``shapiq:``).
    A method that estimates the Shapley value only raises ``ValueError`` naming those that can.

    Args:
        name: a method name.
        index: the index: "SV", "BV", "k-SII", "SII", "STII", "FSII", "FBII", "BII", "CHII", "Moebius"
            or any registered one.
        max_order: the interaction order; None: the index's default.

    Returns:
        the options, to merge into the method's constructor options.
    """
    from shapleig.games.indices import DEFAULT_INDEX, check_index, get_index

    index, order = check_index(index, max_order)  # any registered index (games/indices.py)
    if index == DEFAULT_INDEX:
        return {}
    family = find_prefix(name)
    if family is not None and family.indices:
        return {"index": index, "max_order": order}
    if family is None and get(name).family in ("design-loop", "exact"):
        return {"index": index} if order == get_index(index).order else {"index": index, "max_order": order}
    able = names(family="design-loop") + names(family="exact")
    able += [f"{p.prefix}<name>" for p in prefixes().values() if p.indices]
    raise ValueError(f"method {name!r} estimates the Shapley value only; for index {index!r} use one of "
                     f"{', '.join(able)}")


def is_anytime(name: str, estimator: Any = None) -> bool:
    """Whether one run's trace gives every smaller budget (prefix families: the estimator says).

    Args:
        name: a method name.
        estimator: the built estimator (read for prefix families); None: not built.

    Returns:
        whether the method is anytime.
    """
    if find_prefix(name) is None and name in names():
        return get(name).anytime
    return bool(getattr(estimator, "anytime", False))


def description(name: str) -> str:
    """The one-line description of method ``name`` (or of its prefix family).

    Args:
        name: a method name.

    Returns:
        the description.
    """
    family = find_prefix(name)
    return family.description if family is not None else get(name).description


__all__ = [
    "ENTRY_POINT_GROUP",
    "Method",
    "Prefix",
    "build",
    "description",
    "find_prefix",
    "get",
    "is_anytime",
    "names",
    "prefixes",
    "register",
    "index_options",
    "register_prefix",
    "unknown_method_message",
]
