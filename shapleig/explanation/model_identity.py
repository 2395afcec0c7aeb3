"""What identifies a model for an evaluation store: its fitted state, read by the kind of model.

:class:`~shapleig.explanation.imputer.ImputerGame` calls a prediction function; two models of the
same class give other values, so the game's identity (:mod:`shapleig.games.identity`) must cover
what the model learned. :func:`predictor_identity` finds the object whose state computes the
predictions (a bound method's model, a torch module) and reads it by kind
(:func:`shapleig.games.model_identity.fitted_model_identity`: a LightGBM model string, a
scikit-learn estimator's parameters and fitted attributes, a torch module's tensors, with the
method called and the package's version). Python code (a function, a lambda, a
``functools.partial``, a user class's object or bound method) is read by its content, as for
:class:`~shapleig.games.game.FunctionGame` (code, closure, globals, attributes; a model held in a
closure or attribute is digested with it). A fitted object of any other installed library
(xgboost, scipy, ONNX, ...) is *opaque*, and a store refuses it unless an explicit ``game_id``
names the model.
"""

from __future__ import annotations

import types
from typing import Any

from shapleig.explanation.torch_predict import TorchPredict
from shapleig.games.identity import function_identity, is_library
from shapleig.games.model_identity import fitted_model_identity, is_code


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
    if is_code(owner) or not is_library(type(owner)):
        return function_identity(predict)  # Python code (or a library's plain function): by content
    return fitted_model_identity(owner, method)
