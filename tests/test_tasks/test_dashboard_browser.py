"""``shapleig dashboard`` in a real browser (headless Chromium, Debian's package, driven through the
DevTools protocol with the standard library: tests/_browser.py).

1. The page of a run that is writing shows the store's numbers, follows them as evaluations arrive
   (its script refreshes it: no reload), and the console shows no error; a screenshot is kept
   (``SHAPLEIG_ARTEFACTS``, else the test's folder).
2. A store whose game id and player names hold ``<script>`` and an ``onerror`` handler shows them as
   text and runs nothing; a path outside the named stores (``/../``) is refused; the static report
   opens from a file with the same numbers and no error.

Skipped without Chromium unless ``SHAPLEIG_REQUIRE_BROWSER=1`` (CI sets it).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shapleig import FunctionGame, ShaplEIG, explain_X

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from _browser import Browser, require_chromium  # noqa: E402
from _dashboard_runs import BUDGET, DashboardProcess, GatedRun, P  # noqa: E402

FIELD = "(document.querySelector('[data-field={0}] dd') || {{}}).textContent"
TERMS = ("JSON.stringify(Array.from(document.querySelectorAll('tr[data-term]')).map(r => [r.dataset.term, "
         "r.querySelector('[data-field=value]').textContent, r.querySelector('[data-field=std]').textContent]))")


def _artefact(tmp_path: Path, name: str) -> Path:
    folder = Path(os.environ.get("SHAPLEIG_ARTEFACTS") or tmp_path)
    return folder / name


def _latest(path: Path) -> tuple[int, list[float], list[float]]:
    """The store's latest trace entry (the newest row of its last step), read with plain SQL."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT evaluations, estimate, std FROM trace WHERE step = (SELECT MAX(step) FROM trace) "
                          "ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        con.close()
    return int(row[0]), json.loads(row[1]), json.loads(row[2])


def _shows_the_store(browser: Browser, path: Path) -> int:
    """Check the rendered figures and values against the store; return the evaluations shown."""
    evaluations, values, stds = _latest(path)
    assert browser.evaluate(FIELD.format("spent")) == str(evaluations)
    assert browser.evaluate(FIELD.format("budget")) == str(BUDGET)
    assert browser.evaluate(FIELD.format("left")) == str(BUDGET - evaluations)
    shown = {term: (float(v), float(s)) for term, v, s in json.loads(browser.evaluate(TERMS))}
    assert sorted(shown) == [f"x{j}" for j in range(P)]
    for j in range(P):  # 4 significant digits on the page
        assert shown[f"x{j}"][0] == pytest.approx(values[j], rel=1e-3, abs=1e-12)
        assert shown[f"x{j}"][1] == pytest.approx(stds[j], rel=1e-3, abs=1e-12)
    return evaluations


def test_the_page_of_a_running_study_shows_the_stores_numbers_and_follows_them(tmp_path):
    chromium = require_chromium()
    folder = tmp_path / "run"
    folder.mkdir()
    store = folder / "s.sqlite"
    with GatedRun(folder, store, gates=(9, 12)) as run, Browser(chromium) as browser:
        run.wait_at(9)
        with DashboardProcess(store, refresh=0.2) as dash:
            browser.open(dash.url + "s/0")
            assert _shows_the_store(browser, store) == 9
            refreshes = int(browser.evaluate("document.body.dataset.refreshes || 0"))
            run.go(9)  # three more evaluations arrive
            run.wait_at(12)
            browser.wait_for(f"{FIELD.format('spent')} === '12'", "12 evaluations spent")  # its script refreshed it
            assert int(browser.evaluate("document.body.dataset.refreshes")) > refreshes
            assert _shows_the_store(browser, store) == 12
            assert browser.evaluate("document.querySelectorAll('svg.chart').length") >= 4
            legend = browser.evaluate("document.querySelector('svg.chart').textContent")
            assert "± 1.96 std (95% interval)" in legend and "game units" in legend
            browser.screenshot(_artefact(tmp_path, "dashboard-running-study.png"))
            run.go(12)
            # the run records its end after its final entries: finished means the final read-out is shown
            browser.wait_for(f"{FIELD.format('status')} === 'finished'", "the run finished")
            assert _shows_the_store(browser, store) == BUDGET
            assert browser.errors == []


def test_a_hostile_game_id_runs_nothing_paths_outside_are_refused_and_the_report_opens_offline(tmp_path):
    chromium = require_chromium()
    hostile = "<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">"
    store = tmp_path / "s.sqlite"
    ShaplEIG(pool_size=64).estimate(FunctionGame(lambda Z: Z @ np.arange(1.0, 7.0), n_players=6, game_id=hostile),
                                    BUDGET, seed=0, store=store)
    rows = tmp_path / "rows"
    explain_X(lambda Z: Z @ np.array([1.0, -2.0, 0.5, 0.0]), np.zeros((4, 4)), np.eye(4)[:3], budget=12,
              store=rows, progress=False, exact_if_cheap=False, game_id="m", feature_names=[hostile, "b", "c", "d"])
    with Browser(chromium) as browser, DashboardProcess(store, rows) as dash:
        for target in ("", "s/0", "s/1"):
            browser.open(dash.url + target)
            assert browser.evaluate("document.title") != "owned"
            assert browser.evaluate("document.scripts.length") == 1  # the page's own script only
            assert browser.evaluate("document.querySelectorAll('img').length") == 0
            assert hostile in browser.evaluate("document.body.textContent")  # shown as text
        assert browser.evaluate("document.querySelector('svg[aria-label=\"beeswarm of the rows\"]') === null")
        browser.open(dash.url)
        assert browser.evaluate("document.querySelector('svg[aria-label=\"beeswarm of the rows\"]') !== null")
        browser.evaluate("document.querySelector('#group-1 th:nth-child(5)').click()")  # sort the rows by spent
        assert browser.evaluate("document.querySelector('#group-1 th:nth-child(5)').getAttribute('aria-sort')") \
            == "ascending"
        browser.screenshot(_artefact(tmp_path, "dashboard-explain-x-folder.png"))
        assert browser.errors == []
        browser.open(dash.url + "%2e%2e/%2e%2e/%2e%2e/etc/passwd")  # a path outside the stores: refused
        assert "Not found" in browser.evaluate("document.body.textContent")
        assert "root:" not in browser.evaluate("document.body.textContent")
        assert [e for e in browser.errors if "404" not in e] == []  # the refusal is the only error logged
    report = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "shapleig_tasks.cli", "dashboard", str(store), str(rows), "--html",
                           str(report)], capture_output=True, text=True, cwd=TESTS.parent, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(TESTS.parent)})
    assert done.returncode == 0, done.stderr
    with Browser(chromium) as browser:
        browser.open(report.as_uri())
        assert browser.evaluate("document.title") != "owned" and browser.evaluate("document.scripts.length") == 1
        assert browser.evaluate(FIELD.format("budget")) == str(BUDGET)
        assert browser.evaluate("document.querySelectorAll('section[id^=study-]').length") == 4
        assert browser.errors == []
