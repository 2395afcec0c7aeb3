"""``shapleig hpi`` stores: the cross-validation objective's identity covers the model, the data and the scoring.

One scenario per part of :meth:`CVObjective.params` (the objective's identity in the study's
evaluation store): a store is bound to one study's game, and a game differing in that part only
must be refused naming it. Binding evaluates nothing (no model is fitted). ``prepare_study`` on a
folder whose store holds another estimator is refused the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("ConfigSpace")
pytest.importorskip("sklearn")
from ConfigSpace import ConfigurationSpace, Float  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402

import shapleig.games.identity as identity  # noqa: E402
from shapleig import EvaluationStore  # noqa: E402
from shapleig.errors import StoreMismatchError  # noqa: E402
from shapleig.hpo import RandomSearch, TunabilityGame  # noqa: E402
from shapleig_tasks.hpi import CVObjective, DataSpec, default_space, prepare_study  # noqa: E402


def ridge_space() -> ConfigurationSpace:
    cs = ConfigurationSpace(seed=0)
    cs.add([Float("alpha", (0.01, 10.0), log=True, default=1.0), Float("tol", (1e-5, 1e-2), log=True, default=1e-4)])
    return cs


def study(objective: CVObjective) -> TunabilityGame:
    """One space for every model family, another for estimators: two games differ only in their objective."""
    space = default_space("lightgbm", ["n_estimators", "subsample"]) if isinstance(objective.model, str) else ridge_space()
    return TunabilityGame(space, objective, RandomSearch(3), seed=0)


def cv(model: Any = "lightgbm", dataset: str = "diabetes", **kw: Any) -> TunabilityGame:
    data = dataset if isinstance(dataset, DataSpec) else DataSpec.make(dataset)
    return study(CVObjective(model, data, **kw))


def csv_data(path: Any, shift: float) -> DataSpec:
    path.write_text("x1,x2,y\n" + "".join(f"{i},{i % 7},{i * 0.5 + shift}\n" for i in range(40)))
    return DataSpec.make(str(path), target="y")


def versions(package: str, version: str) -> Callable[[str], str]:
    real = identity.package_version

    def fake(module: str) -> str:
        return version if module.split(".")[0] == package else real(module)
    return fake


def _refusal(a: Any, make_b: Callable[[], Any], path: Any) -> str:
    with EvaluationStore(path) as store:
        store.bind(a)
    with pytest.raises(StoreMismatchError) as info, EvaluationStore(path) as store:
        store.bind(make_b())
    return str(info.value)


CASES: dict[str, tuple[Callable[[Any, pytest.MonkeyPatch], tuple[Any, Callable[[], Any]]], str]] = {
    "model family": (lambda tmp, mp: (cv(), lambda: cv("random_forest")), r"objective\.model: 'lightgbm' vs 'random_forest'"),
    "estimator parameter": (lambda tmp, mp: (cv(Ridge(fit_intercept=True)), lambda: cv(Ridge(fit_intercept=False))),
                            r"objective\.model\.param\.fit_intercept: True vs False"),
    "bundled dataset": (lambda tmp, mp: (cv(dataset="diabetes"), lambda: cv(dataset=DataSpec.make("wine", task="regression"))),
                        r"objective\.data\.name: 'diabetes' vs 'wine'"),
    "CSV content": (lambda tmp, mp: (cv(dataset=csv_data(tmp / "d.csv", 0.0)), lambda: cv(dataset=csv_data(tmp / "d.csv", 1.0))),
                    r"objective\.data\.digest: '\w+' vs '\w+'"),
    "metric": (lambda tmp, mp: (cv(dataset="wine", metric="accuracy"), lambda: cv(dataset="wine", metric="neg_log_loss")),
               r"objective\.metric: 'accuracy' vs 'neg_log_loss'"),
    "folds": (lambda tmp, mp: (cv(n_folds=3), lambda: cv(n_folds=2)), r"objective\.n_folds: 3 vs 2"),
    "objective seed": (lambda tmp, mp: (cv(seed=0), lambda: cv(seed=1)), r"objective\.seed: 0 vs 1"),
    "LightGBM version": (lambda tmp, mp: (cv(), lambda: (mp.setattr(identity, "package_version",
                                                                     versions("lightgbm", "lightgbm 0.1")), cv())[1]),
                         r"objective\.versions\.lightgbm: 'lightgbm [\d.]+' vs 'lightgbm 0\.1'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_part_of_the_cv_objective_is_in_the_study_identity(case, tmp_path, monkeypatch):
    build, expected = CASES[case]
    a, make_b = build(tmp_path, monkeypatch)
    message = _refusal(a, make_b, tmp_path / "s.sqlite")
    assert re.search(expected, message), message


def test_prepare_study_refuses_a_folder_whose_store_holds_another_estimator(tmp_path):
    """``shapleig hpi``'s settings name the estimator by its class only: the store's identity tells
    ``Ridge(fit_intercept=False)`` from ``Ridge()``, before anything is evaluated."""
    out = tmp_path / "study"
    first = prepare_study(Ridge(), "diabetes", space=ridge_space(), budget=4, inner_budget=2, out=out)
    out.mkdir()
    with EvaluationStore(out / "evaluations.sqlite") as store:
        store.bind(first.game)
    prepare_study(Ridge(), "diabetes", space=ridge_space(), budget=4, inner_budget=2, out=out)  # the same: accepted
    with pytest.raises(StoreMismatchError, match=r"objective\.model\.param\.fit_intercept: True vs False"):
        prepare_study(Ridge(fit_intercept=False), "diabetes", space=ridge_space(), budget=4, inner_budget=2, out=out)
