"""Explain many rows at once: :func:`explain_X` and its result :class:`RowsExplanation`.

Each row ``x_r`` of ``X_rows`` is explained as :func:`shapleig.explain` explains one (same imputer,
method, budget and efficiency), with one progress bar over the rows. With ``store=`` a folder, every
row's coalition values go to that folder (one evaluation store per row, ``row-00000.sqlite``, ...:
a store belongs to one game, and each row is its own game), so a killed run started again replays the
stored values of the finished rows and of the interrupted one, evaluating the model only where it
stopped. Rows are independent runs, each with its own seed: ``n_jobs=`` (joblib worker processes) or
``executor=`` (a process pool, Dask) explains several at once with the values of the sequential run
(:mod:`shapleig.explanation.row_jobs`).

**The global summary** is the mean absolute value of each term over the rows,
``G_j = (1/n) sum_r |phi_rj|``, with its uncertainty under the per-row Gaussian posteriors
``phi_rj ~ N(mu_rj, s_rj^2)`` (rows are separate runs, so independent): ``|phi_rj|`` is folded normal,

    E|phi| = s sqrt(2/pi) exp(-mu^2 / (2 s^2)) + mu (1 - 2 Phi(-mu / s)),   Var|phi| = mu^2 + s^2 - (E|phi|)^2,

so ``E G_j`` and ``Var G_j = (1/n^2) sum_r Var|phi_rj|`` are exact (closed form, no sampling; with
``s = 0`` the term is ``|mu|`` with variance 0). Methods without a posterior give the plug-in
``mean_r |mu_rj|`` and no std.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from shapleig.errors import GameError
from shapleig.estimation.result import ERROR_BAR_Z, ShapleyEstimate
from shapleig.explanation.choose_imputer import imputer_game
from shapleig.explanation.explain import check_readable_identity, default_budget, resolve_index_method
from shapleig.explanation.imputer import DEFAULT_MAX_ROWS, _as_matrix, _frame_layout, model_predict
from shapleig.explanation.row_jobs import ROW_STORE, RowJob, check_n_jobs, run_rows
from shapleig.games.game import check_budget
from shapleig.runs.timeout import check_timeout
from shapleig.seeding import UNSET, SeedLike, resolve_seed, spawn_seeds


def folded_normal_moments(mu: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``|X|`` for ``X ~ N(mu, sigma^2)``, elementwise (``sigma = 0``: ``|mu|``, 0).

    Args:
        mu: means, any shape.
        sigma: standard deviations (>= 0), the shape of ``mu``.

    Returns:
        ``(mean, variance)`` of ``|X|``, the shape of ``mu``.

    Examples:
        >>> m, v = folded_normal_moments(np.array([0.0, 3.0]), np.array([1.0, 0.0]))
        >>> [round(float(x), 6) for x in m], [round(float(x), 6) for x in v]
        ([0.797885, 3.0], [0.36338, 0.0])
    """
    from scipy.stats import norm

    mu = np.asarray(mu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    safe = np.where(sigma > 0, sigma, 1.0)
    mean = np.where(sigma > 0,
                    safe * np.sqrt(2.0 / np.pi) * np.exp(-0.5 * (mu / safe) ** 2) + mu * (1.0 - 2.0 * norm.cdf(-mu / safe)),
                    np.abs(mu))
    var = np.clip(mu**2 + sigma**2 - mean**2, 0.0, None)
    return mean, var


@dataclass
class RowsExplanation:
    """The explanations of many rows, one :class:`~shapleig.estimation.result.ShapleyEstimate` each.

    Attributes:
        estimates: one result per row, in the order of ``X_rows`` (``info["row"]`` is its position).
        data: the explained rows, ``[n, d]`` (float64, or object for non-numeric columns).
        feature_names: the d feature names.
        index: the index explained ("SV", "BV", "k-SII", ...).
        terms: the index's terms (player tuples: the features, then pairs for interaction indices).

    ``values`` / ``std`` are ``float64[n, t]`` (one column per term), ``base_values`` the baselines,
    ``predictions`` f(x_r); :meth:`summary` is the global importance, :meth:`plot` draws it,
    :meth:`to_shap` gives a ``shap.Explanation``.
    """

    estimates: list[ShapleyEstimate]
    data: np.ndarray
    feature_names: list[str]
    index: str = "SV"
    terms: list[tuple[int, ...]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.estimates)

    def __getitem__(self, row: int) -> ShapleyEstimate:
        return self.estimates[row]

    @property
    def values(self) -> np.ndarray:
        """float64[n, t]: each row's values, one column per term."""
        return np.array([est.values for est in self.estimates], dtype=np.float64).reshape(len(self), -1)

    @property
    def std(self) -> np.ndarray | None:
        """float64[n, t] posterior stds, or None when a row's method reports none."""
        if any(est.std is None for est in self.estimates):
            return None
        return np.array([est.std for est in self.estimates], dtype=np.float64).reshape(len(self), -1)

    @property
    def base_values(self) -> np.ndarray:
        """float64[n]: each row's baseline (v(empty))."""
        return np.array([est.baseline for est in self.estimates], dtype=np.float64)

    @property
    def predictions(self) -> np.ndarray:
        """float64[n]: f(x_r)."""
        return np.array([est.info["prediction"] for est in self.estimates], dtype=np.float64)

    @property
    def labels(self) -> list[str]:
        """A name per term: the feature, or "a x b" for a pair."""
        return [" x ".join(self.feature_names[i] for i in T) for T in self.terms]

    def global_importance(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(mean, std)`` of ``G_j = mean_r |phi_rj|`` per term under the rows' posteriors (module docstring).

        ``std`` is None without posteriors (``mean`` is then the plug-in ``mean_r |mu_rj|``).

        Returns:
            ``(mean, std)``, two float64[t] (``std`` None without posteriors).
        """
        values, std = self.values, self.std
        if std is None:
            return np.abs(values).mean(axis=0), None
        mean, var = folded_normal_moments(values, std)
        return mean.mean(axis=0), np.sqrt(var.sum(axis=0)) / len(self)

    def summary(self) -> Any:
        """A DataFrame, one row per term, largest first.

        Columns: ``term``, ``mean_abs`` (E G_j), ``std``, ``plugin_mean_abs`` (mean_r |mu_rj|), ``rank``.

        Returns:
            a ``pandas.DataFrame`` with columns ``term``, ``mean_abs``, ``std``, ``plugin_mean_abs``,
            ``rank``.
        """
        import pandas as pd

        mean, std = self.global_importance()
        frame = pd.DataFrame({"term": self.labels, "mean_abs": mean,
                              "std": np.full(mean.shape, np.nan) if std is None else std,
                              "plugin_mean_abs": np.abs(self.values).mean(axis=0)})
        frame = frame.sort_values("mean_abs", ascending=False, kind="stable").reset_index(drop=True)
        frame["rank"] = np.arange(1, len(frame) + 1)
        return frame

    def to_frame(self) -> Any:
        """A long DataFrame: one row per (row, term).

        Returns:
            a ``pandas.DataFrame`` with columns ``row``, ``term``, ``value``, ``std``, ``prediction``,
            ``baseline``.
        """
        import pandas as pd

        frames = []
        for est in self.estimates:
            part = est.to_frame().rename(columns={"player": "term"})
            frames.append(part.assign(row=est.info.get("row"), prediction=est.info["prediction"], baseline=est.baseline))
        return pd.concat(frames, ignore_index=True)[["row", "term", "value", "std", "prediction", "baseline"]]

    def plot(self, kind: str = "bar", *, out: Any = None, max_display: int = 12) -> Any:
        """The global importance as a matplotlib Figure, error bars ± 1.96 std with a legend, units on the axis.

        ``"bar"``: mean |value| per term, ± 1.96 std of that mean; ``"beeswarm"``: every row's value per
        feature, coloured by the feature's value, each with its ± 1.96 posterior std. The Figure is built
        without pyplot (the backend is left alone) and saved to ``out`` when given.

        Args:
            kind: ``"bar"`` or ``"beeswarm"``.
            out: a file path (or file object) to save the figure to; None: not saved.
            max_display: the most terms shown, largest first.

        Returns:
            the matplotlib ``Figure``.
        """
        from matplotlib.figure import Figure

        from shapleig.explanation.plot import add_value_legend, error_bar_label

        if kind not in ("bar", "beeswarm"):
            raise ValueError(f"kind must be 'bar' or 'beeswarm', got {kind!r}")
        mean, std = self.global_importance()
        order = np.argsort(-mean, kind="stable")[:max_display][::-1]
        fig = Figure(figsize=(7.0, 0.45 * len(order) + 1.9))
        ax = fig.add_subplot()
        labels = [self.labels[j] for j in order]
        if kind == "bar":
            ax.barh(range(len(order)), mean[order], color="#1f77b4")
            bar = None if std is None else ax.errorbar(
                mean[order], range(len(order)), xerr=ERROR_BAR_Z * std[order], fmt="none", ecolor="0.15",
                elinewidth=1, capsize=3, label=error_bar_label())
            ax.set_xlabel(f"mean |{self.index} value| over the rows (model output units)")
            add_value_legend(ax, bar, signed=False, what="mean |value|")
        else:
            values, row_std = self.values, self.std
            rng = np.random.default_rng(0)  # the jitter only: fixed, so the figure is reproducible
            bar = None
            for y, j in enumerate(order):
                colour = _feature_colour(self.data, self.terms[j])
                ys = y + rng.uniform(-0.25, 0.25, len(self))
                if row_std is not None:
                    bar = ax.errorbar(values[:, j], ys, xerr=ERROR_BAR_Z * row_std[:, j], fmt="none", ecolor="0.35",
                                      elinewidth=0.7, alpha=0.6, label=error_bar_label())
                ax.scatter(values[:, j], ys, c=colour, cmap="coolwarm", s=12, zorder=3)
            ax.axvline(0.0, color="grey", lw=0.8)
            ax.set_xlabel(f"{self.index} value per row (model output units; colour: the feature's value, "
                          f"low blue to high red)")
            if bar is not None:
                ax.legend(handles=[bar], loc="best", fontsize=8, framealpha=0.85)
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels(labels)
        ax.set_title(f"{len(self)} rows, {self.estimates[0].method if self.estimates else ''}")
        fig.tight_layout()
        if out is not None:
            fig.savefig(out)
        return fig

    def to_shap(self) -> Any:
        """The rows as a ``shap.Explanation`` (:func:`shapleig.estimation.shap_values.rows_to_shap`).

        Values ``[n, d]``, base_values, data, feature_names, the std kept beside them. Needs
        ``shapleig[shap]``.

        Returns:
            a ``shap.Explanation`` of the ``n`` rows.
        """
        from shapleig.estimation.shap_values import rows_to_shap

        return rows_to_shap(self)


def _feature_colour(data: np.ndarray, term: tuple[int, ...]) -> np.ndarray:
    """The colour of each row's point: the feature's value (rank-scaled), grey for pairs or text."""
    if len(term) != 1 or data.dtype == object:
        return np.full(data.shape[0], 0.5)
    column = data[:, term[0]].astype(np.float64)
    ranks = np.argsort(np.argsort(column, kind="stable"), kind="stable")
    return ranks / max(len(column) - 1, 1)


# argument count over budget: explain()'s keywords, row by row; the public signature
def explain_X(  # noqa: PLR0913
    model: Any,
    background: Any,
    X_rows: Any,
    *,
    budget: int | None = None,
    seed: SeedLike = UNSET,
    random_state: SeedLike = UNSET,
    method: Any = "shapleig",
    method_options: Mapping[str, Any] | None = None,
    index: str = "SV",
    store: Any = None,
    output: int | None = None,
    predict: Callable | None = None,
    feature_names: list[str] | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout: float | None = None,
    game_id: str | None = None,
    progress: bool = True,
    imputer: str = "interventional",
    imputer_options: Mapping[str, Any] | None = None,
    exact_if_cheap: bool = True,
    n_jobs: int = 1,
    executor: Executor | None = None,
) -> RowsExplanation:
    """Explain every row of ``X_rows`` (the arguments of :func:`shapleig.explain`, for many rows).

    Args:
        model: as for :func:`shapleig.explain`.
        background: ``[n_bg, d]`` rows standing in for absent features.
        X_rows: ``[n, d]`` rows to explain (array or DataFrame with the background's columns).
        budget: coalitions per row (default ``min(2^d, 8d)``).
        seed: int (default 0), None or a Generator; row r runs with the r-th seed spawned from it
            (``info["seed"]`` of each row), so a rerun with the same seed repeats every row.
        random_state: alias of ``seed``.
        method: as for :func:`shapleig.explain` (a name or an estimator object), for every row.
        method_options: the options of a method given by name.
        index: "SV" (default), "BV" or a pairwise interaction index.
        output: column of a multi-output prediction.
        predict: how to call the model (overrides the recognised method).
        feature_names: names of the d features (default: the background's columns).
        max_rows: imputed rows per model call.
        timeout: seconds per coalition evaluation.
        game_id: a name for the model's version, as for :func:`shapleig.explain` (needed with a store
            for a model whose fitted state shapleig cannot read).
        imputer: "interventional" (default), "baseline" or "conditional".
        imputer_options: the imputer's options (``reference``, ``k``).
        exact_if_cheap: enumerate a cheap small game instead of running the GP (per row).
        store: a folder (created if needed): one evaluation store per row inside it
            (``row-00000.sqlite``, ...), so a killed run resumes without re-evaluating the model.
        progress: one tqdm bar over the rows.
        n_jobs: rows explained at once in joblib worker processes (1: one after another in this
            process; -1: one worker per core). Each row keeps its own seed, so the values are those of
            the sequential run; the model and background are sent to each worker (cloudpickle).
        executor: a ``concurrent.futures.Executor`` running one task per row instead (a
            ``ProcessPoolExecutor``, Dask's ``client.get_executor()``); with ``n_jobs`` left at 1.

    Returns:
        A :class:`RowsExplanation`: per-row estimates, ``summary()`` (mean |value| per term with its
        posterior std), ``plot()`` (error bars ± 1.96 std), ``to_frame()``, ``to_shap()``.

    Examples:
        >>> import numpy as np
        >>> from shapleig import explain_X
        >>> rng = np.random.default_rng(0)
        >>> background, X = rng.normal(size=(20, 3)), rng.normal(size=(4, 3))
        >>> res = explain_X(lambda Z: Z @ np.array([1.0, -2.0, 0.0]), background, X, method="exact", progress=False)
        >>> res.values.shape, res.summary()["term"].tolist()
        ((4, 3), ['x1', 'x0', 'x2'])
    """
    workers = check_n_jobs(n_jobs)
    if executor is not None and n_jobs != 1:
        raise ValueError("give n_jobs or executor, not both (the executor's own workers run the rows)")
    timeout = check_timeout(timeout)
    fn = model_predict(model, output=None, predict=predict)
    columns, _ = _frame_layout(X_rows)
    rows = _as_matrix(X_rows, "X_rows")
    if rows.shape[0] == 0:
        raise GameError("X_rows has no rows")
    estimator = resolve_index_method(method, dict(method_options or {}), index)
    seed = resolve_seed(seed, random_state)
    game_options = dict(imputer=imputer, imputer_options=imputer_options, output=output, max_rows=max_rows,
                        feature_names=feature_names, game_id=game_id)

    def row(r: int) -> Any:  # the r-th row as the kind of input X_rows is (a DataFrame row keeps its dtypes)
        return X_rows.iloc[[r]] if columns is not None else rows[r]

    first_game = imputer_game(fn, background, row(0), **game_options)  # checks model, shapes
    check_readable_identity(first_game, store, game_id)
    budget = default_budget(estimator, first_game.n_players) if budget is None else check_budget(budget)
    job = RowJob(fn, background, estimator, budget, spawn_seeds(seed, rows.shape[0]), _store_folder(store), timeout,
                 exact_if_cheap, game_options)
    from tqdm.auto import tqdm

    estimates: list[Any] = [None] * rows.shape[0]
    with tqdm(total=rows.shape[0], unit="row", desc="explain_X", disable=not progress) as bar:
        for r, est in run_rows(job, rows.shape[0], row, n_jobs=workers, executor=executor, first_game=first_game):
            estimates[r] = est
            bar.update(1)
    first = estimates[0]
    return RowsExplanation(estimates, rows, list(first.info["feature_names"]), index=first.index,
                           terms=list(first.terms or []))


def _store_folder(store: Any) -> Path | None:
    """``store`` as a folder for the per-row stores (None: no store)."""
    if store is None:
        return None
    if not isinstance(store, (str, Path)):
        raise GameError(f"explain_X's store is a folder (one evaluation store per row inside it), got "
                        f"{type(store).__name__}")
    folder = Path(store)
    if folder.exists() and not folder.is_dir():
        raise GameError(f"explain_X's store {folder} is a file; give a folder (one store per row goes inside it)")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


__all__ = ["ROW_STORE", "RowsExplanation", "explain_X", "folded_normal_moments"]
