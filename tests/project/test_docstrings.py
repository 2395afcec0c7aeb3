"""Every public function and method of ``shapleig`` documents its parameters and its result.

ruff's pydocstyle rules (``D``, Google convention, pyproject.toml) check a docstring's form, but
not that its ``Args:`` section names every parameter (D417 only checks sections that exist). This
test walks the package with :mod:`inspect`: every public function and method (and every public
class's constructor) needs an ``Args:`` section naming each parameter (``self``/``cls`` excepted,
``*args``/``**kwargs`` optional), and a ``Returns:`` (or ``Yields:``) section when its return
annotation is not ``None``; an override may leave both to the base method it overrides
(:func:`documented_by_base`). A constructor's parameters are documented in the class docstring
(``Args:``, or ``Attributes:`` for a dataclass's fields; a field inherited from a base class may
be documented there; an estimator's ``options_class`` documents its options) or in ``__init__``'s
own docstring.
Properties read like attributes: a one-line docstring, no sections.

A module this environment cannot import (the shapiq bridge without shapiq, the torch modules
without the torch stack) is checked on its syntax tree by the same rules (:func:`ast_gaps_of_module`).
Run as a script (``python tests/project/test_docstrings.py``) it prints every gap by module.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator

import pytest

import shapleig
from shapleig.extras import MissingExtraError

# Modules whose docstrings are still being written: left out of this test (and, in pyproject.toml,
# of ruff's D rules) until they leave this list. Empty: the whole package is covered.
PENDING: frozenset[str] = frozenset()

_SECTION = re.compile(r"^(\s*)([A-Z][A-Za-z ]*):\s*$")
_ENTRY = re.compile(r"^\s*\**([A-Za-z_][A-Za-z0-9_]*)(\s*\([^)]*\))?\s*:")


def sections(doc: str) -> dict[str, list[str]]:
    """The Google-style sections of ``doc``: section title -> the names its entries document.

    Args:
        doc: a cleaned docstring (:func:`inspect.cleandoc`).

    Returns:
        ``{"Args": ["x", "y"], "Returns": [...], ...}``; an entry is a line indented one level
        below the title that starts with ``name:`` or ``name (type):``.
    """
    found: dict[str, list[str]] = {}
    lines = doc.splitlines()
    index = 0
    while index < len(lines):
        head = _SECTION.match(lines[index])
        if head is None:
            index += 1
            continue
        indent, title = len(head.group(1)), head.group(2)
        names: list[str] = []
        entry_indent = None
        index += 1
        while index < len(lines):
            line = lines[index]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            if line.strip():
                depth = len(line) - len(line.lstrip())
                entry_indent = depth if entry_indent is None else entry_indent
                match = _ENTRY.match(line)
                if depth == entry_indent and match:
                    names.append(match.group(1))
            index += 1
        found.setdefault(title, []).extend(names)
    return found


def public_modules() -> Iterator[str]:
    """The names of ``shapleig``'s public modules (no path component starts with ``_``).

    Yields:
        dotted module names, the package itself first.
    """
    yield "shapleig"
    for info in pkgutil.walk_packages(shapleig.__path__, prefix="shapleig."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield info.name


def _documented_parameters(function: Callable, skip_first: bool) -> list[str]:
    """The parameters of ``function`` a docstring must name: all but self/cls and ``*``/``**`` ones."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return []
    if skip_first and parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    return [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _returns_something(function: Callable) -> bool:
    annotation = inspect.signature(function).return_annotation
    return annotation not in (None, "None", inspect.Signature.empty)


def gaps_of_callable(where: str, function: Callable, *, method: bool) -> list[str]:
    """What the docstring of ``function`` lacks.

    Args:
        where: the qualified name shown in the messages.
        function: a plain function (a method unwrapped from its descriptor).
        method: whether the first parameter is ``self``/``cls``.

    Returns:
        one message per gap; empty when the docstring is complete.
    """
    doc = inspect.getdoc(function)
    if not doc:
        return [f"{where}: no docstring"]
    found = sections(doc)
    gaps = []
    wanted = _documented_parameters(function, skip_first=method)
    missing = [name for name in wanted if name not in found.get("Args", [])]
    if missing:
        gaps.append(f"{where}: Args lacks {missing}")
    if _returns_something(function) and "Returns" not in found and "Yields" not in found:
        gaps.append(f"{where}: no Returns section")
    return gaps


def documented_by_base(cls: type, name: str, function: Callable, *, method: bool) -> bool:
    """Whether the method ``name`` of ``cls`` overrides a base method whose docstring covers it.

    An override (a kernel's ``matrix``, a game's ``__call__``) keeps its base's parameters and
    result: its Args and Returns are documented once, on the base (as with :func:`inspect.getdoc`'s
    inheritance), and its own docstring says what it does differently.

    Args:
        cls: the class defining the override.
        name: the method's name.
        function: the override (unwrapped from its descriptor).
        method: whether the first parameter is ``self``/``cls``.

    Returns:
        True when the nearest base defining ``name`` (in ``shapleig``) documents every parameter of
        the override, and its result when the override returns one.
    """
    for base in cls.__mro__[1:]:
        if name not in vars(base):
            continue
        member = vars(base)[name]
        base_function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        if not inspect.isfunction(base_function) or not base.__module__.startswith("shapleig"):
            return False
        found = sections(inspect.getdoc(base_function) or "")
        wanted = _documented_parameters(function, skip_first=method)
        returns = not _returns_something(function) or "Returns" in found or "Yields" in found
        return returns and all(p in found.get("Args", []) for p in wanted)
    return False


def gaps_of_class(where: str, cls: type) -> list[str]:
    """What the docstrings of ``cls`` (its constructor and its public methods) lack.

    Args:
        where: the qualified name shown in the messages.
        cls: a class defined in a public module.

    Returns:
        one message per gap; empty when every docstring is complete.
    """
    if not cls.__doc__:
        return [f"{where}: no docstring"]
    gaps = []
    init = cls.__dict__.get("__init__")
    if init is not None or dataclasses.is_dataclass(cls):
        constructor = cls.__init__
        own = inspect.getdoc(init) if init is not None and init.__doc__ else ""
        named = set(sections(own).get("Args", []))
        # a field inherited from a documented base counts there, and the GP estimators' options (their
        # constructor's keywords, ``options_class``) are documented once, on LoopOptions / GPOptions
        options_class = getattr(cls, "options_class", None)
        for klass in cls.__mro__ + (options_class.__mro__ if isinstance(options_class, type) else ()):
            described = sections(inspect.cleandoc(klass.__doc__ or "")) if klass.__module__.startswith("shapleig") else {}
            named |= set(described.get("Args", [])) | set(described.get("Attributes", []))
        missing = [name for name in _documented_parameters(constructor, skip_first=True) if name not in named]
        if missing:
            gaps.append(f"{where}: constructor parameters undocumented {missing}")
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for name, member in vars(cls).items():
        if name.startswith("_") or name in fields:  # a field's default (a lambda) is no method
            continue
        if isinstance(member, (staticmethod, classmethod)) and inspect.isfunction(member.__func__):
            function, method = member.__func__, isinstance(member, classmethod)
        elif inspect.isfunction(member):
            function, method = member, True
        else:
            function = None
        if function is not None:
            if not (function.__doc__ and documented_by_base(cls, name, function, method=method)):
                gaps += gaps_of_callable(f"{where}.{name}", function, method=method)
        elif isinstance(member, property) and member.fget is not None and not member.fget.__doc__:
            gaps.append(f"{where}.{name}: property without docstring")
    return gaps


def gaps_of_module(name: str) -> list[str]:
    """What the public functions and classes defined in module ``name`` lack in their docstrings.

    Args:
        name: a dotted module name.

    Returns:
        one message per gap; empty when every docstring is complete.
    """
    module = importlib.import_module(name)
    gaps = []
    for attribute, value in vars(module).items():
        if attribute.startswith("_") or getattr(value, "__module__", None) != name:
            continue
        where = f"{name}.{attribute}"
        if inspect.isclass(value):
            gaps += gaps_of_class(where, value)
        elif inspect.isfunction(inspect.unwrap(value)):  # functools.cache and the like: the wrapped function
            gaps += gaps_of_callable(where, inspect.unwrap(value), method=False)
    return gaps


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except (ImportError, MissingExtraError):  # an optional extra (torch, shapiq) this leg lacks
        return False
    return True


def _ast_gaps_of_function(where: str, node: ast.FunctionDef, *, method: bool) -> list[str]:
    found = sections(ast.get_docstring(node) or "")
    if not ast.get_docstring(node):
        return [f"{where}: no docstring"]
    names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    gaps = []
    missing = [n for n in names if n not in found.get("Args", [])]
    if missing:
        gaps.append(f"{where}: Args lacks {missing}")
    returns = node.returns is not None and not (isinstance(node.returns, ast.Constant) and node.returns.value is None)
    if returns and "Returns" not in found and "Yields" not in found:
        gaps.append(f"{where}: no Returns section")
    return gaps


def _source_tree(name: str) -> ast.Module:
    spec = importlib.util.find_spec(name)
    with open(spec.origin, encoding="utf-8") as handle:
        return ast.parse(handle.read())


def _ast_inherited(module: str, cls: ast.ClassDef, method: str) -> ast.FunctionDef | None:
    """The nearest base's definition of ``method``, following bases defined in or imported from shapleig."""
    tree = _source_tree(module)
    local = {node.name: (module, node) for node in tree.body if isinstance(node, ast.ClassDef)}
    imported = {alias.asname or alias.name: node.module for node in tree.body
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shapleig")
                for alias in node.names}
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            continue
        if base.id in local:
            where, node = local[base.id]
        elif base.id in imported:
            where = imported[base.id]
            node = next((n for n in _source_tree(where).body if isinstance(n, ast.ClassDef) and n.name == base.id),
                        None)
        else:
            continue
        if node is None:
            continue
        own = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == method), None)
        found = own if own is not None else _ast_inherited(where, node, method)
        if found is not None:
            return found
    return None


def ast_gaps_of_module(name: str) -> list[str]:
    """:func:`gaps_of_module` read from the source, for a module this environment cannot import.

    The shapiq bridge needs shapiq (Python >= 3.12), the torch modules the torch stack: on a leg
    without them the same rules are checked on the syntax tree (inherited documentation is then
    read from bases defined in the same module only).

    Args:
        name: a dotted module name.

    Returns:
        one message per gap; empty when every docstring is complete.
    """
    tree = _source_tree(name)
    gaps: list[str] = []
    for node in tree.body:
        if node.name.startswith("_") if hasattr(node, "name") else True:
            continue
        where = f"{name}.{node.name}"
        if isinstance(node, ast.FunctionDef):
            gaps += _ast_gaps_of_function(where, node, method=False)
        elif isinstance(node, ast.ClassDef):
            if not ast.get_docstring(node):
                gaps.append(f"{where}: no docstring")
                continue
            documented = sections(ast.get_docstring(node))
            named = set(documented.get("Args", [])) | set(documented.get("Attributes", []))
            for member in node.body:
                if not isinstance(member, ast.FunctionDef):
                    continue
                if member.name == "__init__":
                    own = set(sections(ast.get_docstring(member) or "").get("Args", []))
                    wanted = [a.arg for a in member.args.args[1:] + member.args.kwonlyargs]
                    missing = [n for n in wanted if n not in named | own]
                    if missing:
                        gaps.append(f"{where}: constructor parameters undocumented {missing}")
                elif not member.name.startswith("_"):
                    decorators = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in member.decorator_list}
                    if decorators & {"property", "cached_property", "setter"}:  # read like attributes
                        if not ast.get_docstring(member) and "setter" not in decorators:
                            gaps.append(f"{where}.{member.name}: property without docstring")
                        continue
                    inherited = _ast_inherited(name, node, member.name)
                    if inherited is not None and ast.get_docstring(member) and not _ast_gaps_of_function(
                            "", inherited, method=True):
                        continue
                    gaps += _ast_gaps_of_function(f"{where}.{member.name}", member, method=True)
    return gaps


MODULES = [name for name in public_modules() if name not in PENDING]


@pytest.mark.parametrize("name", MODULES)
def test_every_public_callable_documents_its_parameters_and_result(name: str) -> None:
    gaps = gaps_of_module(name) if _importable(name) else ast_gaps_of_module(name)
    assert not gaps, "\n".join(gaps)


@pytest.mark.parametrize("name", MODULES)
def test_the_source_reading_agrees_with_the_import_reading(name: str) -> None:
    """The syntax-tree check (used where an extra is missing) finds no gap the import check does not."""
    if not _importable(name):
        pytest.skip(f"{name} needs an extra this environment lacks")
    assert set(ast_gaps_of_module(name)) <= set(gaps_of_module(name))


def test_the_checker_finds_a_missing_parameter_and_a_missing_returns() -> None:
    def documented(x: int, y: int = 0) -> int:
        """Add.

        Args:
            x: one.
            y (int): another.

        Returns:
            the sum.
        """
        return x + y

    def undocumented(x: int, *args: int, y: int = 0, **kwargs: int) -> int:
        """Add.

        Args:
            x: one.
                y: a continuation line, not an entry.
        """
        return x + y

    assert gaps_of_callable("documented", documented, method=False) == []
    gaps = gaps_of_callable("undocumented", undocumented, method=False)
    assert gaps == ["undocumented: Args lacks ['y']", "undocumented: no Returns section"]


def test_an_override_may_leave_its_arguments_to_the_base_it_overrides() -> None:
    class Base:
        def matrix(self, params: int, Z: int) -> int:
            """The kernel matrix.

            Args:
                params: the values.
                Z: the coalitions.

            Returns:
                the matrix.
            """
            return params

    class Same(Base):
        """A kernel."""

        def matrix(self, params: int, Z: int) -> int:
            """The same, faster."""
            return params

    class Renamed(Base):
        """Another kernel."""

        def matrix(self, params: int, coalitions: int) -> int:
            """A renamed parameter is not documented by the base."""
            return params

    for cls in (Base, Same, Renamed):
        cls.__module__ = "shapleig.example"  # documented_by_base trusts shapleig's own bases only
    assert documented_by_base(Same, "matrix", Same.matrix, method=True)
    assert not documented_by_base(Renamed, "matrix", Renamed.matrix, method=True)
    assert gaps_of_class("Same", Same) == []
    assert gaps_of_class("Renamed", Renamed) == ["Renamed.matrix: Args lacks ['params', 'coalitions']",
                                                 "Renamed.matrix: no Returns section"]


def test_pending_modules_exist() -> None:
    assert PENDING <= set(public_modules())


if __name__ == "__main__":
    total = 0
    for module_name in public_modules():
        if _importable(module_name):
            module_gaps = gaps_of_module(module_name)
            total += len(module_gaps)
            if module_gaps and "-q" not in sys.argv:
                print("\n".join(module_gaps))
            elif module_gaps:
                print(f"{len(module_gaps):4d} {module_name}")
    print(f"{total} gaps")
