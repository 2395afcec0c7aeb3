"""The model-swap campaign of ``scripts/studies/fault_injection.py`` (slow): ``explain`` with a
store never serves another model's, background's or row's values, and serves a rebuilt model's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "studies"))


@pytest.mark.slow
def test_model_swaps_are_refused_and_rebuilt_models_served():
    pytest.importorskip("lightgbm")
    pytest.importorskip("torch")
    import fault_injection

    out = fault_injection.run_model_swap_campaign(trials=20, seed=7)
    print(out)
    assert out["swaps"] == out["swaps refused naming the difference"] == 14
    assert out["controls"] == out["controls served"] == 6
    assert out["wrong values served"] == 0 and out["spurious refusals"] == 0
