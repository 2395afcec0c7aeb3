"""Where ``shapleig run`` evaluates games: in process, or on workers (``--workers N``, ``--dask-scheduler``).

:func:`evaluation_cluster` yields the evaluator a run passes to ``estimate(..., evaluator=)`` and the
number of evaluations it can run at once (the ``batch_size`` ShaplEIG is given, so its
asynchronous loop keeps every worker busy), and shuts down what it started.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


def dask_available() -> bool:
    """Whether ``distributed`` (the ``dask`` extra) is installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def evaluation_cluster(workers: int | None = None, scheduler: str | None = None,
                       processes: bool = True) -> Iterator[tuple[Any, int]]:
    """``(evaluator, slots)`` for the run: ``(None, 1)`` when neither option is given.

    Args:
        workers: a LocalCluster of this many single-threaded workers (a process pool when
            ``distributed`` is not installed).
        scheduler: address of a running Dask scheduler (``tcp://host:8786``); its workers' threads
            are the slots.
        processes: LocalCluster workers as processes (games must pickle) or threads.

    Example:
        >>> with evaluation_cluster() as (evaluator, slots):
        ...     evaluator, slots
        (None, 1)
    """
    from shapleig import ExecutorEvaluator

    if workers is not None and scheduler is not None:
        raise ValueError("give --workers or --dask-scheduler, not both")
    if workers is None and scheduler is None:
        yield None, 1
        return
    if scheduler is not None:
        if not dask_available():
            raise ValueError("--dask-scheduler needs distributed: pip install 'shapleig[dask]'")
        from distributed import Client

        with Client(scheduler) as client:
            info = client.scheduler_info()
            slots = sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values())
            yield ExecutorEvaluator(client.get_executor()), max(slots, 1)
        return
    if isinstance(workers, bool) or int(workers) < 1:
        raise ValueError(f"--workers must be a positive integer, got {workers!r}")
    workers = int(workers)
    if dask_available():
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            yield ExecutorEvaluator(client.get_executor()), workers
        return
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    pool_type = ProcessPoolExecutor if processes else ThreadPoolExecutor
    with pool_type(workers) as pool:
        yield ExecutorEvaluator(pool), workers
