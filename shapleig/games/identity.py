"""Game identity for evaluation stores: what determines a game's values, as named digests.

An evaluation store must never serve one game's values to another. :func:`game_identity` turns a
game into a flat mapping ``component -> short text`` built from its *content*, and the store keeps
that mapping next to its digest (:func:`identity_digest`), so a refusal can say what differed
(:func:`identity_differences`: ``"param seed: 0 vs 1"``, ``"the code of fn changed"``).

Components, in order of preference:

- ``game.identity()`` when the game defines it (a dict; :class:`~shapleig.games.game.FunctionGame`
  does: the function's code, defaults, closure and the globals it reads);
- ``game.fingerprint()`` (any text that changes whenever the values would);
- ``game.params()`` (the parameters of the project's games), one component per key;
- otherwise the object's state: every attribute (``vars(game)`` or ``__getstate__``), one
  component per attribute, so a seed hidden from ``repr`` (``SOUM(random_state=1)``) still counts.

Unless the game defines ``identity()`` or ``fingerprint()``, a user-defined game class also adds
``class.code``: the body of every user class in its MRO (methods, properties, class attributes).

Values are digested by content: numpy arrays in full, random generators by their state, dicts by
keys and values, functions by their code object (bytes, constants, names), closure cells,
defaults and the module globals they read (:func:`global_values`: also ``module.attr`` read
through a user module, every global when the code calls ``globals()``, and names injected into
``builtins``), ``functools.partial``
by its function and arguments, user classes by their body, instances by their class and state.
Functions and classes of installed packages are identified by qualified name and the package's
version (:func:`package_version`). What cannot be digested (an object with no state that refuses
to pickle) is reported by :func:`opaque_parts`; such a game needs an explicit ``game_id``, as does
a game depending on anything outside the process (files, environment, remote services: see
docs/guide.md §2). Nothing here unpickles anything.
"""

from __future__ import annotations

import builtins
import dis
import functools
import hashlib
import importlib.metadata
import json
import logging
import pickle
import platform
import random
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

import numpy as np

_MAX_DEPTH = 40  # nesting limit for the state walk; deeper objects make the game opaque
_SHOWN = 40  # readable values up to this many characters are shown in messages as they are
_LIBRARY_ROOTS = tuple(
    p for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")} if p
)


# names in a class body that never change its instances' values (or are interpreter bookkeeping)
_CLASS_SKIP = frozenset({"__dict__", "__weakref__", "__module__", "__doc__", "__qualname__", "_abc_impl",
                         "__firstlineno__", "__static_attributes__", "__annotations__", "__parameters__",
                         "__orig_bases__", "__slotnames__"})
# built-ins that read module state instead of naming it: a function calling them depends on every global
_READS_ALL_GLOBALS = frozenset({"globals", "vars", "eval", "exec"})
# reads of an attribute whose name may be built at run time (``getattr(config, "W" + k)``): a function
# using them depends on every attribute of the user modules it reads
_READS_ANY_ATTRIBUTE = frozenset({"getattr", "vars", "__dict__", "attrgetter", "methodcaller"})
# methods that fill a container: a global (or closure) dict, list or set the function fills is
# its own output (a memo, a log of calls), not an input
_CACHE_WRITES = frozenset({"setdefault", "update", "__setitem__", "append", "extend", "add", "appendleft"})
# what such a container is recorded as (its contents are the function's own results)
CACHE_MARK = "<a container the function fills (a cache or log): not part of the identity>"
# loggers never change a game's values and reach every handler (and its lock): type and name only
_INERT_TYPES: tuple[type, ...] = (logging.Logger, logging.LoggerAdapter)


def _is_library_module(name: str) -> bool:
    """True for a module of the standard library, the interpreter, or an installed package."""
    if name in sys.builtin_module_names or name == "builtins":
        return True
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if name == "__main__" or path is None:
        return False
    return path.startswith(_LIBRARY_ROOTS)


def is_library(fn: Any) -> bool:
    """True for a function or class defined in the standard library or an installed package.

    Those are identified by name and the package's version (:func:`package_version`); user code
    (a script, ``__main__``, a notebook, a project folder) is digested by content.

    Args:
        fn: a function, class or any object with ``__module__``.

    Returns:
        whether it comes from the standard library or an installed distribution.
    """
    return _is_library_module(getattr(fn, "__module__", None) or "")


_DISTRIBUTIONS: dict[str, list[str]] = {}  # top-level module -> distributions, read once per process


def _distributions() -> dict[str, list[str]]:
    if not _DISTRIBUTIONS:  # scanning every installed distribution's metadata takes up to a second
        _DISTRIBUTIONS.update(importlib.metadata.packages_distributions())
    return _DISTRIBUTIONS


def installed_distributions() -> dict[str, list[str]]:
    """``{top-level module: [distributions providing it]}`` of this environment (read once).

    Returns:
        a copy of the mapping (cheap to send to a worker process).
    """
    return dict(_distributions())


def adopt_distributions(mapping: dict[str, list[str]]) -> None:
    """Use ``mapping`` (another process's :func:`installed_distributions`) instead of scanning.

    An evaluation worker in the same environment digests its copy of the game without that second.

    Args:
        mapping: ``{top-level module: [distributions]}`` from :func:`installed_distributions`.
    """
    _DISTRIBUTIONS.clear()
    _DISTRIBUTIONS.update(mapping)


@functools.cache
def package_version(module: str) -> str:
    """``"numpy 2.4.6"``: the distribution(s) and version(s) that provide ``module``'s top-level package.

    ``"python 3.11.7"`` for the standard library. An upgraded package is another game.

    Args:
        module: a dotted module name.

    Returns:
        ``"<distribution> <version>"`` (several joined by ", " when more than one provides it).
    """
    top = (module or "?").split(".")[0]
    if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()) or top == "builtins":
        return f"python {platform.python_version()}"
    found = []
    for dist in sorted(set(_distributions().get(top, []))):
        try:
            found.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    if not found:
        version = getattr(sys.modules.get(top), "__version__", None)
        found.append(f"{top} {version}" if isinstance(version, str) else f"{top} (version unknown)")
    return ", ".join(found)


class _Digest:
    """Feeds a canonical byte encoding of a Python value into a SHA-256 (cycle- and depth-safe)."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.opaque: list[str] = []
        self._active: set[int] = set()
        self._seen: dict[int, int] = {}  # functions, classes, modules, code already fed: by order

    def text(self, tag: str, body: str | bytes = b"") -> None:
        body = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        self.h.update(f"{tag}:{len(body)}:".encode() + body)

    def feed(self, obj: Any, depth: int = 0, where: str = "") -> None:
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, np.generic)):
            self.text(type(obj).__name__, repr(obj) if not isinstance(obj, bytes) else obj)
            return
        if depth > _MAX_DEPTH:  # never identify by type name alone: that could collide silently
            self.opaque.append(f"{where or 'game'} (nested more than {_MAX_DEPTH} levels deep)")
            return
        key = id(obj)
        if isinstance(obj, (types.FunctionType, types.CodeType, types.ModuleType, type)):
            # shared code is fed once: a reference by first-seen order keeps the encoding canonical
            # and the walk linear in the size of the code it reaches
            if key in self._seen:
                self.text("seen", str(self._seen[key]))
                return
            self._seen[key] = len(self._seen)
        if key in self._active:
            self.text("cycle")
            return
        self._active.add(key)
        try:
            self._feed(obj, depth + 1, where)
        finally:
            self._active.discard(key)

    # complexity over budget: one branch per value type the fingerprint understands, a flat dispatch
    def _feed(self, obj: Any, depth: int, where: str) -> None:  # noqa: C901
        if isinstance(obj, np.ndarray):
            self.text("ndarray", f"{obj.dtype.str}{obj.shape}")
            if obj.dtype.hasobject:
                for item in obj.ravel().tolist():
                    self.feed(item, depth, where)
            else:
                self.text("data", np.ascontiguousarray(obj).tobytes())
            return
        if isinstance(obj, (dict, types.MappingProxyType)):
            self.text("dict", str(len(obj)))
            # keys in the order of their own digests: independent of insertion order and of
            # PYTHONHASHSEED (a frozenset's repr, and so a repr-based order, follows the hash seed)
            for k, v in sorted(obj.items(), key=lambda kv: digest_value(kv[0])):
                self.feed(k, depth, where)
                self.feed(v, depth, f"{where}[{k!r}]")
            return
        if isinstance(obj, (list, tuple)):
            self.text(type(obj).__name__, str(len(obj)))
            for i, v in enumerate(obj):
                self.feed(v, depth, f"{where}[{i}]")
            return
        if isinstance(obj, (set, frozenset)):
            self.text("set", ",".join(sorted(digest_value(v) for v in obj)))
            return
        if isinstance(obj, types.CodeType):
            self._code(obj, depth, where)
            return
        if isinstance(obj, types.FunctionType):
            self._function(obj, depth, where)
            return
        if isinstance(obj, types.MethodType):
            self.text("method")
            self.feed(obj.__func__, depth, where)
            self.feed(obj.__self__, depth, where + ".__self__")
            return
        if isinstance(obj, functools.partial):  # the wrapped function and its bound arguments
            self.text("partial")
            self.feed(obj.func, depth, where + ".func")
            self.feed(obj.args, depth, where + ".args")
            self.feed(obj.keywords, depth, where + ".keywords")
            return
        if isinstance(obj, types.ModuleType):
            self.text("module", obj.__name__)
            if _is_library_module(obj.__name__):
                self.text("version", package_version(obj.__name__))
            else:  # a user module reached other than as a global (e.g. an attribute): all of it
                self.feed(_module_values(obj), depth, where)
            return
        if isinstance(obj, type):
            self._class(obj, depth, where)
            return
        if isinstance(obj, (types.BuiltinFunctionType, types.MethodWrapperType, np.ufunc)):
            self.text("named", qualname(obj))
            self.text("version", package_version(getattr(obj, "__module__", None) or type(obj).__module__))
            owner = getattr(obj, "__self__", None)  # a bound built-in method: its object counts
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.feed(owner, depth, where + ".__self__")
            return
        if isinstance(obj, (staticmethod, classmethod)):
            self.text(type(obj).__name__)
            self.feed(obj.__func__, depth, where)
            return
        if isinstance(obj, property):
            self.text("property")
            self.feed((obj.fget, obj.fset, obj.fdel), depth, where)
            return
        if isinstance(obj, functools.cached_property):
            self.text("cached_property")
            self.feed(obj.func, depth, where)
            return
        if isinstance(obj, _INERT_TYPES):
            self.text("inert", qualname(type(obj)) + ":" + str(getattr(obj, "name", "")))
            return
        if isinstance(obj, np.random.Generator):
            self.text("Generator")
            self.feed(obj.bit_generator.state, depth, where)
            return
        if isinstance(obj, np.random.RandomState):
            self.text("RandomState")
            self.feed(obj.get_state(legacy=False), depth, where)
            return
        if isinstance(obj, np.random.BitGenerator):
            self.text("BitGenerator")
            self.feed(obj.state, depth, where)
            return
        if isinstance(obj, random.Random):
            self.text("Random")
            self.feed(obj.getstate(), depth, where)
            return
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor):
            self.text("tensor")
            self.feed(obj.detach().cpu().numpy(), depth, where)
            return
        pandas = sys.modules.get("pandas")
        if pandas is not None and isinstance(obj, (pandas.DataFrame, pandas.Series, pandas.Index)):
            # the hashes are of the values only (int8 and int64 100 hash alike): dtypes, labels and
            # the name count too (a model may read them: categories, column names)
            self.text(type(obj).__name__)
            self.feed(np.asarray(pandas.util.hash_pandas_object(obj, index=True)), depth, where)
            dtypes = obj.dtypes if isinstance(obj, pandas.DataFrame) else [obj.dtype]
            self.feed([repr(t) for t in dtypes], depth, where)
            self.feed([repr(c) for c in getattr(obj, "columns", [])], depth, where)
            self.feed(repr(getattr(obj, "name", None)), depth, where)
            if not isinstance(obj, pandas.Index):
                self.feed(repr(obj.index.dtype), depth, where)
            return
        self._object(obj, depth, where)

    def _code(self, code: types.CodeType, depth: int, where: str) -> None:
        # the instructions, constants and names; not file names or line numbers (moving a
        # function in its file does not change its values)
        self.text("code", code.co_code)
        self.feed(code.co_names, depth, where)
        self.feed(code.co_varnames, depth, where)
        self.feed(code.co_consts, depth, where)

    def _class(self, cls: type, depth: int, where: str) -> None:
        """A class by name and version if it comes from a library; else by its user classes' bodies.

        The body of every user class in its MRO (methods' code, class-level attributes) counts, so
        an edited method or a changed ``Config.W`` is another game.
        """
        self.text("class", qualname(cls))
        if is_library(cls):
            self.text("version", package_version(cls.__module__))
            return
        for klass in cls.__mro__:
            if is_library(klass):
                self.text("base", qualname(klass))
                continue
            self.text("body", qualname(klass))
            for name in sorted(k for k in klass.__dict__ if k not in _CLASS_SKIP):
                self.feed(name, depth, where)
                self.feed(klass.__dict__[name], depth, f"{where}.{name}")

    def _function(self, fn: types.FunctionType, depth: int, where: str) -> None:
        self.text("function", qualname(fn))
        if is_library(fn):
            self.text("version", package_version(fn.__module__))
            return
        self._code(fn.__code__, depth, where)
        self.feed(fn.__defaults__, depth, where)
        self.feed(fn.__kwdefaults__, depth, where)
        caches = cache_names(fn)
        for name, value in closure_values(fn).items():
            self.feed(name, depth, where)
            self.feed(CACHE_MARK if _is_cache(name, value, caches) else value, depth, f"{where}.{name}")
        for name, value in global_values(fn).items():
            self.feed(name, depth, where)
            if isinstance(value, types.ModuleType):  # its attributes read are listed as "module.attr"
                self.text("module", value.__name__)
                if _is_library_module(value.__name__):  # ``pkg.f`` may change with an upgrade
                    self.text("version", package_version(value.__name__))
                continue
            self.feed(CACHE_MARK if _is_cache(name, value, caches) else value, depth, f"{where}.{name}")

    def _object(self, obj: Any, depth: int, where: str) -> None:
        cls = type(obj)
        self.text("object", qualname(cls))
        if not is_library(cls):  # its methods and class attributes compute its values too
            self.feed(cls, depth, where + ".__class__")
        if callable(getattr(obj, "identity", None)) and not isinstance(obj, type):
            self.feed(obj.identity(), depth, where)
            return
        state = object_state(obj)
        if state is not None:
            self.feed(state, depth, where)
            return
        try:  # an object without inspectable state: its pickle (never unpickled) says what it is
            self.text("pickle", pickle.dumps(obj, protocol=4))
        except Exception:  # noqa: BLE001 - any refusal to pickle makes it opaque
            self.opaque.append(f"{where or 'game'} ({qualname(cls)})")


def qualname(obj: Any) -> str:
    """``module.QualifiedName`` of ``obj`` (its type's name when it has none), for identity components.

    Args:
        obj: a function, class or instance.

    Returns:
        the dotted name.
    """
    return f"{getattr(obj, '__module__', None) or '?'}.{getattr(obj, '__qualname__', None) or type(obj).__name__}"


def object_state(obj: Any) -> dict[str, Any] | None:
    """The attributes that make up ``obj``.

    The ``__getstate__`` of a library class that defines one (LightGBM's Booster returns its model
    string instead of a C handle; scikit-learn), else ``vars(obj)`` plus ``__slots__``; None if it
    has none.

    A ``__getstate__`` written in user code is not trusted: it says what to pickle, and may leave
    out what computes the values (a model reloaded elsewhere), so user objects count by what they
    really hold.

    Args:
        obj: any object.

    Returns:
        ``{attribute: value}``, or None when ``obj`` holds no attributes.
    """
    cls = type(obj)
    owner = next((k for k in cls.__mro__ if "__getstate__" in vars(k)), object)
    if owner is not object and is_library(owner):
        try:
            state = obj.__getstate__()
        except Exception:  # noqa: BLE001 - fall back to the attributes
            state = None
        if isinstance(state, dict):
            return state
        if state is not None:
            return {"__getstate__": state}
    out: dict[str, Any] = dict(getattr(obj, "__dict__", {}) or {})
    for klass in cls.__mro__:
        for name in getattr(klass, "__slots__", ()) or ():
            if isinstance(name, str) and hasattr(obj, name) and name not in ("__dict__", "__weakref__"):
                out[name] = getattr(obj, name)
    return out if (out or hasattr(obj, "__dict__")) else None


def closure_values(fn: types.FunctionType) -> dict[str, Any]:
    """``{free variable name: value}`` of a function's closure (empty cells as a marker).

    Args:
        fn: a Python function.

    Returns:
        the closure's values by free-variable name.
    """
    out: dict[str, Any] = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            out[name] = "<empty cell>"
    return out


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _code_strings(code: types.CodeType) -> set[str]:
    out = {c for c in code.co_consts if isinstance(c, str)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _code_strings(const)
    return out


def _module_values(module: types.ModuleType, names: Any = None) -> dict[str, Any]:
    """``{name: value}`` of a module's attributes (those in ``names``, else all but dunders)."""
    attrs = vars(module)
    keys = sorted(k for k in attrs if not (k.startswith("__") and k.endswith("__"))) if names is None else sorted(
        k for k in names if k in attrs)
    return {k: attrs[k] for k in keys}


def global_values(fn: types.FunctionType) -> dict[str, Any]:
    """``{name: value}`` of the module globals the function's code (and nested code) reads.

    Reads through a user module count too, as ``"module.attr"`` (``config.W``, a helper called as
    ``helpers.h``; the attribute names are those in the code and its string constants, so
    ``getattr(config, "W")`` counts). A function that calls ``globals()``/``vars()``/``eval``/``exec``
    reads every global of its module. A name resolved through builtins that the interpreter did not
    put there (``builtins.K = 1.0``, a built-in replaced) counts as ``"builtins.K"``, read directly or
    as ``builtins.K``.

    Args:
        fn: a Python function.

    Returns:
        ``{name: value}``, with ``"module.attr"`` names for reads through a module.
    """
    g = fn.__globals__
    names = _code_names(fn.__code__)
    strings = _code_strings(fn.__code__)
    reads_all = bool(names & _READS_ALL_GLOBALS and not names & _READS_ALL_GLOBALS & set(g))
    if reads_all:
        names |= {k for k in g if not (k.startswith("__") and k.endswith("__"))}
    # an attribute name built at run time cannot be read from the code: every attribute counts
    any_attribute = bool(names & _READS_ANY_ATTRIBUTE)
    out: dict[str, Any] = {}
    for name in sorted(n for n in names if n in g):
        value = g[name]
        out[name] = value
        if isinstance(value, types.ModuleType) and value.__name__ == "builtins":  # ``builtins.K``
            for attr, inner in _injected_builtins(vars(value), None if any_attribute else names | strings).items():
                out[f"{name}.{attr}"] = inner
        elif isinstance(value, types.ModuleType) and not _is_library_module(value.__name__):
            for attr, inner in _module_values(value, None if any_attribute else names | strings).items():
                out[f"{name}.{attr}"] = inner
    # a name that is no module global resolves through builtins: one injected there (``builtins.K = 1.0``
    # in another module) or a built-in replaced is read like a global, so another process's K counts
    found = _builtins_of(fn)
    for name, value in _injected_builtins(found, None if reads_all else {n for n in names if n not in g}).items():
        out[f"builtins.{name}"] = value
    return out


# built-ins known under a second name (``IOError is OSError``)
_BUILTIN_ALIASES = {"EnvironmentError": "OSError", "IOError": "OSError", "WindowsError": "OSError"}


def _is_standard_builtin(name: str, value: Any) -> bool:
    """Whether builtins' ``name`` holds the interpreter's own object, not one injected or replaced."""
    if name.startswith("__") and name.endswith("__"):  # interpreter bookkeeping: __import__, __debug__, ...
        return True
    if name in ("Ellipsis", "NotImplemented"):
        return value is (Ellipsis if name == "Ellipsis" else NotImplemented)
    if type(value).__module__ == "_sitebuiltins":  # exit, quit, help, license: the site module's helpers
        return True
    return getattr(value, "__module__", None) == "builtins" and getattr(value, "__name__", None) == \
        _BUILTIN_ALIASES.get(name, name)


def _builtins_of(fn: types.FunctionType) -> dict[str, Any]:
    """The namespace ``fn`` resolves built-in names in (its ``__builtins__``)."""
    space = getattr(fn, "__builtins__", None) or fn.__globals__.get("__builtins__", builtins)
    return vars(space) if isinstance(space, types.ModuleType) else dict(space)


def _injected_builtins(space: dict[str, Any], names: Any) -> dict[str, Any]:
    """``{name: value}`` of the names in ``names`` (None: all) that builtins holds but the interpreter did not put there."""
    keys = space if names is None else [n for n in names if n in space]
    return {n: space[n] for n in sorted(keys) if not _is_standard_builtin(n, space[n])}


def cache_names(fn: types.FunctionType) -> set[str]:
    """Names of the globals and closure variables the function (or code nested in it) fills.

    Filling is ``D[key] = value``, ``D.setdefault``/``update``/``__setitem__``,
    ``L.append``/``extend``, ``S.add``.

    A dict, list or set the function fills holds its own results (a memo, a log of calls), not
    its inputs: it is left out of the identity (:data:`CACHE_MARK`), so a memo filled by a run
    does not make the same game look different when it is bound again. A game whose values read
    such a container back as an input (``W["scale"] = 2`` inside the game, a counter) is stateful:
    the identity does not see it, and it needs ``game_id``.

    Args:
        fn: a Python function.

    Returns:
        the names of the containers the function fills.
    """
    return _written_containers(fn.__code__)


# complexity over budget: one branch per bytecode pattern that writes a global container
def _written_containers(code: types.CodeType) -> set[str]:  # noqa: C901
    out: set[str] = set()
    ins = list(dis.get_instructions(code))
    loads = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF")
    for i, inst in enumerate(ins):
        if inst.opname in loads and i + 1 < len(ins):
            after = ins[i + 1]
            if after.opname in ("LOAD_METHOD", "LOAD_ATTR") and after.argval in _CACHE_WRITES:
                out.add(str(inst.argval))
        if inst.opname == "STORE_SUBSCR":  # container[key] = value: find what pushed the container
            height = 0
            for k in range(i - 1, -1, -1):
                prev = ins[k]
                effect = dis.stack_effect(prev.opcode, prev.arg if prev.opcode >= dis.HAVE_ARGUMENT else None,
                                          jump=False)
                if height == 1 and effect == 1:  # the key is complete: this pushed the container
                    if prev.opname in loads:
                        out.add(str(prev.argval))
                    break
                height += effect
                if height > 1:  # not a plain store (e.g. ``D[k] += 1`` reorders the stack): not a cache
                    break
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _written_containers(const)
    return out


def _is_cache(name: str, value: Any, caches: set[str]) -> bool:
    import collections

    return name in caches and isinstance(value, (dict, list, set, collections.deque))


def digest_value(value: Any, where: str = "", opaque: list[str] | None = None) -> str:
    """SHA-256 hex digest of ``value``'s content (see the module docstring).

    Args:
        value: any value (arrays, containers, functions, objects).
        where: the component's name, used in ``opaque`` entries.
        opaque: a list that collects the parts that could not be digested (None: not collected).

    Returns:
        64 hex digits.
    """
    d = _Digest()
    d.feed(value, 0, where)
    if opaque is not None:
        opaque.extend(d.opaque)
    return d.h.hexdigest()


def show_value(value: Any, where: str = "", opaque: list[str] | None = None) -> str:
    """Short text for one identity component.

    The value itself when it is a small scalar or string, else ``<type> #digest`` (12 hex digits).

    Args:
        value: any value.
        where: the component's name, used in ``opaque`` entries.
        opaque: a list that collects the parts that could not be digested (None: not collected).

    Returns:
        ``repr`` of a small scalar or string, else ``"<type> #digest"``.
    """
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        text = repr(value.item() if isinstance(value, np.generic) else value)
        if len(text) <= _SHOWN:
            return text
    if isinstance(value, (list, tuple)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        text = repr(value)
        if len(text) <= _SHOWN:
            return text
    kind = type(value).__name__
    if isinstance(value, np.ndarray):
        kind = f"ndarray {value.dtype}{list(value.shape)}"
    elif isinstance(value, (list, tuple, dict)):
        kind = f"{kind}[{len(value)}]"
    return f"{kind} #{digest_value(value, where, opaque)[:12]}"


# complexity over budget: the parts of a callable (code, defaults, closure, globals, state), each checked
def function_identity(fn: Callable[..., Any], prefix: str = "fn") -> dict[str, str]:  # noqa: C901
    """Identity components of a callable.

    ``fn.code``, ``fn.defaults``, ``fn.closure.<name>``, ``fn.global.<name>`` for a Python
    function; its state otherwise (a callable object).

    Args:
        fn: a function, bound method, ``functools.partial`` or callable object.
        prefix: the prefix of the component names.

    Returns:
        ``{component name: text}`` (see :func:`show_value`).
    """
    opaque: list[str] = []
    if isinstance(fn, types.MethodType):
        out = function_identity(fn.__func__, prefix)
        out[f"{prefix}.self"] = show_value(fn.__self__, f"{prefix}.self", opaque)
    elif isinstance(fn, functools.partial):
        out = function_identity(fn.func, f"{prefix}.func")
        out[f"{prefix}.args"] = show_value(fn.args, f"{prefix}.args", opaque)
        out[f"{prefix}.keywords"] = show_value(fn.keywords, f"{prefix}.keywords", opaque)
    elif isinstance(fn, types.FunctionType) and not is_library(fn):
        out = {
            f"{prefix}.code": f"{qualname(fn)} #{digest_value(fn.__code__)[:12]}",
            f"{prefix}.defaults": show_value(fn.__defaults__, prefix, opaque),
        }
        if fn.__kwdefaults__:
            out[f"{prefix}.kwdefaults"] = show_value(fn.__kwdefaults__, prefix, opaque)
        caches = cache_names(fn)
        for name, value in closure_values(fn).items():
            out[f"{prefix}.closure.{name}"] = CACHE_MARK if _is_cache(name, value, caches) else show_value(
                value, f"{prefix}.{name}", opaque)
        for name, value in global_values(fn).items():
            if isinstance(value, types.ModuleType):
                out[f"{prefix}.global.{name}"] = f"module {value.__name__}"
                if _is_library_module(value.__name__):  # ``pkg.f`` may change with an upgrade
                    out[f"{prefix}.global.{name}.version"] = package_version(value.__name__)
            elif _is_cache(name, value, caches):
                out[f"{prefix}.global.{name}"] = CACHE_MARK
            else:
                out[f"{prefix}.global.{name}"] = show_value(value, f"{prefix}.{name}", opaque)
    elif isinstance(fn, type) and not is_library(fn):  # a user class used as the function
        out = {f"{prefix}.name": qualname(fn), f"{prefix}.code": show_value(fn, prefix, opaque)}
    elif isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, types.MethodWrapperType, np.ufunc, type)):
        out = {f"{prefix}.name": qualname(fn),
               f"{prefix}.version": package_version(getattr(fn, "__module__", None) or type(fn).__module__)}
        owner = getattr(fn, "__self__", None)
        if not isinstance(fn, (types.FunctionType, type)) and owner is not None and not isinstance(owner, types.ModuleType):
            out[f"{prefix}.self"] = show_value(owner, f"{prefix}.self", opaque)
    elif is_library(type(fn)) and is_library(fn) and isinstance(getattr(fn, "__qualname__", None), str):
        # a library's function wrapped in a callable object (numpy's dispatchers): name and version
        out = {f"{prefix}.name": qualname(fn), f"{prefix}.version": package_version(fn.__module__)}
    else:
        out = {f"{prefix}.class": qualname(type(fn))}
        out.update(class_code_identity(type(fn), f"{prefix}.", opaque))
        out.update(_components(fn, f"{prefix}.", opaque))
    if opaque:
        out["opaque"] = "; ".join(opaque)
    return out


def class_code_identity(cls: type, prefix: str, opaque: list[str]) -> dict[str, str]:
    """``{prefix + "class.code": digest}`` of a user class's body (methods, class attributes).

    ``{prefix + "class.version": ...}`` for a library class.

    Args:
        cls: the class of a callable object or game.
        prefix: prefixed to the component's name.
        opaque: a list that collects the parts that could not be digested.

    Returns:
        one component: the digest of a user class, the version of a library class.
    """
    if is_library(cls):
        return {f"{prefix}class.version": package_version(cls.__module__)}
    return {f"{prefix}class.code": f"{qualname(cls)} #{digest_value(cls, prefix + 'class', opaque)[:12]}"}


def _components(obj: Any, prefix: str, opaque: list[str]) -> dict[str, str]:
    state = object_state(obj)
    if state is None:
        return {f"{prefix}pickle": show_value(obj, prefix.rstrip("."), opaque)}
    return {f"{prefix}{k}": show_value(v, f"{prefix}{k}", opaque) for k, v in sorted(state.items(), key=lambda kv: str(kv[0]))}


def game_identity(game: Any, game_id: str | None = None) -> dict[str, str]:
    """The identity components of ``game`` (see the module docstring), plus ``game_id``.

    Keys: ``class``, ``n_players`` and then ``identity.*`` / ``fingerprint`` / ``param.*`` /
    ``state.*`` components, ``class.code`` (or ``class.version``) for games without their own
    ``identity()``/``fingerprint()``; ``opaque`` lists parts that could not be digested.

    Args:
        game: any game (an object with ``n_players`` and ``__call__``).
        game_id: a label of what the game computes, added as the ``game_id`` component (None: none).

    Returns:
        ``{component name: text}``; equal mappings mean the same game.
    """
    out = {"class": qualname(type(game)), "n_players": str(getattr(game, "n_players", "?"))}
    opaque: list[str] = []
    if callable(getattr(game, "identity", None)):
        for k, v in game.identity().items():
            out[str(k)] = v if isinstance(v, str) else show_value(v, str(k), opaque)
    elif callable(getattr(game, "fingerprint", None)):
        out["fingerprint"] = str(game.fingerprint())
    elif callable(getattr(game, "params", None)):
        params = game.params()
        if isinstance(params, dict):
            for k, v in params.items():
                out[f"param.{k}"] = show_value(v, f"param {k}", opaque)
        else:
            out["params"] = show_value(params, "params", opaque)
    else:
        out.update(_components(game, "state.", opaque))
    if not callable(getattr(game, "identity", None)) and not callable(getattr(game, "fingerprint", None)):
        out.update(class_code_identity(type(game), "", opaque))  # the methods that compute the values
    if opaque:
        out["opaque"] = "; ".join(filter(None, [out.get("opaque", ""), *opaque]))
    if game_id is not None:
        out["store.game_id"] = str(game_id)
    return out


def opaque_parts(identity: dict[str, str]) -> str:
    """The parts of a game its identity could not digest ('' if none).

    Args:
        identity: an identity mapping from :func:`game_identity`.

    Returns:
        the ``opaque`` component, or ``""``.
    """
    return identity.get("opaque", "")


def identity_digest(identity: dict[str, str]) -> str:
    """The 32-hex-digit fingerprint of an identity mapping (order-independent).

    Args:
        identity: an identity mapping from :func:`game_identity`.

    Returns:
        32 hex digits.
    """
    text = json.dumps(identity, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def identity_differences(stored: dict[str, str], current: dict[str, str], limit: int = 6) -> list[str]:
    """Readable list of what differs between two identities (stored first): ``"param seed: 0 vs 1"``.

    Args:
        stored: the identity recorded in a store.
        current: the identity of the game at hand.
        limit: the most differences listed (the rest are counted).

    Returns:
        one line per differing component, e.g. ``"param seed: 0 vs 1"``.
    """
    out: list[str] = []
    for key in sorted(set(stored) | set(current), key=lambda k: (k not in ("class", "n_players"), k)):
        a, b = stored.get(key), current.get(key)
        if a == b:
            continue
        label = _label(key)
        if a is None:
            out.append(f"{label}: only in the new game ({b})")
        elif b is None:
            out.append(f"{label}: only in the stored game ({a})")
        elif key == "class.code":
            out.append(f"the code of the game's class changed ({a} vs {b})")
        elif key.endswith(".code"):
            out.append(f"the code of {key[:-5]} changed ({a} vs {b})")
        elif key.endswith("version"):
            out.append(f"the version of {label.removesuffix(' version').removesuffix('.version')} changed ({a} vs {b})")
        else:
            out.append(f"{label}: {a} vs {b}")
    if len(out) > limit:
        out = out[:limit] + [f"... and {len(out) - limit} more"]
    return out


def _label(key: str) -> str:
    for prefix, word in (("param.", "parameter "), ("state.", "attribute "), ("fn.closure.", "closure variable "),
                         ("fn.global.", "global "), ("fn.", "fn "), ("model.param.", "model parameter "),
                         ("model.fitted.", "model fitted "), ("model.state_dict.", "model state_dict "),
                         ("model.buffer.", "model buffer "), ("model.", "model ")):
        if key.startswith(prefix):
            return word + key[len(prefix):]
    return {"store.game_id": "store game_id"}.get(key, key)
