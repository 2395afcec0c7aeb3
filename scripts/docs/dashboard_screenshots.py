"""Take the screenshots of docs/dashboard.md: a study while it runs, and an ``explain_X`` folder.

    python scripts/docs/dashboard_screenshots.py                 # writes docs/img/dashboard-*.png
    python scripts/docs/dashboard_screenshots.py --out /tmp/shots
    python scripts/docs/dashboard_screenshots.py --out /tmp/shots --quick   # a smaller run and folder (the test's)

1. A ShaplEIG run on the demo's game (the importance of 8 LightGBM hyperparameters on diabetes,
   read from its shipped table; 0.05 s per evaluation) writes a store in another process and is
   paused after 28 of its 40 evaluations; ``shapleig dashboard`` serves it and headless Chromium
   (Debian's package) takes the page.
2. ``explain_X`` explains 12 rows of a LightGBM model on diabetes into a store folder; the
   dashboard's page of that folder (the beeswarm with error bars, the table of rows) is taken.

``--quick`` pauses the run at 14 of 20 evaluations and explains 2 rows at budget 16. Each screenshot
is reported on one line: its path, the page's size (the PNG holds the whole page) and what the page
shows (the evaluations spent of the paused run; the rows listed of the folder), so a wrong page is seen.

Needs Chromium (``apt-get install chromium``) and LightGBM.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np


class Sizes(NamedTuple):
    """The run's pause and budget (evaluations) and the explained rows and their budget (coalitions per row)."""

    gate: int
    budget: int
    rows: int
    row_budget: int


FULL = Sizes(gate=28, budget=40, rows=12, row_budget=30)  # the documentation's pictures
QUICK = Sizes(gate=14, budget=20, rows=2, row_budget=16)  # the same pages, smaller (tests/project)
SPENT = "(document.querySelector('[data-field=spent] dd') || {}).textContent"  # the paused run's evaluations
LISTED = "document.querySelectorAll('tr[data-store]').length"  # the folder's rows in its table
HEIGHT = "Math.ceil(document.documentElement.scrollHeight)"  # the page's height in CSS px (the PNG's, at scale 1)


class DemoTableGame:
    """The demo's game from its shipped table, with the hyperparameters' names, pausing once at ``gate``."""

    __module__ = "shipped_table"  # how the page names the game: shipped_table.DemoTableGame
    units = "CV R²"

    def __init__(self, gate_dir: str, gate: int):
        from shapleig_tasks.catalog import resolve_tasks
        from shapleig_tasks.demo import shipped_table
        from shapleig_tasks.tables import TableGame

        game = resolve_tasks(["hpi-diabetes-8"])[0].game()
        game.cache_dir = Path(gate_dir)
        self.table = TableGame.from_npz(shipped_table(game.cache_path()))
        self.feature_names = list(game.players)
        self.n_players = 8
        self.gate_dir, self.gate = gate_dir, gate
        self.calls = 0

    def params(self) -> dict:
        return {"table": "hpi-diabetes-8 shipped"}

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        out = []
        for row in np.asarray(coalitions, dtype=bool):
            if self.calls == self.gate:
                Path(self.gate_dir, "paused").write_text("paused")
                while not Path(self.gate_dir, "go").exists():
                    time.sleep(0.05)
            time.sleep(0.05)
            out.append(float(self.table(row[None])[0]))
            self.calls += 1
        return np.array(out)


def write_run(store: str, gate_dir: str, sizes: Sizes) -> None:
    from shapleig import EvaluationStore, ShaplEIG

    with EvaluationStore(store, game_id="hpi-diabetes-8") as evaluations:
        ShaplEIG().estimate(DemoTableGame(gate_dir, sizes.gate), sizes.budget, seed=0, store=evaluations)


def explain_folder(folder: Path, sizes: Sizes) -> None:
    import lightgbm as lgb
    from sklearn.datasets import load_diabetes

    import shapleig

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = lgb.LGBMRegressor(n_estimators=50, verbose=-1).fit(X, y)
    shapleig.explain_X(model, X.sample(50, random_state=0), X.iloc[:sizes.rows], budget=sizes.row_budget, seed=0,
                       store=folder, progress=False, exact_if_cheap=False, game_id="lgbm-diabetes-50-trees")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"), help="folder for the PNGs (default docs/img)")
    parser.add_argument("--quick", action="store_true", help="a smaller run and folder (14 of 20 evaluations, 2 rows)")
    parser.add_argument("--write-run", nargs=2, metavar=("STORE", "GATE_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.write_run:
        write_run(*args.write_run, sizes)
        return
    from _browser import Browser, find_chromium
    from _dashboard_runs import DashboardProcess, wait_for_file

    chromium = find_chromium() or sys.exit("no Chromium found: apt-get install chromium")
    out = Path(args.out)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory(prefix="shapleig-shots-") as tmp:
        work = Path(tmp)
        store = work / "hpi-diabetes-8.sqlite"
        run = subprocess.Popen([sys.executable, __file__, "--write-run", str(store), str(work),
                                *(["--quick"] if args.quick else [])], env=env)
        try:
            wait_for_file(work / "paused", run, "the pause of the run")
            with DashboardProcess(store) as dash, Browser(chromium) as browser:
                browser.open(dash.url)
                browser.wait_for("document.querySelectorAll('svg.chart').length >= 4", "the charts")
                height, spent = browser.evaluate(HEIGHT), browser.evaluate(SPENT)
                shot = browser.screenshot(out / "dashboard-study.png")
                print(f"wrote {shot}: page 1200 x {height} px; the run paused at {sizes.gate} of {sizes.budget} "
                      f"evaluations, the page shows {spent} spent")
        finally:
            (work / "go").write_text("go")
            run.wait(timeout=300)
        explain_folder(work / "rows", sizes)
        with DashboardProcess(work / "rows") as dash, Browser(chromium) as browser:
            browser.open(dash.url)
            height, listed = browser.evaluate(HEIGHT), browser.evaluate(LISTED)
            shot = browser.screenshot(out / "dashboard-explain-x.png")
            print(f"wrote {shot}: page 1200 x {height} px; {sizes.rows} rows explained, the page lists {listed}")


if __name__ == "__main__":
    main()
