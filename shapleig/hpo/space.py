"""Hyperparameters as players: a ConfigSpace ``ConfigurationSpace`` with a baseline configuration.

ConfigSpace (the HPO ecosystem's convention, ``pip install 'shapleig[hpo]'``) is imported lazily, so
``import shapleig`` never needs it. Every hyperparameter of the space is one player, in the
space's own order (``list(space.keys())``). A coalition S of players is turned into a
configuration by taking some source's values on S and the baseline's elsewhere; the blending is
done on ConfigSpace's vector representation (float[d], one entry per hyperparameter), which treats
floats, integers, log scales, categoricals and ordinals alike.
"""

from __future__ import annotations

import copy
import hashlib
import io
from typing import Any, Mapping

import numpy as np

from shapleig.errors import GameError

HPO_EXTRA = "pip install 'shapleig[hpo]'"


def require_configspace() -> Any:
    """The ``ConfigSpace`` module, or an ImportError naming the extra that installs it.

    Returns:
        the imported ``ConfigSpace`` module.
    """
    try:
        import ConfigSpace
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"hyperparameter-importance games need the ConfigSpace package: {HPO_EXTRA}"
        ) from exc
    return ConfigSpace


def coalition_seed(seed: int, row: np.ndarray) -> int:
    """A 32-bit seed determined by the study ``seed`` and the coalition ``row`` (bool[p]) alone.

    SHA-256 of the seed and the coalition's bits: stable across processes, platforms and Python
    versions (``hash()`` is salted), so a coalition's inner run, and hence its value, is always
    the same whoever evaluates it.

    Args:
        seed: the study seed.
        row: the coalition, ``bool[p]``.

    Returns:
        a seed in [0, 2^32).
    """
    bits = "".join("1" if b else "0" for b in np.asarray(row, dtype=bool))
    digest = hashlib.sha256(f"{int(seed)}|{bits}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def space_json(space: Any) -> str:
    """ConfigSpace's JSON serialisation of a ``ConfigurationSpace`` (its hyperparameters, not its random state).

    Args:
        space: a ``ConfigSpace.ConfigurationSpace``.

    Returns:
        the JSON text.
    """
    buffer = io.StringIO()
    space.to_json(buffer)
    return buffer.getvalue()


def _plain(value: Any) -> Any:
    """Numpy scalars -> Python scalars (JSON, LightGBM and fingerprints want plain values)."""
    return value.item() if isinstance(value, np.generic) else value


class HPSpace:
    """A configuration space whose hyperparameters are the players, with a baseline configuration.

    Args:
        space: a ``ConfigSpace.ConfigurationSpace`` without conditions or forbidden clauses (a blended
            configuration must always be valid; conditional spaces are refused).
        baseline: ``{name: value}`` (or a ``Configuration``) for the players outside a coalition; default:
            the space's default configuration. Missing names take their default.
    """

    def __init__(self, space: Any, baseline: Mapping[str, Any] | Any = None):
        cs_mod = require_configspace()
        if not isinstance(space, cs_mod.ConfigurationSpace):
            raise GameError(f"space must be a ConfigSpace ConfigurationSpace, got {type(space).__name__}")
        if len(space.conditions) or len(space.forbidden_clauses):
            raise GameError(
                "configuration spaces with conditions or forbidden clauses are not supported: a "
                "configuration blended from two valid ones could be invalid"
            )
        self.space = space
        self.names: list[str] = list(space.keys())
        if len(self.names) < 2:
            raise GameError(f"a hyperparameter game needs at least 2 hyperparameters, got {self.names}")
        self.baseline = self.configuration(baseline, what="baseline")
        self.baseline_vector = self.to_vector(self.baseline)

    @property
    def n_players(self) -> int:
        """The number of players (hyperparameters)."""
        return len(self.names)

    def configuration(self, values: Mapping[str, Any] | Any, what: str = "configuration") -> dict[str, Any]:
        """A full, valid ``{name: value}``: ``values`` on top of the space's defaults.

        Args:
            values: ``{name: value}`` (or a ``Configuration``); None: the defaults.
            what: what the values are, named in the error message.

        Returns:
            every hyperparameter's value, as plain Python scalars.
        """
        cs_mod = require_configspace()
        default = dict(self.space.get_default_configuration())
        given = dict(values) if values is not None else {}
        unknown = sorted(set(given) - set(self.names))
        if unknown:
            raise GameError(f"{what} names unknown hyperparameters {unknown}; the space has {self.names}")
        merged = {**default, **given}
        try:
            config = cs_mod.Configuration(self.space, values=merged)
            config.check_valid_configuration()
        except Exception as exc:  # ConfigSpace raises several types for illegal values
            raise GameError(f"{what} {given} is not a valid configuration of the space: {exc}") from exc
        return {k: _plain(v) for k, v in dict(config).items()}

    def to_vector(self, config: Mapping[str, Any]) -> np.ndarray:
        """ConfigSpace vector representation ``float64[d]`` of a full configuration.

        Args:
            config: a full ``{name: value}`` configuration.

        Returns:
            ``float64[d]``.
        """
        cs_mod = require_configspace()
        return np.asarray(cs_mod.Configuration(self.space, values=dict(config)).get_array(), dtype=np.float64)

    def from_vector(self, vector: np.ndarray) -> dict[str, Any]:
        """``{name: value}`` of a vector (``float64[d]``).

        Args:
            vector: ``float64[d]``, ConfigSpace's vector representation.

        Returns:
            the configuration, as plain Python scalars.
        """
        cs_mod = require_configspace()
        config = cs_mod.Configuration(self.space, vector=np.asarray(vector, dtype=np.float64))
        return {k: _plain(v) for k, v in dict(config).items()}

    def blend(self, row: np.ndarray, source: np.ndarray) -> np.ndarray:
        """Vectors taking ``source`` on the coalition ``row`` and the baseline elsewhere.

        Args:
            row: the coalition, ``bool[d]``.
            source: ``float[d]`` or ``float[n, d]``, the source vectors.

        Returns:
            the blended vectors, the shape of ``source``.
        """
        return np.where(np.asarray(row, dtype=bool), source, self.baseline_vector)

    def sample_vectors(self, n: int, seed: int) -> np.ndarray:
        """``n`` configurations drawn by ConfigSpace's sampler seeded with ``seed``.

        The sampler runs on a copy, so the caller's space keeps its own random state.

        Args:
            n: how many configurations.
            seed: the sampler's seed.

        Returns:
            ``float64[n, d]``.
        """
        cs = copy.deepcopy(self.space)
        cs.seed(int(seed))
        configs = cs.sample_configuration(int(n))
        configs = configs if isinstance(configs, list) else [configs]
        return np.array([c.get_array() for c in configs], dtype=np.float64)

    def to_json(self) -> str:
        """The space in ConfigSpace's JSON serialisation (identity for stores and caches).

        Returns:
            the JSON text.
        """
        return space_json(self.space)

    def params(self) -> dict[str, Any]:
        """What identifies the space for evaluation stores: its JSON and the baseline.

        Returns:
            ``{"space": json, "baseline": {name: value}}``.
        """
        return {"space": self.to_json(), "baseline": self.baseline}

    def __repr__(self) -> str:
        return f"HPSpace({self.names})"


def load_space(path: str) -> Any:
    """A ``ConfigurationSpace`` read from ConfigSpace's JSON serialisation at ``path``.

    Args:
        path: the JSON file.

    Returns:
        the ``ConfigSpace.ConfigurationSpace``.
    """
    cs_mod = require_configspace()
    try:
        return cs_mod.ConfigurationSpace.from_json(path)
    except Exception as exc:
        raise ValueError(f"cannot read a ConfigSpace JSON configuration space from {path}: {exc}") from exc
