"""tasks/metrics.py: the standardised errors and geometric mean the calibration benchmarks read, from hand values."""

from __future__ import annotations

import numpy as np
import pytest

from shapleig_tasks.metrics import geometric_mean, standardized_errors


def test_standardized_errors_from_hand_values() -> None:
    # errors 0.1, 0.5, 0, 0.2 with stds 0.1, 0.1, 0, 0: z = 1, 5, 0 (a zero std covers a zero error), inf
    z = standardized_errors([1.1, 2.5, 3.0, 4.2], [0.1, 0.1, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(z[:3], [1.0, 5.0, 0.0])
    assert np.isinf(z[3])
    batched = standardized_errors([[1.0, 2.0], [0.0, 2.0]], [[1.0, 2.0], [0.5, 2.0]], [1.0, 2.0])
    np.testing.assert_allclose(batched, [[0.0, 0.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match="std shape"):
        standardized_errors([1.0, 2.0], [1.0], [1.0, 2.0])


def test_geometric_mean_from_hand_values() -> None:
    assert geometric_mean([0.25, 1.0, 4.0]) == pytest.approx(1.0)
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([0.0, 1.0]) == pytest.approx(1e-150)  # an exact 0 floored at 1e-300
