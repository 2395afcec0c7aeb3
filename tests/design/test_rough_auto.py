"""``rough="auto"`` (the default): the rough part from 16 evaluations per player, resolved per run."""

from __future__ import annotations

import numpy as np
import pytest

from shapleig import FunctionGame, GPLeverage, ShaplEIG
from shapleig.design.loop import DesignLoop
from shapleig.gp.kernels.registry import ROUGH_AUTO_MULTIPLE, resolve_rough, surrogate_kernels
from shapleig.gp.kernels.rough import Rough
from shapleig.gp.options import GPOptions

P = 7


def _game() -> FunctionGame:
    # a smooth part and a rough one (a coalition-hash jump) so every fit has something to find
    weights = np.linspace(1.0, 2.0, P)

    def value(Z: np.ndarray) -> np.ndarray:
        codes = Z.astype(np.int64) @ (1 << np.arange(P))
        return Z @ weights + 0.3 * ((codes * 2654435761) % 97 == 3)

    return FunctionGame(value, n_players=P)


def _has_rough(options) -> bool:
    return all(any(isinstance(q, Rough) for q in getattr(k, "parts", (k,))) for k in options.kernels)


def test_the_threshold_is_sixteen_evaluations_per_player():
    assert ROUGH_AUTO_MULTIPLE == 16
    assert resolve_rough("auto", ROUGH_AUTO_MULTIPLE * P, P) is True
    assert resolve_rough("auto", ROUGH_AUTO_MULTIPLE * P - 1, P) is False
    assert resolve_rough("auto", 2 * P, P) is False


def test_explicit_values_are_kept_and_gpytorch_never_gets_it():
    for value in (True, False, "both"):
        assert resolve_rough(value, 2 * P, P) == value
        assert resolve_rough(value, 100 * P, P) == value
    assert resolve_rough("auto", 100 * P, P, fit_engine="gpytorch") is False


def test_a_wrong_value_is_named():
    with pytest.raises(ValueError, match="rough must be True, False, 'both' or 'auto'"):
        GPOptions(rough="sometimes")
    with pytest.raises(ValueError, match="resolve it first"):
        surrogate_kernels("auto", "both", False, "auto")


def test_the_default_is_auto_and_the_published_setting_has_no_rough_part():
    assert ShaplEIG().options.rough == "auto"
    assert ShaplEIG.published(fit_engine="numpy").options.rough is False  # (numpy: no torch needed here)
    assert not _has_rough(GPOptions())  # unresolved: the kernels of a small budget


@pytest.mark.parametrize(("budget", "expected"), [(ROUGH_AUTO_MULTIPLE * P - 1, False), (ROUGH_AUTO_MULTIPLE * P, True)])
def test_the_loop_resolves_it_from_its_budget(budget, expected):
    loop = DesignLoop(_game(), budget, seed=0)
    assert loop.options.rough is expected
    assert _has_rough(loop.options) is expected
    assert ShaplEIG().options.rough == "auto"  # the estimator's own options stay as given


def test_a_run_reports_the_resolved_value():
    est = ShaplEIG().estimate(_game(), ROUGH_AUTO_MULTIPLE * P, seed=0)
    assert est.info["rough"] is True
    small = ShaplEIG().estimate(_game(), 4 * P, seed=0)
    assert small.info["rough"] is False


def test_auto_below_the_threshold_is_the_run_without_the_rough_part():
    a = ShaplEIG().estimate(_game(), 4 * P, seed=3)
    b = ShaplEIG.from_options(rough=False).estimate(_game(), 4 * P, seed=3)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.std, b.std)


def test_auto_at_the_threshold_is_the_run_with_the_rough_part():
    a = ShaplEIG().estimate(_game(), ROUGH_AUTO_MULTIPLE * P, seed=3)
    b = ShaplEIG.from_options(rough=True).estimate(_game(), ROUGH_AUTO_MULTIPLE * P, seed=3)
    c = ShaplEIG.from_options(rough=False).estimate(_game(), ROUGH_AUTO_MULTIPLE * P, seed=3)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.std, b.std)
    assert not np.array_equal(a.std, c.std)


def test_gp_leverage_resolves_it_from_its_sample():
    big = GPLeverage().estimate(_game(), ROUGH_AUTO_MULTIPLE * P, seed=0)
    small = GPLeverage().estimate(_game(), 4 * P, seed=0)
    assert big.info["rough"] is True and small.info["rough"] is False
