"""What ``shapleig demo`` says before it starts and after it ends.

Before: where the exact values come from. The default game's (``hpi-diabetes-8``, 256 coalitions,
each a 5-fold LightGBM cross-validation) ship with the package (``data/demo``) and are copied into
the demo's cache, so a first run starts at once; any other expensive game is enumerated once, and
the demo says how many coalitions that is before it starts. After: one verdict line stating what
the MSE table shows, for ShaplEIG against the other methods, with the MSE's units.
"""

from __future__ import annotations

import importlib.resources
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

# units of the values of the LightGBM games' metrics (an MSE is in their square)
METRIC_UNITS = {"r2": "R²", "neg_log_loss": "log-loss", "accuracy": "accuracy"}


def shipped_table(cache_path: Path) -> Path | None:
    """The precomputed table shipped for the game whose cache file is ``cache_path`` (None: none ships).

    Args:
        cache_path: the game's ``cache_path()`` (``<cache>/<folder>/<p>/seed=<s>-<key>.npz``).

    Returns:
        the shipped ``.npz`` (its ``.json`` sidecar beside it), or None.
    """
    root = importlib.resources.files("shapleig_tasks").joinpath("data", "demo")
    candidate = root.joinpath(cache_path.parent.parent.name, cache_path.parent.name, cache_path.name)
    return Path(str(candidate)) if candidate.is_file() else None


def prepare_exact_values(task_name: str, cache_dir: Path, live: bool) -> str:
    """Put the shipped exact values in the cache when they are missing; say where the values come from.

    Args:
        task_name: the demo's task.
        cache_dir: the demo's cache folder.
        live: methods evaluate the game itself (``--live``): the shipped table is not used.

    Returns:
        one line to print before the run starts.
    """
    from shapleig_tasks.catalog import resolve_tasks

    task = resolve_tasks([task_name])[0]
    if not task.expensive:
        return f"{task_name}: exact values known (a closed form or a shipped table)"
    game = task.game()
    game.cache_dir = Path(cache_dir)
    path = game.cache_path()
    n = 1 << int(game.n_players)
    if path.is_file():
        return f"{task_name}: exact values of its {n} coalitions from the cache {path}"
    shipped = None if live else shipped_table(path)
    if shipped is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shipped.with_suffix(".json"), path.with_suffix(".json"))  # the sidecar first, as the game does
        shutil.copyfile(shipped, path)
        versions = json.loads(shipped.with_suffix(".json").read_text()).get("versions", {})
        made = ", ".join(f"{k} {v}" for k, v in versions.items() if k in ("lightgbm", "scikit-learn"))
        return (f"{task_name}: exact values of its {n} coalitions shipped with shapleig (computed with {made}), "
                f"copied to {path.parent}: nothing to enumerate, the methods start at once")
    return (f"{task_name}: first run: computing the exact values of all {n} coalitions once (a LightGBM fit or "
            f"cross-validation each, about 0.1-1 s: {n // 10} s to {n // 60 + 1} min; a progress bar shows the "
            f"rate), cached in {path.parent} for later runs")


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def verdict(df: pd.DataFrame, units: str, ours: str = "shapleig") -> str:
    """One line: where ``ours`` ranks by mean MSE at each budget, and the MSEs at the largest, with units.

    Args:
        df: the results table of the run (one task).
        units: the units of the game's values (the MSE is in their square).
        ours: the method the demo is about (its registry name; the table may label it with options).

    Returns:
        the line, starting ``verdict:``.
    """
    ok = df[df["error"].fillna("") == ""]
    mse = ok.groupby(["budget", "method"])["mse"].mean().unstack("method").sort_index()
    labels = ok.loc[ok["method_name"] == ours, "method"] if "method_name" in ok else pd.Series(dtype=str)
    ours = labels.iloc[0] if len(labels) else ours  # its label in the table (with options: shapleig:refit=never)
    spec = ok.groupby("budget")["budget_spec"].first() if "budget_spec" in ok else pd.Series(dtype=str)
    name = {b: (f"{spec[b]} ({b})" if b in spec and str(spec[b]) != str(b) else str(b)) for b in mse.index}
    n_seeds = ok["seed"].nunique()
    square = f"({units})²"
    if ours not in mse.columns:
        best = [f"{name[b]}: {mse.loc[b].idxmin()}" for b in mse.index]
        return f"verdict: lowest mean MSE over {n_seeds} seed(s) per budget: {'; '.join(best)} (MSE in {square})"
    ranks = mse.rank(axis=1, method="min")[ours].astype(int)
    where = ", ".join(f"{_ordinal(int(ranks[b]))} at {name[b]}" for b in mse.index)
    last = mse.index[-1]
    others = mse.loc[last].drop(ours)
    return (f"verdict: {ours} ranks {where} evaluations of {mse.shape[1]} methods by mean MSE over {n_seeds} "
            f"seed(s); at {name[last]} its MSE is {mse.loc[last, ours]:.3g} {square}, the best other "
            f"({others.idxmin()}) {others.min():.3g} {square}")


def value_units(task_name: str) -> str:
    """The units of a task's values: its metric's for the LightGBM games, else ``game units``.

    Args:
        task_name: the task.

    Returns:
        the units' name.
    """
    from shapleig_tasks.catalog import resolve_tasks

    task = resolve_tasks([task_name])[0]
    if not task.expensive:
        return "game units"
    metric: Any = getattr(task.game(), "metric", None)
    return f"CV {METRIC_UNITS.get(metric, metric)}" if metric else "game units"


__all__ = ["prepare_exact_values", "shipped_table", "value_units", "verdict"]
