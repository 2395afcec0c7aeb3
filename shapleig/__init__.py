"""shapleig: Shapley values of expensive games under a small evaluation budget.

The core package: games and budget accounting, exact references, the Hamming-kernel GP surrogate,
the closed-form Shapley EIG and the ``DesignLoop`` behind the ``ShaplEIG`` estimator.
Submodules are imported lazily so that ``import shapleig`` stays cheap (torch loads on first use).
"""

from __future__ import annotations

import importlib
from typing import Any

from .coalitions import all_coalitions, from_bitmask, to_bitmask
from .errors import (
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
from .estimate import BaseEstimator, Estimator, ShapleyEstimate
from .game import BudgetedGame, FunctionGame, Game
from .shapley import exact_shapley, shapley_from_table, shapley_operator

__version__ = "0.1.0"

# name -> module that defines it; resolved on first attribute access.
_LAZY = {
    "ShaplEIG": "shapleig.method",
    "GPLeverage": "shapleig.method",
    "DesignLoop": "shapleig.loop",
    "EvaluationStore": "shapleig.store",
    "SerialEvaluator": "shapleig.evaluate",
    "ExecutorEvaluator": "shapleig.evaluate",
    "explain": "shapleig.imputer",
    "ImputerGame": "shapleig.imputer",
    "plot_explanation": "shapleig.plot",
    "ShapiqApproximator": "shapleig.shapiq_bridge",  # needs the extra shapleig[shapiq]
    "IndexOperator": "shapleig.index_esp",
    "INDICES": "shapleig.indices",
    "index_terms": "shapleig.indices",
    "exact_index_values": "shapleig.indices",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'shapleig' has no attribute {name!r}")


__all__ = [
    "BaseEstimator",
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
