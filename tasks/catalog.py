"""Task names -> game factories: synthetic games, LightGBM games and precomputed table suites.

Names (``shapleig tasks`` lists them):

- synthetic: ``airport-100``, ``shoe-<n>``, ``soug-<n>[/seed=k]``, ``wvg-7-q<C>`` (``wvg-7`` is
  C = 5), ``wvg-50``;
- LightGBM games computed on the fly (ground truth by enumeration, cached):
  ``hpi-<dataset>-<p>`` (hyperparameter importance), ``fi-<dataset>-<p>`` (feature importance),
  ``dv-<dataset>-<p>`` (dataset valuation), each optionally ``/seed=k``;
- table suites under :func:`shapleig_tasks.tables.default_tables_dir`: ``vit-9``, ``vit-16``,
  ``resnet-14``, ``bike-dv-10``, ... ; a suite expands to one task per file, ``vit-9/seed=k``;
  ``vit-9/seed=a-b`` selects seeds a..b and ``vit-9/first=n`` the first n files;
- ``table:<path>``: one ``.npz`` table (docs/games.md §7), or every table in a folder.

Every task knows its ``group`` (the suite or the game family) so that results can be pooled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from shapleig_tasks.ml import DATASETS

# suite name -> (folder under the tables dir, file-name prefix, description)
TABLE_SUITES: dict[str, tuple[str, str, str]] = {
    "vit-9": ("ImageClassifier_Game/9", "model_name=vit_9_patches", "ViT, 3x3 image patches"),
    "vit-16": ("ImageClassifier_Game/16", "model_name=vit_16_patches", "ViT, 4x4 image patches"),
    "resnet-14": (
        "ImageClassifier_Game/14",
        "model_name=resnet_18",
        "ResNet-18, 14 superpixels",
    ),
    "bike-dv-10": (
        "BikeSharing_DatasetValuation_Game/10",
        "model_name=gradient_boosting",
        "Bike sharing dataset valuation, gradient boosting, 10 chunks",
    ),
    "bike-dv-10-rf": (
        "BikeSharing_DatasetValuation_Game/10",
        "model_name=random_forest",
        "Bike sharing dataset valuation, random forest, 10 chunks",
    ),
    "california-dv-10": (
        "CaliforniaHousing_DatasetValuation_Game/10",
        "model_name=",
        "California housing dataset valuation, 10 chunks",
    ),
    "adult-fs-14": (
        "AdultCensus_FeatureSelection_Game/14",
        "model_name=",
        "Adult census feature selection, 14 features",
    ),
    "california-le-8": (
        "CaliforniaHousing_LocalExplanation_Game/8",
        "model_name=",
        "California housing local explanation, 8 features",
    ),
    "bike-ge-12": (
        "BikeSharing_GlobalExplanation_Game/12",
        "model_name=",
        "Bike sharing global explanation (R2), 12 features",
    ),
}
# suite B (docs/games.md §7): other kinds of games, three tables each, in the shared folder only
SUITE_B: dict[str, tuple[str, str, str]] = {
    "sentiment-14": ("SentimentAnalysis_Game/14", "mask_strategy=", "Sentiment analysis, 14 tokens"),
    "soum-15": ("SOUM_Game/15", "n=15", "Sum of 150 unanimity games, 15 players"),
    "adult-dv-15": ("AdultCensus_DataValuation_Game/15", "model_name=", "Adult census data valuation, 15 points"),
    "adult-dsv-10-rf": ("AdultCensus_DatasetValuation_Game/10", "model_name=random_forest",
                        "Adult census dataset valuation, random forest, 10 chunks"),
    "california-es-10": ("CaliforniaHousing_EnsembleSelection_Game/10", "loss_function=",
                         "California housing ensemble selection, 10 members"),
    "bike-fs-12": ("BikeSharing_FeatureSelection_Game/12", "model_name=", "Bike sharing feature selection, 12 features"),
    "adult-le-14": ("AdultCensus_LocalExplanation_Game/14", "model_name=",
                    "Adult census local explanation, conditional imputer, 14 features"),
    "adult-ue-14": ("AdultCensus_UncertaintyExplanation_Game/14", "uncertainty_to_explain=",
                    "Adult census uncertainty explanation, 14 features"),
}
TABLE_SUITES.update(SUITE_B)



@dataclass
class Task:
    """A named game with exact ground truth.

    name:      unique task name (a results row key), e.g. ``vit-9/seed=3``.
    group:     what results are pooled over, e.g. ``vit-9``.
    kind:      ``synthetic`` | ``ml`` | ``table``.
    factory:   builds the game (cheap for every kind: ML games evaluate lazily).
    expensive: ground truth needs enumerating all 2^p coalitions through the real game, so the
               harness enumerates once with a progress bar and caches the table.
    """

    name: str
    group: str
    kind: str
    factory: Callable[[], Any]
    description: str = ""
    expensive: bool = False
    _game: Any = field(default=None, repr=False, compare=False)

    def game(self) -> Any:
        """The game (built once, then reused)."""
        if self._game is None:
            self._game = self.factory()
        return self._game


# --------------------------------------------------------------------------------------------
# synthetic and ML names
def _synthetic(name: str) -> Task | None:
    from shapleig_tasks import synthetic as syn

    if name == "airport-100":
        return Task(name, "airport-100", "synthetic", syn.AirportGame, "airport game, n = 100")
    if name == "wvg-50":
        return Task(name, "wvg-50", "synthetic", syn.weighted_voting_n50, "weighted voting, EPIC n = 50")
    m = re.fullmatch(r"wvg-7(?:-q(\d+))?", name)
    if m:
        quota = int(m.group(1) or 5)
        if not 1 <= quota <= 10:
            raise ValueError(f"task {name!r}: the 7-player voting family has quotas 1..10")
        return Task(
            name, name, "synthetic", lambda: syn.weighted_voting_family7(quota),
            f"weighted voting [1,2,3,1,1,1,1], quota {quota}",
        )
    m = re.fullmatch(r"shoe-(\d+)", name)
    if m:
        n = int(m.group(1))
        if n < 2 or n % 2:
            raise ValueError(f"task {name!r}: the shoe game needs an even number of players >= 2")
        return Task(name, name, "synthetic", lambda: syn.ShoeGame(n), f"shoe game, n = {n}")
    m = re.fullmatch(r"soug-(\d+)(?:/seed=(\d+))?", name)
    if m:
        n, seed = int(m.group(1)), int(m.group(2) or 0)
        return Task(
            name, f"soug-{n}", "synthetic", lambda: syn.SumOfUnanimityGame(n, seed=seed),
            f"sum of unanimity games, n = {n}, 50 terms, game seed {seed}",
        )
    return None


# prefix -> (make_ml_game kind, description)
ML_KINDS: dict[str, tuple[str, str]] = {
    "hpi": ("hpi", "LightGBM hyperparameter importance (ablation)"),
    "fi": ("feature", "LightGBM retraining feature importance"),
    "dv": ("valuation", "LightGBM dataset valuation"),
}


def _ml(name: str) -> Task | None:
    m = re.fullmatch(r"(hpi|fi|dv)-([a-z_]+)-(\d+)(?:/seed=(\d+))?", name)
    if not m:
        return None
    prefix, dataset, p, seed = m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or 0)
    if dataset not in DATASETS:
        raise ValueError(f"task {name!r}: unknown dataset {dataset!r}; choose one of {DATASETS}")
    kind, what = ML_KINDS[prefix]

    def factory() -> Any:
        from shapleig_tasks.ml import make_ml_game

        return make_ml_game(kind, dataset, p, seed)

    group = f"{prefix}-{dataset}-{p}"
    return Task(name, group, "ml", factory, f"{what}, {dataset}, p = {p}, seed {seed}", expensive=True)


# --------------------------------------------------------------------------------------------
# tables
def tables_dir() -> Path:
    """Folder holding the precomputed tables: the first found of ``table_search_path()``
    (``SHAPLEIG_TABLES``, ``SHAPLEIG_SHARED``, ``../shared``, the shipped subset).

    Raises ``GameError`` (a ``ValueError``) naming every path searched when none exists."""
    from shapleig_tasks.tables import default_tables_dir

    return default_tables_dir()


def describe_table_search() -> list[str]:
    """Lines for ``shapleig tasks``: each folder searched for the suites, which one is used, and
    how to point elsewhere."""
    from shapleig_tasks.tables import TABLES_HINT, table_search_path

    lines = ["table suites are looked for in (first existing folder wins):"]
    locations = table_search_path()
    used = next((loc for loc in locations if loc.exists), None)
    for i, loc in enumerate(locations, 1):
        mark = "used" if loc is used else ("exists" if loc.exists else "not found")
        lines.append(f"  {i}. {loc.path}  [{loc.origin}; {mark}]")
    if used is None:
        lines.append("  none of them exists")
    lines.append(f"to use other tables: {TABLES_HINT}")
    return lines


def suite_files(suite: str, folder: Path | None = None) -> list[Any]:
    """The tables (``TableSpec``) of a named suite in seed order; ``ValueError`` if missing."""
    from shapleig_tasks.tables import TABLES_HINT, discover_tables, searched_text

    sub, prefix, _ = TABLE_SUITES[suite]
    root = Path(folder) if folder is not None else tables_dir()
    if not (root / sub).is_dir():
        searched = "" if folder is not None else f" (table folders searched: {searched_text()})"
        raise ValueError(
            f"table suite {suite!r} needs the folder {root / sub}, which does not exist{searched}; {TABLES_HINT}"
        )
    specs = [t for t in discover_tables(Path(root) / sub) if t.path.parent == Path(root) / sub
             and t.path.name.startswith(prefix)]
    if not specs:
        raise ValueError(f"table suite {suite!r}: no {prefix}*.npz files in {Path(root) / sub}")
    return sorted(specs, key=lambda t: (t.seed is None, t.seed or 0, t.name))


def _table_task(spec: Any, name: str, group: str, description: str) -> Task:
    return Task(name, group, "table", spec.load, f"{description} ({spec.path})")


def _suite_tasks(name: str) -> list[Task] | None:
    suite, _, selector = name.partition("/")
    if suite not in TABLE_SUITES:
        return None
    if re.fullmatch(r"first=0+", selector):
        raise ValueError(f"task {name!r}: first=n selects the first n tables; n must be at least 1")
    files = suite_files(suite)
    desc = TABLE_SUITES[suite][2]
    if not selector:
        chosen = files
    elif m := re.fullmatch(r"seed=(\d+)(?:-(\d+))?", selector):
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        chosen = [t for t in files if t.seed is not None and lo <= t.seed <= hi]
        if not chosen:
            raise ValueError(f"task {name!r}: no table with that seed; suite {suite!r} has seeds "
                             f"{[t.seed for t in files]} in {files[0].path.parent}")
    elif m := re.fullmatch(r"first=(\d+)", selector):
        chosen = files[: int(m.group(1))]
    else:
        raise ValueError(f"task {name!r}: write {suite}, {suite}/seed=k, {suite}/seed=a-b or {suite}/first=n")
    return [_table_task(t, f"{suite}/seed={t.seed}", suite, desc) for t in chosen]


def _path_tasks(text: str) -> list[Task]:
    from shapleig_tasks.tables import TableSpec, discover_tables

    path = Path(text[len("table:") :]).expanduser()
    if path.is_file():
        spec = TableSpec(path=path, name=path.stem, group="", seed=None)
        return [_table_task(spec, f"table:{path.stem}", f"table:{path.stem}", "table")]
    if path.is_dir():
        specs = discover_tables(path)
        if not specs:
            raise ValueError(f"task {text!r}: no .npz tables in folder {path}")
        group = f"table:{path.name}"
        return [_table_task(t, f"{group}/{t.name}", f"{group}/{t.group}" if t.group else group, "table")
                for t in specs]
    raise ValueError(f"task {text!r}: {path} is neither a table file nor a folder")


# --------------------------------------------------------------------------------------------
# public
def known_task_names() -> list[str]:
    """Representative names (parametric families accept other sizes; see the module docstring)."""
    synthetic = ["airport-100", "shoe-50", "soug-20", "wvg-7", "wvg-7-q3", "wvg-50"]
    ml = ["hpi-diabetes-8", "hpi-diabetes-13", "hpi-breast_cancer-8", "hpi-wine-8", "hpi-digits-8",
          "fi-breast_cancer-10", "dv-digits-12"]
    return synthetic + ml + list(TABLE_SUITES) + ["table:<path>"]


def unknown_task_message(name: str) -> str:
    return f"unknown task {name!r}; known tasks: {', '.join(known_task_names())}"


def resolve_task(name: str | Task) -> list[Task]:
    """One name -> its tasks (a suite or folder expands to many); ``ValueError`` if unknown."""
    if isinstance(name, Task):
        return [name]
    name = str(name).strip()
    if name.startswith("table:"):
        return _path_tasks(name)
    for resolver in (_synthetic, _ml):
        task = resolver(name)
        if task is not None:
            return [task]
    tasks = _suite_tasks(name)
    if tasks is not None:
        return tasks
    raise ValueError(unknown_task_message(name))


def resolve_tasks(names: Iterable[str | Task]) -> list[Task]:
    """Resolve every name (order kept, duplicates dropped); no game is built or evaluated."""
    out: dict[str, Task] = {}
    names = list(names)
    if not names:
        raise ValueError(f"no tasks given; known tasks: {', '.join(known_task_names())}")
    for n in names:
        for task in resolve_task(n):
            out.setdefault(task.name, task)
    return list(out.values())


def describe_tasks() -> list[dict[str, Any]]:
    """Rows for ``shapleig tasks``: name, kind, description, and for suites the files found."""
    rows: list[dict[str, Any]] = []
    for name in known_task_names():
        if name in TABLE_SUITES:
            sub, _, desc = TABLE_SUITES[name]
            try:
                n = len(suite_files(name))
                status = f"{n} tables"
            except ValueError:
                status = "tables folder not found"
            rows.append({"name": name, "kind": "table suite", "description": f"{desc}; {sub}: {status}"})
        elif name == "table:<path>":
            rows.append({"name": name, "kind": "table", "description": "one .npz table or a folder of them"})
        else:
            task = resolve_task(name)[0]
            rows.append({"name": name, "kind": task.kind, "description": task.description})
    return rows


__all__ = [
    "SUITE_B",
    "TABLE_SUITES",
    "Task",
    "describe_table_search",
    "describe_tasks",
    "known_task_names",
    "resolve_task",
    "resolve_tasks",
    "suite_files",
    "tables_dir",
]
