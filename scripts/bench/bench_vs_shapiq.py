"""The default ShaplEIG beside shapiq's ShaplEIG on the same table, seeds and budget, in one process.

Both run single-threaded and one after the other on the same machine, so their times compare
(the anchors' ``wall_s`` came from another machine and run). Prints, per method, the mean wall
time per run and the geometric mean of the MSE over the seeds, then the ratios. Needs the shapiq
extra (``pip install -e '.[shapiq]'``, Python >= 3.12) and the shared tables.

    OMP_NUM_THREADS=1 python scripts/bench/bench_vs_shapiq.py                     # ViT-16 table 1, seeds 0-1, 8p
    OMP_NUM_THREADS=1 python scripts/bench/bench_vs_shapiq.py --task vit-9/seed=1 --seeds 3
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="vit-16/seed=1", help="a table task (default: ViT-16, table 1)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--budget", default="8p", help="e.g. 8p or 128")
    ap.add_argument("--methods", nargs="+", default=["shapleig", "shapiq:ShaplEIG"])
    args = ap.parse_args(argv)

    from shapleig_tasks.catalog import resolve_task
    from shapleig_tasks.methods import parse_method

    try:
        task = resolve_task(args.task)[0]
        methods = {name: parse_method(name).build() for name in args.methods}
    except (ValueError, ImportError) as exc:
        print(f"bench_vs_shapiq: error: {exc}", file=sys.stderr)
        return 2
    game = task.game()
    p = game.n_players
    budget = int(args.budget[:-1]) * p if args.budget.endswith("p") else int(args.budget)
    exact = game.exact_values()
    results = {}
    for name, method in methods.items():
        times, mses = [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            est = method.estimate(game, budget, seed=seed)
            times.append(time.perf_counter() - start)
            mses.append(float(np.mean((est.values - exact) ** 2)))
            print(f"{name} seed {seed}: {times[-1]:.1f} s, mse {mses[-1]:.3g}", flush=True)
        results[name] = (float(np.mean(times)), float(np.exp(np.mean(np.log(mses)))))
    print(f"\n{task.name}, budget {budget} (p = {p}), seeds 0-{args.seeds - 1}")
    for name, (t, m) in results.items():
        print(f"  {name:20s} {t:8.2f} s per run   gm-MSE {m:.3g}")
    if len(results) >= 2:
        (a, (ta, ma)), (b, (tb, mb)) = list(results.items())[:2]
        print(f"  {a} / {b}: time {ta / tb:.3f}, gm-MSE {ma / mb:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
