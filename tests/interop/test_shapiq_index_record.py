"""The shapiq bridge reads the ``Index`` record (issue 28): ``ShapiqApproximator.valid_indices`` are
the registered indices with a shapiq name (one registered after import included), an index whose
record names shapiq's index under another name goes out and comes back under the right names, and
one without a shapiq counterpart is refused naming the record's field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _optional import import_shapiq_bridge

import shapleig
from shapleig.games.indices import get_index, register_index, unregister_index

pytestmark = pytest.mark.shapiq

bridge = import_shapiq_bridge()  # skips the module without shapiq >= 1.8, unless CI requires it


@pytest.fixture
def renamed_bv():
    """The Banzhaf value under a name of ours, shapiq's "BV" as its shapiq name."""
    record = register_index(dataclasses.replace(get_index("BV"), name="test-banzhaf", shapiq_name="BV"))
    # shapiq's "BV" now has two records; the bridge reads the first registered (the built-in)
    yield record
    unregister_index(record.name)


@pytest.fixture
def no_shapiq_name():
    record = register_index(dataclasses.replace(get_index("BV"), name="test-local", shapiq_name=None))
    yield record
    unregister_index(record.name)


def _game() -> shapleig.FunctionGame:
    return shapleig.FunctionGame(lambda Z: Z @ np.arange(1.0, 5.0) + Z[:, 0] * Z[:, 1], n_players=4)


def test_valid_indices_are_the_registered_ones_with_a_shapiq_name(renamed_bv, no_shapiq_name) -> None:
    valid = bridge.ShapiqApproximator.valid_indices
    assert valid[:6] == ("SV", "BV", "k-SII", "SII", "STII", "FSII")
    assert "test-banzhaf" in valid and "test-local" not in valid
    assert bridge.ShapiqApproximator(4, index="SV").valid_indices == valid


def test_results_go_out_under_the_shapiq_name(renamed_bv) -> None:
    est = shapleig.ShaplEIG(index="test-banzhaf").estimate(_game(), 12, seed=0)
    iv = bridge.to_interaction_values(est)
    assert iv.index == "BV"
    back = bridge.from_interaction_values(iv)
    assert back.index == "BV" and np.allclose(back.values, est.values)  # the built-in record answers to "BV"


def test_an_index_without_a_shapiq_name_is_refused(no_shapiq_name) -> None:
    est = shapleig.ShaplEIG(index="test-local").estimate(_game(), 12, seed=0)
    with pytest.raises(ValueError, match="no shapiq counterpart"):
        bridge.to_interaction_values(est)
