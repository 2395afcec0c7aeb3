"""scripts/studies/readout_rules.py: its rules from hand-made families, and the recorded default equal to the product's std."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "studies" / "readout_rules.py"


def _module():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("readout_rules", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


RR = _module()


def _family(mean, var, loo_errors=(0.1, -0.1), loo_var=(1.0, 1.0)):
    return {"mean": np.asarray(mean, float), "cov": np.diag(np.asarray(var, float)),
            "loo": [(1.0, np.asarray(loo_errors, float), np.asarray(loo_var, float))]}


def _record():
    # fitted mean (1, 0), a kernel family moved by (0.5, 0) and a graded one by (0, -1); unit 2
    return {"unit": 2.0, "weights": {"fitted": 0.5, "kernel:ard": 0.25, "graded": 0.25},
            "families": {"fitted": _family([1.0, 0.0], [0.04, 0.09]),
                         "kernel:ard": _family([1.5, 0.0], [1.0, 1.0], loo_errors=(3.0, -3.0)),
                         "graded": _family([1.0, -1.0], [0.16, 0.25])}}


def test_rules_from_hand_made_families():
    rec = _record()
    # default: the recorded weights, law of total variance about the fitted mean, times the unit
    expected = 2.0 * np.sqrt([0.5 * 0.04 + 0.25 * (1.0 + 0.25) + 0.25 * 0.16,
                              0.5 * 0.09 + 0.25 * 1.0 + 0.25 * (0.25 + 1.0)])
    np.testing.assert_allclose(RR.combine(rec, "default"), expected, rtol=1e-12)
    third = 1.0 / 3.0
    expected = 2.0 * np.sqrt([third * (0.04 + 1.25 + 0.16), third * (0.09 + 1.0 + 1.25)])
    np.testing.assert_allclose(RR.combine(rec, "equal"), expected, rtol=1e-12)
    np.testing.assert_allclose(RR.combine(rec, "fitted"), 2.0 * np.sqrt([0.04, 0.09]), rtol=1e-12)
    # the kernel family keeps its disagreement, its own variance goes to the fitted mixture's
    expected = 2.0 * np.sqrt([third * (0.04 + 0.25 + 0.16) + third * 0.04, third * (0.09 + 0.0 + 1.25) + third * 0.09])
    np.testing.assert_allclose(RR.combine(rec, "no-kernel-spread"), expected, rtol=1e-12)


def test_loo_rule_weighs_by_predictive_density_with_a_floor():
    rec = _record()
    # kernel:ard predicts its archive far worse (errors 3 vs 0.1, unit variances): with floor 0 its weight is
    # exp(-0.5 * (9 + 9) + 0.5 * (0.01 + 0.01)) relative to the others, about 1.2e-4
    dens = np.array([-0.5 * 0.02, -0.5 * 18.0, -0.5 * 0.02])
    w = np.exp(dens - dens.max())
    w /= w.sum()
    var0 = w[0] * 0.04 + w[1] * (1.0 + 0.25) + w[2] * 0.16
    np.testing.assert_allclose(RR.combine(rec, "loo:0")[0], 2.0 * np.sqrt(var0), rtol=1e-9)
    floored = np.maximum(w, 0.2) / np.maximum(w, 0.2).sum()
    var0 = floored[0] * 0.04 + floored[1] * 1.25 + floored[2] * 0.16
    np.testing.assert_allclose(RR.combine(rec, "loo:0.2")[0], 2.0 * np.sqrt(var0), rtol=1e-9)
    with pytest.raises(SystemExit, match="unknown rule"):
        RR.combine(rec, "median")


def test_a_recorded_run_reproduces_the_products_std(tmp_path):
    """The threshold example at budget 24 (its read-out has the probe family): ``default`` is the product's std."""
    job = {"set": "threshold", "suite": "threshold-6", "game": "threshold-6", "how": ("threshold",),
           "method": "default", "options": {}, "budget_spec": "24", "multiple": None, "fixed": 24, "seed": 2}
    out = tmp_path / "run.pkl"
    RR.record_run(job, out)
    rec = RR.load(tmp_path)[0]
    assert set(rec["families"]) >= {"fitted", "graded", "additive"}
    assert RR.check_default([rec]) == 0
    np.testing.assert_allclose(RR.combine(rec, "default"), rec["std"], rtol=1e-8)
    assert not np.allclose(RR.combine(rec, "fitted"), rec["std"], rtol=1e-3)  # the families do widen it


def test_size_rule_moves_a_kernel_without_the_size_trend_to_its_partner_when_far_behind():
    rec = _record()
    rec["weights"] = {"fitted": 0.4, "kernel:ard": 0.3, "kernel:ard+size": 0.3}
    rec["families"]["kernel:ard+size"] = _family([1.0, 0.5], [0.01, 0.04])
    del rec["families"]["graded"]
    # kernel:ard's leave-one-out density is 0.5 * (9 + 9 - 0.02) = 8.99 nats behind its partner's
    var = [0.4 * 0.04 + 0.6 * 0.01, 0.4 * 0.09 + 0.6 * (0.04 + 0.25)]
    np.testing.assert_allclose(RR.combine(rec, "size:5"), 2.0 * np.sqrt(var), rtol=1e-12)
    kept = [0.4 * 0.04 + 0.3 * 1.25 + 0.3 * 0.01, 0.4 * 0.09 + 0.3 * 1.0 + 0.3 * 0.29]
    np.testing.assert_allclose(RR.combine(rec, "size:10"), 2.0 * np.sqrt(kept), rtol=1e-12)  # not far enough behind
