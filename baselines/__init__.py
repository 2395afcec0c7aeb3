"""Model-free Shapley estimators the field compares against, under one interface and budget rule.

Every estimator implements ``estimate(game, budget, *, seed=0) -> ShapleyEstimate`` and spends
budget only through the core's ``BudgetedGame``. ``get(name, **options)`` builds one by name.
"""

from __future__ import annotations

import importlib
from typing import Any

# registry name -> "module:Class" (imported on demand so one broken module cannot hide the rest)
_REGISTRY: dict[str, str] = {
    "permutation": "baselines.permutation:PermutationSampling",
    "owen": "baselines.owen:OwenSampling",
    "owen-halved": "baselines.owen:HalvedOwenSampling",
    "svarm": "baselines.svarm:SVARM",
    "stratified-svarm": "baselines.svarm:StratifiedSVARM",
    "svarm-plus": "baselines.svarm:StratifiedSVARMPlus",
    "lss": "baselines.lss:LSS",
    "s-lss": "baselines.lss:StratifiedLSS",
    "srs-lss": "baselines.lss:SRSLSS",
    "kernelshap": "baselines.kernelshap:KernelSHAP",
    "unbiased-kernelshap": "baselines.kernelshap:UnbiasedKernelSHAP",
    "leverage-shap": "baselines.leverage:LeverageSHAP",
    "regression-msr": "baselines.msr:RegressionMSR",
}

NAMES: tuple[str, ...] = tuple(_REGISTRY)


def estimator_class(name: str) -> type:
    """The class registered under ``name``; unknown names raise ``ValueError`` listing NAMES."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown baseline {name!r}; choose one of: {', '.join(NAMES)}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def get(name: str, **options: Any):
    """Build the estimator registered under ``name`` with constructor ``options``."""
    return estimator_class(name)(**options)


__all__ = ["NAMES", "estimator_class", "get"]
