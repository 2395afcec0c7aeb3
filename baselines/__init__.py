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
# "shapiq:<Approximator>" names one of shapiq's approximators (baselines.shapiq_methods; the
# optional extra shapleig[shapiq]); not in NAMES because they exist only where shapiq is installed.
SHAPIQ_PREFIX = "shapiq:"


def estimator_class(name: str) -> type:
    """The class registered under ``name``; unknown names raise ``ValueError`` listing NAMES."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown baseline {name!r}; choose one of: {', '.join(NAMES)}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def get(name: str, **options: Any):
    """Build the estimator registered under ``name`` with constructor ``options``.

    ``shapiq:<Approximator>`` builds :class:`baselines.shapiq_methods.ShapiqMethod`; without
    shapiq that raises ``ImportError`` naming the extra ``shapleig[shapiq]``.
    """
    if name.startswith(SHAPIQ_PREFIX):
        from baselines.shapiq_methods import ShapiqMethod

        return ShapiqMethod(name[len(SHAPIQ_PREFIX):], options=options)
    return estimator_class(name)(**options)


__all__ = ["NAMES", "SHAPIQ_PREFIX", "estimator_class", "get"]
