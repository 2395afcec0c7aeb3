"""Exact Shapley values of a LightGBM model seen as a game on 0/1 coalition indicators.

The game is ``S -> f(1_S)``: the model evaluated at the indicator vector of ``S`` (reference all
zeros, explicand all ones). For a 0/1 input every split of a tree only asks "is player j in S?",
so the path to a leaf is a conjunction ``[A subset of S][B disjoint from S]`` where ``A`` holds the
players the path requires to be present and ``B`` those it requires to be absent. A tree is the
sum over its leaves of ``value * [A subset of S][B disjoint from S]``, and the Shapley value of that
unanimity-with-exclusions game is closed form (random-order argument over the ``a + b`` players of
``A`` and ``B``):

- ``i in A``: ``i`` adds ``value`` iff, among ``A | B``, it comes last of ``A`` and before all of
  ``B``; probability ``(a-1)! b! / (a+b)! = 1 / (a * C(a+b, a))``;
- ``j in B``: ``j`` removes ``value`` iff all of ``A`` came before it and it is the first of ``B``;
  probability ``a! (b-1)! / (a+b)! = 1 / (b * C(a+b, b))``;
- every other player gets 0. A path that requires a player both present and absent is never
  reached by a 0/1 input and contributes nothing.

This is the interventional Shapley value with one reference (all absent), computed from the tree
structure in ``O(leaves * depth)`` per tree. It is NOT LightGBM's path-dependent ``pred_contrib``,
which answers a different question (feature attribution under the training distribution).
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

# LightGBM's IsZero: |x| <= kZeroThreshold counts as zero when missing_type is "Zero".
_LGBM_ZERO_THRESHOLD = 1e-35
_ALLOW_0 = 1  # bit 0: the path admits the player absent (x_j = 0)
_ALLOW_1 = 2  # bit 1: the path admits the player present (x_j = 1)


def _booster_dump(model: Any) -> dict:
    """The ``dump_model()`` dict of an ``LGBMModel``, a ``Booster``, or a dump dict itself."""
    if isinstance(model, dict):
        return model
    booster = getattr(model, "booster_", model)
    if not hasattr(booster, "dump_model"):
        raise TypeError(f"expected a LightGBM model, Booster or dump dict, got {type(model).__name__}")
    return booster.dump_model()


def _left_set(node: dict) -> int:
    """Which of the inputs {0, 1} go to the left child of a numerical split (bitmask)."""
    decision = node.get("decision_type", "<=")
    if decision != "<=":
        raise ValueError(
            f"tree split with decision_type {decision!r} (categorical) is not supported; "
            "fit the surrogate on numerical 0/1 features"
        )
    threshold = float(node["threshold"])
    missing_type = node.get("missing_type", "None")
    default_left = bool(node.get("default_left", True))
    mask = 0
    for x, bit in ((0.0, _ALLOW_0), (1.0, _ALLOW_1)):
        # LightGBM's NumericalDecision: zeros are "missing" when missing_type is Zero and then
        # follow default_left; otherwise the usual x <= threshold (inputs are never NaN here).
        if missing_type == "Zero" and abs(x) <= _LGBM_ZERO_THRESHOLD:
            goes_left = default_left
        else:
            goes_left = x <= threshold
        if goes_left:
            mask |= bit
    return mask


def _add_leaf(phi: np.ndarray, allowed: dict[int, int], value: float) -> None:
    """Add the Shapley values of ``value * [A subset of S][B disjoint from S]`` to ``phi``."""
    present = [j for j, m in allowed.items() if m == _ALLOW_1]
    absent = [j for j, m in allowed.items() if m == _ALLOW_0]
    a, b = len(present), len(absent)
    if a:
        phi[present] += value / (a * comb(a + b, a))
    if b:
        phi[absent] -= value / (b * comb(a + b, b))


def _tree_shapley(root: dict, phi: np.ndarray) -> None:
    """Add one tree's Shapley values to ``phi`` (iterative depth-first walk, any depth).

    Along a path, ``allowed`` maps each split player to the inputs (bitmask over {0, 1}) that
    still reach the current node; a child no 0/1 input reaches is skipped.
    """
    stack: list[tuple[dict, dict[int, int]]] = [(root, {})]
    while stack:
        node, allowed = stack.pop()
        if "leaf_value" in node:
            if "leaf_coeff" in node:
                raise ValueError("linear trees (linear_tree=True) are not supported")
            _add_leaf(phi, allowed, float(node["leaf_value"]))
            continue
        feature = int(node["split_feature"])
        left = _left_set(node)
        current = allowed.get(feature, _ALLOW_0 | _ALLOW_1)
        for child, admitted in ((node["left_child"], current & left), (node["right_child"], current & ~left)):
            if admitted == 0:
                continue  # contradictory path: no 0/1 input reaches this subtree
            sub = dict(allowed)
            sub[feature] = admitted
            stack.append((child, sub))


def lightgbm_shapley_values(model: Any, n_players: int) -> np.ndarray:
    """Exact Shapley values ``float64[n_players]`` of ``S -> model(1_S)`` for a LightGBM regressor.

    ``model`` is an ``LGBMRegressor``, a ``Booster`` or its ``dump_model()`` dict, fitted on
    ``n_players`` numerical features (any training data; the game evaluates it at 0/1 inputs).
    The values sum to ``f(1_N) - f(0)``. Only single-output models (regression) are supported.
    """
    dump = _booster_dump(model)
    if int(dump.get("num_tree_per_iteration", 1)) != 1:
        raise ValueError("only single-output LightGBM models are supported")
    n_features = int(dump.get("max_feature_idx", n_players - 1)) + 1
    if n_features != n_players:
        raise ValueError(f"the model has {n_features} features but the game has {n_players} players")
    phi = np.zeros(n_players, dtype=np.float64)
    for tree in dump["tree_info"]:
        _tree_shapley(tree["tree_structure"], phi)
    if dump.get("average_output", False):
        phi /= max(len(dump["tree_info"]), 1)  # random-forest mode averages the trees
    return phi


__all__ = ["lightgbm_shapley_values"]
