"""Precomputed value tables as games with exact ground truth (docs/games.md §7).

A table is an ``.npz`` file with ``values`` (float64[2^p], raw), ``coalitions`` (bool[2^p, p], all
distinct), ``n_players`` (integer scalar) and optionally ``normalization_value`` (float scalar,
v(empty) in the shared suite). Files are read with ``allow_pickle=False`` and validated completely
at load time, so a bad file fails before any evaluation with a :class:`GameError` naming the file.
"""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shapleig.errors import GameError
from shapleig.games.coalitions import as_coalition_matrix, to_bitmask
from shapleig.games.exact import shapley_from_bitorder

REQUIRED_KEYS = ("values", "coalitions", "n_players")
OPTIONAL_KEYS = ("normalization_value",)
# A full table holds 2^p rows; beyond this the file would be hundreds of MB.
MAX_TABLE_PLAYERS = 24


def _fail(source: str, problem: str) -> GameError:
    return GameError(f"value table {source}: {problem}")


def validate_table(
    coalitions: Any, values: Any, n_players: Any = None, normalization_value: Any = None, source: str = "<array>"
) -> tuple[np.ndarray, np.ndarray, int, float | None]:
    """Check a full table and return ``(bool[2^p, p], float64[2^p], p, normalization or None)``.

    Raises :class:`GameError` naming ``source`` and the problem: wrong dtypes or shapes, a
    player count that disagrees with the matrix, duplicate coalitions, non-finite values.
    """
    z = np.asarray(coalitions)
    v = np.asarray(values)
    if z.ndim != 2:
        raise _fail(source, f"'coalitions' must be a 2-D matrix, got shape {z.shape}")
    p = z.shape[1]
    if n_players is not None:
        n = np.asarray(n_players)
        if n.shape not in ((), (1,)) or not np.issubdtype(n.dtype, np.integer):
            raise _fail(source, f"'n_players' must be an integer scalar, got {n.dtype} of shape {n.shape}")
        if int(n.reshape(())) != p:
            raise _fail(source, f"'n_players' = {int(n.reshape(()))} but 'coalitions' has {p} columns")
    if not 1 <= p <= MAX_TABLE_PLAYERS:
        raise _fail(source, f"tables need 1 <= n_players <= {MAX_TABLE_PLAYERS}, got {p}")
    if z.dtype != np.bool_:
        if not np.issubdtype(z.dtype, np.integer) or (z.size and not np.isin(z, (0, 1)).all()):
            raise _fail(source, f"'coalitions' must be bool (or 0/1 integers), got dtype {z.dtype}")
        z = z.astype(bool)
    if z.shape[0] != (1 << p):
        raise _fail(source, f"'coalitions' has {z.shape[0]} rows; a full {p}-player table needs 2^{p} = {1 << p}")
    if v.shape != (1 << p,):
        raise _fail(source, f"'values' must have shape ({1 << p},), got {v.shape}")
    if not (np.issubdtype(v.dtype, np.floating) or np.issubdtype(v.dtype, np.integer)):
        raise _fail(source, f"'values' must be real numbers, got dtype {v.dtype}")
    v = v.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        raise _fail(source, f"'values' has {bad.size} non-finite entries (first at row {int(bad[0])}: {v[bad[0]]})")
    codes = to_bitmask(z)
    n_distinct = np.unique(codes).size
    if n_distinct != z.shape[0]:
        raise _fail(source, f"'coalitions' has duplicate rows: {n_distinct} distinct of {z.shape[0]}")
    norm = None
    if normalization_value is not None:
        nv = np.asarray(normalization_value)
        if nv.shape not in ((), (1,)) or not np.issubdtype(nv.dtype, np.number) or not np.isfinite(nv).all():
            raise _fail(source, f"'normalization_value' must be a finite scalar, got {nv!r}")
        norm = float(nv.reshape(()))
    return np.ascontiguousarray(z), v, p, norm


def size_major_order(coalitions: np.ndarray) -> np.ndarray:
    """Row permutation ``int64[m]`` putting coalitions in the docs/games.md §7 order: by size, then within a
    size in ``itertools.combinations`` order (lexicographic member tuples)."""
    z = np.asarray(coalitions, dtype=bool)
    p = z.shape[1]
    # Lexicographic member tuples of equal size = descending codes read with player 0 as the
    # most significant bit.
    rev = z.astype(np.int64) @ (np.int64(1) << np.arange(p - 1, -1, -1, dtype=np.int64))
    return np.lexsort((-rev, z.sum(axis=1)))


class TableGame:
    """A game served from a full value table by bitmask lookup, with exact Shapley values.

    ``coalitions`` bool[2^p, p] (any row order, all distinct), ``values`` float64[2^p] raw.
    ``normalization_value`` defaults to v(empty). ``exact_values()`` is computed once and cached.
    """

    def __init__(
        self,
        coalitions: np.ndarray,
        values: np.ndarray,
        normalization_value: float | None = None,
        *,
        name: str = "table",
        source: str | None = None,
    ):
        z, v, p, norm = validate_table(coalitions, values, None, normalization_value, source or name)
        self.n_players = p
        self.coalitions = z
        self.values = v
        self.name = name
        self.source = source
        self._bitorder = np.empty(1 << p)
        self._bitorder[to_bitmask(z)] = v  # value of code c at index c
        self.normalization_value = float(self._bitorder[0]) if norm is None else norm
        self._exact: np.ndarray | None = None
        self._exact_index: dict[tuple[str, int], np.ndarray] = {}

    @classmethod
    def from_npz(cls, path: str | os.PathLike, name: str | None = None) -> "TableGame":
        """Load and validate a table file; any problem raises :class:`GameError` naming ``path``."""
        path = Path(path)
        src = str(path)
        if not path.is_file():
            raise _fail(src, "no such file")
        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise _fail(src, f"not a readable .npz archive ({exc})") from exc
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise _fail(src, "a single .npy array, not an .npz archive with named tables")
        with archive:
            missing = [k for k in REQUIRED_KEYS if k not in archive.files]
            if missing:
                raise _fail(src, f"missing key(s) {missing}; found {sorted(archive.files)}")
            arrays: dict[str, np.ndarray] = {}
            for key in REQUIRED_KEYS + OPTIONAL_KEYS:
                if key not in archive.files:
                    continue
                try:
                    arrays[key] = archive[key]
                except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                    # object arrays need pickle, which is refused for safety
                    raise _fail(src, f"cannot read key '{key}' ({exc})") from exc
        z, v, _, norm = validate_table(
            arrays["coalitions"], arrays["values"], arrays["n_players"], arrays.get("normalization_value"), src
        )
        return cls(z, v, norm, name=name or path.stem, source=src)

    # -- game protocol ---------------------------------------------------------------------
    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """Values ``float64[m]`` of ``bool[m, p]`` coalitions, by lookup."""
        z = as_coalition_matrix(coalitions, self.n_players)
        return self._bitorder[to_bitmask(z)]

    def exact_values(self, index: str = "SV", max_order: int | None = None) -> np.ndarray:
        """Exact values of ``index`` (default the Shapley value, ``float64[p]``) of the table (cached).

        Computed from the bit-ordered values (the docs/games.md §2 formula, equal to ``shapley_from_table``) so
        the result is bit-identical whatever the row order of the file. Other indices ("BV", "k-SII",
        "SII", "STII", "FSII"; docs/math.md §14) give ``float64[d]`` aligned with
        ``shapleig.games.indices.index_terms(p, index)``: singletons, then pairs.
        """
        if index != "SV" or max_order not in (None, 1):
            from shapleig.games.indices import check_index, exact_index_values

            key = check_index(index, max_order)
            if key not in self._exact_index:
                self._exact_index[key] = exact_index_values(self._bitorder, *key)
            return self._exact_index[key].copy()
        if self._exact is None:
            self._exact = shapley_from_bitorder(self._bitorder)
        return self._exact.copy()

    @property
    def bitorder_values(self) -> np.ndarray:
        """``float64[2^p]``: the value of coalition code c = sum_j 2^j [j in S] at index c (read-only)."""
        view = self._bitorder.view()
        view.flags.writeable = False
        return view

    @property
    def empty_value(self) -> float:
        return float(self._bitorder[0])

    @property
    def grand_value(self) -> float:
        return float(self._bitorder[-1])

    def params(self) -> dict[str, Any]:
        return {"game": "table", "name": self.name, "n_players": self.n_players, "source": self.source}

    def identity(self) -> dict[str, Any]:
        """Identity for evaluation stores: the values themselves (bit order), not the file name,
        so a table rewritten in place with other values is a different game."""
        return {"values": self._bitorder}

    def __repr__(self) -> str:
        return f"TableGame({self.name}, n_players={self.n_players})"


def save_table(
    path: str | os.PathLike,
    coalitions: np.ndarray,
    values: np.ndarray,
    normalization_value: float | None = None,
    *,
    size_major: bool = True,
) -> Path:
    """Write a full table in the docs/games.md §7 format (rows size-major unless ``size_major=False``).

    ``normalization_value`` defaults to v(empty). The file is written to a temporary name and
    renamed, so a crash never leaves a half-written table behind. Returns the path.
    """
    path = Path(path)
    z, v, p, norm = validate_table(coalitions, values, None, normalization_value, str(path))
    if size_major:
        order = size_major_order(z)
        z, v = z[order], v[order]
    if norm is None:
        norm = float(v[to_bitmask(z) == 0][0])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, values=v, coalitions=z, n_players=np.int64(p), normalization_value=np.float64(norm))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# ------------------------------------------------------------------------------------------
# Suites of tables
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TableSpec:
    """A table file found in a suite; ``load()`` reads and validates it.

    name:  task name, the path relative to the suite root without ``.npz``
           (e.g. ``ImageClassifier_Game/9/model_name=vit_9_patches_1``).
    group: the folder part of the name (e.g. ``ImageClassifier_Game/9``).
    seed:  the trailing ``_<int>`` of the file stem, or None.
    """

    path: Path
    name: str
    group: str
    seed: int | None

    def load(self) -> TableGame:
        return TableGame.from_npz(self.path, name=self.name)


_SEED = re.compile(r"_(\d+)$")


def discover_tables(folder: str | os.PathLike) -> list[TableSpec]:
    """All ``*.npz`` files under ``folder`` (recursively), sorted by group, stem and seed.

    Nothing is loaded here; raises :class:`GameError` when ``folder`` is not a directory.
    """
    root = Path(folder)
    if not root.is_dir():
        raise GameError(f"table folder {root} does not exist or is not a directory")
    specs = []
    for path in root.rglob("*.npz"):
        rel = path.relative_to(root).with_suffix("")
        m = _SEED.search(rel.name)
        specs.append(
            TableSpec(path=path, name=rel.as_posix(), group=rel.parent.as_posix(), seed=int(m.group(1)) if m else None)
        )

    def key(s: TableSpec) -> tuple:
        stem = _SEED.sub("", Path(s.name).name)
        return (s.group, stem, s.seed if s.seed is not None else -1, s.name)

    return sorted(specs, key=key)


# The subset shipped with the package (3 tables per suite; tasks/data/games/README.md).
SHIPPED_TABLES_DIR = Path(__file__).resolve().parent / "data" / "games"
# How to point the suites elsewhere (shown by `shapleig tasks` and in every "not found" error).
TABLES_HINT = ("set SHAPLEIG_SHARED to a folder holding data/games (or the games folder itself), "
               "or SHAPLEIG_TABLES to the games folder; or run a file or folder as table:<path>")


@dataclass(frozen=True)
class TableLocation:
    """One place searched for the table suites: where it comes from, the folder, if it exists."""

    origin: str
    path: Path

    @property
    def exists(self) -> bool:
        return self.path.is_dir()


def table_search_path(environ: Any = None) -> list[TableLocation]:
    """The folders searched for the suites, in order (``shapleig tasks`` prints them).

    ``$SHAPLEIG_TABLES``; ``$SHAPLEIG_SHARED/data/games`` and ``$SHAPLEIG_SHARED`` itself (so it
    may name the shared folder or the games folder); ``<repo>/../shared/data/games``; the shipped
    subset. A variable that is set is authoritative: only its folders are searched.
    """
    env = os.environ if environ is None else environ
    if env.get("SHAPLEIG_TABLES"):
        return [TableLocation("$SHAPLEIG_TABLES", Path(env["SHAPLEIG_TABLES"]).expanduser())]
    if env.get("SHAPLEIG_SHARED"):
        shared = Path(env["SHAPLEIG_SHARED"]).expanduser()
        return [TableLocation("$SHAPLEIG_SHARED/data/games", shared / "data" / "games"),
                TableLocation("$SHAPLEIG_SHARED", shared)]
    return [TableLocation("../shared beside the repository",
                          Path(__file__).resolve().parents[1].parent / "shared" / "data" / "games"),
            TableLocation("shipped subset (3 tables per suite)", SHIPPED_TABLES_DIR)]


def default_tables_dir(environ: Any = None) -> Path:
    """The first existing folder of :func:`table_search_path`.

    Raises :class:`GameError` naming every path searched when none exists (e.g. a
    ``SHAPLEIG_SHARED`` that points at a wrong folder).
    """
    locations = table_search_path(environ)
    for loc in locations:
        if loc.exists:
            return loc.path
    raise GameError(f"no table folder found; searched: {searched_text(environ)}. To fix: {TABLES_HINT}")


def searched_text(environ: Any = None) -> str:
    """``'path (origin); ...'`` for every folder of :func:`table_search_path` (for error messages)."""
    return "; ".join(f"{loc.path} ({loc.origin})" for loc in table_search_path(environ))


__all__ = [
    "SHIPPED_TABLES_DIR",
    "TABLES_HINT",
    "TableGame",
    "TableLocation",
    "TableSpec",
    "default_tables_dir",
    "discover_tables",
    "save_table",
    "size_major_order",
    "table_search_path",
    "validate_table",
]
