"""ShaplEIG(index=...): estimates of Banzhaf values and pairwise interactions through the public API."""

from __future__ import annotations

import numpy as np
import pytest

from shapleig import DesignLoop, ShaplEIG
from shapleig.games.indices import exact_index_values, index_terms


class TableLookup:
    """A random game served from a bit-order table."""

    def __init__(self, p: int, seed: int) -> None:
        self.n_players = p
        self.values = np.random.default_rng(seed).normal(size=1 << p)

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        return self.values[(np.asarray(Z).astype(np.int64) << np.arange(self.n_players)).sum(axis=1)]


@pytest.mark.parametrize("index", ["BV", "k-SII", "FSII", "STII"])
def test_full_budget_estimate_is_the_exact_index(index: str) -> None:
    game = TableLookup(5, 1)
    est = ShaplEIG(index=index, surrogate="shared").estimate(game, 32, seed=0)
    assert est.index == index and est.terms == index_terms(5, index)
    assert est.values.shape == est.std.shape == (len(est.terms),)
    assert est.covariance.shape == (len(est.terms),) * 2
    lo, hi = est.interval()
    assert lo.shape == (len(est.terms),) and np.all(hi >= lo)
    np.testing.assert_allclose(est.values, exact_index_values(game.values, index), atol=1e-4)
    assert est.n_players == 5 and est.info["index"] == index


def test_default_is_the_shapley_value() -> None:
    est = ShaplEIG().estimate(TableLookup(4, 2), 8, seed=0)
    assert est.index == "SV" and est.terms == [(0,), (1,), (2,), (3,)] and est.max_order == 1


def test_options_are_validated_and_settable() -> None:
    with pytest.raises(ValueError, match="unknown index"):
        ShaplEIG(index="shapley")
    with pytest.raises(ValueError, match="max_order"):
        ShaplEIG(index="BV", max_order=2)
    with pytest.raises(ValueError, match="max_order"):
        ShaplEIG(index="k-SII", max_order=0)
    with pytest.raises(ValueError, match="acquisition_order"):
        ShaplEIG.from_options(index="k-SII", acquisition_order=0)
    with pytest.raises(ValueError, match="max_order=1 only"):
        ShaplEIG.from_options(index="k-SII", acquisition_index="SV", acquisition_order=2)
    assert ShaplEIG(index="k-SII", max_order=3).get_params()["max_order"] == 3
    with pytest.raises(ValueError, match="unknown index"):
        ShaplEIG.from_options(index="k-SII", acquisition_index="nope")
    est = ShaplEIG().set_params(index="FSII")
    assert est.get_params()["index"] == "FSII"


def test_acquisition_index_ablation_changes_the_design_only() -> None:
    game = TableLookup(6, 3)
    own = ShaplEIG(index="k-SII", surrogate="shared").estimate(game, 24, seed=0)
    sv = ShaplEIG.from_options(index="k-SII", acquisition_index="SV", surrogate="shared").estimate(game, 24, seed=0)
    assert own.info["acquisition_index"] == "k-SII" and sv.info["acquisition_index"] == "SV"
    assert sv.values.shape == own.values.shape == (21,)


def test_harness_scores_an_index_against_the_table() -> None:
    from shapleig.games.indices import exact_index_values
    from shapleig_tasks import harness
    from shapleig_tasks.catalog import Task
    from shapleig_tasks.tables import TableGame

    lookup = TableLookup(5, 4)
    codes = np.arange(32)
    Z = ((codes[:, None] >> np.arange(5)) & 1).astype(bool)
    table = TableGame(Z, lookup.values, name="random-5")
    task = Task(name="random-5", group="random", kind="table", factory=lambda: table)
    with pytest.raises(ValueError, match="Shapley value only"):
        harness.build_plan([task], ["permutation"], ["20"], [0], index="k-SII")
    df = harness.run_benchmark([task], ["shapleig:surrogate=shared,refit=adaptive"], ["12", "32"], [0],
                               progress=False, index="k-SII")
    exact = exact_index_values(lookup.values, "k-SII")
    assert (df["index"] == "k-SII").all() and len(df.iloc[0]["values"]) == 15
    np.testing.assert_allclose(df.iloc[0]["exact"], exact)
    full = df[df.budget == 32].iloc[0]
    assert full.mse == pytest.approx(np.mean((np.asarray(full["values"]) - exact) ** 2))
    assert full.mse < 1e-8


def test_cli_run_with_index(tmp_path, capsys) -> None:
    import pandas as pd

    from shapleig_tasks.cli import main
    from shapleig_tasks.tables import SHIPPED_TABLES_DIR

    table = SHIPPED_TABLES_DIR / "CaliforniaHousing_LocalExplanation_Game/8/model_name=gradient_boosting_imputer=marginal_1.npz"
    out = tmp_path / "r.parquet"
    assert main(["run", "--tasks", f"table:{table}", "--methods", "shapleig:refit=adaptive", "--budgets", "16",
                 "--seeds", "1", "--index", "FSII", "--out", str(out), "--quiet"]) == 0
    df = pd.read_parquet(out)
    assert df["index"].tolist() == ["FSII"] and len(df["values"][0]) == 8 + 28
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--tasks", f"table:{table}", "--methods", "permutation", "--budgets", "16",
              "--seeds", "1", "--index", "FSII", "--out", str(out), "--quiet"])
    assert exit_info.value.code == 2
    assert "Shapley value only" in capsys.readouterr().err


def test_banzhaf_holds_the_empty_coalition_out_by_default() -> None:
    game = TableLookup(5, 6)
    game.values[0] -= 25.0  # a jump at the empty coalition, as in data-valuation games
    # the loop itself at the full budget (estimate() would enumerate there)
    bv = DesignLoop(game, 32, index="BV", surrogate="shared", refit="adaptive", seed=0).run()
    assert bv.info["hold_out_empty"] is True
    np.testing.assert_allclose(bv.values, exact_index_values(game.values, "BV"), atol=1e-4)
    off = ShaplEIG.from_options(index="BV", hold_out_empty=False, surrogate="shared", refit="adaptive").estimate(game, 12, seed=0)
    assert off.info["hold_out_empty"] is False
    assert ShaplEIG().estimate(game, 8, seed=0).info["hold_out_empty"] is False


def test_cli_run_with_index_and_max_order(tmp_path, capsys) -> None:
    """``--index k-SII --max-order 3``: the GP arm and ``exact`` estimate every term of 1..3 players and are
    scored against the table's exact values of order 3; the column ``max_order`` says so."""
    import pandas as pd

    from shapleig.games.indices import index_terms
    from shapleig_tasks.cli import main
    from shapleig_tasks.tables import SHIPPED_TABLES_DIR, TableGame

    table = SHIPPED_TABLES_DIR / "CaliforniaHousing_LocalExplanation_Game/8/model_name=gradient_boosting_imputer=marginal_1.npz"
    out = tmp_path / "r.parquet"
    assert main(["run", "--tasks", f"table:{table}", "--methods", "shapleig:refit=adaptive", "exact",
                 "--budgets", "16p", "32p", "--seeds", "1", "--index", "k-SII", "--max-order", "3", "--out", str(out),
                 "--quiet", "--skip-small"]) == 0  # exact at 32p = 2^8 only
    df = pd.read_parquet(out)
    exact = TableGame.from_npz(table).exact_values(index="k-SII", max_order=3)
    assert df["max_order"].tolist() == [3, 3, 3] and set(df["index"]) == {"k-SII"}
    assert set(df.method) == {"shapleig:index=k-SII,max_order=3,refit=adaptive", "exact:index=k-SII,max_order=3"}
    for _, row in df.iterrows():
        assert len(row["values"]) == len(index_terms(8, "k-SII", 3)) == 92
        np.testing.assert_allclose(row["exact"], exact)
    assert df.mse[df.budget == 256].max() < 1e-20 and df.mse[df.budget == 128].iloc[0] < 1e-6
    # the default order (2) is the same run as before: no max_order column, the same labels
    out2 = tmp_path / "r2.parquet"
    assert main(["run", "--tasks", f"table:{table}", "--methods", "shapleig:refit=adaptive", "--budgets", "16",
                 "--seeds", "1", "--index", "k-SII", "--max-order", "2", "--out", str(out2), "--quiet"]) == 0
    df2 = pd.read_parquet(out2)
    assert "max_order" not in df2 and df2.method.tolist() == ["shapleig:index=k-SII,refit=adaptive"]
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--tasks", f"table:{table}", "--methods", "shapleig", "--budgets", "16",
              "--seeds", "1", "--index", "BV", "--max-order", "2", "--out", str(out), "--quiet"])
    assert exit_info.value.code == 2 and "max_order=1 only" in capsys.readouterr().err
