"""``shapleig dashboard``: a local web page for evaluation stores that refreshes while their runs write.

PATH is a store, a folder of stores (an ``explain_X`` store folder, an ``hpi`` output folder, the
``--store-dir`` of ``shapleig run``) or several. Every store is read through a read-only
:class:`~shapleig.estimation.store_view.StoreView` (it never blocks or changes the runs writing it).

- ``/``: one table per PATH, one row per study (sortable; for an ``explain_X`` folder the beeswarm of
  the rows with error bars); a single store's page when only one is served.
- ``/s/<n>``: the study's page: budget spent and left, evaluations over time, rate and ETA from the
  measured times, coalitions in flight, the current values with ± 1.96 std error bars (a matrix for
  pairwise interactions), each value with its band against evaluations, the std, the kernel weights
  and the read-out's diagnostics.

The page's script (package data, inlined; no CDN) fetches ``?part=main`` every ``--refresh``
seconds and swaps it in. Nothing else is served: the URL only ever selects one of the stores named
on the command line by its number, never a path, so ``/../`` or a symbolic link out of a named
folder (refused when the folder is read) cannot reach another file; every name and game id is
escaped, and a Content-Security-Policy lets only the page's own script run. ``--html out.html``
writes the same figures as one static, offline file instead.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import importlib.resources
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import parse_qs, urlsplit

from shapleig.estimation.result import ERROR_BAR_Z
from shapleig.estimation.store_view import StoreView, study_summary
from shapleig_tasks.dashboard_svg import bars, beeswarm, esc, lines, matrix

SQLITE_HEADER = b"SQLite format 3\x00"
ROW_STORE = re.compile(r"row-\d+\.sqlite")
MAX_BARS = 30  # terms drawn as bars (all of them are in the table)
MAX_LINES = 8  # terms drawn against evaluations


def _asset(name: str) -> str:
    return importlib.resources.files("shapleig_tasks").joinpath("dashboard_static", name).read_text(encoding="utf-8")


# -- which stores are served ------------------------------------------------------------------
@dataclass
class Study:
    """One served store.

    Attributes:
        number: its number in the URL (``/s/<number>``).
        path: the store file.
        name: its name in its folder's table.
        view: its read-only view.
    """

    number: int
    path: Path
    name: str
    view: StoreView


@dataclass
class Group:
    """The stores one PATH argument named.

    Attributes:
        label: the PATH as given.
        kind: ``"store"``, ``"folder"`` or ``"rows"`` (an ``explain_X`` folder: ``row-NNNNN.sqlite``).
        studies: its stores.
        skipped: files left out, and why.
    """

    label: str
    kind: str
    studies: list[Study] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _is_store_file(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _folder_stores(folder: Path) -> tuple[list[Path], list[str]]:
    """Store files in ``folder`` and its subfolders (one level), none reached through a link out of it."""
    root = folder.resolve()
    found, skipped = [], []
    candidates = sorted(folder.iterdir()) + sorted(p for sub in sorted(folder.iterdir())
                                                   if sub.is_dir() and not sub.is_symlink() for p in sub.iterdir())
    for path in candidates:
        if path.name.endswith(("-wal", "-shm", "-journal")) or path.is_dir():
            continue
        real = path.resolve()
        if root not in real.parents:
            skipped.append(f"{path.name}: a symbolic link out of {folder}, not served")
        elif real.is_file() and _is_store_file(real):
            found.append(path)
    return found, skipped


def find_stores(paths: Sequence[str]) -> list[Group]:
    """The groups of stores named by ``paths`` (each a store file or a folder of stores).

    Args:
        paths: the PATH arguments.

    Returns:
        one :class:`Group` per path, its stores numbered in order across all groups.

    Raises:
        ValueError: a path that does not exist, is not an evaluation store, or is a folder holding none.
    """
    groups: list[Group] = []
    number = 0
    for text in paths:
        path = Path(text)
        if path.is_dir():
            files, skipped = _folder_stores(path)
            if not files:
                raise ValueError(f"{text} holds no evaluation store (*.sqlite files written by shapleig)")
            kind = "rows" if all(ROW_STORE.fullmatch(f.name) for f in files) else "folder"
            group = Group(text, kind, skipped=skipped)
            for f in files:
                group.studies.append(Study(number, f, str(f.relative_to(path)), StoreView(str(f))))
                number += 1
        elif path.is_file():
            if not _is_store_file(path):
                raise ValueError(f"{text} is not an evaluation store (not an SQLite database)")
            group = Group(text, "store", [Study(number, path, path.name, StoreView(str(path)))])
            number += 1
        else:
            raise ValueError(f"{text}: no such file or folder")
        groups.append(group)
    return groups


# -- the page ---------------------------------------------------------------------------------
def _figures(summary: dict[str, Any]) -> str:
    names = [("status", "status"), ("budget", "budget"), ("spent", "evaluations spent"), ("left", "left"),
             ("stored", "stored in the file"), ("failed", "failed attempts"), ("rate", "time per evaluation"),
             ("eta", "ETA"), ("in_flight", "in flight"), ("workers", "processes evaluating"),
             ("last_write", "last write"), ("steps", "trace steps")]
    return '<dl class="figures">' + "".join(
        f'<div data-field="{key}"><dt>{esc(label)}</dt><dd>{esc(summary[key])}</dd></div>' for key, label in names
    ) + "</dl>"


def _values_table(summary: dict[str, Any], table_id: str) -> str:
    head = (f"<thead><tr><th>term</th><th>value ({esc(summary['units'])})</th><th>std</th>"
            f"<th>low ({ERROR_BAR_Z:g} std)</th><th>high ({ERROR_BAR_Z:g} std)</th></tr></thead>")
    rows = "".join(
        f'<tr data-term="{esc(r["term"])}"><td>{esc(r["term"])}</td><td class="num" data-field="value">{esc(r["value"])}'
        f'</td><td class="num" data-field="std">{esc(r["std"])}</td><td class="num">{esc(r["low"])}</td>'
        f'<td class="num">{esc(r["high"])}</td></tr>' for r in summary["rows"])
    return f'<table class="values sortable" id="{table_id}">{head}<tbody>{rows}</tbody></table>'


def _value_charts(summary: dict[str, Any]) -> str:
    run = summary["run"]
    if run is None or not run.trace:
        return '<p class="note">No estimate yet: the run records one after its first step (for most baselines, at ' \
               'the end).</p>'
    last = run.trace[-1]
    terms = run.run.info.get("terms") or [[k] for k in range(len(last.values))]
    labels = run.labels if len(run.labels) == len(last.values) else [f"term {k}" for k in range(len(last.values))]
    stds = [None] * len(last.values) if last.std is None else [float(s) for s in last.std]
    singles = [k for k, t in enumerate(terms) if len(t) == 1]
    singles = sorted(singles, key=lambda k: -abs(float(last.values[k])))[:MAX_BARS]
    what = f"{run.run.info.get('index', 'SV')} value ({summary['units']})"
    out = [bars([labels[k] for k in singles], [float(last.values[k]) for k in singles], [stds[k] for k in singles],
                xlabel=what, title="current values")]
    pairs = {tuple(t): k for k, t in enumerate(terms) if len(t) == 2}
    if pairs:
        names = run.run.info.get("labels") or [f"x{j}" for j in range(int(run.run.info.get("n_players", 0)))]
        out.append(matrix(names, {(t[0], t[1]): (float(last.values[k]), stds[k]) for t, k in pairs.items()},
                          units=summary["units"]))
    return '<div class="charts">' + "".join(out) + "</div>"


def _convergence(summary: dict[str, Any]) -> str:
    run = summary["run"]
    if run is None or len(run.trace) < 2:
        return ""
    trace = run.trace
    last = trace[-1]
    labels = run.labels if len(run.labels) == len(last.values) else [f"term {k}" for k in range(len(last.values))]
    top = sorted(range(len(last.values)), key=lambda k: -abs(float(last.values[k])))[:MAX_LINES]
    xs = [e.evaluations for e in trace]
    values, stds = [], []
    for k in top:
        ys = [float(e.values[k]) for e in trace]
        ss = [None if e.std is None else float(e.std[k]) for e in trace]
        band = None if any(s is None for s in ss) else ss
        values.append({"label": labels[k], "x": xs, "y": ys,
                       "low": None if band is None else [y - ERROR_BAR_Z * s for y, s in zip(ys, band)],
                       "high": None if band is None else [y + ERROR_BAR_Z * s for y, s in zip(ys, band)]})
        if band is not None:
            stds.append({"label": labels[k], "x": xs, "y": band})
    units = summary["units"]
    out = [lines(values, xlabel="evaluations", ylabel=f"value ({units})", title="each value, its band ± 1.96 std")]
    if stds:
        out.append(lines(stds, xlabel="evaluations", ylabel=f"posterior std ({units})", title="posterior std of each value",
                         bands=False))
    return "<h2>Each value against evaluations</h2><div class=\"charts\">" + "".join(out) + "</div>"


def _over_time(view: StoreView, summary: dict[str, Any]) -> str:
    if len(view.times) < 2:
        return ""
    start = view.times[0]
    scale, unit = (3600.0, "hours") if view.times[-1] - start > 7200 else (
        (60.0, "minutes") if view.times[-1] - start > 120 else (1.0, "seconds"))
    series = [{"label": "evaluations stored", "x": [(t - start) / scale for t in view.times],
               "y": list(range(1, len(view.times) + 1))}]
    chart = lines(series, xlabel=f"{unit} since the first evaluation", ylabel="evaluations",
                  title=f"evaluations over time (ETA {summary['eta']})", bands=False)
    return f"<h2>Evaluations over time</h2><div class=\"charts\">{chart}</div>"


def _diagnostics(summary: dict[str, Any]) -> str:
    run = summary["run"]
    if run is None:
        return ""
    trace = [e for e in run.trace if e.diagnostics]
    if not trace:
        return ""
    kernels = sorted({k for e in trace for k in (e.diagnostics.get("kernel_weights") or {})})
    out = []
    if kernels:
        series = [{"label": name, "x": [e.evaluations for e in trace],
                   "y": [float((e.diagnostics.get("kernel_weights") or {}).get(name, 0.0)) for e in trace]}
                  for name in kernels]
        out.append(lines(series, xlabel="evaluations", ylabel="kernel weight", title="kernel weights", bands=False))
    latest = trace[-1].diagnostics
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(_plain(v))}</td></tr>" for k, v in sorted(latest.items()))
    out.append(f'<table class="diagnostics"><thead><tr><th>diagnostic (latest step)</th><th>value</th></tr></thead>'
               f"<tbody>{rows}</tbody></table>")
    return "<h2>Kernel weights and diagnostics</h2><div class=\"charts\">" + "".join(out) + "</div>"


def _plain(value: Any) -> str:
    """A diagnostic for the table: numbers to 4 significant digits, a dict as ``name: value`` pairs."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


def _boxes(summary: dict[str, Any]) -> str:
    problems = "".join(f'<div class="problem">{esc(p)}</div>' for p in summary["problems"])
    return problems + "".join(f'<div class="note">{esc(n)}</div>' for n in summary["notes"])


def study_main(study: Study, now: float | None = None) -> str:
    """The ``<main>`` content of a study's page (what the page's script swaps in at each refresh).

    Args:
        study: the study (its view refreshed).
        now: the current time (default: now).

    Returns:
        HTML.
    """
    s = study_summary(study.view, now)
    game_id = f' · game id <code data-field="game_id">{esc(s["game_id"])}</code>' if s["game_id"] else ""
    runs = ""
    if len(study.view.runs) > 1:
        items = "".join(f"<li>{esc(v.run.method)}, seed {esc(v.run.seed)}, budget {v.run.budget}: {len(v.trace)} steps"
                        f"</li>" for v in study.view.runs)
        runs = f"<p>runs on this store (the latest is shown):</p><ul>{items}</ul>"
    return (f'<h1><span data-field="method">{esc(s["method"])}</span> on <span data-field="game">{esc(s["game"])}'
            f'</span></h1><p class="path">{esc(study.path)}{game_id} · seed {esc(s["seed"])} · index '
            f'{esc(s["index"])}</p>{_boxes(s)}{_figures(s)}{runs}<h2>Current values (± {ERROR_BAR_Z:g} std)</h2>'
            f'{_value_charts(s)}{_values_table(s, f"values-{study.number}")}{_convergence(s)}'
            f'{_over_time(study.view, s)}{_diagnostics(s)}')


def largest_term(rows: Sequence[dict[str, str]]) -> str:
    """``"x3: 1.25 ± 0.04"``: the term of largest |value| with its ± 1.96 std, from :func:`study_summary`'s rows.

    Args:
        rows: the ``rows`` of a study summary.

    Returns:
        the text (``-`` without values).
    """
    numeric = [r for r in rows if r["value"] != "-"]
    if not numeric:
        return "-"
    top = max(numeric, key=lambda r: abs(float(r["value"])))
    bar = "" if top["std"] == "-" else f" ± {ERROR_BAR_Z * float(top['std']):.4g}"
    return f"{top['term']}: {top['value']}{bar}"


def _short(game: str) -> str:
    """``ImputerGame(n_players=10)`` for ``shapleig.explanation.imputer.ImputerGame(n_players=10)`` (the table's cell)."""
    head, paren, rest = game.partition("(")
    return head.rsplit(".", 1)[-1] + paren + rest


def _group_table(group: Group, now: float, link: str) -> str:
    head = ("<thead><tr><th>store</th><th>game</th><th>method</th><th>status</th><th>spent</th><th>budget</th>"
            "<th>left</th><th>ETA</th><th>last write</th><th>largest term</th></tr></thead>")
    rows = []
    for study in group.studies:
        s = study_summary(study.view, now)
        largest = largest_term(s["rows"])
        status = "problem: see its page" if s["problems"] else s["status"]
        game_id = f' <span class="id">[{esc(s["game_id"])}]</span>' if s["game_id"] else ""
        rows.append(f'<tr data-store="{study.number}"><td><a href="{link.format(study.number)}">{esc(study.name)}</a>'
                    f'</td><td title="{esc(s["game"])}">{esc(_short(s["game"]))}{game_id}</td><td>{esc(s["method"])}'
                    f'</td><td>{esc(status)}</td>'
                    f'<td class="num" data-field="spent">{esc(s["spent"])}</td><td class="num" data-field="budget">'
                    f'{esc(s["budget"])}</td><td class="num">{esc(s["left"])}</td><td>{esc(s["eta"])}</td>'
                    f'<td>{esc(s["last_write"])}</td><td>{esc(largest)}</td></tr>')
    return f'<table class="studies sortable" id="group-{group.studies[0].number}">{head}<tbody>{"".join(rows)}' \
           f"</tbody></table>"


def _rows_swarm(group: Group, now: float) -> str:
    points, labels, units = [], None, "game units"
    for study in group.studies:
        s = study_summary(study.view, now)
        run = s["run"]
        if run is None or not run.trace:
            continue
        last = run.trace[-1]
        labels = labels or run.labels
        units = s["units"]
        if len(last.values) == len(labels):
            points.append(([float(v) for v in last.values],
                           [None] * len(last.values) if last.std is None else [float(x) for x in last.std]))
    if not points:
        return ""
    return beeswarm(labels, points, xlabel=f"value per row ({units})")


def index_main(groups: Sequence[Group], now: float | None = None, link: str = "/s/{}") -> str:
    """The ``<main>`` content of the index: per PATH a sortable table of its studies.

    Args:
        groups: the served groups (views refreshed).
        now: the current time (default: now).
        link: the link of a study's page (``{}``: its number).

    Returns:
        HTML.
    """
    now = time.time() if now is None else now
    parts = []
    for group in groups:
        swarm = _rows_swarm(group, now) if group.kind == "rows" else ""
        skipped = "".join(f'<div class="note">{esc(line)}</div>' for line in group.skipped)
        parts.append(f'<h2 class="path">{esc(group.label)} ({len(group.studies)} '
                     f'{"store" if len(group.studies) == 1 else "stores"})</h2>{skipped}'
                     f'{"<div class=charts>" + swarm + "</div>" if swarm else ""}{_group_table(group, now, link)}')
    return "".join(parts)


def page(title: str, main: str, *, refresh: float = 0.0, nav: str = "") -> tuple[str, str]:
    """A whole HTML page around ``main``, with the stylesheet and script inlined, and its CSP header value.

    Args:
        title: the page's title (escaped here).
        main: the ``<main>`` content.
        refresh: seconds between refreshes (0: a static page).
        nav: the header's links (HTML).

    Returns:
        ``(html, content_security_policy)``.
    """
    script = _asset("dashboard.js")
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    csp = (f"default-src 'none'; script-src 'sha256-{base64.b64encode(digest).decode()}'; style-src 'unsafe-inline'; "
           f"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    stamp = time.strftime("%H:%M:%S")
    html = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{esc(title)}</title><link rel="icon" href="data:,">'
            f'<style>{_asset("dashboard.css")}</style></head><body data-refresh="{refresh:g}"><header>{nav}</header>'
            f'<main id="main">{main}</main><footer>shapleig dashboard · numbers read from the stores, read-only · '
            f'updated <span id="updated">{stamp}</span></footer><script>{script}</script></body></html>')
    return html, csp


# -- serving ----------------------------------------------------------------------------------
class Dashboard:
    """The served groups, their views refreshed at most once per ``refresh / 2`` seconds.

    Args:
        groups: from :func:`find_stores`.
        refresh: seconds between the page's refreshes.
    """

    def __init__(self, groups: list[Group], refresh: float = 2.0):
        self.groups = groups
        self.refresh = float(refresh)
        self.studies = [s for g in groups for s in g.studies]
        self._lock = threading.Lock()

    def _fresh(self, studies: Sequence[Study]) -> None:
        with self._lock:
            for study in studies:
                if time.time() - study.view.refreshed >= self.refresh / 2:
                    study.view.refresh()

    def respond(self, target: str) -> tuple[int, str, str]:
        """The answer to a GET of ``target`` (path and query).

        Args:
            target: the request's target, e.g. ``/s/3?part=main``.

        Returns:
            ``(status, html, content_security_policy)``.
        """
        url = urlsplit(target)
        part = parse_qs(url.query).get("part", [""])[0]
        match = re.fullmatch(r"/s/(\d{1,9})", url.path)
        nav = '<a href="/">all stores</a>' if len(self.studies) > 1 else ""
        if url.path == "/" and len(self.studies) == 1:
            match = re.fullmatch(r"(0)", "0")
        if match and int(match.group(1)) < len(self.studies):
            study = self.studies[int(match.group(1))]
            self._fresh([study])
            main = study_main(study)
            title = f"{study.name}: shapleig dashboard"
        elif url.path == "/":
            self._fresh(self.studies)
            main = index_main(self.groups)
            title = "shapleig dashboard"
        else:
            html, csp = page("not found", '<p class="problem">Not found: this dashboard serves only the stores named '
                             'on its command line, at / and /s/&lt;number&gt;.</p>', nav='<a href="/">all stores</a>')
            return 404, html, csp
        if part == "main":
            return 200, main, ""
        html, csp = page(title, main, refresh=self.refresh, nav=nav)
        return 200, html, csp

    def report(self) -> str:
        """One static HTML file holding every study (the index, then each study's page), for ``--html``.

        Returns:
            the HTML.
        """
        for study in self.studies:
            study.view.refresh()
        now = time.time()
        body = index_main(self.groups, now, link="#study-{}") + "".join(
            f'<section id="study-{s.number}">{study_main(s, now)}</section>' for s in self.studies)
        return page("shapleig report", body)[0]


class _Handler(http.server.BaseHTTPRequestHandler):
    dashboard: Dashboard

    def version_string(self) -> str:
        return "shapleig-dashboard"

    def _send(self, head_only: bool) -> None:
        try:
            status, body, csp = self.dashboard.respond(self.path)
        except Exception as exc:  # noqa: BLE001 - one store's problem must not stop the dashboard
            status, body, csp = 500, f"<p>the dashboard failed: {esc(type(exc).__name__)}: {esc(exc)}</p>", ""
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", csp or "default-src 'none'")
        self.end_headers()
        if not head_only:
            self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self._send(False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._send(True)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the terminal shows the URL only
        return


def make_server(dashboard: Dashboard, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server for ``dashboard`` bound to ``host:port`` (0: a free port).

    Args:
        dashboard: what to serve.
        host: the address to listen on.
        port: the port (0: any free one).

    Returns:
        the server, bound, not yet serving.
    """
    handler = type("Handler", (_Handler,), {"dashboard": dashboard})
    cls = http.server.ThreadingHTTPServer
    if ":" in host:  # an IPv6 address
        cls = type("Server6", (cls,), {"address_family": socket.AF_INET6})
    server = cls((host, port), handler)
    server.daemon_threads = True
    return server


__all__ = ["Dashboard", "Group", "Study", "find_stores", "index_main", "largest_term", "make_server", "page",
           "study_main"]
