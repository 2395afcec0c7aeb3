"""Inner tuners of the search-based games: one seeded, deterministic tuning run per coalition.

A tuner searches only the hyperparameters of a coalition (the others stay at the baseline) and
returns the scores of its trials in trial order. The objective is higher-is-better and must be
deterministic. Within one run, repeated configurations are scored once (the empty coalition's
run is one evaluation of the baseline, however many trials).

- :class:`RandomSearch` (built in): the first ``n_trials`` configurations of ConfigSpace's sampler
  seeded with the *study* seed, restricted to the coalition (baseline elsewhere). Every coalition
  sees the same draws ("common random numbers"), so v(S + i) - v(S) measures tuning i, not a new
  random draw; it is also HyperSHAP's definition, so both tools define the same game.
- :class:`OptunaSearch`: an Optuna sampler (TPE, random, QMC, GP) run with the ask-and-tell
  interface; adaptive samplers cannot share draws, so each coalition gets its own seed derived
  from the study seed and the coalition's bits (:func:`~shapleig.hpo.space.coalition_seed`).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, ClassVar

import numpy as np

from shapleig.errors import GameError

from .space import HPSpace

Objective = Callable[[dict], float]


def _check_trials(n_trials: Any) -> int:
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or n_trials < 1:
        raise GameError(f"n_trials must be an integer >= 1, got {n_trials!r}")
    return int(n_trials)


class ScoreCache:
    """Scores one tuning run's configurations, each distinct configuration once.

    ``calls`` counts objective calls (the expensive part).

    Args:
        objective: ``config: dict -> float``, the deterministic score.
    """

    def __init__(self, objective: Objective):
        self.objective = objective
        self.calls = 0
        self._seen: dict[tuple, float] = {}

    def score(self, config: dict[str, Any]) -> float:
        """The score of ``config``, calling the objective only for a configuration not seen before.

        Args:
            config: a full ``{name: value}`` configuration.

        Returns:
            the score (higher is better).
        """
        key = tuple(sorted(config.items()))
        if key not in self._seen:
            self._seen[key] = float(self.objective(dict(config)))
            self.calls += 1
        return self._seen[key]


class RandomSearch:
    """Random search over the coalition's hyperparameters on a sample shared by all coalitions.

    Args:
        n_trials: the number of configurations per run.
    """

    name: ClassVar[str] = "random"
    seed_scope: ClassVar[str] = "study"  # the same draws for every coalition
    packages: ClassVar[tuple[str, ...]] = ()  # ConfigSpace's sampler: its version is in every game's identity

    def __init__(self, n_trials: int = 20):
        self.n_trials = _check_trials(n_trials)

    def trial_vectors(self, space: HPSpace, row: np.ndarray, seed: int) -> np.ndarray:
        """``float64[n_trials, d]``: the shared draws blended into the coalition ``row``.

        Args:
            space: the space (and baseline) of the study.
            row: the coalition, ``bool[d]``.
            seed: the study seed (shared by every coalition).

        Returns:
            ``float64[n_trials, d]``.
        """
        return space.blend(row, space.sample_vectors(self.n_trials, seed))

    def search(self, objective: ScoreCache, space: HPSpace, row: np.ndarray, seed: int) -> np.ndarray:
        """Scores ``float64[n_trials]`` of the run, in trial order.

        Args:
            objective: the run's score cache.
            space: the space (and baseline) of the study.
            row: the coalition, ``bool[d]``.
            seed: the study seed (shared by every coalition).

        Returns:
            ``float64[n_trials]``.
        """
        return np.array([objective.score(space.from_vector(v)) for v in self.trial_vectors(space, row, seed)])

    def params(self) -> dict[str, Any]:
        """What identifies the tuner for evaluation stores.

        Returns:
            ``{"tuner": name, "n_trials": n}``.
        """
        return {"tuner": self.name, "n_trials": self.n_trials}

    def __repr__(self) -> str:
        return f"RandomSearch(n_trials={self.n_trials})"


OPTUNA_SAMPLERS = ("tpe", "random", "qmc", "gp")


def require_optuna() -> Any:
    """The ``optuna`` module (its logging quieted), or an ImportError naming the package.

    Returns:
        the imported ``optuna`` module.
    """
    try:
        import optuna
    except ImportError as exc:
        raise ImportError("Optuna tuners need the optuna package: pip install optuna") from exc
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def optuna_distributions(space: HPSpace, row: np.ndarray) -> dict[str, Any]:
    """Optuna distributions of the coalition's hyperparameters (constants are left out).

    Args:
        space: the space of the study.
        row: the coalition, ``bool[d]``.

    Returns:
        ``{name: optuna distribution}`` of the coalition's non-constant hyperparameters.
    """
    optuna = require_optuna()
    from ConfigSpace import hyperparameters as H

    dist = optuna.distributions
    out: dict[str, Any] = {}
    for name, active in zip(space.names, np.asarray(row, dtype=bool)):
        if not active:
            continue
        hp = space.space[name]
        if isinstance(hp, H.UniformFloatHyperparameter):
            out[name] = dist.FloatDistribution(float(hp.lower), float(hp.upper), log=bool(hp.log))
        elif isinstance(hp, H.UniformIntegerHyperparameter):
            out[name] = dist.IntDistribution(int(hp.lower), int(hp.upper), log=bool(hp.log))
        elif isinstance(hp, H.CategoricalHyperparameter):
            out[name] = dist.CategoricalDistribution(list(hp.choices))
        elif isinstance(hp, H.OrdinalHyperparameter):
            out[name] = dist.CategoricalDistribution(list(hp.sequence))
        elif isinstance(hp, H.Constant):
            continue
        else:
            raise GameError(f"Optuna tuners do not support {type(hp).__name__} hyperparameter {name!r}")
    return out


class OptunaSearch:
    """An Optuna sampler tuning the coalition's hyperparameters for ``n_trials`` trials.

    Args:
        n_trials: the number of trials per run.
        sampler: ``"tpe"`` (default), ``"random"``, ``"qmc"`` or ``"gp"``.
    """

    seed_scope: ClassVar[str] = "coalition"  # an adaptive run: its own seed per coalition
    packages: ClassVar[tuple[str, ...]] = ("optuna",)  # its samplers draw the trials: a new version, new runs

    def __init__(self, n_trials: int = 20, sampler: str = "tpe"):
        self.n_trials = _check_trials(n_trials)
        if sampler not in OPTUNA_SAMPLERS:
            raise GameError(f"unknown Optuna sampler {sampler!r}; choose one of {OPTUNA_SAMPLERS}")
        self.sampler = sampler
        self.name = f"optuna-{sampler}"

    def _make_sampler(self, seed: int) -> Any:
        optuna = require_optuna()
        samplers = optuna.samplers
        if self.sampler == "tpe":
            return samplers.TPESampler(seed=seed)
        if self.sampler == "random":
            return samplers.RandomSampler(seed=seed)
        with warnings.catch_warnings():  # QMC and GP samplers are "experimental" in Optuna
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if self.sampler == "qmc":
                return samplers.QMCSampler(seed=seed, warn_independent_sampling=False)
            return samplers.GPSampler(seed=seed)

    def search(self, objective: ScoreCache, space: HPSpace, row: np.ndarray, seed: int) -> np.ndarray:
        """Scores ``float64[n_trials]`` of one Optuna run over the coalition's hyperparameters, in trial order.

        Args:
            objective: the run's score cache.
            space: the space (and baseline) of the study.
            row: the coalition, ``bool[d]``.
            seed: the run's seed (one per coalition, :func:`~shapleig.hpo.space.coalition_seed`).

        Returns:
            ``float64[n_trials]``.
        """
        optuna = require_optuna()
        distributions = optuna_distributions(space, row)
        study = optuna.create_study(direction="maximize", sampler=self._make_sampler(seed))
        scores = []
        for _ in range(self.n_trials):
            trial = study.ask(distributions)
            config = space.configuration({**space.baseline, **trial.params})
            value = objective.score(config)
            study.tell(trial, value)
            scores.append(value)
        return np.array(scores, dtype=np.float64)

    def params(self) -> dict[str, Any]:
        """What identifies the tuner for evaluation stores.

        Returns:
            ``{"tuner": name, "n_trials": n}``.
        """
        return {"tuner": self.name, "n_trials": self.n_trials}

    def __repr__(self) -> str:
        return f"OptunaSearch(n_trials={self.n_trials}, sampler={self.sampler!r})"


TUNERS = ("random", *(f"optuna-{s}" for s in OPTUNA_SAMPLERS))


def make_tuner(name: str, n_trials: int) -> RandomSearch | OptunaSearch:
    """``'random'`` or ``'optuna-<sampler>'`` (tpe, random, qmc, gp) with ``n_trials`` trials.

    Args:
        name: ``"random"`` or ``"optuna-<sampler>"`` (see ``TUNERS``).
        n_trials: the number of trials per run.

    Returns:
        the tuner.
    """
    if name == "random":
        return RandomSearch(n_trials)
    if name.startswith("optuna-"):
        return OptunaSearch(n_trials, sampler=name[len("optuna-"):])
    raise GameError(f"unknown tuner {name!r}; choose one of {TUNERS}")
