"""Archives the current default ShaplEIG chooses, saved for read-out studies (issue 29, phase 1).

For every task (public table suites: tables 1, 10, 11; generality families: instances 0-2) and
seed, the default ``DesignLoop`` runs to 8p. At 2p and 4p (anytime) and at 8p (after the final
refit) it records the archive prefix (X, y), the default's estimate and std at that step (what the
harness reports) and the seconds spent so far. One ``.npz`` per (task, seed) in ``--out``; existing
files are skipped, so the script can be stopped and rerun.

    python scripts/studies/graded_archives.py --out /work/notes/w29-archives            # everything
    python scripts/studies/graded_archives.py --tasks pairwise vit-9 --seeds 0,1         # a subset

Task names: a generality family (``pairwise`` ... ``ensemble``: instances 0-2) or a public suite
(``vit-9`` ...: tables 1, 10, 11; needs the shared tables for 10 and 11).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SUITES = ("vit-9", "vit-16", "resnet-14", "bike-dv-10", "bike-dv-10-rf", "california-dv-10",
          "california-le-8", "bike-ge-12", "adult-fs-14")
TABLE_SEEDS = (1, 10, 11)
MULTIPLES = (2, 4, 8)


def task_games(name: str, instances: int = 3) -> list[tuple[str, str, object]]:
    """``(task name, group, game)`` for a family (instances 0..n-1) or a suite (tables 1, 10, 11)."""
    from shapleig_tasks.catalog import resolve_task
    from shapleig_tasks.generality import FAMILIES, make_game

    if name in FAMILIES:
        return [(f"{name}/i={k}", name, make_game(name, k)) for k in range(instances)]
    if name in SUITES:
        return [(f"{name}/seed={k}", name, resolve_task(f"{name}/seed={k}")[0].game()) for k in TABLE_SEEDS]
    if name.startswith(("hpi-", "fi-", "dv-")):
        task = resolve_task(name)[0]
        return [(name, name.split("/")[0], task.game().table())]
    raise ValueError(f"unknown task {name!r}")


def run_one(game, seed: int) -> dict[str, np.ndarray]:
    """The default loop to 8p with snapshots at 2p, 4p (anytime) and 8p (after the final refit)."""
    from shapleig.design.loop import DesignLoop

    p = game.n_players
    snaps: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
    start = time.perf_counter()

    def record(loop: DesignLoop) -> None:
        n = loop.evaluations
        if n in (2 * p, 4 * p) and n not in snaps:
            snaps[n] = (loop.estimate_values(), loop.estimate_std(), time.perf_counter() - start)

    loop = DesignLoop(game.fresh() if hasattr(game, "fresh") else game, 8 * p, seed=seed, progress=False,
                      callbacks=[record])
    est = loop.run()
    snaps[loop.evaluations] = (np.asarray(est.values), np.asarray(est.std), time.perf_counter() - start)
    out = {"X": loop.X.copy(), "y": loop.y.copy(), "exact": np.asarray(game.exact_values(), dtype=np.float64),
           "weights": np.array([loop.mixture.weights.get(k, 0.0) for k in ("shared", "shared+size", "ard", "ard+size")])}
    for m in MULTIPLES:
        n = m * p
        if n in snaps:
            out[f"mean_{m}p"], out[f"std_{m}p"], out[f"seconds_{m}p"] = snaps[n][0], snaps[n][1], np.array(snaps[n][2])
    return out


def main(argv: list[str] | None = None) -> int:
    from shapleig_tasks.generality import FAMILIES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=list(FAMILIES) + list(SUITES))
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--out", default="graded_archives")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    for name in args.tasks:
        for task, group, game in task_games(name, args.instances):
            for seed in seeds:
                path = out / f"{task.replace('/', '__')}__s{seed}.npz"
                if path.exists():
                    continue
                t0 = time.perf_counter()
                rec = run_one(game, seed)
                np.savez(path, task=task, group=group, seed=seed, **rec)
                print(f"{task} seed {seed}: p = {game.n_players}, {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
