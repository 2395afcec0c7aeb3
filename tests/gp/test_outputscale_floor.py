"""A MAP fit that drives the raw outputscale far negative unpacks to a valid kernel.

softplus(raw) underflows to exactly 0.0 below raw ~ -745; the fit's coordinates are unbounded, so a
fit on a near-constant archive can reach there, and unpacking then raised "outputscale must be
positive, got 0.0" in the middle of a design run.
"""

import numpy as np
import pytest

from shapleig.gp.kernels import Hamming
from shapleig.gp.kernels.graded import Graded
from shapleig.gp.priors import MIN_OUTPUTSCALE

X = np.array([[0, 0, 1], [1, 0, 1], [1, 1, 0], [0, 1, 1]], dtype=np.float64)


@pytest.mark.parametrize("raw_s", [-800.0, -1e4])
def test_hamming_unpack_of_an_underflowed_outputscale_is_the_floor(raw_s):
    terms = Hamming(ard=False).fit_terms(X)
    raw = np.concatenate([[raw_s], np.zeros(terms.n_params - 1)])
    params = terms.unpack(raw)
    assert params.outputscale == MIN_OUTPUTSCALE
    K, _, _ = terms.evaluate(raw)
    assert np.all(np.isfinite(K)) and K.max() == pytest.approx(MIN_OUTPUTSCALE)


def test_graded_unpack_of_an_underflowed_outputscale_is_the_floor():
    terms = Graded().fit_terms(X)
    raw = np.concatenate([[-800.0], np.zeros(terms.n_params - 1)])
    assert terms.unpack(raw).outputscale == MIN_OUTPUTSCALE


def test_floor_leaves_ordinary_outputscales_alone():
    terms = Hamming(ard=False).fit_terms(X)
    raw = np.concatenate([[0.0], np.zeros(terms.n_params - 1)])
    assert terms.unpack(raw).outputscale == pytest.approx(np.log(2.0), rel=1e-15)
