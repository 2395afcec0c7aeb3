"""The shared estimator front (BaseEstimator): budget checks, caps, retries, bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

import shapleig_baselines as baselines
from shapleig import BudgetedGame, BudgetError, EvaluationFailedError, FunctionGame


def additive(z: np.ndarray) -> np.ndarray:
    return z @ np.arange(1.0, z.shape[1] + 1)


def test_a_callers_budgeted_game_is_capped_at_the_call_budget():
    shared = BudgetedGame(FunctionGame(additive, 6), 60)
    est = baselines.get("permutation").estimate(shared, 20, seed=0)
    assert shared.evaluations <= 20 and est.evaluations == shared.evaluations
    assert shared.budget == 60  # the caller's cap is restored
    with pytest.raises(BudgetError, match="evaluations left"):
        baselines.get("permutation").estimate(shared, 50, seed=0)


def test_budget_error_names_minimum_and_reason_before_any_evaluation():
    calls = []

    def counting(z):
        calls.append(len(z))
        return additive(z)

    with pytest.raises(BudgetError, match=r"s-lss needs budget >= 32 for p = 6 \(.*strata"):
        baselines.get("s-lss").estimate(FunctionGame(counting, 6), 31)
    assert calls == []


def test_max_retries_reaches_the_budgeted_game():
    failures = {"left": 2}

    def flaky(z):
        if failures["left"] > 0:
            failures["left"] -= 1
            raise RuntimeError("transient")
        return additive(z)

    est = baselines.get("permutation").estimate(FunctionGame(flaky, 4), 16, seed=0, max_retries=2)
    np.testing.assert_allclose(est.values, np.arange(1.0, 5.0))
    failures["left"] = 5
    with pytest.raises(EvaluationFailedError, match="coalition"):
        baselines.get("permutation").estimate(FunctionGame(flaky, 4), 16, seed=0, max_retries=1)


def test_accounting_is_reported():
    est = baselines.get("lss", accounting="draws").estimate(FunctionGame(additive, 5), 30, seed=1)
    assert est.info["accounting"] == "draws"
    est = baselines.get("permutation").estimate(FunctionGame(additive, 5), 30, seed=1)
    assert est.info["accounting"] == "distinct" and est.info["n_evaluations"] == est.evaluations


def test_every_budget_error_states_the_methods_own_minimum():
    """Budget 0 (or negative) names the method and its own minimum, e.g. ShaplEIG's p + 2."""
    import re

    import shapleig_baselines as baselines
    from shapleig import BudgetError, DesignLoop, FunctionGame, ShaplEIG

    game = FunctionGame(lambda Z: Z.sum(axis=1).astype(float), 5)
    for budget in (0, -3):
        with pytest.raises(BudgetError, match=r"shapleig needs budget >= 7 for p = 5 \(the p \+ 1 = 6"):
            ShaplEIG().estimate(game, budget, seed=0)
        with pytest.raises(BudgetError, match=r"p \+ 1 = 6 evaluations \(the initial design\), i.e. at least 7"):
            DesignLoop(game, budget, progress=False)
    for name in baselines.NAMES:
        method = baselines.get(name)
        minimum = method.min_budget(5)
        with pytest.raises(BudgetError, match=re.escape(f"needs budget >= {minimum} for p = 5")):
            method.estimate(game, 0, seed=0)
