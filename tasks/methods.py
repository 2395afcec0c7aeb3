"""Method specifications for the harness and the CLI: ``name:key=value`` strings over the one registry.

Names, descriptions and the anytime flag come from :mod:`shapleig.registry` (the GP arms and
``exact`` of the core, the baselines and ``shapiq:<Approximator>`` of the ``baselines`` package).

A method is written ``name`` or ``name:key=value,key=value`` (e.g. ``shapleig:refit=decaying``).
Values are parsed as ``int``, ``float``, ``true``/``false``, ``none`` or left as strings. An option
the estimator declares ``bool`` takes exactly true/false, yes/no or 1/0 (any case); anything else
(``paired=maybe``) is refused naming the option, instead of counting as true. The GP
arms share ShaplEIG's GP, initial design, pool and read-out and differ only in the acquisition
(docs/baselines.md §10): ``shapleig`` (Shapley EIG), ``shapleig-uncertainty`` (posterior variance of f)
and ``shapleig-random`` (uniform pick from the pool). ``shapleig-leverage`` (GP+Leverage) fits the
same GP once on a fresh leverage sample per budget; it is not anytime.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import shapleig_baselines as baselines
from shapleig import registry

# Views of the one registry (shapleig.registry): the design-loop arms (anytime, they share the
# loop's options) and the GP+Leverage arm (a one-shot fit per budget).
GP_ARMS: tuple[str, ...] = tuple(registry.names(family="design-loop"))
GP_LEVERAGE = "shapleig-leverage"
# the default's four kernels run alone (shared / ARD lengthscales, without / with the size trend),
# labelled as MethodSpec.label writes them (options sorted): the benchmarks' "components"
KERNEL_ARMS: tuple[str, ...] = tuple(f"shapleig:size_trend={trend},surrogate={kernel}"
                                     for kernel in ("shared", "ard") for trend in (False, True))


def method_names() -> list[str]:
    """Every method name the harness runs: the registry's, ``exact`` aside (it needs budget 2^p)."""
    return [n for n in registry.names() if n != "exact"]


def describe(name: str) -> str:
    """The registry's one-line description of ``name``."""
    return registry.description(name)


def shapiq_method_names() -> list[str]:
    """``shapiq:<Approximator>`` for each of shapiq's Shapley-value approximators; [] without shapiq."""
    return [prefix.prefix + member for prefix in registry.prefixes().values() for member in prefix.members()]


def split_method(text: str) -> tuple[str, str]:
    """``'name:opts'`` -> ``(name, opts)``; a shapiq method keeps its class in the name
    (``'shapiq:PolySHAP:max_order=2'`` -> ``('shapiq:PolySHAP', 'max_order=2')``)."""
    text = str(text).strip()
    if text.startswith(baselines.SHAPIQ_PREFIX):
        cls, _, rest = text[len(baselines.SHAPIQ_PREFIX):].partition(":")
        return baselines.SHAPIQ_PREFIX + cls.strip(), rest
    name, _, rest = text.partition(":")
    return name.strip(), rest


def parse_value(text: str) -> Any:
    """``'3' -> 3``, ``'0.5' -> 0.5``, ``'true' -> True``, ``'none' -> None``, else the string."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")


def parse_bool(value: Any, option: str) -> bool:
    """A boolean option's value, strictly: ``True``/``False``, ``1``/``0``, or the texts
    true/false, yes/no, 1/0 (any case); ``ValueError`` naming ``option`` for anything else.

    Args:
        value: the value as parsed by :func:`parse_value` (or given in Python).
        option: where it was given, for the message (``"kernelshap option paired"``).

    Returns:
        The boolean.

    Examples:
        >>> parse_bool("Yes", "paired"), parse_bool(0, "paired")
        (True, False)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{option} takes a boolean: true/false, yes/no or 1/0; got {value!r}")


def _boolean_options(name: str, factory: Callable[..., Any] | None) -> dict[str, bool]:
    """Constructor parameters of method ``name`` (or ``factory``) annotated ``bool`` or
    ``bool | None``, mapped to whether None is allowed: the options :func:`parse_bool` checks.
    Empty for prefix families."""
    if factory is None:
        if registry.find_prefix(name) is not None or name not in registry.names():
            return {}
        method = registry.get(name)
        cls = method.estimator_class()
        targets: list[Any] = [getattr(cls, method.preset), cls] if method.preset else [cls]
        if getattr(cls, "options_class", None) is not None:
            targets.append(cls.options_class)  # options taken by name (ShaplEIG.from_options): the dataclass's fields
    else:
        targets = [factory]
    found: dict[str, bool] = {}
    for target in targets:
        try:
            params = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in params:
            annotation = str(p.annotation)
            if annotation in ("bool", "<class 'bool'>"):
                found.setdefault(p.name, False)
            elif annotation in ("bool | None", "Optional[bool]"):
                found.setdefault(p.name, True)
    return found


def check_boolean_options(name: str, options: dict[str, Any], factory: Callable[..., Any] | None = None,
                          ) -> dict[str, Any]:
    """``options`` with every boolean option of method ``name`` parsed strictly (:func:`parse_bool`).

    Args:
        name: the method's registry name.
        options: its options as parsed from ``name:key=value``.
        factory: a custom constructor (a :class:`MethodSpec`'s ``factory``), inspected instead.

    Returns:
        A new dict; ``ValueError`` naming the method and option for a value that is not a boolean.
    """
    checked = dict(options)
    for key, allows_none in _boolean_options(name, factory).items():
        if key not in options or (options[key] is None and allows_none):
            continue  # a "bool | None" option keeps None (its default: decided by the method)
        checked[key] = parse_bool(options[key], f"method {name!r}: option {key}")
    return checked


def parse_options(text: str, where: str = "") -> dict[str, Any]:
    """``'a=1,b=x' -> {'a': 1, 'b': 'x'}``; a malformed item raises ``ValueError``."""
    options: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad method option {item!r}{where}: write key=value")
        options[key.strip().replace("-", "_")] = parse_value(value)
    return options


@dataclass
class MethodSpec:
    """A method and its constructor options; ``build()`` makes a fresh estimator.

    ``factory`` overrides the registry (for custom estimators); ``anytime`` says whether one run at
    the largest budget yields every smaller budget through the result's ``trace`` (None: decide
    from the name and the estimator's ``anytime`` attribute).
    """

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    factory: Callable[..., Any] | None = None
    anytime: bool | None = None

    @property
    def label(self) -> str:
        """``name`` or ``name:key=value,...`` (options sorted): the method column of results."""
        if not self.options:
            return self.name
        return self.name + ":" + ",".join(f"{k}={self.options[k]}" for k in sorted(self.options))

    @property
    def options_json(self) -> str:
        return json.dumps(self.options, sort_keys=True, default=str)

    def build(self) -> Any:
        """A fresh estimator with these options; bad options raise ``ValueError`` naming them."""
        options = check_boolean_options(self.name, self.options, self.factory)
        try:
            if self.factory is not None:
                return self.factory(**options)
            return registry.build(self.name, **options)
        except TypeError as exc:
            raise ValueError(f"method {self.label!r}: bad options {self.options}: {exc}") from exc
        except ImportError as exc:  # shapiq:<...> without the shapiq extra
            raise ValueError(f"method {self.label!r}: {exc}") from exc

    def is_anytime(self, estimator: Any = None) -> bool:
        if self.anytime is not None:
            return self.anytime
        return registry.is_anytime(self.name, estimator)

    def with_options(self, **options: Any) -> "MethodSpec":
        merged = {**self.options, **options}
        return MethodSpec(self.name, merged, self.factory, self.anytime)


def unknown_method_message(name: str) -> str:
    return registry.unknown_method_message(name)


def parse_method(text: str | MethodSpec) -> MethodSpec:
    """``'name'`` or ``'name:key=value,...'`` -> :class:`MethodSpec` (name checked, not built)."""
    if isinstance(text, MethodSpec):
        return text
    name, rest = split_method(text)
    family = registry.find_prefix(name)
    if family is not None:
        if name[len(family.prefix):] not in family.members():
            MethodSpec(name).build()  # names the missing extra or the unknown approximator
    elif name not in registry.names():
        raise ValueError(unknown_method_message(name))
    return MethodSpec(name, parse_options(rest, where=f" in {text!r}"))


def resolve_methods(
    methods: Iterable[str | MethodSpec],
    extra_options: Iterable[str] = (),
    gp_options: Mapping[str, Any] | None = None,
    index: str = "SV",
    max_order: int | None = None,
) -> list[MethodSpec]:
    """Parse, apply options, and build each method once to validate it (no evaluation spent).

    ``extra_options``: ``'name:key=value,...'`` strings applied to every method called ``name``
    (``'gp:...'`` applies to all GP arms); ``gp_options`` is merged into every GP arm; ``index``
    (at ``max_order``, None: the index's default) adds the options that make each method estimate that
    index (:func:`shapleig.registry.index_options`) before it is validated. Raises ``ValueError`` for unknown names, malformed or rejected options,
    a method that cannot estimate the index, and duplicate labels.
    """
    specs = [parse_method(m) for m in methods]
    if not specs:
        raise ValueError(f"no methods given; known methods: {', '.join(method_names())}")
    for text in extra_options:
        target, rest = split_method(text)
        if ":" not in str(text):
            raise ValueError(f"bad --option {text!r}: write method:key=value[,key=value]")
        opts = parse_options(rest, where=f" in --option {text!r}")
        hits = [i for i, s in enumerate(specs) if s.name == target or (target == "gp" and s.name in GP_ARMS)]
        if not hits:
            raise ValueError(
                f"--option {text!r} names method {target!r}, which is not among the methods run "
                f"({', '.join(s.name for s in specs)})"
            )
        for i in hits:
            specs[i] = specs[i].with_options(**opts)
    if gp_options:
        specs = [s.with_options(**gp_options) if s.name in GP_ARMS else s for s in specs]
    specs = [s.with_options(**registry.index_options(s.name, index, max_order)) for s in specs]
    # booleans parsed strictly, and written one way in labels (paired=yes and paired=1 are paired=True)
    specs = [MethodSpec(s.name, check_boolean_options(s.name, s.options, s.factory), s.factory, s.anytime)
             for s in specs]
    labels = [s.label for s in specs]
    dupes = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dupes:
        raise ValueError(f"methods listed more than once: {', '.join(dupes)}")
    for spec in specs:
        spec.build()  # constructor-time validation of the options
    return specs


__all__ = [
    "describe",
    "GP_ARMS",
    "GP_LEVERAGE",
    "KERNEL_ARMS",
    "MethodSpec",
    "check_boolean_options",
    "method_names",
    "parse_bool",
    "parse_method",
    "parse_options",
    "parse_value",
    "resolve_methods",
    "shapiq_method_names",
    "split_method",
]
