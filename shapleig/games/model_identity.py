"""The fitted state of a model, read by the kind of model: identity components for evaluation stores.

A game that calls a fitted model (``explain``'s imputer game, a HyperSHAP surrogate) gives other
values with another model of the same class, so its identity (:mod:`shapleig.games.identity`)
must cover what the model learned. :func:`fitted_model_identity` reads it by kind:

- a LightGBM ``Booster``: its model string (``model_to_string()``, every tree and the categories)
  and ``best_iteration``; an ``LGBMModel`` (``LGBMRegressor``, ...): its parameters, its booster's
  model string and its other fitted attributes;
- a scikit-learn estimator: ``get_params()`` one component per parameter, and every other
  attribute of its state (the fitted ones: ``coef_``, ``tree_``, ``_fit_X``, ...);
- a torch ``nn.Module``: every tensor of its ``state_dict`` (and non-persistent buffers), its
  modules' other attributes (sizes, ``training``, hooks) and the code of user-defined module classes;

plus the method called and the version of the package. A fitted object of any other installed
library (xgboost, scipy, ONNX, ...) may keep its state where the identity cannot see it: its
identity is *opaque*, and a store refuses it unless an explicit ``game_id`` names the model.
torch is imported only for a torch module.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from shapleig.games.identity import (
    class_code_identity,
    digest_value,
    is_library,
    object_state,
    package_version,
    qualname,
    show_value,
)

PREFIX = "model."


def from_package(obj: Any, package: str) -> bool:
    """Whether a class of ``package`` is in ``obj``'s MRO (its module is ``package`` or below).

    Args:
        obj: any object.
        package: a top-level package name, e.g. ``"torch"``.

    Returns:
        whether a class of its MRO comes from ``package``.
    """
    return any((k.__module__ or "").split(".")[0] == package for k in type(obj).__mro__)


def is_torch_module(obj: Any) -> bool:
    """True for a ``torch.nn.Module`` (torch is imported only if the object comes from torch).

    Args:
        obj: any object.

    Returns:
        whether ``obj`` is a ``torch.nn.Module``.
    """
    if not from_package(obj, "torch"):
        return False
    import torch

    return isinstance(obj, torch.nn.Module)


def is_code(obj: Any) -> bool:
    """A function rather than a fitted object.

    A Python function, a partial, a class, a built-in, a ufunc, or a library's function wrapped in a
    callable object (numpy's dispatchers).

    Args:
        obj: any object.

    Returns:
        whether ``obj`` is code (read by content or by name) rather than a fitted model.
    """
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, functools.partial, type, np.ufunc)):
        return True
    return isinstance(getattr(obj, "__qualname__", None), str) and is_library(obj)  # instances have none


def is_library_model(obj: Any) -> bool:
    """A fitted object of an installed library that predicts (a model to read by kind, not as code).

    Args:
        obj: any object.

    Returns:
        whether ``obj`` is a library object (not code) with a ``predict`` method, or a torch module.
    """
    if is_code(obj) or not is_library(type(obj)):
        return False
    return callable(getattr(obj, "predict", None)) or is_torch_module(obj)


def fitted_model_identity(model: Any, method: str | None = None, prefix: str = PREFIX) -> dict[str, str]:
    """Identity components of a fitted model of an installed library (see the module docstring).

    Keys (after ``prefix``): ``class``, ``version``, ``method`` (when given), then ``string``,
    ``best_iteration``, ``param.<name>``, ``fitted.<attribute>``, ``state_dict.<tensor>``,
    ``buffer.<tensor>``, ``structure``, ``class.code`` by kind; ``opaque`` says what could not be read.

    Args:
        model: the fitted model (a LightGBM booster, a scikit-learn estimator, a torch module, ...).
        method: the method called on it (``predict``, ``predict_proba``, ``forward``); None: not recorded.
        prefix: prefixed to every component's name.

    Returns:
        ``{component: text}`` for evaluation stores.
    """
    opaque: list[str] = []
    out = {f"{prefix}class": qualname(type(model)), f"{prefix}version": package_version(type(model).__module__)}
    if method is not None:
        out[f"{prefix}method"] = method
    if from_package(model, "lightgbm") and callable(getattr(model, "model_to_string", None)):
        out.update(_booster(model, prefix, opaque))
    elif from_package(model, "sklearn") and callable(getattr(model, "get_params", None)):
        out.update(_estimator(model, prefix, opaque))
    elif is_torch_module(model):
        out.update(_torch(model, prefix, opaque))
    else:
        package = (type(model).__module__ or "").split(".")[0]
        opaque.append(f"the model ({qualname(type(model))}): shapleig reads the fitted state of LightGBM, "
                      f"scikit-learn and torch models and of Python code, not of {package} objects; "
                      f"give game_id= naming this model and its version")
    if opaque:
        out["opaque"] = "; ".join(opaque)
    return out


def _booster(booster: Any, prefix: str, opaque: list[str]) -> dict[str, str]:
    """A LightGBM Booster.

    Every tree (``num_iteration=-1``) and the iteration ``predict`` stops at (``best_iteration``; 0
    and -1 both mean every tree).
    """
    best = getattr(booster, "best_iteration", None)
    return {f"{prefix}string": show_value(booster.model_to_string(num_iteration=-1), "model string", opaque),
            f"{prefix}best_iteration": str(best) if isinstance(best, int) and best > 0 else "all trees"}


def _estimator(estimator: Any, prefix: str, opaque: list[str]) -> dict[str, str]:
    """A scikit-learn estimator (LightGBM's ``LGBMModel`` too): its parameters and the rest of its state.

    A fitted LightGBM booster by its model string.
    """
    params = estimator.get_params(deep=False)
    out = {f"{prefix}param.{k}": show_value(v, f"model parameter {k}", opaque) for k, v in sorted(params.items())}
    state = object_state(estimator) or {}
    for key, value in sorted(state.items(), key=lambda kv: str(kv[0])):
        if key in params:
            continue
        if from_package(value, "lightgbm") and callable(getattr(value, "model_to_string", None)):
            out.update(_booster(value, prefix, opaque))
            continue
        out[f"{prefix}fitted.{key}"] = show_value(value, f"model fitted {key}", opaque)
    if not is_library(type(estimator)):  # a user subclass: its methods compute the values too
        out.update(class_code_identity(type(estimator), prefix, opaque))
    return out


def _torch(module: Any, prefix: str, opaque: list[str]) -> dict[str, str]:
    """A torch module: its tensors, the other attributes of every submodule, and user classes' code."""
    state = module.state_dict()
    out = {f"{prefix}state_dict.{name}": show_value(t, f"model state_dict {name}", opaque) for name, t in state.items()}
    for name, buffer in module.named_buffers():
        if name not in state:  # non-persistent buffers are left out of state_dict but still computed with
            out[f"{prefix}buffer.{name}"] = show_value(buffer, f"model buffer {name}", opaque)
    skip = ("_parameters", "_buffers", "_modules")
    layout = [(name, qualname(type(m)), {k: v for k, v in vars(m).items() if k not in skip})
              for name, m in module.named_modules()]
    out[f"{prefix}structure"] = f"#{digest_value(layout, 'model structure', opaque)[:12]}"
    classes = sorted({type(m) for m in module.modules() if not is_library(type(m))}, key=qualname)
    if classes:  # forward() of user-defined modules
        out[f"{prefix}class.code"] = f"#{digest_value(classes, 'model classes', opaque)[:12]}"
    return out
