"""Memory and time of the order-k index products and of a ShaplEIG run, p = 10-20 (docs/math.md §14.3).

For each p: d, the number of terms of orders 1..k; the wall time and the peak memory (tracemalloc)
of the prior covariance ``B K B^T`` (d x d) and of the columns ``B k(., W)`` of a pool of 1024
coalitions (d x 1024), with one shared lengthscale and with per-player (ARD) lengthscales; and,
with ``--run``, one ``ShaplEIG(index=..., max_order=k)`` run at budget 16p on a synthetic game of
third-order interactions: its wall time (without tracemalloc, whose bookkeeping slows numpy) and
the process's peak resident memory after it (``ru_maxrss``, the interpreter and libraries
included). Single-threaded: set ``OMP_NUM_THREADS=1``.

    OMP_NUM_THREADS=1 python scripts/bench/bench_order_k_cost.py --order 3 --run
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from math import comb
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

from shapleig import FunctionGame, ShaplEIG  # noqa: E402
from shapleig.gp.index_esp import IndexOperator  # noqa: E402


def measured(fn):
    """(result, seconds, peak MB) of ``fn()``: the time of a run without tracing, the peak of a traced one."""
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, seconds, peak


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (MB; ru_maxrss is in KB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def third_order_game(p: int, seed: int) -> FunctionGame:
    """A game with random main effects, pairs and triples (a few of each per player)."""
    rng = np.random.default_rng(seed)
    main = rng.normal(size=p)
    pairs = [tuple(rng.choice(p, 2, replace=False)) for _ in range(p)]
    triples = [tuple(rng.choice(p, 3, replace=False)) for _ in range(p // 2)]
    wp, wt = rng.normal(size=len(pairs)), rng.normal(size=len(triples))

    def value(Z: np.ndarray) -> np.ndarray:
        Z = np.asarray(Z, dtype=np.float64)
        out = Z @ main
        for w, (i, j) in zip(wp, pairs):
            out = out + w * Z[:, i] * Z[:, j]
        for w, (i, j, k) in zip(wt, triples):
            out = out + w * Z[:, i] * Z[:, j] * Z[:, k]
        return out

    return FunctionGame(value, p, name=f"third-order-{p}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", type=int, default=3)
    parser.add_argument("--index", default="k-SII")
    parser.add_argument("--players", type=int, nargs="+", default=list(range(10, 21, 2)))
    parser.add_argument("--pool", type=int, default=1024)
    parser.add_argument("--run", action="store_true", help="also one ShaplEIG run at budget 16p per p")
    args = parser.parse_args()
    print(f"{args.index} of order {args.order}; pool {args.pool}; times in s, memory: peak MB (tracemalloc) of "
          f"the product; RSS {peak_rss_mb():.0f} MB at the start")
    print(f"{'p':>3} {'d':>5} {'cov MB':>7} | {'cov shared':>10} {'cov ARD':>16} | {'cols shared':>16} "
          f"{'cols ARD':>16}" + (" | ShaplEIG 16p run" if args.run else ""), flush=True)
    for p in args.players:
        rng = np.random.default_rng(p)
        op = IndexOperator(p, args.index, args.order)
        d = op.n_terms
        assert d == sum(comb(p, t) for t in range(1, args.order + 1))
        W = rng.random((args.pool, p)) < 0.5
        shared, ard = np.full(p, 0.3 * np.sqrt(p)), rng.uniform(0.2, 2.0, p) * np.sqrt(p)
        cells = []
        for fn in (lambda: op.hamming_covariance(shared, 1.0), lambda: op.hamming_covariance(ard, 1.0),
                   lambda: op.hamming_columns(W, shared, 1.0), lambda: op.hamming_columns(W, ard, 1.0)):
            out, seconds, peak = measured(fn)
            assert np.all(np.isfinite(out))
            cells.append((seconds, peak))
        line = (f"{p:>3} {d:>5} {d * d * 8 / 2**20:>7.1f} | {cells[0][0]:>10.3f} {cells[1][0]:>7.3f} "
                f"({cells[1][1]:>6.0f} MB) | {cells[2][0]:>6.3f} ({cells[2][1]:>5.0f} MB) {cells[3][0]:>6.3f} "
                f"({cells[3][1]:>5.0f} MB)")
        if args.run:
            game = third_order_game(p, p)
            start = time.perf_counter()
            est = ShaplEIG(index=args.index, max_order=args.order).estimate(game, 16 * p, seed=0)
            seconds = time.perf_counter() - start
            line += (f" | {seconds:.1f} s (fits {est.info['fit_seconds']:.1f} s), peak RSS so far "
                     f"{peak_rss_mb():.0f} MB")
        print(line, flush=True)


if __name__ == "__main__":
    main()
