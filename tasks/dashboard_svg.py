"""Small inline SVG charts for the dashboard: bars with error bars, lines with bands, a matrix, a beeswarm.

Drawn on the server as text, so the page needs no JavaScript library and works offline; every label
that comes from a store (a name, a game id) goes through :func:`esc`. Error bars are always the
estimate +- 1.96 std (``ERROR_BAR_Z``), and each chart says so in its legend, with the units.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

from shapleig.estimation.result import ERROR_BAR_Z

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f")
POSITIVE, NEGATIVE = "#d6604d", "#4393c3"
BAR_LEGEND = (("bar", "estimate (red: positive, blue: negative)"),
              ("errorbar", f"± {ERROR_BAR_Z:g} std (95% interval)"))


def esc(text: object) -> str:
    """``text`` escaped for HTML and SVG (``<``, ``>``, ``&``, quotes).

    Args:
        text: anything; its ``str``.

    Returns:
        the escaped text.
    """
    return html.escape(str(text), quote=True)


def fmt(x: float) -> str:
    """A number as the charts label it (4 significant digits)."""
    return f"{x:.4g}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 2.5, 5, 10):
        if (hi - lo) / (m * step) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _span(values: Sequence[float], pad: float = 0.05) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if hi == lo:
        lo, hi = lo - (abs(lo) or 1.0) * 0.5, hi + (abs(hi) or 1.0) * 0.5
    width = hi - lo
    return lo - pad * width, hi + pad * width


class _Axis:
    """A linear map from data to pixels."""

    def __init__(self, lo: float, hi: float, start: float, end: float):
        self.lo, self.hi, self.start, self.end = lo, hi, start, end

    def __call__(self, x: float) -> float:
        return self.start + (x - self.lo) / (self.hi - self.lo) * (self.end - self.start)


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    """``items`` of (colour or glyph, text) as a legend from (x, y), one per line.

    A colour draws a short line; ``"bar"`` a block (red and blue halves: positive, negative);
    ``"errorbar"`` a capped error bar.
    """
    out = ['<g class="legend-box">']
    for k, (colour, text) in enumerate(items):
        yy = y + 14 * k
        if colour == "bar":
            glyph = (f'<rect x="{x:.1f}" y="{yy - 9:.1f}" width="5" height="9" fill="{POSITIVE}"/>'
                     f'<rect x="{x + 5:.1f}" y="{yy - 9:.1f}" width="5" height="9" fill="{NEGATIVE}"/>')
        elif colour == "errorbar":
            glyph = f'<path d="M{x:.1f},{yy - 4:.1f}H{x + 10:.1f}M{x:.1f},{yy - 8:.1f}V{yy:.1f}M{x + 10:.1f},' \
                    f'{yy - 8:.1f}V{yy:.1f}" class="errorbar"/>'
        else:
            glyph = f'<rect x="{x:.1f}" y="{yy - 6:.1f}" width="10" height="3" fill="{colour}"/>'
        out.append(f'{glyph}<text x="{x + 14:.1f}" y="{yy:.1f}" class="legend">{esc(text)}</text>')
    return out + ["</g>"]


def _title(text: str, x: float = 8, y: float = 14) -> str:
    return f'<text x="{x}" y="{y}" class="title">{esc(text)}</text>'



def bars(labels: Sequence[str], values: Sequence[float], stds: Sequence[float | None], *, xlabel: str,
         title: str = "values") -> str:
    """Horizontal bars, first label on top, each with its ± 1.96 std error bar, a zero line and a legend.

    Args:
        labels: one per bar (escaped here).
        values: the estimates.
        stds: their std (None: no error bar).
        xlabel: the axis label, with the units.
        title: the chart's accessible name.

    Returns:
        the ``<svg>`` element.
    """
    n = len(labels)
    half = [None if s is None else ERROR_BAR_Z * s for s in stds]
    ends = [v + s for v, h in zip(values, half) for s in ((h or 0.0), -(h or 0.0))] + [0.0]
    lo, hi = _span(ends)
    left, width, row, top = 140, 540, 20, 54
    height = top + 40 + n * row
    x = _Axis(lo, hi, left, width - 12)
    body = [_title(title), f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{top + n * row}" class="zero"/>']
    for t in _ticks(lo, hi):
        body.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{top + n * row}" class="grid"/>'
                    f'<text x="{x(t):.1f}" y="{top + 14 + n * row}" class="tick" text-anchor="middle">{fmt(t)}</text>')
    for k, (label, value, h) in enumerate(zip(labels, values, half)):
        y = top + k * row
        x0, x1 = sorted((x(0), x(value)))
        colour = POSITIVE if value >= 0 else NEGATIVE
        tip = f"{label}: {fmt(value)}" + ("" if h is None else f" ± {fmt(h)}")
        body.append(f'<g><title>{esc(tip)}</title><rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 0.5):.1f}" '
                    f'height="{row - 6}" fill="{colour}"/></g>'
                    f'<text x="{left - 6}" y="{y + row / 2 + 4:.1f}" class="label" text-anchor="end">{esc(label)}</text>')
        if h is not None:
            a, b, m = x(value - h), x(value + h), y + row / 2
            body.append(f'<path d="M{a:.1f},{m:.1f}H{b:.1f}M{a:.1f},{m - 4:.1f}V{m + 4:.1f}M{b:.1f},{m - 4:.1f}'
                        f'V{m + 4:.1f}" class="errorbar"/>')
    body.append(f'<text x="{(left + width) / 2:.1f}" y="{top + 30 + n * row}" class="axis" text-anchor="middle">'
                f'{esc(xlabel)}</text>')
    body += _legend(BAR_LEGEND, left, 30)
    return _svg(width, height, body, title)


def lines(series: Sequence[dict], *, xlabel: str, ylabel: str, title: str, bands: bool = True) -> str:
    """Lines against a shared x axis, each optionally with a band (its ± 1.96 std), and a legend.

    Args:
        series: dicts with ``label``, ``x``, ``y`` and optionally ``low``/``high`` (the band).
        xlabel: the x axis label.
        ylabel: the y axis label, with the units.
        title: the chart's accessible name.
        bands: draw the bands.

    Returns:
        the ``<svg>`` element.
    """
    width, height, left, top, bottom, legend = 540, 300, 62, 28, 250, 130
    xs = [v for s in series for v in s["x"]]
    ys = [v for s in series for key in ("y", "low", "high") for v in (s.get(key) or [])]
    xlo, xhi = _span(xs, 0.0) if xs else (0.0, 1.0)
    ylo, yhi = _span(ys)
    x, y = _Axis(xlo, xhi, left, width - legend), _Axis(ylo, yhi, bottom, top)
    body = [_title(title)]
    for t in _ticks(ylo, yhi):
        body.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{width - legend}" y2="{y(t):.1f}" class="grid"/>'
                    f'<text x="{left - 4}" y="{y(t) + 4:.1f}" class="tick" text-anchor="end">{fmt(t)}</text>')
    for t in _ticks(xlo, xhi):
        body.append(f'<text x="{x(t):.1f}" y="{bottom + 14}" class="tick" text-anchor="middle">{fmt(t)}</text>')
    for k, s in enumerate(series):
        colour = PALETTE[k % len(PALETTE)]
        if bands and s.get("low") is not None and s.get("high") is not None and len(s["x"]) > 1:
            upper = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(s["x"], s["high"]))
            lower = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in reversed(list(zip(s["x"], s["low"]))))
            body.append(f'<polygon points="{upper} {lower}" fill="{colour}" class="band"/>')
        points = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(s["x"], s["y"]) if math.isfinite(b))
        body.append(f'<polyline points="{points}" fill="none" stroke="{colour}" class="line"><title>{esc(s["label"])}'
                    f'</title></polyline>')
    body.append(f'<text x="{(left + width - legend) / 2:.1f}" y="{bottom + 32}" class="axis" text-anchor="middle">'
                f'{esc(xlabel)}</text><text x="14" y="{(top + bottom) / 2:.1f}" class="axis" text-anchor="middle" '
                f'transform="rotate(-90 14 {(top + bottom) / 2:.1f})">{esc(ylabel)}</text>')
    items = [(PALETTE[k % len(PALETTE)], s["label"]) for k, s in enumerate(series[:16])]
    if bands and any(s.get("low") is not None for s in series):
        items.append(("#bbbbbb", f"band: ± {ERROR_BAR_Z:g} std"))
    body += _legend(items, width - legend + 10, top + 8)
    return _svg(width, height, body, title)


def matrix(labels: Sequence[str], cells: dict[tuple[int, int], tuple[float, float | None]], *, units: str) -> str:
    """Pairwise interactions as a matrix: cell (i, j) coloured by its value, its ± 1.96 std in the tooltip.

    Args:
        labels: the players' names.
        cells: ``{(i, j): (value, std)}`` for i < j (mirrored below the diagonal).
        units: the values' units, for the legend.

    Returns:
        the ``<svg>`` element.
    """
    p = len(labels)
    size = max(12, min(36, 420 // max(p, 1)))
    left = 130
    scale = max((abs(v) for v, _ in cells.values()), default=1.0) or 1.0
    body = [_title("pairwise interactions")]
    top = 30
    for (i, j), (value, std) in cells.items():
        t = max(-1.0, min(1.0, value / scale))
        colour = POSITIVE if t >= 0 else NEGATIVE
        tip = f"{labels[i]} x {labels[j]}: {fmt(value)}" + ("" if std is None else f" ± {fmt(ERROR_BAR_Z * std)}")
        for a, b in ((i, j), (j, i)):
            body.append(f'<rect x="{left + b * size}" y="{top + a * size}" width="{size - 1}" height="{size - 1}" '
                        f'fill="{colour}" fill-opacity="{abs(t):.3f}"><title>{esc(tip)}</title></rect>')
    for k, label in enumerate(labels):
        body.append(f'<text x="{left - 4}" y="{top + k * size + size / 2 + 4:.1f}" class="label" '
                    f'text-anchor="end">{esc(label)}</text>')
    bottom = top + p * size + 16
    body.append(f'<text x="8" y="{bottom}" class="legend">colour: the pair\'s value, red positive, blue negative,</text>'
                f'<text x="8" y="{bottom + 14}" class="legend">full colour at |{fmt(scale)}| {esc(units)}; hover: value '
                f'± {ERROR_BAR_Z:g} std</text>')
    return _svg(max(left + p * size + 20, 330), bottom + 22, body, "pairwise interactions")


def beeswarm(labels: Sequence[str], rows: Sequence[tuple[Sequence[float], Sequence[float | None]]], *,
             xlabel: str) -> str:
    """Every row's value per term, a dot each with its ± 1.96 std error bar, terms by mean |value|, largest on top.

    Args:
        labels: the terms' names.
        rows: per row ``(values, stds)`` aligned with ``labels``.
        xlabel: the axis label, with the units.

    Returns:
        the ``<svg>`` element.
    """
    n_terms = len(labels)
    mean_abs = [sum(abs(r[0][k]) for r in rows) / max(len(rows), 1) for k in range(n_terms)]
    order = sorted(range(n_terms), key=lambda k: -mean_abs[k])[:15]
    ends = [v + s * h for values, stds in rows for k in order
            for v, h in [(values[k], ERROR_BAR_Z * (stds[k] or 0.0))] for s in (-1, 1)] + [0.0]
    lo, hi = _span(ends)
    left, width, row, top = 140, 640, 30, 40
    x = _Axis(lo, hi, left, width - 12)
    body = [_title(f"{len(rows)} rows: each row's estimate per term"),
            f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{top + len(order) * row}" class="zero"/>']
    for t in _ticks(lo, hi):
        body.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{top + len(order) * row}" class="grid"/>'
                    f'<text x="{x(t):.1f}" y="{top + 14 + len(order) * row}" class="tick" text-anchor="middle">'
                    f'{fmt(t)}</text>')
    for pos, k in enumerate(order):
        base = top + pos * row + row / 2
        body.append(f'<text x="{left - 6}" y="{base + 4:.1f}" class="label" text-anchor="end">{esc(labels[k])}</text>')
        for r, (values, stds) in enumerate(rows):
            v = values[k]
            jitter = ((r * 0.6180339887) % 1.0 - 0.5) * (row - 10)  # a fixed spread: the figure is reproducible
            yy = base + jitter
            colour = POSITIVE if v >= 0 else NEGATIVE
            if stds[k] is not None:
                h = ERROR_BAR_Z * stds[k]
                body.append(f'<line x1="{x(v - h):.1f}" y1="{yy:.1f}" x2="{x(v + h):.1f}" y2="{yy:.1f}" '
                            f'class="errorbar thin"/>')
            body.append(f'<circle cx="{x(v):.1f}" cy="{yy:.1f}" r="2.5" fill="{colour}"><title>row {r}: '
                        f'{esc(labels[k])} {fmt(v)}</title></circle>')
    height = top + 56 + len(order) * row
    body.append(f'<text x="{(left + width) / 2:.1f}" y="{top + 30 + len(order) * row}" class="axis" '
                f'text-anchor="middle">{esc(xlabel)}</text>')
    body += _legend([("bar", "a row's estimate (red: positive, blue: negative)"),
                     ("errorbar", f"± {ERROR_BAR_Z:g} std (95% interval)")], left, top + 44 + len(order) * row)
    return _svg(width, height + 16, body, "beeswarm of the rows")


__all__ = ["BAR_LEGEND", "PALETTE", "bars", "beeswarm", "esc", "fmt", "lines", "matrix"]
