"""explain_X: many rows, one store folder (resumable), the global summary (its closed-form posterior
mean and std against Monte Carlo sampling of the rows' posteriors), plots; exact values for cheap
small games (exact_if_cheap); indexing a result by term (est[i], est[(i, j)], get_top_k, get_n_order)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import shapleig
from shapleig.explanation.cheap_exact import (
    ENUMERATION_S_PER_VALUE,
    MARGIN,
    OVERHEAD_BUDGET_POWER,
    OVERHEAD_PLAYERS_POWER,
    OVERHEAD_SCALE,
    enumeration_decision,
)
from shapleig.explanation.explain_rows import ROW_STORE, folded_normal_moments

W = np.array([1.0, -2.0, 0.5, 0.0, 3.0])


def model(X: np.ndarray) -> np.ndarray:
    return X @ W + 0.5 * X[:, 0] * X[:, 1]


def failing_model(X: np.ndarray) -> np.ndarray:
    """``model``, failing once the environment's call allowance runs out (a stand-in for a kill: the
    allowance lives outside the process state a store's identity digests)."""
    left = int(os.environ.get("SHAPLEIG_TEST_CALLS_LEFT", "-1"))
    if left == 0:
        raise RuntimeError("killed")
    if left > 0:
        os.environ["SHAPLEIG_TEST_CALLS_LEFT"] = str(left - 1)
    return X @ W + 0.5 * X[:, 0] * X[:, 1]


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(25, 5)), rng.normal(size=(4, 5))


def test_rows_match_explain_row_by_row_and_the_summary_is_exact_with_exact_values() -> None:
    bg, X = _data()
    res = shapleig.explain_X(model, bg, X, method="exact", progress=False)
    assert len(res) == 4 and res.values.shape == (4, 5) and res.feature_names == [f"x{j}" for j in range(5)]
    for r in range(4):
        one = shapleig.explain(model, bg, X[r], method="exact", progress=False)
        np.testing.assert_allclose(res.values[r], one.values, atol=1e-12)
        assert res[r].info["row"] == r and res.predictions[r] == pytest.approx(model(X[r:r + 1])[0])
    mean, std = res.global_importance()  # exact values: std 0, mean |phi| as it is
    np.testing.assert_allclose(mean, np.abs(res.values).mean(axis=0), atol=1e-15)
    np.testing.assert_array_equal(std, 0.0)
    summary = res.summary()
    assert summary["term"].tolist()[0] == f"x{int(np.argmax(mean))}" and summary["rank"].tolist() == [1, 2, 3, 4, 5]
    frame = res.to_frame()
    assert len(frame) == 20 and set(frame.columns) == {"row", "term", "value", "std", "prediction", "baseline"}


def test_folded_normal_moments_against_sampling() -> None:
    rng = np.random.default_rng(0)
    mu, sigma = np.array([0.0, 0.3, -1.2, 2.0]), np.array([1.0, 0.5, 0.4, 0.0])
    draws = np.abs(mu + sigma * rng.standard_normal((400_000, 4)))
    mean, var = folded_normal_moments(mu, sigma)
    # Monte Carlo standard error of the mean ~ sqrt(var / 4e5) < 2e-3; of the variance a little more
    np.testing.assert_allclose(mean, draws.mean(axis=0), atol=5e-3)
    np.testing.assert_allclose(var, draws.var(axis=0), atol=5e-3)


def test_global_std_is_the_posterior_std_of_the_mean_absolute_value() -> None:
    bg, X = _data()
    res = shapleig.explain_X(model, bg, X, budget=12, seed=0, progress=False, exact_if_cheap=False)
    values, std = res.values, res.std
    assert std is not None and (std > 0).any()
    mean, gstd = res.global_importance()
    rng = np.random.default_rng(1)  # sample each row's marginal posterior, independently across rows
    draws = np.abs(values[None] + std[None] * rng.standard_normal((200_000, *values.shape))).mean(axis=1)
    np.testing.assert_allclose(mean, draws.mean(axis=0), atol=4 * gstd.max() / np.sqrt(200_000) + 1e-4)
    np.testing.assert_allclose(gstd, draws.std(axis=0), rtol=0.02, atol=1e-6)
    # a method without a posterior: the plug-in mean and no std
    plain = shapleig.explain_X(model, bg, X, budget=12, method="kernelshap", progress=False)
    pmean, pstd = plain.global_importance()
    assert pstd is None and np.allclose(pmean, np.abs(plain.values).mean(axis=0))
    assert plain.summary()["std"].isna().all()


def test_store_folder_resumes_after_a_kill_without_evaluating_finished_rows(tmp_path: Path, monkeypatch) -> None:
    bg, X = _data()
    kwargs = dict(budget=14, seed=3, progress=False, exact_if_cheap=False)
    reference = shapleig.explain_X(failing_model, bg, X, **kwargs)
    store = tmp_path / "rows"
    monkeypatch.setenv("SHAPLEIG_TEST_CALLS_LEFT", "100000")  # count the model calls of one row
    shapleig.explain_X(failing_model, bg, X[:1], store=tmp_path / "count", **kwargs)  # a store evaluates in chunks
    per_row = 100000 - int(os.environ["SHAPLEIG_TEST_CALLS_LEFT"])
    monkeypatch.setenv("SHAPLEIG_TEST_CALLS_LEFT", str(2 * per_row + per_row // 2))  # dies inside row 2
    with pytest.raises(Exception, match="killed"):
        shapleig.explain_X(failing_model, bg, X, store=store, **kwargs)
    files = sorted(p.name for p in store.iterdir() if p.suffix == ".sqlite")
    assert files[:3] == [ROW_STORE.format(r) for r in range(3)] and ROW_STORE.format(3) not in files

    def stored(r: int) -> int:
        with sqlite3.connect(store / ROW_STORE.format(r)) as conn:
            return conn.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'ok'").fetchone()[0]

    before = [stored(r) for r in range(3)]
    assert before[0] == before[1] == 14 and 0 < before[2] < 14  # row 2 stopped part-way
    monkeypatch.delenv("SHAPLEIG_TEST_CALLS_LEFT")
    resumed = shapleig.explain_X(failing_model, bg, X, store=store, **kwargs)
    assert [stored(r) for r in range(2)] == before[:2]  # finished rows: nothing evaluated again
    assert stored(2) == 14 and stored(3) == 14
    np.testing.assert_allclose(resumed.values, reference.values, atol=1e-12)
    np.testing.assert_allclose(resumed.std, reference.std, atol=1e-12)
    assert [est.info["n_store_hits"] for est in resumed.estimates[:2]] == [14, 14]


def test_explain_x_takes_dataframes_imputers_and_indices(tmp_path: Path) -> None:
    import pandas as pd

    bg, X = _data()
    frame_bg, frame_X = pd.DataFrame(bg, columns=list("abcde")), pd.DataFrame(X, columns=list("abcde"))
    f = lambda D: model(D.to_numpy())  # noqa: E731
    res = shapleig.explain_X(f, frame_bg, frame_X, method="exact", imputer="baseline", progress=False)
    assert res.feature_names == list("abcde") and res[0].info["imputer"] == "baseline"
    np.testing.assert_allclose(res.base_values, model(bg.mean(axis=0)[None, :])[0])
    pairs = shapleig.explain_X(model, bg, X[:2], method="exact", index="k-SII", progress=False)
    assert pairs.values.shape == (2, 15) and pairs.labels[5] == "x0 x x1"
    for kind in ("bar", "beeswarm"):
        fig = res.plot(kind, out=tmp_path / f"{kind}.png")
        assert (tmp_path / f"{kind}.png").stat().st_size > 1000 and fig.axes
    with pytest.raises(ValueError, match="kind"):
        res.plot("pie")
    with pytest.raises(shapleig.GameError, match="folder"):
        shapleig.explain_X(model, bg, X, store=shapleig.EvaluationStore(":memory:"))
    with pytest.raises(shapleig.GameError, match="no rows"):
        shapleig.explain_X(model, bg, X[:0])


def test_exact_if_cheap_enumerates_a_cheap_small_game_and_says_so() -> None:
    bg, X = _data()
    est = shapleig.explain(model, bg, X[0], budget=16, seed=0, progress=False)
    decision = est.info["exact_if_cheap"]
    assert decision["enumerate"] and est.info["exact"] and est.evaluations == 32 and decision["requested_budget"] == 16
    np.testing.assert_allclose(est.values, shapleig.explain(model, bg, X[0], method="exact", progress=False).values,
                               atol=1e-10)
    kept = shapleig.explain(model, bg, X[0], budget=16, seed=0, progress=False, exact_if_cheap=False)
    assert kept.evaluations <= 16 and not kept.info.get("exact") and "exact_if_cheap" not in kept.info
    # a model-free method is never switched
    ks = shapleig.explain(model, bg, X[0], budget=16, method="kernelshap", progress=False)
    assert ks.evaluations <= 16 and ks.info["exact_if_cheap"]["reason"] == "not a GP method"


def test_enumeration_decision_rule() -> None:
    # a per-coalition time alone is all per row: enumeration costs 2^p t plus its own work, the GP
    # budget t plus the loop's predicted time (the overhead law at speed 1)
    overhead = OVERHEAD_SCALE * 40 ** OVERHEAD_BUDGET_POWER * 10 ** OVERHEAD_PLAYERS_POWER
    own = ENUMERATION_S_PER_VALUE * 1024 * 10
    boundary = (MARGIN * overhead - own) / (1024 - MARGIN * 40)  # 1024 t + own = MARGIN (40 t + overhead)
    assert boundary > 0
    assert enumeration_decision(10, 40, 0.9 * boundary, True)["enumerate"]
    assert not enumeration_decision(10, 40, 1.1 * boundary, True)["enumerate"]
    assert not enumeration_decision(10, 1024, 0.0, True)["enumerate"]  # the budget already covers it
    assert not enumeration_decision(17, 40, 0.0, True)["enumerate"]
    assert not enumeration_decision(4, 10, 0.0, False)["enumerate"]


def test_results_index_by_term_and_select_terms() -> None:
    bg, X = _data()
    est = shapleig.explain(model, bg, X[0], budget=32, seed=0, index="k-SII", progress=False, exact_if_cheap=False)
    terms = est.terms
    assert est[1] == est.values[1] and est[(1,)] == est.values[1]
    k01 = terms.index((0, 1))
    assert est[(0, 1)] == est[(1, 0)] == est.values[k01] and est.std_of((1, 0)) == est.std[k01]
    assert est[()] == est.baseline
    with pytest.raises(KeyError, match=r"\(0, 1, 2\) is not a term"):
        est[(0, 1, 2)]
    pairs = est.get_n_order(2)
    assert pairs.terms == [T for T in terms if len(T) == 2] and pairs.n_players == 5
    idx = [terms.index(T) for T in pairs.terms]
    np.testing.assert_array_equal(pairs.covariance, est.covariance[np.ix_(idx, idx)])
    assert pairs.trace[-1][1].shape == (10,)
    top = est.get_top_k(3)
    order = np.argsort(-np.abs(est.values))[:3]
    assert top.terms == [terms[k] for k in order] and list(top.values) == list(est.values[order])
    assert top.to_frame()["player"].tolist()[0] == " x ".join(est.info["feature_names"][i] for i in terms[order[0]])
    singles = est.get_n_order(1)
    assert singles.terms == [(i,) for i in range(5)] and singles.max_order == 1
    with pytest.raises(ValueError, match="non-negative"):
        est.get_top_k(-1)


def test_rows_plots_label_their_error_bars_and_units() -> None:
    """Both plots of explain_X draw ± 1.96 std error bars, say so in a legend and name the units."""
    bg, X = _data()
    res = shapleig.explain_X(model, bg, X[:3], budget=14, progress=False, exact_if_cheap=False)
    mean, std = res.global_importance()
    for kind in ("bar", "beeswarm"):
        ax = res.plot(kind).axes[0]
        assert "± 1.96 posterior std (95% interval)" in [t.get_text() for t in ax.get_legend().get_texts()]
        assert "model output units" in ax.get_xlabel()
        bars = [c for c in ax.collections if hasattr(c, "get_segments")]
        half = sorted(abs(seg[1][0] - seg[0][0]) / 2 for c in bars for seg in c.get_segments())
        expected = 1.96 * (std if kind == "bar" else res.std.ravel())
        np.testing.assert_allclose(half, sorted(expected), rtol=1e-9)
def test_each_row_runs_with_its_own_spawned_seed() -> None:
    """Row r runs with the r-th seed spawned from ``seed`` (numpy's SeedSequence here), as
    ``explain`` with that seed would: not one seed for every row."""
    bg, _ = _data()
    X = np.random.default_rng(9).normal(size=(7, 5))  # more rows than features
    res = shapleig.explain_X(model, bg, X, budget=12, seed=5, progress=False, exact_if_cheap=False)
    spawned = [int(s.generate_state(1, dtype=np.uint32)[0]) for s in np.random.SeedSequence(5).spawn(7)]
    assert [res[r].info["seed"] for r in range(7)] == spawned and len(set(spawned)) == 7
    for r in (0, 6):
        one = shapleig.explain(model, bg, X[r], budget=12, seed=spawned[r], progress=False, exact_if_cheap=False)
        np.testing.assert_allclose(res.values[r], one.values, rtol=1e-10, atol=1e-12)


def test_the_progress_bar_counts_rows(monkeypatch) -> None:
    """One bar over the rows: its total is the number of rows and it advances once per row."""
    import tqdm.auto

    bars = []

    class Bar:
        def __init__(self, total=None, disable=False, **kwargs) -> None:
            self.total, self.disable, self.n = total, disable, 0
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            pass

        def update(self, n: int = 1) -> None:
            self.n += n

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    bg, X = _data()
    shapleig.explain_X(model, bg, X[:3], method="exact", progress=True)
    assert [(b.total, b.n, b.disable) for b in bars] == [(3, 3, False)]


def test_a_feature_point_is_coloured_by_its_value_rank_and_a_pair_grey() -> None:
    from shapleig.explanation.explain_rows import _feature_colour

    data = np.array([[3.0, 0.2], [1.0, 0.1], [2.0, 0.3], [5.0, 0.0]])
    np.testing.assert_allclose(_feature_colour(data, (0,)), [2 / 3, 0.0, 1 / 3, 1.0])  # ranks 2, 0, 1, 3
    np.testing.assert_array_equal(_feature_colour(data, (0, 1)), [0.5] * 4)
    np.testing.assert_array_equal(_feature_colour(data.astype(object), (1,)), [0.5] * 4)  # text: grey


def test_the_figure_is_sized_to_the_terms_shown() -> None:
    """7 inches wide, 0.45 inch per term shown plus 1.9 for the axis, title and legend."""
    bg, X = _data()
    res = shapleig.explain_X(model, bg, X, method="exact", progress=False)
    for kind, shown in (("bar", 5), ("beeswarm", 3)):
        fig = res.plot(kind, max_display=shown)
        np.testing.assert_allclose(fig.get_size_inches(), [7.0, 0.45 * shown + 1.9])


def _row_failing_model(X: np.ndarray) -> np.ndarray:
    """``model``, raising on the imputed rows of one explained row (its first feature is 99)."""
    if (X[:, 0] == 99.0).any():
        raise RuntimeError("row 99 cannot be predicted")
    return model(X)


def test_rows_in_parallel_give_the_sequential_values_and_share_the_store_folder(tmp_path: Path) -> None:
    bg, X = _data()
    pids = str(tmp_path / "pids")  # a str: a Path's lazily cached slots would enter the store's identity
    os.mkdir(pids)

    def lam(D: np.ndarray) -> np.ndarray:  # a closure: travels by value to the workers
        open(os.path.join(pids, str(os.getpid())), "w").close()
        return D @ W + 0.5 * D[:, 0] * D[:, 1]

    kwargs = dict(budget=14, seed=3, progress=False, exact_if_cheap=False)
    serial = shapleig.explain_X(lam, bg, X, **kwargs)
    parallel = shapleig.explain_X(lam, bg, X, n_jobs=2, store=tmp_path / "rows", **kwargs)
    assert set(os.listdir(pids)) - {str(os.getpid())}  # rows ran in worker processes
    assert [est.info["row"] for est in parallel.estimates] == [0, 1, 2, 3]  # in the order of X_rows
    assert [est.info["seed"] for est in parallel.estimates] == [est.info["seed"] for est in serial.estimates]
    np.testing.assert_allclose(parallel.values, serial.values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(parallel.std, serial.std, rtol=1e-10, atol=1e-12)
    assert sorted(p.name for p in (tmp_path / "rows").glob("*.sqlite")) == [ROW_STORE.format(r) for r in range(4)]
    replay = shapleig.explain_X(lam, bg, X, store=tmp_path / "rows", **kwargs)  # the workers' stores, read here
    assert [est.info["n_store_hits"] for est in replay.estimates] == [14] * 4
    np.testing.assert_allclose(replay.values, serial.values, rtol=1e-10, atol=1e-12)


def test_rows_on_an_executor_and_a_failing_row_raises() -> None:
    from concurrent.futures import ProcessPoolExecutor

    bg, X = _data()
    kwargs = dict(budget=12, seed=1, progress=False, exact_if_cheap=False)
    serial = shapleig.explain_X(model, bg, X, **kwargs)
    with ProcessPoolExecutor(2) as pool:
        pooled = shapleig.explain_X(model, bg, X, executor=pool, **kwargs)
        np.testing.assert_allclose(pooled.values, serial.values, rtol=1e-10, atol=1e-12)
        bad = X.copy()
        bad[2, 0] = 99.0
        with pytest.raises(RuntimeError, match="row 99 cannot be predicted"):  # as the sequential run raises it
            shapleig.explain_X(_row_failing_model, bg, bad, executor=pool, **kwargs)
    with pytest.raises(RuntimeError, match="row 99 cannot be predicted"):
        shapleig.explain_X(_row_failing_model, bg, bad, n_jobs=2, **kwargs)
    with pytest.raises(RuntimeError, match="row 99 cannot be predicted"):
        shapleig.explain_X(_row_failing_model, bg, bad, **kwargs)


@pytest.mark.parametrize("n_jobs", [0, -2, 1.5, True, "2"])
def test_bad_n_jobs_is_refused_naming_it(n_jobs) -> None:
    bg, X = _data()
    with pytest.raises(ValueError, match="n_jobs"):
        shapleig.explain_X(model, bg, X, n_jobs=n_jobs, progress=False)


def test_n_jobs_and_an_executor_together_are_refused() -> None:
    from concurrent.futures import ThreadPoolExecutor

    bg, X = _data()
    with ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="not both"):
        shapleig.explain_X(model, bg, X, n_jobs=2, executor=pool, progress=False)


def test_an_executor_gets_a_bounded_number_of_rows_at_a_time(monkeypatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from shapleig.explanation import row_jobs

    class Counting(ThreadPoolExecutor):
        """One worker thread; records how many submitted rows were unfinished at each submission."""

        def __init__(self) -> None:
            super().__init__(1)
            self.futures: list = []
            self.in_flight: list[int] = []

        def submit(self, *args, **kwargs):
            self.in_flight.append(sum(not f.done() for f in self.futures) + 1)
            self.futures.append(super().submit(*args, **kwargs))
            return self.futures[-1]

    monkeypatch.setattr(row_jobs, "MAX_SUBMITTED", 2)
    bg, X = _data()
    X = np.vstack([X, X[:1] + 1.0])  # 5 rows
    kwargs = dict(budget=12, seed=2, progress=False, exact_if_cheap=False)
    with Counting() as pool:
        pooled = shapleig.explain_X(model, bg, X, executor=pool, **kwargs)
    assert len(pool.in_flight) == 5 and max(pool.in_flight) <= 2
    assert [est.info["row"] for est in pooled.estimates] == list(range(5))
    np.testing.assert_allclose(pooled.values, shapleig.explain_X(model, bg, X, **kwargs).values, rtol=1e-10, atol=1e-12)
