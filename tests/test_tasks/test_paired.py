"""shapleig_tasks.paired: the run-for-run comparison's time ratio and an earlier checkout's table."""

from __future__ import annotations

import pandas as pd
import pytest

from shapleig_tasks.paired import method_label, paired_report, paired_table, with_previous


def _rows(method: str, mses, walls) -> list[dict]:
    return [{"group": "g", "budget_spec": "2p", "task": "g/seed=1", "seed": seed, "method": method, "mse": m,
             "wall_s": w} for seed, (m, w) in enumerate(zip(mses, walls))]


def test_time_ratio_is_the_ratio_of_mean_seconds_over_the_paired_runs():
    # the other method has a third run the default lacks: it is not paired, so it does not count
    df = pd.DataFrame(_rows("d", [1e-3, 1e-4], [2.0, 4.0]) + _rows("o", [1e-2, 1e-2, 1.0], [1.0, 2.0, 100.0]))
    row = paired_table(df, "d", "o").iloc[0]
    assert row["time ratio"] == pytest.approx(3.0 / 1.5)
    assert row["ratio"] == pytest.approx(10 ** ((-1 + -2) / 2))  # the paired log10 differences -1 and -2


def test_an_earlier_checkouts_rows_join_under_previous_for_the_same_tasks_and_seeds(tmp_path):
    now = pd.DataFrame(_rows("shapleig", [1e-3, 1e-4], [1.0, 1.0]))
    old = pd.DataFrame(_rows("shapleig", [1e-3, 2e-4, 5.0], [1.0, 1.0, 1.0])
                       + [{**_rows("shapleig", [1.0], [1.0])[0], "task": "other/seed=1"}])
    old.to_parquet(tmp_path / "old.parquet")
    both = with_previous(now, str(tmp_path / "old.parquet"))
    previous = both[both.method == "previous:shapleig"]
    assert len(previous) == 2 and set(previous.seed) == {0, 1} and set(previous.task) == {"g/seed=1"}
    row = paired_table(both, "shapleig", "previous:shapleig").iloc[0]
    assert row["ratio"] == pytest.approx(10 ** ((0 + (-4 - (-3.69897000433))) / 2))
    assert with_previous(now, None) is now


def test_a_method_typed_with_its_options_in_any_order_finds_its_rows():
    assert method_label("shapleig:structures=None,probe_degenerate=False") == \
        "shapleig:probe_degenerate=False,structures=None"
    assert method_label("previous:shapleig:size_trend=False,calibrate=jackknife") == \
        "previous:shapleig:calibrate=jackknife,size_trend=False"


def test_no_paired_run_is_an_error_naming_the_methods_present():
    ok = pd.DataFrame(_rows("a", [1.0, 2.0], [1.0, 1.0]))
    with pytest.raises(ValueError, match=r"no run of 'a' pairs with a run of 'b'.*\['a'\]"):
        paired_report(ok, "a", "b")
