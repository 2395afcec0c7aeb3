"""The ``>>>`` examples in the docstrings run and give what they show; the entry points have one.

Every module of ``shapleig`` whose docstrings hold an example is run (found by walking the
package, so a new example is tested without listing it here), plus the baselines' and the
harness's. Modules that need an extra this environment lacks (shapiq, the torch stack) are skipped.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import pytest

import shapleig
from shapleig.extras import MissingExtraError

# outside shapleig/: the baselines' ``get`` and the harness's ``run_benchmark`` (``shapleig run``)
OTHER_MODULES = ["shapleig_baselines", "shapleig_tasks.harness", "shapleig_tasks.ablation"]

# the entry points a user starts from: each shows a runnable example (issue 28)
ENTRY_POINTS = [
    "shapleig.design.estimators:ShaplEIG",
    "shapleig.design.estimators:ShaplEIG.estimate",
    "shapleig.design.loop:DesignLoop",
    "shapleig.explanation.explain:explain",
    "shapleig.explanation.explain_rows:explain_X",
    "shapleig.runs.store:EvaluationStore",
    "shapleig_baselines:get",
    "shapleig_tasks.harness:run_benchmark",
]


def _modules_with_examples() -> list[str]:
    names = ["shapleig"] + [info.name for info in pkgutil.walk_packages(shapleig.__path__, prefix="shapleig.")]
    found = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and ">>>" in open(spec.origin, encoding="utf-8").read():
            found.append(name)
    return found


MODULES = _modules_with_examples() + OTHER_MODULES


def _resolve(target: str) -> object:
    module, _, attribute = target.partition(":")
    obj: object = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except (ImportError, MissingExtraError) as exc:  # shapiq or the torch stack: an extra this leg lacks
        pytest.skip(f"{name}: {exc}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


@pytest.mark.parametrize("target", ENTRY_POINTS)
def test_entry_points_show_an_example(target: str) -> None:
    doc = inspect.getdoc(_resolve(target)) or ""
    assert "Examples:" in doc or "Example:" in doc, f"{target} has no Examples section"
    assert ">>>" in doc, f"{target}'s Examples section runs nothing"
