"""``shapleig run --workers N`` / ``--dask-scheduler ADDRESS``: games evaluated on workers, ShaplEIG
with N evaluations in flight (skipped without distributed, except the refusals)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from shapleig_tasks.cli import main
from shapleig_tasks.cluster import dask_available, evaluation_cluster

needs_dask = pytest.mark.skipif(not dask_available(), reason="distributed is not installed")
RUN = ["run", "--tasks", "wvg-7", "--methods", "shapleig", "--budgets", "24", "--seeds", "1", "--quiet"]


def _check(out: Path, slots: int) -> None:
    df = pd.read_parquet(out)
    assert len(df) == 1 and df.error[0] == "" and int(df.evaluations[0]) == 24
    assert json.loads(df.options[0])["batch_size"] == slots
    assert df.mse[0] < 1.0


@needs_dask
def test_workers_start_a_local_cluster(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    assert main([*RUN, "--workers", "2", "--out", str(out)]) == 0
    _check(out, 2)


@needs_dask
def test_dask_scheduler_address(tmp_path: Path, monkeypatch) -> None:
    from distributed import LocalCluster

    from shapleig_tasks import harness

    seen = []
    original = harness.run_job

    def spy(*args, **kwargs):
        seen.append(args[8] if len(args) > 8 else kwargs.get("evaluator"))
        return original(*args, **kwargs)

    monkeypatch.setattr(harness, "run_job", spy)
    out = tmp_path / "r.parquet"
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert main([*RUN, "--dask-scheduler", cluster.scheduler_address, "--out", str(out)]) == 0
    _check(out, 3)
    assert len(seen) == 1 and type(seen[0]).__name__ == "ExecutorEvaluator"  # the run used the cluster


def test_cluster_options_are_refused_when_they_conflict(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "r.parquet")
    for extra, message in [(["--workers", "2", "--jobs", "2"], "--jobs 1"),
                           (["--workers", "2", "--dask-scheduler", "tcp://127.0.0.1:1"], "not both"),
                           (["--workers", "0"], "positive")]:
        with pytest.raises(SystemExit) as exc:
            main([*RUN, *extra, "--out", out])
        assert exc.value.code == 2 and message in capsys.readouterr().err
    with evaluation_cluster() as (evaluator, slots):
        assert evaluator is None and slots == 1
