"""Are the error bars honest? ShaplEIG's final read-out on four benchmarks, each budget its own run.

Coverage is a property of what a user gets back, so every budget is a separate run (no anytime
trace: the final read-out of a run stopped at 2p is not the trace of a run at 8p). Benchmarks
(``--sets``):

- ``public``: the first ``--tables`` tables of the nine public suites (docs/games.md §7);
- ``suite-b``: the first ``--tables`` tables of the eight suite-B folders (docs/games.md §7);
- ``families``: ``--instances`` games of every generality family (``tasks/generality.py``, the
  threshold family included);
- ``threshold``: the six-player threshold game ``1[z @ [3, 1, 0.5, 2, 0, 1.5] > 4]`` at budgets 24
  and 40, seeds 0-9 (issue 35's hostile example).

Tables need the shared folder (``SHAPLEIG_SHARED``, else ``../shared`` beside the checkout).
Methods are ShaplEIG configurations, ``LABEL=JSON`` options (default: ``default={}``, ``before`` = the
default without the rough read-out family and ``previous`` = the read-out before issue 35). Per
(benchmark, suite, budget) cell it prints the 95%
coverage pooled over players, the RMS of error/std (1: honest and sharp), the share of runs with
some |error|/std > 4 ("confidently wrong"), the gm-MSE and, against ``--compare``, the gm of the
run-for-run MSE ratios and the ratio of total seconds; then one summary line per benchmark.

    SHAPLEIG_SHARED=../shared python scripts/studies/benchmark_calibration.py --jobs 2 --out calibration.parquet
    python scripts/studies/benchmark_calibration.py --from calibration.parquet          # report again
    python scripts/studies/benchmark_calibration.py --sets threshold --methods default={} --quick
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from shapleig_tasks.catalog import SUITE_B  # noqa: E402
from shapleig_tasks.metrics import geometric_mean, mse, standardized_errors  # noqa: E402

PUBLIC = ("vit-9", "vit-16", "resnet-14", "bike-dv-10", "bike-dv-10-rf", "california-dv-10", "california-le-8",
          "bike-ge-12", "adult-fs-14")
SETS = ("public", "suite-b", "families", "threshold")
Z95 = 1.959963984540054
CONFIDENTLY_WRONG = 4.0  # |error| / std beyond this: a run is "confidently wrong"
THRESHOLD_WEIGHTS = (3.0, 1.0, 0.5, 2.0, 0.0, 1.5)
THRESHOLD_BUDGETS = (24, 40)
THRESHOLD_SEEDS = 10
# the read-out before issue 35: the fitted surrogate alone, the design never probing
PREVIOUS = {"structures": [], "probe_degenerate": False}
# the default before the rough read-out family (the same design: identical estimates run for run)
BEFORE = {"structures": ["kernels", "graded", "additive"]}
KEY = ["set", "suite", "game", "budget", "seed"]  # one run of one method


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--methods", nargs="+", default=None, metavar="LABEL=JSON",
                    help='ShaplEIG configurations (default: default={}, before=<without the rough family>, '
                         'previous=<the read-out before issue 35>)')
    ap.add_argument("--compare", default="previous", help="the label the others are compared with, run for run")
    ap.add_argument("--suites", nargs="+", default=None,
                    help="only these suites / families (names as printed; default: all of each benchmark)")
    ap.add_argument("--tables", type=int, default=3, help="tables per suite (default 3)")
    ap.add_argument("--instances", type=int, default=3, help="games per generality family (default 3)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..S-1 (default 3; the threshold game: 10)")
    ap.add_argument("--budgets", nargs="+", type=int, default=[2, 4, 8], help="multiples of p (default 2 4 8)")
    ap.add_argument("--rtol", type=float, default=None,
                    help="stop each run by its interval: every std <= RTOL |v(N) - v(empty)| (the budgets are then caps); "
                         "the report adds the share of stopped runs whose every |error| <= 1.96 RTOL |v(N) - v(empty)|")
    ap.add_argument("--quick", action="store_true", help="one table or game per suite, one seed, budgets 2p and 4p")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="benchmark_calibration.parquet")
    ap.add_argument("--from", dest="reuse", default=None, help="print the report of an existing results table")
    args = ap.parse_args(argv)
    if args.quick:
        args.tables, args.instances, args.seeds, args.budgets = 1, 1, 1, [2, 4]
    return args


def parse_methods(specs: list[str] | None) -> dict[str, dict[str, Any]]:
    """``{label: options}`` from ``LABEL=JSON`` strings (the default pair when None).

    Args:
        specs: the ``--methods`` strings, or None.

    Returns:
        ``{label: ShaplEIG options}``.
    """
    if specs is None:
        return {"default": {}, "before": dict(BEFORE), "previous": dict(PREVIOUS)}
    out = {}
    for spec in specs:
        label, sep, text = spec.partition("=")
        if not sep or not label:
            raise SystemExit(f"--methods takes LABEL=JSON, got {spec!r}")
        if label == "previous" and not text.strip():
            out[label] = dict(PREVIOUS)
            continue
        try:
            options = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"--methods {label}: the options are not JSON ({exc})") from exc
        if not isinstance(options, dict):
            raise SystemExit(f"--methods {label}: the options must be a JSON object, got {text!r}")
        out[label] = options
    return out


def game_specs(sets: list[str], tables: int, instances: int,
               only: list[str] | None = None) -> list[tuple[str, str, str, tuple]]:
    """``(set, suite, game name, how to build it)`` for every game of the chosen benchmarks (``only``: these suites)."""
    out = []
    if "public" in sets or "suite-b" in sets:
        from shapleig_tasks.catalog import suite_files
        from shapleig_tasks.tables import default_tables_dir

        root = default_tables_dir()
        for set_name, suites in (("public", PUBLIC), ("suite-b", tuple(SUITE_B))):
            if set_name in sets:
                for suite in suites:
                    for spec in suite_files(suite, root)[:tables]:
                        out.append((set_name, suite, spec.name, ("table", str(spec.path))))
    if "families" in sets:
        from shapleig_tasks.generality import FAMILIES, family_sizes

        for family in FAMILIES:
            sizes = family_sizes(family)
            for k in range(instances):
                out.append(("families", family, f"{family}-{sizes[k % len(sizes)]}/i={k}", ("family", family, k)))
    if "threshold" in sets:
        out.append(("threshold", "threshold-6", "threshold-6", ("threshold",)))
    return [g for g in out if only is None or g[1] in only]


def make_game(how: tuple) -> Any:
    """The game (a value table, enumerated once) and its exact Shapley values."""
    if how[0] == "table":
        from shapleig_tasks.tables import TableGame

        game = TableGame.from_npz(how[1])
    elif how[0] == "family":
        from shapleig_tasks.generality import make_game as family_game

        game = family_game(how[1], how[2])
    else:
        from shapleig.games.coalitions import all_coalitions
        from shapleig_tasks.tables import TableGame

        Z = all_coalitions(len(THRESHOLD_WEIGHTS))
        game = TableGame(Z, (Z @ np.array(THRESHOLD_WEIGHTS) > 4.0).astype(np.float64), name="threshold-6")
    exact_of = getattr(game, "noiseless", game)  # the noisy family: the noiseless game's values
    return game, np.asarray(exact_of.exact_values(), dtype=np.float64)


def jobs(args: argparse.Namespace, methods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for set_name, suite, name, how in game_specs(args.sets, args.tables, args.instances, args.suites):
        threshold = how[0] == "threshold"
        budgets = THRESHOLD_BUDGETS if threshold else args.budgets
        seeds = THRESHOLD_SEEDS if threshold else args.seeds
        for label, options in methods.items():
            for b in budgets:
                for seed in range(seeds):
                    out.append({"set": set_name, "suite": suite, "game": name, "how": how, "method": label,
                                "options": options if args.rtol is None else {**options, "rtol": args.rtol},
                                "budget_spec": str(b) if threshold else f"{b}p", "multiple": None if threshold else b,
                                "fixed": b if threshold else None, "seed": seed})
    return out


def job_key(job: dict[str, Any]) -> str:
    """One run's identity in the checkpoint: what it runs with which options (rows carry the same fields)."""
    options = job["options"] if isinstance(job["options"], str) else json.dumps(job["options"], sort_keys=True)
    return json.dumps([job[k] for k in ("set", "suite", "game", "method", "budget_spec", "seed")] + [options])


def load_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Rows of an interrupted campaign by run, the last line dropped if it was cut mid-write."""
    if not path.exists():
        return {}
    done = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        done[job_key(row)] = row
    return done


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One run: the estimate, its std, the exact values, seconds and the read-out's diagnostics."""
    import shapleig

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    game, exact = make_game(job["how"])
    p = int(game.n_players)
    budget = job["fixed"] if job["fixed"] is not None else job["multiple"] * p
    row = {k: job[k] for k in ("set", "suite", "game", "method", "budget_spec", "seed")}
    row.update({"p": p, "budget": int(budget), "error": "", "options": json.dumps(job["options"], sort_keys=True)})
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = shapleig.ShaplEIG.from_options(**job["options"]).estimate(game, int(budget), seed=int(job["seed"]))
    except Exception as exc:  # recorded, not raised: one failed run must not stop a campaign
        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
        return row
    row.update({"wall_s": time.perf_counter() - start, "values": np.asarray(est.values, float).tolist(),
                "std": np.asarray(est.std, float).tolist(), "exact": exact.tolist(),
                "degenerate": bool(est.info.get("degenerate_evidence", False)),
                "stopped_by_tol": bool(est.info.get("target_reached", False)),
                "tol": float(est.info.get("target_threshold") or np.nan),
                "probe_steps": int(est.info.get("probe_steps", 0) or 0)})
    return row


def run_metrics(df: pd.DataFrame) -> pd.DataFrame:
    """Per run: MSE, covered players, players, summed (error/std)^2, max |error|/std, seconds.

    A zero std counts as covering only a zero error (|error|/std is then 0, else infinite).

    Args:
        df: results rows without errors (``values``, ``std``, ``exact`` lists).

    Returns:
        one row per run with ``mse``, ``covered``, ``players``, ``z2``, ``max_z``, ``wall_s`` and the keys.
    """
    rows = []
    for _, r in df.iterrows():
        v, s, e = (np.asarray(r[c], dtype=np.float64) for c in ("values", "std", "exact"))
        z = standardized_errors(v, s, e)
        rows.append({"set": r["set"], "suite": r["suite"], "game": r["game"], "method": r["method"],
                     "budget": r["budget_spec"], "seed": r["seed"], "mse": mse(v, e),
                     "covered": int(np.sum(z <= Z95)), "players": int(v.size), "z2": float(np.sum(np.minimum(z, 1e150) ** 2)),
                     "max_z": float(np.max(z)), "wall_s": float(r["wall_s"])})
    return pd.DataFrame(rows)


gm = geometric_mean


def cell_table(m: pd.DataFrame, method: str, compare: str | None) -> pd.DataFrame:
    """One row per (benchmark, suite, budget): coverage, RMS(error/std), confidently wrong, gm-MSE and ratios.

    Args:
        m: :func:`run_metrics` rows of every method.
        method: the method reported.
        compare: the method it is compared with run for run (None: no comparison).

    Returns:
        the cell table.
    """
    mine = m[m.method == method].set_index(KEY)
    other = m[m.method == compare].set_index(KEY) if compare is not None and compare != method else None
    rows = []
    for (set_name, suite, budget), cell in mine.groupby(level=["set", "suite", "budget"]):
        row = {"set": set_name, "suite": suite, "budget": budget, "runs": len(cell),
               "coverage": cell.covered.sum() / cell.players.sum(), "rms_z": float(np.sqrt(cell.z2.sum() / cell.players.sum())),
               "wrong": float((cell.max_z > CONFIDENTLY_WRONG).mean()), "gm_mse": gm(cell.mse), "s/run": cell.wall_s.mean()}
        if other is not None:
            both = cell.join(other[["mse", "wall_s"]].add_suffix("_c"), how="inner")
            if len(both):
                row["mse_ratio"] = gm(np.maximum(both.mse, 1e-300) / np.maximum(both.mse_c, 1e-300))
                row["time_ratio"] = float(both.wall_s.sum() / both.wall_s_c.sum())
        rows.append(row)
    return pd.DataFrame(rows)


def summary_lines(m: pd.DataFrame, cells: pd.DataFrame, method: str) -> list[str]:
    """One line per benchmark: pooled coverage, lowest cell, RMS in [0.5, 1.5], above 2.5, confidently wrong."""
    lines = []
    runs = m[m.method == method]
    for set_name, c in cells.groupby("set", sort=False):
        r = runs[runs.set == set_name]
        low = c.loc[c.coverage.idxmin()]
        line = (f"[{set_name}] coverage {r.covered.sum() / r.players.sum():.3f} pooled, lowest {low.coverage:.2f} "
                f"({low.suite} {low.budget}); RMS(error/std) in [0.5, 1.5] in {np.mean((c.rms_z >= 0.5) & (c.rms_z <= 1.5)):.0%} "
                f"of {len(c)} cells, above 2.5 in {int((c.rms_z > 2.5).sum())}; confidently wrong (|error|/std > 4) "
                f"{(r.max_z > CONFIDENTLY_WRONG).mean():.1%} of {len(r)} runs")
        if "mse_ratio" in c:
            line += (f"; MSE {gm(c.mse_ratio):.3f}x the compared method (gm of cells), cells above 1.5x: "
                     f"{int((c.mse_ratio > 1.5).sum())}, time {np.exp(np.mean(np.log(c.time_ratio))):.2f}x")
        lines.append(line)
    return lines


def tol_line(df: pd.DataFrame) -> str:
    """Of the runs stopped by their interval (``stopped_by_tol``), the share with every |error| <= 1.96 tol.

    Args:
        df: one method's results rows without errors, with ``stopped_by_tol`` and ``tol``.

    Returns:
        the line.
    """
    stopped = df[df.stopped_by_tol.astype(bool)]
    within = [bool(np.all(np.abs(np.asarray(r["values"]) - np.asarray(r["exact"])) <= Z95 * r["tol"]))
              for _, r in stopped.iterrows()]
    return (f"stopped by tol: {len(stopped)} of {len(df)} runs; every |error| <= 1.96 tol in "
            f"{np.mean(within) if within else float('nan'):.1%} of them")


def report(df: pd.DataFrame, compare: str) -> None:
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 1000)
    bad = df[df.error != ""]
    if len(bad):
        print(f"{len(bad)} runs failed; first: {bad.iloc[0]['error']}")
    m = run_metrics(df[df.error == ""])
    for method in m.method.unique():
        cells = cell_table(m, method, compare if compare in set(m.method) else None)
        print(f"\n== {method} ==")
        print(cells.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
        for line in summary_lines(m, cells, method):
            print(line)
        if "stopped_by_tol" in df and df.stopped_by_tol.any():
            print(tol_line(df[(df.error == "") & (df.method == method)]))
        threshold = m[(m.method == method) & (m.set == "threshold")]
        if len(threshold):
            print(f"threshold example: {int((threshold.covered < threshold.players).sum())} of {len(threshold)} runs "
                  f"leave a player outside its 95% interval; largest |error|/std {threshold.max_z.max():.1f}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reuse:
        report(pd.read_parquet(args.reuse), args.compare)
        return 0
    methods = parse_methods(args.methods)
    todo = jobs(args, methods)
    if not todo:
        raise SystemExit("no runs: check --sets and --suites")
    print(f"{len(todo)} runs of {len(methods)} method(s)", flush=True)
    start = time.perf_counter()
    # every finished run is appended to a checkpoint, so a killed campaign resumes where it stopped
    checkpoint = Path(str(args.out) + ".partial.jsonl")
    done = load_checkpoint(checkpoint)
    rows = [done[job_key(job)] for job in todo if job_key(job) in done]
    left = [job for job in todo if job_key(job) not in done]
    if rows:
        print(f"{len(rows)} runs taken from {checkpoint}", flush=True)
    if args.jobs == 1:
        finished = (run_one(job) for job in left)
    else:
        from joblib import Parallel, delayed

        finished = Parallel(n_jobs=args.jobs, return_as="generator_unordered")(delayed(run_one)(job) for job in left)
    with open(checkpoint, "a", encoding="utf-8") as fh:
        for i, row in enumerate(finished, 1):
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            rows.append(row)
            if i % 50 == 0:
                print(f"  {i}/{len(left)} runs, {time.perf_counter() - start:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    df.to_parquet(args.out)
    checkpoint.unlink()
    print(f"{len(df)} runs in {time.perf_counter() - start:.0f} s; wrote {args.out}")
    report(df, args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
