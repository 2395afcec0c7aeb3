"""Run methods x tasks x budgets x seeds into one long results table (pandas, parquet).

Everything is validated before any evaluation is spent: task names (tables are loaded, so a
corrupt file fails here), method names and options (each estimator is built once), budgets
against each method's minimum for each task's p, seeds, and that the output path is writable.

Exact values are computed once per task. Tasks marked ``expensive`` (LightGBM games) are
enumerated once over all 2^p coalitions with a progress bar and cached as a docs/games.md §7 table;
methods then read those values from the table (identical to re-running the deterministic game,
and charged to the budget as usual) unless ``live=True``.

An anytime method (the ShaplEIG arms: their result carries ``trace`` = [(evaluations, values)])
runs ONCE per (task, seed) at the largest budget, and every smaller budget is read off its trace.
Other methods are rerun from scratch at every budget with the same seed.

Columns of the table: task, group, kind, p, method (label incl. options), method_name, options
(JSON), budget, budget_spec, seed, evaluations, mse, max_abs_err, wall_s, selection_s, game_s,
anytime, accounting, noise, error. ``wall_s`` is the time until the method had its estimate at
that budget; ``game_s`` the part of it spent inside the game; ``selection_s = wall_s - game_s``
(the method's own overhead: fitting, acquisition, sampling).
List columns ``values``, ``std`` (None for methods without a posterior) and ``exact`` keep the
per-player estimate, its std and the exact values, so any new metric (e.g. interval coverage,
:func:`shapleig_tasks.metrics.interval_coverage`) can be computed from a finished study; ``versions``
(JSON) names the package versions that produced the row.

Interrupted runs resume. With an output path, each finished run's rows are appended (and flushed
to disk) to a journal beside it, ``<out>.partial.jsonl``, as soon as the run ends. A run stopped
by Ctrl-C (or killed) keeps every finished run there; the same command started again reads the
journal, runs only the jobs it does not hold (a job is identified by its task, method label,
seed, budgets, index, ``live`` and evaluation timeout; rows that recorded an error are run
again) and, once the table is written, deletes the journal.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import re
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from shapleig.errors import AcquisitionError
from shapleig.estimation.enumeration import (
    BudgetCoversGameWarning,
    covers_game,
    enumeration_message,
)
from shapleig.runs.store import special_file_kind
from shapleig.seeding import SEED_LIMIT
from shapleig_tasks.catalog import Task, resolve_tasks
from shapleig_tasks.methods import MethodSpec, resolve_methods

COLUMNS = [
    "task", "group", "kind", "p", "method", "method_name", "options", "budget", "budget_spec",
    "seed", "evaluations", "mse", "max_abs_err", "wall_s", "selection_s", "game_s", "anytime",
    "accounting", "noise", "error", "values", "std", "exact", "versions",
]
VERSIONED_PACKAGES = ("shapleig", "torch", "gpytorch", "botorch", "numpy", "lightgbm")


def package_versions(method: str = "") -> str:
    """JSON ``{package: version}`` of the packages a result depends on (``None`` if not installed);
    a ``shapiq:<Approximator>`` method adds shapiq's version."""
    from importlib import metadata

    found: dict[str, str | None] = {}
    extra = ("shapiq",) if str(method).startswith("shapiq:") else ()
    for name in VERSIONED_PACKAGES + extra:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return json.dumps(found, sort_keys=True)


# --------------------------------------------------------------------------------------------
# parsing and validation
MAX_BUDGET = 2**63 - 1  # the results table's int64 budget column


def parse_budgets(items: Iterable[str | int]) -> list[str]:
    """Budget specs: integers (``'32'``) or multiples of p (``'2p'``, ``'0.5p'``); commas allowed.
    A budget beyond int64 (``MAX_BUDGET``) is refused naming it."""
    out: list[str] = []
    for item in items:
        for part in filter(None, (s.strip() for s in str(item).split(","))):
            if re.fullmatch(r"-\d*\.?\d+p?", part):
                raise ValueError(f"budget {part}: budgets must be positive, e.g. 32 or 4p")
            if not re.fullmatch(r"\d+|\d*\.?\d+p", part):
                raise ValueError(f"bad budget {part!r}: write an integer (32) or a multiple of p (4p)")
            if float(part.rstrip("p")) == 0:
                raise ValueError(f"budget {part}: budgets must be positive, e.g. 32 or 4p")
            size = float(part[:-1]) if part.endswith("p") else int(part)
            if size > MAX_BUDGET:
                raise ValueError(f"budget {part} is too large: budgets count evaluations as 64-bit integers "
                                 f"(at most 2^63 - 1 = {MAX_BUDGET}); no game can use that many")
            if part not in out:
                out.append(part)
    if not out:
        raise ValueError("no budgets given")
    return out


def resolve_budget(spec: str | int, p: int) -> int:
    """``'32' -> 32``, ``'4p' -> 4 p`` (rounded to the nearest integer)."""
    spec = str(spec)
    if spec.endswith("p"):
        return int(round(float(spec[:-1] or 1) * p))
    return int(spec)


MAX_SEEDS = 100_000  # a count or range beyond this is a typo, not a study


def parse_seeds(items: Iterable[str | int] | int) -> list[int]:
    """Seeds: a single count ``N`` (seeds 0..N-1), or explicit lists ``'0,3,7'`` / ranges ``'0-4'``.

    A single bare integer (``3`` or ``['3']``) is a count; use ``'5-5'`` or ``'5,'`` for the single
    seed 5. A list of Python ints (``[0, 4]``) is always a list of seeds.
    """
    if isinstance(items, (int, np.integer)):
        items = [str(int(items))]
    elif isinstance(items, str):
        items = [items]
    elif all(isinstance(s, (int, np.integer)) for s in items):
        items = [",".join(str(int(s)) for s in items) + ","]
    items = [str(s) for s in items]
    if len(items) == 1 and re.fullmatch(r"\d+", items[0].strip()):
        n = int(items[0])
        if n < 1:
            raise ValueError(f"--seeds {n}: need at least one seed")
        if n > MAX_SEEDS:
            raise ValueError(f"--seeds {n}: at most {MAX_SEEDS} seeds per study")
        return list(range(n))
    seeds: list[int] = []
    for item in items:
        for part in filter(None, (s.strip() for s in item.split(","))):
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise ValueError(f"bad seed {part!r}: seeds are non-negative integers; write a count (3), "
                                 f"a list (0,1,2) or a range (0-4)")
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if hi < lo:
                raise ValueError(f"bad seed range {part!r}")
            if hi >= SEED_LIMIT:
                raise ValueError(f"bad seed {part!r}: seeds are below 2**63 = {SEED_LIMIT}")
            if hi - lo + 1 + len(seeds) > MAX_SEEDS:
                raise ValueError(f"bad seed range {part!r}: at most {MAX_SEEDS} seeds per study")
            seeds += [s for s in range(lo, hi + 1) if s not in seeds]
    if not seeds:
        raise ValueError("no seeds given")
    return seeds


def check_output_file(path: str | os.PathLike[str]) -> Path:
    """``path`` unless it names a folder or a file that is not a regular one; nothing is created.

    Checked as the evaluation store checks its path (:func:`~shapleig.runs.store.special_file_kind`):
    a FIFO, socket or device is refused, since writing to a FIFO blocks until some other process
    reads it (for ever when none does). Every file the command line writes passes here before
    anything is evaluated (:func:`check_output_path` adds the folder and a write probe).

    Args:
        path: the file to be written.

    Returns:
        ``path`` as a ``Path`` (``~`` expanded).

    Raises:
        ValueError: naming the path and what it is.
    """
    out = Path(path).expanduser()
    if out.is_dir():
        raise ValueError(f"output path {out} is a folder; give a file name such as results.parquet")
    try:
        kind = special_file_kind(out)
    except OSError as exc:
        raise ValueError(f"output path {out} is not writable: {exc.strerror or exc}") from exc  # a file as folder
    if kind is not None:
        raise ValueError(f"output path {out} is {kind}, not a regular file: writing it could block for ever "
                         f"(a FIFO waits for a reader) or lose the output; give a regular file name")
    return out


def check_output_path(path: str | os.PathLike[str]) -> Path:
    """Make sure ``path`` can be written (:func:`check_output_file`, then its folder created and probed).

    ``ValueError`` naming why not.
    """
    out = check_output_file(path)
    folder = out.parent if str(out.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".shapleig-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"output path {out} is not writable: {exc.strerror or exc}") from exc
    if out.exists() and not os.access(out, os.W_OK):
        raise ValueError(f"output path {out} exists and is not writable")
    return out


RESULT_SUFFIXES = (".parquet", ".pq")


def check_results_path(path: str | os.PathLike[str]) -> Path:
    """A writable results path ending in ``.parquet`` (the table is always written as parquet, so
    another extension such as ``.csv`` is refused rather than silently holding parquet)."""
    out = Path(path).expanduser()
    if out.is_dir():
        return check_output_path(out)  # names the problem: a folder
    if out.suffix.lower() not in RESULT_SUFFIXES:
        raise ValueError(f"results file {out}: the results table is written as parquet; give a name "
                         f"ending in .parquet (got {out.suffix or 'no extension'})")
    return check_output_path(out)


def write_parquet(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``df`` to ``path`` atomically (temporary file in the same folder, then rename), with
    the mode a plain ``open`` would give (0666 less the umask, usually 0644), not mkstemp's 0600."""
    out = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".shapleig-", suffix=".parquet", dir=out.parent)
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _umask() -> int:
    """The process's umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------------------------
# games used by the harness
class TimedGame:
    """Wraps a game and logs every call: (evaluations before, after, start s, end s).

    The budget cache sits above this wrapper, so it sees only coalitions that are charged.
    """

    def __init__(self, game: Any):
        self.game = game
        self.n_players = int(game.n_players)
        self.calls: list[tuple[int, int, float, float]] = []
        self.count = 0
        self.t0 = time.perf_counter()

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        start = time.perf_counter() - self.t0
        values = self.game(coalitions)
        end = time.perf_counter() - self.t0
        before, self.count = self.count, self.count + int(np.asarray(coalitions).shape[0])
        self.calls.append((before, self.count, start, end))
        return values

    def identity(self) -> dict[str, str]:
        """The wrapped game's identity: timing a game changes none of its values (an evaluation store of
        ``--store-dir`` is bound to the task's game, not to one run's timer)."""
        from shapleig.games.identity import game_identity

        return game_identity(self.game)

    @property
    def game_s(self) -> float:
        """Seconds spent inside the game so far."""
        return sum(end - start for _, _, start, end in self.calls)

    def time_at(self, evaluations: int, total: float) -> tuple[float, float]:
        """(wall, game time) until the method moved past ``evaluations`` evaluations."""
        game_s = 0.0
        for before, after, start, end in self.calls:
            if after > evaluations:
                return start, game_s
            game_s += end - start
        return total, game_s


def is_shapiq_game(game: Any) -> bool:
    """Whether ``game`` is a shapiq ``Game`` (a class of the ``shapiq`` package in its MRO; shapiq
    is not imported). Its ``exact_values(index, order)`` returns ``InteractionValues``."""
    return any(cls.__module__.split(".")[0] in ("shapiq", "shapiq_games") for cls in type(game).__mro__)


def exact_reference(game: Any) -> np.ndarray:
    """Exact Shapley values ``float64[p]`` of a cheap game, through the adapter its kind needs.

    - a shapiq ``Game``: shapiq's own ``exact_values(index="SV", order=1)``, read out per player
      (``iv[(i,)]``; shapiq's normalisation shifts v by a constant, which Shapley values ignore);
    - a game whose ``exact_values()`` needs no argument (this project's closed forms in
      ``shapleig_tasks.synthetic``, tables in ``shapleig_tasks.tables``, ``shapleig_tasks.ml``): that;
    - any other game with at most 20 players: every coalition evaluated (``exact_shapley``).
    """
    from shapleig.games.exact import exact_shapley
    from shapleig.games.game import check_game

    p = check_game(game)
    if is_shapiq_game(game):
        iv = game.exact_values(index="SV", order=1)
        return np.array([float(iv[(i,)]) for i in range(p)], dtype=np.float64)
    own = getattr(game, "exact_values", None)
    if callable(own) and _takes_no_arguments(own):
        return np.asarray(own(), dtype=np.float64)
    return exact_shapley(game)


def shapiq_exact_index(game: Any, index: str, max_order: int | None = None) -> np.ndarray:
    """Exact values ``float64[d]`` of ``index`` for a shapiq ``Game``, in the order of
    :func:`shapleig.games.indices.index_terms` (singletons, then pairs, ...): shapiq's own
    ``exact_values(index, order)`` at ``max_order`` (None: 1 for SV and BV, 2 for the interactions)."""
    from shapleig.games.game import check_game
    from shapleig.games.indices import check_index, index_terms, shapiq_index_name

    index, order = check_index(index, max_order)
    iv = game.exact_values(index=shapiq_index_name(index), order=order)
    return np.array([float(iv[T]) for T in index_terms(check_game(game), index, order)], dtype=np.float64)


def _takes_no_arguments(fn: Any) -> bool:
    """Whether ``fn()`` is a valid call (every parameter has a default)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def ground_truth(
    task: Task,
    game: Any,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    live: bool = False,
    index: str = "SV",
    max_order: int | None = None,
) -> tuple[np.ndarray, Any, dict[str, Any]]:
    """Exact Shapley values ``float64[p]`` of a task, the game methods should query, and notes.

    ``index`` other than "SV" asks for another index (docs/math.md §14) at ``max_order`` (None: its
    default), ``float64[d]``; only games whose ``exact_values`` takes an ``index`` (tables,
    enumerated expensive games) have one.

    Cheap games go through :func:`exact_reference` (closed forms, tables, shapiq games, or
    enumeration). Expensive (LightGBM) games enumerate
    all 2^p coalitions once through their own ``table()`` (progress bar, cached on disk in
    ``cache_dir`` or the game's default cache); methods then query that table (same values,
    same budget charging) unless ``live``, in which case every evaluation refits LightGBM.
    """
    if not task.expensive:
        return _exact(game, index, task, max_order), game, {}
    if cache_dir is not None and hasattr(game, "cache_dir"):
        game.cache_dir = Path(cache_dir)
    if hasattr(game, "progress"):
        game.progress = progress
    cached = bool(getattr(game, "cache_path", None)) and game.cache_path().is_file()
    start = time.perf_counter()
    table = game.table()
    seconds = time.perf_counter() - start
    notes: dict[str, Any] = {"cache": str(game.cache_path()), "cached": cached, "enumeration_s": seconds,
                             "s_per_coalition": seconds / (1 << int(game.n_players))}
    return _exact(table, index, task, max_order), (game if live else table), notes


def _exact(game: Any, index: str, task: Task, max_order: int | None = None) -> np.ndarray:
    if index == "SV":
        return exact_reference(game)
    if is_shapiq_game(game):
        return shapiq_exact_index(game, index, max_order)
    try:
        if max_order is None:
            return np.asarray(game.exact_values(index=index), dtype=np.float64)
        return np.asarray(game.exact_values(index=index, max_order=max_order), dtype=np.float64)
    except TypeError as exc:
        raise ValueError(f"task {task.name!r} has exact Shapley values only, not {index!r}; "
                         f"use a table task for --index") from exc


def _nondefault_order(index: str, max_order: Any) -> int | None:
    """``max_order`` when it is not ``index``'s default order, else None."""
    from shapleig.games.indices import get_index

    return None if max_order is None or int(max_order) == get_index(index).order else int(max_order)


def index_method_spec(spec: MethodSpec, index: str, max_order: int | None = None) -> MethodSpec:
    """``spec`` set up to estimate ``index`` at ``max_order`` (:func:`shapleig.registry.index_options`):
    GP arms and ``exact`` get ``index=`` (and ``max_order=`` when not the default), ``shapiq:`` methods
    ``index=`` and ``max_order=``; any other method estimates the Shapley value only (ValueError)."""
    from shapleig import registry

    options = registry.index_options(spec.name, index, max_order)
    return spec.with_options(**options) if options else spec


# --------------------------------------------------------------------------------------------
# the plan
@dataclass
class Job:
    """One estimator run: a task, a method, a seed and the budgets it must fill."""

    task_index: int
    method_index: int
    seed: int
    budgets: list[tuple[str, int]]  # (spec, resolved budget); anytime jobs carry several
    anytime: bool


@dataclass
class Plan:
    tasks: list[Task]
    games: list[Any]
    methods: list[MethodSpec]
    budget_specs: list[str]
    seeds: list[int]
    jobs: list[Job]
    skipped: list[str] = field(default_factory=list)
    index: str = "SV"
    notes: list[str] = field(default_factory=list)  # e.g. budgets that cover a game (enumerated, exact)
    max_order: int | None = None  # the index's maximal order; None: its default

    def describe(self) -> str:
        n_runs, n_rows = len(self.jobs), sum(len(job.budgets) for job in self.jobs)
        anytime = (" (an anytime method runs once per seed at its largest budget and reads the smaller ones off "
                   "its trace)" if n_rows != n_runs else "")
        return (
            f"{len(self.tasks)} task(s) x {len(self.methods)} method(s) x {len(self.budget_specs)} "
            f"budget(s) x {len(self.seeds)} seed(s): {n_runs} estimator runs for {n_rows} table rows{anytime}"
        )


def build_plan(
    tasks: Sequence[str | Task],
    methods: Sequence[str | MethodSpec],
    budgets: Sequence[str | int],
    seeds: Sequence[str | int] | int,
    *,
    method_options: Iterable[str] = (),
    gp_options: dict[str, Any] | None = None,
    skip_small: bool = False,
    index: str = "SV",
    max_order: int | None = None,
) -> Plan:
    """Validate everything and lay out the jobs; no game is evaluated here.

    ``index``: what the methods estimate and are scored against ("SV" default, or "BV", "k-SII",
    "SII", "STII", "FSII", "FBII", "BII", "CHII", "Moebius"; see :func:`index_method_spec`) at
    ``max_order`` (None: the index's default); MSE is then over every term of orders 1..max_order.

    A budget below a method's minimum for a task's p is an error, or with ``skip_small`` that
    (task, method, budget) is left out and noted in ``Plan.skipped``.
    """
    task_list = resolve_tasks(tasks)
    games = []
    for task in task_list:
        try:
            games.append(task.game())
        except (OSError, ValueError, KeyError, EOFError, TypeError) as exc:
            raise ValueError(f"task {task.name!r} cannot be loaded: {exc}") from exc
    if max_order is not None:
        from shapleig.games.indices import check_index, get_index

        order = check_index(index, max_order)[1]
        max_order = None if order == get_index(index).order else order  # the default order: as if not given
    specs = resolve_methods(methods, method_options, gp_options, index=index, max_order=max_order)
    budget_specs = parse_budgets(budgets)
    seed_list = parse_seeds(seeds)
    estimators = [spec.build() for spec in specs]
    jobs: list[Job] = []
    skipped: list[str] = []
    notes: list[str] = []
    for ti, (task, game) in enumerate(zip(task_list, games)):
        p = int(game.n_players)
        resolved: list[tuple[str, int]] = []
        for b in budget_specs:  # '2p' and '16' are the same budget when p = 8: keep the first
            n = resolve_budget(b, p)
            if n not in [m for _, m in resolved]:
                resolved.append((b, n))
        for b, n in resolved:
            if n < 1:
                raise ValueError(f"budget {b} is {n} for task {task.name!r} (p = {p}); need >= 1")
            if n > MAX_BUDGET:
                raise ValueError(f"budget {b} is {n} for task {task.name!r} (p = {p}): too large, budgets count "
                                 f"evaluations as 64-bit integers (at most 2^63 - 1)")
            if p <= 62 and n > (1 << p) and not covers_game(p, n):
                raise ValueError(
                    f"budget {b} = {n} exceeds the 2^{p} = {1 << p} distinct coalitions of task {task.name!r}"
                )
            if covers_game(p, n):  # every method enumerates: reported once, not silently changed
                notes.append(f"{task.name}: {enumeration_message(p, n)} (every method)")
        for mi, (spec, est) in enumerate(zip(specs, estimators)):
            fits = _fitting_budgets(spec, est, task, p, resolved, skip_small)
            if len(fits) < len(resolved):
                dropped = ", ".join(str(n) for b, n in resolved if (b, n) not in fits)
                skipped.append(f"{spec.label} on {task.name}: budget {dropped} below its minimum "
                               f"{int(est.min_budget(p))} for p = {p}, skipped")
            if not fits:
                continue
            if spec.is_anytime(est):
                for seed in seed_list:
                    jobs.append(Job(ti, mi, seed, fits, True))
            else:
                for seed in seed_list:
                    for b in fits:
                        jobs.append(Job(ti, mi, seed, [b], False))
    return Plan(task_list, games, specs, budget_specs, seed_list, jobs, skipped, notes=notes, index=index,
                max_order=max_order)


def _fitting_budgets(
    spec: MethodSpec, est: Any, task: Task, p: int, budgets: list[tuple[str, int]], skip_small: bool
) -> list[tuple[str, int]]:
    """The budgets the method can run on this task; too-small ones raise unless ``skip_small``."""
    min_players = int(getattr(est, "min_players", 1))
    if p < min_players:
        raise ValueError(f"method {spec.label!r} needs at least {min_players} players; task {task.name!r} has {p}")
    max_players = getattr(est, "max_players", None)
    if max_players is not None and p > max_players:
        why = f" ({est.max_players_reason(p)})" if hasattr(est, "max_players_reason") else ""
        raise ValueError(f"method {spec.label!r} handles at most {max_players} players{why}; "
                         f"task {task.name!r} has p = {p}")
    if not hasattr(est, "min_budget"):
        return list(budgets)
    minimum = int(est.min_budget(p))
    # a budget covering the game is enumerated by every method, whatever its own minimum
    small = [f"{b} = {n}" if b != str(n) else b for b, n in budgets if n < minimum and not covers_game(p, n)]
    if small and not skip_small:
        why = f" ({est.min_budget_reason(p)})" if hasattr(est, "min_budget_reason") else ""
        raise ValueError(
            f"method {spec.label!r} needs a budget of at least {minimum} for task {task.name!r} "
            f"(p = {p}){why}; too small: {', '.join(small)}"
        )
    return [(b, n) for b, n in budgets if n >= minimum or covers_game(p, n)]


# --------------------------------------------------------------------------------------------
# running
def job_store_path(store_dir: str | os.PathLike[str], task: str, method: str, seed: int, budget: int) -> Path:
    """The evaluation store of one run in ``store_dir`` (``shapleig run --store-dir``): a file name made
    of the task, the method's label, the seed and the budget (characters a file name cannot hold
    replaced; a digest of the whole keeps two runs apart)."""
    import hashlib

    def part(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("._")[:60] or "x"

    digest = hashlib.sha256(f"{task}|{method}|{seed}|{budget}".encode()).hexdigest()[:8]
    return Path(store_dir) / f"{part(task)}__{part(method)}__seed{seed}__b{budget}__{digest}.sqlite"


def run_job(
    job: Job, task: Task, game: Any, spec: MethodSpec, exact: np.ndarray, threads: int | None = None,
    errors: str = "raise", eval_timeout: float | None = None, evaluator: Any = None, store_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Run one job; one row per budget it fills. ``errors='record'`` turns a crash into rows.
    ``eval_timeout``: seconds per game call (``estimate(..., timeout=)``); the game then runs in
    a worker process, so ``game_s`` stays 0. ``evaluator``: ``estimate(..., evaluator=)`` (the
    workers of ``shapleig run --workers`` / ``--dask-scheduler``). ``store_dir``: every run writes
    its evaluations and its trace to its own store there (:func:`job_store_path`), which
    ``shapleig dashboard`` shows while it runs and a killed run resumes from."""
    p = int(game.n_players)
    base = {
        "task": task.name, "group": task.group, "kind": task.kind, "p": p, "method": spec.label,
        "method_name": spec.name, "options": spec.options_json, "seed": int(job.seed),
        "anytime": bool(job.anytime), "exact": exact.tolist(), "versions": package_versions(spec.name),
    }
    index = spec.options.get("index", "SV") if isinstance(spec.options, dict) else "SV"
    if index != "SV":  # the column only appears in index runs, so SV tables keep their schema
        base["index"] = index
        order = _nondefault_order(index, spec.options.get("max_order"))
        if order is not None:  # and this one in runs at another order than the index's default
            base["max_order"] = order
    try:
        return _run(job, game, spec, exact, base, threads, eval_timeout, evaluator, store_dir, task.name)
    except Exception as exc:  # noqa: BLE001 - recorded, or re-raised with context
        if errors != "record":
            if isinstance(exc, AcquisitionError):  # the method as configured is broken, not this run: bad input
                raise AcquisitionError(f"{spec.label} on {task.name} (seed {job.seed}): {exc}") from exc
            raise RuntimeError(
                f"{spec.label} on {task.name} (seed {job.seed}, budgets "
                f"{[n for _, n in job.budgets]}) failed: {type(exc).__name__}: {exc}"
            ) from exc
        msg = f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc(limit=3)
        return [
            {**base, "budget": n, "budget_spec": b, "evaluations": 0, "mse": math.nan,
             "max_abs_err": math.nan, "wall_s": math.nan, "selection_s": math.nan,
             "game_s": math.nan, "accounting": "", "noise": "", "error": msg + "\n" + tb,
             "values": None, "std": None}
            for b, n in job.budgets
        ]


def _run(job: Job, game: Any, spec: MethodSpec, exact: np.ndarray, base: dict, threads: int | None,
         eval_timeout: float | None = None, evaluator: Any = None, store_dir: Path | None = None,
         task_name: str = "") -> list[dict]:
    from shapleig_tasks.metrics import max_abs_error, mse

    estimator = spec.build()
    # a game with per-run state (a noisy game's call counts) gives every run a fresh copy, so a
    # run's values do not depend on the runs before it in this process
    fresh = getattr(game, "fresh", None)
    game = fresh() if callable(fresh) else game
    if threads is not None and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)  # no oversubscription under joblib workers
    pending = sorted(job.budgets, key=lambda bn: bn[1])
    rows: list[dict] = []
    while pending:
        b_max, n_max = pending[-1]
        timed = TimedGame(game)
        start = time.perf_counter()
        extra = {} if eval_timeout is None else {"timeout": eval_timeout}
        if evaluator is not None:
            extra["evaluator"] = evaluator
        with contextlib.ExitStack() as stack:
            if store_dir is not None:
                from shapleig.runs.store import EvaluationStore

                path = job_store_path(store_dir, task_name, spec.label, job.seed, n_max)
                extra["store"] = stack.enter_context(EvaluationStore(path))
            with warnings.catch_warnings():  # budgets covering the game are reported in Plan.notes
                warnings.simplefilter("ignore", BudgetCoversGameWarning)
                result = estimator.estimate(timed, n_max, seed=job.seed, **extra)
        total = time.perf_counter() - start
        info = getattr(result, "info", {}) or {}
        common = {"accounting": str(info.get("accounting", "")), "noise": _noise_note(info), "error": ""}
        filled, missing = [], []
        for b, n in pending:
            if (b, n) == (b_max, n_max) or not job.anytime:
                values, used = np.asarray(result.values), int(result.evaluations)
                std = getattr(result, "std", None)
            else:
                values, used = _from_trace(result, n)
                if values is None:
                    missing.append((b, n))  # trace does not reach this budget: run it on its own
                    continue
                std = result.std_at(used) if hasattr(result, "std_at") else None
            if (b, n) == (b_max, n_max):
                wall, game_s = total, timed.game_s
            else:
                wall, game_s = timed.time_at(used, total)
            filled.append({
                **base, **common, "budget": n, "budget_spec": b, "evaluations": used,
                "mse": float(mse(values, exact)), "max_abs_err": float(max_abs_error(values, exact)),
                "wall_s": wall, "selection_s": max(wall - game_s, 0.0), "game_s": game_s,
                "values": np.asarray(values, dtype=np.float64).tolist(),
                "std": None if std is None else np.asarray(std, dtype=np.float64).tolist(),
            })
        rows += filled
        pending = missing
    return rows


def _from_trace(result: Any, budget: int) -> tuple[np.ndarray | None, int]:
    """The latest trace entry with at most ``budget`` evaluations: (values, evaluations)."""
    best, used = None, 0
    for n, vals in getattr(result, "trace", None) or []:
        if n <= budget and n >= used:
            best, used = np.asarray(vals, dtype=np.float64), int(n)
    return best, used


def _noise_note(info: dict[str, Any]) -> str:
    notes = {k: info[k] for k in sorted(info) if "noise" in k.lower()}
    return json.dumps(notes, sort_keys=True, default=str) if notes else ""


def run_benchmark(
    tasks: Sequence[str | Task],
    methods: Sequence[str | MethodSpec],
    budgets: Sequence[str | int],
    seeds: Sequence[str | int] | int,
    *,
    out: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    method_options: Iterable[str] = (),
    gp_options: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    live: bool = False,
    progress: bool = True,
    errors: str = "raise",
    log: Any = None,
    skip_small: bool = False,
    index: str = "SV",
    max_order: int | None = None,
) -> pd.DataFrame:
    """Validate, compute ground truth once per task, run every job, return (and write) the table.

    The function behind ``shapleig run``: one row per (task, method, budget, seed).

    Args:
        tasks: task names (``shapleig tasks`` lists them) or :class:`Task` objects.
        methods: registered method names (with options, ``"kernelshap:paired=true"``) or specs.
        budgets: evaluation budgets: integers or expressions in p (``"8p"``).
        seeds: the seeds (a list, a range text such as ``"0-9"``, or a count).
        out: a results file to write (``.csv`` or ``.parquet``); None: not written.
        n_jobs: joblib workers (1 = in this process, -1 = every core).
        method_options: ``"method:key=value"`` options applied to the methods named.
        gp_options: options of the GP arms (``ShaplEIG``'s keywords).
        cache_dir: folder caching the ground truth of expensive tasks.
        live: evaluate expensive tasks live instead of from their precomputed tables.
        progress: show progress bars.
        errors: ``'raise'`` stops at the first failing run; ``'record'`` keeps going and puts the
            message in the ``error`` column.
        log: a callable taking one line of text (e.g. ``print``) for the notes of the run.
        skip_small: skip budgets below a method's minimum instead of failing.
        index: the index estimated (``"SV"`` by default).
        max_order: its maximal order (None: the index's default).

    Returns:
        The results table (a ``pandas.DataFrame``: the task, method, budget, seed, evaluations,
        ``mse``, ``max_abs_err``, timings, the values and their std).

    Examples:
        >>> from shapleig_tasks.harness import run_benchmark
        >>> table = run_benchmark(["wvg-7"], ["kernelshap"], [16], [0], progress=False)
        >>> table[["task", "method", "budget", "seed"]].values.tolist()
        [['wvg-7', 'kernelshap', 16, 0]]
        >>> bool(table["evaluations"].iloc[0] <= 16 and table["mse"].iloc[0] >= 0)
        True
    """
    if errors not in ("raise", "record"):
        raise ValueError(f"errors must be 'raise' or 'record', got {errors!r}")
    if int(n_jobs) == 0:
        raise ValueError("n_jobs must be a positive number of workers (or -1 for all cores)")
    plan = build_plan(tasks, methods, budgets, seeds, method_options=method_options, gp_options=gp_options,
                      skip_small=skip_small, index=index, max_order=max_order)
    out_path = check_results_path(out) if out is not None else None
    if out_path is not None:
        check_output_file(journal_path(out_path))
    if cache_dir is not None and any(t.expensive for t in plan.tasks):
        check_output_path(Path(cache_dir) / "probe.npz")
    return execute_plan(plan, out=out_path, n_jobs=n_jobs, cache_dir=cache_dir, live=live,
                        progress=progress, errors=errors, log=log)


def execute_plan(
    plan: Plan,
    *,
    out: Path | None = None,
    n_jobs: int = 1,
    cache_dir: str | os.PathLike[str] | None = None,
    live: bool = False,
    progress: bool = True,
    errors: str = "raise",
    log: Any = None,
    eval_timeout: float | None = None,
    evaluator: Any = None,
    store_dir: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Run a validated :class:`Plan` (see :func:`run_benchmark`); ``eval_timeout``, ``evaluator`` and
    ``store_dir`` as in :func:`run_job` (an evaluator needs ``n_jobs=1``)."""
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    # the journal's path is checked before any ground truth is computed (a FIFO there blocks its first write)
    journal = RunJournal(journal_path(out), live=live, eval_timeout=eval_timeout) if out is not None else None
    exacts, served = [], []
    for task, game in zip(plan.tasks, plan.games):
        exact, game_for_methods, notes = ground_truth(task, game, cache_dir=cache_dir, progress=progress, live=live,
                                                      index=plan.index, max_order=plan.max_order)
        exacts.append(exact)
        served.append(game_for_methods)
        if log is not None and notes:
            if notes.get("cached"):
                log(f"ground truth of {task.name}: loaded from {notes['cache']}")
            else:
                log(f"ground truth of {task.name}: {1 << int(game.n_players)} coalitions in "
                    f"{notes['enumeration_s']:.1f} s ({notes['s_per_coalition']:.3f} s per coalition)")
    threads = None if int(n_jobs) == 1 else 1
    done = journal.read(plan) if journal is not None else {}
    if done and log is not None:
        log(f"resuming: {len(done)} of {len(plan.jobs)} runs read from {journal.path}")
    todo = [job for job in plan.jobs if job_key(plan, job, live, eval_timeout) not in done]
    calls = (
        delayed(run_job)(job, plan.tasks[job.task_index], served[job.task_index], plan.methods[job.method_index],
                         exacts[job.task_index], threads, errors, eval_timeout, evaluator,
                         None if store_dir is None else Path(store_dir))
        for job in todo
    )
    rows: list[dict] = [row for part in done.values() for row in part]
    with tqdm(total=len(plan.jobs), initial=len(done), desc="runs", unit="run", disable=not progress,
              file=sys.stderr) as bar:
        try:
            if int(n_jobs) == 1:
                for call in calls:
                    fn, args, kwargs = call
                    part = fn(*args, **kwargs)
                    rows += part
                    _journal(journal, part)
                    bar.update(1)
            else:
                for part in Parallel(n_jobs=int(n_jobs), return_as="generator_unordered")(calls):
                    rows += part
                    _journal(journal, part)
                    bar.update(1)
        except KeyboardInterrupt:
            if journal is not None and log is not None:
                log(f"interrupted: {journal.n_kept} of {len(plan.jobs)} runs are kept in {journal.path}; "
                    f"run the same command again to resume")
            raise
    df = results_frame(rows)
    if out is not None:
        write_parquet(df, out)
        journal.remove()
    return df


def journal_path(out: str | os.PathLike[str]) -> Path:
    """The journal of finished runs beside the results file ``out``: ``<out>.partial.jsonl``."""
    out = Path(out)
    return out.with_name(out.name + ".partial.jsonl")


def job_key(plan: Plan, job: Job, live: bool = False, eval_timeout: float | None = None) -> str:
    """What identifies a job across runs of one command (the journal's key): task, method label
    (options included), seed, budgets, index, ``live`` and the evaluation timeout."""
    index = plan.index if plan.max_order is None else f"{plan.index}@{plan.max_order}"
    return _run_key(plan.tasks[job.task_index].name, plan.methods[job.method_index].label, job.seed, job.budgets,
                    job.anytime, index, live, eval_timeout)


def _run_key(task: str, method: str, seed: int, budgets: Iterable[tuple[str, int]], anytime: bool, index: str,
             live: bool, eval_timeout: float | None) -> str:
    return json.dumps({"task": task, "method": method, "seed": int(seed),
                       "budgets": sorted([str(b), int(n)] for b, n in budgets), "anytime": bool(anytime),
                       "index": index, "live": bool(live), "eval_timeout": eval_timeout}, sort_keys=True)


def _journal(journal: "RunJournal | None", rows: list[dict[str, Any]]) -> None:
    if journal is not None:
        journal.append(rows)


class RunJournal:
    """Finished runs of a results table being computed, one JSON line per run, flushed to disk
    (``fsync``) before the next run starts, so an interrupted command loses no finished run."""

    def __init__(self, path: Path, *, live: bool = False, eval_timeout: float | None = None):
        self.path = check_output_file(path)  # a FIFO here would block the first append for ever
        self.live = bool(live)
        self.eval_timeout = eval_timeout
        self.n_kept = 0

    def read(self, plan: Plan) -> dict[str, list[dict[str, Any]]]:
        """``{job_key: rows}`` of the plan's jobs the journal holds (without errors); lines of
        other plans, errors and a torn last line (the process died mid-write) are ignored."""
        if not self.path.is_file():
            return {}
        wanted = {job_key(plan, job, self.live, self.eval_timeout) for job in plan.jobs}
        done: dict[str, list[dict[str, Any]]] = {}
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                    key, rows = entry["key"], entry["rows"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by the interruption
                if key in wanted and rows and not any(r.get("error") for r in rows):
                    done[key] = rows
        self.n_kept = len(done)
        return done

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Record one finished run (its rows); a run that recorded an error is not kept."""
        if not rows or any(r.get("error") for r in rows):
            return
        first = rows[0]
        index = first.get("index", "SV") + (f"@{first['max_order']}" if first.get("max_order") is not None else "")
        key = _run_key(first["task"], first["method"], first["seed"], [(r["budget_spec"], r["budget"]) for r in rows],
                       first["anytime"], index, self.live, self.eval_timeout)
        line = json.dumps({"key": key, "rows": rows}, default=_json_default) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.n_kept += 1

    def remove(self) -> None:
        """Delete the journal (the table is written)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _json_default(x: Any) -> Any:
    """numpy scalars and arrays in a journal line as plain numbers and lists."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot write {type(x).__name__} to the run journal")


def results_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> the results table with :data:`COLUMNS` in order, sorted for reading."""
    extra = ["index"] if any("index" in r for r in rows) else []  # index runs only (docs/math.md §14)
    extra += ["max_order"] if any("max_order" in r for r in rows) else []  # ... at a non-default order
    df = pd.DataFrame(rows, columns=COLUMNS + extra)
    df = df.astype({"p": "int64", "budget": "int64", "seed": "int64", "evaluations": "int64", "anytime": "bool"})
    return df.sort_values(["group", "task", "method", "budget", "seed"], kind="stable").reset_index(drop=True)


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a results parquet; ``ValueError`` naming the file if it is missing or not a table."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"results file {path} does not exist")
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise ValueError(f"results file {path} is not a readable parquet table: {exc}") from exc
    missing = [c for c in ("task", "method", "budget", "seed", "mse") if c not in df.columns]
    if missing:
        raise ValueError(f"results file {path} lacks columns {missing}; was it written by shapleig run?")
    return df


__all__ = [
    "COLUMNS",
    "Job",
    "Plan",
    "RunJournal",
    "TimedGame",
    "build_plan",
    "check_output_file",
    "check_output_path",
    "package_versions",
    "check_results_path",
    "execute_plan",
    "ground_truth",
    "job_key",
    "journal_path",
    "parse_budgets",
    "parse_seeds",
    "read_results",
    "resolve_budget",
    "results_frame",
    "run_benchmark",
    "run_job",
    "write_parquet",
]
