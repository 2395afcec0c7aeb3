"""``shapleig dashboard`` and ``shapleig status``: watch evaluation stores while their runs write them.

    shapleig dashboard PATH... [--host 127.0.0.1] [--port 8765] [--refresh 2] [--html report.html]
    shapleig status PATH...

PATH: a store file, a folder of stores (an ``explain_X`` store folder, an ``hpi`` output folder, the
``--store-dir`` of ``shapleig run``), or several. ``status`` prints the figures of the page on one
terminal screen (for a head node over SSH): the same budget, evaluations and values, formatted by
the same code (:func:`shapleig.estimation.store_view.study_summary`). Both only read the stores.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from shapleig.estimation.result import ERROR_BAR_Z
from shapleig.estimation.store_view import study_summary
from shapleig_tasks.cli_common import UsageError

STATUS_TERMS = 15  # terms listed by `shapleig status` for one store (largest |value| first)


def _groups(paths: list[str]) -> Any:
    from shapleig_tasks.dashboard import find_stores

    try:
        return find_stores(paths)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port takes an integer, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"--port {port}: give 0..65535 (0: any free port)")
    return port


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--refresh takes seconds, got {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"--refresh {text}: give 0.1 to 3600 seconds")
    return value


def cmd_dashboard(args: argparse.Namespace) -> int:
    from shapleig_tasks.dashboard import Dashboard, make_server

    groups = _groups(args.paths)
    dashboard = Dashboard(groups, refresh=args.refresh)
    if args.html:
        from shapleig_tasks.harness import check_output_path

        try:
            out = check_output_path(args.html)
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc)) from exc
        out.write_text(dashboard.report(), encoding="utf-8")
        print(f"wrote {out} ({len(dashboard.studies)} stores; a static page, open it in any browser)")
        return 0
    try:
        server = make_server(dashboard, args.host, args.port)
    except (OSError, OverflowError) as exc:
        why = "the port is in use" if getattr(exc, "errno", None) == 98 else (getattr(exc, "strerror", None) or exc)
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {why}; give another --port (0: any free "
                         f"port) or --host") from exc
    host, port = server.server_address[:2]
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    print(f"shapleig dashboard: {len(dashboard.studies)} store{'s' if len(dashboard.studies) != 1 else ''} at "
          f"http://{'[' + host + ']' if ':' in str(host) else host}:{port}/ (read-only; Ctrl-C stops)", flush=True)
    if not loopback:
        print(f"  note: listening on {args.host}: anyone who can reach it can read these stores' values", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.server_close()
    return 0


def status_lines(groups: Any, now: float | None = None) -> list[str]:
    """The text ``shapleig status`` prints: per store its figures and values (one line per store in a folder).

    Args:
        groups: from :func:`shapleig_tasks.dashboard.find_stores`.
        now: the current time (default: now).

    Returns:
        the lines.
    """
    from shapleig_tasks.dashboard import largest_term

    now = time.time() if now is None else now
    studies = [s for g in groups for s in g.studies]
    for study in studies:
        study.view.refresh()
    if len(studies) == 1:
        return _one_store(study_summary(studies[0].view, now))
    out = []
    for group in groups:
        out.append(f"{group.label}: {len(group.studies)} stores")
        out += [f"  skipped {line}" for line in group.skipped]
        width = max(len(s.name) for s in group.studies)
        out.append(f"  {'store':<{width}}  {'method':<14} {'status':<20} {'spent':>7} {'budget':>7} {'ETA':>8}  "
                   f"largest term (± {ERROR_BAR_Z:g} std)")
        for study in group.studies:
            s = study_summary(study.view, now)
            status = "problem: " + s["problems"][0] if s["problems"] else s["status"]
            out.append(f"  {study.name:<{width}}  {s['method']:<14} {status[:20]:<20} {s['spent']:>7} {s['budget']:>7} "
                       f"{s['eta']:>8}  {largest_term(s['rows'])}")
    return out


def _one_store(s: dict[str, Any]) -> list[str]:
    out = [s["path"], f"  {s['method']} on {s['game']}" + (f" · game id {s['game_id']}" if s["game_id"] else "")
           + f" · seed {s['seed']} · {s['index']}"]
    out += [f"  PROBLEM: {p}" for p in s["problems"]] + [f"  note: {n}" for n in s["notes"]]
    out.append(f"  status: {s['status']} · budget: {s['budget']} · spent: {s['spent']} · left: {s['left']} · "
               f"stored: {s['stored']} · failed: {s['failed']}")
    out.append(f"  time per evaluation: {s['rate']} · ETA: {s['eta']} · in flight: {s['in_flight']} · "
               f"processes evaluating: {s['workers']} · last write: {s['last_write']} · trace steps: {s['steps']}")
    rows = sorted(s["rows"], key=lambda r: -abs(float(r["value"])) if r["value"] != "-" else 0.0)
    if rows:
        width = max(len(r["term"]) for r in rows[:STATUS_TERMS])
        out.append(f"  {'term':<{width}}  {'value':>10}  {'std':>10}  {f'± {ERROR_BAR_Z:g} std interval':>24}   "
                   f"({s['units']})")
        for r in rows[:STATUS_TERMS]:
            interval = "-" if r["low"] == "-" else f"[{r['low']}, {r['high']}]"
            out.append(f"  {r['term']:<{width}}  {r['value']:>10}  {r['std']:>10}  {interval:>24}")
        if len(rows) > STATUS_TERMS:
            out.append(f"  ... {len(rows) - STATUS_TERMS} more terms (shapleig dashboard shows them all)")
    else:
        out.append("  no estimate recorded yet (the loop records one per step; most baselines at the end)")
    return out


def cmd_status(args: argparse.Namespace) -> int:
    for line in status_lines(_groups(args.paths)):
        print(line)
    return 0


def add_dashboard_parsers(sub: Any) -> None:
    """Register ``dashboard`` and ``status`` on the ``shapleig`` parser's subcommands.

    Args:
        sub: the subparsers object of the ``shapleig`` parser.
    """
    p = sub.add_parser(
        "dashboard", help="a live local web page for evaluation stores (runs, explain_X and hpi folders)",
        description="Serve a page per evaluation store that refreshes while its runs write: budget spent and left, "
                    "evaluations over time and an ETA, the current values with ± 1.96 std error bars, each value "
                    "against evaluations, kernel weights and diagnostics. Read-only: runs are never blocked.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a store file, or a folder of stores; several allowed")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0: any free port)")
    p.add_argument("--refresh", type=_seconds, default=2.0, help="seconds between the page's refreshes (default 2)")
    p.add_argument("--html", default=None, metavar="OUT.html",
                   help="write one static page of every store instead of serving (works offline)")
    p.set_defaults(func=cmd_dashboard)
    p = sub.add_parser("status", help="the dashboard's figures on one terminal screen",
                       description="Print each store's budget, evaluations, ETA and values (± 1.96 std), as the "
                                   "dashboard shows them. Read-only.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a store file, or a folder of stores; several allowed")
    p.set_defaults(func=cmd_status)


__all__ = ["add_dashboard_parsers", "status_lines"]
