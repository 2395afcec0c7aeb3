"""Fault injection (slow): kill -9 store-backed ShaplEIG runs at random points, resume, count.

Over 60 trials (serial evaluator, a user chunk size, a process pool, Dask; kills in the initial
design, in a batch, during a refit, during a store write, and at random times) no finished
evaluation is lost or repeated, no wrong value is served, and every resumed run ends with the
estimate of an uninterrupted run. ``scripts/studies/fault_injection.py`` runs the same campaign and
prints the figures; here they are printed too (``pytest -s``) and asserted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "studies"))


@pytest.mark.slow
def test_kill_minus_nine_at_random_points_loses_and_repeats_nothing():
    import fault_injection

    campaign = fault_injection.run_campaign(n_trials=60, seed=2026)
    summary = campaign.summary()
    print("\n".join(f"{k}: {v}" for k, v in summary.items()))
    assert summary["trials run"] == 60
    assert summary["faults injected"] >= 50, summary
    assert summary["finished evaluations before the kills"] > 100, summary  # the kills hit real work
    assert all(summary["faults by point"].get(f, 0) >= 2 for f in ("design", "batch", "refit", "write", "random"))
    assert all(n >= 5 for n in summary["faults by configuration"].values())
    assert summary["evaluations lost"] == 0, summary
    assert summary["evaluations repeated"] == 0, summary
    assert summary["wrong values served"] == 0, summary
    assert summary["resumed estimates differing from an uninterrupted run"] == 0, summary


@pytest.mark.slow
def test_concurrent_creation_and_hung_evaluations_campaigns():
    import fault_injection

    creation = fault_injection.run_creation_campaign(trials=50, processes=4)
    print(creation)
    assert creation["opens"] == 200 and creation["failed opens"] == 0, creation
    hangs = fault_injection.run_hang_campaign(trials=5, seed=2026)
    print(hangs)
    assert hangs["B finished"] == 5 and hangs["wrong values served"] == 0, hangs
    assert hangs["A reported the timeout"] == 5 and hangs["claims left behind"] == 0, hangs
    assert hangs["B max wait s"] < hangs["lease s"] / 2, hangs


@pytest.mark.slow
def test_store_edge_campaigns_of_issue_27():
    """Hard links refused, skewed dead claims taken over, Ctrl-C of `shapleig run` resumed,
    tampered stores refused (about a minute)."""
    import fault_injection

    found = fault_injection.run_store_edge_campaigns(link_trials=2, skew_trials=2, interrupt_trials=2, tamper=True)
    print(found)
    links, skew = found["hard links"], found["clock skew"]
    assert links["refused naming the links"] == links["opens"] == 4 and links["values lost"] == 0, links
    assert skew["B finished"] == 2 and skew["wrong values served"] == 0, skew  # within 30 s, not the hour
    ctrl_c = found["Ctrl-C of shapleig run"]
    assert ctrl_c["exited 130"] == 2 and ctrl_c["runs kept"] >= 2 and ctrl_c["kept runs recomputed"] == 0, ctrl_c
    assert ctrl_c["tables incomplete"] == 0 and ctrl_c["tables differing from an uninterrupted run"] == 0, ctrl_c
    tampered = found["tampered stores"]
    assert tampered["refused"] == tampered["doctored stores"] and tampered["non-finite values served"] == 0, tampered


def test_edited_values_campaign_of_issue_34():
    """Finite values edited by hand, a deleted row, a row copied in from another game's store: every
    edited store is refused and no wrong value is served (a few seconds)."""
    import fault_injection

    edited = fault_injection.run_edit_campaign()
    print(edited)
    assert edited["refused"] == edited["edited stores"] == 6 and edited["wrong values served"] == 0, edited
@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_fifo_campaign_of_issue_34():
    """``shapleig run`` with a FIFO at its run journal or results table returns with exit 2 (a few seconds)."""
    import fault_injection

    found = fault_injection.run_fifo_campaign()
    print(found)
    assert found["returned"] == found["commands"] == 2 and found["hung (killed)"] == 0, found
    assert found["exited 2 naming the FIFO"] == 2 and found["FIFOs replaced"] == 0, found


def test_hpi_campaign_of_issue_34():
    """A HyperSHAP game's store reused with another searcher seed, sample count or surrogate: each variant's
    values differ from the first game's, and each is refused (none is served the first game's values)."""
    pytest.importorskip("hypershap")
    import fault_injection

    found = fault_injection.run_hpi_campaign()
    print(found)
    assert found["variants whose values differ"] == found["variants"] == 3, found
    assert found["refused"] == 3 and found["wrong values served"] == 0, found
