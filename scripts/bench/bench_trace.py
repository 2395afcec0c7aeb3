"""Cost of writing the anytime trace to an evaluation store (issue 38: the dashboard's data).

1. ``--steps`` trace entries (p = ``--players``) recorded one per transaction into a file store, as
   the design loop does after each step: milliseconds per step, committed without an fsync (this
   code) and, for comparison, with the connection's ``synchronous = FULL`` kept (an fsync per step).
2. A ShaplEIG run (p = 8, budget 64, on a free game) on a file store, with its trace and through a
   wrapper that hides the optional trace methods (no trace): the median of ``--repeats`` runs.

    OMP_NUM_THREADS=1 python scripts/bench/bench_trace.py
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np


class _NoTrace:
    """A store without the optional trace methods (every other method forwarded)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        from shapleig.runs.store_protocol import TRACE_METHODS

        if name in TRACE_METHODS:
            raise AttributeError(name)
        return getattr(self._inner, name)


def per_step(players: int, steps: int, synced: bool) -> float:
    from shapleig import EvaluationStore, FunctionGame, ShaplEIG
    from shapleig.estimation.trace_record import TraceRecorder

    game = FunctionGame(lambda Z: Z @ np.arange(1.0, players + 1.0), n_players=players, game_id="bench")
    with tempfile.TemporaryDirectory() as folder, EvaluationStore(Path(folder) / "s.sqlite") as store:
        est = ShaplEIG().estimate(game, players + 4, seed=0, store=store)
        recorder = TraceRecorder(store, next(r for r in store.trace_runs() if r.run == est.info["trace_run"]))
        if synced:  # the connection's own setting kept for the trace too: one fsync per step
            store._conn = _KeepFull(store._conn)
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for k in range(steps):
            recorder.record(1000 + k, players + 4, rng.random(players), rng.random(players),
                            diagnostics={"kernel_weights": {"shared": 0.9, "shared+size": 0.1}})
        return (time.perf_counter() - start) / steps


class _KeepFull:
    """The store's connection, with every change of ``synchronous`` turned into FULL."""

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql, *args):
        return self._conn.execute("PRAGMA synchronous = FULL" if sql.startswith("PRAGMA synchronous") else sql, *args)

    def __enter__(self):
        self._conn.__enter__()
        return self

    def __exit__(self, *exc):
        return self._conn.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def run_seconds(repeats: int, traced: bool) -> float:
    from shapleig import EvaluationStore, FunctionGame, ShaplEIG

    game = FunctionGame(lambda Z: Z @ np.arange(1.0, 9.0) + Z[:, 0] * Z[:, 1], n_players=8, game_id="bench")
    times = []
    for rep in range(repeats):
        with tempfile.TemporaryDirectory() as folder, EvaluationStore(Path(folder) / "s.sqlite") as store:
            start = time.perf_counter()
            ShaplEIG().estimate(game, 64, seed=rep, store=store if traced else _NoTrace(store))
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for synced in (False, True):
        ms = 1e3 * per_step(args.players, args.steps, synced)
        print(f"trace entry, {'an fsync per step' if synced else 'no fsync (this code)'}: {ms:.3f} ms per step")
    for traced in (True, False):
        print(f"ShaplEIG p=8 budget 64 on a file store, {'with' if traced else 'without'} the trace: "
              f"{run_seconds(args.repeats, traced):.3f} s (median of {args.repeats})")


if __name__ == "__main__":
    main()
