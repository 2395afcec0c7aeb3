"""Budgets in the thousands: the default ShaplEIG's selection time against t (issue 18).

One full default run (``ShaplEIG()``, every option at its default; a cheap synthetic game: linear
+ pairwise + one three-way term, as scripts/bench_fit.py) per ``p:t`` setting, each in its own
subprocess so the peak RSS is that run's. Selection time = the loop's own time (fits, posterior,
candidate state, EIG, updates), the game excluded. Prints, per setting, the per-step cost in
windows of t (so its growth with t is visible), the number of refits, the total selection time
against the target, and the peak RSS.

    OMP_NUM_THREADS=1 python scripts/bench/bench_budget.py                       # 10:1000 16:2000 100:5000
    OMP_NUM_THREADS=1 python scripts/bench/bench_budget.py --settings 10:1000 --refit every
"""

from __future__ import annotations

import argparse
import json
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

# issue 18's targets: seconds of selection for (p, t)
TARGETS = {(10, 1000): 60.0, (16, 2000): 180.0, (100, 5000): 1200.0}


def run_one(p: int, t: int, seed: int, refit: str | None) -> dict:
    """One default run in this process; returns per-step (evaluations, cumulative selection s) and totals."""
    from shapleig import FunctionGame
    from shapleig.design.estimators import ShaplEIG

    steps: list[tuple[int, float]] = []

    def record(loop) -> None:
        tm = loop.timings
        steps.append((int(loop.evaluations), float(tm["selection_s"] + tm["update_s"])))
        if steps[-1][0] % 250 == 0:  # partial progress of long runs (stderr, passed through)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            print(f"  [p = {p}] t = {steps[-1][0]}: selection so far {steps[-1][1]:.1f} s, "
                  f"{loop.n_refits} refits, peak RSS {rss:.0f} MB", file=sys.stderr, flush=True)

    game = FunctionGame(lambda Z: synthetic(Z, seed), p, name=f"synthetic-{p}")
    options = {} if refit is None else {"refit": refit}
    start = time.perf_counter()
    est = ShaplEIG.from_options(callbacks=(record,), **options).estimate(game, t, seed=seed)
    wall = time.perf_counter() - start
    info = est.info
    return {"p": p, "t": t, "wall_s": wall,
            "selection_s": float(info["selection_seconds"]) + float(info["update_seconds"]),
            "game_s": float(info["game_seconds"]),
            "n_fits": int(info.get("n_fits", -1)), "refit": str(info.get("refit")), "steps": steps,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def windows(steps: list[tuple[int, float]], n_windows: int = 10) -> list[tuple[int, int, float]]:
    """(t_from, t_to, mean seconds per step) over ``n_windows`` equal spans of evaluations."""
    t = np.array([s[0] for s in steps])
    c = np.array([s[1] for s in steps])
    edges = np.unique(np.linspace(t[0], t[-1], n_windows + 1).round().astype(int))
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        i, j = np.searchsorted(t, a), np.searchsorted(t, b)
        if j > i:
            out.append((int(t[i]), int(t[j]), float((c[j] - c[i]) / (t[j] - t[i]))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", nargs="+", default=["10:1000", "16:2000", "100:5000"], help="p:t pairs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--refit", default=None, help="override the refit schedule (default: the default's)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one p:t, print JSON
    args = ap.parse_args()
    if args.one:
        p, t = (int(v) for v in args.one.split(":"))
        print(json.dumps(run_one(p, t, args.seed, args.refit)))
        return
    for setting in args.settings:
        cmd = [sys.executable, __file__, "--one", setting, "--seed", str(args.seed)]
        if args.refit:
            cmd += ["--refit", args.refit]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # stderr: the child's progress lines
        if proc.returncode != 0:
            print(f"p:t = {setting}: failed (exit {proc.returncode})", flush=True)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        target = TARGETS.get((r["p"], r["t"]))
        verdict = "" if target is None else f" (target <= {target:.0f} s: {'met' if r['selection_s'] <= target else 'NOT met'})"
        print(f"\np = {r['p']}, t = {r['t']}, refit {r['refit']}: selection {r['selection_s']:.1f} s{verdict}, "
              f"wall {r['wall_s']:.1f} s, game {r['game_s']:.2f} s, {r['n_fits']} refits, "
              f"peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
        print("   t range      s/step", flush=True)
        for a, b, s in windows(r["steps"]):
            print(f"  {a:5d}-{b:<5d}  {s:9.4f}", flush=True)


if __name__ == "__main__":
    main()
