"""Thread control for the small dense linear algebra of the GP: torch intra-op and BLAS pools."""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator

_THREADPOOL_CONTROLLER = None


def _threadpool_limiter() -> Callable:
    """``limits -> context manager`` limiting the BLAS pools, from one cached threadpoolctl controller.

    ``threadpool_limits`` rescans the loaded shared libraries on every call (~2 ms, i.e. about half
    of a small game's whole selection time when the loop enters this twice per step); the
    controller scans once. Libraries loaded later are not seen, as with any controller.
    """
    global _THREADPOOL_CONTROLLER
    try:  # shipped with scikit-learn; without it only torch is limited
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover
        return lambda limits: contextlib.nullcontext()
    if _THREADPOOL_CONTROLLER is None:
        _THREADPOOL_CONTROLLER = ThreadpoolController()
    return lambda limits: _THREADPOOL_CONTROLLER.limit(limits=limits)


@contextlib.contextmanager
def compute_threads(n_threads: int | None = 1) -> Iterator[None]:
    """Limit torch intra-op and BLAS (threadpoolctl) threads to ``n_threads`` inside the block.

    The GP and Shapley-posterior matrices are small (t, p, pool <= a few thousand); on a shared
    machine idle-spinning thread pools made fits and triangular solves ~10x slower (measured: a
    t = 32 fit took 2.1 s with 2 torch threads, 0.22 s with 1). ``None`` leaves the pools alone.
    Previous settings are restored on exit.

    Args:
        n_threads: the thread count for torch and the BLAS pools inside the block; None leaves them as they are.

    Yields:
        nothing; the limits hold while the ``with`` block runs.
    """
    if n_threads is None:
        yield
        return
    threadpool_limits = _threadpool_limiter()
    # torch is limited only when something already loaded it (the gpytorch engine, the botorch
    # faces): the default numpy path never imports it
    torch = sys.modules.get("torch")
    old = torch.get_num_threads() if torch is not None else None
    if torch is not None and old != n_threads:
        torch.set_num_threads(int(n_threads))
    try:
        with threadpool_limits(limits=int(n_threads)):
            yield
    finally:
        if torch is not None and torch.get_num_threads() != old:
            torch.set_num_threads(old)
