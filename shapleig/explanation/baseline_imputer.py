"""The baseline imputer game: absent features take the values of one fixed reference row.

    v(S) = f(x_S, r_{not S})

for a reference row ``r`` (by default the background's column means). It is the interventional
imputer of :class:`~shapleig.explanation.imputer.ImputerGame` with a one-row background, so the game,
its batching, its output handling and its store identity (the same model-identity helper) are that
class's; ``v(empty) = f(r)`` is the baseline and ``v(N) = f(x)``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from shapleig.errors import GameError
from shapleig.explanation.imputer import DEFAULT_MAX_ROWS, ImputerGame


def reference_row(background: Any, reference: Any = None) -> Any:
    """The reference row.

    ``reference`` as given (a row like ``x``), else the column means of a numeric ``background`` (a
    one-row DataFrame for a DataFrame background, keeping its columns).

    Args:
        background: the background data (array or DataFrame).
        reference: the reference row; None: the column means of ``background``.

    Returns:
        the reference row (a one-row DataFrame for a DataFrame background, keeping its columns).

    Raises:
        GameError: a background with non-numeric columns and no ``reference``.
    """
    if reference is not None:
        return reference
    if hasattr(background, "columns") and hasattr(background, "dtypes"):
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        if not all(is_numeric_dtype(t) and not is_bool_dtype(t) for t in background.dtypes):
            raise GameError("the baseline imputer's default reference is the column means, which needs numeric "
                            "columns; pass imputer_options={'reference': row}")
        return background.mean(axis=0).to_frame().T.astype(background.dtypes.to_dict())
    arr = np.asarray(background)
    if arr.dtype == object or arr.ndim != 2:
        raise GameError(f"background must be a numeric [rows, features] array for the default reference, "
                        f"got dtype {arr.dtype} and shape {arr.shape}; pass imputer_options={{'reference': row}}")
    return arr.astype(np.float64).mean(axis=0)[None, :]


class BaselineImputerGame(ImputerGame):
    """``v(S) = f(x_S, r_{not S})`` for one reference row ``r``.

    Args:
        predict: ``float[n, d] -> float[n]`` (or ``[n, k]`` with ``output``).
        reference: the reference row, ``[d]``, ``[1, d]``, a Series or a one-row DataFrame (a
            DataFrame keeps its column names and dtypes for the model).
        x: the explained row.
        output: column of a multi-output prediction (as for :class:`~shapleig.explanation.imputer.ImputerGame`).
        max_rows: imputed rows per model call.
        feature_names: names of the d features.
        game_id: a name for the model's version, part of the store identity (see :class:`~shapleig.explanation.imputer.ImputerGame`).

    Examples:
        >>> import numpy as np
        >>> game = BaselineImputerGame(lambda X: X @ np.array([1.0, 2.0]), np.zeros(2), np.ones(2))
        >>> game(np.array([[False, False], [True, False], [True, True]])).tolist()
        [0.0, 1.0, 3.0]
    """

    imputer = "baseline"

    def __init__(self, predict: Callable, reference: Any, x: Any, *, output: int | None = None,
                 max_rows: int = DEFAULT_MAX_ROWS, feature_names: list[str] | None = None,
                 game_id: str | None = None) -> None:
        if getattr(reference, "ndim", None) == 1 and not hasattr(reference, "columns"):
            reference = reference.to_frame().T if hasattr(reference, "to_frame") else np.asarray(reference)[None, :]
        elif getattr(reference, "ndim", None) is None:
            reference = np.asarray(reference)[None, :]
        if getattr(reference, "shape", (0,))[0] != 1:
            raise GameError(f"the reference must be one row, got shape {reference.shape}")
        super().__init__(predict, reference, x, output=output, max_rows=max_rows, feature_names=feature_names,
                         game_id=game_id)

    def __repr__(self) -> str:
        return f"BaselineImputerGame(n_players={self.n_players})"
