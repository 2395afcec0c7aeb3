"""A budget that covers the game (>= 2^p, p <= 20): every method enumerates and is exact, std 0."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shapleig.estimation.base as base_module
import shapleig_baselines as baselines
from shapleig import FunctionGame, registry
from shapleig.estimation.enumeration import BudgetCoversGameWarning, covers_game
from shapleig.runs.evaluators import SerialEvaluator
from shapleig.runs.store import open_store

P = 6
A = np.array([0.5, -1.0, 2.0, 0.25, 0.0, 1.5])
B = 3.0


def game_fn(z: np.ndarray) -> np.ndarray:
    """Additive part + B * unanimity of players {0, 1, 2} + |S|^2 (symmetric)."""
    z = np.asarray(z, dtype=float)
    return z @ A + B * z[:, 0] * z[:, 1] * z[:, 2] + z.sum(axis=1) ** 2


# by hand: the additive part gives A, the unanimity B/3 to each of its members, |S|^2 splits
# v(N) = P^2 equally (P each)
EXPECTED = A + np.array([B / 3] * 3 + [0.0] * (P - 3)) + P


def all_method_names() -> list[str]:
    registry.names()  # the core's methods first (the registry's order)
    baselines.register_methods()  # a checkout without the entry points installed
    return registry.names()


def test_every_registered_method_is_known_here():
    assert {"shapleig", "shapleig-leverage", "exact", "kernelshap", "permutation"} <= set(all_method_names())


# the published setting fits with botorch: it needs the extra shapleig[botorch] (marker torch)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.torch) if n == "shapleig-published" else n
                                  for n in all_method_names()])
@pytest.mark.parametrize("extra", [0, 37])
def test_every_method_is_exact_with_std_zero_when_the_budget_covers_the_game(name, extra, tmp_path):
    calls: list[int] = []

    def counted(z):
        calls.append(len(z))
        return game_fn(z)

    budget = (1 << P) + extra
    store = open_store(tmp_path / "store.sqlite")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = registry.build(name).estimate(FunctionGame(counted, P, name="g"), budget, seed=3, store=store,
                                            evaluator=SerialEvaluator(chunk_size=None))
    np.testing.assert_allclose(est.values, EXPECTED, rtol=0, atol=1e-12)
    assert np.all(est.std == 0.0) and np.all(est.covariance == 0.0)
    assert est.info["exact"] is True and est.evaluations == 1 << P and est.budget == budget
    relation = ">" if extra else "="
    assert est.info["message"] == f"budget {budget} {relation} 2^{P} = {1 << P} coalitions: all evaluated, exact values"
    covers = [w for w in caught if issubclass(w.category, BudgetCoversGameWarning)]
    assert len(covers) == (1 if extra else 0)
    # every coalition went through the evaluator and into the store, once
    assert sum(calls) == 1 << P
    assert len(store.records()) == 1 << P


def test_a_stored_enumeration_is_reused_not_reevaluated(tmp_path):
    path = tmp_path / "store.sqlite"
    first = registry.build("shapleig").estimate(FunctionGame(game_fn, P, name="g"), 1 << P, store=path)
    again = registry.build("kernelshap").estimate(FunctionGame(game_fn, P, name="g"), 1 << P, store=path)
    assert first.info["n_game_evaluations"] == 1 << P
    assert again.info["n_store_hits"] == 1 << P and again.info["n_game_evaluations"] == 0
    np.testing.assert_array_equal(first.values, again.values)


def test_below_the_full_budget_nothing_is_enumerated():
    est = registry.build("shapleig").estimate(FunctionGame(game_fn, P), (1 << P) - 1, seed=0)
    assert not est.info.get("exact") and est.evaluations == (1 << P) - 1
    assert est.std.max() > 0


def test_covers_game_rule():
    assert covers_game(10, 1024) and covers_game(10, 5000) and not covers_game(10, 1023)
    assert not covers_game(21, 1 << 40)  # beyond enumeration: the method runs as usual


def test_enumeration_reaches_20_players_and_no_further():
    """The limit is p <= 20 inclusive (2^20 coalitions): at p = 20 a covering budget enumerates."""
    assert covers_game(20, 1 << 20) and not covers_game(20, (1 << 20) - 1)
    assert not covers_game(21, 1 << 21)


def test_an_enumerated_result_takes_its_baseline_from_the_empty_coalition():
    """``baseline`` is v(empty), not v(N) (the last coalition of the bit order)."""
    empty, grand = np.zeros((1, P), dtype=bool), np.ones((1, P), dtype=bool)
    v_empty, v_grand = float(game_fn(empty)[0]), float(game_fn(grand)[0])
    assert v_empty != v_grand
    for name in ("exact", "permutation", "shapleig"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetCoversGameWarning)
            est = registry.build(name).estimate(FunctionGame(lambda Z: game_fn(Z) + 7.0, P), 1 << P, seed=0)
        assert est.info["exact"] and est.baseline == v_empty + 7.0, (name, est.baseline)


def test_progress_bar_counts_evaluations_up_to_two_to_the_p(monkeypatch, capsys):
    monkeypatch.setattr(base_module, "PROGRESS_DELAY_S", 0.0)
    baselines.get("permutation").estimate(FunctionGame(game_fn, P), 5000, progress=True)
    err = capsys.readouterr().err
    assert f"/{1 << P} " in err and "5000" not in err  # the bar's total is 2^p, not the budget
    baselines.get("permutation").estimate(FunctionGame(game_fn, P), 20, progress=True)
    assert "/20 " in capsys.readouterr().err
