"""The ``"shapleig_uncertainty"`` block of a saved shapiq JSON file, read without shapiq (issue 34, item 7).

A block that is a list raised ``TypeError: list indices must be integers`` from the loader; every
malformed block is now a ``ValueError`` naming the file and the block. The loader itself needs
shapiq (tests/interop/test_shapiq_uncertainty.py); the reading and checking here do not.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from shapleig.estimation.uncertainty_block import UNCERTAINTY_KEY, parse_uncertainty_block, read_json_object

GOOD = {"terms": ["0", "1", [0, 1]], "std": [0.5, 0.25, 0.125],
        "covariance": [[0.25, 0.0, 0.01], [0.0, 0.0625, 0.0], [0.01, 0.0, 0.015625]]}


def _saved(tmp_path, block) -> tuple[str, dict]:
    """A file shaped like the one UncertainInteractionValues.save writes, with ``block`` as its block."""
    path = tmp_path / "values.json"
    path.write_text(json.dumps({"metadata": {"index": "k-SII", "n_players": 2}, "data": {"0": 1.0},
                                UNCERTAINTY_KEY: block}))
    return str(path), read_json_object(path)


def test_a_good_block_is_read_as_written(tmp_path):
    where, data = _saved(tmp_path, GOOD)
    terms, std, cov = parse_uncertainty_block(data[UNCERTAINTY_KEY], where)
    assert terms == ["0", "1", (0, 1)]  # shapiq's strings are left to its parser
    assert std.dtype == np.float64 and std.tolist() == [0.5, 0.25, 0.125]
    assert cov.shape == (3, 3) and cov[0, 2] == 0.01 and cov[2, 2] == 0.015625
    _, std, cov = parse_uncertainty_block({"terms": [[2]], "std": [1]}, where)  # a method without covariance
    assert std.tolist() == [1.0] and cov is None


@pytest.mark.parametrize(("block", "match"), [
    ([["0", "1"], [0.5, 0.25]], r"the 'shapleig_uncertainty' block is a JSON array, not an object with 'terms'"),
    ("std", r"block is a JSON string"),
    ({"std": [0.5]}, r"block has no 'terms'"),
    ({"terms": ["0"]}, r"block has no 'std'"),
    ({"terms": "0,1", "std": [0.5]}, r"'terms' is a JSON string, not a list"),
    ({"terms": ["0", 3], "std": [0.5, 0.1]}, r"term 1 is 3, not a string or a non-empty list of player indices"),
    ({"terms": [[0, -1]], "std": [0.5]}, r"term 0 is \[0, -1\]"),
    ({"terms": ["0", "1"], "std": [0.5]}, r"'std' has shape \(1,\); the block's 2 terms need \(2,\)"),
    ({"terms": ["0"], "std": {"0": 0.5}}, r"'std' is not a list of numbers"),
    ({"terms": ["0"], "std": ["0.5"]}, r"'std' is not a list of numbers"),
    ({"terms": ["0"], "std": [-0.5]}, r"'std' holds a negative value"),
    ({"terms": ["0"], "std": [1e999]}, r"'std' holds a non-finite value"),
    ({"terms": ["0", "1"], "std": [0.5, 0.5], "covariance": [[1.0, 0.0]]}, r"'covariance' has shape \(1, 2\)"),
    ({"terms": ["0"], "std": [0.5], "covariance": [0.25]}, r"'covariance' is not a list of lists of numbers"),
])
def test_a_malformed_block_is_named_with_its_file(block, match, tmp_path):
    where, data = _saved(tmp_path, block)
    with pytest.raises(ValueError, match=match) as info:
        parse_uncertainty_block(data[UNCERTAINTY_KEY], where)
    assert str(info.value).startswith(f"{where}: the 'shapleig_uncertainty' block")


def test_a_file_that_is_no_json_object_is_named(tmp_path):
    path = tmp_path / "values.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"values\.json holds a JSON array, not the object shapiq writes"):
        read_json_object(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"values\.json is not a JSON file"):
        read_json_object(path)
