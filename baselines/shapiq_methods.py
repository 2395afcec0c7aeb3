"""shapiq's approximators as methods of this project (``shapiq:PolySHAP``, ``shapiq:KernelSHAPIQ``, ...).

:class:`ShapiqMethod` runs any approximator of shapiq (every usable class of
``shapiq.approximator``: the Shapley-value ones, and those of BV and the interaction indices) under
this project's interface and budget rule: every value goes through the ``BudgetedGame`` (a
distinct coalition is charged once, nothing past the budget is evaluated), the seed becomes
shapiq's ``random_state``, and the returned ``InteractionValues`` become the estimate. The index and
order come from the options (``index=``, ``max_order=``; the harness's ``--index`` and
``--max-order`` set both); shapiq's constructor gets them as its own classes take them. A
combination this project cannot hold (an order other than 1 for SV or BV, an index it does not
estimate, an approximator that estimates only the top order of FSII) is refused when the method is
built, before anything is evaluated. Needs ``shapleig[shapiq]``.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.indices import check_index, get_index
from shapleig.runs.budget import BudgetedGame
from shapleig.seeding import spawn_seeds

# Set from the game, the seed and the index, never as approximator options.
RESERVED = ("n", "random_state")
# LightGBM/XGBoost surrogates inside some approximators take a signed 32-bit seed.
_MAX_RANDOM_STATE = 2**31
# players of the dry-run build that checks an approximator's options and index at construction
_PROBE_PLAYERS = 4


def _require_bridge() -> None:
    """Import the bridge before shapiq: without shapiq >= 1.8 it raises the ImportError that names the
    extra ``shapleig[shapiq]`` (a bare ``import shapiq`` error would not)."""
    import shapleig.interop.shapiq_bridge  # noqa: F401


def _all_classes() -> dict[str, type]:
    """Name -> class of every approximator class shapiq exports (placeholders of missing extras included)."""
    # isort: off
    _require_bridge()  # first: without shapiq >= 1.8 it raises the ImportError that names the extra
    import shapiq.approximator as approximators
    # isort: on

    out: dict[str, type] = {}
    for name in approximators.__all__:
        cls = getattr(approximators, name, None)
        if inspect.isclass(cls) and issubclass(cls, approximators.Approximator) and cls is not approximators.Approximator:
            out[name] = cls
    return out


def shapiq_approximators(index: str | None = "SV") -> dict[str, type]:
    """Name -> class of every usable shapiq approximator of ``index`` (its ``valid_indices``; None:
    of any index), placeholders of missing shapiq extras left out. Raises ``ImportError`` naming
    ``shapleig[shapiq]`` without shapiq."""
    return {name: cls for name, cls in _all_classes().items()
            if not hasattr(cls, "_import_error") and (index is None or index in getattr(cls, "valid_indices", ()))}


def shapiq_index_approximators() -> dict[str, type]:
    """Name -> class of every usable shapiq approximator, whatever its indices."""
    return shapiq_approximators(None)


def shapiq_missing_extras() -> dict[str, str]:
    """Name -> shapiq's own message for each approximator whose shapiq extra is not installed
    (e.g. ``SPEX``: ``pip install 'shapiq[sparse]'``)."""
    return {name: str(cls._import_error) for name, cls in _all_classes().items() if hasattr(cls, "_import_error")}


def shapiq_random_state(seed: int) -> int:
    """shapiq's ``random_state`` for this project's seed: the seed itself when it fits in 31 bits
    (so ``seed=k`` reproduces shapiq's ``random_state=k``), else a 31-bit seed derived from it."""
    return seed if seed < _MAX_RANDOM_STATE else spawn_seeds(seed, 1)[0] % _MAX_RANDOM_STATE


class ShapiqMethod(BaseEstimator):
    """shapiq's approximator ``approximator`` (a class name, e.g. "PolySHAP") with ``options``
    (constructor keywords other than ``n`` and ``random_state``, checked against its signature;
    ``index`` and ``max_order`` choose the index, "SV" of order 1 by default)."""

    name: ClassVar[str] = "shapiq"
    # a plain attribute here: shadows BaseEstimator's ``options`` property (the GP arms' options
    # object), which has no setter
    options: dict[str, Any] | None = None

    def __init__(self, approximator: str = "KernelSHAP", *, options: dict[str, Any] | None = None) -> None:
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        usable, missing = shapiq_index_approximators(), shapiq_missing_extras()
        if approximator not in usable and approximator in missing:
            raise ImportError(f"shapiq approximator {approximator!r} is not usable: {missing[approximator]}")
        if approximator not in usable:
            raise ValueError(
                f"unknown shapiq approximator {approximator!r}; choose one of: {', '.join(sorted(usable))}"
            )
        cls = usable[approximator]
        self.approximator = approximator
        self.options = options
        index, order = self.index, self.max_order  # check_index: an index or order not estimated here is refused
        if index not in getattr(cls, "valid_indices", ()):
            able = sorted(shapiq_approximators(index))
            raise ValueError(f"shapiq:{approximator} does not estimate index {index!r} (its indices: "
                             f"{', '.join(cls.valid_indices)}); for {index!r} use one of: {', '.join(able)}")
        _check_options(cls, approximator, {k: v for k, v in self._kwargs(cls).items() if k != "index"})
        _probe(self._kwargs(cls), cls, approximator, index, order)

    @property
    def index(self) -> str:
        """The index estimated ("SV" unless ``options`` ask for another)."""
        return check_index((self.options or {}).get("index", "SV"))[0]

    @property
    def max_order(self) -> int:
        """The order estimated: 1 for SV and BV, ``max_order`` (default 2) for the interaction indices.

        For a Shapley-value-only approximator (PolySHAP, kADDSHAP), ``max_order`` is an option of its
        own surrogate and is passed to it as it is."""
        order = None if _value_only(self._class()) else (self.options or {}).get("max_order")
        return check_index(self.index, order)[1]

    @property
    def label(self) -> str:
        return f"shapiq:{self.approximator}"

    def _class(self) -> type:
        return shapiq_index_approximators()[self.approximator]

    def _kwargs(self, cls: type) -> dict[str, Any]:
        """Constructor keywords: the options, with index and max_order set where the class takes them.

        An interaction approximator gets the index's order (1 for SV and BV, as shapiq's benchmark
        builds them); a Shapley-value-only class keeps its own ``max_order`` (a surrogate setting),
        and ``max_order=1`` is dropped for one that takes none (the harness asks it for BV)."""
        params = inspect.signature(cls.__init__).parameters
        kwargs = {k: v for k, v in (self.options or {}).items() if k != "index"}
        if "index" in params:
            kwargs["index"] = self.index
        if not _value_only(cls):
            kwargs.pop("max_order", None)
            if "max_order" in params:
                kwargs["max_order"] = self.max_order
        elif "max_order" not in params and kwargs.get("max_order") == 1:
            kwargs.pop("max_order")
        return kwargs

    def build(self, n_players: int, seed: int) -> Any:
        """The shapiq approximator for ``n_players`` players seeded from ``seed``."""
        cls = self._class()
        return cls(n=n_players, random_state=shapiq_random_state(seed), **self._kwargs(cls))

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        from shapleig.interop.shapiq_bridge import (
            SHAPIQ_VERSION,
            from_interaction_values,
        )

        approx = self.build(game.n_players, seed)
        iv = approx.approximate(budget=game.remaining, game=game)
        if self.index == "SV" and iv.index == "kADD-SHAP":
            # kADDSHAP (a Shapley-value approximator in shapiq's SV_APPROXIMATORS) reports its k-additive
            # surrogate; its singletons are the Shapley values, the higher orders are the surrogate's
            iv = iv.get_n_order(min_order=0, max_order=1)
            iv.index = "SV"
        est = from_interaction_values(iv, method=self.label, index=self.index)
        if est.max_order != self.max_order:  # the values have order 1; the interactions every order up to max_order
            raise ValueError(f"shapiq:{self.approximator} returned order {est.max_order} for index "
                             f"{self.index!r}, not {self.max_order}")
        est.info.update(shapiq_version=SHAPIQ_VERSION, random_state=shapiq_random_state(seed))
        return est


def _value_only(cls: type) -> bool:
    """Whether ``cls`` estimates values only (SV, BV; kADD-SHAP's surrogate): its ``max_order`` is its own."""
    return not set(getattr(cls, "valid_indices", ())) - {"SV", "BV", "kADD-SHAP"}


def _probe(kwargs: dict[str, Any], cls: type, name: str, index: str, order: int) -> None:
    """Build the approximator once for a few players: shapiq's own checks of the options and the index
    run now, before anything is evaluated; an approximator that would estimate the top order only
    (the pairs without the singletons, e.g. SHAP-IQ for FSII) is refused."""
    try:
        built = cls(n=max(_PROBE_PLAYERS, order), random_state=0, **kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"shapiq:{name} cannot estimate {index!r} of order {order}: {exc}") from None
    if order > 1 and (getattr(built, "top_order", False) or getattr(built, "min_order", 0) > 1):
        raise ValueError(f"shapiq:{name} estimates only the top order of {index!r}, not its lower orders; "
                         f"a ShapleyEstimate holds every order: use another approximator for {index!r}")
    if get_index(index).order == 1 and not _value_only(cls) and getattr(built, "max_order", 1) != 1:
        raise ValueError(f"shapiq:{name} would estimate order {built.max_order} for {index!r}")


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


__all__ = ["ShapiqMethod", "shapiq_approximators", "shapiq_index_approximators", "shapiq_missing_extras",
           "shapiq_random_state"]
