"""The benchmark harness: plan validation before any evaluation, anytime filling, the results table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import shapleig_baselines as baselines
from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.exact import exact_shapley
from shapleig_tasks import harness, plots
from shapleig_tasks.catalog import Task, resolve_tasks
from shapleig_tasks.methods import MethodSpec, parse_method, resolve_methods
from shapleig_tasks.synthetic import weighted_voting_family7


class CountingGame:
    """wvg-7 (quota 5) that counts evaluated coalitions, to prove nothing was spent."""

    def __init__(self) -> None:
        self.inner = weighted_voting_family7(5)
        self.n_players = self.inner.n_players
        self.calls = 0

    def __call__(self, z: np.ndarray) -> np.ndarray:
        self.calls += int(np.asarray(z).shape[0])
        return self.inner(z)

    def exact_values(self) -> np.ndarray:
        return self.inner.exact_values()


def counting_task() -> tuple[Task, CountingGame]:
    game = CountingGame()
    return Task("counting-wvg-7", "counting", "synthetic", lambda: game), game


class ScriptedAnytime(BaseEstimator):
    """An anytime estimator with a known trace: after e evaluations the estimate is exact + 1/e.

    It spends one coalition per step through the budgeted game, and counts how often it runs.
    """

    name = "scripted"
    runs = 0

    def _estimate(self, game, seed):
        type(self).runs += 1
        exact = game.game.game.exact_values()  # BudgetedGame -> TimedGame -> CountingGame
        rng = np.random.default_rng(seed)
        codes = rng.permutation(1 << game.n_players)
        trace = []
        for e, code in enumerate(codes[: game.budget], start=1):
            game(((code >> np.arange(game.n_players)) & 1).astype(bool)[None, :])
            if e >= 3:  # the trace starts after a 3-coalition "initial design"
                trace.append((e, exact + 1.0 / e))
        return ShapleyEstimate(values=exact + 1.0 / game.evaluations, trace=trace)


# ------------------------------------------------------------------------------------------
def test_harness_end_to_end_writes_parquet_with_anytime_rows(tmp_path: Path) -> None:
    out = tmp_path / "results.parquet"
    df = harness.run_benchmark(["wvg-7"], ["shapleig:pool_size=40,refit=never,final_refit=false", "permutation"], ["9", "10"], [0],
                               out=out, progress=False)
    back = pd.read_parquet(out)
    assert list(back.columns) == harness.COLUMNS
    pd.testing.assert_frame_equal(back, df)
    assert len(back) == 4  # (GP arm + baseline) x 2 budgets x 1 seed: one row per budget
    gp = back[back.method_name == "shapleig"].sort_values("budget")
    assert gp["anytime"].all() and gp["method"].iloc[0].startswith("shapleig:final_refit=False,pool_size=40")
    assert list(gp["budget"]) == [9, 10] and (gp["evaluations"] <= gp["budget"]).all()
    assert (gp["wall_s"].diff().dropna() >= 0).all()  # the smaller budget is read off earlier
    assert '"noise_convention"' in gp["noise"].iloc[0]
    # baseline rows match a fresh run at the same budget and seed
    game = weighted_voting_family7(5)
    exact = game.exact_values()
    for _, row in back[back.method_name == "permutation"].iterrows():
        est = baselines.get("permutation").estimate(game, int(row.budget), seed=int(row.seed))
        assert row.mse == pytest.approx(np.mean((est.values - exact) ** 2), rel=1e-12)
        assert row.evaluations == est.evaluations
    assert (back["error"] == "").all() and (back["accounting"] == "distinct").all()


def test_anytime_method_runs_once_per_seed_and_fills_budgets_from_trace(tmp_path: Path) -> None:
    task, game = counting_task()
    ScriptedAnytime.runs = 0
    spec = MethodSpec("scripted", factory=ScriptedAnytime, anytime=True)
    df = harness.run_benchmark([task], [spec], ["2", "5", "9", "12"], [0, 1], progress=False)
    # budget 2 lies before the trace starts: that budget gets its own run, the rest share one
    assert ScriptedAnytime.runs == 2 * 2
    assert len(df) == 8
    for b in (5, 9, 12):
        rows = df[df.budget == b]
        assert (rows.evaluations == b).all()
        assert np.allclose(rows.mse, (1.0 / b) ** 2) and np.allclose(rows.max_abs_err, 1.0 / b)
    assert np.allclose(df[df.budget == 2].mse, (1.0 / 2) ** 2)
    assert game.calls == 2 * (12 + 2)  # one run at 12 and one at 2 per seed


def test_rerun_methods_get_one_run_per_budget_and_seed() -> None:
    task, game = counting_task()
    df = harness.run_benchmark([task], ["kernelshap"], ["10", "20"], "0-2", progress=False)
    assert len(df) == 6 and not df.anytime.any()
    assert sorted(df.seed.unique()) == [0, 1, 2]
    assert game.calls == df.evaluations.sum()  # every charged coalition reached the game once


def test_gp_leverage_arm_is_rerun_per_budget_and_takes_gp_options() -> None:
    task, game = counting_task()
    df = harness.run_benchmark([task], ["shapleig-leverage", "shapleig-leverage:ard=false"], ["10", "20"], "0-1",
                               progress=False)
    assert len(df) == 8 and not df.anytime.any() and (df.error == "").all()
    assert set(df.method) == {"shapleig-leverage", "shapleig-leverage:ard=False"}
    assert (df.evaluations == df.budget).all() and game.calls == df.evaluations.sum()
    assert np.isfinite(df.mse).all()
    with pytest.raises(ValueError, match="option ard takes a boolean"):
        resolve_methods(["shapleig-leverage:ard=maybe"])
    with pytest.raises(ValueError, match="bad options"):
        resolve_methods(["shapleig-leverage:refit=every"])  # a one-shot fit has no refit schedule


def test_parallel_jobs_reproduce_serial_results() -> None:
    kwargs = dict(tasks=["wvg-7"], methods=["permutation", "leverage-shap"], budgets=["2p"], seeds=2, progress=False)
    serial = harness.run_benchmark(n_jobs=1, **kwargs)
    parallel = harness.run_benchmark(n_jobs=2, **kwargs)
    cols = ["task", "method", "budget", "seed", "evaluations", "mse", "max_abs_err"]
    pd.testing.assert_frame_equal(serial[cols], parallel[cols])


# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(tasks=["no-such-task"]), "unknown task 'no-such-task'"),
        (dict(methods=["no-such-method"]), "unknown method 'no-such-method'"),
        (dict(methods=["permutation:bogus=1"]), "bogus"),
        (dict(budgets=["lots"]), "bad budget 'lots'"),
        (dict(budgets=["3"]), "at least"),
        (dict(seeds=["x"]), "bad seed 'x'"),
        (dict(budgets=["-4"]), "budget -4: budgets must be positive"),
        (dict(out="results.csv"), "written as parquet; give a name ending in .parquet"),
    ],
)
def test_bad_input_fails_before_any_evaluation(kwargs: dict, message: str, tmp_path: Path) -> None:
    task, game = counting_task()
    args = dict(tasks=[task], methods=["permutation"], budgets=["10"], seeds=[0], out=tmp_path / "r.parquet")
    args.update(kwargs)
    with pytest.raises(ValueError, match=message.replace("^", r"\^").replace("(", r"\(")):
        harness.run_benchmark(progress=False, **args)
    assert game.calls == 0
    assert not (tmp_path / "r.parquet").exists()


def test_a_budget_covering_the_game_is_enumerated_and_noted(tmp_path: Path) -> None:
    task, game = counting_task()
    plan = harness.build_plan([task], ["permutation", "shapleig"], ["200", "10"], [0])
    assert plan.notes == ["counting-wvg-7: budget 200 > 2^7 = 128 coalitions: all evaluated, exact values (every method)"]
    df = harness.execute_plan(plan, out=tmp_path / "r.parquet", progress=False)
    big = df[df["budget"] == 200]
    assert set(big["method"]) == {"permutation", "shapleig"}
    assert (big["evaluations"] == 128).all() and (big["mse"] < 1e-24).all()
    assert all(max(s) == 0.0 for s in big["std"])
    small = df[df["budget"] == 10]  # the anytime arm's smaller budget is a run of its own, not exact
    assert (small["evaluations"] <= 10).all() and (small["mse"] > 0).all()


def test_unknown_task_message_lists_known_names() -> None:
    with pytest.raises(ValueError) as info:
        resolve_tasks(["vit9"])
    assert "vit-9" in str(info.value) and "airport-100" in str(info.value)


def test_unwritable_output_fails_before_any_evaluation(tmp_path: Path) -> None:
    task, game = counting_task()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for out in (blocker / "results.parquet", tmp_path):  # below a file; an existing folder
        with pytest.raises(ValueError, match="output path"):
            harness.run_benchmark([task], ["permutation"], ["10"], [0], out=out, progress=False)
    assert game.calls == 0


def test_corrupt_table_is_reported_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "broken_1.npz"
    bad.write_bytes(b"this is not a zip archive")
    with pytest.raises(ValueError, match="broken_1"):
        harness.build_plan([f"table:{bad}"], ["permutation"], ["10"], [0])


def test_table_task_round_trip_and_budget_too_small_listing(tmp_path: Path) -> None:
    from shapleig.games.coalitions import all_coalitions
    from shapleig_tasks.tables import save_table

    game = weighted_voting_family7(3)
    z = all_coalitions(7)
    save_table(tmp_path / "wvg_4.npz", z, game(z))
    tasks = resolve_tasks([f"table:{tmp_path}"])
    assert [t.name for t in tasks] == [f"table:{tmp_path.name}/wvg_4"]
    plan = harness.build_plan(tasks, ["permutation"], ["1", "2p"], [0], skip_small=True)
    assert [j.budgets for j in plan.jobs] == [[("2p", 14)]] and "budget 1 below" in plan.skipped[0]
    df = harness.execute_plan(plan, progress=False)
    assert np.allclose(tasks[0].game().exact_values(), exact_shapley(game))
    assert df.p.iloc[0] == 7 and df.budget.iloc[0] == 14


def test_parsers() -> None:
    assert harness.parse_budgets(["16,32", "4p", "0.5p", "16"]) == ["16", "32", "4p", "0.5p"]
    assert [harness.resolve_budget(b, 10) for b in ("16", "4p", "0.5p")] == [16, 40, 5]
    assert harness.parse_seeds(["3"]) == [0, 1, 2]
    assert harness.parse_seeds(["5-7", "1"]) == [5, 6, 7, 1]
    assert harness.parse_seeds(4) == [0, 1, 2, 3]
    spec = parse_method("shapleig:refit=decaying,pool_size=50,final_refit=false")
    assert spec.options == {"refit": "decaying", "pool_size": 50, "final_refit": False}
    assert spec.label == "shapleig:final_refit=False,pool_size=50,refit=decaying"
    specs = resolve_methods(["shapleig", "shapleig-random", "permutation"], ["gp:pool_size=30"])
    assert [s.options for s in specs] == [{"pool_size": 30}, {"pool_size": 30}, {}]
    with pytest.raises(ValueError, match="fixes acquisition"):
        resolve_methods(["shapleig-random:acquisition=eig"])
    with pytest.raises(ValueError, match="more than once"):
        resolve_methods(["permutation", "permutation"])


# ------------------------------------------------------------------------------------------
def _fake_results() -> pd.DataFrame:
    rows = []
    for task, scale in (("t1", 1.0), ("t2", 10.0)):
        for method, factor in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
            for budget in (10, 20):
                for seed in range(3):
                    rows.append(dict(task=task, group="g", p=5, method=method, budget=budget, budget_spec=str(budget),
                                     seed=seed, evaluations=budget, mse=scale * factor * (1 + seed) / budget,
                                     wall_s=0.1, error=""))
    df = pd.DataFrame(rows)
    df.loc[(df.task == "t2") & (df.method == "c") & (df.budget == 20), "mse"] = 1e-9  # c wins t2 at 20
    return df


def test_summaries_and_ranks() -> None:
    df = _fake_results()
    s = plots.summarize(df, ("task", "method", "budget"))
    row = s[(s.task == "t1") & (s.method == "b") & (s.budget == 10)].iloc[0]
    assert row.mse == pytest.approx(2.0 * 2 / 10) and row.n == 3
    assert row.se == pytest.approx(np.std([0.2, 0.4, 0.6], ddof=1) / np.sqrt(3))
    ranks = plots.rank_table(df)
    assert list(ranks.loc[10]) == [1.0, 2.0, 3.0]
    assert list(ranks.loc[20]) == [1.5, 2.5, 2.0]
    table = plots.mse_table(df)
    assert list(table.columns) == ["T=10", "T=20"] and table.shape == (3, 2)


def test_ml_ground_truth_is_enumerated_once_and_cached(tmp_path: Path) -> None:
    from shapleig_tasks.ml import make_ml_game

    def factory():  # two cheap players (no 300-tree configurations), 2-fold CV
        return make_ml_game("hpi", "diabetes", None, 0, players=("learning_rate", "max_depth"), n_folds=2,
                            progress=False)

    task = Task("hpi-tiny", "hpi-tiny", "ml", factory, expensive=True)
    exact, served, notes = harness.ground_truth(task, task.game(), cache_dir=tmp_path, progress=False)
    assert not notes["cached"] and Path(notes["cache"]).is_file()
    assert type(served).__name__ == "TableGame"  # methods query the enumerated table ...
    z = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=bool)
    live_values = factory()(z)
    assert np.array_equal(served(z), live_values)  # ... which holds the real game's values
    v = dict(zip(["0", "a", "b", "ab"], live_values))  # p = 2: phi_a = (v(a)-v(0) + v(ab)-v(b)) / 2
    assert np.allclose(exact, [(v["a"] - v["0"] + v["ab"] - v["b"]) / 2, (v["b"] - v["0"] + v["ab"] - v["a"]) / 2])
    exact2, _, notes2 = harness.ground_truth(task, factory(), cache_dir=tmp_path, progress=False)
    assert notes2["cached"] and np.array_equal(exact, exact2)
    _, live, _ = harness.ground_truth(task, factory(), cache_dir=tmp_path, progress=False, live=True)
    assert type(live).__name__ == "HPIAblationGame"


def test_missing_table_suite_folder_is_a_clear_error(tmp_path: Path) -> None:
    from shapleig_tasks.catalog import suite_files

    with pytest.raises(ValueError, match="vit-9.*does not exist"):
        suite_files("vit-9", folder=tmp_path)


def test_results_keep_estimates_std_exact_and_versions(tmp_path: Path) -> None:
    """A finished study keeps per-player estimates, std and exact values: metrics such as interval
    coverage are computed from the parquet alone, at every budget of an anytime run."""
    import json

    from shapleig import ShaplEIG
    from shapleig_tasks.metrics import interval_coverage, mse

    out = tmp_path / "results.parquet"
    harness.run_benchmark(["wvg-7"], ["shapleig:pool_size=40,refit=never", "permutation"], ["9", "12"], [0],
                          out=out, progress=False)
    back = pd.read_parquet(out)
    import os
    import stat

    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask  # as open() would, not mkstemp's 0600
    exact = weighted_voting_family7(5).exact_values()
    for _, row in back.iterrows():
        np.testing.assert_allclose(np.asarray(row["exact"]), exact)
        assert row.mse == pytest.approx(mse(np.asarray(row["values"]), exact), rel=1e-12)
        versions = json.loads(row.versions)
        assert set(versions) == set(harness.VERSIONED_PACKAGES) and versions["numpy"] == np.__version__
    perm = back[back.method_name == "permutation"]
    assert perm["std"].isna().all()
    gp = back[back.method_name == "shapleig"].set_index("budget")
    # the largest budget is the run's final estimate; the smaller one comes from the std trace
    final = ShaplEIG(pool_size=40, refit="never").estimate(weighted_voting_family7(5), 12, seed=0)
    np.testing.assert_allclose(np.asarray(gp.loc[12, "values"]), final.values, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gp.loc[12, "std"]), final.std, rtol=1e-12)
    std_at = dict(final.trace_std)
    n9 = int(gp.loc[9, "evaluations"])
    np.testing.assert_allclose(np.asarray(gp.loc[9, "std"]), std_at[n9], rtol=1e-12)
    coverage = [interval_coverage(np.asarray(r["values"]), np.asarray(r["std"]), np.asarray(r["exact"]))
                for _, r in gp.iterrows()]
    assert all(0.0 <= c <= 1.0 for c in coverage)


def test_interval_coverage() -> None:
    from shapleig_tasks.metrics import interval_coverage

    est, exact = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.5, 1.0, 4.0, 3.1])
    # half-width 1.96 * 0.3 = 0.588: only player 2 (off by 2) is outside
    assert interval_coverage(est, np.full(4, 0.3), exact) == pytest.approx(0.75)
    # half-width 0.3: players 0 (off by 0.5) and 2 are outside
    assert interval_coverage(est, np.full(4, 0.3), exact, n_std=1.0) == pytest.approx(0.5)
    assert interval_coverage(est, np.ones(4), exact, n_std=1.0) == pytest.approx(0.75)
    batch = interval_coverage(np.stack([est, exact]), np.full((2, 4), 0.3), exact)
    np.testing.assert_allclose(batch, [0.75, 1.0])
    with pytest.raises(ValueError, match="std shape"):
        interval_coverage(est, np.ones(3), exact)


def test_plot_mse_returns_figure_and_leaves_backend_alone(tmp_path: Path) -> None:
    import matplotlib
    from matplotlib.figure import Figure

    df = _fake_results()
    backend = matplotlib.get_backend()
    fig = plots.plot_mse(df)
    assert isinstance(fig, Figure) and len([a for a in fig.axes if a.get_visible()]) == df["group"].nunique()
    assert matplotlib.get_backend() == backend and not list(tmp_path.iterdir())
    out = tmp_path / "deep" / "mse.png"
    assert isinstance(plots.plot_mse(df, out, title="t"), Figure)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_harness_runs_a_shapiq_game_with_exact_values_through_the_adapter(tmp_path: Path) -> None:
    """A shapiq ``Game`` (whose ``exact_values(index, order)`` needs arguments) as a Task: the
    harness's ground truth comes from shapiq's own exact values and matches enumeration."""
    shapiq = pytest.importorskip("shapiq")

    w = np.array([1.0, 2.0, 3.0, 0.5, -1.0])

    class Linear2(shapiq.Game):
        def __init__(self) -> None:
            super().__init__(n_players=5, normalize=True, normalization_value=0.0)

        def value_function(self, coalitions: np.ndarray) -> np.ndarray:
            z = np.asarray(coalitions, dtype=bool)
            return z.astype(float) @ w + 4.0 * (z[:, 0] & z[:, 1])

    game = Linear2()
    assert harness.is_shapiq_game(game) and not harness.is_shapiq_game(weighted_voting_family7(5))
    expected = w + np.array([2.0, 2.0, 0.0, 0.0, 0.0])  # the interaction split between players 0, 1
    np.testing.assert_allclose(harness.exact_reference(game), expected, atol=1e-12)
    np.testing.assert_allclose(exact_shapley(game), expected, atol=1e-12)
    table = harness.run_benchmark([Task("shapiq-linear", "shapiq-linear", "synthetic", Linear2)],
                                  ["permutation", "shapleig:pool_size=30,refit=never"], ["10"], [0],
                                  out=tmp_path / "r.parquet", progress=False)
    assert len(table) == 2 and (table["error"].fillna("") == "").all()
    for _, row in table.iterrows():
        np.testing.assert_allclose(np.asarray(row["exact"]), expected, atol=1e-12)


def test_exact_reference_enumerates_games_without_exact_values() -> None:
    def f(z):
        return np.asarray(z, dtype=float) @ np.arange(1.0, 5.0)
    from shapleig.games.game import FunctionGame

    np.testing.assert_allclose(harness.exact_reference(FunctionGame(f, 4)), np.arange(1.0, 5.0), atol=1e-12)


def test_versions_name_shapiq_for_shapiq_methods_only() -> None:
    import json

    assert "shapiq" in json.loads(harness.package_versions("shapiq:KernelSHAP"))
    assert "shapiq" not in json.loads(harness.package_versions("kernelshap"))
