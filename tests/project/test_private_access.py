"""No class in ``shapleig/`` reads or writes another class's private names (issue 36).

A class reaches another's state through its public face (a property, a method); a private name
(``_x``, not a dunder) is read on ``self`` / ``cls`` / ``super()``, or on another object only inside
a class that defines that name itself (its own instances: ``other._key`` in ``__eq__``, ``out._L``
on a copy it builds). Module-level functions read no private names of objects, and no code names
``OtherClass._x``. The check (``tests/_private_access.py``) reads the syntax tree, by name.
"""

from __future__ import annotations

from pathlib import Path

from _private_access import private_access_offenders

import shapleig

PACKAGE = Path(shapleig.__file__).resolve().parent

# (path, code) -> why it is allowed; keep this tiny
ALLOWED = {
    ("shapleig/runs/timeout.py", "os._exit"):
        "the os module's documented call to end a worker process at once (no cleanup in a forked child)",
}


def package_sources() -> dict[str, str]:
    """``{"shapleig/...py": source}`` for every module of the package."""
    return {f"shapleig/{p.relative_to(PACKAGE).as_posix()}": p.read_text(encoding="utf-8")
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_class_reaches_another_class_private_names() -> None:
    found = private_access_offenders(package_sources())
    offending = [str(o) for o in found if (o.path, o.code) not in ALLOWED]
    print("\n".join(offending))
    assert not offending, "private names reached from outside their class:\n" + "\n".join(offending)
    stale = set(ALLOWED) - {(o.path, o.code) for o in found}
    assert not stale, f"allowed entries no longer in the code (remove them): {sorted(stale)}"


ALLOWED_CODE = '''
class Posterior:
    def __init__(self):
        self._L = 1.0

    def copy(self):
        out = Posterior.__new__(Posterior)  # its own instance, built by hand
        out._L = self._L
        return out

    def __eq__(self, other):
        return isinstance(other, Posterior) and other._L == self._L and getattr(other, "_L") == 1.0

    @staticmethod
    def _beat(ref):
        table = ref()
        return table._L, Posterior._beat


class Child(Posterior):
    def same(self, other):
        return other._L == super()._L  # defined by the base class
'''


def test_what_is_allowed_is_not_reported() -> None:
    assert private_access_offenders({"ok.py": ALLOWED_CODE}) == []


def test_the_check_sees_each_way_to_another_class_private_names() -> None:
    """Each kind of violation, in a copy of a module or a small module, is reported (the check can fail)."""
    refit = (PACKAGE / "design" / "refit.py").read_text(encoding="utf-8")
    assert refit.count("int(loop.fitted_on), int(loop.n_players)") == 1
    mutated = refit.replace("int(loop.fitted_on), int(loop.n_players)", "int(loop._fitted_on), int(loop.n_players)")
    cases = {
        "a class reading another object's private state": ({"refit.py": mutated}, "loop._fitted_on"),
        "a module function reading a private attribute": (
            {"m.py": "def f(loop):\n    return loop._recorder\n"}, "loop._recorder"),
        "a module function writing one": ({"m.py": "def f(loop):\n    loop._recorder = None\n"}, "loop._recorder"),
        "by name, through getattr": ({"m.py": "def f(x):\n    return getattr(x, '_seen', False)\n"},
                                     "getattr(x, '_seen', False)"),
        "another class's private method": (
            {"m.py": ALLOWED_CODE + "\nclass Other:\n    def f(self, h):\n        return Posterior._beat(h)\n"},
            "Posterior._beat"),
        "a name the enclosing class only sets on other objects": (
            {"m.py": "class A:\n    def f(self, b):\n        b._x = 1\n        return b._x\n"}, "b._x"),
    }
    for what, (sources, code) in cases.items():
        assert code in [o.code for o in private_access_offenders(sources)], what
