"""HyperSHAP interop: a HyperSHAP explanation task or game as a ``shapleig`` game.

HyperSHAP (``pip install hypershap``) defines the same four studies on a *surrogate* of the score
fitted to sampled configurations, and computes exact Shapley values on it. Wrapping its games here
lets any ``shapleig`` estimator run on them (and a store log them). :func:`hypershap_game` builds
HyperSHAP's game for a study from an ``ExplanationTask``, with HyperSHAP's own classes, so the
values are exactly those HyperSHAP explains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shapleig.errors import GameError
from shapleig.games.coalitions import as_coalition_matrix

from .games import STUDIES
from .identity import hypershap_identity


def require_hypershap() -> Any:
    """The ``hypershap`` module, or an ImportError naming the package.

    Returns:
        the imported ``hypershap`` module.
    """
    try:
        import hypershap
    except ImportError as exc:
        raise ImportError("HyperSHAP interop needs the hypershap package: pip install hypershap") from exc
    return hypershap


class HyperSHAPGame:
    """A HyperSHAP game (``hypershap.games.AbstractHPIGame``) as a ``shapleig`` game.

    Values are HyperSHAP's raw coalition values (``value_function``, before shapiq's
    normalisation by v(empty), which shifts every value equally and leaves Shapley values alone).

    Its identity for evaluation stores (:meth:`identity`) covers everything the HyperSHAP game holds
    that changes a value: the configuration space, the baseline and target configurations, the
    surrogate model's fitted state, the searcher's sample (its seed and size) and aggregation, and
    HyperSHAP's version (:func:`~shapleig.hpo.identity.hypershap_identity`).

    Args:
        game: a HyperSHAP game (``hypershap.games.AbstractHPIGame``).
        game_id: a label added to the identity for evaluation stores; needed only when part of the game
            cannot be read (a surrogate of a library other than scikit-learn, LightGBM or torch): it then
            names that part's version, and the store accepts the game.
    """

    def __init__(self, game: Any, game_id: str | None = None):
        hs = require_hypershap()
        if not isinstance(game, hs.games.AbstractHPIGame):
            raise GameError(f"expected a HyperSHAP game (AbstractHPIGame), got {type(game).__name__}")
        self.game = game
        self.n_players = int(game.n_players)
        self.names = list(game.get_hyperparameter_names())
        self.game_id = game_id

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """HyperSHAP's values ``float64[m]`` of ``bool[m, p]`` coalitions."""
        z = as_coalition_matrix(coalitions, self.n_players)
        return np.asarray(self.game.value_function(z), dtype=np.float64)

    def identity(self) -> dict[str, str]:
        """Identity components for evaluation stores: the HyperSHAP game read by kind, and ``game_id``.

        Returns:
            ``{component: text}`` (:func:`~shapleig.hpo.identity.hypershap_identity`); ``opaque`` lists
            what could not be read.
        """
        out = hypershap_identity(self.game)
        if self.game_id is not None:
            out["game_id"] = self.game_id
        return out

    def __repr__(self) -> str:
        return f"HyperSHAPGame({type(self.game).__name__}, {self.names})"


# argument count over budget: hypershap's own keywords, passed through
def hypershap_game(  # noqa: PLR0913
    task: Any,
    study: str = "tunability",
    *,
    baseline: Any = None,
    target: Any = None,
    n_samples: int = 10_000,
    seed: int = 0,
    optimizer: Any = None,
    ensemble: Any = None,
    game_id: str | None = None,
) -> HyperSHAPGame:
    """HyperSHAP's game for ``study`` on the ``ExplanationTask`` ``task`` (or wrap a HyperSHAP game).

    Args:
        task: a HyperSHAP ``ExplanationTask``, or a HyperSHAP game to wrap as it is.
        study: one of ``STUDIES``: "ablation", "tunability" (default), "sensitivity", "optimizer-bias".
        baseline: a ``Configuration`` (default: the space's default configuration).
        target: the configuration of interest (ablation only).
        n_samples: HyperSHAP's random-search sample (tunability, sensitivity), seeded with ``seed``.
        seed: the seed of HyperSHAP's searcher.
        optimizer: a HyperSHAP ``ConfigSpaceSearcher`` (optimizer bias only).
        ensemble: HyperSHAP ``ConfigSpaceSearcher`` objects to compare with (optimizer bias only).
        game_id: a label added to the game's identity for evaluation stores (see :class:`HyperSHAPGame`).

    Returns:
        the :class:`HyperSHAPGame`.
    """
    hs = require_hypershap()
    if isinstance(task, hs.games.AbstractHPIGame):
        return HyperSHAPGame(task, game_id)
    if not isinstance(task, hs.ExplanationTask):
        raise GameError(f"expected a HyperSHAP ExplanationTask or game, got {type(task).__name__}")
    if study not in STUDIES:
        raise GameError(f"unknown study {study!r}; choose one of {STUDIES}")
    from hypershap import games as G
    from hypershap import task as T
    from hypershap.utils import Aggregation, RandomConfigSpaceSearcher

    cs = task.config_space
    surrogate = task.surrogate_model
    base = baseline if baseline is not None else cs.get_default_configuration()
    if study == "ablation":
        if target is None:
            raise GameError("the ablation study needs target= (the configuration of interest)")
        game = G.AblationGame(T.AblationExplanationTask(cs, surrogate, base, target))
    elif study == "optimizer-bias":
        if optimizer is None or not ensemble:
            raise GameError("the optimizer-bias study needs optimizer= and ensemble= (HyperSHAP searchers)")
        game = G.OptimizerBiasGame(T.OptimizerBiasExplanationTask(cs, surrogate, optimizer, list(ensemble)))
    else:
        task_cls, game_cls, mode = {
            "tunability": (T.TunabilityExplanationTask, G.TunabilityGame, Aggregation.MAX),
            "sensitivity": (T.SensitivityExplanationTask, G.SensitivityGame, Aggregation.VAR),
        }[study]
        sub = task_cls(cs, surrogate, base)
        searcher = RandomConfigSpaceSearcher(sub, mode=mode, n_samples=int(n_samples), seed=int(seed))
        game = game_cls(sub, cs_searcher=searcher)
    return HyperSHAPGame(game, game_id)
