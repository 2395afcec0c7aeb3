"""Evaluation timeouts: a game call that hangs is abandoned, not waited for forever.

A Python call cannot be interrupted from outside, so an evaluation with a ``timeout`` runs in a
worker process that can be killed. :class:`WorkerProcess` is that process: it receives a copy of
the game once, then coalition matrices over a pipe, calls the game and sends back
``(values, seconds, error)``. The worker is persistent: :class:`~shapleig.runs.evaluators.SerialEvaluator`
keeps it for every evaluation of the same game, so a timed call costs a pipe round trip more
than an untimed one (``scripts/bench/bench_timeout.py``). When a call takes longer than the
timeout, the worker is killed (SIGKILL) and the next call starts a new one; the attempt is
reported as failed (``"timed out after 2 s"``), so the evaluators' retry policy applies to it:
retried up to ``max_retries`` times, then :class:`~shapleig.errors.EvaluationFailedError` naming
the coalition. Its store claim is released by :class:`~shapleig.runs.budget.BudgetedGame` as for
any failure, so another process sharing the store can take the coalition over.

**Start methods.** A forked copy of a process whose native libraries run thread pools (LightGBM's
and torch's OpenMP) can deadlock on its first call, so by default the worker is a fresh
interpreter (``"subprocess"`` on POSIX, multiprocessing's ``"spawn"`` elsewhere) and the game is
sent to it serialised with cloudpickle: lambdas, closures and functions of a script's
``__main__`` are sent by value, functions of importable modules by reference (the worker mirrors
the parent's ``sys.path`` and working directory), and the user's script is not run again. The
worker loads the game before the first timed call, so importing LightGBM or torch there does not
count against the timeout. Imported modules start from their files in a fresh interpreter, so
the worker digests its copy of the game and refuses it, naming the difference, unless its
identity (:mod:`shapleig.games.identity`) equals the parent's game's: a module global or class
attribute changed at run time would otherwise be evaluated with its old value. A game that cannot be serialised (it holds a lock, an open file or
connection) is refused with a :class:`~shapleig.errors.GameError` naming what failed, before any
evaluation; ``start_method="fork"`` (POSIX) inherits the game instead of serialising it, for games
whose libraries are fork-safe. A worker dies with its parent (Linux ``PR_SET_PDEATHSIG``; it also
exits when its pipe closes).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Callable

import numpy as np

from shapleig.errors import GameError

# (not "forkserver": its workers are children of the fork server, which outlives a killed parent)
START_METHODS = ("subprocess", "spawn", "fork")
# seconds a new worker may take to import the game's libraries and load it (torch: a few seconds)
START_SECONDS = 300.0


def check_timeout(timeout: Any, what: str = "timeout") -> float | None:
    """``timeout`` as a positive float of seconds, or None; ``ValueError`` naming it otherwise.

    Args:
        timeout: seconds (a positive finite number), or None for no limit.
        what: the argument's name in the error message.

    Returns:
        the timeout as a float, or None.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a number of seconds > 0 or None, got {timeout!r}")
    t = float(timeout)
    if not (t > 0 and np.isfinite(t)):
        raise ValueError(f"{what} must be a finite number of seconds > 0, got {timeout!r}")
    return t


def check_start_method(method: Any) -> str:
    """The worker start method: ``method`` if valid, else the default for this platform.

    Args:
        method: ``"subprocess"``, ``"spawn"`` or ``"fork"``; None: the platform's default.

    Returns:
        the start method to use.
    """
    if method is None:
        return "subprocess" if os.name == "posix" and sys.executable else "spawn"
    if method not in START_METHODS or method not in ("subprocess", *mp.get_all_start_methods()):
        available = [m for m in START_METHODS if m == "subprocess" or m in mp.get_all_start_methods()]
        raise ValueError(f"start_method must be one of {available}, got {method!r}")
    if method == "subprocess" and os.name != "posix":
        raise ValueError("start_method='subprocess' needs POSIX; use 'spawn'")
    return str(method)


def serialise_game(game: Any, distributions: dict[str, list[str]] | None = None) -> bytes:
    """``(distributions, game)`` as cloudpickle bytes for a worker process.

    :class:`GameError` names the problem (and the ways out) when the game cannot be serialised.

    Args:
        game: the game to send.
        distributions: :func:`~shapleig.games.identity.installed_distributions` of this process (None: the worker
            scans).

    Returns:
        the cloudpickle bytes of ``(distributions, game)``.
    """
    import cloudpickle

    try:
        return cloudpickle.dumps((distributions or {}, game), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - pickling raises many types
        raise GameError(
            f"timeout= evaluates the game in a worker process, which needs a copy of the game, but "
            f"{type(game).__name__} cannot be serialised: {type(exc).__name__}: {exc}. Keep locks, open files, "
            f"connections and generators out of the game (open them inside the call), run without a timeout, or "
            f"on POSIX use SerialEvaluator(timeout=..., start_method='fork') if the game's native libraries are "
            f"fork-safe (LightGBM's and torch's thread pools are not)") from exc


_LAUNCHER: ThreadPoolExecutor | None = None
_LAUNCHER_LOCK = threading.Lock()


def _launch(start: Callable[[], Any]) -> Any:
    """Run ``start`` (which creates a worker) on one long-lived thread.

    Linux's parent-death signal fires when the *thread* that created the child ends, so a worker
    started from a short-lived thread (an estimate run in a thread) would be killed with it.
    """
    global _LAUNCHER
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None:
            _LAUNCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shapleig-worker-launcher")
    return _LAUNCHER.submit(start).result()


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when its parent dies (Linux ``PR_SET_PDEATHSIG``).

    A worker hung inside the game would otherwise outlive a parent killed with SIGKILL. Ctrl-C in a
    terminal reaches the parent, which ends the worker: the worker ignores SIGINT.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # no prctl: the parent's exit still closes the pipe
            pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)


def _serve(game: Any, inbox: Connection, outbox: Connection) -> None:
    """Worker loop: evaluate each coalition matrix received until ``None`` or the pipe closes.

    Replies ``(values, seconds, error, counters)``; ``counters`` are the increments of the game's
    ``process_counters`` attributes (e.g. ``ImputerGame.calls``), which the parent adds to its copy.
    """
    names = tuple(getattr(game, "process_counters", ()) or ())
    while True:
        try:
            coalitions = inbox.recv()
        except (EOFError, OSError):
            return
        if coalitions is None:
            return
        before = {n: getattr(game, n, 0) for n in names}
        start = time.perf_counter()
        try:
            values, error = np.asarray(game(coalitions)), None
        except Exception as exc:  # noqa: BLE001 - reported as a failed attempt, like in-process
            values, error = None, f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - start
        counters = {n: getattr(game, n, 0) - before[n] for n in names}
        try:
            outbox.send((values, seconds, error, counters))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable value
            outbox.send((None, seconds, f"{type(exc).__name__}: {exc}", counters))


def _load_and_serve(inbox: Connection, outbox: Connection, parent: int) -> None:
    """A fresh worker.

    Load the game sent by the parent, reply ``("ready", its identity)`` (or ``("error", why)``),
    then serve.
    """
    _die_with_parent(parent)
    try:
        distributions, game = pickle.loads(inbox.recv_bytes())
        from shapleig.games.identity import adopt_distributions, game_identity

        if distributions:
            adopt_distributions(distributions)  # the parent's scan of the same environment
        identity = game_identity(game)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        outbox.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    outbox.send(("ready", identity))
    _serve(game, inbox, outbox)


def _serve_forked(game: Any, inbox: Connection, outbox: Connection, parent_ends: tuple[Connection, ...],
                  parent: int) -> None:
    """A forked worker.

    It inherited the game, and the parent's ends of the pipes, which it closes (else the pipe never
    reports end-of-file to it when the parent closes its end).
    """
    for conn in parent_ends:
        conn.close()
    _die_with_parent(parent)
    outbox.send(("ready", None))
    _serve(game, inbox, outbox)


def worker_main() -> None:
    """Entry point of a ``"subprocess"`` worker: ``python -c ... <read fd> <write fd> <parent pid> <sys.path>``."""
    rfd, wfd, parent = (int(a) for a in sys.argv[1:4])
    _load_and_serve(Connection(rfd, writable=False), Connection(wfd, readable=False), parent)


_BOOT = "import sys, json; sys.path[:] = json.loads(sys.argv[4]); from shapleig.runs.timeout import worker_main; worker_main()"


class WorkerProcess:
    """One killable process evaluating ``game``.

    :meth:`call` returns ``(output, seconds, error)`` and kills the process when the call exceeds
    ``timeout`` seconds (``error`` then says so).

    A worker that is not forked loads its copy of the game in a fresh interpreter, where imported
    modules start from their files: state the parent changed at run time (``config.W = 2`` on an
    imported module, a class attribute) would be missing. The worker therefore digests its copy
    (:func:`~shapleig.games.identity.game_identity`) and the copy is refused unless its identity
    equals the parent's game's, naming what differs.

    Args:
        game: the game; sent to the worker once (see the module docstring).
        start_method: ``"subprocess"``, ``"spawn"`` or ``"fork"`` (None: the platform's default,
            :func:`check_start_method`).
        payload: ``(serialised game, its identity)`` of a predecessor (a replacement reuses them).
        start_timeout: seconds the worker may take to load the game.

    Raises:
        GameError: the game cannot be serialised, the worker could not load it, or its copy is
            another game (naming why).
    """

    # complexity over budget: starting a worker process checks each way it can fail to start
    def __init__(  # noqa: C901
        self, game: Any, start_method: str | None = None, payload: tuple[bytes, dict] | None = None,
        start_timeout: float = START_SECONDS,
    ):
        self.method = check_start_method(start_method)
        self.game = game
        self.payload: tuple[bytes, dict] | None = None
        if self.method != "fork":
            from shapleig.games.identity import game_identity, installed_distributions

            if payload is None:
                identity = game_identity(game)  # (reads the installed distributions, sent along)
                payload = (serialise_game(game, installed_distributions()), identity)
            self.payload = payload
        self._popen: subprocess.Popen | None = None
        self._process: Any = None
        if self.method == "subprocess":
            # the parent's ends are not inheritable (PEP 446): the worker holds only its own two
            child_in, send = os.pipe()
            recv, child_out = os.pipe()
            self._out, self._in = Connection(send, readable=False), Connection(recv, writable=False)
            argv = [sys.executable, "-c", _BOOT, str(child_in), str(child_out), str(os.getpid()), json.dumps(sys.path)]
            try:
                self._popen = _launch(lambda: subprocess.Popen(argv, pass_fds=(child_in, child_out),
                                                               stdin=subprocess.DEVNULL))
            except BaseException:
                self._close_pipes()
                raise
            finally:
                os.close(child_in)
                os.close(child_out)
        else:
            ctx = mp.get_context(self.method)
            child_in, self._out = ctx.Pipe(duplex=False)
            self._in, child_out = ctx.Pipe(duplex=False)
            if self.method == "fork":
                args: tuple = (game, child_in, child_out, (self._out, self._in), os.getpid())
                target: Callable = _serve_forked
            else:
                args, target = (child_in, child_out, os.getpid()), _load_and_serve
            self._process = ctx.Process(target=target, args=args, daemon=True, name="shapleig-evaluation-worker")
            _launch(self._process.start)
            child_in.close()
            child_out.close()
        try:
            if self.payload is not None:
                self._out.send_bytes(self.payload[0])
            reply = self._in.recv() if self._in.poll(start_timeout) else ("error", f"not ready after {start_timeout:g} s")
        except (EOFError, OSError) as exc:
            reply = ("error", f"the process exited while loading the game ({type(exc).__name__}; exit code "
                              f"{self._exitcode(2.0)}; its error output, if any, is above)")
        except BaseException:
            self.kill()
            raise
        if reply[0] != "ready":
            self.kill()
            raise GameError(f"the evaluation worker process ({self.method}) could not load the game: {reply[1]}")
        if self.payload is not None:
            self._check_copy(self.payload[1], reply[1])

    def _check_copy(self, expected: dict, copy: dict) -> None:
        """Refuse a worker whose copy of the game is not the parent's game (see the class doc)."""
        from shapleig.games.identity import identity_differences

        if copy == expected or "opaque" in expected:  # an opaque game cannot be compared
            return
        self.kill()
        raise GameError(
            f"the evaluation worker's copy of the game differs from the game in this process: "
            f"{'; '.join(identity_differences(expected, copy))} (a fresh worker imports modules from their files, so "
            f"state changed at run time is missing there). Set that state where the module is defined, pass it to "
            f"the game, or on POSIX use SerialEvaluator(timeout=..., start_method='fork')")

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self._popen.pid if self._popen is not None else self._process.pid

    @property
    def alive(self) -> bool:
        """Whether the worker process is still running."""
        if self._popen is not None:
            return self._popen.poll() is None
        return self._process.is_alive()

    def _exitcode(self, wait: float) -> int | None:
        try:
            if self._popen is not None:
                return self._popen.wait(wait)
            self._process.join(wait)
            return self._process.exitcode
        except subprocess.TimeoutExpired:
            return None

    def call(self, coalitions: np.ndarray, timeout: float) -> tuple[Any, float, str | None]:
        """Evaluate ``coalitions`` in the worker: ``(values, seconds, None)`` or ``(None, seconds, error)``.

        Args:
            coalitions: ``bool[m, p]``.
            timeout: seconds the call may take; a slower worker is killed and the call reported failed.

        Returns:
            ``(values, seconds, error)``: the game's raw output and None, or None and the error text.
        """
        start = time.perf_counter()
        try:
            self._out.send(coalitions)
            ready = self._in.poll(timeout)
            if ready:
                values, seconds, error, counters = self._in.recv()
        except (OSError, EOFError) as exc:
            code = self._exitcode(1.0)
            self.kill()
            return None, time.perf_counter() - start, (
                f"the evaluation worker process died (exit code {code}) while evaluating ({type(exc).__name__})")
        except BaseException:  # Ctrl-C while waiting: the worker is mid-call, end it
            self.kill()
            raise
        if not ready:
            pid = self.pid
            self.kill()
            return None, time.perf_counter() - start, (
                f"TimeoutError: timed out after {timeout:g} s (the evaluation was abandoned and its worker "
                f"process {pid} killed)")
        for name, increment in counters.items():  # e.g. the model calls made in the worker
            setattr(self.game, name, getattr(self.game, name, 0) + increment)
        return values, seconds, error

    def kill(self) -> None:
        """Kill the process (SIGKILL: a hung game cannot refuse) and reap it."""
        if self.alive:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._exitcode(5.0)
        self._close_pipes()

    def close(self) -> None:
        """End the process: ask it to stop (it exits at once between calls); kill it if it does not."""
        try:
            if self.alive:
                self._out.send(None)
        except (OSError, ValueError):
            pass
        self._close_pipes()
        if self._exitcode(1.0) is None:
            self.kill()

    def _close_pipes(self) -> None:
        for conn in (self._out, self._in):
            try:
                conn.close()
            except OSError:
                pass
