"""The design loop's own cost per evaluation on a game that costs nothing: ShaplEIG's overhead.

Usage: OMP_NUM_THREADS=1 python scripts/bench/bench_loop_overhead.py [--settings 10:80 16:128 50:400]
       [--seeds 2] [--options refit=auto-cold] [--profile 10:80]

For each ``p:t`` setting, ``ShaplEIG(**options).estimate(game, t, seed)`` on the synthetic game of
``bench_overhead.py`` (linear + pairwise + one three-way term: microseconds per call), seeds 0..n-1.
Prints per setting the median over seeds of: CPU seconds of the run (``time.process_time``: this
process, every thread) and wall seconds, each divided by t (the overhead per evaluation), the
refits, the kernel fits and the L-BFGS-B objective evaluations (``fit_attempts`` counts runs), and
the split of the loop's own time (``info``: fits, the rest of selection, updates). ``--options``
takes ``key=value`` pairs of ``ShaplEIG``'s keywords (``refit=auto-cold``); ``--profile p:t`` prints
the 25 most expensive functions of one run (cProfile, cumulative time).
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import make_game  # noqa: E402

from shapleig import ShaplEIG  # noqa: E402


def parse_options(pairs: list[str]) -> dict:
    """``key=value`` pairs as keywords (values read as Python literals where they parse, else text)."""
    out = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        try:
            out[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[key] = text
    return out


def run(p: int, t: int, seed: int, options: dict) -> dict:
    """One run; its CPU and wall seconds and the loop's own accounting."""
    game = make_game(p, seed)
    cpu, wall = time.process_time(), time.perf_counter()
    est = ShaplEIG.from_options(**options).estimate(game, t, seed=seed, progress=False)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    info = est.info
    return {"cpu": cpu, "wall": wall, "refits": info["n_fits"], "kernel_fits": info["n_kernel_fits"],
            "fit_s": info["fit_seconds"], "selection_s": info["selection_seconds"] - info["fit_seconds"],
            "update_s": info["update_seconds"], "evaluations": est.evaluations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="+", default=["10:80", "16:128", "50:400"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--options", nargs="*", default=[])
    parser.add_argument("--profile", default=None, metavar="P:T")
    args = parser.parse_args()
    options = parse_options(args.options)
    if args.profile:
        import cProfile
        import pstats

        p, t = map(int, args.profile.split(":"))
        ShaplEIG.from_options(**options).estimate(make_game(p, 0), p + 4, seed=0, progress=False)  # imports, caches
        prof = cProfile.Profile()
        prof.runcall(run, p, t, 0, options)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return
    print(f"options {options or 'default'}; median over seeds 0..{args.seeds - 1}")
    ShaplEIG.from_options(**options).estimate(make_game(6, 0), 10, seed=0, progress=False)  # imports before the timing
    for setting in args.settings:
        p, t = map(int, setting.split(":"))
        runs = [run(p, t, seed, options) for seed in range(args.seeds)]
        med = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
        n = med["evaluations"]
        print(f"p={p:4d} t={t:5d}: {1e3 * med['cpu'] / n:7.2f} ms CPU / evaluation ({med['cpu']:.2f} s), "
              f"{1e3 * med['wall'] / n:7.2f} ms wall / evaluation; refits {med['refits']:.0f}, kernel fits "
              f"{med['kernel_fits']:.0f}; fits {med['fit_s']:.2f} s, rest of selection {med['selection_s']:.2f} s, "
              f"updates {med['update_s']:.2f} s", flush=True)


if __name__ == "__main__":
    main()
