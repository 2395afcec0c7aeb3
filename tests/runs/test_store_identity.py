"""Game identity in evaluation stores: no store ever serves another game's values silently.

Each collision the identity must catch (two lambdas, an edited function, a closure, seeded objects
whose repr hides the seed, the same class with other parameters) ends in a refusal that names the
difference; an explicit ``game_id``, ``accept_game_change`` and ``verify`` cover what content
cannot tell.
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame, ShaplEIG
from shapleig.errors import GameError, StoreError, StoreMismatchError
from shapleig.games.identity import game_identity
from shapleig.runs.budget import game_fingerprint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import QuadraticGame  # noqa: E402

P = 6
FIRST = np.eye(P, dtype=bool)[:3]


def _write(game, path) -> None:
    """Use ``game`` with a fresh store at ``path`` and log three values."""
    BudgetedGame(game, 5, store=path)(FIRST)


def _refusal(game, path, **store_options) -> str:
    with pytest.raises(StoreMismatchError) as info:
        BudgetedGame(game, 5, store=EvaluationStore(path, **store_options))
    return str(info.value)


def test_two_lambdas_do_not_share_a_store(tmp_path):
    path = tmp_path / "s.sqlite"  # a plain path is accepted as the store
    _write(FunctionGame(lambda Z: Z.sum(axis=1) * 1.0, P), path)
    msg = _refusal(FunctionGame(lambda Z: Z.sum(axis=1) * 2.0, P), path)
    assert "the code of fn changed" in msg and "What differs" in msg
    # the same lambda text is the same game: its values are served
    again = BudgetedGame(FunctionGame(lambda Z: Z.sum(axis=1) * 1.0, P), 5, store=str(path))
    again(FIRST)
    assert again.accounting()["n_store_hits"] == 3 and again.accounting()["n_game_evaluations"] == 0


def test_an_edited_function_under_the_same_name_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # the edit keeps the size: no stale .pyc
    module = tmp_path / "edited_game_module.py"
    module.write_text("def score(Z):\n    return Z.sum(axis=1) * 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("edited_game_module")
    _write(FunctionGame(mod.score, P), tmp_path / "s.sqlite")
    module.write_text("def score(Z):\n    return Z.sum(axis=1) * 3.0\n")
    importlib.invalidate_caches()
    sys.modules.pop("edited_game_module")
    mod = importlib.import_module("edited_game_module")
    msg = _refusal(FunctionGame(mod.score, P), tmp_path / "s.sqlite")
    assert "the code of fn changed (edited_game_module.score #" in msg


def test_closure_globals_and_defaults_count(tmp_path):
    def make(scale):
        return lambda Z: scale * Z.sum(axis=1)

    _write(FunctionGame(make(1.0), P), tmp_path / "a.sqlite")
    assert "closure variable scale: 1.0 vs 2.0" in _refusal(FunctionGame(make(2.0), P), tmp_path / "a.sqlite")

    def with_default(Z, power=1):
        return Z.sum(axis=1) ** power

    _write(FunctionGame(with_default, P), tmp_path / "b.sqlite")
    with_default.__defaults__ = (2,)
    assert "fn defaults: (1,) vs (2,)" in _refusal(FunctionGame(with_default, P), tmp_path / "b.sqlite")


class SeededSum:
    """shapiq-style synthetic game: random weights from ``random_state``, a repr that hides it."""

    def __init__(self, n: int, random_state: int | None = None):
        self.n_players = n
        self.random_state = random_state
        self._rng = np.random.default_rng(random_state)
        self.weights = self._rng.normal(size=n)

    def __call__(self, Z):
        return np.asarray(Z, dtype=float) @ self.weights

    def __repr__(self) -> str:
        return f"SeededSum(n={self.n_players})"


def test_seeded_objects_with_the_same_repr_are_told_apart(tmp_path):
    assert repr(SeededSum(P, 0)) == repr(SeededSum(P, 1))
    _write(SeededSum(P, 0), tmp_path / "s.sqlite")
    msg = _refusal(SeededSum(P, 1), tmp_path / "s.sqlite")
    assert "attribute random_state: 0 vs 1" in msg and "attribute weights: ndarray float64[6] #" in msg
    # the generator state is part of the identity too (two objects, same seed, same draws: same game)
    assert game_fingerprint(SeededSum(P, 0)) == game_fingerprint(SeededSum(P, 0))


def test_same_class_other_parameters_and_player_counts(tmp_path):
    _write(QuadraticGame(P, seed=0), tmp_path / "s.sqlite")
    assert "parameter seed: 0 vs 1" in _refusal(QuadraticGame(P, seed=1), tmp_path / "s.sqlite")
    assert "n_players 6 vs 7" in _refusal(QuadraticGame(P + 1, seed=0), tmp_path / "s.sqlite")
    msg = _refusal(QuadraticGame(P, seed=0), tmp_path / "s.sqlite", game_id="run-2")
    assert "store game_id: only in the new game (run-2)" in msg


def test_explicit_game_id_on_the_function_game(tmp_path):
    fn = lambda Z: Z.sum(axis=1) * 1.0  # noqa: E731
    _write(FunctionGame(fn, P, game_id="data-v1"), tmp_path / "s.sqlite")
    assert "game_id: data-v1 vs data-v2" in _refusal(FunctionGame(fn, P, game_id="data-v2"), tmp_path / "s.sqlite")
    assert game_identity(FunctionGame(fn, P, name="other name", game_id="data-v1")) == game_identity(
        FunctionGame(fn, P, game_id="data-v1"))  # the display name does not count


def test_a_game_whose_state_cannot_be_digested_needs_a_game_id(tmp_path):
    lock = threading.Lock()  # no inspectable state and not picklable

    def fn(Z):
        with lock:
            return Z.sum(axis=1) * 1.0

    with pytest.raises(GameError, match=r"fn.lock \(_thread.lock\) cannot be digested.*game_id=") as info:
        BudgetedGame(FunctionGame(fn, P), 5, store=tmp_path / "s.sqlite")
    assert "FunctionGame(fn, n_players, game_id=...)" in str(info.value)
    BudgetedGame(FunctionGame(fn, P, game_id="locked-sum"), 5, store=tmp_path / "s.sqlite")(FIRST)


def test_override_reuses_a_store_and_says_what_differs(tmp_path, caplog):
    _write(FunctionGame(lambda Z: Z.sum(axis=1) * 1.0, P), tmp_path / "s.sqlite")
    refactored = FunctionGame(lambda Z: 1.0 * Z.sum(axis=1), P)  # same values, other code
    store = EvaluationStore(tmp_path / "s.sqlite", accept_game_change=True)
    with caplog.at_level(logging.WARNING, logger="shapleig.runs.store"):
        bg = BudgetedGame(refactored, 5, store=store)
    assert "the code of fn changed" in caplog.text
    bg(FIRST)
    assert bg.accounting()["n_store_hits"] == 3


def test_verify_re_evaluates_stored_coalitions(tmp_path):
    data = tmp_path / "weights.npy"
    np.save(data, np.arange(P, dtype=float))

    def from_file(Z):  # reads a file: its content is invisible to the identity
        return np.asarray(Z, dtype=float) @ np.load(data)

    game = FunctionGame(from_file, P)
    _write(game, tmp_path / "s.sqlite")
    BudgetedGame(game, 5, store=EvaluationStore(tmp_path / "s.sqlite", verify=True))  # unchanged: accepted
    np.save(data, np.arange(P, dtype=float) + 1.0)
    msg = _refusal(game, tmp_path / "s.sqlite", verify=True)
    assert "3 of 3 re-evaluated coalitions differ ({0}: stored 0.0, now 1.0; {1}: stored 1.0, now 2.0;" in msg


def test_store_given_as_a_path_to_an_estimator(tmp_path):
    game = QuadraticGame(4, seed=3)
    first = ShaplEIG(refit="never").estimate(game, 8, seed=0, store=str(tmp_path / "runs.sqlite"))
    again = ShaplEIG(refit="never").estimate(game, 8, seed=0, store=tmp_path / "runs.sqlite")
    assert again.info["n_store_hits"] == 8 and again.info["n_game_evaluations"] == 0
    np.testing.assert_array_equal(again.values, first.values)
    with pytest.raises(TypeError, match="store must be a file path or implement shapleig.runs.store_protocol.Store .*got int"):
        BudgetedGame(game, 5, store=3)


def test_pickled_payloads_are_refused(tmp_path):
    """Nothing is ever unpickled: an .npz table with an object array and a store row holding a
    blob are refused with a clear error (and the payload is never run)."""
    from shapleig_tasks.tables import TableGame

    marker = tmp_path / "ran"
    coalitions = np.array([[False, False], [True, False], [False, True], [True, True]])
    np.savez(tmp_path / "evil.npz", coalitions=coalitions, values=np.array([_Payload(str(marker))] * 4, dtype=object),
             n_players=np.array(2))
    with pytest.raises(GameError, match=r"evil.npz.*cannot read key 'values'.*allow_pickle"):
        TableGame.from_npz(tmp_path / "evil.npz")
    assert not marker.exists()

    path = tmp_path / "s.sqlite"
    game = QuadraticGame(2)
    _write_two = BudgetedGame(game, 4, store=path)
    _write_two(coalitions[:1])
    import pickle

    con = sqlite3.connect(path)
    con.execute("UPDATE evaluations SET value = ? WHERE id = 1", (pickle.dumps(_Payload(str(marker))),))
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="non-numeric value \\(blob\\) in row 1"):
        BudgetedGame(game, 4, store=path)(coalitions[:1])
    assert not marker.exists()


class _Payload:
    """Unpickling this would create ``path``: proof that nothing was unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_table_rewritten_in_place_is_another_game(tmp_path):
    from shapleig.games.coalitions import all_coalitions
    from shapleig_tasks.tables import TableGame, save_table

    Z = all_coalitions(3)
    path = tmp_path / "t.npz"
    save_table(path, Z, Z.sum(axis=1).astype(float))
    first = TableGame.from_npz(path)
    BudgetedGame(first, 4, store=tmp_path / "s.sqlite")(Z[:2])
    save_table(path, Z, 2.0 * Z.sum(axis=1))
    msg = _refusal(TableGame.from_npz(path), tmp_path / "s.sqlite")
    assert "values: ndarray float64[8] #" in msg
    # the same values in another file under another name: the same game, its values are reused
    save_table(tmp_path / "copy.npz", Z, Z.sum(axis=1).astype(float))
    again = BudgetedGame(TableGame.from_npz(tmp_path / "copy.npz", name="renamed"), 4, store=tmp_path / "s.sqlite")
    again(Z[:2])
    assert again.accounting()["n_store_hits"] == 2


def test_function_identity_is_stable_across_processes(tmp_path, monkeypatch):
    import os
    import subprocess

    (tmp_path / "stable_game_module.py").write_text(
        "import numpy as np\n"
        "WEIGHTS = {'a': np.arange(5.0), 'b': {'x', 'y', 'z'}}\n"
        "def make(scale):\n"
        "    def fn(Z):\n"
        "        return scale * (Z @ WEIGHTS['a']) + (1.0 if 'x' in {'x', 'q'} else 0.0)\n"
        "    return fn\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("stable_game_module")
    here = game_fingerprint(FunctionGame(mod.make(2.0), 5))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import stable_game_module as m;"
            "from shapleig import FunctionGame; from shapleig.runs.budget import game_fingerprint;"
            "print(game_fingerprint(FunctionGame(m.make(2.0), 5)))")
    for hashseed in ("1", "2"):
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PYTHONHASHSEED": hashseed}
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == here
