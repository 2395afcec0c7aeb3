"""Plot one explanation.

Shapley values (or the terms of another index) with posterior error bars, as bars or a waterfall.
Error bars are ``± 1.96`` posterior std (a 95% interval) unless asked otherwise, and every plot says
so in a legend and names the values' units on its axis (:func:`error_bar_label`,
:func:`add_value_legend`, shared with ``RowsExplanation.plot`` and ``shapleig hpi``'s plot).

The figure is a bare ``matplotlib.figure.Figure`` (no pyplot), so the caller's backend is left
alone: save it (``out=`` or ``fig.savefig``), or show it in a notebook, which displays figures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from shapleig.estimation.result import ERROR_BAR_Z, ShapleyEstimate
from shapleig.games.indices import index_label

PLOT_KINDS = ("bar", "waterfall")
POSITIVE, NEGATIVE = "#d6604d", "#4393c3"


def error_bar_label(n_std: float = ERROR_BAR_Z) -> str:
    """What an error bar is, for a legend: ``"± 1.96 posterior std (95% interval)"``.

    Args:
        n_std: the half-width in posterior standard deviations.

    Returns:
        the label.
    """
    return f"± {n_std:g} posterior std" + (" (95% interval)" if n_std == ERROR_BAR_Z else "")


def value_units(est: ShapleyEstimate) -> str:
    """The units of an estimate's values, for an axis: the model's output for an explanation, else the game's.

    Args:
        est: the estimate (``info["units"]`` wins when set).

    Returns:
        the units' name.
    """
    if est.info.get("units"):
        return str(est.info["units"])
    return "model output units" if est.info.get("prediction") is not None else "game units"


def add_value_legend(ax: Any, error_bar: Any = None, *, signed: bool = True, what: str = "estimate") -> None:
    """A legend naming the bars (red positive, blue negative) and, when drawn, the error bars.

    Args:
        ax: the Axes.
        error_bar: the artist of the error bars (``ax.errorbar(..., label=error_bar_label())``), or None.
        signed: the bars are coloured by sign (else one entry for ``what``).
        what: what a bar or dot is.
    """
    from matplotlib.patches import Patch

    handles = ([Patch(color=POSITIVE, label=f"{what} > 0"), Patch(color=NEGATIVE, label=f"{what} < 0")] if signed
               else [Patch(color="#1f77b4", label=what)])
    if error_bar is not None:
        handles.append(error_bar)
    ax.legend(handles=handles, loc="best", fontsize=8, framealpha=0.85)


def _top_features(est: ShapleyEstimate, names: Sequence[str], max_display: int) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Labels, values and std of the ``max_display`` largest |values|, the rest summed into one row.

    The std of the summed row is that of the sum: ``sqrt(1^T C 1)`` over the rest with a
    covariance, ``sqrt(sum std^2)`` with only a std.
    """
    phi = np.asarray(est.values, dtype=np.float64)
    std = None if est.std is None else np.asarray(est.std, dtype=np.float64)
    order = np.argsort(-np.abs(phi), kind="stable")
    if phi.shape[0] <= max_display:
        keep, rest = order, order[:0]
    else:
        keep, rest = order[: max_display - 1], order[max_display - 1:]
    labels = [str(names[i]) for i in keep]
    values = list(phi[keep])
    errors = None if std is None else list(std[keep])
    if rest.size:
        labels.append(f"{rest.size} other {'features' if est.max_order == 1 else 'terms'}")
        values.append(float(phi[rest].sum()))
        if errors is not None:
            if est.covariance is not None:
                var = float(np.asarray(est.covariance)[np.ix_(rest, rest)].sum())
            else:
                var = float(np.sum(std[rest] ** 2))
            errors.append(float(np.sqrt(max(var, 0.0))))
    return labels, np.asarray(values), None if errors is None else np.asarray(errors)


def plot_explanation(
    est: ShapleyEstimate,
    *,
    kind: str = "bar",
    feature_names: Sequence[str] | None = None,
    max_display: int = 12,
    n_std: float = ERROR_BAR_Z,
    title: str | None = None,
    out: str | os.PathLike[str] | None = None,
    ax: Any = None,
) -> Any:
    """Draw ``est`` with ``+- n_std`` posterior standard deviations; return the matplotlib Figure.

    Methods without a std (most baselines) are drawn without error bars.

    Args:
        est: the estimate to draw.
        kind: ``"bar"`` (one bar per term, largest |value| on top) or ``"waterfall"`` (from the baseline,
            each term's step, to the prediction ``baseline + sum``; for the efficient indices: SV, k-SII,
            STII, FSII, and any registered index whose record says ``efficient``).
        feature_names: labels (default ``est.info["feature_names"]``, else ``x0..``); a pair of an
            interaction index is labelled ``"a x b"``.
        max_display: rows shown; the remaining terms are summed into one row.
        n_std: the half-width of the error bars in posterior standard deviations (1.96: a 95% interval).
        title: the title; None: :func:`default_title`.
        out: also save the figure there (format from the suffix; folders are created).
        ax: draw into this Axes instead of a new figure.

    Returns:
        the matplotlib ``Figure`` (built without pyplot).

    Examples:
        >>> import numpy as np
        >>> from shapleig import ShapleyEstimate, plot_explanation
        >>> est = ShapleyEstimate(values=np.array([1.0, -2.0, 0.5]), std=np.array([0.1, 0.2, 0.1]),
        ...                       method="demo", evaluations=8)
        >>> fig = plot_explanation(est, feature_names=["age", "income", "tenure"])
        >>> [label.get_text() for label in fig.axes[0].get_yticklabels()], fig.axes[0].get_title()
        (['income', 'age', 'tenure'], 'demo, 8 evaluations')
    """
    if kind not in PLOT_KINDS:
        raise ValueError(f"kind must be one of {PLOT_KINDS}, got {kind!r}")
    if out is not None:
        check_figure_path(out)
    if int(max_display) < 1:
        raise ValueError(f"max_display must be >= 1, got {max_display}")
    p = est.n_players
    names = feature_names if feature_names is not None else est.info.get("feature_names")
    names = list(names) if names is not None else [f"x{j}" for j in range(p)]
    if len(names) != p:
        raise ValueError(f"{len(names)} feature names for {p} players")
    term_names = [" x ".join(str(names[j]) for j in t) for t in est.terms]
    labels, values, errors = _top_features(est, term_names, int(max_display))
    xerr = None if errors is None else n_std * errors

    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 1.2 + 0.32 * len(labels)), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    y = np.arange(len(labels))[::-1]  # the first (largest) row on top
    colors = np.where(values >= 0, POSITIVE, NEGATIVE)
    units = value_units(est)
    bar = None
    if kind == "bar":
        ax.barh(y, values, color=colors)
        if xerr is not None:
            bar = ax.errorbar(values, y, xerr=xerr, fmt="none", ecolor="0.15", elinewidth=1, capsize=2.5,
                              label=error_bar_label(n_std))
        ax.axvline(0.0, color="0.3", linewidth=0.8)
        ax.set_xlabel(f"{index_label(est.index)} ({units})")
        add_value_legend(ax, bar, what=index_label(est.index))
    else:
        base = 0.0 if est.baseline is None else float(est.baseline)
        starts = base + np.concatenate([[0.0], np.cumsum(values)[:-1]])
        ax.barh(y, values, left=starts, color=colors)
        if xerr is not None:
            bar = ax.errorbar(starts + values, y, xerr=xerr, fmt="none", ecolor="0.15", elinewidth=1, capsize=2.5,
                              label=error_bar_label(n_std))
        ax.axvline(base, color="0.3", linewidth=0.8, linestyle=":")
        end = base + float(np.sum(values))
        ax.axvline(end, color="0.3", linewidth=0.8)
        ax.set_xlabel(f"{units}: baseline {base:.4g} -> prediction {end:.4g}")
        add_value_legend(ax, bar, what="step")
    ax.set_yticks(y, labels)
    ax.grid(True, axis="x", alpha=0.3)
    if title is None:
        title = default_title(est)
    ax.set_title(title, fontsize=10)
    return save_figure(fig, out)


def default_title(est: ShapleyEstimate) -> str:
    """``row 3: prediction 151.2 (shapleig, 40 evaluations)``.

    The row and prediction when ``est.info`` has them (``explain`` records the prediction,
    ``shapleig explain`` the row).

    Args:
        est: the estimate.

    Returns:
        the title.
    """
    run = f"{est.method or 'estimate'}, {est.evaluations} evaluations"
    parts = []
    if est.info.get("row") is not None:
        parts.append(f"row {est.info['row']}")
    if est.info.get("prediction") is not None:
        parts.append(f"prediction {float(est.info['prediction']):.4g}")
    return (": ".join(parts) + f" ({run})") if parts else run


def figure_formats() -> dict[str, str]:
    """The file formats matplotlib writes, ``{suffix without the dot: description}``.

    Returns:
        ``{suffix: description}``.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    return dict(FigureCanvasBase.get_supported_filetypes())


def check_figure_path(path: str | os.PathLike[str]) -> Path:
    """``path`` if its suffix is a format matplotlib writes.

    ``ValueError`` listing them otherwise (checked before a run, so a typo such as ``.docx`` or
    ``.bmpx`` does not waste it).

    Args:
        path: the output file.

    Returns:
        ``path`` as a ``Path``.
    """
    out = Path(path)
    suffix = out.suffix.lower().lstrip(".")
    formats = figure_formats()
    if suffix not in formats:
        given = f"suffix {out.suffix!r}" if out.suffix else "no suffix"
        raise ValueError(f"figure {out}: {given} is not a format matplotlib writes; use one of "
                         f"{', '.join('.' + k for k in sorted(formats))}")
    return out


def save_figure(fig: Any, out: str | os.PathLike[str] | None, dpi: int = 130) -> Any:
    """Write ``fig`` to ``out`` (parent folders created) when a path is given; return ``fig``.

    Args:
        fig: the figure.
        out: the file to write (folders are created); None: not written.
        dpi: the resolution of raster formats.

    Returns:
        the figure.
    """
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=dpi)
    return fig


__all__ = ["PLOT_KINDS", "add_value_legend", "check_figure_path", "error_bar_label", "figure_formats",
           "plot_explanation", "save_figure", "value_units"]
