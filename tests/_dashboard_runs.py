"""A run that writes a store in another process and pauses at known points, and a dashboard process.

The dashboard tests watch a real run: :class:`GatedRun` starts ``ShaplEIG().estimate`` on a
:class:`~_games_for_parallel.GatedGame` in a subprocess; the game stops before evaluation ``k`` for
each gate ``k`` (writing ``at-k``) until the test lets it go (``go-k``). :class:`DashboardProcess`
runs ``shapleig dashboard`` in a subprocess and reads its URL from the line it prints. Every wait
is for a state (a file, a line), bounded by a deadline only to fail.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DEADLINE_S = 120.0
P, BUDGET, SEED = 6, 16, 3

RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from _games_for_parallel import GatedGame
    from shapleig import ShaplEIG
    game = GatedGame({p}, seed=1, log_path={log!r}, gate_dir={gates_dir!r}, gates={gates!r})
    est = ShaplEIG(pool_size=64).estimate(game, {budget}, seed={seed}, store={store!r})
    print("finished", est.evaluations, flush=True)
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def wait_for_file(path: Path, proc: subprocess.Popen | None = None, what: str = "") -> None:
    """Return once ``path`` exists; fail if ``proc`` ends first or the deadline passes."""
    deadline = time.monotonic() + DEADLINE_S
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"the process ended before {what or path.name}:\n{out}")
        assert time.monotonic() < deadline, f"never reached {what or path.name}"
        time.sleep(0.02)


class GatedRun:
    """``ShaplEIG().estimate(GatedGame, BUDGET, seed=SEED, store=store)`` in a subprocess, paused at ``gates``."""

    def __init__(self, folder: Path, store: Path, gates: tuple[int, ...]):
        self.folder, self.store, self.gates = folder, store, gates
        self.log = folder / "calls.log"
        code = RUN.format(tests=str(TESTS), p=P, log=str(self.log), gates_dir=str(folder), gates=tuple(gates),
                          budget=BUDGET, seed=SEED, store=str(store))
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)

    def wait_at(self, k: int) -> None:
        """Return once the run is paused before its evaluation number ``k + 1`` (``k`` stored)."""
        wait_for_file(self.folder / f"at-{k}", self.proc, f"the gate at {k} evaluations")

    def go(self, k: int) -> None:
        (self.folder / f"go-{k}").write_text("go")

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(timeout=60) == -signal.SIGKILL

    def finish(self) -> str:
        """Let every gate go and wait for the run's last line."""
        for k in self.gates:
            self.go(k)
        out, _ = self.proc.communicate(timeout=DEADLINE_S)
        assert self.proc.returncode == 0, out
        return out

    def __enter__(self) -> "GatedRun":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)


class DashboardProcess:
    """``shapleig dashboard PATH... --port 0`` in a subprocess; :attr:`url` from the line it prints."""

    def __init__(self, *paths: str | Path, refresh: float = 0.2):
        self.proc = subprocess.Popen([sys.executable, "-m", "shapleig_tasks.cli", "dashboard", *map(str, paths),
                                      "--port", "0", "--refresh", str(refresh)], cwd=REPO, env=_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()  # the line it prints once it listens
        if " at http://" not in line:
            self.proc.kill()
            raise AssertionError(f"the dashboard did not start: {line}{self.proc.stdout.read()}")
        self.url = line.split(" at ", 1)[1].split()[0]
        self.host, port = self.url[len("http://"):].rstrip("/").rsplit(":", 1)
        self.port = int(port)

    def get(self, path: str) -> tuple[int, str]:
        """``(status, body)`` of a GET of ``path`` sent as it is (no normalisation of ``..``)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=DEADLINE_S)
        try:
            conn.putrequest("GET", path, skip_accept_encoding=True)
            conn.endheaders()
            response = conn.getresponse()
            return response.status, response.read().decode("utf-8")
        finally:
            conn.close()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(timeout=60) == -signal.SIGKILL

    def __enter__(self) -> "DashboardProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)
        if self.proc.stdout:
            self.proc.stdout.close()
