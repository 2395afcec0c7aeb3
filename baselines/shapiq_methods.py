"""shapiq's Shapley-value approximators as methods of this project (``shapiq:PolySHAP``, ...).

:class:`ShapiqMethod` runs one of shapiq's ``SV_APPROXIMATORS`` under this project's interface and
budget rule: every value goes through the ``BudgetedGame`` (a distinct coalition is charged once,
nothing past the budget is evaluated), the seed becomes shapiq's ``random_state``, and the order-1
entries of the returned ``InteractionValues`` are the estimate. Needs ``shapleig[shapiq]``.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.runs.budget import BudgetedGame
from shapleig.seeding import spawn_seeds

# Options that make an approximator estimate Shapley values where its own defaults do not
# (shapiq's ProxySPEX defaults to k-SII of order 2; RegressionMSR has no default index).
SV_DEFAULTS: dict[str, dict[str, Any]] = {
    "ProxySPEX": {"index": "SV", "max_order": 1},
    "RegressionMSR": {"index": "SV"},
}
# Set from the game and the seed, never by the user.
RESERVED = ("n", "random_state")
# LightGBM/XGBoost surrogates inside some approximators take a signed 32-bit seed.
_MAX_RANDOM_STATE = 2**31


def _require_bridge() -> None:
    """Import the bridge before shapiq: without shapiq >= 1.8 it raises the ImportError that names
    the extra ``shapleig[shapiq]`` (a bare ``import shapiq`` error would not)."""
    import shapleig.interop.shapiq_bridge  # noqa: F401


def shapiq_approximators() -> dict[str, type]:
    """Name -> class of every usable shapiq Shapley-value approximator (placeholders of missing
    shapiq extras left out). Raises ``ImportError`` naming ``shapleig[shapiq]`` without shapiq."""
    # isort: off
    _require_bridge()  # first: without shapiq >= 1.8 it raises the ImportError that names the extra
    from shapiq.approximator import SV_APPROXIMATORS
    # isort: on

    return {cls.__name__: cls for cls in SV_APPROXIMATORS if not hasattr(cls, "_import_error")}


def shapiq_missing_extras() -> dict[str, str]:
    """Name -> shapiq's own message for each approximator whose shapiq extra is not installed
    (e.g. ``SPEX``: ``pip install 'shapiq[sparse]'``)."""
    _require_bridge()
    from shapiq.approximator import SV_APPROXIMATORS

    return {cls.__name__: str(cls._import_error) for cls in SV_APPROXIMATORS if hasattr(cls, "_import_error")}


def shapiq_index_approximators() -> dict[str, type]:
    """Name -> class of every shapiq approximator of any index (SV, SII/k-SII, STII, FSII, FBII)."""
    import importlib

    _require_bridge()

    approx = importlib.import_module("shapiq.approximator")  # after the bridge's check of the extra
    out: dict[str, type] = {}
    for name in ("SV_APPROXIMATORS", "SII_APPROXIMATORS", "STII_APPROXIMATORS", "FSII_APPROXIMATORS",
                 "FBII_APPROXIMATORS", "SI_APPROXIMATORS"):
        for cls in getattr(approx, name, ()):
            if not hasattr(cls, "_import_error"):
                out[cls.__name__] = cls
    return out


def _classes(options: dict[str, Any] | None) -> dict[str, type]:
    """Shapley-value approximators, or every approximator when ``options`` ask for another index."""
    if (options or {}).get("index", "SV") != "SV":
        return shapiq_index_approximators()
    return shapiq_approximators()


def shapiq_random_state(seed: int) -> int:
    """shapiq's ``random_state`` for this project's seed: the seed itself when it fits in 31 bits
    (so ``seed=k`` reproduces shapiq's ``random_state=k``), else a 31-bit seed derived from it."""
    return seed if seed < _MAX_RANDOM_STATE else spawn_seeds(seed, 1)[0] % _MAX_RANDOM_STATE


class ShapiqMethod(BaseEstimator):
    """shapiq's approximator ``approximator`` (a class name, e.g. "PolySHAP") with ``options``
    (constructor keywords other than ``n`` and ``random_state``, checked against its signature)."""

    name: ClassVar[str] = "shapiq"
    # a plain attribute here: shadows BaseEstimator's ``options`` property (the GP arms' options
    # object), which has no setter
    options: dict[str, Any] | None = None

    def __init__(self, approximator: str = "KernelSHAP", *, options: dict[str, Any] | None = None) -> None:
        classes = _classes(options if isinstance(options, dict) else None)
        missing = shapiq_missing_extras()
        if approximator not in classes and approximator in missing:
            raise ImportError(f"shapiq approximator {approximator!r} is not usable: {missing[approximator]}")
        if approximator not in classes:
            raise ValueError(
                f"unknown shapiq approximator {approximator!r}; choose one of: {', '.join(sorted(classes))}"
            )
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        _check_options(classes[approximator], approximator, _accepted(classes[approximator], options or {}))
        self.approximator = approximator
        self.options = options

    @property
    def index(self) -> str:
        """The index estimated ("SV" unless ``options`` ask for another)."""
        return (self.options or {}).get("index", "SV")

    @property
    def max_order(self) -> int | None:
        """The order asked for in ``options`` (None: the index's own)."""
        order = (self.options or {}).get("max_order")
        return None if order is None or self.index in ("SV", "BV") else int(order)

    @property
    def label(self) -> str:
        return f"shapiq:{self.approximator}"

    def build(self, n_players: int, seed: int) -> Any:
        """The shapiq approximator for ``n_players`` players seeded from ``seed``."""
        cls = _classes(self.options)[self.approximator]
        kwargs = _accepted(cls, {**SV_DEFAULTS.get(self.approximator, {}), **(self.options or {})})
        approx = cls(n=n_players, random_state=shapiq_random_state(seed), **kwargs)
        wanted = (self.options or {}).get("index")
        if wanted is not None and approx.index != wanted:
            raise ValueError(f"shapiq:{self.approximator} estimates {approx.index!r}, not {wanted!r}")
        return approx

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        from shapleig.interop.shapiq_bridge import (
            SHAPIQ_VERSION,
            from_interaction_values,
        )

        approx = self.build(game.n_players, seed)
        iv = approx.approximate(budget=game.remaining, game=game)
        est = from_interaction_values(iv, method=self.label)
        est.info.update(shapiq_version=SHAPIQ_VERSION, random_state=shapiq_random_state(seed))
        return est


def _accepted(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without ``index`` for approximators of one fixed index (e.g. RegressionFSII),
    which take no ``index`` argument (:meth:`ShapiqMethod.build` checks that index instead), and
    without ``max_order=1`` for order-1 classes that take no ``max_order`` (e.g. SVARM)."""
    params = inspect.signature(cls.__init__).parameters
    drop = {"index"} if "index" not in params else set()
    if "max_order" not in params and options.get("max_order") == 1:  # Shapley-value classes are order 1
        drop.add("max_order")
    return {k: v for k, v in options.items() if k not in drop}


def _check_options(cls: type, name: str, options: dict[str, Any]) -> None:
    reserved = sorted(set(options) & set(RESERVED))
    if reserved:
        raise ValueError(f"shapiq:{name}: {reserved} are set from the game and the seed, not as options")
    # named parameters only: shapiq's approximators swallow unknown **kwargs, so a typo would be
    # silently ignored there
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    params = inspect.signature(cls.__init__).parameters
    known = [n for n, p in params.items() if n not in ("self", *RESERVED) and p.kind not in skip]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"shapiq:{name} has no option(s) {unknown}; its options: {known}")


__all__ = ["SV_DEFAULTS", "ShapiqMethod", "shapiq_approximators", "shapiq_index_approximators", "shapiq_random_state"]
