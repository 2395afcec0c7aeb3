"""Every public name users import stays importable across the reorganisation of the core.

The lists are the packages' ``__all__`` before ``shapleig/`` was grouped into subpackages; a
name may be added, never removed.
"""

from __future__ import annotations

import importlib

import pytest

BEFORE = {
    "shapleig": [
        "BaseEstimator", "BudgetError", "BudgetExhaustedError", "BudgetedGame", "CoalitionError", "DesignLoop",
        "Estimator", "EvaluationFailedError", "EvaluationStore", "ExecutorEvaluator", "FunctionGame", "GPLeverage",
        "Game", "GameError", "ImputerGame", "NonFiniteValueError", "SerialEvaluator", "ShaplEIG", "ShapleigError",
        "ShapleyEstimate", "StoreBusyError", "StoreError", "StoreMismatchError", "all_coalitions", "exact_shapley",
        "explain", "from_bitmask", "plot_explanation", "shapley_from_table", "shapley_operator", "to_bitmask",
    ],
    "shapleig_baselines": ["NAMES", "SHAPIQ_PREFIX", "estimator_class", "get"],
    "shapleig.hpo": [
        "AblationGame", "HPOGame", "HPSpace", "HyperSHAPGame", "OptimizerBiasGame", "OptunaSearch", "RandomSearch",
        "STUDIES", "SensitivityGame", "TUNERS", "TunabilityGame", "coalition_seed", "hypershap_game", "inner_seed",
        "load_space", "make_tuner", "require_configspace",
    ],
}


@pytest.mark.parametrize("package", sorted(BEFORE))
def test_every_public_name_still_imports(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in BEFORE[package] if not hasattr(module, name)]
    assert not missing, f"{package} lost public names: {missing}"
    assert set(BEFORE[package]) <= set(module.__all__)


def test_explain_is_the_function_not_a_subpackage() -> None:
    """``shapleig.explain`` is the function even after its subpackage was imported."""
    import shapleig
    import shapleig.explanation.explain  # noqa: F401

    assert callable(shapleig.explain) and shapleig.explain.__name__ == "explain"
