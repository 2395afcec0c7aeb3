"""HyperSHAP interop: its games wrapped as shapleig games, and our games' definitions equal to its
own on the same function (the surrogate HyperSHAP explains)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("hypershap")
from ConfigSpace import Categorical, Configuration, ConfigurationSpace, Float, Integer  # noqa: E402
from hypershap import ExplanationTask, HyperSHAP  # noqa: E402

import shapleig  # noqa: E402
from shapleig.hpo import (  # noqa: E402
    AblationGame,
    HyperSHAPGame,
    RandomSearch,
    SensitivityGame,
    TunabilityGame,
    hypershap_game,
)


def make_space() -> ConfigurationSpace:
    cs = ConfigurationSpace(seed=1)
    cs.add([Float("a", (0.0, 1.0), default=0.5), Integer("b", (1, 10), default=3),
            Categorical("c", ["x", "y", "z"], default="x"), Float("d", (1e-3, 1.0), log=True, default=0.1)])
    return cs


def score(cfg) -> float:
    return -(cfg["a"] - 0.3) ** 2 + 0.1 * cfg["b"] + {"x": 0.0, "y": 0.5, "z": 0.2}[cfg["c"]] + 0.05 * cfg["a"] * cfg["b"] + 0.1 * np.log(cfg["d"])


@pytest.fixture(scope="module")
def task():
    from sklearn.ensemble import RandomForestRegressor

    # a small forest: the surrogate is evaluated one configuration at a time below
    return ExplanationTask.from_function(make_space(), score, n_samples=80,
                                         base_model=RandomForestRegressor(n_estimators=10, random_state=0))


def sv(iv, p: int) -> np.ndarray:
    return np.array([iv.dict_values.get((i,), 0.0) for i in range(p)])


@pytest.mark.parametrize("study", ["tunability", "sensitivity"])
def test_wrapped_game_gives_hypershaps_exact_values(task, study):
    ours = shapleig.exact_shapley(hypershap_game(task, study, n_samples=40, seed=5))
    theirs = getattr(HyperSHAP(task), study)(index="SV", order=1, n_samples=40, seed=5)
    np.testing.assert_allclose(ours, sv(theirs, 4), atol=1e-10)


def test_ablation_and_estimators_run_on_a_wrapped_game(task, tmp_path):
    cs = task.config_space
    target = Configuration(cs, values={"a": 0.3, "b": 9, "c": "y", "d": 0.5})
    game = hypershap_game(task, "ablation", target=target)
    theirs = HyperSHAP(task).ablation(target, cs.get_default_configuration(), index="SV", order=1)
    np.testing.assert_allclose(shapleig.exact_shapley(game), sv(theirs, 4), atol=1e-10)
    est = shapleig.ShaplEIG.from_options(ard=False).estimate(game, 12, seed=0,
                                                store=shapleig.EvaluationStore(tmp_path / "s.sqlite"))
    assert est.evaluations == 12 and np.isfinite(est.values).all()
    # a HyperSHAP game object is accepted as it is, too
    assert isinstance(hypershap_game(game.game), HyperSHAPGame)


def test_our_definitions_equal_hypershaps_on_the_same_function(task):
    """On HyperSHAP's surrogate as the objective, our games have HyperSHAP's values exactly."""
    cs = task.config_space
    surrogate = task.get_single_surrogate_model()

    def on_surrogate(cfg: dict) -> float:
        return float(surrogate.evaluate(np.asarray(Configuration(cs, values=cfg).get_array())))

    z = shapleig.all_coalitions(4)
    pairs = [
        (TunabilityGame(cs, on_surrogate, RandomSearch(30), seed=2), hypershap_game(task, "tunability", n_samples=30, seed=2)),
        (SensitivityGame(cs, on_surrogate, 30, seed=2), hypershap_game(task, "sensitivity", n_samples=30, seed=2)),
        (AblationGame(cs, on_surrogate, {"a": 0.9, "b": 2, "c": "z", "d": 0.01}),
         hypershap_game(task, "ablation", target=Configuration(cs, values={"a": 0.9, "b": 2, "c": "z", "d": 0.01}))),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours(z), theirs(z), rtol=0, atol=1e-12)


def test_refuses_what_is_not_a_hypershap_task():
    with pytest.raises(shapleig.GameError, match="ExplanationTask"):
        hypershap_game(object())
