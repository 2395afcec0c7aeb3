"""Do two checkouts give the same numbers? The default and published ShaplEIG on a fixed subset.

Runs ``ShaplEIG()`` and ``ShaplEIG.published()`` at budget 4p (the anytime trace gives every
smaller budget) on the first table of three public suites, seeds 0 and 1, and saves values, stds
and traces; ``--compare`` prints the largest relative difference between two saved runs.

    git worktree add /tmp/before <commit>
    (cd /tmp/before && PYTHONPATH=. python /path/to/scripts/repro/same_results.py --out before.npz)
    PYTHONPATH=. python scripts/repro/same_results.py --out after.npz
    python scripts/repro/same_results.py --compare before.npz after.npz      # 0 or <= 1e-12 expected

Needs the shared tables (``SHAPLEIG_SHARED`` / ``../shared/data/games``). Only public names are
used, so the script runs on any checkout of the project.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

SUITES = ("vit-9", "california-le-8", "bike-dv-10")
SEEDS = (0, 1)


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
        if rel > 1e-12:
            print(f"{key}: relative difference {rel:.3g}")
    print(f"{len(a.files)} arrays compared; largest relative difference {worst:.3g}")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="run the subset and save it here (.npz)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two saved runs")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
    elif args.out:
        run(args.out)
    else:
        parser.error("give --out or --compare")


if __name__ == "__main__":
    main()
