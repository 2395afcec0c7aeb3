"""Selection overhead of the design loop per iteration, game time excluded.

For each p, a cheap synthetic game (linear + pairwise + one three-way term) is run through a
``DesignLoop`` up to t ~ 4p evaluations without refits (warm-up), then a few iterations are timed:

- ``every``:  a cold-start MAP refit at every timed step, followed by a full rebuild of the
              Shapley posterior and candidate state and the EIG sweep over the pool;
- ``frozen``: hyperparameters frozen, exact incremental docs/math.md §10 updates and the EIG sweep.

Columns (seconds per iteration, game excluded): selection = GP fit + posterior/candidate build +
EIG over the pool, of which the fit and the rest ("EIG"); update = posterior extension by the new
evaluation and the anytime read-out; total = selection + update. Then the peak traced memory of one extra step (tracemalloc: numpy
and Python allocations, torch tensors excluded) and the process's max RSS.

    .venv/bin/python scripts/bench/bench_overhead.py                 # p in 8 10 14 16 32 64
    .venv/bin/python scripts/bench/bench_overhead.py --players 8 10 --steps 2
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
import tracemalloc

import numpy as np

from shapleig.design.loop import DesignLoop
from shapleig.games.game import FunctionGame


def make_game(p: int, seed: int = 0) -> FunctionGame:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=p)
    pairs = rng.normal(size=(p, p)) * 0.2 / np.sqrt(p)

    def fn(Z: np.ndarray) -> np.ndarray:
        z = Z.astype(np.float64)
        return z @ w + np.einsum("mi,ij,mj->m", z, pairs, z) + 0.5 * z[:, 0] * z[:, 1] * z[:, 2]

    return FunctionGame(fn, p, name=f"synthetic{p}")


def bench(p: int, mode: str, steps: int, pool_size: int, seed: int = 0) -> dict:
    t_target = 4 * p
    warm = t_target - (p + 1)  # acquisitions before the timed ones
    if mode == "every":
        schedule = lambda it: it >= warm  # noqa: E731  (only the initial fit during warm-up)
    else:
        schedule = lambda it: it == 0  # noqa: E731
    loop = DesignLoop(make_game(p, seed), t_target + steps + 1, refit=schedule, pool_size=pool_size,
                      seed=seed, progress=False, final_refit=False)
    start = time.perf_counter()
    loop.step()  # design + initial fit
    while loop.iteration < warm:
        loop.step()
    warm_s = time.perf_counter() - start
    sel, fit, upd = [], [], []
    for _ in range(steps):
        s0, f0, u0 = loop.timings["selection_s"], loop.timings["fit_s"], loop.timings["update_s"]
        loop.step()
        sel.append(loop.timings["selection_s"] - s0)
        fit.append(loop.timings["fit_s"] - f0)
        upd.append(loop.timings["update_s"] - u0)
    tracemalloc.start()
    loop.step()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "p": p,
        "t": t_target,
        "pool": len(loop.pool),
        "mode": mode,
        "selection_s": float(np.median(sel)),
        "fit_s": float(np.median(fit)),
        "update_s": float(np.median(upd)),
        "peak_mb": peak / 2**20,
        "warmup_s": warm_s,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="selection overhead per iteration at t ~ 4p")
    ap.add_argument("--players", type=int, nargs="*", default=[8, 10, 14, 16, 32, 64])
    ap.add_argument("--steps", type=int, default=3, help="timed iterations per configuration")
    ap.add_argument("--pool-size", type=int, default=1024)
    args = ap.parse_args(argv)
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}; "
          f"median over {args.steps} timed iterations; game time excluded")
    print(f"{'p':>3s} {'t':>4s} {'pool':>5s} {'mode':>7s} {'sel s/it':>9s} {'fit s/it':>9s} "
          f"{'EIG s/it':>9s} {'update s/it':>11s} {'total s/it':>10s} {'peak MB':>8s} {'maxRSS MB':>9s}")
    for p in args.players:
        for mode in ("every", "frozen"):
            r = bench(p, mode, args.steps, args.pool_size)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{r['p']:>3d} {r['t']:>4d} {r['pool']:>5d} {r['mode']:>7s} {r['selection_s']:>9.4f} "
                  f"{r['fit_s']:>9.4f} {r['selection_s'] - r['fit_s']:>9.4f} {r['update_s']:>11.4f} "
                  f"{r['selection_s'] + r['update_s']:>10.4f} {r['peak_mb']:>8.1f} {rss:>9.0f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
