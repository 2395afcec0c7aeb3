"""Hyperparameter-importance games (shapleig.hpo): exact values against direct enumeration of
their definitions, bit-identical determinism per seed, and resuming a killed study from the store."""

from __future__ import annotations

import copy
import itertools
import math
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

pytest.importorskip("ConfigSpace")
from ConfigSpace import Categorical, ConfigurationSpace, Float, Integer  # noqa: E402

import shapleig  # noqa: E402
from shapleig.errors import GameError  # noqa: E402
from shapleig.hpo import (  # noqa: E402
    AblationGame,
    HPSpace,
    OptimizerBiasGame,
    OptunaSearch,
    RandomSearch,
    SensitivityGame,
    TunabilityGame,
    inner_seed,
)

WEIGHT = {"x": 0.0, "y": 0.5, "z": 0.2}


def make_space() -> ConfigurationSpace:
    cs = ConfigurationSpace(seed=7)
    cs.add([Float("a", (0.0, 1.0), default=0.5), Integer("b", (1, 10), default=2),
            Categorical("c", ["x", "y", "z"], default="x"), Float("d", (1e-3, 1.0), log=True, default=0.1)])
    return cs


def objective(cfg: dict) -> float:
    """Cheap deterministic score with an interaction (a x b)."""
    return -(cfg["a"] - 0.3) ** 2 + 0.1 * cfg["b"] + WEIGHT[cfg["c"]] + 0.05 * cfg["a"] * cfg["b"] - abs(math.log10(cfg["d"]) + 1.5)


class Counting:
    """Objective counting its calls (module level: picklable)."""

    def __init__(self, kill_after: int | None = None):
        self.calls = 0
        self.kill_after = kill_after

    def __call__(self, cfg: dict) -> float:
        if self.kill_after is not None and self.calls >= self.kill_after:
            raise KeyboardInterrupt("killed")  # like SIGINT: not retried, the run stops
        self.calls += 1
        return objective(cfg)

    def params(self) -> dict:
        return {"objective": "test"}  # same identity whatever the counter says


NAMES = ["a", "b", "c", "d"]
BASE = {"a": 0.5, "b": 2, "c": "x", "d": 0.1}


def subsets(p: int):
    for r in range(p + 1):
        yield from itertools.combinations(range(p), r)


def shapley_by_subsets(v: dict, p: int) -> np.ndarray:
    """phi_i = sum_S |S|!(p-|S|-1)!/p! (v(S+i) - v(S)), written out (independent of shapleig)."""
    phi = np.zeros(p)
    for i in range(p):
        for s in subsets(p):
            if i in s:
                continue
            w = math.factorial(len(s)) * math.factorial(p - len(s) - 1) / math.factorial(p)
            phi[i] += w * (v[tuple(sorted(s + (i,)))] - v[s])
    return phi


def sampled(cs: ConfigurationSpace, n: int, seed: int) -> list[dict]:
    """n configurations from ConfigSpace's sampler seeded with seed, as dicts."""
    c = copy.deepcopy(cs)
    c.seed(seed)
    return [dict(x) for x in c.sample_configuration(n)]


def restricted(cfg: dict, s: tuple) -> dict:
    return {k: (cfg[k] if j in s else BASE[k]) for j, k in enumerate(NAMES)}


def row_of(s: tuple, p: int = 4) -> np.ndarray:
    r = np.zeros(p, dtype=bool)
    r[list(s)] = True
    return r


def check_against(game, v: dict) -> None:
    p = game.n_players
    z = np.array([row_of(s, p) for s in v])
    np.testing.assert_allclose(game(z), np.array(list(v.values())), rtol=0, atol=1e-12)
    np.testing.assert_allclose(shapleig.exact_shapley(game), shapley_by_subsets(v, p), atol=1e-10)


def test_players_are_the_space_hyperparameters_in_order():
    game = AblationGame(make_space(), objective, target={"a": 0.3})
    assert game.names == NAMES and game.n_players == 4
    assert game.space.baseline == BASE


def test_ablation_matches_enumeration_and_closed_form():
    target = {"a": 0.3, "b": 9, "c": "y", "d": 0.03}
    game = AblationGame(make_space(), objective, target=target)
    v = {s: objective({k: (target[k] if j in s else BASE[k]) for j, k in enumerate(NAMES)}) for s in subsets(4)}
    check_against(game, v)
    # closed form: additive parts go to their player, the a x b interaction is split in half
    phi = shapleig.exact_shapley(game)
    inter = 0.05 * (target["a"] * target["b"] - target["a"] * BASE["b"] - BASE["a"] * target["b"] + BASE["a"] * BASE["b"])
    a_part = -(target["a"] - 0.3) ** 2 + (BASE["a"] - 0.3) ** 2 + 0.05 * (target["a"] - BASE["a"]) * BASE["b"]
    assert phi[0] == pytest.approx(a_part + inter / 2, abs=1e-12)
    assert phi[2] == pytest.approx(WEIGHT["y"] - WEIGHT["x"], abs=1e-12)


def test_tunability_random_search_matches_enumeration():
    cs = make_space()
    game = TunabilityGame(cs, objective, RandomSearch(12), seed=3)
    draws = sampled(cs, 12, inner_seed(3, row_of(()), "study"))
    v = {s: max(objective(restricted(c, s)) for c in draws) for s in subsets(4)}
    check_against(game, v)
    assert game(row_of(())[None])[0] == objective(BASE)  # nothing tuned: the baseline's score


def test_sensitivity_matches_enumeration():
    cs = make_space()
    game = SensitivityGame(cs, objective, n_samples=15, seed=11)
    draws = sampled(cs, 15, inner_seed(11, row_of(()), "study"))
    v = {s: float(np.var([objective(restricted(c, s)) for c in draws])) for s in subsets(4)}
    check_against(game, v)
    assert v[()] == 0.0


def test_optimizer_bias_matches_enumeration():
    cs = make_space()
    game = OptimizerBiasGame(cs, objective, RandomSearch(4), [RandomSearch(10)], seed=2)
    mine = sampled(cs, 4, inner_seed(2, row_of(()), "study", 0))
    other = sampled(cs, 10, inner_seed(2, row_of(()), "study", 1))
    v = {}
    for s in subsets(4):
        a = max(objective(restricted(c, s)) for c in mine)
        b = max(objective(restricted(c, s)) for c in other)
        v[s] = a - max(a, b)
    check_against(game, v)
    assert max(v.values()) == 0.0 and min(v.values()) < 0.0


def test_inner_runs_tune_only_the_coalition_and_dedupe():
    seen = []

    def spy(cfg):
        seen.append(dict(cfg))
        return objective(cfg)

    game = TunabilityGame(make_space(), spy, OptunaSearch(6, "tpe"), seed=0)
    game(row_of((1, 3))[None])
    assert seen and all(c["a"] == BASE["a"] and c["c"] == BASE["c"] for c in seen)
    # each distinct configuration of a run is scored once
    assert game.n_objective_calls == len(seen) == len({tuple(sorted(c.items())) for c in seen})
    seen.clear()
    game(row_of(())[None])  # the empty coalition: six trials of one configuration, scored once
    assert seen == [BASE]


@pytest.mark.parametrize("make", [
    lambda cs: AblationGame(cs, objective, target={"a": 0.9, "b": 7, "c": "z", "d": 0.5}, seed=0),
    lambda cs: TunabilityGame(cs, objective, RandomSearch(8), seed=4),
    lambda cs: TunabilityGame(cs, objective, OptunaSearch(8, "tpe"), seed=4),
    lambda cs: TunabilityGame(cs, objective, OptunaSearch(6, "qmc"), seed=4),
    lambda cs: SensitivityGame(cs, objective, 8, seed=4),
    lambda cs: OptimizerBiasGame(cs, objective, OptunaSearch(5, "random"), [OptunaSearch(5, "tpe")], seed=4),
], ids=["ablation", "tunability-random", "tunability-tpe", "tunability-qmc", "sensitivity", "optimizer-bias"])
def test_bit_identical_per_seed_whatever_the_order(make):
    pytest.importorskip("optuna")
    z = shapleig.all_coalitions(4)
    first = make(make_space())(z)
    again = make(make_space())(z[::-1])[::-1]  # a fresh game, coalitions in reverse order
    assert first.tobytes() == again.tobytes()
    singles = np.array([make(make_space())(z[i : i + 1])[0] for i in (3, 9, 15)])
    assert singles.tobytes() == first[[3, 9, 15]].tobytes()


def test_seed_changes_the_inner_runs():
    pytest.importorskip("optuna")
    z = shapleig.all_coalitions(4)
    a = TunabilityGame(make_space(), objective, OptunaSearch(5, "tpe"), seed=0)(z)
    b = TunabilityGame(make_space(), objective, OptunaSearch(5, "tpe"), seed=1)(z)
    assert a[0] == b[0] and not np.array_equal(a, b)  # v(empty) is the baseline either way


def test_same_values_in_worker_processes():
    pytest.importorskip("optuna")
    game = TunabilityGame(make_space(), Counting(), OptunaSearch(5, "tpe"), seed=9)
    z = shapleig.all_coalitions(4)[:6]
    with ProcessPoolExecutor(2) as pool:
        bg = shapleig.BudgetedGame(game, 6, evaluator=shapleig.ExecutorEvaluator(pool))
        remote = bg(z)
    local = TunabilityGame(make_space(), Counting(), OptunaSearch(5, "tpe"), seed=9)(z)
    assert remote.tobytes() == local.tobytes()


def test_bad_input_is_refused_before_evaluating():
    cs = make_space()
    with pytest.raises(GameError, match="unknown hyperparameters"):
        AblationGame(cs, objective, target={"zz": 1})
    with pytest.raises(GameError, match="not a valid configuration"):
        AblationGame(cs, objective, target={"a": 5.0})
    with pytest.raises(GameError, match="seed"):
        TunabilityGame(cs, objective, seed=-1)
    with pytest.raises(GameError, match="n_trials"):
        RandomSearch(0)
    with pytest.raises(GameError, match="sampler"):
        OptunaSearch(3, "annealing")
    conditional = make_space()
    from ConfigSpace import EqualsCondition

    conditional.add(EqualsCondition(conditional["d"], conditional["c"], "y"))
    with pytest.raises(GameError, match="conditions"):
        HPSpace(conditional)


def test_resume_after_kill_repeats_no_finished_tuning_run(tmp_path):
    """A study killed mid-run resumes from the store: finished coalitions are not tuned again and
    the estimate equals the uninterrupted one."""
    method = shapleig.ShaplEIG.from_options(ard=False)
    budget = 10

    def fresh(kill_after=None):
        return TunabilityGame(make_space(), Counting(kill_after), RandomSearch(6), seed=1)

    whole = fresh()
    reference = method.estimate(whole, budget, seed=0, store=shapleig.EvaluationStore(tmp_path / "ref.sqlite"))

    path = tmp_path / "killed.sqlite"
    killed = fresh(kill_after=whole.n_objective_calls // 2)
    with pytest.raises(KeyboardInterrupt):
        method.estimate(killed, budget, seed=0, store=shapleig.EvaluationStore(path))
    store = shapleig.EvaluationStore(path)
    store.bind(fresh())
    done, _ = store.history()
    assert 0 < len(done) < budget
    # the objective calls the finished coalitions cost, counted on a fresh game
    probe = fresh()
    probe(done)
    finished_calls = probe.n_objective_calls

    resumed_game = fresh()
    evaluated = []
    inner_value = resumed_game.value
    resumed_game.value = lambda row: (evaluated.append(row.copy()), inner_value(row))[1]
    resumed = method.estimate(resumed_game, budget, seed=0, store=shapleig.EvaluationStore(path))
    done_keys = {r.tobytes() for r in done}
    assert not any(r.tobytes() in done_keys for r in evaluated)
    assert resumed.info["n_store_hits"] == len(done)
    assert resumed_game.n_objective_calls == whole.n_objective_calls - finished_calls
    np.testing.assert_allclose(resumed.values, reference.values, rtol=0, atol=1e-9)


def test_guide_hpo_example_runs():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "shapleig.hpo" in b)
    namespace: dict = {}
    exec(compile(block, "docs/guide.md", "exec"), namespace)
    est, game = namespace["est"], namespace["game"]
    assert est.evaluations == 6 and est.values.shape == (3,) and game.names == ["depth", "loss", "lr"]
    # 6 of the 8 coalitions of a 3-player game: the exact values lie inside the 95% intervals, which
    # are informative (narrower than the values' range)
    exact = shapleig.exact_shapley(game)
    lo, hi = est.interval(0.95)
    assert np.all((lo <= exact) & (exact <= hi)) and np.all(hi - lo < 1.5 * np.ptp(exact))
