"""Acquisition ablations (shapleig_tasks.ablation, ``shapleig ablate``): tables, traces, user-defined acquisitions."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import cloudpickle
import numpy as np
import pandas as pd
import pytest

from shapleig import ShaplEIG, exact_shapley, registry
from shapleig_tasks import harness
from shapleig_tasks.ablation import load_acquisition, make_arm, make_arms, run_ablation
from shapleig_tasks.catalog import resolve_tasks
from shapleig_tasks.cli import main

USER_MODULE = textwrap.dedent('''
    import numpy as np
    from shapleig.design.acquisition import Acquisition

    class LargestFirst(Acquisition):
        """The largest available coalition first (ties to pool order)."""

        def score(self, candidates):
            return np.where(candidates.available, candidates.W.sum(axis=1).astype(float), -np.inf)

    class NeedsArgs(Acquisition):
        def __init__(self, weight):
            self.weight = weight

        def score(self, candidates):
            return candidates.eig()

    not_an_acquisition = 3
''')

OPTIONS = {"refit": "never", "pool_size": 40}


@pytest.fixture(scope="module")
def user_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("acq") / "my_acquisitions.py"
    path.write_text(USER_MODULE)
    return path


@pytest.fixture(scope="module")
def ablation(user_file):
    return run_ablation(["soug-6"], ["eig", "random", f"{user_file}:LargestFirst"], ["2p", "3p"], 3,
                        options=OPTIONS)


def _direct_mse(acquisition, budget: int, largest: int, seed: int) -> float:
    """The same run outside the harness: ShaplEIG at the largest budget, read at ``budget``."""
    game = resolve_tasks(["soug-6"])[0].game()
    est = ShaplEIG.from_options(acquisition=acquisition, **OPTIONS).estimate(game, largest, seed=seed)
    return float(np.mean((est.values_at(budget) - exact_shapley(game)) ** 2))


def test_table_columns_and_values(ablation):
    t = ablation.table()
    assert list(t.columns) == ["game", "p", "budget_spec", "budget", "acquisition", "runs", "mse", "se",
                               "ratio_to_eig", "wins_vs_eig"]
    assert t[["budget_spec", "budget", "acquisition"]].values.tolist() == [
        ["2p", 12, "eig"], ["2p", 12, "random"], ["2p", 12, "largestfirst"],
        ["3p", 18, "eig"], ["3p", 18, "random"], ["3p", 18, "largestfirst"]]
    assert (t["runs"] == 3).all() and (t["game"] == "soug-6").all() and (t["p"] == 6).all()
    assert np.isfinite(t["mse"]).all() and (t["mse"] > 0).all()
    runs = ablation.runs
    for row in t.itertuples():  # mean and standard error recomputed from the per-run rows
        m = runs[(runs["budget"] == row.budget) & (runs["acquisition"] == row.acquisition)]["mse"].to_numpy()
        assert row.mse == pytest.approx(m.mean(), rel=1e-12)
        assert row.se == pytest.approx(m.std(ddof=1) / np.sqrt(3), rel=1e-12)
        eig = runs[(runs["budget"] == row.budget) & (runs["acquisition"] == "eig")].sort_values("seed")
        mine = runs[(runs["budget"] == row.budget) & (runs["acquisition"] == row.acquisition)].sort_values("seed")
        assert row.ratio_to_eig == pytest.approx(m.mean() / eig["mse"].mean(), rel=1e-12)
        if row.acquisition == "eig":
            assert np.isnan(row.wins_vs_eig)
        else:
            assert row.wins_vs_eig == pytest.approx(np.mean(mine["mse"].to_numpy() < eig["mse"].to_numpy()))


def test_runs_are_the_runs_of_each_acquisition(ablation, user_file):
    user = load_acquisition(f"{user_file}:LargestFirst")
    runs = ablation.runs
    for label, acq in (("eig", "eig"), ("random", "random"), ("largestfirst", user)):
        for seed in (0, 2):
            got = runs[(runs["acquisition"] == label) & (runs["seed"] == seed) & (runs["budget"] == 12)]["mse"]
            assert float(got.iloc[0]) == pytest.approx(_direct_mse(acq, 12, 18, seed), rel=1e-12)
    # the user's arm picks other coalitions than EIG: its traces differ
    a = runs[runs["acquisition"] == "largestfirst"].sort_values(["seed", "budget"])["mse"].to_numpy()
    b = runs[runs["acquisition"] == "eig"].sort_values(["seed", "budget"])["mse"].to_numpy()
    assert not np.allclose(a, b)


def test_traces_cover_every_evaluation(ablation):
    tr = ablation.traces()
    for label in ("eig", "random", "largestfirst"):
        m = tr[tr["acquisition"] == label]
        assert m["evaluations"].tolist() == list(range(8, 19))  # p + 2 .. 3p
        assert (m["runs"] == 3).all() and (m["se"] >= 0).all()
    at12 = tr[(tr["evaluations"] == 12)].set_index("acquisition")["mse"]
    table = ablation.table().query("budget == 12").set_index("acquisition")["mse"]
    np.testing.assert_allclose(at12[table.index].to_numpy(), table.to_numpy(), rtol=1e-12)


def test_write_files(ablation, tmp_path):
    paths = ablation.write(tmp_path / "out")
    assert sorted(paths) == ["markdown", "plot", "runs", "table", "traces"]
    back = pd.read_csv(paths["table"])
    assert len(back) == 6 and back["acquisition"].tolist()[:3] == ["eig", "random", "largestfirst"]
    md = paths["markdown"].read_text().splitlines()
    assert md[0].startswith("| game | p | budget | acquisition") and len(md) == 2 + 6
    assert "largestfirst" in md[4] and "±" in md[4]
    assert paths["plot"].read_bytes()[:4] == b"\x89PNG"


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "match"), [
    ("greedy", "unknown acquisition 'greedy'"),
    ("no_such_module_xyz:Foo", "cannot import module 'no_such_module_xyz'"),
    ("missing_file.py:Foo", "file missing_file.py does not exist"),
    ("{file}:Nope", "has no attribute 'Nope'"),
    ("{file}:not_an_acquisition", "not a subclass of shapleig.design.acquisition.Acquisition"),
    ("{file}:NeedsArgs", "constructible without arguments"),
    ("{file}:", "write module:Class"),
    ("shapleig.design.acquisition:first_argmax", "not a subclass"),
])
def test_bad_acquisition_specs(spec, match, user_file):
    with pytest.raises(ValueError, match=match):
        load_acquisition(spec.format(file=user_file))


def test_module_references_and_broken_files(tmp_path):
    assert load_acquisition("shapleig.design.acquisition:Uncertainty").name == "uncertainty"
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    with pytest.raises(ValueError, match="importing .*broken.py failed: SyntaxError"):
        load_acquisition(f"{broken}:X")


def test_bad_ablations_fail_before_running(user_file):
    with pytest.raises(ValueError, match="named more than once: eig"):
        make_arms(["eig", "shapley_eig"])
    with pytest.raises(ValueError, match="must not set the acquisition"):
        make_arm("eig", {"acquisition": "random"})
    with pytest.raises(ValueError, match="pool_size"):
        make_arms(["eig"], {"pool_size": 0})
    with pytest.raises(ValueError, match="no acquisitions"):
        make_arms([])
    with pytest.raises(ValueError, match="the design loop needs at least p \\+ 2 = 8"):
        run_ablation(["soug-6"], ["eig"], ["1p"], 1)
    with pytest.raises(ValueError, match="unknown task|no task"):
        run_ablation(["no-such-task"], ["eig"], ["2p"], 1)


# -- the harness and the registry with a user-defined object ----------------------------------------

def test_harness_runs_a_user_defined_acquisition_object(user_file):
    arm = make_arm(load_acquisition(f"{user_file}:LargestFirst"), OPTIONS)
    df = harness.run_benchmark(["soug-6"], [arm.spec], ["12"], [1], progress=False)
    assert df["method"].tolist() == ["shapleig-largestfirst:pool_size=40,refit=never"]
    assert float(df["mse"].iloc[0]) == pytest.approx(
        _direct_mse(load_acquisition(f"{user_file}:LargestFirst"), 12, 12, 1), rel=1e-12)
    # the registry's named arms fix their acquisition: an object is pointed at the estimator object
    with pytest.raises(ValueError, match=r"pass the estimator object instead, e\.g\. ShaplEIG\(acquisition="):
        registry.build("shapleig", acquisition=arm.acquisition)


def test_a_file_acquisition_pickles_by_value_for_workers(user_file, tmp_path):
    arm = make_arm(f"{user_file}:LargestFirst", OPTIONS)
    blob = tmp_path / "factory.pkl"
    blob.write_bytes(cloudpickle.dumps(arm.spec.factory))
    code = ("import cloudpickle, sys; f = cloudpickle.loads(open(sys.argv[1], 'rb').read()); "
            "print(type(f().acquisition).__name__, f().acquisition.name)")
    out = subprocess.run([sys.executable, "-c", code, str(blob)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["LargestFirst", "largestfirst"]


# -- the command ----------------------------------------------------------------------------------

def test_cli_ablate(user_file, tmp_path, capsys):
    out = tmp_path / "ab"
    code = main(["ablate", "--tasks", "soug-6", "--budgets", "2p", "--seeds", "2", "--refit", "never",
                 "--pool-size", "40", "--acquisitions", "eig", "uncertainty", f"{user_file}:LargestFirst",
                 "--out", str(out), "--quiet", "--no-plot"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "largestfirst" in printed and "uncertainty" in printed and "ratio_to_eig" in printed
    table = pd.read_csv(out / "ablation.csv")
    assert table["acquisition"].tolist() == ["eig", "uncertainty", "largestfirst"]
    assert (table["runs"] == 2).all() and not (out / "mse.png").exists()


def test_cli_methods_lists_the_acquisitions(capsys):
    assert main(["methods"]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("acquisitions")]
    assert len(line) == 1 and "eig, uncertainty, random, leverage" in line[0] and "file.py:Class" in line[0]


@pytest.mark.parametrize(("args", "match"), [
    (["--acquisitions", "nope.py:X"], "file nope.py does not exist"),
    (["--acquisitions", "greedy"], "unknown acquisition 'greedy'"),
    (["--option", "surrogate=bogus"], "surrogate"),
    (["--budgets", "1p"], "needs at least p \\+ 2"),
])
def test_cli_ablate_errors(args, match, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ablate", "--tasks", "soug-6", "--out", str(tmp_path / "x"), "--quiet", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("shapleig ablate: error:") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(match, err)
    assert not (tmp_path / "x").exists()


BROKEN_MODULE = textwrap.dedent('''
    import numpy as np
    from shapleig.design.acquisition import Acquisition

    class AllNaN(Acquisition):
        def score(self, candidates):
            return np.full(len(candidates.available), np.nan)

    class OneShort(Acquisition):
        def score(self, candidates):
            return np.where(candidates.available, 1.0, -np.inf)[:-1]
''')


@pytest.mark.parametrize(("name", "match"), [
    ("AllNaN", r"shapleig-allnan\S* on soug-6 \(seed 0\): acquisition AllNaN: score\(\) returned NaN for 40 of 40"),
    ("OneShort", r"acquisition OneShort: score\(\) returned shape \(39,\) for a pool of 40 candidates"),
])
def test_cli_ablate_stops_at_a_broken_acquisition(name, match, tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN_MODULE)
    with pytest.raises(SystemExit) as exc:
        main(["ablate", "--tasks", "soug-6", "--budgets", "2p", "--seeds", "3", "--refit", "never", "--pool-size",
              "40", "--acquisitions", "eig", f"{broken}:{name}", "--out", str(tmp_path / "x"), "--quiet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("shapleig ablate: error:") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(match, err), err
    assert not (tmp_path / "x" / "ablation.csv").exists()


def test_an_acquisition_file_that_calls_sys_exit_is_named(tmp_path, capsys):
    ends = tmp_path / "ends.py"
    ends.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(ValueError, match=r"importing .*ends\.py failed: it called sys\.exit\(3\)"):
        load_acquisition(f"{ends}:Anything")
    with pytest.raises(SystemExit) as exc:
        main(["ablate", "--tasks", "soug-6", "--budgets", "2p", "--acquisitions", f"{ends}:Anything",
              "--out", str(tmp_path / "x"), "--quiet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"importing {ends} failed: it called sys.exit(3)" in err
    module = tmp_path / "ends_module.py"  # the same as module:Class
    module.write_text("raise SystemExit('no')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError, match=r"importing module 'ends_module' failed: it called sys\.exit\('no'\)"):
            load_acquisition("ends_module:Anything")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("ends_module", None)


# -- the guide's worked example -------------------------------------------------------------------

def _guide_blocks() -> list[str]:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    section = guide.split("### Acquisition ablations", 1)[1].split("\n## ", 1)[0]
    return __import__("re").findall(r"```python\n(.*?)```", section, flags=__import__("re").S)


def test_the_guide_example_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _guide_blocks()
    assert len(blocks) == 1  # the class and the Python call, as one file would hold them
    namespace: dict = {"__name__": "guide_example"}
    exec(compile(blocks[0], "docs/guide.md (Acquisition ablations)", "exec"), namespace)  # noqa: S102
    table = namespace["table"]
    assert table["acquisition"].tolist() == ["eig", "random", "eig-per-cost"] * 2
    assert (table["runs"] == 2).all() and np.isfinite(table["se"]).all()
    assert sorted(p.name for p in (tmp_path / "ablation").iterdir()) == [
        "ablation.csv", "ablation.md", "mse.png", "runs.csv", "traces.csv"]


# -- scripts/studies/ablation_tables.py, a thin wrapper -------------------------------------------

def test_ablation_tables_script(capsys, tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "studies" / "ablation_tables.py"
    spec = importlib.util.spec_from_file_location("ablation_tables", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert "torch" not in script.__dict__ and "GPOptions" not in script.__dict__  # nothing built at import
    code = script.main(["--games", "california-le-8", "--tables", "1", "--seeds", "2", "--refit", "never",
                        "--budget-factor", "2", "--shared-lengthscale", "--out", str(tmp_path / "o")])
    assert code == 0
    out = capsys.readouterr().out
    assert "refit=never, one shared lengthscale" in out and "EIG mean MSE below every other arm" in out
    table = pd.read_csv(tmp_path / "o" / "ablation.csv")
    assert table["acquisition"].tolist() == ["eig", "random"] and table["budget"].tolist() == [16, 16]
    assert (table["runs"] == 2).all() and table["game"].tolist() == ["california-le-8"] * 2
