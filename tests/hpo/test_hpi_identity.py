"""The identity of the project's hyperparameter-importance games covers everything that changes a value.

One scenario per identity component (:mod:`shapleig.hpo.identity`): a store is bound to game A,
then game B, which differs from A in that one thing only, must be refused with a message naming
it. Binding evaluates nothing, so each scenario takes milliseconds. ``scripts/studies/promise_mutations.py``
drops each component from the identity once and checks that its scenario here fails.

Two scenarios simulate shapleig installed as a package (``installed``): the code of its classes is
then identified by the package's version, and the class names and the definition number are what
tell two games apart.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ConfigSpace")
from ConfigSpace import Categorical, ConfigurationSpace, Float, Integer  # noqa: E402

import shapleig.hpo.identity as hpo_identity  # noqa: E402
from shapleig import BudgetedGame, EvaluationStore  # noqa: E402
from shapleig.errors import GameError, StoreMismatchError  # noqa: E402
from shapleig.hpo import (  # noqa: E402
    AblationGame,
    HPSpace,
    OptimizerBiasGame,
    OptunaSearch,
    RandomSearch,
    SensitivityGame,
    TunabilityGame,
)

W = 1.0  # read by ``score`` as a module global


def make_space(upper: float = 1.0) -> ConfigurationSpace:
    cs = ConfigurationSpace(seed=3)
    cs.add([Float("a", (0.0, upper), default=0.5), Integer("b", (1, 10), default=2),
            Categorical("c", ["x", "y", "z"], default="x")])
    return cs


def score(cfg: dict) -> float:
    return -(cfg["a"] - 0.3) ** 2 + W * 0.1 * cfg["b"] + {"x": 0.0, "y": 0.5, "z": 0.2}[cfg["c"]]


def other_score(cfg: dict) -> float:
    return -(cfg["a"] - 0.4) ** 2 + W * 0.1 * cfg["b"] + {"x": 0.0, "y": 0.5, "z": 0.2}[cfg["c"]]


def scaled(scale: float) -> Callable[[dict], float]:
    def objective(cfg: dict) -> float:
        return scale * score(cfg)
    return objective


class Scored:
    """An objective that declares its parameters."""

    def __init__(self, alpha: float):
        self.alpha = alpha

    def __call__(self, cfg: dict) -> float:
        return self.alpha * score(cfg)

    def params(self) -> dict:
        return {"alpha": self.alpha}


def scored_class(offset: float) -> type:
    """The class ``Scored2`` with another body (an edit of its code between two runs)."""
    class Scored2:
        def __call__(self, cfg: dict) -> float:
            return score(cfg) + offset

        def params(self) -> dict:
            return {}
    return Scored2


class OtherSearch(RandomSearch):
    """Another tuner class with the same parameters as RandomSearch."""


def depth_tuner(depth: int) -> Any:
    """A user tuner without ``params()``: its state counts."""
    class DepthSearch(RandomSearch):
        def __init__(self) -> None:
            super().__init__(4)
            self.depth = depth
    DepthSearch.params = None  # no declared parameters: the tuner's attributes are read
    return DepthSearch()


def coded_tuner(extra: int) -> Any:
    """A user tuner class ``Coded`` whose body differs (it draws ``extra`` more trials)."""
    class Coded(RandomSearch):
        def trial_vectors(self, space: Any, row: np.ndarray, seed: int) -> np.ndarray:
            return space.blend(row, space.sample_vectors(self.n_trials + extra, seed))
    return Coded(4)


def coded_game(offset: float) -> Any:
    """A user subclass ``Shifted`` of TunabilityGame whose ``_value`` differs."""
    class Shifted(TunabilityGame):
        def _value(self, row: np.ndarray, cache: Any) -> float:
            return super()._value(row, cache) + offset
    return Shifted(make_space(), score, RandomSearch(4))


def tunability(**kw: Any) -> TunabilityGame:
    options = {"space": make_space(), "objective": score, "tuner": RandomSearch(4), "seed": 0, **kw}
    return TunabilityGame(options.pop("space"), options.pop("objective"), options.pop("tuner"), **options)


def bias(optimizer: Any = None, ensemble: Any = None) -> OptimizerBiasGame:
    return OptimizerBiasGame(make_space(), score, optimizer or OptunaSearch(4), ensemble or [RandomSearch(4)])


def patched_version(package: str, version: str) -> Callable[[str], str]:
    real = hpo_identity.package_version

    def fake(module: str) -> str:
        return version if module.split(".")[0] == package else real(module)
    return fake


@pytest.fixture()
def installed(monkeypatch):
    """shapleig as an installed package: its classes identified by the package's version, not their code."""
    def by_version(cls: type, prefix: str, opaque: list) -> dict:
        return {f"{prefix}class.version": "shapleig 1.0"}
    for module in ("shapleig.hpo.games", "shapleig.hpo.identity"):
        monkeypatch.setattr(f"{module}.class_code_identity", by_version)


def _bind(game: Any, path: Any) -> None:
    with EvaluationStore(path) as store:
        store.bind(game)


def _refusal(a: Any, make_b: Callable[[], Any], path: Any) -> str:
    _bind(a, path)
    with pytest.raises(StoreMismatchError) as info:
        _bind(make_b(), path)
    return str(info.value)


# (identity component, game A, a factory of game B, what the refusal must say): B differs from A
# in that component only
CASES: dict[str, tuple[Callable[[pytest.MonkeyPatch], tuple[Any, Callable[[], Any]]], str]] = {
    "seed": (lambda mp: (tunability(), lambda: tunability(seed=1)), r"parameter seed: 0 vs 1"),
    "space": (lambda mp: (tunability(), lambda: tunability(space=make_space(2.0))), r"parameter space:"),
    "baseline": (lambda mp: (tunability(), lambda: tunability(space=HPSpace(make_space(), {"b": 5}))),
                 r"parameter baseline:"),
    "ConfigSpace version": (
        lambda mp: (tunability(), lambda: (mp.setattr(hpo_identity, "package_version",
                                                      patched_version("ConfigSpace", "ConfigSpace 9.9")), tunability())[1]),
        r"the version of ConfigSpace changed \(ConfigSpace [\d.]+ vs ConfigSpace 9\.9\)"),
    "objective code": (lambda mp: (tunability(), lambda: tunability(objective=other_score)),
                       r"the code of objective changed"),
    "objective global": (lambda mp: (tunability(), lambda: (mp.setitem(globals(), "W", 2.0), tunability())[1]),
                         r"objective\.global\.W: 1\.0 vs 2\.0"),
    "objective closure": (lambda mp: (tunability(objective=scaled(1.0)), lambda: tunability(objective=scaled(2.0))),
                          r"objective\.closure\.scale: 1\.0 vs 2\.0"),
    "objective params": (lambda mp: (tunability(objective=Scored(1.0)), lambda: tunability(objective=Scored(2.0))),
                         r"objective\.alpha: 1\.0 vs 2\.0"),
    "objective class code": (lambda mp: (tunability(objective=scored_class(0.0)()),
                                         lambda: tunability(objective=scored_class(1.0)())),
                             r"the code of objective\.class changed"),
    "objective id": (lambda mp: (tunability(objective_id="data-v1"), lambda: tunability(objective_id="data-v2")),
                     r"objective\.id: data-v1 vs data-v2"),
    "tuner trials": (lambda mp: (tunability(), lambda: tunability(tuner=RandomSearch(5))), r"tuner\.n_trials: 4 vs 5"),
    "tuner sampler": (lambda mp: (tunability(tuner=OptunaSearch(4, "tpe")),
                                  lambda: tunability(tuner=OptunaSearch(4, "random"))),
                      r"tuner\.tuner: 'optuna-tpe' vs 'optuna-random'"),
    "tuner state": (lambda mp: (tunability(tuner=depth_tuner(1)), lambda: tunability(tuner=depth_tuner(2))),
                    r"tuner\.depth: 1 vs 2"),
    "tuner code": (lambda mp: (tunability(tuner=coded_tuner(0)), lambda: tunability(tuner=coded_tuner(1))),
                   r"the code of tuner\.class changed"),
    "optuna version": (
        lambda mp: (tunability(tuner=OptunaSearch(4)),
                    lambda: (mp.setattr(hpo_identity, "package_version", patched_version("optuna", "optuna 0.1")),
                             tunability(tuner=OptunaSearch(4)))[1]),
        r"the version of tuner\.optuna changed \(optuna [\d.]+ vs optuna 0\.1\)"),
    "n_samples": (lambda mp: (SensitivityGame(make_space(), score, 4), lambda: SensitivityGame(make_space(), score, 5)),
                  r"parameter n_samples: 4 vs 5"),
    "target": (lambda mp: (AblationGame(make_space(), score, {"a": 0.9}), lambda: AblationGame(make_space(), score, {"a": 0.8})),
               r"parameter target:"),
    "optimizer": (lambda mp: (bias(), lambda: bias(optimizer=OptunaSearch(5))), r"optimizer\.n_trials: 4 vs 5"),
    "ensemble member": (lambda mp: (bias(), lambda: bias(ensemble=[RandomSearch(5)])), r"ensemble\.0\.n_trials: 4 vs 5"),
    "ensemble size": (lambda mp: (bias(), lambda: bias(ensemble=[RandomSearch(4), RandomSearch(4)])),
                      r"ensemble\.1\.class: only in the new game"),
    "game code": (lambda mp: (coded_game(0.0), lambda: coded_game(1.0)), r"the code of the game's class changed"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_part_of_an_hpi_game_is_in_its_identity(case, tmp_path, monkeypatch):
    build, expected = CASES[case]
    a, make_b = build(monkeypatch)
    message = _refusal(a, make_b, tmp_path / "s.sqlite")
    assert "What differs" in message
    assert re.search(expected, message), message


def test_the_definition_number_tells_installed_games_apart(tmp_path, monkeypatch, installed):
    """Installed, the game's code is identified by shapleig's version: a change of the definition
    (``HPOGame.definition``, bumped when the seeding rules change) refuses stores written before."""
    def bumped() -> TunabilityGame:
        monkeypatch.setattr(TunabilityGame, "definition", 2)
        return tunability()
    assert "parameter definition: 1 vs 2" in _refusal(tunability(), bumped, tmp_path / "s.sqlite")


def test_the_tuner_class_tells_installed_tuners_apart(tmp_path, installed):
    """Installed, two tuner classes with the same parameters differ by their names."""
    message = _refusal(tunability(), lambda: tunability(tuner=OtherSearch(4)), tmp_path / "s.sqlite")
    assert "tuner.class: shapleig.hpo.tuners.RandomSearch vs" in message and "OtherSearch" in message, message


class Declared(Scored):
    """Another objective class declaring the same parameters as ``Scored``."""

    def __call__(self, cfg: dict) -> float:
        return -self.alpha * score(cfg)


def test_the_objective_class_tells_installed_objectives_apart(tmp_path, installed):
    """Installed, two objective classes with the same parameters differ by their names."""
    message = _refusal(tunability(objective=Scored(1.0)), lambda: tunability(objective=Declared(1.0)), tmp_path / "s.sqlite")
    assert re.search(r"objective\.class: \S+\.Scored vs \S+\.Declared", message), message


def test_the_same_study_is_served_after_it_ran(tmp_path):
    """The controls: the same settings rebuilt are served, also after evaluations (the objective's
    counters and the game's call count are not part of the identity)."""
    path = tmp_path / "s.sqlite"
    z = np.eye(3, dtype=bool)
    first = BudgetedGame(tunability(objective=Scored(1.0)), 5, store=path)(z)
    again = BudgetedGame(tunability(objective=Scored(1.0)), 5, store=path)
    np.testing.assert_array_equal(again(z), first)
    assert again.accounting()["n_store_hits"] == 3


def test_an_objective_that_cannot_be_read_needs_an_objective_id(tmp_path):
    """An objective holding what cannot be digested (a lock) is refused until ``objective_id`` names it."""
    lock = threading.Lock()

    def locked(cfg: dict) -> float:
        with lock:
            return score(cfg)

    with pytest.raises(GameError, match=r"cannot be digested"):
        _bind(tunability(objective=locked), tmp_path / "s.sqlite")
    _bind(tunability(objective=locked, objective_id="locked-v1"), tmp_path / "s.sqlite")
    assert "objective.id: locked-v1 vs locked-v2" in _refusal(
        tunability(objective=locked, objective_id="locked-v1"),
        lambda: tunability(objective=locked, objective_id="locked-v2"), tmp_path / "s.sqlite")
