"""Selection cost per iteration and peak memory of ShaplEIG at large p (t = 4p; shared kernel or ``--ard``).

For each p (one subprocess per p, so the peak RSS is that configuration's) on a synthetic game
(linear + pairwise + one three-way term, as scripts/bench/bench_fit.py), with the numpy fit engine:

1. an archive of t - W coalitions from the paired uniform-size (leverage) sampler, the candidate
   pool (``--pool-size`` candidates, drawn as the loop draws it) and one cold MAP fit on it;
2. ``rebuild``: the Shapley posterior and the candidate state from scratch (what follows a refit);
3. ``frozen``: W timed iterations with frozen hyperparameters (EIG over the pool, pick, exact
   conditioning, posterior extension by the new point);
4. ``fit cold``: the MAP fit of step 1 (from the docs/math.md §3 initial values, t - W points); ``fit warm``:
   a fit on the final archive warm-started from those hyperparameters;

and reports per iteration (seconds, game excluded):

- ``every``:  fit cold + rebuild + frozen (a cold refit at every step, the loop's default);
- ``frozen``: frozen;
- ``policy``: the amortised cost of the "adaptive" schedule over a whole run of T = t - (p + 1)
  iterations: ``(n_fits * (fit cold + rebuild) + T * frozen) / T`` with n_fits = the geometric
  backstop's fits (floor(log2(T - 1)) + 2) plus the evidence-triggered ones. The triggered count is
  that of a real run for p <= ``--full-run-max-p`` (the whole run is then timed too: ``run s/it``);
  above it, the fraction of window iterations whose innovations exceed the threshold, times T,
  is used (``trig`` column). Costs at the final t bound every earlier fit, so ``policy`` is an
  upper bound for this game.

Peak memory is the subprocess's max RSS (Python, numpy and the interpreter).

    OMP_NUM_THREADS=1 python scripts/bench/bench_scale.py                          # p in 16 64 256 1000
    OMP_NUM_THREADS=1 python scripts/bench/bench_scale.py --players 1000 --window 3
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fit import synthetic  # noqa: E402

from shapleig.design.acquisition import EIG  # noqa: E402
from shapleig.design.initial import candidate_pool, leverage_design  # noqa: E402
from shapleig.design.loop import DesignLoop  # noqa: E402
from shapleig.design.refit import AdaptiveRefit
from shapleig.games.game import FunctionGame  # noqa: E402
from shapleig.gp.fitting import fit_hyperparameters  # noqa: E402
from shapleig.gp.kernels import Hamming  # noqa: E402
from shapleig.gp.options import GPOptions  # noqa: E402
from shapleig.gp.posterior import ShapleyPosterior  # noqa: E402
from shapleig.threads import compute_threads


def backstop_fits(iterations: int) -> int:
    """Fits of the geometric backstop over ``iterations`` acquisitions (it = 0, 1, 2, 4, ...) plus the final."""
    return int(math.floor(math.log2(max(iterations - 1, 1)))) + 2


def per_iteration(fit_cold_s: float, rebuild_s: float, frozen_s: float, n_fits: int, iterations: int) -> dict:
    """Seconds per iteration of a cold refit at every step and of a schedule with ``n_fits`` refits.

    Args:
        fit_cold_s: seconds of one cold MAP fit.
        rebuild_s: seconds to rebuild the posterior and candidate state after a fit.
        frozen_s: seconds of one iteration with frozen hyperparameters.
        n_fits: refits of the schedule over the run.
        iterations: acquisitions of the run.

    Returns:
        ``{"every_s": fit + rebuild + frozen, "policy_s": (n_fits (fit + rebuild) + iterations frozen) / iterations}``.
    """
    return {"every_s": fit_cold_s + rebuild_s + frozen_s,
            "policy_s": (n_fits * (fit_cold_s + rebuild_s) + iterations * frozen_s) / iterations}


def measure(p: int, window: int, pool_size: int, threshold: float, full_run_max_p: int, ard: bool = False,
            seed: int = 0) -> dict:
    t = 4 * p
    T = t - (p + 1)
    rng = np.random.default_rng(seed)
    fn = lambda Z: synthetic(Z, seed)  # noqa: E731
    out: dict = {"p": p, "t": t}
    with compute_threads(1):
        X = leverage_design(p, rng, size=t - window)
        y = fn(X)
        start = time.perf_counter()
        pool = candidate_pool(p, X[: p + 1], rng, pool_size)
        out["pool_s"] = time.perf_counter() - start
        out["pool"] = len(pool)
        fit = fit_hyperparameters(X, y, Hamming(ard=ard), GPOptions(size_trend=False), seed=seed)
        h = fit.hyper
        out["fit_cold_s"] = fit.seconds
        start = time.perf_counter()
        post = ShapleyPosterior(h, X, y)
        cand = post.candidates(pool.W)
        out["rebuild_s"] = time.perf_counter() - start
        steps, triggered, t_fit = [], 0, X.shape[0]
        for _ in range(window):
            start = time.perf_counter()
            j = EIG().select(cand, 1)
            Z = pool.W[j]
            post = post.extend(Z, fn(Z))
            steps.append(time.perf_counter() - start)
            z = post.innovations()[t_fit:]
            triggered += bool(np.mean(z**2) > threshold)
        out["frozen_s"] = float(np.median(steps))
        out["trigger_rate"] = triggered / max(window, 1)
        warm = fit_hyperparameters(post.X, post.y, Hamming(ard=ard), GPOptions(size_trend=False), seed=seed,
                                   init=h)
        out["fit_warm_s"] = warm.seconds
    if p <= full_run_max_p:
        game = FunctionGame(fn, p)
        loop = DesignLoop(game, t, refit=AdaptiveRefit(threshold=threshold), fit_engine="numpy", ard=ard,
                          pool_size=pool_size, seed=seed, progress=False)
        loop.run()
        out["n_fits"] = loop.n_refits
        out["run_s_per_it"] = loop.timings["selection_s"] / max(loop.iteration, 1)
    else:
        out["n_fits"] = backstop_fits(T) + int(round(out["trigger_rate"] * T))
        out["run_s_per_it"] = float("nan")
    out.update(per_iteration(out["fit_cold_s"], out["rebuild_s"], out["frozen_s"], out["n_fits"], T))
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--players", type=int, nargs="+", default=[16, 64, 256, 1000])
    ap.add_argument("--window", type=int, default=5, help="timed frozen iterations")
    ap.add_argument("--pool-size", type=int, default=1024)
    ap.add_argument("--threshold", type=float, default=AdaptiveRefit().threshold)
    ap.add_argument("--full-run-max-p", type=int, default=64, help="run the whole adaptive loop up to this p")
    ap.add_argument("--ard", action="store_true", help="one lengthscale per player (default: shared)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        r = measure(args.players[0], args.window, args.pool_size, args.threshold, args.full_run_max_p, args.ard)
        print(json.dumps(r))
        return 0
    print(f"# seconds per iteration (game excluded), one thread; {'ARD' if args.ard else 'shared'} kernel, "
          "numpy fit engine")
    print(f"{'p':>5} {'t':>5} {'pool':>5} | {'every':>8} {'frozen':>7} {'policy':>7} {'run s/it':>8} | "
          f"{'fit cold':>8} {'fit warm':>8} {'rebuild':>7} {'fits':>4} {'trig':>5} | {'peak MB':>7}")
    for p in args.players:
        cmd = [sys.executable, __file__, "--child", "--players", str(p), "--window", str(args.window),
               "--pool-size", str(args.pool_size), "--threshold", str(args.threshold),
               "--full-run-max-p", str(args.full_run_max_p)] + (["--ard"] if args.ard else [])
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"{r['p']:>5} {r['t']:>5} {r['pool']:>5} | {r['every_s']:>8.3f} {r['frozen_s']:>7.3f} "
              f"{r['policy_s']:>7.3f} {r['run_s_per_it']:>8.3f} | {r['fit_cold_s']:>8.2f} {r['fit_warm_s']:>8.2f} "
              f"{r['rebuild_s']:>7.2f} {r['n_fits']:>4} {r['trigger_rate']:>5.2f} | {r['max_rss_mb']:>7.0f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
