"""The ``Store`` protocol (issue 28): a store backend is one small class.

- the worked example of docs/architecture.md ("How to extend: a new store") is executed here as it
  stands in the page, so the page and the test cannot drift apart;
- ``open_store`` and ``BudgetedGame`` accept any object implementing the protocol and use only its
  seven methods (a proxy that exposes nothing else runs a whole estimate);
- ``EvaluationStore`` implements it; the claims table reaches its store only through the public
  ``ClaimsBackend`` interface (a proxy exposing only that runs claims, waits and releases).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame, ShaplEIG
from shapleig.errors import StoreMismatchError
from shapleig.runs.claims import ClaimTable
from shapleig.runs.store import open_store
from shapleig.runs.store_protocol import STORE_METHODS, TRACE_METHODS, Store, missing_store_methods

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import QuadraticGame  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = ("bind", "lookup", "claim", "wait_for_others", "release", "append", "close")


def _doc_example() -> str:
    """The python block under "### A new store" in docs/architecture.md."""
    page = (REPO / "docs/architecture.md").read_text()
    section = page.split("### A new store", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def _run_doc_example() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "architecture_example"}
    exec(compile(_doc_example(), "docs/architecture.md (A new store)", "exec"), namespace)  # noqa: S102
    return namespace


def test_the_documented_dict_store_runs_as_written():
    namespace = _run_doc_example()  # its own asserts: a protocol instance; a resumed run pays nothing
    store = namespace["store"]
    assert isinstance(store, Store) and len(store.values) == 12
    assert [status for _, _, status in store.attempts] == ["ok"] * 12


def test_the_documented_dict_store_refuses_another_game_and_reuses_values_in_budgeted_game():
    DictStore = _run_doc_example()["DictStore"]
    store = DictStore()
    game = QuadraticGame(5, seed=0)
    rows = np.tril(np.ones((5, 5), dtype=bool))
    first = BudgetedGame(game, 8, store=store)
    np.testing.assert_array_equal(first(rows), game.values(rows))
    again = BudgetedGame(game, 8, store=store)
    again(rows)
    assert again.n_store_hits == 5 and again.n_game_evaluations == 0
    with pytest.raises(StoreMismatchError, match="this store holds game"):
        BudgetedGame(QuadraticGame(5, seed=1), 8, store=store)


def _forward(name: str):
    """A method that records the call and forwards it to the wrapped store."""

    def method(self, *args: Any, **kwargs: Any) -> Any:
        object.__getattribute__(self, "calls").append(name)
        return getattr(object.__getattribute__(self, "_inner"), name)(*args, **kwargs)

    method.__name__ = name
    return method


class _OnlyTheProtocol:
    """Exposes exactly the protocol's methods of the store it wraps; anything else is an error.

    The seven methods are defined on the class (not served by ``__getattribute__`` alone): from
    Python 3.12 on, ``isinstance(x, Store)`` finds a protocol's members with
    ``inspect.getattr_static``, which never calls ``__getattribute__``.
    """

    locals().update({name: _forward(name) for name in PROTOCOL})

    def __init__(self, inner: Any):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "calls", [])

    def __getattribute__(self, name: str) -> Any:
        if name in PROTOCOL or name in ("calls", "__class__", "__dict__", "__repr__"):
            return object.__getattribute__(self, name)
        if name in TRACE_METHODS:  # optional: looked up, and absent here, as in a store of one's own
            object.__getattribute__(self, "calls").append(f"looked up {name}")
            raise AttributeError(name)
        raise AssertionError(f"the store's {name!r} was used, which is not part of the Store protocol")


class _Forwarding:
    """A wrapper whose methods come from ``__getattr__``: a store to ``BudgetedGame`` on any Python,
    although ``isinstance(x, Store)`` refuses it from Python 3.12 on (static member lookup)."""

    def __init__(self, inner: Any):
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("inner", ["sqlite", "dict"])
def test_estimates_use_nothing_but_the_protocol(tmp_path, inner):
    store = EvaluationStore(tmp_path / "s.sqlite") if inner == "sqlite" else _run_doc_example()["DictStore"]()
    proxy = _OnlyTheProtocol(store)
    assert isinstance(proxy, Store) and open_store(proxy) is proxy
    game = FunctionGame(lambda Z: Z @ np.arange(1.0, 7.0) + Z[:, 0] * Z[:, 2], n_players=6)
    first = ShaplEIG().estimate(game, 14, seed=0, store=proxy)
    again = ShaplEIG().estimate(game, 14, seed=0, store=proxy)
    assert again.info["n_game_evaluations"] == 0 and np.array_equal(again.values, first.values)
    assert {"bind", "append"} <= set(proxy.calls)
    assert "trace_run" not in first.info  # a store without the optional trace methods records no trace
    store.close()


def test_a_wrapper_forwarding_through_getattr_is_a_store_on_every_python(tmp_path):
    store = EvaluationStore(tmp_path / "s.sqlite")
    wrapper = _Forwarding(store)
    assert missing_store_methods(wrapper) == [] and open_store(wrapper) is wrapper
    game = FunctionGame(lambda Z: Z @ np.arange(1.0, 5.0), n_players=4)
    est = ShaplEIG().estimate(game, 10, seed=0, store=wrapper)
    assert est.info["n_game_evaluations"] == 10 and len(store) == 10
    store.close()


def test_open_store_names_what_an_object_lacks():
    class Half:
        def bind(self, game, evaluate=None):
            return "x"

        def lookup(self, coalitions):
            return None

    with pytest.raises(TypeError, match=r"implement shapleig.runs.store_protocol.Store \(missing: claim, "
                                        r"wait_for_others, release, append, close\), got Half"):
        open_store(Half())


def test_store_methods_are_the_protocols_methods():
    declared = [name for name, member in vars(Store).items() if callable(member) and not name.startswith("_")]
    assert sorted(STORE_METHODS) == sorted(declared) and sorted(STORE_METHODS) == sorted(PROTOCOL)


def test_evaluation_store_implements_the_protocol(tmp_path):
    with EvaluationStore(tmp_path / "s.sqlite") as store:
        assert isinstance(store, Store)


class _OnlyTheClaimsBackend:
    """Exposes exactly ``ClaimsBackend`` of the store it wraps (no private attribute)."""

    NAMES = ("path", "transaction", "reading", "stored_values", "bound", "is_open")

    def __init__(self, inner: EvaluationStore):
        object.__setattr__(self, "_inner", inner)

    def __getattribute__(self, name: str) -> Any:
        if name in _OnlyTheClaimsBackend.NAMES:
            return getattr(object.__getattribute__(self, "_inner"), name)
        if name in ("__class__",):
            return object.__getattribute__(self, name)
        raise AssertionError(f"the claims table used the store's {name!r}, which is not in ClaimsBackend")


def test_the_claims_table_reaches_the_store_only_through_its_public_interface(tmp_path):
    store = EvaluationStore(tmp_path / "s.sqlite", lease_seconds=0.4)
    game = QuadraticGame(4, seed=0)
    store.bind(game)
    backend = _OnlyTheClaimsBackend(store)
    table = ClaimTable(backend, wait=True, lease_seconds=0.4, max_claim_seconds=None)
    rows = np.eye(4, dtype=bool)
    found, _, mine, busy = table.claim(rows[:2])
    assert mine.all() and not found.any() and not busy.any()
    store.append(rows[0], 1.5, seconds=0.0)  # stored through the store itself
    found, values, mine, _ = table.claim(rows[:2])
    assert found.tolist() == [True, False] and values[0] == 1.5 and mine.tolist() == [False, True]
    table.wait_for_others(rows[:1])  # stored: returns at once
    table.release(rows[1:2])
    assert table.held == [encode(rows[0])]  # the first claim is only forgotten by the store's append
    table.forget(table.held)
    assert table.held == []
    store.close()


def encode(row: np.ndarray) -> str:
    return "".join("1" if b else "0" for b in row)
