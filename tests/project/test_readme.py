"""The README and the docs agree with the code: every Python snippet and every ``shapleig``
command in them runs as written (the examples use small budgets).

Python blocks (```python) run one by one in a fresh namespace in a temporary folder; blocks
written as ```text are illustrations (e.g. needing shapiq >= 1.8) and are not run. Commands are
the ``shapleig ...`` segments of ```bash blocks (continuation lines joined, comments dropped,
``a && b`` split); they run through ``shapleig_tasks.cli.main`` in order, per page, in a temporary folder
holding the files they name (a LightGBM text model, a data file, a configuration space). The
examples that take a minute or more (the demo, full hyperparameter studies) are marked slow.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def shapleig_commands(path: Path) -> list[str]:
    """Every ``shapleig ...`` command of the page's bash blocks, in order."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            for part in (p.strip() for p in line.split("&&")):
                if part.startswith("shapleig "):
                    commands.append(part)
    return commands


def is_slow_command(command: str) -> bool:
    """The demo and the hyperparameter studies take 15 s to minutes (``hpi --quick`` is also
    run by tests/test_hpi_study.py); the rest takes seconds."""
    return shlex.split(command)[1] in ("demo", "hpi") or "shapiq:" in command


def is_slow_block(block: str, page: Path = README) -> bool:
    """Studies that train many models; and the docs' copies of the README's explain example
    (the README's own runs in the default suite)."""
    return "DataValuationGame" in block or "run_study(" in block or (page != README and "load_diabetes" in block)


def _params(slow: bool):
    out = []
    for page in PAGES:
        for i, block in enumerate(python_blocks(page)):
            specific = page == README and ("exact_shapley(" in block or "shapleig.explain(" in block
                                           or "index=" in block)
            if is_slow_block(block, page) == slow and not specific:
                out.append(pytest.param(page, i, id=f"{page.name}-python-{i}"))
    return out


@pytest.fixture
def workdir(tmp_path, monkeypatch, assets):
    """A temporary current folder holding the files the examples name."""
    import shutil

    for path in assets.iterdir():
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """A temporary current folder (for Python examples, which write their outputs there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """model.txt (LightGBM on diabetes, 10 features), X.csv (the features and a target
    column), mydata.csv and space.json, built once."""
    import lightgbm as lgb
    import pandas as pd
    from sklearn.datasets import load_diabetes

    tmp_path = tmp_path_factory.mktemp("assets")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    lgb.LGBMRegressor(n_estimators=20, num_leaves=6, verbose=-1).fit(X, y).booster_.save_model(
        str(tmp_path / "model.txt"))
    X.assign(target=y).to_csv(tmp_path / "X.csv", index=False)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(120, 4)), columns=[f"f{i}" for i in range(4)])
    frame["label"] = np.where(frame["f0"] + 0.5 * rng.normal(size=120) > 0, "yes", "no")
    frame.to_csv(tmp_path / "mydata.csv", index=False)
    try:
        from ConfigSpace import ConfigurationSpace, Float, Integer

        space = ConfigurationSpace(seed=0)
        space.add([Integer("n_estimators", (5, 20), default=10), Float("learning_rate", (0.05, 0.3), default=0.1),
                   Integer("num_leaves", (4, 16), default=8)])
        space.to_json(tmp_path / "space.json")
    except ImportError:
        pass
    return tmp_path


def _run_block(page: Path, index: int) -> dict:
    block = python_blocks(page)[index]
    namespace: dict = {"__name__": "__docs__"}
    # dont_inherit: the block runs as a user's own file would, without this module's __future__
    # imports (postponed annotations would leave a docs dataclass unable to find its module)
    exec(compile(block, f"{page.name} python block {index}", "exec", dont_inherit=True), namespace)
    return namespace


@pytest.mark.parametrize("page, index", _params(slow=False))
def test_python_snippet_runs(page, index, cwd):
    _run_block(page, index)


@pytest.mark.slow
@pytest.mark.parametrize("page, index", _params(slow=True))
def test_slow_python_snippet_runs(page, index, cwd):
    _run_block(page, index)


def _run_commands(page: Path, slow: bool, capsys) -> int:
    from shapleig_tasks.cli import main

    ran = 0
    for command in shapleig_commands(page):
        if is_slow_command(command) != slow:
            continue
        argv = shlex.split(command)[1:]
        if "shapiq:" in command and not _shapiq_bridge():
            continue  # needs shapiq >= 1.8 (CI's Python 3.12 leg runs it)
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's --version / --help exit 0
            code = exc.code
        out = capsys.readouterr()
        assert code in (0, None), f"{page.name}: `{command}` exited {code}: {out.err[-2000:]}"
        ran += 1
    return ran


def _shapiq_bridge() -> bool:
    try:
        import shapleig.interop.shapiq_bridge  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("page", [pytest.param(p, id=p.name) for p in PAGES if shapleig_commands(p)])
def test_shapleig_commands_run(page, workdir, capsys):
    pytest.importorskip("ConfigSpace")
    _run_commands(page, slow=False, capsys=capsys)


@pytest.mark.slow
@pytest.mark.parametrize("page", [pytest.param(p, id=p.name) for p in PAGES if shapleig_commands(p)])
def test_slow_shapleig_commands_run(page, workdir, capsys):
    pytest.importorskip("ConfigSpace")
    _run_commands(page, slow=True, capsys=capsys)


def test_the_docs_have_examples_to_check():
    """Guards the extraction: the README has its Python examples and its commands."""
    assert len(python_blocks(README)) >= 3
    commands = shapleig_commands(README)
    assert any(c.startswith("shapleig explain") for c in commands)
    assert any(c.startswith("shapleig hpi") for c in commands)
    assert any(c.startswith("shapleig demo") for c in commands)
    assert sum(not is_slow_command(c) for c in commands) >= 5


def test_readme_own_game_example_holds(cwd):
    """The README's own-game example (run here, not among the generic snippets): within budget,
    and close to the exact values."""
    blocks = [b for b in python_blocks(README) if "FunctionGame" in b and "exact_shapley(" in b]
    assert len(blocks) == 1
    namespace = _run_block(README, python_blocks(README).index(blocks[0]))
    est, exact = namespace["est"], namespace["exact"]
    assert est.evaluations <= 40 and est.values.shape == (8,)
    # a smooth 8-player game: 40 evaluations should get close to the exact values
    assert np.mean((est.values - exact) ** 2) < 1e-3
    assert namespace["ks"].evaluations <= 40
    # the precision-target example reaches its target, at the number of evaluations the README quotes
    import re

    quoted = re.search(r'target_evaluations"\]\s+# \(True, (\d+)\)', blocks[0])
    early = namespace["early"]
    assert quoted and early.info["target_reached"] and early.std.max() <= 0.04
    assert early.info["target_evaluations"] == int(quoted.group(1))


def test_readme_explain_example_holds(cwd):
    """The README's explain example: values sum to the prediction, the figure is written."""
    import pytest as _pytest

    (block,) = [b for b in python_blocks(README) if "shapleig.explain(" in b and "index=" not in b]
    namespace = _run_block(README, python_blocks(README).index(block))
    est = namespace["est"]
    # 40 evaluations, or all 1024 when exact_if_cheap finds enumerating this cheap model faster
    assert est.values.shape == (10,) and (est.evaluations == 40 or est.info["exact_if_cheap"]["enumerate"])
    assert est.baseline + est.values.sum() == _pytest.approx(est.info["prediction"], abs=1e-6)
    assert (cwd / "explanation.png").read_bytes()[:4] == b"\x89PNG"


def test_readme_interaction_example_holds(cwd):
    """The README's interaction example: the terms it quotes, and k-SII's terms sum to the prediction."""
    import pytest as _pytest

    (block,) = [b for b in python_blocks(README) if "index=" in b and "shapleig.explain(" in b]
    pairs = _run_block(README, python_blocks(README).index(block))["pairs"]
    assert pairs.index == "k-SII" and len(pairs.terms) == 10 + 45
    assert pairs.evaluations <= 80 or pairs.info["exact_if_cheap"]["enumerate"]
    assert pairs.terms[:2] == [(0,), (1,)] and pairs.terms[-1] == (8, 9)
    assert pairs.baseline + pairs.values.sum() == _pytest.approx(pairs.info["prediction"], abs=1e-6)
    frame = pairs.to_frame()
    assert "bmi x s5" in set(frame.player) and frame["std"].notna().all()


def test_readme_quickstart_has_exactly_two_commands():
    text = README.read_text()
    quick = text.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)[0].strip().splitlines()
    assert len(commands) == 2
    assert commands[0].endswith("shapleig demo") and "pytest" in commands[1]
    assert all("-c constraints/ci-cpu.txt" in c for c in commands)


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250
