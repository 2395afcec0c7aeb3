"""Outside ``shapleig/gp/kernels/`` no module names a concrete kernel (issue 36).

The kernels are a plug-in: the engine asks a kernel spec (``per_player``, ``learned_noise``,
``twin`` / ``from_twin``, ``describe``) or the registry (``shapleig/gp/kernels/registry.py``, the one
place the surrogate's string names meet kernel objects) instead of naming a kernel. Checked on the
source's syntax trees (docstrings and comments, prose, are not read):

- imports of a concrete kernel module (``shapleig.gp.kernels.hamming``, ``.size``, ``.graded``, ...)
  or of a name one of them defines, from anywhere in the package;
- a concrete kernel class named at all (``isinstance(part, Graded)``, ``kernels.SizeParams``);
- a string naming a kernel in a comparison (``==``, ``in``, ``startswith``, ``replace``, ...):
  ``name.startswith("ard")``, ``surrogate in ("graded", "graded-ard")``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "shapleig.gp.kernels"
PACKAGE_DIR = REPO / "shapleig" / "gp" / "kernels"
# the package's modules the engine may use: the protocol, the learned noise's model, the registry, the
# kernel contract (checks any spec, names none)
GENERIC_MODULES = {"__init__", "spec", "noise", "registry", "contract"}
# str methods that compare (or take apart) a string by its content
_STRING_TESTS = {"startswith", "endswith", "replace", "split", "rsplit", "partition", "removeprefix", "removesuffix",
                 "find", "index", "count"}


def concrete_modules() -> list[Path]:
    """The kernels package's modules that define concrete kernels (every one not generic)."""
    return sorted(p for p in PACKAGE_DIR.glob("*.py") if p.stem not in GENERIC_MODULES)


def defined_names(paths: list[Path]) -> tuple[set[str], set[str]]:
    """``(every top-level name, the class names)`` the modules ``paths`` define."""
    names: set[str] = set()
    classes: set[str] = set()
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names.add(node.name)
                if isinstance(node, ast.ClassDef):
                    classes.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names - {"__all__"}, classes


def kernel_words() -> set[str]:
    """The words that name a concrete kernel: every part name of every named surrogate's kernels."""
    from shapleig.gp.kernels.registry import BASE_KERNELS, SURROGATES, surrogate_kernels

    words = set(BASE_KERNELS)
    for mode in SURROGATES:
        for spec in surrogate_kernels(mode, size_trend="both", jumps=True, rough=True):
            words.update(part.name for part in spec.parts)
    return words


def _names_a_kernel(value: object, words: set[str]) -> bool:
    return isinstance(value, str) and any(token in words for token in re.split(r"[+\-]", value))


def _string_constants(node: ast.AST) -> list[object]:
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def offenders_in(source: str, label: str, concrete: set[str], names: set[str], classes: set[str],
                 words: set[str]) -> list[str]:
    """Where a module's ``source`` names a concrete kernel, one ``"label:line: what"`` per offence.

    Args:
        source: the module's text (outside the kernels package).
        label: its path in the report.
        concrete: the concrete modules' dotted names.
        names: every name they define.
        classes: the kernel classes they define.
        words: the strings that name a kernel.

    Returns:
        the offences.
    """
    out = []
    for node in ast.walk(ast.parse(source)):
        where = f"{label}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            out += [f"{where}: imports {a.name}" for a in node.names if a.name in concrete]
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == PACKAGE
                                                                    or node.module.startswith(PACKAGE + ".")):
            if node.module in concrete:
                out.append(f"{where}: imports from {node.module}")
            else:
                out += [f"{where}: imports {a.name} from {node.module}" for a in node.names if a.name in names]
        elif isinstance(node, ast.Name) and node.id in classes:
            out.append(f"{where}: names the kernel class {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in classes:
            out.append(f"{where}: names the kernel class {node.attr}")
        elif isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                out += [f"{where}: compares with {v!r}" for v in _string_constants(operand) if _names_a_kernel(v, words)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_TESTS:
            out += [f"{where}: {node.func.attr}({v!r})" for arg in node.args for v in _string_constants(arg)
                    if _names_a_kernel(v, words)]
    return out


def offenders() -> list[str]:
    """Every offence of every module of ``shapleig/`` outside the kernels package."""
    paths = concrete_modules()
    concrete = {f"{PACKAGE}.{p.stem}" for p in paths}
    names, classes = defined_names(paths)
    words = kernel_words()
    modules = sorted(p for p in (REPO / "shapleig").rglob("*.py") if PACKAGE_DIR not in p.parents)
    return [o for p in modules
            for o in offenders_in(p.read_text(), p.relative_to(REPO).as_posix(), concrete, names, classes, words)]


def test_no_module_outside_the_kernels_package_names_a_concrete_kernel() -> None:
    found = offenders()
    assert not found, ("modules outside shapleig/gp/kernels/ name a concrete kernel; ask the spec (per_player, "
                       "learned_noise, twin, describe) or the registry instead:\n" + "\n".join(found))


def test_the_guard_knows_the_kernels_it_looks_for() -> None:
    """The guard itself: it finds the concrete modules, classes and names, so an empty result means something."""
    paths = concrete_modules()
    names, classes = defined_names(paths)
    assert {"graded", "hamming", "size"} <= {p.stem for p in paths}
    assert {"Graded", "GradedParams", "Hamming", "SizeParams", "SizeKernel"} <= classes
    assert {"size_kernel_info", "graded_kernel"} <= names
    assert {"graded", "ard", "shared", "size"} <= kernel_words()


def _probe(source: str) -> list[str]:
    paths = concrete_modules()
    names, classes = defined_names(paths)
    text = '"""A module that says graded, ARD and the size kernel in prose only."""\n# comments say graded too\n' + source
    return offenders_in(text, "probe.py", {f"{PACKAGE}.{p.stem}" for p in paths}, names, classes, kernel_words())


@pytest.mark.parametrize("source, expected", [
    ("from shapleig.gp.kernels import SizeParams\n", "imports SizeParams from shapleig.gp.kernels"),
    ("from shapleig.gp.kernels.graded import x\n", "imports from shapleig.gp.kernels.graded"),
    ("import shapleig.gp.kernels.size\n", "imports shapleig.gp.kernels.size"),
    ("ok = isinstance(part, Graded)\n", "names the kernel class Graded"),
    ("ok = name.startswith('ard')\n", "startswith('ard')"),
    ("ok = mode in ('graded', 'graded-ard')\n", "compares with 'graded'"),
    ("ok = name.replace('graded', 'x')\n", "replace('graded')"),
    ("ok = name == 'shared+size'\n", "compares with 'shared+size'"),
])
def test_each_kind_of_offence_is_found(source: str, expected: str) -> None:
    found = _probe(source)
    assert any(expected in o for o in found), found


def test_prose_and_generic_uses_are_no_offence() -> None:
    assert _probe("from shapleig.gp.kernels import KernelSpec, surrogate_kernels\n"
                  "ok = spec.per_player and options.evidence == 'laplace' and info['size_kernel']\n") == []
