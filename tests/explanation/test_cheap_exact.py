"""exact_if_cheap's cost model: the model's cost split into per call and per row by a second timed
call (made only when the first leaves the decision open), the GP's predicted time scaled by the
machine's speed, and what was predicted beside what the run took in ``info``."""

from __future__ import annotations

import numpy as np
import pytest

import shapleig
from shapleig.explanation import cheap_exact
from shapleig.explanation.cheap_exact import (
    ENUMERATION_S_PER_VALUE,
    MARGIN,
    OVERHEAD_BUDGET_POWER,
    OVERHEAD_PLAYERS_POWER,
    OVERHEAD_SCALE,
    SPEED_BOUNDS,
    decide,
)


class CountingGame:
    """The parts of an imputer game ``decide`` reads; counts its model calls."""

    def __init__(self, p: int, n_bg: int, max_rows: int = 1_000_000) -> None:
        self.n_players, self.background, self.x, self.max_rows = p, np.zeros((n_bg, p)), np.zeros(p), max_rows
        self.calls = 0

    def predict_rows(self, rows: np.ndarray) -> np.ndarray:
        self.calls += 1
        return np.zeros(rows.shape[0])


def _clock(seconds: float):
    """A clock whose second reading is ``seconds`` after its first (the timed one-row call)."""
    readings = iter([0.0, seconds])
    return lambda: next(readings)


def _gp_overhead(p: int, budget: int) -> float:
    return OVERHEAD_SCALE * budget ** OVERHEAD_BUDGET_POWER * p ** OVERHEAD_PLAYERS_POWER


def test_a_model_whose_time_is_per_call_is_enumerated_in_batches() -> None:
    """5 ms per call whatever the rows (a tree ensemble's fixed cost): the old per-coalition rule
    (2^10 x 5 ms = 5 s against the GP's 40 x 5 ms) kept the GP; one batch of 1024 coalitions costs
    one call."""
    game = CountingGame(10, 50)
    d = decide(game, 40, 0.005, True, speed=1.0, clock=_clock(0.005))
    assert game.calls == 1 and d["probed"]
    assert d["model_s_per_call"] == pytest.approx(0.005) and d["model_s_per_row"] == pytest.approx(0.0)
    enumeration = 0.005 + ENUMERATION_S_PER_VALUE * 1024 * 50 * 10  # one call for all 51200 rows
    gp = 40 * 0.005 + _gp_overhead(10, 40)
    assert d["enumeration_s"] == pytest.approx(enumeration) and d["gp_s"] == pytest.approx(gp)
    assert d["enumerate"] and d["predicted_s"] == pytest.approx(enumeration)
    # max_rows = 50: one coalition per call, so 1024 calls whatever the split: the GP, without a second call
    narrow_game = CountingGame(10, 50, max_rows=50)
    narrow = decide(narrow_game, 40, 0.005, True, speed=1.0, clock=_clock(0.005))
    assert not narrow["enumerate"] and not narrow["probed"] and narrow_game.calls == 0


def test_a_model_whose_time_is_per_row_keeps_the_gp() -> None:
    game = CountingGame(10, 50)
    d = decide(game, 40, 0.0051, True, speed=1.0, clock=_clock(0.0002))
    per_row = (0.0051 - 0.0002) / 50
    assert d["probed"] and d["model_s_per_row"] == pytest.approx(per_row)
    assert d["model_s_per_call"] == pytest.approx(0.0002 - per_row)
    assert not d["enumerate"] and d["predicted_s"] == pytest.approx(d["gp_s"])


def test_no_second_call_when_the_first_decides() -> None:
    free = CountingGame(8, 20)
    d = decide(free, 16, 1e-7, True, speed=1.0, clock=_clock(1.0))  # both bounds: enumerate
    assert d["enumerate"] and not d["probed"] and free.calls == 0
    other = CountingGame(8, 20)
    d = decide(other, 16, 1e-7, False, clock=_clock(1.0))  # not a GP method: no probe, no speed probe
    assert not d["enumerate"] and not d["probed"] and other.calls == 0 and d["speed"] == 1.0


def test_the_machine_speed_scales_the_gp_prediction_within_bounds(monkeypatch) -> None:
    slow = cheap_exact.enumeration_decision(10, 40, 1e-3, True, speed=3.0)
    fast = cheap_exact.enumeration_decision(10, 40, 1e-3, True, speed=1.0)
    assert slow["gp_overhead_s"] == pytest.approx(3.0 * fast["gp_overhead_s"])
    monkeypatch.setattr(cheap_exact, "probe_seconds", lambda repeats=5: 1e6)
    assert cheap_exact.machine_speed() == SPEED_BOUNDS[1]
    monkeypatch.setattr(cheap_exact, "probe_seconds", lambda repeats=5: 0.0)
    assert cheap_exact.machine_speed() == SPEED_BOUNDS[0]
    assert MARGIN < 1


def test_explain_says_what_it_predicted_and_what_the_run_took() -> None:
    rng = np.random.default_rng(0)
    w = rng.normal(size=8)
    bg, x = rng.normal(size=(20, 8)), rng.normal(size=8)
    est = shapleig.explain(lambda X: X @ w, bg, x, budget=16, seed=0, progress=False)
    d = est.info["exact_if_cheap"]
    assert d["took_s"] > 0 and d["speed"] >= SPEED_BOUNDS[0]
    assert d["predicted_s"] == (d["enumeration_s"] if d["enumerate"] else d["gp_s"])
    assert est.info.get("exact", False) == d["enumerate"]
