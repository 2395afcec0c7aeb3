"""A store bound to a HyperSHAP game never serves it to another HyperSHAP game (issue 34).

The identity of :class:`~shapleig.hpo.HyperSHAPGame` reads the HyperSHAP game by kind
(:func:`shapleig.hpo.identity.hypershap_identity`). The first tests reproduce the reported
scenario: one store, the tunability game with searcher seed 0 and then 1 (or a surrogate trained
on the targets times 2) gave the first game's values. Then one scenario per component: game B
differs from game A in that one thing only and must be refused naming it; the controls rebuild
the same game from scratch (new objects, same content) and are served.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("hypershap")
from ConfigSpace import Categorical, Configuration, ConfigurationSpace, Float, Integer  # noqa: E402
from hypershap import ExplanationTask  # noqa: E402
from hypershap import games as G  # noqa: E402
from hypershap.surrogate_model import ModelBasedSurrogateModel  # noqa: E402
from hypershap.task import TunabilityExplanationTask  # noqa: E402
from hypershap.utils import Aggregation, RandomConfigSpaceSearcher  # noqa: E402
from sklearn.neighbors import KNeighborsRegressor  # noqa: E402

import shapleig.games.identity as identity  # noqa: E402
import shapleig.hpo.identity as hpo_identity  # noqa: E402
from shapleig import BudgetedGame, EvaluationStore, all_coalitions  # noqa: E402
from shapleig.errors import GameError, StoreMismatchError  # noqa: E402
from shapleig.hpo import hypershap_game  # noqa: E402

P = 4
ALL = all_coalitions(P)


def make_space(upper: float = 1.0) -> ConfigurationSpace:
    cs = ConfigurationSpace(seed=1)
    cs.add([Float("a", (0.0, upper), default=0.5), Integer("b", (1, 10), default=3),
            Categorical("c", ["x", "y", "z"], default="x"), Float("d", (1e-3, 1.0), log=True, default=0.1)])
    return cs


def score(cfg) -> float:
    return (-(cfg["a"] - 0.3) ** 2 + 0.1 * cfg["b"] + {"x": 0.0, "y": 0.5, "z": 0.2}[cfg["c"]]
            + 0.05 * cfg["a"] * cfg["b"] + 0.1 * np.log(cfg["d"]))


def make_task(scale: float = 1.0, space: ConfigurationSpace | None = None) -> ExplanationTask:
    """HyperSHAP's task: a surrogate fitted to ``scale * score`` on 60 seeded configurations.

    Nearest neighbours weighted by distance: a surrogate without plateaus, so the best of 200
    random configurations depends on which 200 (a forest's maximum is found by either seed).
    """
    return ExplanationTask.from_function(space or make_space(), lambda cfg: scale * score(cfg), n_samples=60,
                                         base_model=KNeighborsRegressor(n_neighbors=5, weights="distance"))


def surrogate_class(offset: float) -> type:
    """A user surrogate ``Shifted`` whose ``evaluate`` adds ``offset`` (an edit of its code)."""
    class Shifted(ModelBasedSurrogateModel):
        def evaluate(self, config_array: np.ndarray) -> Any:
            out = super().evaluate(config_array)
            return out + offset if isinstance(out, float) else [v + offset for v in out]
    return Shifted


class Scaled(ModelBasedSurrogateModel):
    """A user surrogate with an attribute of its own."""

    def __init__(self, config_space: Any, base_model: Any, factor: float):
        super().__init__(config_space, base_model)
        self.factor = factor

    def evaluate(self, config_array: np.ndarray) -> Any:
        out = super().evaluate(config_array)
        return out * self.factor if isinstance(out, float) else [v * self.factor for v in out]


def with_surrogate(surrogate: Callable[[Any, Any], Any]) -> Any:
    """The tunability game of ``make_task()``'s fitted model wrapped in ``surrogate(space, model)``."""
    task = make_task()
    model = task.get_single_surrogate_model().base_model
    return hypershap_game(ExplanationTask(task.config_space, surrogate(task.config_space, model)), n_samples=50)


def searched(game_class: Any = G.SearchBasedGame, mode: Any = Aggregation.MAX) -> Any:
    """A HyperSHAP game built by hand around a searcher with ``mode``."""
    task = make_task()
    sub = TunabilityExplanationTask(task.config_space, task.surrogate_model, task.config_space.get_default_configuration())
    return hypershap_game(game_class(sub, cs_searcher=RandomConfigSpaceSearcher(sub, mode=mode, n_samples=50, seed=0)))


def biased(ensemble_seed: int) -> Any:
    task = make_task()
    sub = TunabilityExplanationTask(task.config_space, task.surrogate_model, task.config_space.get_default_configuration())
    searcher = RandomConfigSpaceSearcher(sub, n_samples=30, seed=0)
    return hypershap_game(task, "optimizer-bias", optimizer=searcher,
                          ensemble=[RandomConfigSpaceSearcher(sub, n_samples=30, seed=ensemble_seed)])


def with_space(upper: float) -> Any:
    """The same fitted surrogate on a space whose ``a`` ranges up to ``upper`` (same names and defaults)."""
    model = make_task().get_single_surrogate_model().base_model
    return hypershap_game(ExplanationTask.from_base_model(make_space(upper), model), n_samples=50)


def ablation(a: float) -> Any:
    task = make_task()
    target = Configuration(task.config_space, values={"a": a, "b": 9, "c": "y", "d": 0.5})
    return hypershap_game(task, "ablation", target=target)


def with_baseline(b: int) -> Any:
    task = make_task()
    baseline = Configuration(task.config_space, values={"a": 0.5, "b": b, "c": "x", "d": 0.1})
    return hypershap_game(task, "tunability", baseline=baseline, n_samples=50)


def patched(module: Any, package: str, version: str) -> Callable[[str], str]:
    real = module.package_version

    def fake(name: str) -> str:
        return version if name.split(".")[0] == package else real(name)
    return fake


def _bind(game: Any, path: Any) -> None:
    with EvaluationStore(path) as store:
        store.bind(game)


def _refusal(a: Any, make_b: Callable[[], Any], path: Any) -> str:
    _bind(a, path)
    with pytest.raises(StoreMismatchError) as info:
        _bind(make_b(), path)
    return str(info.value)


# -- the reported scenario ----------------------------------------------------------------------

@pytest.mark.parametrize("second", ["seed 1", "surrogate on 2 y"])
def test_another_seed_or_surrogate_on_one_store_is_refused_never_served_the_old_values(second, tmp_path):
    """``hypershap_game(task, "tunability", n_samples=200, seed=0)`` fills a store; the game with
    searcher seed 1, or with a surrogate trained on the targets times 2, has other values and must
    be refused by that store (it used to be served the first game's values)."""
    path = tmp_path / "s.sqlite"
    task = make_task()
    first = BudgetedGame(hypershap_game(task, "tunability", n_samples=200, seed=0), 2**P, store=path)(ALL)
    other = (hypershap_game(task, "tunability", n_samples=200, seed=1) if second == "seed 1"
             else hypershap_game(make_task(scale=2.0), "tunability", n_samples=200, seed=0))
    assert not np.allclose(other(ALL), first)  # the two games differ: the old values would be wrong
    expected = "cs_searcher.random_sample" if second == "seed 1" else "surrogate_model.base_model.fitted._y"
    with pytest.raises(StoreMismatchError, match=re.escape(expected)):
        BudgetedGame(other, 2**P, store=EvaluationStore(path))(ALL)


def test_the_same_game_rebuilt_from_scratch_is_served(tmp_path):
    """The control: a new task and game from the same function, space and seed (new objects, another
    shapiq ``game_id``) is served every value, also when HyperSHAP's caches hold values."""
    path = tmp_path / "s.sqlite"
    first = BudgetedGame(hypershap_game(make_task(), "tunability", n_samples=50, seed=0), 2**P, store=path)(ALL)
    again = hypershap_game(make_task(), "tunability", n_samples=50, seed=0)
    again.game.cs_searcher.coalition_cache[(True,) * P] = 1.0  # a memo newer HyperSHAP versions fill
    again.game.game_values[(0,)] = 1.0  # shapiq's cache of computed values
    served = BudgetedGame(again, 2**P, store=path)
    np.testing.assert_array_equal(served(ALL), first)
    assert served.accounting()["n_store_hits"] == 2**P


# -- one scenario per component -------------------------------------------------------------------

CASES: dict[str, tuple[Callable[[pytest.MonkeyPatch], tuple[Any, Callable[[], Any]]], str]] = {
    "searcher sample size": (lambda mp: (hypershap_game(make_task(), n_samples=50),
                                         lambda: hypershap_game(make_task(), n_samples=60)),
                             r"cs_searcher\.random_sample: ndarray float64\[50, 4\] #\w+ vs ndarray float64\[60, 4\]"),
    "searcher mode": (lambda mp: (searched(mode=Aggregation.MAX), lambda: searched(mode=Aggregation.AVG)),
                      r"cs_searcher\.mode: hypershap\.utils\.Aggregation\.MAX vs hypershap\.utils\.Aggregation\.AVG"),
    "game class": (lambda mp: (searched(G.SearchBasedGame), lambda: searched(G.TunabilityGame)),
                   r"hypershap\.class: hypershap\.games\.tunability\.SearchBasedGame vs hypershap\.games\.tunability\.TunabilityGame"),
    "configuration space": (lambda mp: (with_space(1.0), lambda: with_space(2.0)),
                            r"hypershap\.explanation_task\.config_space: str #\w+ vs str #\w+"),
    "baseline": (lambda mp: (with_baseline(3), lambda: with_baseline(4)), r"explanation_task\.baseline_config:"),
    "ablation target": (lambda mp: (ablation(0.3), lambda: ablation(0.4)), r"explanation_task\.config_of_interest:"),
    "surrogate code": (lambda mp: (with_surrogate(surrogate_class(0.0)), lambda: with_surrogate(surrogate_class(1.0))),
                       r"the code of hypershap\.explanation_task\.surrogate_model\.class changed"),
    "surrogate attribute": (lambda mp: (with_surrogate(lambda cs, m: Scaled(cs, m, 1.0)),
                                        lambda: with_surrogate(lambda cs, m: Scaled(cs, m, 2.0))),
                            r"explanation_task\.surrogate_model\.factor: 1\.0 vs 2\.0"),
    "ensemble searcher": (lambda mp: (biased(1), lambda: biased(2)),
                          r"explanation_task\.optimizer_ensemble\.0\.random_sample:"),
    "HyperSHAP version": (lambda mp: (hypershap_game(make_task(), n_samples=50),
                                      lambda: (mp.setattr(identity, "package_version",
                                                          patched(identity, "hypershap", "hypershap 9.9")),
                                               hypershap_game(make_task(), n_samples=50))[1]),
                          r"the version of hypershap\.class changed \(hypershap [\d.]+ vs hypershap 9\.9\)"),
    "ConfigSpace version": (lambda mp: (hypershap_game(make_task(), n_samples=50),
                                        lambda: (mp.setattr(hpo_identity, "package_version",
                                                            patched(hpo_identity, "ConfigSpace", "ConfigSpace 9.9")),
                                                 hypershap_game(make_task(), n_samples=50))[1]),
                            r"the version of ConfigSpace changed \(ConfigSpace [\d.]+ vs ConfigSpace 9\.9\)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_part_of_a_hypershap_game_is_in_its_identity(case, tmp_path, monkeypatch):
    build, expected = CASES[case]
    a, make_b = build(monkeypatch)
    message = _refusal(a, make_b, tmp_path / "s.sqlite")
    assert re.search(expected, message), message


def test_a_surrogate_of_an_unreadable_library_needs_a_game_id(tmp_path, monkeypatch):
    """A surrogate whose fitted state the identity cannot read (a model of a library other than
    scikit-learn, LightGBM or torch) is refused before anything is evaluated, until ``game_id``
    names it; then that id is part of the identity."""
    (tmp_path / "fakelib_hpi_identity.py").write_text(textwrap.dedent("""
        import numpy as np
        class Model:
            def predict(self, x):
                return np.asarray(x, float).sum(axis=1)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(identity, "_LIBRARY_ROOTS", (*identity._LIBRARY_ROOTS, str(tmp_path)))  # an installed package
    import fakelib_hpi_identity

    try:
        cs = make_space()
        task = ExplanationTask.from_base_model(cs, fakelib_hpi_identity.Model())
        path = tmp_path / "s.sqlite"
        with pytest.raises(GameError, match=r"fakelib_hpi_identity.*game_id="):
            BudgetedGame(hypershap_game(task, n_samples=20), 8, store=path)
        assert len(EvaluationStore(path)) == 0  # refused before any evaluation
        BudgetedGame(hypershap_game(task, n_samples=20, game_id="sum-v1"), 8, store=path)(ALL[:3])
        assert "game_id: sum-v1 vs sum-v2" in _refusal(hypershap_game(task, n_samples=20, game_id="sum-v1"),
                                                        lambda: hypershap_game(task, n_samples=20, game_id="sum-v2"), path)
    finally:
        sys.modules.pop("fakelib_hpi_identity", None)
