"""What identifies a hyperparameter-importance game for an evaluation store.

A store must never serve one study's values to another (:mod:`shapleig.games.identity`). The
identity of an HPI game covers everything that changes a value:

- the project's games (:mod:`shapleig.hpo.games`): the definition version, the study seed, the
  configuration space (ConfigSpace's JSON) and its baseline, ConfigSpace's version (its sampler
  and vector representation), the objective (:func:`objective_identity`), each tuner
  (:func:`tuner_identity`), the game's own options (samples, target) and the code of its class;
- a HyperSHAP game (:func:`hypershap_identity`): its class and HyperSHAP's version, and everything
  it holds, read by kind: a configuration space by its JSON, a configuration by its values, an
  aggregation mode by name, a fitted surrogate model by its fitted state
  (:func:`~shapleig.games.model_identity.fitted_model_identity`: scikit-learn, LightGBM, torch), a
  searcher by its sample (which its seed and size determine), HyperSHAP objects (tasks, surrogates,
  searchers, games) attribute by attribute and user subclasses with their code; everything else by
  content. shapiq's bookkeeping (cached values, a per-object id) and the searcher's memo of
  coalition values do not count.

What cannot be read (a surrogate of another library, an object that refuses to be digested) is
reported as ``opaque``, and a store refuses the game unless a ``game_id`` (HyperSHAP) or an
``objective_id`` (the project's games) names it.
"""

from __future__ import annotations

import enum
from typing import Any

from shapleig.games.identity import (
    class_code_identity,
    function_identity,
    object_state,
    package_version,
    qualname,
    show_value,
)
from shapleig.games.model_identity import fitted_model_identity, is_library_model

from .space import require_configspace, space_json

# attributes of shapiq's Game and HyperSHAP's objects that never change a coalition's value:
# cached or precomputed values (shapiq's ``game_values``, a searcher's ``coalition_cache``, v(empty)
# for normalisation), threads and printing, and ``game_id``, which shapiq derives from ``hash(self)``
BOOKKEEPING = frozenset({"n_workers", "verbose", "_precompute_flag", "game_values", "normalization_value", "game_id",
                         "empty_coalition", "grand_coalition", "_empty_coalition_value_property",
                         "_grand_coalition_value_property", "player_name_lookup", "n_players", "coalition_cache"})


def merge_identity(out: dict[str, str], parts: dict[str, str], opaque: list[str]) -> None:
    """Add the components ``parts`` to ``out``, moving its ``opaque`` entry (if any) into ``opaque``.

    Args:
        out: the components gathered so far (updated).
        parts: more components, possibly with an ``opaque`` entry.
        opaque: a list that collects the parts that could not be digested (updated).
    """
    parts = dict(parts)
    found = parts.pop("opaque", "")
    if found:
        opaque.append(found)
    out.update(parts)


def value_identity(value: Any, name: str, opaque: list[str]) -> dict[str, str]:
    """Components of one value: a library model by its fitted state, a dict key by key, else its content.

    Args:
        value: any value (a parameter of an objective or a tuner).
        name: the component's name (prefix of the components of a model or a dict).
        opaque: a list that collects the parts that could not be digested.

    Returns:
        ``{component: text}``.
    """
    if is_library_model(value):
        out: dict[str, str] = {}
        merge_identity(out, fitted_model_identity(value, None, f"{name}."), opaque)
        return out
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        out = {}
        for key, inner in sorted(value.items()):
            out.update(value_identity(inner, f"{name}.{key}", opaque))
        return out
    return {name: show_value(value, name, opaque)}


def objective_identity(objective: Any, objective_id: str | None = None) -> dict[str, str]:
    """Identity components of an HPI objective (``config -> score``), under ``objective.``.

    An objective with ``params()`` (``shapleig_tasks.hpi.CVObjective``): its class, the code of a
    user class, and each parameter (a model by its fitted state, a dict key by key); any other
    callable by content, as :func:`~shapleig.games.identity.function_identity` reads a
    ``FunctionGame``'s function (code, defaults, closure, globals, an object's attributes).
    ``objective_id`` is added as ``objective.id``; it also names what could not be read, which is
    then kept as ``objective.opaque`` instead of refusing the game.

    Args:
        objective: the objective (a callable, or an object with ``params()``).
        objective_id: an explicit identity of the objective (its data's version, say); None: none.

    Returns:
        ``{component: text}``; ``opaque`` lists what could not be read when no ``objective_id`` is given.
    """
    opaque: list[str] = []
    out: dict[str, str] = {}
    if callable(getattr(objective, "params", None)):
        out["objective.class"] = qualname(type(objective))
        out.update(class_code_identity(type(objective), "objective.", opaque))
        for key, value in objective.params().items():
            out.update(value_identity(value, f"objective.{key}", opaque))
    else:
        merge_identity(out, function_identity(objective, "objective"), opaque)
    if objective_id is not None:
        out["objective.id"] = str(objective_id)
        if opaque:  # named by the id: recorded, not refused
            out["objective.opaque"] = "; ".join(opaque)
    elif opaque:
        out["opaque"] = "; ".join(opaque)
    return out


def tuner_identity(tuner: Any, prefix: str) -> dict[str, str]:
    """Identity components of an inner tuner, under ``prefix``.

    Its class, the code of a user class (the version of an installed one), its ``params()`` (its
    state when it has none) and the version of each package it draws trials with (``packages``:
    Optuna for :class:`~shapleig.hpo.tuners.OptunaSearch`).

    Args:
        tuner: a tuner (:class:`~shapleig.hpo.tuners.RandomSearch`, :class:`~shapleig.hpo.tuners.OptunaSearch`, ...).
        prefix: prefixed to every component's name (``"tuner."``, ``"ensemble.0."``).

    Returns:
        ``{component: text}`` (with ``opaque`` when part of it could not be read).
    """
    opaque: list[str] = []
    out = {f"{prefix}class": qualname(type(tuner))}
    out.update(class_code_identity(type(tuner), prefix, opaque))
    params = tuner.params() if callable(getattr(tuner, "params", None)) else object_state(tuner)
    for key, value in sorted((params or {}).items()):
        out.update(value_identity(value, f"{prefix}{key}", opaque))
    for package in getattr(tuner, "packages", ()):
        out[f"{prefix}{package}.version"] = package_version(package)
    if opaque:
        out["opaque"] = "; ".join(opaque)
    return out


def space_identity(space: Any) -> dict[str, str]:
    """Identity components of an :class:`~shapleig.hpo.space.HPSpace`: its JSON, baseline and ConfigSpace's version.

    Args:
        space: the :class:`~shapleig.hpo.space.HPSpace` of a game.

    Returns:
        ``{"param.space", "param.baseline", "ConfigSpace.version"}`` components.
    """
    return {"param.space": show_value(space.to_json(), "space"),
            "param.baseline": show_value(space.baseline, "baseline"),
            "ConfigSpace.version": package_version("ConfigSpace")}


def hypershap_identity(game: Any) -> dict[str, str]:
    """Identity components of a HyperSHAP game (see the module docstring), under ``hypershap.``.

    Args:
        game: a HyperSHAP game (``hypershap.games.AbstractHPIGame``).

    Returns:
        ``{component: text}`` (with ``opaque`` when part of it could not be read).
    """
    walk = _HyperSHAPWalk()
    walk.part(game, "hypershap")
    walk.out["ConfigSpace.version"] = package_version("ConfigSpace")
    if walk.opaque:
        walk.out["opaque"] = "; ".join(walk.opaque)
    return walk.out


class _HyperSHAPWalk:
    """Reads a HyperSHAP game's object graph into flat components (each object once)."""

    def __init__(self) -> None:
        import hypershap
        from hypershap.surrogate_model import SurrogateModel
        from hypershap.utils import ConfigSpaceSearcher

        cs_mod = require_configspace()
        self.space_types = (cs_mod.ConfigurationSpace,)
        self.config_types = (cs_mod.Configuration,)
        self.kinds = (hypershap.games.AbstractHPIGame, hypershap.ExplanationTask, SurrogateModel, ConfigSpaceSearcher)
        self.out: dict[str, str] = {}
        self.opaque: list[str] = []
        self.seen: dict[int, str] = {}  # objects already read (a task shared by a game and its searcher)

    # complexity over budget: one branch per kind of object a HyperSHAP game holds, a flat dispatch
    def part(self, obj: Any, name: str) -> None:  # noqa: C901
        if isinstance(obj, (list, tuple)):  # surrogates of a multi-data task, an ensemble of searchers
            self.out[name] = f"{type(obj).__name__}[{len(obj)}]"
            for i, item in enumerate(obj):
                self.part(item, f"{name}.{i}")
            return
        if obj is not None and not isinstance(obj, (bool, int, float, str)):
            if id(obj) in self.seen:
                self.out[name] = f"the same object as {self.seen[id(obj)]}"
                return
            self.seen[id(obj)] = name
        if isinstance(obj, self.space_types):
            self.out[name] = show_value(space_json(obj), name)
        elif isinstance(obj, self.config_types):
            self.out[name] = show_value(dict(obj), name, self.opaque)
        elif isinstance(obj, enum.Enum):
            self.out[name] = f"{qualname(type(obj))}.{obj.name}"
        elif is_library_model(obj):
            merge_identity(self.out, fitted_model_identity(obj, None, f"{name}."), self.opaque)
        elif isinstance(obj, self.kinds):
            self.out[f"{name}.class"] = qualname(type(obj))
            self.out.update(class_code_identity(type(obj), f"{name}.", self.opaque))
            # the task first: the searcher's reference to it then reads "the same object as ...explanation_task"
            for attr, value in sorted(vars(obj).items(), key=lambda kv: (kv[0] != "explanation_task", kv[0])):
                if attr not in BOOKKEEPING:
                    self.part(value, f"{name}.{attr}")
        else:
            self.out[name] = show_value(obj, name, self.opaque)

