"""One options object: ShaplEIG's, GPLeverage's and DesignLoop's options, defaults and info() all
derive from ``LoopOptions`` / ``GPOptions``, so a new option is one field plus the code using it."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from shapleig import DesignLoop, FunctionGame, GPLeverage, ShaplEIG
from shapleig.design.options import GPOptions, LoopOptions
from shapleig_tasks.methods import parse_method


def _game(p: int = 5) -> FunctionGame:
    w = np.arange(1.0, p + 1)
    return FunctionGame(lambda Z: Z @ w + 0.3 * Z[:, 0] * Z[:, 1], n_players=p)


@pytest.mark.parametrize("cls, options", [(ShaplEIG, LoopOptions), (GPLeverage, GPOptions)])
def test_constructor_parameters_are_the_option_fields(cls, options) -> None:
    params = inspect.signature(cls).parameters
    fields = {f.name: f for f in dataclasses.fields(options)}
    assert list(params) == list(fields)
    for name, param in params.items():
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
        default = fields[name].default if fields[name].default is not dataclasses.MISSING else fields[name].default_factory()
        assert param.default == default, name
    assert cls().get_params() == {name: getattr(options(), name) for name in fields}


def test_positional_options_are_refused() -> None:
    with pytest.raises(TypeError):
        ShaplEIG("eig")


def test_unknown_option_is_named() -> None:
    with pytest.raises(TypeError, match=r"ShaplEIG got unknown option\(s\) \['pool'\]"):
        ShaplEIG(pool=3)
    with pytest.raises(TypeError, match=r"DesignLoop got unknown option\(s\) \['acq'\]"):
        DesignLoop(_game(), 10, acq="eig")


@pytest.mark.parametrize("bad, message", [
    ({"pool_size": 0}, "pool_size must be an int >= 1"),
    ({"batch_size": 0}, "batch_size must be an int >= 1"),
    ({"tol": -1.0}, "tol must be a positive finite number"),
    ({"surrogate": "ard", "ard": False}, "contradicts"),
    ({"noise_convention": "scaled"}, "unknown noise convention"),
    ({"fit_engine": "jax"}, "unknown fit engine"),
    ({"refit": "sometimes"}, "refit"),
    ({"initial_design": "sobol"}, "unknown initial design"),
    ({"threads": 0}, "threads must be an int >= 1 or None"),
])
def test_bad_options_fail_on_construction(bad, message) -> None:
    for build in (lambda: LoopOptions(**bad), lambda: ShaplEIG(**bad)):
        with pytest.raises(ValueError, match=message):
            build()


def test_options_are_normalised_and_clone_round_trips() -> None:
    from sklearn.base import clone

    est = ShaplEIG(ard=True, pool_size=np.int64(64), tol=np.float32(0.5))
    assert est.surrogate == "ard" and est.ard is True and type(est.pool_size) is int and type(est.tol) is float
    assert clone(est).get_params() == est.get_params()
    assert ShaplEIG(surrogate="shared").ard is False and ShaplEIG().ard is None


def test_every_option_reaches_the_loop_and_its_info() -> None:
    est = ShaplEIG(pool_size=40, batch_size=2, refit="never", final_refit=False, surrogate="shared")
    result = est.estimate(_game(), 12, seed=0)
    options = LoopOptions().names()
    missing = [name for name in options if name not in result.info]
    assert not missing, f"options missing from info(): {missing}"
    assert result.info["pool_size"] == 40 and result.info["batch_size"] == 2 and result.info["surrogate"] == "shared"
    loop = est.make_loop(__import__("shapleig").BudgetedGame(_game(), 12))
    assert loop.options == est.options


def test_harness_accepts_every_loop_option_by_name() -> None:
    for name, value in (("pool_size", 64), ("refit", "decaying"), ("surrogate", "ard"), ("tol", 0.1)):
        spec = parse_method(f"shapleig:{name}={value}")
        assert getattr(spec.build(), name) == value


def test_gp_leverage_uses_the_default_fit_engine() -> None:
    """The drift the options object removed: GPLeverage fitted with botorch while ShaplEIG used numpy."""

    result = GPLeverage().estimate(_game(), 12, seed=0)
    assert result.info["fit_engine"] == LoopOptions().fit_engine == "numpy"
    assert GPLeverage().fit_engine == ShaplEIG().fit_engine
