"""Model-free Shapley estimators the field compares against, under one interface and budget rule.

Every estimator implements ``estimate(game, budget, *, seed=0) -> ShapleyEstimate`` and spends
budget only through the core's ``BudgetedGame``. They are entries of the one method registry
(:mod:`shapleig.registry`), registered through the ``shapleig.methods`` entry point
(:func:`register_methods`); ``get(name, **options)`` builds one by name.

>>> import shapleig_baselines as baselines
>>> baselines.get("kernelshap").name
'kernelshap'
"""

from __future__ import annotations

from typing import Any

from shapleig import registry
from shapleig.registry import Method, Prefix

# "module:Class" targets are imported on demand, so one broken module cannot hide the rest
METHODS: tuple[Method, ...] = (
    Method("permutation", "shapleig_baselines.permutation:PermutationSampling", "ApproShapley permutation sampling"),
    Method("owen", "shapleig_baselines.owen:OwenSampling", "Owen sampling (multilinear extension)"),
    Method("owen-halved", "shapleig_baselines.owen:HalvedOwenSampling", "Halved Owen sampling (antithetic complements)"),
    Method("svarm", "shapleig_baselines.svarm:SVARM", "SVARM"),
    Method("stratified-svarm", "shapleig_baselines.svarm:StratifiedSVARM", "Stratified SVARM"),
    Method("svarm-plus", "shapleig_baselines.svarm:StratifiedSVARMPlus", "S-SVARM+ (uniform sizes, without replacement)"),
    Method("lss", "shapleig_baselines.lss:LSS", "least-squares sampling (LSS)"),
    Method("s-lss", "shapleig_baselines.lss:StratifiedLSS", "stratified LSS"),
    Method("srs-lss", "shapleig_baselines.lss:SRSLSS", "stratified LSS with reuse (SRS-LSS)"),
    Method("kernelshap", "shapleig_baselines.kernelshap:KernelSHAP", "KernelSHAP (Covert-Lee closed form)"),
    Method("unbiased-kernelshap", "shapleig_baselines.kernelshap:UnbiasedKernelSHAP", "unbiased KernelSHAP"),
    Method("leverage-shap", "shapleig_baselines.leverage:LeverageSHAP", "Leverage SHAP"),
    Method("regression-msr", "shapleig_baselines.msr:RegressionMSR", "regression-adjusted MSR"),
)

NAMES: tuple[str, ...] = tuple(m.name for m in METHODS)
# "shapiq:<Approximator>" names one of shapiq's approximators (shapleig_baselines.shapiq_methods; the
# optional extra shapleig[shapiq]); not in NAMES because they exist only where shapiq is installed.
SHAPIQ_PREFIX = "shapiq:"


def _build_shapiq(approximator: str, options: dict[str, Any]) -> Any:
    from shapleig_baselines.shapiq_methods import ShapiqMethod

    return ShapiqMethod(approximator, options=options)


def _shapiq_members() -> list[str]:
    try:
        from shapleig_baselines.shapiq_methods import shapiq_index_approximators

        return list(shapiq_index_approximators())
    except ImportError:
        return []


_registered = False


def register_methods() -> None:
    """Register the baselines and the ``shapiq:`` family (the ``shapleig.methods`` entry point)."""
    global _registered
    for method in METHODS:
        registry.register(method)
    registry.register_prefix(Prefix(SHAPIQ_PREFIX, _build_shapiq,
                                    "shapiq's approximators, with the extra shapleig[shapiq]", _shapiq_members,
                                    indices=True))
    _registered = True


def estimator_class(name: str) -> type:
    """The class registered under baseline ``name``; unknown names raise ``ValueError`` listing NAMES."""
    if name not in NAMES:
        raise ValueError(f"unknown baseline {name!r}; choose one of: {', '.join(NAMES)}")
    return registry.get(name).estimator_class()


def get(name: str, **options: Any) -> Any:
    """Build the estimator registered under ``name`` with constructor ``options``.

    ``shapiq:<Approximator>`` builds :class:`shapleig_baselines.shapiq_methods.ShapiqMethod`; without
    shapiq that raises ``ImportError`` naming the extra ``shapleig[shapiq]``.

    Args:
        name: a registered method name (``NAMES``, the core's methods, or ``"shapiq:<Approximator>"``).
        **options: the estimator's constructor options.

    Returns:
        The estimator, with ``estimate(game, budget, *, seed=0) -> ShapleyEstimate``.

    Examples:
        >>> import numpy as np
        >>> from shapleig import FunctionGame
        >>> import shapleig_baselines as baselines
        >>> game = FunctionGame(lambda Z: Z @ np.arange(1.0, 5.0), n_players=4)
        >>> est = baselines.get("kernelshap").estimate(game, 16, seed=0)
        >>> np.round(est.values, 6).tolist(), est.evaluations
        ([1.0, 2.0, 3.0, 4.0], 16)
    """
    if not _registered:  # once: also when the package is used from a checkout without its entry points
        register_methods()
    return registry.build(name, **options)


__all__ = ["METHODS", "NAMES", "SHAPIQ_PREFIX", "estimator_class", "get", "register_methods"]
