"""Adversarial game-identity scenarios: a store never serves one game's values to another.

Each scenario writes three values of game A to a fresh store, then opens the store for game B
whose values differ, and expects a :class:`StoreMismatchError` whose message names what differed.
The scenarios cover the doors the second integrity pass found open (``functools.partial``,
installed packages upgraded, edited class methods, class-level attributes, values read through
``config.W`` / ``Config.W`` / ``globals()['W']``, helpers called as ``module.h``) and the ones the
identity already closed (closures, defaults, generator states, dict keys, ...). What lives outside
the process (files, environment variables, remote services) is documented in docs/guide.md §2 as
needing ``game_id`` (or ``verify=True``); the last tests pin that documented behaviour.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame
from shapleig.errors import StoreMismatchError
from shapleig.games.identity import function_identity

P = 4
FIRST = np.tril(np.ones((P, P), dtype=bool))[:3]  # sizes 1, 2, 3
ROOT = Path(__file__).resolve().parents[2]


def _write(game: Any, path: Path) -> None:
    BudgetedGame(game, 5, store=path)(FIRST)


def _refused(game: Any, path: Path) -> str:
    with pytest.raises(StoreMismatchError) as info:
        BudgetedGame(game, 5, store=EvaluationStore(path))
    return str(info.value)


def _accepted(game: Any, path: Path) -> None:
    bg = BudgetedGame(game, 5, store=path)
    bg(FIRST)
    assert bg.accounting()["n_store_hits"] == 3


def _values(game: Any) -> np.ndarray:
    return np.asarray(game(FIRST.copy()), float)


_COUNTER = [0]


def _module(tmp_path: Path, source: str) -> Any:
    """Write ``source`` as a fresh module (unique name) and import it."""
    _COUNTER[0] += 1
    name = f"adv_identity_mod_{os.getpid()}_{_COUNTER[0]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    return importlib.import_module(name)


def _reimport(tmp_path: Path, module: Any, source: str) -> Any:
    """Rewrite ``module``'s file with ``source`` and import it again (an edit between runs)."""
    (tmp_path / f"{module.__name__}.py").write_text(textwrap.dedent(source))
    sys.modules.pop(module.__name__)
    importlib.invalidate_caches()
    return importlib.import_module(module.__name__)


@pytest.fixture(autouse=True)
def _no_bytecode(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit of the same size: no stale .pyc


# -- scenarios: each returns (game A, a factory for game B called after A's values are stored,
#    a regular expression the refusal must match) -----------------------------------------------

def _sum(Z):
    return np.asarray(Z, float).sum(axis=1)


def _count_sq(Z):
    return np.asarray(Z, float).sum(axis=1) ** 2


def _scaled(Z, scale=1.0, power=1):
    return scale * np.asarray(Z, float).sum(axis=1) ** power


def partial_other_function(tmp_path):
    return (FunctionGame(functools.partial(_sum), P), lambda: FunctionGame(functools.partial(_count_sq), P),
            r"the code of fn\.func changed|fn\.func\.code")


def partial_other_args(tmp_path):
    return (FunctionGame(functools.partial(_scaled, scale=1.0), P),
            lambda: FunctionGame(functools.partial(_scaled, scale=2.0), P), r"fn keywords")


def partial_other_positional(tmp_path):
    return (FunctionGame(functools.partial(_scaled, power=1), P),
            lambda: FunctionGame(functools.partial(_scaled, power=2), P), r"fn keywords")


def partial_of_library_function(tmp_path):
    return (FunctionGame(functools.partial(np.sum, axis=1), P),
            lambda: FunctionGame(functools.partial(np.prod, axis=1), P), r"fn func\.name: numpy\.sum vs numpy\.prod")


def partial_inside_a_class_game(tmp_path):
    mod = _module(tmp_path, """
        import functools, numpy as np
        class G:
            def __init__(self, fn):
                self.n_players = 4
                self.fn = fn
            def __call__(self, Z):
                return self.fn(np.asarray(Z, float))
        """)
    return (mod.G(functools.partial(np.sum, axis=1)), lambda: mod.G(functools.partial(np.max, axis=1)),
            r"attribute fn: partial #")


def class_call_code(tmp_path):
    src = """
        import numpy as np
        class G:
            n_players = 4
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * 1.0
        """
    mod = _module(tmp_path, src)
    return mod.G(), lambda: _reimport(tmp_path, mod, src.replace("* 1.0", "* 3.0")).G(), \
        r"the code of the game's class changed"


def class_other_method_code(tmp_path):
    src = """
        import numpy as np
        class G:
            n_players = 4
            def weight(self):
                return 1.0
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.weight()
        """
    mod = _module(tmp_path, src)
    return mod.G(), lambda: _reimport(tmp_path, mod, src.replace("return 1.0", "return 5.0")).G(), \
        r"the code of the game's class changed"


def class_level_attribute(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        class G:
            n_players = 4
            W = 1.0
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.W
        """)

    def b():
        mod.G.W = 2.0
        return mod.G()
    return mod.G(), b, r"the code of the game's class changed"


def base_class_attribute(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        class Base:
            W = 1.0
        class G(Base):
            n_players = 4
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.W
        """)

    def b():
        mod.Base.W = 4.0
        return mod.G()
    return mod.G(), b, r"the code of the game's class changed"


def staticmethod_helper(tmp_path):
    src = """
        import numpy as np
        class G:
            n_players = 4
            @staticmethod
            def scale():
                return 1.0
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.scale()
        """
    mod = _module(tmp_path, src)
    return mod.G(), lambda: _reimport(tmp_path, mod, src.replace("return 1.0", "return 7.0")).G(), \
        r"the code of the game's class changed"


def property_code(tmp_path):
    src = """
        import numpy as np
        class G:
            n_players = 4
            @property
            def scale(self):
                return 1.0
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.scale
        """
    mod = _module(tmp_path, src)
    return mod.G(), lambda: _reimport(tmp_path, mod, src.replace("return 1.0", "return 2.0")).G(), \
        r"the code of the game's class changed"


def callable_object_call_code(tmp_path):
    src = """
        import numpy as np
        class Scorer:
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * 1.0
        """
    mod = _module(tmp_path, src)
    return (FunctionGame(mod.Scorer(), P),
            lambda: FunctionGame(_reimport(tmp_path, mod, src.replace("* 1.0", "* 2.0")).Scorer(), P),
            r"the code of fn\.class changed")


def callable_object_attribute(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        class Scorer:
            def __init__(self, w):
                self.w = w
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.w
        """)
    return FunctionGame(mod.Scorer(1.0), P), lambda: FunctionGame(mod.Scorer(2.0), P), r"fn w: 1\.0 vs 2\.0"


def bound_method_instance(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        class Model:
            def __init__(self, w):
                self.w = w
            def predict(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.w
        """)
    return (FunctionGame(mod.Model(1.0).predict, P), lambda: FunctionGame(mod.Model(3.0).predict, P),
            r"fn self: ")


def module_attribute(tmp_path):
    config = _module(tmp_path, "W = 1.0\n")
    user = _module(tmp_path, f"""
        import numpy as np
        import {config.__name__} as config
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * config.W
        """)

    def b():
        config.W = 2.0
        return FunctionGame(user.fn, P)
    return FunctionGame(user.fn, P), b, r"global config\.W: 1\.0 vs 2\.0"


def module_attribute_getattr(tmp_path):
    config = _module(tmp_path, "W = 1.0\n")
    user = _module(tmp_path, f"""
        import numpy as np
        import {config.__name__} as config
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * getattr(config, "W")
        """)

    def b():
        config.W = 2.0
        return FunctionGame(user.fn, P)
    return FunctionGame(user.fn, P), b, r"global config\.W: 1\.0 vs 2\.0"


def class_attribute_read_by_function(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        class Config:
            W = 1.0
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * Config.W
        """)

    def b():
        mod.Config.W = 2.0
        return FunctionGame(mod.fn, P)
    return FunctionGame(mod.fn, P), b, r"global Config: type #"


def globals_subscript(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        W = 1.0
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * globals()['W']
        """)

    def b():
        mod.W = 2.0
        return FunctionGame(mod.fn, P)
    return FunctionGame(mod.fn, P), b, r"global W: 1\.0 vs 2\.0"


def helper_called_through_module(tmp_path):
    helpers_src = "def h(x):\n    return x * 1.0\n"
    helpers = _module(tmp_path, helpers_src)
    user = _module(tmp_path, f"""
        import numpy as np
        import {helpers.__name__} as helpers
        def fn(Z):
            return helpers.h(np.asarray(Z, float).sum(axis=1))
        """)

    def b():
        new = _reimport(tmp_path, helpers, helpers_src.replace("1.0", "9.0"))
        user.helpers = new
        return FunctionGame(user.fn, P)
    return FunctionGame(user.fn, P), b, r"global helpers\.h: function #"


def global_helper_function(tmp_path):
    src = """
        import numpy as np
        def h(x):
            return x * 1.0
        def fn(Z):
            return h(np.asarray(Z, float).sum(axis=1))
        """
    mod = _module(tmp_path, src)
    return FunctionGame(mod.fn, P), lambda: FunctionGame(
        _reimport(tmp_path, mod, src.replace("x * 1.0", "x * 2.0")).fn, P), r"global h: function #"


def global_value(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        W = 1.0
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * W
        """)

    def b():
        mod.W = 2.0
        return FunctionGame(mod.fn, P)
    return FunctionGame(mod.fn, P), b, r"global W: 1\.0 vs 2\.0"


def global_array_content(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        W = np.ones(4)
        def fn(Z):
            return np.asarray(Z, float) @ W
        """)

    def b():
        mod.W[0] = 5.0  # mutated in place: same object, other content
        return FunctionGame(mod.fn, P)
    return FunctionGame(mod.fn, P), b, r"global W: ndarray float64\[4\] #"


def generator_state(tmp_path):
    """The same Generator object after it was used: its state moved on, so the draws differ."""
    rng = np.random.default_rng(0)

    def make():
        return FunctionGame(lambda Z: np.asarray(Z, float) @ rng.normal(size=P), P)

    return make(), make, r"closure variable rng: Generator #"


def generator_seed(tmp_path):
    def make(seed):
        rng = np.random.default_rng(seed)
        return lambda Z: np.asarray(Z, float) @ rng.normal(size=P)

    return FunctionGame(make(0), P), lambda: FunctionGame(make(1), P), r"closure variable rng: Generator #"


def random_state_state(tmp_path):
    def make(seed):
        rs = np.random.RandomState(seed)
        return lambda Z: np.asarray(Z, float) @ rs.normal(size=P)

    return FunctionGame(make(0), P), lambda: FunctionGame(make(1), P), r"closure variable rs: RandomState #"


def python_random_state(tmp_path):
    def make(seed):
        r = random.Random(seed)
        return lambda Z: np.asarray(Z, float).sum(axis=1) * r.random()

    return FunctionGame(make(0), P), lambda: FunctionGame(make(1), P), r"closure variable r: Random #"


def dict_keys(tmp_path):
    """Same values in the same key order, one key renamed: only the keys tell the games apart."""
    def make(weights):
        return lambda Z: np.asarray(Z, float).sum(axis=1) * weights.get("b", 0.0) + weights["a"]

    return (FunctionGame(make({"a": 1.0, "b": 2.0}), P), lambda: FunctionGame(make({"a": 1.0, "c": 2.0}), P),
            r"closure variable weights: dict\[2\] #")


def dict_values(tmp_path):
    def make(weights):
        return lambda Z: np.asarray(Z, float).sum(axis=1) * weights["a"]

    return (FunctionGame(make({"a": 1.0}), P), lambda: FunctionGame(make({"a": 2.0}), P),
            r"closure variable weights: dict\[1\] #")


def set_content(tmp_path):
    def make(players):
        return lambda Z: np.asarray(Z, float)[:, sorted(players)].sum(axis=1)

    return FunctionGame(make({0, 1}), P), lambda: FunctionGame(make({0, 2}), P), r"closure variable players: set #"


def list_vs_tuple_order(tmp_path):
    def make(w):
        return lambda Z: np.asarray(Z, float) @ np.asarray(w)

    return (FunctionGame(make([1.0, 2.0, 3.0, 4.0]), P), lambda: FunctionGame(make([4.0, 3.0, 2.0, 1.0]), P),
            r"closure variable w: \[1\.0, 2\.0, 3\.0, 4\.0\] vs \[4\.0")


def array_dtype(tmp_path):
    def make(w):
        return lambda Z: (np.asarray(Z, float) @ w).astype(w.dtype).astype(float)

    w = np.array([0.1, 0.2, 0.3, 0.4])
    return (FunctionGame(make(w), P), lambda: FunctionGame(make(w.astype(np.float32)), P),
            r"closure variable w: ndarray float64\[4\] #.* vs ndarray float32\[4\]")


def dataframe_content(tmp_path):
    def make(df):
        return lambda Z: np.asarray(Z, float) @ df["w"].to_numpy()

    return (FunctionGame(make(pd.DataFrame({"w": [1.0, 2.0, 3.0, 4.0]})), P),
            lambda: FunctionGame(make(pd.DataFrame({"w": [1.0, 2.0, 5.0, 4.0]})), P),
            r"closure variable df: DataFrame #")


def builtin_bound_method(tmp_path):
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([1.0, 2.0, 8.0, 4.0])
    # ndarray.__rmatmul__ bound to the weights: a built-in method whose object carries the values
    return (FunctionGame(a.__rmatmul__, P), lambda: FunctionGame(b.__rmatmul__, P), r"fn self: ndarray float64\[4\] #")


def lambda_code(tmp_path):
    return (FunctionGame(lambda Z: np.asarray(Z, float).sum(axis=1), P),
            lambda: FunctionGame(lambda Z: np.asarray(Z, float).sum(axis=1) + 1, P), r"the code of fn changed")


def nested_closure(tmp_path):
    def outer(k):
        def middle():
            def inner(Z):
                return np.asarray(Z, float).sum(axis=1) * k
            return inner
        return middle()

    return FunctionGame(outer(1.0), P), lambda: FunctionGame(outer(2.0), P), r"closure variable k: 1\.0 vs 2\.0"


def default_argument(tmp_path):
    def make(p):
        def fn(Z, power=p):
            return np.asarray(Z, float).sum(axis=1) ** power
        return fn

    return FunctionGame(make(1), P), lambda: FunctionGame(make(2), P), r"fn defaults: \(1,\) vs \(2,\)"


def keyword_only_default(tmp_path):
    def make(p):
        def fn(Z, *, power=p):
            return np.asarray(Z, float).sum(axis=1) ** power
        return fn

    return FunctionGame(make(1), P), lambda: FunctionGame(make(3), P), r"fn kwdefaults"


def dataclass_game(tmp_path):
    mod = _module(tmp_path, """
        import dataclasses, numpy as np
        @dataclasses.dataclass
        class G:
            scale: float
            n_players: int = 4
            def __call__(self, Z):
                return np.asarray(Z, float).sum(axis=1) * self.scale
        """)
    return mod.G(1.0), lambda: mod.G(2.0), r"attribute scale: 1\.0 vs 2\.0"


def seed_hidden_in_state(tmp_path):
    mod = _module(tmp_path, """
        import numpy as np
        class G:
            def __init__(self, seed):
                self.n_players = 4
                self._w = np.random.default_rng(seed).normal(size=4)
            def __repr__(self):
                return "G()"
            def __call__(self, Z):
                return np.asarray(Z, float) @ self._w
        """)
    return mod.G(0), lambda: mod.G(1), r"attribute _w: ndarray float64\[4\] #"


def game_id_label(tmp_path):
    fn = _sum
    return (FunctionGame(fn, P, game_id="data-v1"), lambda: FunctionGame(lambda Z: 2 * _sum(Z), P, game_id="data-v2"),
            r"game_id: data-v1 vs data-v2")


SCENARIOS: list[Callable] = [
    partial_other_function, partial_other_args, partial_other_positional, partial_of_library_function,
    partial_inside_a_class_game, class_call_code, class_other_method_code, class_level_attribute,
    base_class_attribute, staticmethod_helper, property_code, callable_object_call_code,
    callable_object_attribute, bound_method_instance, module_attribute, module_attribute_getattr,
    class_attribute_read_by_function, globals_subscript, helper_called_through_module,
    global_helper_function, global_value, global_array_content, generator_state, generator_seed,
    random_state_state, python_random_state, dict_keys, dict_values, set_content, list_vs_tuple_order,
    array_dtype, dataframe_content, builtin_bound_method, lambda_code, nested_closure, default_argument,
    keyword_only_default, dataclass_game, seed_hidden_in_state, game_id_label,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_a_game_with_other_values_is_refused_naming_the_difference(scenario, tmp_path):
    a, make_b, pattern = scenario(tmp_path)
    path = tmp_path / "s.sqlite"
    _write(a, path)
    before = _values(a) if scenario is not generator_state else None  # (each call draws anew)
    b = make_b()
    assert before is None or not np.array_equal(before, _values(b)), "the scenario must change the values"
    msg = _refused(b, path)
    assert "What differs" in msg
    assert __import__("re").search(pattern, msg), msg


def test_the_scenario_list_covers_at_least_thirty_doors():
    assert len(SCENARIOS) >= 30


@pytest.mark.parametrize("make", [
    lambda: FunctionGame(functools.partial(_scaled, scale=2.0), P),
    lambda: FunctionGame(functools.partial(np.sum, axis=1), P),
    lambda: FunctionGame(_sum, P),
], ids=["partial", "partial-of-numpy", "function"])
def test_the_same_game_rebuilt_is_served(make, tmp_path):
    """The controls: rebuilding the same game gives the same identity, so the store is reused."""
    _write(make(), tmp_path / "s.sqlite")
    _accepted(make(), tmp_path / "s.sqlite")


def test_an_unrelated_module_attribute_does_not_count(tmp_path):
    """Only the attributes the code names are read through a module: others may change freely."""
    config = _module(tmp_path, "W = 1.0\nOTHER = 1.0\n")
    user = _module(tmp_path, f"""
        import numpy as np
        import {config.__name__} as config
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * config.W
        """)
    _write(FunctionGame(user.fn, P), tmp_path / "s.sqlite")
    config.OTHER = 2.0
    _accepted(FunctionGame(user.fn, P), tmp_path / "s.sqlite")


_FAKE_PACKAGE = {
    "fakepkg_shapleig/__init__.py": "from ._impl import score\n",
    "fakepkg_shapleig/_impl.py": "def _weight():\n    return {w}\n\ndef score(Z):\n    return Z.sum(axis=1) * _weight()\n",
    "fakepkg_shapleig-{v}.dist-info/METADATA": "Metadata-Version: 2.1\nName: fakepkg-shapleig\nVersion: {v}\n",
    "fakepkg_shapleig-{v}.dist-info/RECORD": "",
    "fakepkg_shapleig-{v}.dist-info/top_level.txt": "fakepkg_shapleig\n",
}


def _install_fake(site: Path, version: str, weight: float) -> None:
    for old in site.glob("fakepkg_shapleig*"):
        for f in sorted(old.rglob("*"), reverse=True):
            f.unlink() if f.is_file() else f.rmdir()
        old.rmdir()
    for name, text in _FAKE_PACKAGE.items():
        target = site / name.format(v=version)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.format(w=weight, v=version))


def test_an_upgraded_installed_package_is_another_game(tmp_path):
    """A function of an installed package is identified by name and the package's version: after
    an upgrade (here its private helper changed) the store is refused, naming both versions. Each
    run is its own process, as after a real upgrade; the fake package's folder counts as a
    library root (as site-packages does)."""
    site = tmp_path / "site"
    site.mkdir()
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import shapleig.games.identity as identity
        identity._LIBRARY_ROOTS = identity._LIBRARY_ROOTS + (sys.argv[1],)
        import numpy as np
        import fakepkg_shapleig
        from shapleig import BudgetedGame, FunctionGame
        from shapleig.errors import StoreMismatchError
        game = FunctionGame(fakepkg_shapleig.score, 4)
        assert game.identity().get("fn.name") == "fakepkg_shapleig._impl.score", game.identity()
        try:
            BudgetedGame(game, 5, store=sys.argv[2])(np.eye(4, dtype=bool)[:3])
        except StoreMismatchError as exc:
            print("REFUSED", exc)
        else:
            print("SERVED")
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", code, str(site), str(tmp_path / "s.sqlite")], check=False, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    _install_fake(site, "1.0", 1.0)
    assert run() == "SERVED"  # writes the store (a rerun of the same version is served: the controls)
    _install_fake(site, "2.0", 2.0)
    out = run()
    assert out.startswith("REFUSED") and "fakepkg-shapleig 1.0 vs fakepkg-shapleig 2.0" in out, out


# -- names injected into builtins (issue 34, item 4) ----------------------------------------------

def test_a_name_injected_into_builtins_in_another_process_is_another_game(tmp_path):
    """``builtins.K = 1.0`` in one process and ``3.0`` in the next (start-up code of a notebook or a
    framework), a game ``lambda Z: Z.sum(1) * K``: the name is no module global, Python finds it in
    builtins. The second process must be refused naming it (it used to be served the first one's
    values); a third process with K = 1.0 again is served (the identity is the same across processes)."""
    code = textwrap.dedent("""
        import builtins, sys
        builtins.K = float(sys.argv[2])
        import numpy as np
        from shapleig import BudgetedGame, FunctionGame
        from shapleig.errors import StoreMismatchError
        game = FunctionGame(lambda Z: np.asarray(Z, float).sum(axis=1) * K, 4)
        try:
            bg = BudgetedGame(game, 5, store=sys.argv[1])
            values = bg(np.tril(np.ones((4, 4), dtype=bool))[:3])
        except StoreMismatchError as exc:
            print("REFUSED", exc)
        else:
            print("SERVED", bg.accounting()["n_store_hits"], values.tolist())
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(k: str) -> str:
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.sqlite"), k], check=False, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run("1.0") == "SERVED 0 [1.0, 2.0, 3.0]"
    refused = run("3.0")
    assert refused.startswith("REFUSED") and "global builtins.K: 1.0 vs 3.0" in refused, refused
    assert run("1.0") == "SERVED 3 [1.0, 2.0, 3.0]"


def test_a_name_in_builtins_counts_read_bare_or_through_the_module(tmp_path, monkeypatch):
    """The same door in one process, every way of reading it: ``K``, ``builtins.K`` and
    ``getattr(builtins, "K")`` (the name only in a string constant)."""
    bare = lambda Z: np.asarray(Z, float).sum(axis=1) * SHAPLEIG_ADV_K  # noqa: E731, F821 - found in builtins
    through = lambda Z: np.asarray(Z, float).sum(axis=1) * builtins.SHAPLEIG_ADV_K  # noqa: E731
    by_name = lambda Z: np.asarray(Z, float).sum(axis=1) * getattr(builtins, "SHAPLEIG_ADV_K")  # noqa: E731, B009
    for k, fn in enumerate((bare, through, by_name)):
        path = tmp_path / f"{k}.sqlite"
        monkeypatch.setattr(builtins, "SHAPLEIG_ADV_K", 1.0, raising=False)
        _write(FunctionGame(fn, P), path)
        _accepted(FunctionGame(fn, P), path)
        monkeypatch.setattr(builtins, "SHAPLEIG_ADV_K", 3.0)
        assert "global builtins.SHAPLEIG_ADV_K: 1.0 vs 3.0" in _refused(FunctionGame(fn, P), path)


def test_a_replaced_builtin_counts(tmp_path):
    """A function whose ``abs`` is not the interpreter's (its ``__builtins__`` replaces it)."""
    def compiled(scale: float) -> Callable:
        namespace = {"__builtins__": {**vars(builtins), "abs": lambda x: scale * x}, "np": np}
        exec("def fn(Z):\n    return abs(np.asarray(Z, float).sum(axis=1))\n", namespace)
        return namespace["fn"]

    _write(FunctionGame(compiled(1.0), P), tmp_path / "s.sqlite")
    assert not np.array_equal(_values(FunctionGame(compiled(1.0), P)), _values(FunctionGame(compiled(2.0), P)))
    assert "global builtins.abs" in _refused(FunctionGame(compiled(2.0), P), tmp_path / "s.sqlite")


def test_the_interpreters_own_builtins_are_not_listed():
    """Built-ins the interpreter put there (functions, types, an alias like ``IOError``, the site
    module's ``exit``) are not identity components: ordinary code keeps the identity it had."""
    def fn(Z):
        if not len(Z):
            raise IOError(repr(exit))
        return np.asarray([float(sum(r)) for r in Z]) * abs(round(1.0)) + (Ellipsis is not None)

    assert not [k for k in function_identity(fn) if "builtins" in k], function_identity(fn)


# -- outside the process: documented as needing game_id or verify (docs/guide.md §2) -------------

def test_an_environment_variable_is_outside_the_identity_and_game_id_covers_it(tmp_path, monkeypatch):
    """The identity sees what is in the process's objects, not the environment: the documented
    remedy is a game_id naming the setting (or verify=True, which re-evaluates stored values)."""
    def fn(Z):
        return np.asarray(Z, float).sum(axis=1) * float(os.environ.get("ADV_SCALE", "1"))

    monkeypatch.setenv("ADV_SCALE", "1")
    _write(FunctionGame(fn, P, game_id="scale=1"), tmp_path / "s.sqlite")
    monkeypatch.setenv("ADV_SCALE", "2")
    assert "game_id: scale=1 vs scale=2" in _refused(FunctionGame(fn, P, game_id="scale=2"), tmp_path / "s.sqlite")
    _write(FunctionGame(fn, P), tmp_path / "v.sqlite")
    monkeypatch.setenv("ADV_SCALE", "3")
    with pytest.raises(StoreMismatchError, match=r"the game now returns"):
        BudgetedGame(FunctionGame(fn, P), 5, store=EvaluationStore(tmp_path / "v.sqlite", verify=True))


# -- the third pass's doors (issue 27, item 3) ------------------------------------------------------

def module_attribute_runtime_name(tmp_path):
    """``getattr(config, "W" + suffix)``: the attribute's name is built at run time, so it is in
    neither the code's names nor its strings; every attribute of the module counts instead."""
    config = _module(tmp_path, "W1 = 1.0\nW2 = 5.0\n")
    user = _module(tmp_path, f"""
        import numpy as np
        import {config.__name__} as config
        def fn(Z, k=1):
            return np.asarray(Z, float).sum(axis=1) * getattr(config, "W" + str(k))
        """)

    def b():
        config.W1 = 2.0
        return FunctionGame(user.fn, P)
    return FunctionGame(user.fn, P), b, r"global config\.W1: 1\.0 vs 2\.0"


def getstate_drops_the_model(tmp_path):
    """A game whose ``__getstate__`` (written for pickling) leaves its model out: the identity reads
    the attributes the object really has, not what it chooses to pickle."""
    mod = _module(tmp_path, """
        import numpy as np
        class G:
            n_players = 4
            def __init__(self, w):
                self.model = np.full(4, w)
            def __getstate__(self):
                return {"kind": "G"}
            def __call__(self, Z):
                return np.asarray(Z, float) @ self.model
        """)
    return mod.G(1.0), lambda: mod.G(2.0), r"attribute model: ndarray float64\[4\] #"


def series_dtype(tmp_path):
    """The same numbers as int8 and int64: a model may treat them differently (here they overflow)."""
    def make(s):
        return lambda Z: (np.asarray(Z, np.int64) @ s.to_numpy()).astype(s.dtype) * 1.0

    return (FunctionGame(make(pd.Series([100, 100, 100, 100], dtype=np.int8)), P),
            lambda: FunctionGame(make(pd.Series([100, 100, 100, 100], dtype=np.int64)), P),
            r"closure variable s: Series #")


DOORS: list[Callable] = [module_attribute_runtime_name, getstate_drops_the_model, series_dtype]


@pytest.mark.parametrize("scenario", DOORS, ids=[s.__name__ for s in DOORS])
def test_the_third_pass_doors_are_closed(scenario, tmp_path):
    test_a_game_with_other_values_is_refused_naming_the_difference(scenario, tmp_path)


def test_an_upgraded_package_read_as_module_attribute_is_another_game(tmp_path):
    """``lambda Z: fakepkg.score(Z)`` names the module and reads ``score`` from it: the module's
    package version is part of the identity, so an upgrade is refused naming both versions."""
    site = tmp_path / "site"
    site.mkdir()
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import shapleig.games.identity as identity
        identity._LIBRARY_ROOTS = identity._LIBRARY_ROOTS + (sys.argv[1],)
        import numpy as np
        import fakepkg_shapleig
        from shapleig import BudgetedGame, FunctionGame
        from shapleig.errors import StoreMismatchError
        game = FunctionGame(lambda Z: fakepkg_shapleig.score(Z), 4)
        try:
            BudgetedGame(game, 5, store=sys.argv[2])(np.eye(4, dtype=bool)[:3])
        except StoreMismatchError as exc:
            print("REFUSED", exc)
        else:
            print("SERVED")
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", code, str(site), str(tmp_path / "s.sqlite")], check=False, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    _install_fake(site, "1.0", 1.0)
    assert run() == "SERVED"
    _install_fake(site, "2.0", 2.0)
    out = run()
    assert out.startswith("REFUSED") and "fakepkg-shapleig 1.0 vs fakepkg-shapleig 2.0" in out, out


def test_frozenset_keys_digest_the_same_under_every_hash_seed(tmp_path):
    """A dict keyed by frozensets of strings (whose iteration order and repr follow PYTHONHASHSEED):
    two interpreters with different hash seeds must give the same identity, or a resumed run in a
    new process would be refused for nothing (keys of 3-5 strings: an order taken from their repr
    would differ between the two seeds)."""
    code = textwrap.dedent("""
        import numpy as np
        from shapleig import FunctionGame
        from shapleig.runs.budget import game_fingerprint
        W = {frozenset({"alpha", "beta", "gamma", "omega", "psi"}): 1.0, frozenset({"delta", "eps", "chi", "phi"}): 2.0,
             frozenset({"zeta", "nu", "xi"}): 3.0, frozenset({"eta", "theta", "iota", "kappa", "mu"}): 4.0}
        g = FunctionGame(lambda Z: np.asarray(Z, float).sum(axis=1) * sum(W.values()), 4)
        print(game_fingerprint(g), sorted(W.values(), key=lambda v: repr(next(k for k in W if W[k] == v))))
        """)
    fingerprints, repr_orders = set(), set()
    for seed in ("1", "3"):  # two seeds under which the keys' reprs sort differently (checked below)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True,
                             timeout=120)
        fingerprint, order = out.stdout.strip().split(" ", 1)
        fingerprints.add(fingerprint)
        repr_orders.add(order)
    assert len(repr_orders) == 2, "the seeds must order the keys' reprs differently for the test to mean anything"
    assert len(fingerprints) == 1, fingerprints


def test_a_global_memo_filled_by_the_game_does_not_refuse_its_own_store(tmp_path):
    """A module-level cache the function writes into (``_MEMO[key] = value``) is the function's own
    output, not an input: after the run filled it, binding the same game again is served."""
    mod = _module(tmp_path, """
        import numpy as np
        _MEMO = {}
        def fn(Z):
            out = []
            for row in np.asarray(Z, bool):
                key = row.tobytes()
                if key not in _MEMO:
                    _MEMO[key] = float(row.sum()) ** 2
                out.append(_MEMO[key])
            return np.array(out)
        """)
    _write(FunctionGame(mod.fn, P), tmp_path / "s.sqlite")
    assert len(mod._MEMO) == 3  # the run filled the memo
    _accepted(FunctionGame(mod.fn, P), tmp_path / "s.sqlite")


def test_a_module_imported_by_a_run_time_name_needs_a_game_id(tmp_path):
    """A module the function reaches through a name built at run time (``importlib.import_module``)
    is not among its globals: the identity cannot see it (docs/integrity.md §1.2). The documented
    remedies work: a ``game_id`` naming the version, or ``verify=True``."""
    config = _module(tmp_path, "W = 1.0\n")
    user = _module(tmp_path, f"""
        import importlib
        import numpy as np
        NAME = "{config.__name__[:-2]}"
        def fn(Z):
            return np.asarray(Z, float).sum(axis=1) * importlib.import_module(NAME + "{config.__name__[-2:]}").W
        """)
    _write(FunctionGame(user.fn, P, game_id="config-1"), tmp_path / "s.sqlite")
    _write(FunctionGame(user.fn, P), tmp_path / "v.sqlite")
    config.W = 2.0
    assert "game_id: config-1 vs config-2" in _refused(FunctionGame(user.fn, P, game_id="config-2"),
                                                      tmp_path / "s.sqlite")
    _accepted(FunctionGame(user.fn, P), tmp_path / "v.sqlite")  # the door: served without game_id or verify
    with pytest.raises(StoreMismatchError, match=r"the game now returns"):
        BudgetedGame(FunctionGame(user.fn, P), 5, store=EvaluationStore(tmp_path / "v.sqlite", verify=True))
