"""Do two checkouts give the same numbers? The GP estimators on a named subset of games and options.

Two modes.

**Fixture (``--record`` / ``--check``).** The named subset of :data:`CASES`: three synthetic games
and two shipped public tables (p = 8-14), budgets 2p and 4p, seeds 0 and 1, and the configurations
that must not move under a refactoring: the default ``ShaplEIG()``, ``ShaplEIG.published()``,
``surrogate="shared"`` / ``"ard"`` / ``"laplace"``, ``size_trend=False`` / ``True`` (``"both"`` is
the default), ``jumps=True``, ``index="BV"`` / ``"k-SII"`` / ``"FSII"``, ``calibrate="jackknife"`` /
``"gated"``, the raw noise convention, and GP+Leverage. ``--record`` saves each case's values, stds,
evaluated coalitions (bitmasks, in evaluation order) and kernel weights as JSON (floats written
exactly); ``tests/design/test_same_results.py`` replays the cases from that file and compares them
to 1e-12 relative (a fast subset in the default run, every case under ``-m slow``). ``--check``
does the same comparison from the command line. Only public names are used, so the script runs on
any checkout of the project.

    python scripts/repro/same_results.py --record tests/data/same_results.json   # on the base commit
    python scripts/repro/same_results.py --check tests/data/same_results.json    # after the change

**Suite subset (``--out`` / ``--compare``).** ``ShaplEIG()`` and ``ShaplEIG.published()`` at budget
4p (the anytime trace gives every smaller budget) on the first table of three public suites, seeds
0 and 1, saved as ``.npz``; ``--compare`` prints the largest relative difference between two runs.

    git worktree add /tmp/before <commit>
    (cd /tmp/before && PYTHONPATH=. python /path/to/scripts/repro/same_results.py --out before.npz)
    PYTHONPATH=. python scripts/repro/same_results.py --out after.npz
    python scripts/repro/same_results.py --compare before.npz after.npz      # 0 or <= 1e-12 expected
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
SUITES = ("vit-9", "california-le-8", "bike-dv-10")
SEEDS = (0, 1)
RTOL = 1e-12
# Another numeric environment (numpy/scipy/Python version, CPU architecture) reorders floating-point
# sums inside LAPACK and BLAS, and the hyperparameter optimiser, which stops within its own
# tolerance, carries such rounding into the sixth digit of a lengthscale: the CI's Python 3.12
# leg (numpy 2.5, scipy 1.18) moved values by up to 3e-8 relative and GP+Leverage's single fit by
# 7e-6. A refactoring that changes results moves them by far more, so replays elsewhere compare to
# this looser bound (the recorded environment is in the fixture's header).
FOREIGN_RTOL = 1e-4


def numeric_environment() -> dict[str, str]:
    """The versions that decide the last bits of a run: Python, numpy, scipy and the CPU architecture."""
    import platform

    import scipy

    return {"python": platform.python_version().rsplit(".", 1)[0], "numpy": np.__version__,
            "scipy": scipy.__version__, "machine": platform.machine()}


def replay_rtol(header: dict[str, Any]) -> float:
    """1e-12 when the replay runs where the fixture was recorded, :data:`FOREIGN_RTOL` elsewhere."""
    return RTOL if header.get("environment") == numeric_environment() else FOREIGN_RTOL

# -- the fixture's named subset -----------------------------------------------------------------

# name -> how to build the game: a synthetic family with its parameters, or a shipped table
GAMES: dict[str, dict[str, Any]] = {
    "soug-8": {"synthetic": "soug", "n_players": 8, "seed": 0},
    "shoe-10": {"synthetic": "shoe", "n_players": 10},
    "soug-12": {"synthetic": "soug", "n_players": 12, "seed": 1},
    "california-le-8": {"table": "tasks/data/games/CaliforniaHousing_LocalExplanation_Game/8/"
                                  "model_name=gradient_boosting_imputer=marginal_1.npz"},
    "adult-fs-14": {"table": "tasks/data/games/AdultCensus_FeatureSelection_Game/14/"
                              "model_name=gradient_boosting_1.npz"},
}
# configuration name -> (estimator, options); "published" is ShaplEIG.published(**options)
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "default": ("shapleig", {}),
    "published": ("published", {}),
    "shared": ("shapleig", {"surrogate": "shared"}),
    "ard": ("shapleig", {"surrogate": "ard"}),
    "laplace": ("shapleig", {"surrogate": "laplace"}),
    "trend-false": ("shapleig", {"size_trend": False}),
    "trend-true": ("shapleig", {"size_trend": True}),
    "jumps": ("shapleig", {"jumps": True}),
    "jackknife": ("shapleig", {"calibrate": "jackknife"}),
    "gated": ("shapleig", {"calibrate": "gated"}),
    "raw-noise": ("shapleig", {"noise_convention": "raw", "noise": 1e-4}),
    "BV": ("shapleig", {"index": "BV"}),
    "k-SII": ("shapleig", {"index": "k-SII", "max_order": 2}),
    "FSII": ("shapleig", {"index": "FSII", "max_order": 2}),
    "uncertainty-batch": ("shapleig", {"acquisition": "uncertainty", "batch_size": 3, "warm_start": True}),
    "leverage": ("leverage", {}),
}
# the interaction indices have d = p + C(p, 2) terms: the p <= 10 games keep the fixture small
_SMALL_ONLY = {"k-SII", "FSII"}
# the default test run replays these (seconds); every case runs under -m slow
_FAST = {("soug-8", name, 2, 0) for name in
         ("default", "shared", "ard", "trend-false", "trend-true", "jumps", "jackknife", "raw-noise",
          "BV", "k-SII", "leverage")}


def game_size(spec: dict[str, Any]) -> int:
    return int(spec["n_players"]) if "synthetic" in spec else int(spec["table"].split("/")[-2])


def cases() -> list[dict[str, Any]]:
    """Every case of the fixture: game, configuration, budget (as a multiple of p), seed."""
    out = []
    for game, spec in GAMES.items():
        p = game_size(spec)
        for config in CONFIGS:
            if config in _SMALL_ONLY and p > 10:
                continue
            for mult in (2, 4):
                for seed in (0, 1):
                    out.append({"id": f"{game}|{config}|{mult}p|seed={seed}", "game": game, "config": config,
                                "budget": mult * p, "seed": seed, "fast": (game, config, mult, seed) in _FAST})
    return out


def make_game(name: str) -> Any:
    spec = dict(GAMES[name])
    if "table" in spec:
        from shapleig_tasks.tables import TableGame

        return TableGame.from_npz(REPO / spec["table"], name=name)
    from shapleig_tasks.synthetic import make_synthetic_game

    return make_synthetic_game(spec.pop("synthetic"), **spec)


def make_estimator(config: str) -> Any:
    import shapleig

    kind, options = CONFIGS[config]
    if kind == "published":
        return shapleig.ShaplEIG.published(**options)
    if kind == "leverage":
        return shapleig.GPLeverage(**options)
    return shapleig.ShaplEIG(**options)


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Run one case; its values, stds, evaluated coalitions (bitmasks in order) and kernel weights."""
    import shapleig

    game = make_game(case["game"])
    budgeted = shapleig.BudgetedGame(game, case["budget"])
    est = make_estimator(case["config"]).estimate(budgeted, case["budget"], seed=case["seed"])
    Z, _ = budgeted.history()
    weights = est.info.get("kernel_weights") or {}
    return {
        "values": [float(v) for v in est.values],
        "std": [float(v) for v in est.std],
        "coalitions": [int(c) for c in shapleig.to_bitmask(Z)],
        "kernel_weights": {str(k): float(v) for k, v in weights.items()},
    }


def differences(recorded: dict[str, Any], now: dict[str, Any], rtol: float = RTOL) -> list[str]:
    """What differs between a recorded case and a rerun (empty: the same to ``rtol`` relative)."""
    problems = []
    if recorded["coalitions"] != now["coalitions"]:
        problems.append("evaluated coalitions differ")
    for key in ("values", "std"):
        a, b = np.asarray(recorded[key]), np.asarray(now[key])
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} != {b.shape}")
            continue
        scale = max(float(np.abs(a).max(initial=0.0)), 1e-300)
        rel = float(np.abs(a - b).max(initial=0.0)) / scale
        if rel > rtol:
            problems.append(f"{key}: relative difference {rel:.3g}")
    if set(recorded["kernel_weights"]) != set(now["kernel_weights"]):
        problems.append(f"kernel names {sorted(recorded['kernel_weights'])} != {sorted(now['kernel_weights'])}")
    else:
        for name, w in recorded["kernel_weights"].items():
            if abs(w - now["kernel_weights"][name]) > rtol * max(abs(w), 1e-300) and abs(w) > 1e-300:
                problems.append(f"kernel weight {name}: {w!r} != {now['kernel_weights'][name]!r}")
    return problems


def record(path: str, fast_only: bool = False) -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    out = []
    for case in cases():
        if fast_only and not case["fast"]:
            continue
        start = time.perf_counter()
        out.append({**case, **run_case(case)})
        print(f"{case['id']}: {time.perf_counter() - start:.1f} s", flush=True)
    write_fixture(path, commit, out)


def write_fixture(path: str, commit: str, recorded: list[dict[str, Any]]) -> None:
    """The fixture as JSON, one case per line (floats written exactly: ``repr`` round-trips)."""
    head = json.dumps({"about": "scripts/repro/same_results.py --record: the GP estimators on a named subset",
                       "commit": commit, "rtol": RTOL, "environment": numeric_environment()})
    lines = ",\n".join(json.dumps(case, separators=(",", ":")) for case in recorded)
    Path(path).write_text(f'{head[:-1]}, "cases": [\n{lines}\n]}}\n')


def check(path: str, fast_only: bool = False) -> int:
    doc = json.loads(Path(path).read_text())
    rtol = replay_rtol(doc)
    print(f"comparing to {rtol:g} relative (recorded in {doc.get('environment')}, now {numeric_environment()})")
    worst_cases = 0
    for case in doc["cases"]:
        if fast_only and not case["fast"]:
            continue
        problems = differences(case, run_case(case), rtol)
        print(f"{case['id']}: {'same' if not problems else '; '.join(problems)}", flush=True)
        worst_cases += bool(problems)
    print(f"{worst_cases} case(s) differ")
    return worst_cases


# -- the suite subset -------------------------------------------------------------------------

def run(out: str) -> None:
    import shapleig
    from shapleig_tasks.catalog import resolve_task

    saved: dict[str, np.ndarray] = {}
    for suite in SUITES:
        task = resolve_task(suite)[0]
        for seed in SEEDS:
            for label, est in (("default", shapleig.ShaplEIG()), ("published", shapleig.ShaplEIG.published())):
                game = task.factory()
                result = est.estimate(game, 4 * game.n_players, seed=seed)
                key = f"{suite}|{seed}|{label}"
                saved[f"{key}|values"], saved[f"{key}|std"] = result.values, result.std
                for evaluations, values in result.trace:
                    saved[f"{key}|trace{evaluations}"] = values
                print(key, flush=True)
    np.savez(out, **saved)


def compare(before: str, after: str) -> float:
    a, b = np.load(before), np.load(after)
    if set(a.files) != set(b.files):
        sys.exit(f"different entries: {sorted(set(a.files) ^ set(b.files))[:10]}")
    worst = 0.0
    for key in sorted(a.files):
        rel = float(np.abs(a[key] - b[key]).max() / max(np.abs(a[key]).max(), 1e-300))
        worst = max(worst, rel)
        if rel > RTOL:
            print(f"{key}: relative difference {rel:.3g}")
    print(f"{len(a.files)} arrays compared; largest relative difference {worst:.3g}")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", metavar="JSON", help="run the fixture's cases and save them here")
    parser.add_argument("--check", metavar="JSON", help="rerun a saved fixture and compare (exit 1 if any differs)")
    parser.add_argument("--fast", action="store_true", help="with --record / --check: the fast cases only")
    parser.add_argument("--out", help="run the suite subset and save it here (.npz)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two saved suite runs")
    args = parser.parse_args()
    if args.record:
        record(args.record, args.fast)
    elif args.check:
        sys.exit(1 if check(args.check, args.fast) else 0)
    elif args.compare:
        compare(*args.compare)
    elif args.out:
        run(args.out)
    else:
        parser.error("give --record, --check, --out or --compare")


if __name__ == "__main__":
    main()
