"""A ShapleyEstimate prints short: ``repr`` is one line (not the trace and info: get_top_k(3) printed
about 4 KB), ``summary()`` a table of the largest terms with their ± 1.96 std."""

from __future__ import annotations

import numpy as np

from shapleig import FunctionGame, ShaplEIG, ShapleyEstimate


def test_the_repr_of_a_real_estimate_is_one_short_line():
    est = ShaplEIG().estimate(FunctionGame(lambda Z: Z @ np.arange(1.0, 13.0), n_players=12), 40, seed=0)
    assert len(est.trace) > 20 and len(est.info) > 40  # what used to be printed
    for shown in (repr(est), repr(est.get_top_k(3)), str(est.get_top_k(3))):
        assert "\n" not in shown and len(shown) < 260 and "array(" not in shown
    top = repr(est.get_top_k(3))
    assert top.startswith("ShapleyEstimate(SV, shapleig, 3 terms, evaluations 40/40, values [12, 11, ")
    assert f"trace {len(est.trace)} steps" in top


def test_summary_lists_the_largest_terms_with_their_error_bars():
    est = ShapleyEstimate(values=np.array([0.5, -3.0, 2.0, 0.1]), std=np.array([0.1, 0.5, 0.25, 0.0]), method="m",
                          evaluations=9, budget=10, info={"feature_names": ["a", "b", "c", "d"]})
    lines = est.summary(max_terms=2).splitlines()
    assert lines[0] == "SV estimate by m, 4 players, 9 of budget 10 evaluations"
    assert lines[2].split() == ["b", "-3", "0.98", "[-3.98,", "-2.02]"]  # 1.96 * 0.5
    assert lines[3].split() == ["c", "2", "0.49", "[1.51,", "2.49]"]
    assert lines[4] == "... 2 smaller terms"
    plain = ShapleyEstimate(values=np.array([1.0, 2.0]))
    assert plain.summary().splitlines()[2].split() == ["1", "2", "-", "-"]
    pairs = ShapleyEstimate(values=np.array([1.0, 2.0, 5.0]), terms=[(0,), (1,), (0, 1)], index="k-SII")
    assert pairs.summary().splitlines()[2].startswith("0 x 1")
