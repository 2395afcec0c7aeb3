"""A result as shapiq ``InteractionValues`` (the optional extra ``shapleig[shapiq]``).

Behind ``ShapleyEstimate.to_interaction_values()``; the rest of the bridge (the approximator, the
way back) is :mod:`shapleig.interop.shapiq_bridge`. Importing this module without shapiq >= 1.8
raises an ``ImportError`` that names the extra.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import numpy as np

MISSING_EXTRA = (
    "the shapiq bridge needs shapiq >= 1.8, the optional extra shapleig[shapiq]: "
    "pip install 'shapleig[shapiq]' (shapiq needs Python >= 3.12)"
)
MIN_SHAPIQ = (1, 8)

try:
    from shapiq.interaction_values import InteractionValues
except ImportError as exc:  # the optional extra is missing: name it
    raise ImportError(f"shapiq is not installed; {MISSING_EXTRA}") from exc
SHAPIQ_VERSION = importlib.metadata.version("shapiq")
if tuple(int(part) for part in SHAPIQ_VERSION.split(".")[:2]) < MIN_SHAPIQ:
    raise ImportError(f"shapiq {SHAPIQ_VERSION} is installed; {MISSING_EXTRA}")


STD_ATTRIBUTE = "shapleig_std"
COVARIANCE_ATTRIBUTE = "shapleig_covariance"


def to_interaction_values(estimate: Any) -> InteractionValues:
    """``estimate`` as shapiq ``InteractionValues``: the estimate's index ("SV" by default) and orders
    0..max_order (1, or 2 for pairwise interactions), n_players = p, one entry per term.

    Entry ``()`` and ``baseline_value`` hold v(empty) when the run evaluated it (shapiq's
    convention, so values sum to v(N)); without it both are 0 and only the other entries count.
    ``estimation_budget`` is the number of distinct evaluations spent. The std and covariance are
    kept as the attributes ``shapleig_std`` / ``shapleig_covariance`` (None for methods without a
    posterior; see the module docstring of :mod:`shapleig.interop.shapiq_bridge`).
    """
    baseline = 0.0 if estimate.baseline is None else float(estimate.baseline)
    iv = _index_values(estimate, np.asarray(estimate.values, dtype=np.float64), baseline)
    setattr(iv, STD_ATTRIBUTE, None if estimate.std is None else np.array(estimate.std, dtype=np.float64))
    setattr(iv, COVARIANCE_ATTRIBUTE,
            None if estimate.covariance is None else np.array(estimate.covariance, dtype=np.float64))
    return iv


def std_interaction_values(estimate: Any) -> InteractionValues:
    """The posterior std of ``estimate`` as shapiq ``InteractionValues`` (its index and terms,
    entry ``()`` = 0), e.g. for ``shapiq.plot.bar_plot``. ``ValueError`` for methods without std."""
    if estimate.std is None:
        raise ValueError(f"method {estimate.method or '?'} reports no posterior std")
    return _index_values(estimate, np.asarray(estimate.std, dtype=np.float64), 0.0)


def _index_values(estimate: Any, per_term: np.ndarray, empty: float) -> InteractionValues:
    """InteractionValues of the estimate's index over its terms: ``()`` -> ``empty``, ``terms[k]`` ->
    ``per_term[k]`` (the terms are the p singletons for the Shapley and Banzhaf values)."""
    p = int(estimate.n_players)
    index = getattr(estimate, "index", None) or "SV"
    terms = getattr(estimate, "terms", None) or [(i,) for i in range(p)]
    values = np.concatenate([[empty], per_term])
    lookup = {(): 0, **{tuple(T): k + 1 for k, T in enumerate(terms)}}
    return InteractionValues(
        values=values,
        index=index,
        max_order=max((len(T) for T in terms), default=1),
        min_order=0,
        n_players=p,
        interaction_lookup=lookup,
        estimated=not estimate.info.get("exact", False),  # a budget covering the game: enumerated
        estimation_budget=int(estimate.evaluations),
        baseline_value=empty,
        target_index=index,
    )
