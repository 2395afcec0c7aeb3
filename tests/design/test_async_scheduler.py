"""The asynchronous loop is a scheduler over the DesignLoop's public steps: it holds a DesignLoop (no
subclassing), names none of its private attributes, and creates all its own state in ``__init__``."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from _private_access import class_members, is_dunder, is_private, self_assigned

import shapleig.design.async_loop as async_loop
from shapleig import ExecutorEvaluator, FunctionGame
from shapleig.design.async_loop import AsyncDesignLoop
from shapleig.design.loop import DesignLoop

SOURCE = Path(async_loop.__file__)


def _private_names_of_design_loop() -> set[str]:
    game = FunctionGame(lambda Z: Z.sum(axis=1).astype(float), n_players=3)
    names = set(vars(DesignLoop(game, 8, pool_size=8))) | {n for c in DesignLoop.__mro__ for n in vars(c)}
    return {n for n in names if is_private(n)}


def scheduler_violations(source: str) -> list[str]:
    """What in the module ``source`` reaches past the DesignLoop's public face, or past ``__init__`` for state.

    - every ``<x>._name`` is ``self._name`` inside ``AsyncDesignLoop`` with ``_name`` its own (a
      member, or state ``__init__`` assigns), so the driven loop (``self._loop``, or any name bound
      to it) is only ever read through public names;
    - every ``self.<name>`` read inside the class is its own (nothing relies on the forwarding
      ``__getattr__``, which is there for callers);
    - no string constant names a private attribute of a DesignLoop (``getattr(loop, "_x")``);
    - attributes assigned on self outside ``__init__`` are ones ``__init__`` creates;
    - the class body holds no mutable value (only methods and immutable defaults).
    """
    tree = ast.parse(source)
    cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "AsyncDesignLoop")
    init = next(node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    state = self_assigned(init)  # the attributes __init__ creates
    own = class_members(cls) | state
    inside = {id(node) for node in ast.walk(cls)}
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or is_dunder(node.attr):
            continue
        on_self = isinstance(node.value, ast.Name) and node.value.id == "self" and id(node) in inside
        if node.attr.startswith("_") and not (on_self and node.attr in own):
            found.append(f"line {node.lineno}: {ast.unparse(node)} (a private attribute that is not the class's own)")
        elif on_self and node.attr not in own:
            found.append(f"line {node.lineno}: {ast.unparse(node)} (not an attribute of AsyncDesignLoop)")
        elif on_self and isinstance(node.ctx, ast.Store) and node.attr not in state:
            found.append(f"line {node.lineno}: {ast.unparse(node)} (state not created in __init__)")
    private = _private_names_of_design_loop()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in private:
            found.append(f"line {node.lineno}: {node.value!r} (names a private attribute of DesignLoop)")
    for node in cls.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = []  # not a literal: treat as mutable
            if not isinstance(value, (bool, int, float, str, bytes, tuple, frozenset, type(None))):
                found.append(f"line {node.lineno}: class-level {ast.unparse(node)} (mutable class state)")
    return found


def test_the_asynchronous_loop_uses_only_the_design_loops_public_steps() -> None:
    assert not issubclass(AsyncDesignLoop, DesignLoop)
    assert scheduler_violations(SOURCE.read_text()) == []


def test_the_check_sees_each_way_past_the_public_face() -> None:
    """Each kind of violation, made in a copy of the module, is reported (the check can fail)."""
    source = SOURCE.read_text()
    mutations = {
        "a private attribute of the driven loop": ("loop.X.shape[0] - loop.fitted_on", "loop.X.shape[0] - loop._fitted_on"),
        "a name bound to the loop": ("loop.capacity(outstanding=n)", "self._loop._reserved.__len__()"),
        "implicit forwarding": ("return max(0, min(self._loop.options.batch_size - n",
                                "return max(0, min(self.options.batch_size - n"),
        "a private name in a string": ("return getattr(loop, name)", 'return getattr(loop, "_cand_index")'),
        "state made mid-run": ("self._design_state = None if", "self._prior_state = None if"),
        "class-level mutable state": ("overlap_design: ClassVar[bool | str] = False",
                                      "overlap_design: ClassVar[list] = []"),
    }
    for what, (old, new) in mutations.items():
        assert source.count(old) == 1, what
        assert scheduler_violations(source.replace(old, new)), what


def test_callbacks_trace_and_info_see_the_scheduler() -> None:
    """Callbacks receive the AsyncDesignLoop (its pending count included), the estimate's info says
    async, and the driven loop's attributes read and write through the scheduler."""
    seen: list[tuple[type, int]] = []
    game = FunctionGame(lambda Z: Z.sum(axis=1) ** 2.0, n_players=4)
    with ThreadPoolExecutor(2) as pool:
        loop = AsyncDesignLoop(game, 12, batch_size=2, pool_size=64, seed=0, evaluator=ExecutorEvaluator(pool),
                               callbacks=[lambda run: seen.append((type(run), run.n_pending))])
        assert loop.loop.driver is loop and loop.X is loop.loop.X
        timings = dict(loop.timings)
        loop.timings = timings  # written through: the loop's own regions add to this dict
        est = loop.run()
    assert {t for t, _ in seen} == {AsyncDesignLoop} and max(n for _, n in seen) == 2
    assert est.info["batch_mode_used"] == "async" and loop.loop.timings is timings and timings["selection_s"] > 0
    assert est.info["steps"] == len(seen) == loop.n_steps
    np.testing.assert_allclose(est.values, [4.0, 4.0, 4.0, 4.0], atol=5e-3)
