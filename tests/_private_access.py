"""Private names in source code, read from its syntax tree (no import of the code checked).

- :func:`class_members` and :func:`self_assigned`: what a class defines (its body's names) and
  the attributes it assigns on ``self`` / ``cls``.
- :func:`private_access_offenders`: every ``x._name`` (also ``getattr(x, "_name")``) where ``x`` is
  not ``self`` / ``cls`` / ``super()`` and the code is not inside a class that defines ``_name``
  (in its body, as ``self._name = ...``, or in a base class of the package); and every
  ``OtherClass._name`` naming a class other than the enclosing one.

The check is by name: a class that defines ``_x`` itself may read ``_x`` on any object (its own
instances: ``other._key`` in ``__eq__``, ``out._L`` on a copy it builds). Used by
tests/project/test_private_access.py and tests/design/test_async_scheduler.py.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

_REFLECTION = ("getattr", "setattr", "hasattr", "delattr")


def is_dunder(name: str) -> bool:
    """Whether ``name`` is ``__name__``-shaped (Python's own protocol, not a private name)."""
    return name.startswith("__") and name.endswith("__")


def is_private(name: str) -> bool:
    """Whether ``name`` has a leading underscore and is not a dunder."""
    return name.startswith("_") and not is_dunder(name)


def class_members(cls: ast.ClassDef) -> set[str]:
    """Names the class body defines: methods, nested classes and class-level (annotated) assignments."""
    members = {node.name for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
        elif isinstance(node, ast.Assign):
            members |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return members


def self_assigned(node: ast.AST) -> set[str]:
    """Attributes assigned on ``self`` or ``cls`` anywhere under ``node`` (``self.a, self.b = ...`` too)."""
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")}


@dataclass(frozen=True)
class Offence:
    """One expression reaching another class's private name: where, the code and why it offends."""

    path: str
    line: int
    code: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.code} ({self.why})"


def _private_access(node: ast.AST) -> tuple[ast.expr, str] | None:
    """``(owner, name)`` when ``node`` reaches a private name of ``owner``, else None."""
    if isinstance(node, ast.Attribute) and is_private(node.attr):
        return node.value, node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _REFLECTION
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str) and is_private(node.args[1].value)):
        return node.args[0], node.args[1].value
    return None


def _is_own(owner: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object whose class is the one the code is written in."""
    if isinstance(owner, ast.Name):
        return owner.id in ("self", "cls")
    return isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"


def _with_class(node: ast.AST, cls: ast.ClassDef | None = None) -> Iterator[tuple[ast.AST, ast.ClassDef | None]]:
    """Every node under ``node`` with its innermost enclosing class (None at module level)."""
    for child in ast.iter_child_nodes(node):
        yield child, cls
        yield from _with_class(child, child if isinstance(child, ast.ClassDef) else cls)


def _base_names(cls: ast.ClassDef) -> list[str]:
    """The bases' names as written (``Base`` or ``module.Base`` -> ``"Base"``)."""
    names = []
    for base in cls.bases:
        if isinstance(base, ast.Subscript):  # Generic[T] and the like
            base = base.value
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def private_access_offenders(sources: Mapping[str, str]) -> list[Offence]:
    """Where code reads or writes another class's private names.

    Args:
        sources: ``{path: source text}`` of every module of the package (classes are resolved by
            name across all of them, with the bases the package defines).

    Returns:
        one :class:`Offence` per offending expression, in the order of ``sources``.
    """
    trees = {path: ast.parse(text) for path, text in sources.items()}
    classes: dict[str, list[ast.ClassDef]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(node)

    def defined(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        out: set[str] = set()
        for cls in classes.get(name, []):
            out |= class_members(cls) | self_assigned(cls)
            for base in _base_names(cls):
                if base in classes and base not in seen:
                    out |= defined(base, seen | {name})
        return out

    found = []
    for path, tree in trees.items():
        for node, cls in _with_class(tree):
            access = _private_access(node)
            if access is None or _is_own(access[0]):
                continue
            owner, name = access
            if cls is None:
                why = "a private name reached outside any class"
            elif isinstance(owner, ast.Name) and owner.id in classes and owner.id != cls.name:
                why = f"a private member of another class, {owner.id}, in {cls.name}"
            elif name not in defined(cls.name):
                why = f"not a name {cls.name} defines"
            else:
                continue
            found.append(Offence(path, node.lineno, ast.unparse(node), why))
    return found
