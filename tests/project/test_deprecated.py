"""Every deprecated name still works and warns, naming its replacement and the release that removes it.

The names are listed in ``shapleig._deprecated.DEPRECATED``; each has one check here (``CHECKS``), and
a name added to the table without a check fails :func:`test_every_deprecated_name_has_a_check`.
"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from shapleig import ExecutorEvaluator, FunctionGame
from shapleig._deprecated import DEPRECATED, REMOVED_IN, deprecated_attributes, deprecation_message
from shapleig.design.async_loop import AsyncDesignLoop
from shapleig.design.loop import DesignLoop
from shapleig.design.options import LoopOptions
from shapleig.games.coalitions import all_coalitions
from shapleig.gp.posterior import Hyperparameters, ShapleyPosterior

REPO = Path(__file__).resolve().parents[2]


def _warns(old: str) -> pytest.WarningsRecorder:
    """``pytest.warns`` for the deprecation of ``old``: its name, "removed in shapleig 0.X" and the replacement."""
    return pytest.warns(DeprecationWarning, match=re.escape(f"{old} is deprecated and will be removed in shapleig "
                                                            f"{REMOVED_IN}; use {DEPRECATED[old]}"))


def test_the_removal_version_is_two_minor_releases_ahead() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    version = re.search(r'^version = "(\d+)\.(\d+)\.', pyproject, re.M)
    assert version is not None, "pyproject.toml has no version"
    major, minor = int(version.group(1)), int(version.group(2))
    assert REMOVED_IN == f"{major}.{minor + 2}", (version.group(0), REMOVED_IN)  # kept through the next minor release


def test_an_unlisted_name_is_refused() -> None:
    with pytest.raises(KeyError):
        deprecation_message("shapleig.not_deprecated")
    with pytest.raises(KeyError):  # when the module is imported, not first when the name is read
        deprecated_attributes("shapleig.design.acquisition", {"NOT_LISTED": tuple})


def check_shapiq_bridge() -> None:
    sys.modules.pop("shapleig.shapiq_bridge", None)  # a module warns when it is imported, not when reused
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            old = importlib.import_module("shapleig.shapiq_bridge")
        except ImportError as exc:  # shapiq >= 1.8 missing (Python < 3.12): the error names the extra
            assert "shapleig[shapiq]" in str(exc)
        else:
            new = importlib.import_module("shapleig.interop.shapiq_bridge")
            assert old.ShapiqApproximator is new.ShapiqApproximator and old.__all__ == new.__all__
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert deprecation_message("shapleig.shapiq_bridge") in messages, messages


def check_acquisitions_table() -> None:
    import shapleig.design.acquisition as acquisition

    with _warns("shapleig.design.acquisition.ACQUISITIONS") as record:
        names = acquisition.ACQUISITIONS
    assert names == ("eig", "uncertainty", "random", "leverage")  # the built-in ones, in registration order
    assert record[0].filename == __file__  # the warning points at the line that read the name
    with _warns("shapleig.design.acquisition.ACQUISITIONS"):
        from shapleig.design.acquisition import ACQUISITIONS  # noqa: F401
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_NAME'"):
        acquisition.NOT_A_NAME  # noqa: B018


def _candidates():
    p = 5
    h = Hyperparameters.hamming(np.full(p, 0.8), 1.0, 1e-6, 0.0)
    return ShapleyPosterior(h, np.zeros((0, p), dtype=bool), np.zeros(0)).candidates(all_coalitions(p))


def check_select() -> None:
    from shapleig.design.acquisition import EIG, select

    with _warns("shapleig.design.acquisition.select") as record:
        picks = select("eig", _candidates(), 3)
    assert record[0].filename == __file__
    np.testing.assert_array_equal(picks, EIG().select(_candidates(), 3))
    # with an empty archive the EIG's first picks are the two extremes, the empty and the grand coalition
    assert sorted(_candidates().W[picks[:2]].sum(axis=1).tolist()) == [0, 5]


def check_design_loop() -> None:
    from shapleig.design.async_loop import design_loop

    game = FunctionGame(lambda Z: Z.sum(axis=1) ** 2.0, n_players=4)
    with _warns("shapleig.design.async_loop.design_loop") as record:
        loop = design_loop(game, 12, batch_size=2, pool_size=64)
    assert record[0].filename == __file__
    assert type(loop) is DesignLoop
    est = loop.run()
    assert est.evaluations == 12
    np.testing.assert_allclose(est.values, [4.0] * 4, atol=1e-3)  # v(S) = |S|^2: symmetric players, v(N) = 16
    with ThreadPoolExecutor(2) as pool, _warns("shapleig.design.async_loop.design_loop"):
        assert type(design_loop(game, 12, batch_size=2, evaluator=ExecutorEvaluator(pool))) is AsyncDesignLoop


def _check_refit_alias(old: str, new: str, fires: list[int]) -> None:
    from shapleig.design.refit import refit_schedule

    key = f'refit="{old}"'
    with _warns(key):
        schedule = refit_schedule(old)
    assert [it for it in range(80) if schedule(it)] == fires
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        options = LoopOptions(refit=old)
    assert [str(w.message) for w in caught] == [deprecation_message(key)]  # once, where the options are made
    assert options.refit == new  # kept under the current name: the loop never sees the old one


def check_refit_every_iteration() -> None:
    _check_refit_alias("every_iteration", "every", list(range(80)))


def check_refit_init_64_factor_4() -> None:
    _check_refit_alias("init_64_factor_4", "decaying", [*range(64), 64, 72])  # every step below 64, then every 8


CHECKS: dict[str, Callable[[], None]] = {
    "shapleig.shapiq_bridge": check_shapiq_bridge,
    "shapleig.design.acquisition.ACQUISITIONS": check_acquisitions_table,
    "shapleig.design.acquisition.select": check_select,
    "shapleig.design.async_loop.design_loop": check_design_loop,
    'refit="every_iteration"': check_refit_every_iteration,
    'refit="init_64_factor_4"': check_refit_init_64_factor_4,
}


def test_every_deprecated_name_has_a_check() -> None:
    assert set(CHECKS) == set(DEPRECATED)


def test_the_api_page_lists_every_deprecated_name() -> None:
    page = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    section = page[page.index("## Deprecated names"):]
    assert f"until shapleig {REMOVED_IN}" in section
    rows = re.findall(r"^\| `(.+?)` \| (.+) \|$", section, re.M)
    assert {old for old, _ in rows} == set(DEPRECATED)
    for old, new in rows:
        assert new.replace("`", "") == DEPRECATED[old].replace("`", ""), old


@pytest.mark.parametrize("old", sorted(CHECKS))
def test_the_old_name_warns_and_still_works(old: str) -> None:
    CHECKS[old]()
