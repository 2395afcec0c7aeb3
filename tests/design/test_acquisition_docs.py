"""The worked example of docs/architecture.md ("How to extend: a new acquisition") runs as it stands in the page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from shapleig import FunctionGame, ShaplEIG
from shapleig.design.acquisition import acquisition_names, unregister_acquisition
from shapleig.design.loop import DesignLoop

REPO = Path(__file__).resolve().parents[2]


def _doc_example() -> str:
    """The python block under "### A new acquisition" in docs/architecture.md."""
    section = (REPO / "docs/architecture.md").read_text().split("### A new acquisition", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def _run_doc_example() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "architecture_example"}
    unregister_acquisition("eig-per-cost")  # another run of the page's blocks (tests/project/test_readme.py)
    try:
        exec(compile(_doc_example(), "docs/architecture.md (A new acquisition)", "exec"), namespace)  # noqa: S102
    finally:
        unregister_acquisition("eig-per-cost")  # the block registers it: leave the registry as found
    return namespace


def test_the_documented_acquisition_runs_as_written():
    namespace = _run_doc_example()  # its own asserts: the method name, the evaluations, the registry
    assert "eig-per-cost" not in acquisition_names()
    assert namespace["est"].evaluations == 16


def test_the_documented_acquisition_picks_the_argmax_of_eig_per_cost():
    CostAwareEIG = _run_doc_example()["CostAwareEIG"]
    game = FunctionGame(lambda Z: Z @ np.arange(1.0, 7.0) + 2.0 * Z[:, 0] * Z[:, 1], n_players=6)
    loop = DesignLoop(game, 12, acquisition=CostAwareEIG(cost_per_player=2.0), seed=1, refit="never")
    loop.step()  # the design and the fit (refit="never": the candidate state only grows by conditioning)
    differs = 0
    for step in range(5):
        cand = loop._candidate_state().copy()
        # dense reference from the candidate posterior's EIG, divided by the cost by hand
        ratio = cand.eig() / (1.0 + 2.0 * cand.W.sum(axis=1))
        loop.step()
        j = int(np.flatnonzero((cand.W == loop.selected[step][0]).all(axis=1))[0])
        assert ratio[j] >= ratio.max() * (1 - 1e-9)  # the pick maximises EIG / cost (up to exact ties)
        eig = cand.eig()
        differs += eig[j] < eig.max() * (1 - 1e-9)
    assert differs  # the cost changes some choice: not the plain EIG's picks
    est = ShaplEIG(acquisition=CostAwareEIG()).estimate(game, 12, seed=1)
    assert est.method == "shapleig-eig-per-cost"
