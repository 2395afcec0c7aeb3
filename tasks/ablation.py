"""Acquisition ablations: EIG, uncertainty, random and your own acquisition on the same GP, games, budgets and seeds.

Every arm is ``ShaplEIG`` with one acquisition swapped (same surrogate, initial design, pool,
refits and read-out), run through the benchmark harness (:func:`shapleig_tasks.harness.run_benchmark`)
once per (game, arm, seed) at the largest budget; the anytime trace gives the MSE against the
exact values after every evaluation. :func:`run_ablation` returns an :class:`Ablation` holding
those per-run traces; :meth:`Ablation.table` summarises them at the requested budgets (mean MSE,
its standard error over tables x seeds, the ratio to EIG and how often an arm beat EIG on the same
table and seed), :meth:`Ablation.traces` gives mean +- SE per evaluation count, and
:meth:`Ablation.write` writes ``ablation.csv``, ``ablation.md``, ``traces.csv`` and ``mse.png``.

An acquisition is a registered name (``"eig"``, ``"uncertainty"``, ``"random"``, ``"leverage"``),
an :class:`~shapleig.design.acquisition.Acquisition` instance, or (:func:`load_acquisition`, the
command line) ``"module:Class"`` / ``"path/to/file.py:Class"`` naming a subclass.

    shapleig ablate --tasks wvg-7 soug-8 --budgets 2p 4p --seeds 5 \
        --acquisitions eig uncertainty random my_acquisitions.py:LargestFirst --out ablation/

Example:
    >>> from shapleig_tasks.ablation import run_ablation
    >>> ab = run_ablation(["wvg-7"], ["eig", "random"], ["2p"], 2, options={"refit": "never"})
    >>> t = ab.table()
    >>> t[["game", "budget", "acquisition", "runs"]].values.tolist()
    [['wvg-7', 14, 'eig', 2], ['wvg-7', 14, 'random', 2]]
    >>> bool((t["mse"] > 0).all()) and list(t.columns[-4:])
    ['mse', 'se', 'ratio_to_eig', 'wins_vs_eig']
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from shapleig.design.acquisition import Acquisition, acquisition_name, check_acquisition, make_acquisition
from shapleig.design.loop import min_budget
from shapleig_tasks import harness
from shapleig_tasks.catalog import Task, resolve_tasks
from shapleig_tasks.methods import MethodSpec

if TYPE_CHECKING:  # matplotlib is imported when the plot is drawn
    from matplotlib.figure import Figure

DEFAULT_ACQUISITIONS = ("eig", "uncertainty", "random")
# the registry's design-loop arm of each built-in acquisition (their labels in `shapleig run` tables)
_REGISTERED_ARMS = {"eig": "shapleig", "uncertainty": "shapleig-uncertainty", "random": "shapleig-random"}


# -- acquisitions from text ---------------------------------------------------------------------

def load_acquisition(spec: str | Acquisition) -> Acquisition:
    """An acquisition object from a registered name, ``"module:Class"`` or ``"path/to/file.py:Class"``.

    The class must derive from :class:`~shapleig.design.acquisition.Acquisition` and be
    constructible without arguments (an instance named by ``module:attribute`` is used as it is).
    A file is imported once per content under a private module name and pickled by value, so
    parallel workers (``n_jobs > 1``) need not import it.

    Args:
        spec: the name or reference, or an instance (returned as it is).

    Returns:
        The :class:`Acquisition`.

    Raises:
        ValueError: an unknown name, a missing module, file or attribute, or an object that is not
            an Acquisition subclass (each message names the spec).
    """
    if isinstance(spec, Acquisition):
        return spec
    text = str(spec).strip()
    if ":" not in text:
        try:
            return make_acquisition(text)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{exc} (or write module:Class or path/to/file.py:Class)") from None
    where, _, attr = text.rpartition(":")
    if not where or not attr.isidentifier():
        raise ValueError(f"acquisition {text!r}: write module:Class or path/to/file.py:Class")
    module = _import_file(where, text) if where.endswith(".py") else _import_module(where, text)
    if not hasattr(module, attr):
        raise ValueError(f"acquisition {text!r}: {where} has no attribute {attr!r}")
    obj = getattr(module, attr)
    if isinstance(obj, Acquisition):
        return obj
    if not (isinstance(obj, type) and issubclass(obj, Acquisition)):
        raise ValueError(f"acquisition {text!r}: {attr} is not a subclass of shapleig.design.acquisition."
                         f"Acquisition (got {type(obj).__name__})")
    try:
        return obj()
    except TypeError as exc:
        raise ValueError(f"acquisition {text!r}: {attr}() failed ({exc}); an acquisition given by name "
                         f"must be constructible without arguments") from exc


def _import_module(name: str, spec: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ValueError(f"acquisition {spec!r}: cannot import module {name!r} ({exc})") from exc
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module code: named, not raw
        raise ValueError(f"acquisition {spec!r}: importing module {name!r} failed: {_import_failure(exc)}") from exc


def _import_failure(exc: BaseException) -> str:
    """What ended the import of a user's module: ``sys.exit(3)`` named as such (it would end the command)."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def _import_file(path_text: str, spec: str) -> Any:
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"acquisition {spec!r}: file {path_text} does not exist")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    name = f"_shapleig_acquisition_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ValueError(f"acquisition {spec!r}: {path_text} is not importable")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a sys.exit() in the file would end the command silently
        del sys.modules[name]
        raise ValueError(f"acquisition {spec!r}: importing {path_text} failed: {_import_failure(exc)}") from exc
    import cloudpickle

    cloudpickle.register_pickle_by_value(module)  # workers cannot import a private module name
    return module


# -- arms -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Arm:
    """One acquisition of the ablation and the harness method that runs it.

    Args:
        label: the acquisition's name in tables and plots.
        acquisition: a registered name or an :class:`Acquisition` instance.
        spec: the harness method (``shapleig`` with that acquisition and the shared options).
    """

    label: str
    acquisition: str | Acquisition
    spec: MethodSpec


def make_arm(acquisition: str | Acquisition, options: Mapping[str, Any] | None = None) -> Arm:
    """The ablation arm of ``acquisition``: ``ShaplEIG(acquisition=..., **options)`` as a harness method.

    The built-in names run as the registry's arms (``shapleig``, ``shapleig-uncertainty``,
    ``shapleig-random``); any other acquisition runs as a method named ``shapleig-<name>`` whose
    factory builds ``ShaplEIG`` with the object.

    Args:
        acquisition: a name, ``module:Class``, ``file.py:Class`` or an instance.
        options: ShaplEIG options shared by every arm (``refit``, ``pool_size``, ...); not
            ``acquisition``.

    Returns:
        The :class:`Arm`.
    """
    options = dict(options or {})
    if "acquisition" in options:
        raise ValueError("options must not set the acquisition: list it among the acquisitions instead")
    acq = load_acquisition(acquisition) if not (isinstance(acquisition, str) and _is_registered(acquisition)) \
        else check_acquisition(acquisition)
    name = acquisition_name(acq)
    if isinstance(acq, str) and acq in _REGISTERED_ARMS:
        return Arm(name, acq, MethodSpec(_REGISTERED_ARMS[acq], options))
    factory = functools.partial(_shapleig, acq)
    return Arm(name, acq, MethodSpec(f"shapleig-{name}", options, factory=factory, anytime=True))


def _is_registered(text: str) -> bool:
    try:
        check_acquisition(text)
    except (ValueError, TypeError):
        return False
    return True


def _shapleig(acquisition: str | Acquisition, **options: Any) -> Any:
    from shapleig.design.estimators import ShaplEIG

    return ShaplEIG.from_options(acquisition=acquisition, **options)


def make_arms(acquisitions: Iterable[str | Acquisition], options: Mapping[str, Any] | None = None) -> list[Arm]:
    """:func:`make_arm` for each acquisition; two arms with the same name are refused.

    Args:
        acquisitions: names, references or instances.
        options: the shared ShaplEIG options.

    Returns:
        The arms, in the order given.
    """
    arms = [make_arm(a, options) for a in acquisitions]
    if not arms:
        raise ValueError(f"no acquisitions given; e.g. {' '.join(DEFAULT_ACQUISITIONS)}")
    labels = [a.label for a in arms]
    dupes = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dupes:
        raise ValueError(f"acquisitions named more than once: {', '.join(dupes)} (give a subclass its own "
                         f"name = '...' to compare two variants)")
    for arm in arms:
        arm.spec.build()  # the options are validated before any evaluation
    return arms


# -- running --------------------------------------------------------------------------------------

@dataclass
class Ablation:
    """The runs of an acquisition ablation and their summaries.

    Args:
        runs: one row per (task, arm, seed, budget): ``game`` (the task's group), ``task``, ``p``,
            ``acquisition``, ``seed``, ``budget`` (every count from p + 2 to the largest budget),
            ``evaluations`` (spent: the budget unless the candidate pool ran out first), ``mse``.
        budgets: per task, the requested budgets as ``(spec, evaluations)``.
        arms: the arms, in order.
    """

    runs: pd.DataFrame
    budgets: dict[str, list[tuple[str, int]]]
    arms: list[Arm] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        """The acquisitions' names, in the order given."""
        return [a.label for a in self.arms]

    def table(self) -> pd.DataFrame:
        """Mean MSE and standard error per (game, budget, acquisition) at the requested budgets.

        Columns: ``game``, ``p``, ``budget_spec``, ``budget``, ``acquisition``, ``runs`` (tables x
        seeds), ``mse``, ``se`` (sample std / sqrt(runs); 0 for one run), ``ratio_to_eig`` (mean MSE
        over EIG's; NaN without an EIG arm) and ``wins_vs_eig`` (share of the same (table, seed)
        runs with a lower MSE than EIG's; NaN for EIG itself and without an EIG arm).

        Returns:
            The table, ordered by game, budget and the arms' order.
        """
        rows = []
        for task, budgets in self.budgets.items():
            sub = self.runs[self.runs["task"] == task]
            for spec, n in budgets:
                at = sub[sub["budget"] == n].assign(budget_spec=spec)
                rows.append(at)
        at = pd.concat(rows, ignore_index=True)
        eig = at[at["acquisition"] == "eig"].set_index(["task", "budget", "seed"])["mse"]
        at["beats_eig"] = [
            float(m < eig.get((t, b, s), math.nan)) if (t, b, s) in eig.index else math.nan
            for t, b, s, m in zip(at["task"], at["budget"], at["seed"], at["mse"])]
        g = at.groupby(["game", "p", "budget_spec", "budget", "acquisition"], sort=False)
        out = g.agg(runs=("mse", "size"), mse=("mse", "mean"), sd=("mse", "std"),
                    wins_vs_eig=("beats_eig", "mean")).reset_index()
        out["se"] = out["sd"].fillna(0.0) / np.sqrt(out["runs"])
        out.loc[out["acquisition"] == "eig", "wins_vs_eig"] = math.nan  # EIG against itself says nothing
        base = out[out["acquisition"] == "eig"].set_index(["game", "budget"])["mse"]
        out["ratio_to_eig"] = [base.get((gm, b), math.nan) for gm, b in zip(out["game"], out["budget"])]
        out["ratio_to_eig"] = out["mse"] / out["ratio_to_eig"]
        order = {lab: i for i, lab in enumerate(self.labels)}
        out = out.sort_values(["game", "budget"], kind="stable")
        out = out.sort_values(["game", "budget", "acquisition"], key=lambda c: c.map(order) if c.name ==
                              "acquisition" else c, kind="stable")
        return out[["game", "p", "budget_spec", "budget", "acquisition", "runs", "mse", "se", "ratio_to_eig",
                    "wins_vs_eig"]].reset_index(drop=True)

    def traces(self) -> pd.DataFrame:
        """Mean MSE +- SE over tables x seeds per (game, acquisition, evaluations): the anytime traces.

        ``evaluations`` is the budget (the run's evaluations equal it unless its pool ran out).

        Returns:
            Columns ``game``, ``p``, ``acquisition``, ``evaluations``, ``runs``, ``mse``, ``se``.
        """
        g = self.runs.groupby(["game", "p", "acquisition", "budget"], sort=True)
        out = g["mse"].agg(runs="size", mse="mean", sd="std").reset_index().rename(columns={"budget": "evaluations"})
        out["se"] = out["sd"].fillna(0.0) / np.sqrt(out["runs"])
        return out[["game", "p", "acquisition", "evaluations", "runs", "mse", "se"]]

    def markdown(self) -> str:
        """:meth:`table` as a markdown table, MSE written ``mean ± SE``.

        Returns:
            The markdown text.
        """
        t = self.table()
        head = "| game | p | budget | acquisition | runs | MSE ± SE | ratio to EIG | wins vs EIG |"
        lines = [head, "|" + "---|" * 8]
        for r in t.itertuples(index=False):
            ratio = "" if math.isnan(r.ratio_to_eig) else f"{r.ratio_to_eig:.3g}"
            wins = "" if math.isnan(r.wins_vs_eig) or r.acquisition == "eig" else f"{r.wins_vs_eig:.0%}"
            lines.append(f"| {r.game} | {r.p} | {r.budget_spec} ({r.budget}) | {r.acquisition} | {r.runs} | "
                         f"{r.mse:.3e} ± {r.se:.1e} | {ratio} | {wins} |")
        return "\n".join(lines) + "\n"

    def plot(self, out: str | os.PathLike[str] | None = None, *, ncols: int = 3) -> Figure:
        """MSE (log) against evaluations, mean +- one SE per acquisition, one panel per game.

        The requested budgets are marked with dotted vertical lines.

        Args:
            out: a figure file to write (format from the suffix), or None.
            ncols: panels per row.

        Returns:
            The matplotlib ``Figure`` (built without pyplot).
        """
        from matplotlib import colormaps
        from matplotlib.figure import Figure

        from shapleig.explanation.plot import save_figure

        tr = self.traces()
        games = list(dict.fromkeys(tr["game"]))
        ncols = max(1, min(ncols, len(games)))
        nrows = math.ceil(len(games) / ncols)
        fig = Figure(figsize=(max(4.6 * ncols, 6.4), 3.6 * nrows + 0.4), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False)
        colors = {lab: colormaps["tab10"](i % 10) for i, lab in enumerate(self.labels)}
        for ax, game in zip(axes.flat, games):
            sub = tr[tr["game"] == game]
            for lab in self.labels:
                m = sub[sub["acquisition"] == lab]
                if m.empty:
                    continue
                x, y, se = m["evaluations"].to_numpy(), m["mse"].to_numpy(), m["se"].to_numpy()
                ax.plot(x, y, "-", color=colors[lab], label=lab, lw=1.4)
                ax.fill_between(x, np.maximum(y - se, y * 1e-3), y + se, color=colors[lab], alpha=0.18, lw=0)
            tasks = self.runs.loc[self.runs["game"] == game, "task"].unique()
            for n in sorted({n for t in tasks for _, n in self.budgets[t]}):
                ax.axvline(n, color="0.5", ls=":", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlabel("evaluations")
            ax.set_ylabel("MSE")
            ax.set_title(f"{game} (p = {int(sub['p'].iloc[0])})", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
        for ax in list(axes.flat)[len(games):]:
            ax.set_visible(False)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8,
                   frameon=False)
        fig.suptitle("acquisition ablation: MSE vs evaluations (mean ± SE over tables x seeds)", fontsize=11)
        return save_figure(fig, out)

    def write(self, out_dir: str | os.PathLike[str], *, plot: bool = True) -> dict[str, Path]:
        """Write ``ablation.csv``, ``ablation.md``, ``traces.csv``, ``runs.csv`` and (``plot``) ``mse.png``.

        Args:
            out_dir: the folder (created).
            plot: also draw the figure.

        Returns:
            The written paths by kind (``table``, ``markdown``, ``traces``, ``runs``, ``plot``).
        """
        paths = output_paths(out_dir, plot=plot)
        paths["table"].parent.mkdir(parents=True, exist_ok=True)
        self.table().to_csv(paths["table"], index=False)
        paths["markdown"].write_text(self.markdown())
        self.traces().to_csv(paths["traces"], index=False)
        self.runs.to_csv(paths["runs"], index=False)
        if plot:
            self.plot(paths["plot"])
        return paths


def output_paths(out_dir: str | os.PathLike[str], *, plot: bool = True) -> dict[str, Path]:
    """The files :meth:`Ablation.write` writes in ``out_dir``, by kind (the command line checks each first).

    Args:
        out_dir: the output folder.
        plot: include the figure ``mse.png``.

    Returns:
        ``{"table": ablation.csv, "markdown": ablation.md, "traces": traces.csv, "runs": runs.csv[, "plot": mse.png]}``.
    """
    folder = Path(out_dir)
    paths = {"table": folder / "ablation.csv", "markdown": folder / "ablation.md",
             "traces": folder / "traces.csv", "runs": folder / "runs.csv"}
    if plot:
        paths["plot"] = folder / "mse.png"
    return paths


def _task_budgets(task: Task, p: int, specs: list[str]) -> list[tuple[str, int]]:
    """The requested budgets of ``task`` as (spec, evaluations), each at least the loop's minimum."""
    out: list[tuple[str, int]] = []
    for spec in specs:
        n = harness.resolve_budget(spec, p)
        if n < min_budget(p):
            raise ValueError(f"budget {spec} is {n} for task {task.name!r} (p = {p}); the design loop needs at "
                             f"least p + 2 = {min_budget(p)}")
        if p <= 62 and n > (1 << p):
            raise ValueError(f"budget {spec} = {n} exceeds the 2^{p} = {1 << p} coalitions of task {task.name!r}")
        if n not in [m for _, m in out]:
            out.append((spec, n))
    return out


def run_ablation(
    tasks: Sequence[str | Task],
    acquisitions: Sequence[str | Acquisition] = DEFAULT_ACQUISITIONS,
    budgets: Sequence[str | int] = ("2p", "4p", "8p"),
    seeds: Sequence[str | int] | int = 3,
    *,
    options: Mapping[str, Any] | None = None,
    n_jobs: int = 1,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> Ablation:
    """Run every acquisition on every task and seed up to the largest budget; keep the whole traces.

    Everything is validated (tasks, acquisitions, options, budgets, seeds) before any evaluation.
    Each (task, arm, seed) is one harness run at the task's largest budget; its trace gives the
    MSE after every evaluation from p + 1 on (so the traces cost no extra evaluations).

    Args:
        tasks: task names (``shapleig tasks``; a suite counts its tables as one game).
        acquisitions: names, ``module:Class`` / ``file.py:Class`` references or instances.
        budgets: ``"2p"`` style or integers; the table reports these, the traces go up to the largest.
        seeds: a count or a list (as ``shapleig run --seeds``).
        options: ShaplEIG options shared by every arm (``{"refit": "never"}``).
        n_jobs: harness workers.
        progress: the harness's progress bars.
        log: a callable for the harness's notes.

    Returns:
        The :class:`Ablation`.

    Raises:
        ValueError: bad input, naming it.
        AcquisitionError: an acquisition returned scores that break the rules of
            :meth:`~shapleig.design.acquisition.Acquisition.score` (naming its class).
    """
    arms = make_arms(acquisitions, options)
    task_list = resolve_tasks(tasks)
    specs = harness.parse_budgets(budgets)
    seed_list = harness.parse_seeds(seeds)
    per_task: dict[str, list[tuple[str, int]]] = {}
    players: dict[str, int] = {}
    for task in task_list:
        p = int(task.game().n_players)
        players[task.name] = p
        per_task[task.name] = _task_budgets(task, p, specs)
    by_label = {arm.spec.label: arm.label for arm in arms}
    # the user's acquisitions run first: one whose scores break the rules (AcquisitionError at its
    # first selection) ends the ablation before the built-in arms have spent their runs
    specs_first = [arm.spec for arm in sorted(arms, key=lambda arm: isinstance(arm.acquisition, str))]
    frames = []
    for task in task_list:
        p, largest = players[task.name], max(n for _, n in per_task[task.name])
        grid = [str(n) for n in range(min_budget(p), largest + 1)]  # every count a run can stop at
        df = harness.run_benchmark([task], specs_first, grid, seed_list, n_jobs=n_jobs,
                                   progress=progress, log=log, skip_small=True)
        frames.append(df)
    runs = pd.concat(frames, ignore_index=True)
    failed = runs[runs["error"].fillna("") != ""]
    if len(failed):
        raise RuntimeError(f"{len(failed)} runs failed; first: {failed['error'].iloc[0].splitlines()[0]}")
    runs = pd.DataFrame({
        "game": runs["group"], "task": runs["task"], "p": runs["p"].astype(int),
        "acquisition": runs["method"].map(by_label), "seed": runs["seed"].astype(int),
        "budget": runs["budget"].astype(int), "evaluations": runs["evaluations"].astype(int),
        "mse": runs["mse"].astype(float)})
    return Ablation(runs, per_task, arms)


__all__ = ["DEFAULT_ACQUISITIONS", "Ablation", "Arm", "load_acquisition", "make_arm", "make_arms", "output_paths",
           "run_ablation"]
