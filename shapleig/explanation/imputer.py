"""The interventional (marginal) imputer game of one prediction and the model-prediction adapter."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from shapleig.errors import GameError
from shapleig.games.game import check_n_players

# Imputed rows per model call: caps the batch at ~ DEFAULT_MAX_ROWS * d * 8 bytes of float64.
DEFAULT_MAX_ROWS = 500_000


def model_predict(model: Any, output: int | None = None, predict: Callable | None = None) -> Callable:
    """The function ``float[n, d] -> float[n, ...]`` that :class:`ImputerGame` calls.

    ``predict`` wins when given. Otherwise a classifier (a model with ``predict_proba`` and
    ``classes_``, e.g. scikit-learn's or LightGBM's) uses ``predict_proba``; a binary classifier
    explains the positive class (column 1) unless ``output`` picks another column. Any other model
    uses ``predict``, a torch ``nn.Module`` is called on tensors
    (:class:`~shapleig.explanation.torch_predict.TorchPredict`), and a plain
    callable is called as it is. Multi-output predictions need ``output`` (checked by
    :class:`ImputerGame` on the explained row).

    Args:
        model: a fitted model (scikit-learn, LightGBM, a torch ``nn.Module``, ...) or a callable.
        output: column of a multi-output prediction (binary classifiers: default 1, the positive class).
        predict: the prediction function to use as it is; None: derived from ``model``.

    Returns:
        the prediction function.
    """
    if predict is not None:
        if not callable(predict):
            raise GameError(f"predict must be callable, got {type(predict).__name__}")
        return predict
    if hasattr(model, "predict_proba") and hasattr(model, "classes_"):
        return model.predict_proba
    if hasattr(model, "predict"):
        return model.predict
    from shapleig.explanation.torch_predict import TorchPredict
    from shapleig.games.model_identity import is_torch_module

    if is_torch_module(model):
        return TorchPredict(model)
    if callable(model):
        return model
    raise GameError(
        f"cannot explain a {type(model).__name__}: pass a model with predict / predict_proba, "
        "a callable float[n, d] -> float[n], or predict=..."
    )


class ImputerGame:
    """The interventional imputer game of ``predict`` at ``x`` over a background sample.

    ``game(Z)`` for ``Z: bool[m, d]`` returns ``float64[m]``: ``v(S) = mean_b f(x_S, b_{-S})``.
    The output is validated once on ``x`` at construction, before any coalition is evaluated.

    Args:
        predict: ``float[n, d] -> float[n]`` (or ``[n, k]`` with ``output`` choosing a column).
        background: ``[n_bg, d]`` array or pandas DataFrame (column names and dtypes are kept, so the model
            receives the same kind of input it was fitted on).
        x: the explained instance: ``[d]``, ``[1, d]``, a pandas Series or a one-row DataFrame.
        output: column of a multi-output prediction (a binary classifier's ``predict_proba`` defaults to
            column 1, the positive class).
        max_rows: imputed rows per model call; coalitions are batched so one call sees at most this many
            rows (at least one coalition, i.e. ``n_bg`` rows).
        feature_names: names of the d features (default: the DataFrame's columns, else ``x0..x{d-1}``).
        game_id: a name for the model's version, part of the identity in evaluation stores; needed when the
            model's fitted state cannot be read (:mod:`shapleig.explanation.model_identity`).
    """

    units = "model output units"  # of v(S) and of the values (what a trace in a store and the dashboard say)

    def __init__(
        self,
        predict: Callable,
        background: Any,
        x: Any,
        *,
        output: int | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        feature_names: list[str] | None = None,
        game_id: str | None = None,
    ) -> None:
        if not callable(predict):
            raise GameError(f"predict must be callable, got {type(predict).__name__}")
        self.predict = predict
        self.game_id = None if game_id is None else str(game_id)
        self._columns, self._dtypes = _frame_layout(background)
        self.background = _as_matrix(background, "background")
        n_bg, d = self.background.shape
        if n_bg == 0:
            raise GameError("background needs at least one row")
        self.x = _as_row(x, d, self._columns)
        self.n_players = check_n_players(d)
        self.max_rows = max(int(max_rows), n_bg)
        self.calls = 0
        names = feature_names if feature_names is not None else (
            _display_names(list(self._columns)) if self._columns is not None else None)
        if names is not None and len(names) != d:
            raise GameError(f"{len(names)} feature names for {d} features")
        self.feature_names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(d)]
        self.output = self._check_output(output)

    def _check_output(self, output: int | None) -> int | None:
        """Probe the model on ``x``: decide the output column and fail early on a bad shape."""
        raw = np.asarray(self.predict(self._model_input(self.x[None, :])))
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        if raw.ndim == 1 and raw.shape[0] == 1:
            if output not in (None, 0):
                raise GameError(f"output={output} given but the model returns one value per row")
            return None
        if raw.ndim != 2 or raw.shape[0] != 1:
            raise GameError(f"the model returned shape {raw.shape} for one row; expected (1,) or (1, k)")
        k = raw.shape[1]
        if output is None:
            if k != 2:
                raise GameError(f"the model returns {k} outputs per row: choose one with output=0..{k - 1}")
            output = 1  # binary classifier: probability of the positive class
        if isinstance(output, bool) or not isinstance(output, (int, np.integer)) or not 0 <= output < k:
            raise GameError(f"output must be an integer in 0..{k - 1}, got {output!r}")
        return int(output)

    def _model_input(self, rows: np.ndarray) -> Any:
        if self._columns is None:
            return rows
        import pandas as pd  # only when the background was a DataFrame

        # dtypes by position (a dict keyed by labels would merge 1 and 1.0), then the labels as they were
        frame = pd.DataFrame(rows).astype(dict(enumerate(self._dtypes)))
        frame.columns = self._columns
        return frame

    def predict_rows(self, rows: np.ndarray) -> np.ndarray:
        """The explained output of the model on ``rows`` (``[n, d]``): ``float64[n]``.

        Args:
            rows: ``[n, d]`` rows.

        Returns:
            ``float64[n]``, the explained output.
        """
        self.calls += 1
        raw = np.asarray(self.predict(self._model_input(rows)), dtype=np.float64)
        if self.output is not None:
            raw = raw[:, self.output]
        elif raw.ndim == 2:
            raw = raw[:, 0]
        return raw

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """``v(S) = mean_b f(x_S, b_{-S})`` of ``bool[m, d]`` coalitions: ``float64[m]``."""
        Z = np.asarray(coalitions, dtype=bool)
        if Z.ndim != 2 or Z.shape[1] != self.n_players:
            raise GameError(f"coalitions must be bool[m, {self.n_players}], got shape {Z.shape}")
        n_bg, d = self.background.shape
        out = np.empty(Z.shape[0])
        step = max(1, self.max_rows // n_bg)
        for start in range(0, Z.shape[0], step):
            z = Z[start:start + step]
            # [m, n_bg, d]: x on the coalition's features, each background row elsewhere
            rows = np.where(z[:, None, :], self.x[None, None, :], self.background[None, :, :])
            pred = self.predict_rows(rows.reshape(-1, d))
            out[start:start + z.shape[0]] = pred.reshape(z.shape[0], n_bg).mean(axis=1)
        return out

    # counters the evaluation worker adds back when the game runs in another process
    # (``SerialEvaluator(timeout=...)``), so ``calls`` counts the model calls made there too
    process_counters = ("calls",)

    def identity(self) -> dict[str, str]:
        """Identity components for evaluation stores (:mod:`shapleig.games.identity`).

        The model's fitted state and the method called
        (:func:`~shapleig.explanation.model_identity.predictor_identity`),
        the output read, the background rows, the instance explained, the frame's column labels and
        dtypes, and the ``game_id``.

        Returns:
            ``{component: text}`` for evaluation stores.
        """
        from shapleig.explanation.model_identity import predictor_identity
        from shapleig.games.identity import digest_value

        out = predictor_identity(self.predict)
        out.update({"output": str(self.output), "background": digest_value(self.background, "background"),
                    "x": digest_value(self.x, "x")})
        if self._columns is not None:
            out["columns"] = repr(list(self._columns))
            out["dtypes"] = repr([repr(t) for t in self._dtypes])
        if self.game_id is not None:
            out["game_id"] = self.game_id
        return out

    def __repr__(self) -> str:
        return f"ImputerGame(n_players={self.n_players}, n_background={self.background.shape[0]})"


def _frame_layout(data: Any) -> tuple[Any, list | None]:
    """The column labels (a pandas ``Index``, labels as they are) and dtypes of a DataFrame.

    ``(None, None)`` for anything else. Duplicate labels are refused: pandas treats equal labels
    (``"a"`` twice, or ``0`` and ``0.0``) as one column, so the model would be fed the wrong one.
    """
    if hasattr(data, "columns") and hasattr(data, "dtypes") and getattr(data, "ndim", 0) == 2:
        if data.columns.has_duplicates:
            labels = list(data.columns)
            twice = [labels[i] for i in np.flatnonzero(data.columns.duplicated())]
            raise GameError(f"the background has duplicate column labels {twice!r} (pandas takes equal labels such "
                            f"as 0 and 0.0 for one column): give every feature a distinct label")
        return data.columns, list(data.dtypes)
    return None, None


def _display_names(labels: list[Any]) -> list[str]:
    """Feature names for results and plots.

    ``str(label)``, or ``repr`` for all when two labels would read the same (``1`` and ``"1"``).
    """
    names = [str(c) for c in labels]
    return names if len(set(names)) == len(names) else [repr(c) for c in labels]


def _as_matrix(data: Any, what: str) -> np.ndarray:
    columns, _ = _frame_layout(data)
    if columns is not None:
        from pandas.api.types import (  # a DataFrame: pandas is loaded
            is_bool_dtype,
            is_numeric_dtype,
        )

        numeric = all(is_numeric_dtype(t) or is_bool_dtype(t) for t in data.dtypes)
        # categorical or string columns keep their values as objects; the dtypes are restored per call
        arr = data.to_numpy(dtype=np.float64 if numeric else object)
    else:
        arr = np.asarray(data)
        if arr.dtype != object:
            arr = arr.astype(np.float64)
    if arr.ndim != 2:
        raise GameError(f"{what} must be 2-D [rows, features], got shape {arr.shape}")
    return arr


def _aligned(x: Any, labels: Any, columns: Any) -> Any:
    """``x`` (a Series or a one-row DataFrame, whose labels are ``labels``) in the background's column order."""
    if labels.has_duplicates:
        raise GameError(f"x has duplicate labels {list(labels[labels.duplicated()])!r}: give every feature a distinct label")
    missing = [c for c in columns if c not in labels]
    if missing:
        raise GameError(f"x lacks the background's columns {missing!r}")
    return x[columns]


def _as_row(x: Any, d: int, columns: Any) -> np.ndarray:
    if hasattr(x, "index") and getattr(x, "ndim", 0) == 1:  # pandas Series: align on the columns
        x = _aligned(x, x.index, columns) if columns is not None else x
        x = x.to_numpy()
    elif getattr(x, "ndim", 0) == 2 and hasattr(x, "columns"):
        x = _aligned(x, x.columns, columns).to_numpy() if columns is not None else x.to_numpy()
    arr = np.asarray(x)
    if arr.dtype != object:
        arr = arr.astype(np.float64)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.shape != (d,):
        raise GameError(f"x must be one row of {d} features like the background, got shape {arr.shape}")
    return arr
