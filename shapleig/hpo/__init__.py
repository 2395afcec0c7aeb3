"""Hyperparameter-importance games (ablation, tunability, sensitivity, optimizer bias), HyperSHAP interop.

The games are defined over a ConfigSpace configuration space and a black-box objective.

Optional: needs ``pip install 'shapleig[hpo]'`` (ConfigSpace; Optuna for the Optuna tuners,
hypershap for the interop), imported only when used. The games are generic (any objective
``config -> score``), so they live in the core; building an objective from a model and a dataset
is the job of ``shapleig_tasks.hpi``.
"""

from __future__ import annotations

from .games import (
    STUDIES,
    AblationGame,
    HPOGame,
    OptimizerBiasGame,
    SensitivityGame,
    TunabilityGame,
    inner_seed,
)
from .hypershap import HyperSHAPGame, hypershap_game
from .space import HPSpace, coalition_seed, load_space, require_configspace
from .tuners import TUNERS, OptunaSearch, RandomSearch, make_tuner

__all__ = [
    "STUDIES",
    "TUNERS",
    "AblationGame",
    "HPOGame",
    "HPSpace",
    "HyperSHAPGame",
    "OptimizerBiasGame",
    "OptunaSearch",
    "RandomSearch",
    "SensitivityGame",
    "TunabilityGame",
    "coalition_seed",
    "hypershap_game",
    "inner_seed",
    "load_space",
    "make_tuner",
    "require_configspace",
]
