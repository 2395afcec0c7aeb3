"""One options object: ShaplEIG's, GPLeverage's and DesignLoop's options, defaults and info() all
derive from ``LoopOptions`` / ``GPOptions``, so a new option is one field plus the code using it."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from shapleig import DesignLoop, FunctionGame, GPLeverage, ShaplEIG
from shapleig.design.options import (
    DesignOptions,
    FitOptions,
    GPOptions,
    LoopOptions,
    ModelOptions,
    ReadoutOptions,
)
from shapleig_tasks.methods import parse_method


def _game(p: int = 5) -> FunctionGame:
    w = np.arange(1.0, p + 1)
    return FunctionGame(lambda Z: Z @ w + 0.3 * Z[:, 0] * Z[:, 1], n_players=p)


def test_gp_leverage_parameters_are_the_option_fields() -> None:
    params = inspect.signature(GPLeverage).parameters
    fields = {f.name: f for f in dataclasses.fields(GPOptions)}
    assert sorted(params) == sorted(fields)
    for name, param in params.items():
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
        assert param.default == fields[name].default, name
    assert GPLeverage().get_params() == {name: getattr(GPOptions(), name) for name in fields}


# ShaplEIG's parameters, written out here (not read from the module under test)
_TOP = ["surrogate", "acquisition", "refit", "index", "max_order", "tol", "rtol", "batch_size", "pool_size",
        "progress", "callbacks"]
_GROUPS = {"model": ModelOptions, "readout": ReadoutOptions, "fitting": FitOptions, "design": DesignOptions}


def test_shapleig_signature_is_short_typed_and_has_no_var_keywords() -> None:
    params = inspect.signature(ShaplEIG).parameters
    assert list(params) == _TOP + list(_GROUPS)
    assert len(params) <= 15
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert all(p.annotation is not inspect.Parameter.empty for p in params.values())
    defaults = LoopOptions()
    for name in _TOP:
        assert params[name].default == getattr(defaults, name), name
    for name in _GROUPS:
        assert params[name].default is None


def test_every_option_has_one_home() -> None:
    """The top-level parameters and the four groups partition the options (``ard``: the older switch,
    reachable through ``from_options`` only)."""
    homes = {name: ["top"] for name in _TOP}
    for group, kind in _GROUPS.items():
        for name in kind.names():
            homes.setdefault(name, []).append(group)
    assert sorted(homes) == sorted(set(LoopOptions.names()) - {"ard"})
    assert all(len(where) == 1 for where in homes.values()), homes


# a valid non-default value of every option but the older switch
_VALUES = dict(acquisition="uncertainty", refit="never", pool_size=64, batch_size=2, tol=0.5, rtol=0.1,
               progress=True, callbacks=(print,), index="k-SII", max_order=3, surrogate="shared", noise=1e-4,
               noise_convention="raw", jumps=True, rough=True, size_trend=False, hold_out_empty=True,
               calibrate="jackknife", integrate=2, structures=("kernels",), hand_over=3, fit_points=64,
               final_refit=False, warm_start=True, threads=2, initial_design="uniform", max_candidates=50,
               batch_mode="sync", acquisition_index="SV", acquisition_order=1, probe_degenerate=False,
               large_archive=None)


def test_from_options_puts_each_option_in_its_group() -> None:
    assert sorted(_VALUES) == sorted(set(LoopOptions.names()) - {"ard", "hyperparameters", "fit_engine"})
    est = ShaplEIG.from_options(**_VALUES)
    assert est.options == LoopOptions(**_VALUES)
    assert est.model == ModelOptions(noise=1e-4, noise_convention="raw", jumps=True, rough=True, size_trend=False,
                                     hold_out_empty=True)
    assert est.readout == ReadoutOptions(calibrate="jackknife", integrate=2, structures=("kernels",))
    assert est.fitting == FitOptions(hand_over=3, fit_points=64, final_refit=False, warm_start=True, threads=2)
    assert est.design == DesignOptions(initial_design="uniform", max_candidates=50, batch_mode="sync",
                                       acquisition_index="SV", acquisition_order=1, probe_degenerate=False,
                                       large_archive=None)
    plain = ShaplEIG.from_options(pool_size=64)
    assert (plain.model, plain.readout, plain.fitting, plain.design) == (None, None, None, None)
    assert ShaplEIG.from_options(ard=True).surrogate == "ard"


def test_from_options_takes_a_group_too_but_each_option_once() -> None:
    est = ShaplEIG.from_options(pool_size=64, model=ModelOptions(noise=1e-4), fit_points=128)
    assert est.options == LoopOptions(pool_size=64, noise=1e-4, fit_points=128)
    assert est.model == ModelOptions(noise=1e-4) and est.fitting == FitOptions(fit_points=128)
    with pytest.raises(TypeError, match=r"\['noise'\] given both by name and in model="):
        ShaplEIG.from_options(noise=1e-3, model=ModelOptions(noise=1e-4))
    with pytest.raises(TypeError, match="design must be a DesignOptions"):
        ShaplEIG.from_options(design=ModelOptions())


def test_a_flat_option_names_its_group() -> None:
    with pytest.raises(TypeError, match=r"noise is an option of the model group.*ModelOptions\(noise"):
        ShaplEIG(noise=1e-4)
    with pytest.raises(TypeError, match=r"fit_points is an option of the fitting group"):
        ShaplEIG(fit_points=64)
    with pytest.raises(TypeError, match=r"surrogate='ard'"):
        ShaplEIG(ard=True)
    with pytest.raises(TypeError, match=r"model must be a ModelOptions.*got dict"):
        ShaplEIG(model={"noise": 1e-4})


def test_groups_validate_alone_and_together() -> None:
    with pytest.raises(ValueError, match="noise must be"):
        ModelOptions(noise=-1.0)
    with pytest.raises(ValueError, match="unknown initial design"):
        DesignOptions(initial_design="sobol")
    assert repr(ModelOptions(noise=1e-4)) == "ModelOptions(noise=0.0001)" and repr(FitOptions()) == "FitOptions()"
    # a check across groups runs on the whole: the EIG's order must exist for the index it is about
    assert DesignOptions(acquisition_order=3).acquisition_order == 3  # valid alone
    with pytest.raises(ValueError, match=r"'SV' is supported with max_order=1 only, got max_order=3"):
        ShaplEIG(index="SV", design=DesignOptions(acquisition_order=3))


def test_groups_reach_the_loop_and_set_params_takes_flat_names() -> None:
    est = ShaplEIG(pool_size=40, model=ModelOptions(noise=1e-4), design=DesignOptions(max_candidates=30))
    assert est.options == LoopOptions(pool_size=40, noise=1e-4, max_candidates=30)
    assert est.set_params(fit_points=64, pool_size=20) is est
    assert est.options == LoopOptions(pool_size=20, noise=1e-4, max_candidates=30, fit_points=64)
    with pytest.raises(ValueError, match="no parameter"):
        est.set_params(nosie=1.0)


def test_nested_parameters_as_scikit_learn_sees_them() -> None:
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    est = ShaplEIG(model=ModelOptions(noise=1e-4))
    deep = est.get_params(deep=True)
    assert deep["model__noise"] == 1e-4 and deep["model__jumps"] is False
    assert not any(key.startswith(("readout__", "fitting__", "design__")) for key in deep)  # unset groups
    assert "model__noise" not in est.get_params(deep=False)
    for point in ParameterGrid({"model__noise": [1e-3, 1e-2], "fitting__fit_points": [64]}):
        twin = clone(est).set_params(**point)
        assert twin.options == LoopOptions(noise=point["model__noise"], fit_points=64)
    assert est.model == ModelOptions(noise=1e-4)  # the original untouched
    with pytest.raises(ValueError, match="noise must be"):
        est.set_params(model__noise=-1.0)
    with pytest.raises(ValueError, match="no parameter 'model__nosie'"):
        est.set_params(model__nosie=1.0)


def test_positional_options_are_refused() -> None:
    with pytest.raises(TypeError):
        ShaplEIG("eig")


def test_unknown_option_is_named() -> None:
    with pytest.raises(TypeError, match=r"ShaplEIG got unknown option\(s\) \['pool'\]"):
        ShaplEIG(pool=3)
    with pytest.raises(TypeError, match=r"ShaplEIG got unknown option\(s\) \['pool'\]"):
        ShaplEIG.from_options(pool=3)
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
    for build in (lambda: LoopOptions(**bad), lambda: ShaplEIG.from_options(**bad)):
        with pytest.raises(ValueError, match=message):
            build()


def test_options_are_normalised_and_clone_round_trips() -> None:
    from sklearn.base import clone

    est = ShaplEIG.from_options(ard=True, pool_size=np.int64(64), tol=np.float32(0.5), noise=1e-4)
    assert est.surrogate == "ard" and est.options.ard is True and type(est.pool_size) is int and type(est.tol) is float
    assert clone(est).get_params() == est.get_params()
    assert ShaplEIG(surrogate="shared").options.ard is False and ShaplEIG().options.ard is None


def test_every_option_reaches_the_loop_and_its_info() -> None:
    est = ShaplEIG(pool_size=40, batch_size=2, refit="never", fitting=FitOptions(final_refit=False), surrogate="shared")
    result = est.estimate(_game(), 12, seed=0)
    options = LoopOptions().names()
    missing = [name for name in options if name not in result.info]
    assert not missing, f"options missing from info(): {missing}"
    assert result.info["pool_size"] == 40 and result.info["batch_size"] == 2 and result.info["surrogate"] == "shared"
    loop = est.make_loop(__import__("shapleig").BudgetedGame(_game(), 12))
    # the loop keeps the options whole, rough="auto" resolved for its budget (off at 12 < 16p)
    assert loop.options == est.options.for_budget(loop.budget, loop.n_players)
    assert loop.options.rough is False and loop.options.replace(rough="auto") == est.options


def test_harness_accepts_every_loop_option_by_name() -> None:
    for name, value in (("pool_size", 64), ("refit", "decaying"), ("surrogate", "ard"), ("tol", 0.1),
                        ("noise", 1e-4), ("final_refit", False), ("initial_design", "uniform")):
        spec = parse_method(f"shapleig:{name}={value}")
        assert getattr(spec.build().options, name) == value


def test_gp_leverage_uses_the_default_fit_engine() -> None:
    """The drift the options object removed: GPLeverage fitted with botorch while ShaplEIG used numpy."""

    result = GPLeverage().estimate(_game(), 12, seed=0)
    assert result.info["fit_engine"] == LoopOptions().fit_engine == "numpy"
    assert GPLeverage().fit_engine == ShaplEIG().options.fit_engine


# -- declarative constraints ----------------------------------------------------------------------

def _constrained_fields():
    from shapleig.gp.constraints import constraint_of

    out = []
    for f in dataclasses.fields(LoopOptions):
        constraint = constraint_of(f)
        for bad in (constraint.invalid() if constraint is not None else ()):
            out.append(pytest.param(f.name, bad, id=f"{f.name}={bad!r}"))
    return out


def test_every_option_declares_a_constraint_with_invalid_examples() -> None:
    from shapleig.gp.constraints import constraint_of

    missing = [f.name for f in dataclasses.fields(LoopOptions) if constraint_of(f) is None]
    assert not missing, f"options without a declared constraint: {missing}"
    empty = [f.name for f in dataclasses.fields(LoopOptions) if not constraint_of(f).invalid()]
    assert not empty, f"constraints that name no invalid value: {empty}"
    for f in dataclasses.fields(LoopOptions):  # the default itself passes its own constraint
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        constraint_of(f).check(f.name, default)


@pytest.mark.parametrize("name, bad", _constrained_fields())
def test_each_field_refuses_an_invalid_value_naming_the_field(name: str, bad) -> None:
    """Generated from the declarations: every field, each value its constraint refuses; the error
    (raised on construction, before anything is evaluated) names the field."""
    with pytest.raises((ValueError, TypeError), match=name):
        LoopOptions(**{name: bad})
    with pytest.raises((ValueError, TypeError), match=name):
        ShaplEIG.from_options(**{name: bad})


def test_constraints_normalise() -> None:
    opts = LoopOptions(pool_size=np.int64(64), tol=np.float32(0.5), progress=np.bool_(False), hand_over=3.0)
    assert type(opts.pool_size) is int and type(opts.tol) is float and opts.progress is False
    assert type(opts.hand_over) is int and opts.callbacks == ()
    assert GPOptions(calibrate=np.bool_(True)).calibrate is True
    assert LoopOptions(callbacks=[print]).callbacks == (print,)


# -- no default written twice ---------------------------------------------------------------------

# parameters that share an option's name but mean something else
_OTHER_MEANING = {
    ("shapleig.design.acquisition", "first_argmax", "rtol"): "a tie tolerance, not the precision target",
    ("shapleig.gp.index_esp", "IndexOperator.__init__", "hold_out_empty"):
        "a resolved value (the option's None, the index's default, is resolved by the loop)",
}


def _functions_of(module):
    import inspect

    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj) and not issubclass(obj, GPOptions):
            for meth_name, meth in vars(obj).items():
                if inspect.isfunction(meth) and not hasattr(meth, "__signature__"):  # not derived from the options
                    yield f"{name}.{meth_name}", meth


def test_no_default_is_written_twice() -> None:
    """Every parameter of ``shapleig.gp`` and ``shapleig.design`` named like an option either has no
    default, is "as configured" (UNSET), or has the options object's default (which it then states
    by reading it, e.g. ``DEFAULT_POOL_SIZE``). ``GPOptions`` / ``LoopOptions`` and the constructors
    generated from them are the one place a default is written."""
    import importlib
    import inspect
    import pkgutil

    import shapleig.design
    import shapleig.gp
    from shapleig.seeding import UNSET

    defaults = LoopOptions().as_dict()
    defaults["ard"] = None
    aliases = {"engine": "fit_engine", "convention": "noise_convention", "fit_engine": "fit_engine"}
    problems, checked = [], 0
    for package in (shapleig.gp, shapleig.design):
        for info in pkgutil.iter_modules(package.__path__):
            if info.name == "torch_model":
                continue  # imports torch; its builder takes the kernel spec, no option
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for qualname, fn in _functions_of(module):
                for param in inspect.signature(fn).parameters.values():
                    key = aliases.get(param.name, param.name)
                    if key not in defaults or param.default is inspect.Parameter.empty or param.default is UNSET:
                        continue
                    if (module.__name__, qualname, param.name) in _OTHER_MEANING:
                        continue
                    checked += 1
                    if param.default != defaults[key]:
                        problems.append(f"{module.__name__}.{qualname}({param.name}={param.default!r}): "
                                        f"the option's default is {defaults[key]!r}")
    assert not problems, "\n".join(problems)
    assert checked >= 3  # the scan sees the helpers that do take defaults (pool size, hand-over)


def test_the_loop_keeps_the_options_whole_and_its_constructor_short() -> None:
    import inspect

    lines = inspect.getsource(DesignLoop.__init__).splitlines()
    assert len(lines) < 40, f"DesignLoop.__init__ has {len(lines)} lines"
    loop = DesignLoop(_game(), 12, pool_size=40, refit="never")
    assert loop.options == LoopOptions(pool_size=40, refit="never", rough=False)  # "auto" resolved: 12 < 16p
    copied = [name for name in LoopOptions.names() if name in vars(loop)]
    assert not copied, f"options copied onto the loop: {copied}"


# -- progress, tol and rtol: options, overridden per call -------------------------------------------

def test_one_progress_bar_however_the_loop_runs(monkeypatch) -> None:
    import shapleig.design.loop as loop_module
    import shapleig.estimation.base as base_module
    from shapleig.estimation.base import evaluation_progress_bar

    opened = []

    def counting(*args, **kwargs):
        opened.append(args[-1])
        return evaluation_progress_bar(*args, **kwargs)

    monkeypatch.setattr(loop_module, "evaluation_progress_bar", counting)
    monkeypatch.setattr(base_module, "evaluation_progress_bar", counting)
    ShaplEIG(progress=True, pool_size=40).estimate(_game(), 12, seed=0)
    assert opened == ["shapleig"]
    opened.clear()
    ShaplEIG(pool_size=40).estimate(_game(), 12, seed=0, progress=True)
    assert opened == ["shapleig"]
    opened.clear()
    DesignLoop(_game(), 12, progress=True, pool_size=40).run()
    assert opened == ["shapleig eig"]
    opened.clear()
    ShaplEIG(progress=True, pool_size=40).estimate(_game(), 12, seed=0, progress=False)
    assert opened == []


def test_estimate_overrides_options_for_one_call_only() -> None:
    est = ShaplEIG(pool_size=40, refit="never")
    before = est.get_params()
    loose = est.estimate(_game(), 30, seed=0, tol=1e6)  # met at once
    assert loose.info["tol"] == 1e6 and loose.info["target_reached"] and loose.evaluations < 30
    assert est.get_params() == before and est.tol is None
    assert est.estimate(_game(), 30, seed=0).evaluations == 30
    configured = ShaplEIG(pool_size=40, refit="never", tol=1e6)
    assert configured.estimate(_game(), 30, seed=0, tol=None).evaluations == 30  # None: no target this call
    with pytest.raises(ValueError, match="rtol"):
        est.estimate(_game(), 30, rtol=-1.0)
