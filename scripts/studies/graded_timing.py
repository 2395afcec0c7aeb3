"""Time of a design loop whose surrogate were the graded prototype, against today's default (issue 29).

For each task and seed, in one process one after the other (so machine load hits both alike):

1. today's default ``DesignLoop`` to 8p: total seconds and the part spent in hyperparameter fits;
2. on the archive that loop chose, the graded prototype's MAP fits at every archive size from p + 1
   to 8p (the ``auto`` schedule refits at every step up to min(8p, 128)), each model warm-started
   from its previous fit, with a cold fit added each time the archive has grown by 1.5 (as ``auto``);
   plus its final read-out (Laplace, importance sampling) at 8p.

The loop's estimated time with the graded surrogate is (1) minus the default's fit seconds plus
(2). Prints per task the seconds and the ratio.

    python scripts/studies/graded_timing.py --tasks vit-9/seed=1 pairwise/i=2 bike-ge-12/seed=1 vit-16/seed=1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import graded_gp as gg  # noqa: E402
import numpy as np  # noqa: E402
from graded_prototype import BMA_SET, MODELS, model_results  # noqa: E402


def graded_fit_seconds(X: np.ndarray, y: np.ndarray, models: list[str]) -> float:
    p = X.shape[1]
    specs = {k: gg.Spec(k, **{"learn_noise": True, **MODELS[k]}) for k in models}
    prev: dict[str, np.ndarray] = {}
    cold_at = p + 1
    total = 0.0
    for t in range(p + 1, 8 * p + 1):
        ys, _, _ = gg.standardized(y[:t])
        cold = t >= 1.5 * cold_at or not prev
        t0 = time.perf_counter()
        for k, spec in specs.items():
            pr = gg.Problem(X[:t], ys, spec)
            starts = [prev[k]] if k in prev else []
            if cold:
                starts += gg.default_starts(pr)
            prev[k] = gg.fit_map(pr, starts).theta
        total += time.perf_counter() - t0
        if cold:
            cold_at = t
    return total


def main(argv: list[str] | None = None) -> int:
    from shapleig.design.loop import DesignLoop
    from shapleig_tasks.catalog import resolve_task
    from shapleig_tasks.generality import make_game

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["vit-9/seed=1", "bike-ge-12/seed=1", "vit-16/seed=1"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", nargs="+", default=list(BMA_SET))
    args = ap.parse_args(argv)
    print("task  p  default_s  default_fit_s  graded_fits_s  graded_readout_s  estimated_ratio")
    for name in args.tasks:
        if "/i=" in name:  # a generality family instance, e.g. pairwise/i=2
            fam, k = name.split("/i=")
            game = make_game(fam, int(k))
        else:
            game = resolve_task(name)[0].game()
        p = game.n_players
        t0 = time.perf_counter()
        loop = DesignLoop(game, 8 * p, seed=args.seed, progress=False)
        loop.run()
        default_s = time.perf_counter() - t0
        fit_s = loop.timings["fit_s"]
        fits = graded_fit_seconds(loop.X, loop.y, args.models)
        t0 = time.perf_counter()
        model_results(loop.X, loop.y, args.models, "hamming", np.random.default_rng(0))  # MAP, Laplace, IS
        read_s = time.perf_counter() - t0
        est = default_s - fit_s + fits + read_s
        print(f"{name}  {p}  {default_s:.1f}  {fit_s:.1f}  {fits:.1f}  {read_s:.1f}  {est / default_s:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
