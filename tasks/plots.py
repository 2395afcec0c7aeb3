"""Error-versus-budget plots with standard-error bands, and MSE / rank tables per budget.

All functions take the long results table of :mod:`shapleig_tasks.harness` (one row per task, method,
budget, seed). Rows with an ``error`` are left out of every summary.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from shapleig.explanation.plot import save_figure

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn, not with this module
    from matplotlib.figure import Figure


def check_figure_path(path: str | os.PathLike) -> Path:
    """``path`` if matplotlib can write its format (by extension), else ``ValueError`` listing them."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backend_bases import FigureCanvasBase

    out = Path(path)
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    ext = out.suffix.lower().lstrip(".")
    if ext not in formats:
        raise ValueError(f"figure file {out}: unknown format {ext or '(no extension)'!r}; use one of "
                         f"{', '.join('.' + f for f in formats)}")
    return out


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    if "error" in df.columns:
        df = df[df["error"].fillna("") == ""]
    return df[np.isfinite(df["mse"].to_numpy(dtype=float))]


def summarize(df: pd.DataFrame, by: Sequence[str] = ("group", "method", "budget")) -> pd.DataFrame:
    """Mean MSE, its standard error over runs (tasks x seeds), run count, mean evaluations.

    Returns columns ``*by, mse, se, n, evaluations, wall_s``.
    """
    df = _ok(df)
    by = [c for c in by if c in df.columns]
    g = df.groupby(by, sort=True)
    out = g.agg(mse=("mse", "mean"), sd=("mse", "std"), n=("mse", "size"), evaluations=("evaluations", "mean"),
                wall_s=("wall_s", "mean")).reset_index()
    out["se"] = out["sd"].fillna(0.0) / np.sqrt(out["n"])
    return out[[*by, "mse", "se", "n", "evaluations", "wall_s"]]


def budget_key(df: pd.DataFrame) -> str:
    """``'budget_spec'`` when relative budgets (``4p``) span tasks of different p, else ``'budget'``."""
    if "budget_spec" in df.columns and df["budget_spec"].nunique() < df["budget"].nunique():
        return "budget_spec"
    return "budget"


def _budget_columns(table: pd.DataFrame, key: str) -> pd.DataFrame:
    cols = sorted(table.columns, key=_spec_order if key == "budget_spec" else float)
    table = table[cols]
    table.columns = [f"T={c}" for c in cols]
    return table


def mse_table(df: pd.DataFrame, by: str = "group") -> pd.DataFrame:
    """Mean MSE with rows (``by``, method) and one column per budget (or per ``4p`` spec)."""
    key = budget_key(_ok(df))
    s = summarize(df, (by, "method", key))
    return _budget_columns(s.pivot_table(index=[by, "method"], columns=key, values="mse"), key)


def rank_table(df: pd.DataFrame) -> pd.DataFrame:
    """Mean rank of each method per budget (1 = lowest MSE), ranked within every (task, budget).

    Each task's MSE is first averaged over seeds; ties share the average rank. Rows: budget
    (or ``4p`` spec when tasks of different p share it), columns: methods.
    """
    df = _ok(df)
    key = budget_key(df)
    per_task = df.groupby(["task", key, "method"])["mse"].mean().reset_index()
    per_task["rank"] = per_task.groupby(["task", key])["mse"].rank(method="average")
    table = per_task.pivot_table(index=key, columns="method", values="rank", aggfunc="mean")
    order = sorted(table.index, key=_spec_order if key == "budget_spec" else float)
    return table.loc[order]


def _spec_order(spec: str) -> float:
    # relative budgets ('2p') sort by their factor, after absolute ones
    spec = str(spec)
    return 1e9 + float(spec[:-1] or 1) if spec.endswith("p") else float(spec)


def plot_mse(
    df: pd.DataFrame,
    out: str | os.PathLike[str] | None = None,
    *,
    by: str = "group",
    title: str | None = None,
    ncols: int = 3,
) -> Figure:
    """MSE vs budget, log y, mean +- one standard error per method; one panel per ``by`` value.

    Returns the matplotlib ``Figure`` (built without pyplot, so the caller's backend is left
    alone); with ``out`` also writes it there (PNG or any format matplotlib infers from the suffix).
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    s = summarize(df, (by, "method", "budget"))
    if s.empty:
        raise ValueError("nothing to plot: the results have no successful runs")
    panels = list(dict.fromkeys(s[by]))
    methods = list(dict.fromkeys(sorted(s["method"], key=lambda m: (not m.startswith("shapleig"), m))))
    cmap, n_colors = (colormaps["tab10"], 10) if len(methods) <= 10 else (colormaps["tab20"], 20)
    colors = {m: cmap(i % n_colors) for i, m in enumerate(methods)}
    markers = {m: "osD^v<>phX"[i % 10] for i, m in enumerate(methods)}
    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    width = max(4.6 * ncols, 6.4)  # a single panel still leaves room for the title and legend
    legend_rows = math.ceil(len(methods) / 4)
    fig = Figure(figsize=(width, 3.6 * nrows + 0.3 * legend_rows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        sub = s[s[by] == panel]
        p = df.loc[df[by] == panel, "p"].iloc[0] if "p" in df.columns else None
        for method in methods:
            m = sub[sub["method"] == method].sort_values("budget")
            if m.empty:
                continue
            x, y, se = m["budget"].to_numpy(), m["mse"].to_numpy(), m["se"].to_numpy()
            style = "-" if method.startswith("shapleig") else "--"
            ax.plot(x, y, style, marker=markers[method], ms=3.5, color=colors[method], label=method)
            # the band is mean +- SE, clipped above zero so that it shows on a log axis
            lo = np.maximum(y - se, y * 1e-3)
            ax.fill_between(x, lo, y + se, color=colors[method], alpha=0.18, linewidth=0)
        ax.set_yscale("log")
        ax.set_xlabel("evaluations (budget)")
        ax.set_ylabel("MSE")
        ax.set_title(f"{panel}" + (f" (p = {p})" if p is not None else ""), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = [], []
    for ax in axes.flat:  # methods missing from the first panel still get a legend entry
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    return save_figure(fig, out)


__all__ = ["budget_key", "mse_table", "plot_mse", "rank_table", "summarize"]
