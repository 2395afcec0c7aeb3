"""Hyperparameter-importance games over a ConfigSpace space and a black-box objective.

Players are the space's hyperparameters; ``objective(config: dict) -> float`` is a score (higher
is better) that must be deterministic, e.g. a cross-validation with fixed folds and model seed.
Players outside a coalition S stay at the baseline configuration (default: the space's defaults).

======================  ==========================================================================
game                    v(S)
======================  ==========================================================================
``AblationGame``        score of the configuration with the target's values on S
``TunabilityGame``      best score of one tuning run over S (inner tuner, fixed trial budget)
``SensitivityGame``     variance (ddof 0) of the score over a fixed seeded sample varying S
``OptimizerBiasGame``   best(optimizer on S) - max(best(optimizer), best(each ensemble member))
======================  ==========================================================================

Each v(S) is a deterministic function of the study seed and S: inner runs are seeded with the
study seed (shared draws) or with a hash of the seed and S's bits (adaptive tuners), never with a
counter, so a coalition has one value whichever process or order evaluates it. The games are
plain picklable objects (given a picklable objective), so an ``ExecutorEvaluator`` runs one tuning
run per worker, and their ``identity()`` (:mod:`shapleig.hpo.identity`: the seed, the space, the
objective by content, each tuner, the game's options and code) binds them to evaluation stores.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from shapleig.errors import GameError
from shapleig.games.coalitions import as_coalition_matrix
from shapleig.games.identity import class_code_identity, show_value

from .identity import merge_identity, objective_identity, space_identity, tuner_identity
from .space import HPSpace, coalition_seed
from .tuners import Objective, RandomSearch, ScoreCache

STUDIES = ("ablation", "tunability", "sensitivity", "optimizer-bias")


def inner_seed(seed: int, row: np.ndarray, scope: str, stream: int = 0) -> int:
    """Seed of one inner run.

    Per study (``scope='study'``, shared draws; stream 0 is ``seed`` itself) or per coalition (a
    hash of the seed, the stream and the coalition's bits).

    Args:
        seed: the study seed.
        row: the coalition, ``bool[p]``.
        scope: ``"study"`` (shared draws for every coalition) or ``"coalition"`` (a hash of the seed and S).
        stream: the seed stream (0 for the main tuner, k for the k-th ensemble member).

    Returns:
        a non-negative int seed.
    """
    if scope == "study":
        if stream == 0:  # the study seed itself: the same draws as HyperSHAP's searcher with that seed
            return int(seed)
        digest = hashlib.sha256(f"{int(seed)}|stream={int(stream)}".encode()).digest()
        return int.from_bytes(digest[:4], "little")
    if scope == "coalition":
        return coalition_seed(int(seed) * 1_000_003 + int(stream), row)
    raise GameError(f"unknown seed scope {scope!r}")


class HPOGame:
    """Base: players = the space's hyperparameters; ``__call__`` evaluates ``bool[m, p]`` row by row.

    ``n_objective_calls`` counts objective evaluations made in this process (a study's real cost).

    Args:
        space: a ConfigSpace ``ConfigurationSpace`` or an :class:`HPSpace`.
        objective: ``config: dict -> float``, a deterministic score (higher is better).
        baseline: the configuration of players outside a coalition (default: the space's defaults); give it
            here or to the :class:`HPSpace`, not both.
        seed: the study seed, in [0, 2^32).
        objective_id: a label added to the objective's identity for evaluation stores, naming what the
            identity cannot see (the version of a file it reads; see
            :func:`~shapleig.hpo.identity.objective_identity`).
    """

    study: ClassVar[str] = ""
    # bumped whenever a change to this module changes values (e.g. the seeding rules), so that
    # evaluation stores written before are refused instead of mixed in
    definition: ClassVar[int] = 1

    def __init__(
        self,
        space: Any,
        objective: Objective,
        *,
        baseline: Mapping[str, Any] | None = None,
        seed: int = 0,
        objective_id: str | None = None,
    ):
        if not callable(objective):
            raise GameError(f"objective must be callable config -> score, got {type(objective).__name__}")
        self.space = space if isinstance(space, HPSpace) else HPSpace(space, baseline)
        if isinstance(space, HPSpace) and baseline is not None:
            raise GameError("give the baseline to HPSpace or to the game, not both")
        self.objective = objective
        self.objective_id = objective_id
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
            raise GameError(f"seed must be an integer in [0, 2^32) (ConfigSpace's range), got {seed!r}")
        self.seed = int(seed)
        self.n_players = self.space.n_players
        self.n_objective_calls = 0

    @property
    def names(self) -> list[str]:
        """The hyperparameters' names, in player order."""
        return self.space.names

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """Values ``float64[m]`` of ``bool[m, p]`` coalitions (one inner run per row)."""
        z = as_coalition_matrix(coalitions, self.n_players)
        return np.array([self.value(row) for row in z], dtype=np.float64)

    def value(self, row: np.ndarray) -> float:
        """v(S) of one coalition ``row`` (bool[p]).

        Args:
            row: the coalition, ``bool[p]``.

        Returns:
            the coalition's value.
        """
        cache = ScoreCache(self.objective)
        try:
            return float(self._value(np.asarray(row, dtype=bool), cache))
        finally:
            self.n_objective_calls += cache.calls

    def _value(self, row: np.ndarray, cache: ScoreCache) -> float:
        raise NotImplementedError

    def _game_params(self) -> dict[str, Any]:
        return {}

    def params(self) -> dict[str, Any]:
        """The study's settings, readable (evaluation stores use :meth:`identity`).

        Returns:
            ``{name: value}``: the study, its definition version, the seed, the space, the objective's
            ``objective_id`` and the game's own options.
        """
        return {"study": self.study, "definition": self.definition, "seed": self.seed, **self.space.params(),
                "objective_id": self.objective_id, **self._game_params()}

    def _game_identity(self) -> dict[str, str]:
        return {}

    def identity(self) -> dict[str, str]:
        """Everything that determines the values, as identity components for evaluation stores.

        The definition version and the seed (``param.*``), the space, its baseline and ConfigSpace's
        version, the objective (``objective.*``), the game's own options (``tuner.*``, ``param.n_samples``,
        ``param.target``, ...) and the code of the game's class.

        Returns:
            ``{component: text}`` (see :mod:`shapleig.hpo.identity`); ``opaque`` lists what could not be read.
        """
        opaque: list[str] = []
        out = {"param.definition": str(self.definition), "param.seed": str(self.seed)}
        merge_identity(out, space_identity(self.space), opaque)
        merge_identity(out, objective_identity(self.objective, self.objective_id), opaque)
        merge_identity(out, self._game_identity(), opaque)
        out.update(class_code_identity(type(self), "", opaque))  # the code that turns runs into v(S)
        if opaque:
            out["opaque"] = "; ".join(opaque)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.names}, seed={self.seed})"


class AblationGame(HPOGame):
    """v(S) = objective(target on S, baseline elsewhere); ``target``: ``{name: value}``.

    Args:
        space: a ConfigSpace ``ConfigurationSpace`` or an :class:`HPSpace`.
        objective: ``config: dict -> float``, a deterministic score.
        target: ``{name: value}`` of the configuration whose effect is ablated.
        **kwargs: :class:`HPOGame`'s keywords (``baseline``, ``seed``, ``objective_id``).
    """

    study = "ablation"

    def __init__(self, space: Any, objective: Objective, target: Mapping[str, Any], **kwargs: Any):
        super().__init__(space, objective, **kwargs)
        self.target = self.space.configuration(target, what="target")
        self._target_vector = self.space.to_vector(self.target)

    def configuration(self, row: np.ndarray) -> dict[str, Any]:
        """The configuration of coalition ``row``: target on S, baseline elsewhere.

        Args:
            row: the coalition, ``bool[p]``.

        Returns:
            ``{name: value}``, a complete configuration.
        """
        return self.space.from_vector(self.space.blend(row, self._target_vector))

    def _value(self, row: np.ndarray, cache: ScoreCache) -> float:
        return cache.score(self.configuration(row))

    def _game_params(self) -> dict[str, Any]:
        return {"target": self.target}

    def _game_identity(self) -> dict[str, str]:
        return {"param.target": show_value(self.target, "target")}


class TunabilityGame(HPOGame):
    """v(S) = best score of one run of ``tuner`` over S (default: ``RandomSearch(20)``).

    Args:
        space: a ConfigSpace ``ConfigurationSpace`` or an :class:`HPSpace`.
        objective: ``config: dict -> float``, a deterministic score.
        tuner: the inner tuner (:class:`RandomSearch`, :class:`OptunaSearch`); None: ``RandomSearch(20)``.
        **kwargs: :class:`HPOGame`'s keywords (``baseline``, ``seed``, ``objective_id``).
    """

    study = "tunability"

    def __init__(self, space: Any, objective: Objective, tuner: Any = None, **kwargs: Any):
        super().__init__(space, objective, **kwargs)
        self.tuner = tuner if tuner is not None else RandomSearch(20)

    def _value(self, row: np.ndarray, cache: ScoreCache) -> float:
        seed = inner_seed(self.seed, row, self.tuner.seed_scope)
        return float(np.max(self.tuner.search(cache, self.space, row, seed)))

    def _game_params(self) -> dict[str, Any]:
        return {"tuner": self.tuner.params()}

    def _game_identity(self) -> dict[str, str]:
        return tuner_identity(self.tuner, "tuner.")


class SensitivityGame(HPOGame):
    """v(S) = variance (ddof 0) of the score over ``n_samples`` seeded draws varying only S.

    Args:
        space: a ConfigSpace ``ConfigurationSpace`` or an :class:`HPSpace`.
        objective: ``config: dict -> float``, a deterministic score.
        n_samples: the number of seeded draws per coalition.
        **kwargs: :class:`HPOGame`'s keywords (``baseline``, ``seed``, ``objective_id``).
    """

    study = "sensitivity"

    def __init__(self, space: Any, objective: Objective, n_samples: int = 20, **kwargs: Any):
        super().__init__(space, objective, **kwargs)
        self.sampler = RandomSearch(n_samples)

    def _value(self, row: np.ndarray, cache: ScoreCache) -> float:
        seed = inner_seed(self.seed, row, self.sampler.seed_scope)
        return float(np.var(self.sampler.search(cache, self.space, row, seed)))

    def _game_params(self) -> dict[str, Any]:
        return {"n_samples": self.sampler.n_trials}

    def _game_identity(self) -> dict[str, str]:
        return {"param.n_samples": str(self.sampler.n_trials)}


class OptimizerBiasGame(HPOGame):
    """v(S) = best(optimizer) - max(best(optimizer), best of each ensemble member), all tuning S.

    Always <= 0: how far the optimizer of interest falls behind the best of the ensemble. Each
    tuner has its own seed stream (index 0 for the optimizer, k for the k-th member).

    Args:
        space: a ConfigSpace ``ConfigurationSpace`` or an :class:`HPSpace`.
        objective: ``config: dict -> float``, a deterministic score.
        optimizer: the tuner of interest.
        ensemble: the tuners it is compared with (non-empty).
        **kwargs: :class:`HPOGame`'s keywords (``baseline``, ``seed``, ``objective_id``).
    """

    study = "optimizer-bias"

    def __init__(self, space: Any, objective: Objective, optimizer: Any, ensemble: Sequence[Any], **kwargs: Any):
        super().__init__(space, objective, **kwargs)
        if not ensemble:
            raise GameError("the optimizer-bias game needs a non-empty ensemble of tuners")
        self.optimizer = optimizer
        self.ensemble = list(ensemble)

    def _value(self, row: np.ndarray, cache: ScoreCache) -> float:
        def best(tuner: Any, stream: int) -> float:
            seed = inner_seed(self.seed, row, tuner.seed_scope, stream)
            return float(np.max(tuner.search(cache, self.space, row, seed)))

        mine = best(self.optimizer, 0)
        others = [best(t, k + 1) for k, t in enumerate(self.ensemble)]
        return mine - max([mine, *others])

    def _game_params(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.params(), "ensemble": [t.params() for t in self.ensemble]}

    def _game_identity(self) -> dict[str, str]:
        opaque: list[str] = []
        out: dict[str, str] = {}  # each member under ensemble.<k>.: another size shows as a member only in one
        merge_identity(out, tuner_identity(self.optimizer, "optimizer."), opaque)
        for k, tuner in enumerate(self.ensemble):
            merge_identity(out, tuner_identity(tuner, f"ensemble.{k}."), opaque)
        return {**out, "opaque": "; ".join(opaque)} if opaque else out
