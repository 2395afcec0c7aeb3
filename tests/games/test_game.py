"""BudgetedGame: budget accounting, caching, validation, retries and the game fingerprint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shapleig import (
    BudgetedGame,
    BudgetError,
    BudgetExhaustedError,
    CoalitionError,
    EvaluationFailedError,
    FunctionGame,
    GameError,
)
from shapleig.errors import NonFiniteValueError
from shapleig.games.coalitions import all_coalitions
from shapleig.games.game import check_budget, check_game, check_game_values
from shapleig.runs.budget import game_fingerprint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _games_for_parallel import FailingGame, QuadraticGame, read_log  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


class CountingGame:
    """Additive game that counts calls and coalitions it was asked for."""

    def __init__(self, p: int = 4, out=None):
        self.n_players = p
        self.calls: list[np.ndarray] = []
        self.out = out  # override the output (for malformed-output tests)

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        self.calls.append(Z.copy())
        if self.out is not None:
            return self.out(Z)
        return Z @ np.arange(1.0, self.n_players + 1)

    @property
    def n_evaluated(self) -> int:
        return sum(c.shape[0] for c in self.calls)


def test_cache_hits_are_free_and_duplicates_charged_once():
    game = CountingGame()
    bg = BudgetedGame(game, 5)
    Z = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(bg(Z), [1.0, 2.0, 1.0])
    assert bg.evaluations == 2 and bg.remaining == 3 and game.n_evaluated == 2
    np.testing.assert_array_equal(bg(Z[::-1]), [1.0, 2.0, 1.0])  # all cached
    assert bg.evaluations == 2 and game.n_evaluated == 2 and len(game.calls) == 1
    acc = bg.accounting()
    assert acc["n_requests"] == 6 and acc["n_cache_hits"] == 4 and acc["n_evaluations"] == 2
    assert acc["n_game_evaluations"] == 2 and acc["n_store_hits"] == 0
    np.testing.assert_array_equal(bg.is_cached(np.eye(4, dtype=bool)), [True, True, False, False])
    assert bg.n_uncached(np.eye(4, dtype=bool)) == 2 and bg.can_afford(np.eye(4, dtype=bool))


def test_budget_never_exceeded_and_refused_call_evaluates_nothing():
    game = CountingGame()
    bg = BudgetedGame(game, 3)
    bg(np.eye(4, dtype=bool)[:2])
    with pytest.raises(BudgetExhaustedError, match="exceed the budget"):
        bg(np.eye(4, dtype=bool))  # needs 2 new, 1 left
    assert bg.evaluations == 2 and game.n_evaluated == 2
    assert not bg.can_afford(np.eye(4, dtype=bool))
    bg(np.eye(4, dtype=bool)[1:3])  # one new: fits exactly
    assert bg.remaining == 0
    bg(np.eye(4, dtype=bool)[:3])  # all cached: still fine at zero remaining
    with pytest.raises(BudgetExhaustedError):
        bg(np.ones((1, 4), dtype=bool))
    assert bg.evaluations == 3 and game.n_evaluated == 3


def test_full_budget_charges_every_coalition_including_empty_and_grand():
    p = 4
    bg = BudgetedGame(CountingGame(p), 2**p)
    Z = all_coalitions(p)
    bg(Z)
    assert bg.remaining == 0
    X, y = bg.history()
    np.testing.assert_array_equal(X, Z)  # history keeps request order
    np.testing.assert_array_equal(y, Z @ np.arange(1.0, p + 1))


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.ones((2, 3), dtype=bool), "shape"),
        (np.ones((2, 4, 1), dtype=bool), "shape"),
        (np.full((2, 4), 0.5), "dtype"),
        (np.array([[0, 2, 0, 1]]), "only contain 0 and 1"),
    ],
)
def test_wrong_coalition_shape_or_dtype(bad, match):
    game = CountingGame()
    bg = BudgetedGame(game, 5)
    with pytest.raises(CoalitionError, match=match):
        bg(bad)
    assert game.n_evaluated == 0 and bg.evaluations == 0


def test_integer_and_single_row_coalitions_accepted():
    bg = BudgetedGame(CountingGame(), 5)
    np.testing.assert_array_equal(bg(np.array([1, 1, 0, 0])), [3.0])
    np.testing.assert_array_equal(bg(np.array([[1, 1, 0, 0]])), [3.0])
    assert bg.evaluations == 1


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
def test_nonfinite_value_names_the_coalition(bad_value):
    def out(Z):
        v = Z @ np.arange(1.0, 5.0)
        v[(Z == [True, False, True, False]).all(axis=1)] = bad_value
        return v

    game = CountingGame(out=out)
    bg = BudgetedGame(game, 8, max_retries=1)
    Z = np.array([[1, 0, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0]], dtype=bool)
    with pytest.raises(GameError, match=r"coalition \{0, 2\}") as info:
        bg(Z)
    # Also an EvaluationFailedError, so the loop can treat it like any other failed evaluation.
    assert isinstance(info.value, NonFiniteValueError) and isinstance(info.value, EvaluationFailedError)
    assert "2 attempts" in str(info.value)
    # the finite values of the same call were paid for and are kept; the bad one was retried once
    assert bg.evaluations == 2 and bg.accounting()["n_failed_attempts"] == 2
    assert game.n_evaluated == 4  # 3 in the batch call + 1 retry of {0, 2}
    np.testing.assert_array_equal(bg.history()[1], [1.0, 2.0])


@pytest.mark.parametrize(
    "out, match",
    [
        (lambda Z: np.zeros(Z.shape[0] + 1), "expected"),
        (lambda Z: np.zeros((Z.shape[0], 2)), "expected"),
        (lambda Z: ["a"] * Z.shape[0], "not numbers"),
    ],
)
def test_wrong_number_of_values_is_a_game_error_not_retried(out, match):
    game = CountingGame(out=out)
    bg = BudgetedGame(game, 8, max_retries=3)
    with pytest.raises(GameError, match=match):
        bg(np.eye(4, dtype=bool)[:2])
    assert len(game.calls) == 1 and bg.evaluations == 0


def test_check_game_values_accepts_column_vector_and_rejects_nan():
    Z = np.eye(3, dtype=bool)
    np.testing.assert_array_equal(check_game_values(np.ones((3, 1)), Z), np.ones(3))
    with pytest.raises(GameError, match=r"nan for coalition \{1\}"):
        check_game_values([0.0, np.nan, 1.0], Z)


def test_raising_game_is_retried_then_fails_naming_the_coalition(tmp_path):
    log = str(tmp_path / "calls.log")
    game = FailingGame(4, bad=["1100"], mode="raise", failures=None, log_path=log)
    bg = BudgetedGame(game, 10, max_retries=2)
    Z = np.array([[0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]], dtype=bool)
    with pytest.raises(EvaluationFailedError, match=r"coalition \{0, 1\} failed in 3 attempts") as info:
        bg(Z)
    assert "simulated failure" in str(info.value)
    np.testing.assert_array_equal(info.value.coalition, Z[1])
    # The batch call raised midway (after {} succeeded inside it), so each coalition was then
    # tried alone: {} ok, {0, 1} failed three times (1 + max_retries), then evaluation stopped.
    assert read_log(log) == ["0000", "!1100", "0000", "!1100", "!1100", "!1100"]
    assert bg.evaluations == 1


def test_transient_failure_recovers_within_retries(tmp_path):
    log = str(tmp_path / "calls.log")
    game = FailingGame(4, bad=["1100"], mode="raise", failures=2, log_path=log)
    bg = BudgetedGame(game, 10, max_retries=2)
    Z = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], dtype=bool)
    np.testing.assert_allclose(bg(Z), game.values(Z))
    # the failing batch call is not attributed to a coalition; the first lone attempt failed
    assert read_log(log) == ["!1100", "!1100", "1100", "0011"]
    assert bg.accounting()["n_failed_attempts"] == 1 and bg.evaluations == 2


def test_argument_validation():
    with pytest.raises(BudgetError, match="at least 3"):
        check_budget(2, 3, method="x")
    with pytest.raises(BudgetError, match="integer"):
        BudgetedGame(CountingGame(), 2.5)
    with pytest.raises(GameError, match="n_players"):
        check_game(lambda Z: Z)
    with pytest.raises(ValueError, match="max_retries"):
        BudgetedGame(CountingGame(), 3, max_retries=-1)


# -- fingerprint ----------------------------------------------------------------------------------

def test_fingerprint_distinguishes_games_and_ids():
    a, b = QuadraticGame(5, seed=0), QuadraticGame(5, seed=1)
    assert game_fingerprint(a) == game_fingerprint(QuadraticGame(5, seed=0, log_path="/x"))
    assert game_fingerprint(a) != game_fingerprint(b)
    assert game_fingerprint(a) != game_fingerprint(QuadraticGame(6, seed=0))
    assert game_fingerprint(a, "v1") != game_fingerprint(a, "v2") != game_fingerprint(a)
    f = FunctionGame(np.sum, 3)
    assert game_fingerprint(f) != game_fingerprint(FunctionGame(np.prod, 3))
    # parameters that differ only deep inside a long array (whose repr elides the middle)
    big = np.zeros(5000)
    changed = big.copy()
    changed[2500] = 1.0

    class ArrayGame(CountingGame):
        def __init__(self, w):
            super().__init__()
            self.w = w

        def params(self):
            return {"w": self.w, "order": ["a", 1]}

    assert game_fingerprint(ArrayGame(big)) == game_fingerprint(ArrayGame(big.copy()))
    assert game_fingerprint(ArrayGame(big)) != game_fingerprint(ArrayGame(changed))
    # a game with the default object repr (a memory address) still gets a stable fingerprint
    assert game_fingerprint(CountingGame()) == game_fingerprint(CountingGame())


def test_fingerprint_is_stable_across_processes():
    code = (
        "import sys; sys.path.insert(0, 'tests');"
        "from _games_for_parallel import QuadraticGame;"
        "from shapleig.runs.budget import game_fingerprint;"
        "print(game_fingerprint(QuadraticGame(5, seed=0), 'id'))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "123"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == game_fingerprint(QuadraticGame(5, seed=0), "id")
