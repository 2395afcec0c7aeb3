"""``shapleig dashboard`` and ``shapleig status`` without a browser: what is served (only the named
stores, names escaped), that status prints the page's numbers, the command-line errors, and that
killing the dashboard, a reader or the run at any of their moments loses nothing and blocks nothing.
The browser tests are in test_dashboard_browser.py."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from shapleig import EvaluationStore, FunctionGame, ShaplEIG, explain_X
from shapleig.errors import StoreError
from shapleig.estimation.store_view import StoreView, read_only_connection
from shapleig_tasks.dashboard import Dashboard, find_stores
from shapleig_tasks.dashboard_cli import status_lines

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from _dashboard_runs import BUDGET, SEED, DashboardProcess, GatedRun, P  # noqa: E402
from _games_for_parallel import GatedGame, QuadraticGame, read_log  # noqa: E402

HOSTILE = "<script>alert('id')</script><img src=x onerror=alert(1)>\"'&"


class _Numbers(HTMLParser):
    """The figures (``data-field``) and the values table (``data-term`` rows) of a page, and its script tags."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}
        self.terms: dict[str, dict[str, str]] = {}
        self.scripts = 0
        self._field: str | None = None
        self._term: str | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "tr" and "data-term" in a:
            self._term = a["data-term"]
            self.terms[self._term] = {}
        if "data-field" in a:
            self._field, self._text = a["data-field"], ""

    def handle_data(self, data):
        self._text += data

    def handle_endtag(self, tag):
        if self._field and tag in ("td", "div", "span", "code"):
            text = self._text.strip()
            if self._term is not None and tag == "td":
                self.terms[self._term][self._field] = text
            elif tag == "div":  # a figure: <div data-field><dt>label</dt><dd>value</dd></div>
                self.fields[self._field] = self._dd
            else:
                self.fields[self._field] = text
            self._field = None
        if tag == "dd":
            self._dd = self._text.split("\n")[-1].strip()
        if tag == "dt":
            self._text = ""
        if tag == "tr":
            self._term = None


def numbers(html: str) -> _Numbers:
    parser = _Numbers()
    parser.feed(html)
    return parser


def _stored_latest(path: Path) -> tuple[int, list[float], list[float]]:
    """The latest entry of the latest step of the store's one run, read with plain SQL."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT evaluations, estimate, std FROM trace WHERE step = (SELECT MAX(step) FROM trace) "
                          "ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        con.close()
    return int(row[0]), json.loads(row[1]), json.loads(row[2])


def _store(tmp_path: Path, name: str = "s.sqlite", **kwargs) -> Path:
    path = tmp_path / name
    ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED, store=path, **kwargs)
    return path


# -- what is served -------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["/../etc/passwd", "/s/0/../../etc/passwd", "/s/%2e%2e/%2e%2e/etc/passwd",
                                    "/s/1", "/s/-1", "/s/0x0", "/static/dashboard.js", "//etc/passwd",
                                    "/s/0/", "/s/" + "9" * 12, "/s/0%00"])
def test_only_the_named_stores_are_served(tmp_path, target):
    dashboard = Dashboard(find_stores([str(_store(tmp_path))]))
    status, body, _ = dashboard.respond(target)
    assert status == 404 and "root:" not in body and "Not found" in body


def test_a_live_server_refuses_a_path_outside_its_stores(tmp_path):
    path = _store(tmp_path)
    with DashboardProcess(path) as dash:
        for target in ("/../../../../etc/passwd", "/s/0/../../../etc/hosts", "/%2e%2e/%2e%2e/etc/passwd"):
            status, body = dash.get(target)
            assert status == 404 and "root:" not in body and "localhost" not in body
        status, body = dash.get("/s/0")
        assert status == 200 and numbers(body).fields["budget"] == str(BUDGET)


def test_a_symbolic_link_out_of_a_named_folder_is_not_served(tmp_path):
    inside, outside = tmp_path / "runs", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    _store(inside, "a.sqlite")
    secret = _store(outside, "secret.sqlite")
    (inside / "link.sqlite").symlink_to(secret)
    (inside / "sub").symlink_to(outside, target_is_directory=True)
    (group,) = find_stores([str(inside)])
    assert [s.name for s in group.studies] == ["a.sqlite"]
    assert any("link.sqlite: a symbolic link out of" in line for line in group.skipped)
    dashboard = Dashboard([group])
    status, body, _ = dashboard.respond("/")
    assert status == 200 and "secret" not in body.replace("link.sqlite: a symbolic link", "")
    assert dashboard.respond("/s/1")[0] == 404


def test_names_and_game_ids_are_escaped(tmp_path):
    path = tmp_path / "s.sqlite"
    names = [HOSTILE, "b", "c", "d"]
    explain_X(lambda Z: Z @ np.array([1.0, -2.0, 0.5, 0.0]), np.zeros((4, 4)), np.eye(4)[:2], budget=12,
              store=tmp_path / "rows", progress=False, exact_if_cheap=False, game_id=HOSTILE, feature_names=names)
    ShaplEIG(pool_size=64).estimate(FunctionGame(lambda Z: Z @ np.arange(1.0, 7.0), n_players=6, game_id=HOSTILE),
                                    BUDGET, seed=0, store=path)
    dashboard = Dashboard(find_stores([str(path), str(tmp_path / "rows")]))
    for target in ("/", "/s/0", "/s/1", "/s/0?part=main"):
        status, body, _ = dashboard.respond(target)
        assert status == 200
        assert "<script>alert" not in body and "<img src=x" not in body
        assert "&lt;script&gt;alert(&#x27;id&#x27;)&lt;/script&gt;" in body  # shown, as text
        assert numbers(body).scripts == (0 if "part=main" in target else 1)  # the page's own script only
    assert numbers(dashboard.respond("/s/1")[1]).terms.keys() >= {HOSTILE}  # the name survives as the row's key
    assert HOSTILE in "\n".join(status_lines(find_stores([str(tmp_path / "rows")])))  # the terminal prints it as is


def test_the_content_security_policy_allows_only_the_pages_own_script(tmp_path):
    status, body, csp = Dashboard(find_stores([str(_store(tmp_path))])).respond("/s/0")
    script = re.search(r"<script>(.*?)</script>", body, flags=re.S).group(1)
    import base64

    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp and "unsafe-eval" not in csp
    assert "http://" not in body.replace("http://www.w3.org/2000/svg", "") and "https://" not in body  # offline


# -- status prints the page's numbers ------------------------------------------------------------
def _status_fields(lines: list[str]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    text = "\n".join(lines)
    fields = dict(re.findall(r"(status|budget|spent|left|stored|failed|ETA|in flight): ([^·\n]+?)(?: ·|\n|$)", text))
    terms = {m[0]: (m[1], m[2]) for m in re.findall(r"^  (x\d)\s+(\S+)\s+(\S+)\s+\[", text, flags=re.M)}
    return {k: v.strip() for k, v in fields.items()}, terms


def test_status_prints_the_same_budget_evaluations_and_values_as_the_page(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    store = folder / "s.sqlite"
    with GatedRun(folder, store, gates=(10,)) as run:
        run.wait_at(10)  # a run in progress: 10 of 16 evaluations stored
        for when in ("running", "finished"):
            groups = find_stores([str(store)])
            page = numbers(Dashboard(groups).respond("/s/0")[1])
            fields, terms = _status_fields(status_lines(find_stores([str(store)])))
            evaluations, values, stds = _stored_latest(store)
            assert page.fields["budget"] == fields["budget"] == str(BUDGET)
            assert page.fields["spent"] == fields["spent"] == str(evaluations) == ("10" if when == "running" else "16")
            assert page.fields["left"] == fields["left"] == str(BUDGET - evaluations)
            assert page.fields["stored"] == fields["stored"] == str(len(read_log(folder / "calls.log")))
            assert len(terms) == len(page.terms) == P
            for j in range(P):  # the same text, and the store's numbers (4 significant digits)
                assert terms[f"x{j}"] == (page.terms[f"x{j}"]["value"], page.terms[f"x{j}"]["std"])
                assert float(terms[f"x{j}"][0]) == pytest.approx(values[j], rel=1e-3)
                assert float(terms[f"x{j}"][1]) == pytest.approx(stds[j], rel=1e-3)
            if when == "running":
                assert page.fields["status"] != "finished"
                run.finish()
    assert page.fields["status"] == fields["status"] == "finished"


def test_status_of_a_folder_lists_every_store(tmp_path):
    for k in range(3):
        ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=k), BUDGET, seed=SEED, store=tmp_path / f"r{k}.sqlite")
    lines = status_lines(find_stores([str(tmp_path)]))
    assert lines[0] == f"{tmp_path}: 3 stores"
    rows = [line for line in lines if re.match(r"  r\d\.sqlite", line)]
    assert len(rows) == 3 and all(re.search(rf"finished\s+{BUDGET}\s+{BUDGET}", r) for r in rows)


# -- the command line -----------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shapleig_tasks.cli", *args], capture_output=True, text=True,
                          cwd=TESTS.parent, env={**os.environ, "PYTHONPATH": str(TESTS.parent)}, timeout=120)


def test_command_line_errors_exit_2_with_one_line(tmp_path):
    store = _store(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not a store")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        cases = {
            ("dashboard", str(tmp_path / "missing.sqlite")): "no such file or folder",
            ("dashboard", str(tmp_path / "notes.txt")): "is not an evaluation store",
            ("dashboard", str(tmp_path / "empty")): "holds no evaluation store",
            ("dashboard", str(store), "--port", "70000"): "give 0..65535",
            ("dashboard", str(store), "--port", "x"): "--port takes an integer",
            ("dashboard", str(store), "--refresh", "0"): "give 0.1 to 3600 seconds",
            ("dashboard", str(store), "--port", str(busy.getsockname()[1])): "cannot listen on 127.0.0.1",
            ("dashboard", str(store), "--html", str(tmp_path / "notes.txt" / "r.html")): "r.html",
            ("dashboard",): "the following arguments are required: PATH",
            ("status", str(tmp_path / "missing.sqlite")): "no such file or folder",
        }
        for args, says in cases.items():
            done = _cli(*args)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            assert done.stderr.count("\n") == 1 and says in done.stderr, (args, done.stderr)
    finally:
        busy.close()


def test_status_and_html_report_from_the_command_line(tmp_path):
    store = _store(tmp_path)
    done = _cli("status", str(store))
    assert done.returncode == 0 and f"budget: {BUDGET} · spent: {BUDGET} · left: 0" in done.stdout
    out = tmp_path / "report.html"
    done = _cli("dashboard", str(tmp_path), "--html", str(out))
    assert done.returncode == 0 and out.is_file()
    page = numbers(out.read_text())
    assert page.fields["budget"] == str(BUDGET) and len(page.terms) == P and page.scripts == 1


# -- reading never blocks or changes a writer; kills lose nothing -----------------------------------
def test_the_reader_never_writes_the_store(tmp_path):
    path = _store(tmp_path)
    with EvaluationStore(path):  # a writer's connection open: the -wal file exists
        pass
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    view = StoreView(str(path))
    for _ in range(3):
        view.refresh()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before and not view.problems
    with read_only_connection(path) as conn, pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("INSERT INTO meta VALUES ('x', 'y')")


READER = """
import sys
sys.path.insert(0, {repo!r})
from shapleig.estimation import store_view
read_runs = store_view.read_runs


def pausing(conn, *args):  # called inside the view's read transaction, after it read the evaluations
    print("reading", conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0], flush=True)
    sys.stdin.readline()  # holds the transaction open until killed
    return read_runs(conn, *args)


store_view.read_runs = pausing
store_view.StoreView({path!r}).refresh()
"""


def test_a_reader_holding_its_transaction_blocks_no_writer_and_its_kill_leaves_nothing(tmp_path):
    path = tmp_path / "s.sqlite"
    game = QuadraticGame(P, seed=1)
    rows = np.array([[(k >> j) & 1 for j in range(P)] for k in range(2**P)], dtype=bool)
    from shapleig import BudgetedGame

    with EvaluationStore(path, timeout=0.0) as store:  # timeout 0: a lock it had to wait for would fail at once
        BudgetedGame(game, 2**P, store=store)(rows[:20])
        reader = subprocess.Popen([sys.executable, "-c", READER.format(repo=str(TESTS.parent), path=str(path))],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert reader.stdout.readline().split() == ["reading", "20"]
        BudgetedGame(game, 2**P, store=store)(rows[:40])  # written while the reader holds its snapshot
        reader.kill()  # SIGKILL inside its read transaction
        assert reader.wait(timeout=60) == -9
        BudgetedGame(game, 2**P, store=store)(rows)
        assert len(store) == 2**P
    with EvaluationStore(path) as store:
        assert store.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        found, values = store.lookup(rows)
        assert found.all() and np.array_equal(values, game(rows))  # as evaluated, one coalition at a time


WRITER = """
import sqlite3, sys
conn = sqlite3.connect({path!r}, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO evaluations (fingerprint, coalition, value, seconds, time, status, attempt) "
             "VALUES ('x', '111111', 1.0, 0.0, 0.0, 'ok', 1)")
print("in transaction", flush=True)
sys.stdin.readline()
"""


def test_a_writer_killed_inside_its_transaction_leaves_the_reader_and_the_next_run_whole(tmp_path):
    path = _store(tmp_path)
    view = StoreView(str(path)).refresh()
    stored = len(view.times)
    writer = subprocess.Popen([sys.executable, "-c", WRITER.format(path=str(path))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "in transaction"
    assert len(StoreView(str(path)).refresh().times) == stored  # the open transaction is not seen
    writer.kill()
    assert writer.wait(timeout=60) == -9
    again = StoreView(str(path)).refresh()
    assert len(again.times) == stored and not again.problems
    est = ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED, store=path)
    assert est.info["n_game_evaluations"] == 0  # nothing lost, nothing half-written


def test_killing_the_dashboard_and_the_run_at_their_moments_loses_nothing(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    store = folder / "s.sqlite"
    with GatedRun(folder, store, gates=(9, 12)) as run:
        run.wait_at(9)
        with DashboardProcess(store) as dash:
            assert numbers(dash.get("/s/0")[1]).fields["spent"] == "9"
            dash.kill()  # the dashboard killed while the run is paused: the run goes on
        run.go(9)
        run.wait_at(12)
        with DashboardProcess(store) as dash:
            assert numbers(dash.get("/s/0")[1]).fields["spent"] == "12"
            run.kill()  # the run killed while the dashboard serves: the page keeps its numbers
            page = numbers(dash.get("/s/0")[1])
            assert page.fields["spent"] == "12" and page.fields["status"] != "finished"
            game = GatedGame(P, seed=1, log_path=str(folder / "calls.log"), gate_dir=str(folder))  # no gates now
            resumed = ShaplEIG(pool_size=64).estimate(game, BUDGET, seed=SEED, store=store)
            page = numbers(dash.get("/s/0")[1])
            assert page.fields["spent"] == str(BUDGET) and page.fields["status"] == "finished"
            for j in range(P):
                assert page.terms[f"x{j}"]["value"] == f"{resumed.values[j]:.4g}"
    calls = read_log(folder / "calls.log")
    assert len(calls) == len(set(calls)) == BUDGET  # nothing evaluated twice, nothing lost
    reference = ShaplEIG(pool_size=64).estimate(QuadraticGame(P, seed=1), BUDGET, seed=SEED)
    np.testing.assert_array_equal(resumed.values, reference.values)


def test_a_damaged_store_is_reported_on_its_page_and_the_others_still_served(tmp_path):
    good, bad = _store(tmp_path, "good.sqlite"), _store(tmp_path, "bad.sqlite")
    con = sqlite3.connect(bad)
    con.execute("UPDATE evaluations SET value = value + 1 WHERE id = 3")
    con.commit()
    con.close()
    dashboard = Dashboard(find_stores([str(tmp_path)]))
    index = dashboard.respond("/")[1]
    assert "problem: see its page" in index
    status, body, _ = dashboard.respond("/s/0")  # bad.sqlite comes first
    assert status == 200 and "row 3 does not match its digest" in body
    assert numbers(dashboard.respond("/s/1")[1]).fields["spent"] == str(BUDGET)
    with pytest.raises(StoreError):
        read_only_connection(tmp_path / "missing.sqlite")
    assert good.exists()


def test_a_store_of_an_earlier_version_is_shown_with_a_note(tmp_path):
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    for statement in ("DROP TABLE trace", "DROP TABLE trace_runs", "DROP TABLE trace_ends", "ALTER TABLE evaluations DROP COLUMN digest",
                      "DELETE FROM meta WHERE key = 'row_key'"):
        con.execute(statement)
    con.commit()
    con.close()
    status, body, _ = Dashboard(find_stores([str(path)])).respond("/s/0")
    page = numbers(body)
    assert status == 200 and page.fields["stored"] == str(BUDGET) and "earlier version" in body
    assert "No estimate yet" in body





def test_shapleig_run_with_a_store_dir_is_visible_run_by_run(tmp_path):
    out, stores = tmp_path / "r.parquet", tmp_path / "stores"
    done = _cli("run", "--tasks", "wvg-7", "--methods", "shapleig:pool_size=32", "permutation", "--budgets", "10", "14",
                "--seeds", "1", "--out", str(out), "--store-dir", str(stores), "--quiet")
    assert done.returncode == 0, done.stderr
    import pandas as pd

    df = pd.read_parquet(out)
    groups = find_stores([str(stores)])
    names = sorted(s.name for s in groups[0].studies)
    assert len(names) == 3 and sum("permutation" in n for n in names) == 2  # shapleig: one anytime run at 14
    lines = status_lines(groups)
    assert sum(" finished " in line for line in lines) == 3
    (ours,) = [s for s in groups[0].studies if "shapleig" in s.name]
    ours.view.refresh()
    last = ours.view.latest_run.trace[-1]
    row = df[(df.method_name == "shapleig") & (df.budget == 14)].iloc[0]
    np.testing.assert_array_equal(last.values, row["values"])  # the table's values are the store's
    assert _cli("run", "--tasks", "wvg-7", "--methods", "permutation", "--budgets", "10", "--out", str(out),
                "--store-dir", str(tmp_path / "r.parquet" / "x")).returncode == 2
