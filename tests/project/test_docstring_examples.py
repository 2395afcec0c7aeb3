"""The ``>>>`` examples in the public API's docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

# modules whose docstrings carry examples (the public API: ShaplEIG, DesignLoop, the options, the
# registry, ExactShapley, ShapleyEstimate, explain, EvaluationStore, baselines.get)
MODULES = [
    "shapleig.design.acquisition",
    "shapleig.design.estimators",
    "shapleig.design.loop",
    "shapleig.design.options",
    "shapleig.registry",
    "shapleig.estimation.exact",
    "shapleig.estimation.result",
    "shapleig.explanation.explain",
    "shapleig.runs.store",
    "shapleig_baselines",
    "shapleig_tasks.ablation",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
