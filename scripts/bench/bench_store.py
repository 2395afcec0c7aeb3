"""Cost of the evaluation store per write and per read (issue 34: the row digests).

Appends ``--rows`` values of distinct random coalitions (p = ``--players``) to a new store, one
committed transaction each as a run does, then reads them back: ``lookup`` of every coalition
(chunks of 500, as ``BudgetedGame`` does), ``records()`` and ``history()`` (every row), and opening the
store again. Prints microseconds per row, for a file store (``PRAGMA synchronous = FULL``: each
append waits for the disk) and an in-memory one (the CPU cost alone), the best of ``--repeats``.
Also the digest alone (HMAC-SHA256 of one row, as written and as checked).

``--code DIR`` imports ``shapleig`` from another checkout, to compare with the code before a change:

    git archive <commit> | tar -x -C /tmp/before
    OMP_NUM_THREADS=1 python scripts/bench/bench_store.py --code /tmp/before    # before
    OMP_NUM_THREADS=1 python scripts/bench/bench_store.py                       # this code
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def _coalitions(rows: int, players: int, seed: int = 0) -> np.ndarray:
    """``rows`` distinct random coalitions of ``players`` players (``bool[rows, players]``)."""
    rng = np.random.default_rng(seed)
    codes = rng.choice(2**players, size=rows, replace=False)
    return ((codes[:, None] >> np.arange(players)) & 1).astype(bool)


def _best(repeats: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeats))


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def bench(path: str, Z: np.ndarray, repeats: int) -> dict[str, float]:
    """Microseconds per row of each store operation on a new store at ``path`` (``":memory:"`` or a file)."""
    from shapleig import EvaluationStore, FunctionGame

    rows, players = Z.shape
    game = FunctionGame(lambda X: X.sum(axis=1).astype(float), players, name="bench", game_id="bench")
    values = np.random.default_rng(1).normal(size=rows)
    out: dict[str, float] = {}
    appends = []
    store = None
    for _ in range(repeats):  # a new store each time: the first rows are as cheap as the last
        if store is not None:
            store.close()
        if path != ":memory:":
            for leftover in (path, path + "-wal", path + "-shm"):
                if os.path.exists(leftover):
                    os.remove(leftover)
        store = EvaluationStore(path)
        store.bind(game)
        appends.append(_timed(lambda: [store.append(z, float(v), seconds=0.0) for z, v in zip(Z, values)]))
    out["append"] = min(appends)
    out["lookup"] = _best(repeats, lambda: _timed(lambda: store.lookup(Z)))
    out["records()"] = _best(repeats, lambda: _timed(store.records))
    out["history()"] = _best(repeats, lambda: _timed(store.history))
    found, got = store.lookup(Z)
    assert found.all() and np.array_equal(got, values), "the store did not serve what was written"
    if path != ":memory:":
        store.close()

        def reopen() -> float:
            return _timed(lambda: EvaluationStore(path).close())

        out["open"] = _best(repeats, reopen)
    else:
        store.close()
    return {k: v / rows * 1e6 for k, v in out.items()}


def bench_digest(rows: int) -> dict[str, float]:
    """Microseconds per row of computing and of checking one row's digest (None without digests)."""
    try:
        from shapleig.runs.row_digest import new_row_key, row_digest, row_matches
    except ImportError:
        return {}
    key = bytes.fromhex(new_row_key())
    row = (1, "0" * 32, "01" * 10, 0.123456789, 0.5, time.time(), "ok", 1, None)
    digest = row_digest(key, row)
    full = (*row, digest)
    write = _timed(lambda: [row_digest(key, row) for _ in range(rows)])
    check = _timed(lambda: [row_matches(key, full) for _ in range(rows)])
    return {"digest (write)": write / rows * 1e6, "digest (check)": check / rows * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--code", default=None, help="a checkout whose shapleig to import (default: this one)")
    parser.add_argument("--folder", default=None, help="where the file store goes (default: a temporary folder)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.code).resolve() if args.code else REPO))
    import shapleig

    Z = _coalitions(args.rows, args.players)
    print(f"shapleig from {Path(shapleig.__file__).parent}; {args.rows} rows, p = {args.players}, "
          f"best of {args.repeats}; microseconds per row")
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        for label, path in (("file", str(Path(folder) / "bench.sqlite")), ("memory", ":memory:")):
            figures = bench(path, Z, args.repeats)
            print(f"  {label:6s} " + "  ".join(f"{k} {v:8.2f}" for k, v in figures.items()), flush=True)
    digest = bench_digest(args.rows)
    if digest:
        print("  digest " + "  ".join(f"{k} {v:.2f}" for k, v in digest.items()))


if __name__ == "__main__":
    main()
