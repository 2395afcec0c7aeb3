"""Rows of :func:`shapleig.explain_X` as independent jobs: in this process, on joblib workers or on an executor.

A row's explanation depends only on the row, the shared inputs (model, background, imputer, method,
budget) and the row's own seed, so rows can run anywhere in any order and give the values of the
sequential run. :class:`RowJob` holds the shared inputs; it travels to the workers once per row as a
cloudpickle payload (so a lambda model or a model defined in ``__main__`` works on a plain
``ProcessPoolExecutor`` too) and a worker keeps the last payload it decoded, so the model is
unpickled once per worker, not per row. :func:`run_rows` yields ``(row, estimate)`` as rows finish;
each row is built only when it is sent.
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from shapleig.estimation.result import ShapleyEstimate
from shapleig.explanation.choose_imputer import imputer_game
from shapleig.explanation.explain import explain_game
from shapleig.runs.evaluators import with_timeout

ROW_STORE = "row-{:05d}.sqlite"

# the last payload this worker decoded, (token, job): rows of one call share one token. One tuple,
# replaced whole, so threads of a thread-pool executor never see a half-written entry
_decoded: tuple[str, Any] = ("", None)


@dataclass
class RowJob:
    """What every row of one :func:`shapleig.explain_X` call shares.

    Attributes:
        predict: the model's prediction function.
        background: the background rows.
        estimator: the estimator object.
        budget: coalitions per row.
        seeds: one seed per row (row ``r`` runs with ``seeds[r]``).
        folder: the store folder (one store per row inside it), or None.
        timeout: seconds per coalition evaluation, or None.
        exact_if_cheap: enumerate a cheap small game instead of running the GP.
        game_options: the imputer game's keywords (``imputer``, ``imputer_options``, ``output``,
            ``max_rows``, ``feature_names``, ``game_id``).
    """

    predict: Callable
    background: Any
    estimator: Any
    budget: int
    seeds: list[int]
    folder: Path | None
    timeout: float | None
    exact_if_cheap: bool
    game_options: Mapping[str, Any]

    def game(self, x: Any) -> Any:
        """The imputer game of the row ``x``.

        Args:
            x: the explained row, as ``X_rows`` holds it.

        Returns:
            the row's imputer game.
        """
        return imputer_game(self.predict, self.background, x, **self.game_options)

    def explain(self, r: int, x: Any, game: Any = None) -> ShapleyEstimate:
        """Explain row ``r`` (its seed and store file), closing its timed worker process if one ran.

        Args:
            r: the row's position in ``X_rows``.
            x: the row.
            game: the row's game when already built (None: built here).

        Returns:
            the row's estimate, ``info["row"] = r``.
        """
        game = self.game(x) if game is None else game
        path = None if self.folder is None else self.folder / ROW_STORE.format(r)
        evaluator = with_timeout(None, self.timeout)
        try:
            est = explain_game(game, self.estimator, self.budget, self.seeds[r], store=path, evaluator=evaluator,
                               progress=False, exact_if_cheap=self.exact_if_cheap)
        finally:
            if evaluator is not None:
                evaluator.close()  # the worker process of a timed run
        est.info["row"] = r
        return est


def check_n_jobs(n_jobs: Any) -> int:
    """``n_jobs`` as a worker count: a positive integer, or -1 for one worker per core.

    Args:
        n_jobs: the value given.

    Returns:
        the number of workers (>= 1).

    Raises:
        ValueError: anything else (0, -2, 1.5, "2", True).
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not (n_jobs >= 1 or n_jobs == -1):
        raise ValueError(f"n_jobs must be a positive number of workers or -1 (one per core), got {n_jobs!r}")
    return (os.cpu_count() or 1) if n_jobs == -1 else n_jobs


def _explain_payload(token: str, payload: bytes, r: int, x: Any) -> ShapleyEstimate:
    """Worker side: decode the shared job (once per worker and call) and explain row ``r``."""
    global _decoded
    known, job = _decoded
    if known != token:
        import cloudpickle

        job = cloudpickle.loads(payload)
        _decoded = (token, job)
    return job.explain(r, x)


def run_rows(job: RowJob, n_rows: int, row: Callable[[int], Any], *, n_jobs: int = 1,
             executor: Executor | None = None, first_game: Any = None) -> Iterator[tuple[int, ShapleyEstimate]]:
    """``(r, estimate)`` for every row, as rows finish (in order when sequential).

    Args:
        job: the shared inputs.
        n_rows: how many rows.
        row: ``r -> the r-th row`` as the imputer game takes it (built when its row is sent).
        n_jobs: joblib worker processes (1: in this process).
        executor: a ``concurrent.futures.Executor`` (a process pool, Dask's ``client.get_executor()``)
            running one task per row instead; None: ``n_jobs`` decides.
        first_game: row 0's game, already built by the caller's checks (sequential runs reuse it).

    Yields:
        ``(r, estimate)`` pairs; the first failing row's error is raised once it is known, after
        the rows not yet started are cancelled (finished rows keep their stores).
    """
    if executor is None and n_jobs == 1:
        for r in range(n_rows):
            yield r, job.explain(r, row(r), game=first_game if r == 0 else None)
        return
    import cloudpickle

    token, payload = uuid.uuid4().hex, cloudpickle.dumps(job)
    if executor is not None:
        yield from _on_executor(executor, token, payload, n_rows, row)
        return
    from joblib import Parallel, delayed

    calls = (delayed(_indexed)(token, payload, r, row(r)) for r in range(n_rows))
    yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(calls)


def _indexed(token: str, payload: bytes, r: int, x: Any) -> tuple[int, ShapleyEstimate]:
    return r, _explain_payload(token, payload, r, x)


# rows submitted to an executor ahead of the finished ones: enough to keep a cluster busy, few
# enough that a long run does not queue every row (and its copy of the payload) at once
MAX_SUBMITTED = 64


def _on_executor(executor: Executor, token: str, payload: bytes, n_rows: int, row: Callable[[int], Any]
                 ) -> Iterator[tuple[int, ShapleyEstimate]]:
    """One task per row on ``executor`` (at most :data:`MAX_SUBMITTED` at a time), yielded as they finish.

    On a failure the rows not yet started are cancelled.
    """
    pending: dict[Future, int] = {}
    upcoming = iter(range(n_rows))
    try:
        while True:
            for r in upcoming:
                pending[executor.submit(_explain_payload, token, payload, r, row(r))] = r
                if len(pending) >= MAX_SUBMITTED:
                    break
            if not pending:
                return
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                r = pending.pop(future)
                yield r, future.result()
    finally:
        for future in pending:
            future.cancel()  # rows not yet started; running ones finish in their workers


__all__ = ["MAX_SUBMITTED", "ROW_STORE", "RowJob", "check_n_jobs", "run_rows"]
