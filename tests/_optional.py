"""Optional extras in tests: import one or skip the whole module cleanly, unless CI requires it.

``torch = import_or_skip("torch")`` at module level skips the module where the torch stack (the
extra ``shapleig[botorch]``) is missing; with ``SHAPLEIG_REQUIRE_TORCH=1`` (CI's leg with the extra)
a missing module fails instead. Single tests use the markers ``torch`` / ``shap`` (tests/conftest.py).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

from shapleig.extras import TORCH_MODULES, missing_modules

# module -> (the modules it needs, the environment variable that requires them, the extra)
EXTRAS = {
    "torch": (TORCH_MODULES, "SHAPLEIG_REQUIRE_TORCH", "botorch"),
    "shap": (("shap",), "SHAPLEIG_REQUIRE_SHAP", "shap"),
}


def import_or_skip(module: str) -> ModuleType:
    """``module`` imported, or the calling test module skipped when its extra is not installed."""
    modules, required, extra = EXTRAS[module]
    missing = missing_modules(modules)
    if missing and not os.environ.get(required):
        pytest.skip(f"needs {', '.join(missing)} (the extra shapleig[{extra}]); {required}=1 makes this a failure",
                    allow_module_level=True)
    return importlib.import_module(module)


def import_shapiq_bridge() -> ModuleType:
    """shapleig's shapiq bridge, or the calling test module skipped where shapiq (>= 1.8) is missing.

    With ``SHAPLEIG_REQUIRE_SHAPIQ=1`` (CI's Python 3.12 leg) the import error is raised instead; its
    message names the extra.
    """
    try:
        return importlib.import_module("shapleig.interop.shapiq_bridge")
    except ImportError as exc:
        if os.environ.get("SHAPLEIG_REQUIRE_SHAPIQ"):
            raise
        pytest.skip(str(exc), allow_module_level=True)
