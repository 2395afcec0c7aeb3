"""shapleig: Shapley values of expensive games under a small evaluation budget.

The core package: games and budget accounting, exact references, the Hamming-kernel GP surrogate,
the closed-form Shapley EIG and the ``DesignLoop`` behind the ``ShaplEIG`` estimator.
Submodules are imported lazily so that ``import shapleig`` stays cheap (torch loads on first use).
"""

from __future__ import annotations

import importlib
from typing import Any

from shapleig.errors import (
    AcquisitionError,
    BudgetError,
    BudgetExhaustedError,
    CoalitionError,
    EvaluationFailedError,
    GameError,
    NonFiniteValueError,
    ShapleigError,
    StoreBusyError,
    StoreError,
    StoreMismatchError,
)
from shapleig.estimation.base import BaseEstimator, Estimator
from shapleig.estimation.enumeration import BudgetCoversGameWarning
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import all_coalitions, from_bitmask, to_bitmask
from shapleig.games.exact import exact_shapley, shapley_from_table, shapley_operator
from shapleig.games.game import FunctionGame, Game
from shapleig.runs.budget import BudgetedGame

__version__ = "0.1.0"

# name -> module that defines it; resolved on first attribute access.
_LAZY = {
    "ShaplEIG": "shapleig.design.estimators",
    "GPLeverage": "shapleig.design.estimators",
    "ModelOptions": "shapleig.design.options",  # ShaplEIG's option groups
    "ReadoutOptions": "shapleig.design.options",
    "FitOptions": "shapleig.design.options",
    "DesignOptions": "shapleig.design.options",
    "DesignLoop": "shapleig.design.loop",
    "AskTell": "shapleig.design.ask_tell",
    "tell_store": "shapleig.design.tell_store",
    "EvaluationStore": "shapleig.runs.store",
    "SerialEvaluator": "shapleig.runs.evaluators",
    "ExecutorEvaluator": "shapleig.runs.evaluators",
    "explain": "shapleig.explanation.explain",
    "explain_X": "shapleig.explanation.explain_rows",
    "RowsExplanation": "shapleig.explanation.explain_rows",
    "ImputerGame": "shapleig.explanation.imputer",
    "plot_explanation": "shapleig.explanation.plot",
    "ShapiqApproximator": "shapleig.interop.shapiq_bridge",  # needs the extra shapleig[shapiq]
    "IndexOperator": "shapleig.gp.index_esp",
    "INDICES": "shapleig.games.indices",
    "Index": "shapleig.games.indices",
    "register_index": "shapleig.games.indices",
    "index_terms": "shapleig.games.indices",
    "exact_index_values": "shapleig.games.indices",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'shapleig' has no attribute {name!r}")


__all__ = [
    "AcquisitionError",
    "AskTell",
    "BaseEstimator",
    "BudgetCoversGameWarning",
    "BudgetError",
    "BudgetExhaustedError",
    "BudgetedGame",
    "CoalitionError",
    "EvaluationFailedError",
    "Estimator",
    "FunctionGame",
    "Game",
    "GameError",
    "NonFiniteValueError",
    "ShapleigError",
    "ShapleyEstimate",
    "StoreBusyError",
    "StoreError",
    "StoreMismatchError",
    "all_coalitions",
    "exact_shapley",
    "from_bitmask",
    "shapley_from_table",
    "shapley_operator",
    "to_bitmask",
    *_LAZY,
]
