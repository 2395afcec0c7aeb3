"""What identifies a model for an evaluation store: its fitted state, read by the kind of model.

:class:`~shapleig.explanation.imputer.ImputerGame` calls a prediction function; two models of the
same class give other values, so the game's identity (:mod:`shapleig.games.identity`) must cover
what the model learned. :func:`predictor_identity` reads it by kind:

- a LightGBM ``Booster``: its model string (``model_to_string()``, every tree and the categories)
  and ``best_iteration``; an ``LGBMModel`` (``LGBMRegressor``, ...): its parameters, its booster's
  model string and its other fitted attributes;
- a scikit-learn estimator: ``get_params()`` one component per parameter, and every other
  attribute of its state (the fitted ones: ``coef_``, ``tree_``, ``_fit_X``, ...);
- a torch ``nn.Module``: every tensor of its ``state_dict`` (and non-persistent buffers), its
  modules' other attributes (sizes, ``training``, hooks) and the code of user-defined module classes;
- Python code (a function, a lambda, a ``functools.partial``, a user class's object or bound
  method): its content, as for :class:`~shapleig.games.game.FunctionGame` (code, closure, globals,
  attributes; a model held in a closure or attribute is digested with it). A user's subclass of a
  library model is user code: its method's code and its object's state, class body included (so
  an edited ``predict`` is another model);

plus the method called (``predict`` / ``predict_proba`` / ``decision_function``) and the version
of the package. A fitted object of any other installed library (xgboost, scipy, ONNX, ...) may
keep its state where the identity cannot see it: its identity is *opaque*, and a store refuses it
unless an explicit ``game_id`` names the model. torch is imported only for a torch module.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from shapleig.explanation.torch_predict import TorchPredict, from_package, is_torch_module
from shapleig.games.identity import (
    digest_value,
    function_identity,
    is_library,
    object_state,
    package_version,
    qualname,
    show_value,
)

PREFIX = "model."


def _package(obj: Any) -> str:
    return (type(obj).__module__ or "").split(".")[0]


def _owner(predict: Any) -> tuple[Any, str | None]:
    """The object whose state computes ``predict``'s values and the method called on it (None for a plain function).

    A bound method's object, the module of a ``TorchPredict``, or ``predict``.
    """
    if isinstance(predict, TorchPredict):
        return predict.torch_module, "forward"
    owner = getattr(predict, "__self__", None)
    if isinstance(predict, (types.MethodType, types.BuiltinMethodType)) and owner is not None \
            and not isinstance(owner, types.ModuleType):
        return owner, getattr(predict, "__name__", "?")
    return predict, None


def _is_code(obj: Any) -> bool:
    """A function rather than a fitted object.

    A Python function, a partial, a class, a built-in, a ufunc, or a library's function wrapped in a
    callable object (numpy's dispatchers).
    """
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, functools.partial, type, np.ufunc)):
        return True
    return isinstance(getattr(obj, "__qualname__", None), str) and is_library(obj)  # instances have none


def predictor_identity(predict: Any) -> dict[str, str]:
    """Identity components of a prediction function (see the module docstring).

    Keys start with ``model.`` for a model read by kind (``model.string``, ``model.param.alpha``,
    ``model.fitted.coef_``, ``model.state_dict.weight``, ``model.method``, ``model.version``) and
    with ``fn.`` for Python code; ``opaque`` says what could not be read.

    Args:
        predict: the prediction function (a bound model method, a torch module, a function, ...).

    Returns:
        ``{component: text}`` for evaluation stores.
    """
    owner, method = _owner(predict)
    if _is_code(owner) or not is_library(type(owner)):
        return function_identity(predict)  # Python code (or a library's plain function): by content
    opaque: list[str] = []
    out = {f"{PREFIX}class": qualname(type(owner)), f"{PREFIX}version": package_version(type(owner).__module__)}
    if method is not None:
        out[f"{PREFIX}method"] = method
    if from_package(owner, "lightgbm") and callable(getattr(owner, "model_to_string", None)):
        out.update(_booster(owner, opaque))
    elif from_package(owner, "sklearn") and callable(getattr(owner, "get_params", None)):
        out.update(_estimator(owner, opaque))
    elif is_torch_module(owner):
        out.update(_torch(owner, opaque))
    else:
        opaque.append(f"the model ({qualname(type(owner))}): shapleig reads the fitted state of LightGBM, "
                      f"scikit-learn and torch models and of Python code, not of {_package(owner)} objects; "
                      f"give game_id= naming this model and its version")
    if opaque:
        out["opaque"] = "; ".join(opaque)
    return out


def _booster(booster: Any, opaque: list[str]) -> dict[str, str]:
    """A LightGBM Booster.

    Every tree (``num_iteration=-1``) and the iteration ``predict`` stops at (``best_iteration``; 0
    and -1 both mean every tree).
    """
    best = getattr(booster, "best_iteration", None)
    return {f"{PREFIX}string": show_value(booster.model_to_string(num_iteration=-1), "model string", opaque),
            f"{PREFIX}best_iteration": str(best) if isinstance(best, int) and best > 0 else "all trees"}


def _estimator(estimator: Any, opaque: list[str]) -> dict[str, str]:
    """A scikit-learn estimator (LightGBM's ``LGBMModel`` too): its parameters and the rest of its state.

    A fitted LightGBM booster by its model string.
    """
    params = estimator.get_params(deep=False)
    out = {f"{PREFIX}param.{k}": show_value(v, f"model parameter {k}", opaque) for k, v in sorted(params.items())}
    state = object_state(estimator) or {}
    for key, value in sorted(state.items(), key=lambda kv: str(kv[0])):
        if key in params:
            continue
        if from_package(value, "lightgbm") and callable(getattr(value, "model_to_string", None)):
            out.update(_booster(value, opaque))
            continue
        out[f"{PREFIX}fitted.{key}"] = show_value(value, f"model fitted {key}", opaque)
    return out


def _torch(module: Any, opaque: list[str]) -> dict[str, str]:
    """A torch module: its tensors, the other attributes of every submodule, and user classes' code."""
    state = module.state_dict()
    out = {f"{PREFIX}state_dict.{name}": show_value(t, f"model state_dict {name}", opaque) for name, t in state.items()}
    for name, buffer in module.named_buffers():
        if name not in state:  # non-persistent buffers are left out of state_dict but still computed with
            out[f"{PREFIX}buffer.{name}"] = show_value(buffer, f"model buffer {name}", opaque)
    skip = ("_parameters", "_buffers", "_modules")
    layout = [(name, qualname(type(m)), {k: v for k, v in vars(m).items() if k not in skip})
              for name, m in module.named_modules()]
    out[f"{PREFIX}structure"] = f"#{digest_value(layout, 'model structure', opaque)[:12]}"
    classes = sorted({type(m) for m in module.modules() if not is_library(type(m))}, key=qualname)
    if classes:  # forward() of user-defined modules
        out[f"{PREFIX}class.code"] = f"#{digest_value(classes, 'model classes', opaque)[:12]}"
    return out
