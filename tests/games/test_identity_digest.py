"""Unit tests of the content digest behind game identities (:mod:`shapleig.games.identity`).

Each test pins one rule of ``digest_value`` that a one-line change could drop (issue 27, item 9):
a function's defaults, an array's shape, key order independence of dicts, the depth limit,
pandas dtypes, and which globals count. The references are built by hand (two values that must
digest apart, or alike), never by the digest under test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from shapleig.games.identity import cache_names, digest_value, function_identity, object_state


def _with_default(p):
    def fn(Z, power=p):
        return Z ** power
    return fn


def test_a_function_digest_covers_its_defaults():
    """Two functions with the same code and closure, defaults 1 and 2: other values, other digest
    (nested helpers are digested by this rule, not by FunctionGame's ``fn.defaults`` component)."""
    assert _with_default(1).__code__ is _with_default(2).__code__
    assert digest_value(_with_default(1)) != digest_value(_with_default(2))
    assert digest_value(_with_default(1)) == digest_value(_with_default(1))


def test_a_function_digest_covers_keyword_only_defaults():
    def make(p):
        def fn(Z, *, power=p):
            return Z ** power
        return fn

    assert digest_value(make(1)) != digest_value(make(3))


def test_an_array_digest_covers_its_shape_and_dtype():
    flat = np.arange(6.0)
    assert digest_value(flat.reshape(2, 3)) != digest_value(flat.reshape(3, 2))  # same bytes, other shape
    assert digest_value(flat.reshape(2, 3)) != digest_value(flat)
    assert digest_value(flat) != digest_value(flat.view(np.int64))  # same bytes, other dtype
    assert digest_value(flat.reshape(2, 3)) == digest_value(np.arange(6.0).reshape(2, 3))


def test_a_dict_digest_does_not_depend_on_insertion_order():
    assert digest_value({"a": 1.0, "b": 2.0}) == digest_value({"b": 2.0, "a": 1.0})
    keys = [frozenset({"x", "y"}), frozenset({"z"}), (1, "a"), 2.5]
    forward = {k: i for i, k in enumerate(keys)}
    backward = {k: forward[k] for k in reversed(keys)}
    assert digest_value(forward) == digest_value(backward)
    assert digest_value({"a": 1.0, "b": 2.0}) != digest_value({"a": 2.0, "b": 1.0})  # values stay with their keys
    assert digest_value({"a": 1.0, "b": 1.0}) != digest_value({"a": 1.0, "c": 1.0})  # the keys count


def test_nesting_beyond_the_depth_limit_is_opaque_not_truncated():
    """A value nested deeper than the limit cannot be digested in full: it is reported (so a store
    asks for a game_id) rather than identified by a truncated digest."""
    def nest(levels: int, leaf: float):
        value: object = leaf
        for _ in range(levels):
            value = [value]
        return value

    opaque: list[str] = []
    digest_value(nest(60, 1.0), "w", opaque)
    assert opaque and "nested more than 40 levels deep" in opaque[0]
    shallow: list[str] = []
    assert digest_value(nest(30, 1.0), "w", shallow) != digest_value(nest(30, 2.0))
    assert shallow == []


def test_pandas_digests_cover_dtypes_labels_and_names():
    s8, s64 = pd.Series([1, 2, 3], dtype=np.int8), pd.Series([1, 2, 3], dtype=np.int64)
    assert digest_value(s8) != digest_value(s64)
    assert digest_value(s64) != digest_value(s64.rename("w"))
    a = pd.DataFrame({"a": [1.0, 2.0]})
    assert digest_value(a) != digest_value(a.rename(columns={"a": "b"}))
    assert digest_value(pd.DataFrame({0: [1.0]})) != digest_value(pd.DataFrame({"0": [1.0]}))
    cat = pd.Series(["x", "y"], dtype="category")
    assert digest_value(cat) != digest_value(cat.cat.add_categories(["z"]))  # the codes a model sees change


def test_a_user_getstate_does_not_hide_attributes():
    class Game:
        def __init__(self, w):
            self.w = w

        def __getstate__(self):
            return {}

    assert object_state(Game(1.0)) == {"w": 1.0}
    assert digest_value(Game(1.0)) != digest_value(Game(2.0))


_MEMO: dict = {}
_LOG: list = []
_WEIGHTS = {"a": 1.0}


def _memoised(Z):
    key = Z.tobytes()
    if key not in _MEMO:
        _MEMO[key] = float(Z.sum())
    _LOG.append(key)
    return _MEMO[key] * _WEIGHTS["a"]


def _counter(Z):
    _WEIGHTS["a"] += 1.0  # read and written: not a plain store, so it still counts
    return Z.sum()


def test_containers_the_function_fills_are_left_out_and_others_count():
    assert cache_names(_memoised) == {"_MEMO", "_LOG"}
    before = function_identity(_memoised)
    _memoised(np.ones(3))
    assert function_identity(_memoised) == before  # the memo and the log filled: same identity
    assert before["fn.global._WEIGHTS"] != "<a container the function fills (a cache or log): not part of the identity>"
    assert "_WEIGHTS" not in cache_names(_counter)
