"""Optional extras: asking for a torch path without the torch stack names the extra
``shapleig[botorch]`` before anything is evaluated (torch hidden through ``sys.modules``, the way a
missing package looks to ``import``); the packaging keeps torch out of the default install."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import shapleig
from shapleig import registry
from shapleig.extras import TORCH_MODULES, MissingExtraError, missing_modules, require_torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch stack hidden, and the modules that imported it forgotten for this test."""
    for name in list(sys.modules):
        if name.split(".")[0] in TORCH_MODULES or name in ("shapleig.gp.torch_model",
                                                              "shapleig.interop.botorch_acquisition"):
            monkeypatch.delitem(sys.modules, name)
    for name in TORCH_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_modules_sees_a_hidden_package(no_torch: None) -> None:
    assert missing_modules(TORCH_MODULES) == list(TORCH_MODULES)
    assert missing_modules(("numpy",)) == []
    with pytest.raises(MissingExtraError, match=r"shapleig\[botorch\]") as err:
        require_torch("the thing asked for")
    assert "the thing asked for" in str(err.value) and isinstance(err.value, ImportError)


def test_published_setting_names_the_extra_before_any_evaluation(no_torch: None) -> None:
    calls = []
    game = shapleig.FunctionGame(lambda Z: calls.append(1) or Z.sum(axis=1).astype(float), 4)
    with pytest.raises(MissingExtraError, match=r"pip install 'shapleig\[botorch\]'"):
        shapleig.ShaplEIG.published()
    with pytest.raises(MissingExtraError, match="fit_engine='gpytorch'"):
        shapleig.ShaplEIG.from_options(fit_engine="gpytorch", size_trend=False).estimate(game, 8)
    with pytest.raises(MissingExtraError, match=r"shapleig\[botorch\]"):
        registry.build("shapleig-published")
    assert calls == []
    # the default path needs none of it
    est = shapleig.ShaplEIG().estimate(game, 8, seed=0)
    assert est.std is not None and np.allclose(est.values, np.ones(4), atol=1e-3)


@pytest.mark.parametrize("module", ["shapleig.gp.torch_model", "shapleig.interop.botorch_acquisition"])
def test_torch_modules_name_the_extra(no_torch: None, module: str) -> None:
    with pytest.raises(MissingExtraError, match=r"shapleig\[botorch\]"):
        importlib.import_module(module)


def test_cli_names_the_extra_for_the_published_method(no_torch: None, capsys: pytest.CaptureFixture) -> None:
    from shapleig_tasks.cli import main

    with pytest.raises(SystemExit) as done:
        main(["run", "--tasks", "wvg-7", "--methods", "shapleig-published", "--budgets", "2p", "--seeds", "1",
              "--out", "unused.parquet"])
    assert done.value.code == 2
    assert "shapleig[botorch]" in capsys.readouterr().err


def test_torch_is_an_extra_not_a_dependency() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    heavy = ("torch", "gpytorch", "botorch")
    assert not [d for d in project["dependencies"] if d.split(">")[0].split("=")[0].strip() in heavy]
    extra = {d.split(">")[0].strip() for d in project["optional-dependencies"]["botorch"]}
    assert extra == set(heavy)
    assert project["optional-dependencies"]["torch"] == ["shapleig[botorch]"]
    assert "shap" in {d.split(">")[0] for d in project["optional-dependencies"]["shap"]}
