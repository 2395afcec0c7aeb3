"""Every file the command line writes is checked as the evaluation store checks its path (issue 34, item 6).

A FIFO at an output path (the results table, its run journal ``<out>.partial.jsonl``, a figure, an
ablation's or a study's files) blocked the command for ever on the first write: it is refused up
front, exit 2 with one line naming the path, and nothing is written into it. Each FIFO here has a
reader that drains it, so a command that does write into it finishes instead of hanging the test.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from pathlib import Path
from typing import Iterator

import pytest

from shapleig_tasks.cli import main
from shapleig_tasks.harness import check_output_file, check_output_path, journal_path

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


@contextlib.contextmanager
def drained_fifo(path: Path) -> Iterator[list[bytes]]:
    """A FIFO at ``path`` whose reader keeps draining it; yields the bytes written into it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader is open: opening it to write never blocks
    received: list[bytes] = []
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.05)
            chunk = os.read(fd, 1 << 16) if ready else b""
            if chunk:
                received.append(chunk)
            elif ready:  # end of file: no writer now
                stop.wait(0.01)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        thread.join()
        os.close(fd)


RUN = ["run", "--tasks", "wvg-7", "--methods", "kernelshap", "--budgets", "2p", "--seeds", "1", "--quiet"]
ABLATE = ["ablate", "--tasks", "soug-6", "--budgets", "2p", "--seeds", "1", "--refit", "never", "--pool-size", "40",
          "--acquisitions", "eig", "--quiet"]


@pytest.mark.parametrize(("argv", "fifo"), [
    (RUN + ["--out", "r.parquet"], "r.parquet.partial.jsonl"),  # the journal: its first append blocked
    (RUN + ["--out", "r.parquet"], "r.parquet"),
    (["plot", "r.parquet", "--out", "fig.png"], "fig.png"),
    (ABLATE + ["--out", "ab"], "ab/traces.csv"),
    (ABLATE + ["--out", "ab"], "ab/mse.png"),
    (["hpi", "--quick", "--out", "study"], "study/shapley.csv"),  # written after every evaluation was paid for
    (["hpi", "--quick", "--out", "study"], "study/settings.json"),
])
def test_a_fifo_among_the_outputs_is_refused_before_anything_runs(argv, fifo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with drained_fifo(tmp_path / fifo) as received, pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"output path {fifo} is a FIFO (named pipe), not a regular file" in err[0], err
    assert received == []  # nothing was written into it
    assert not (tmp_path / "r.parquet.partial.jsonl").is_file() and not (tmp_path / "ab" / "runs.csv").exists()
    assert not (tmp_path / "study" / "evaluations.sqlite").exists()


def test_the_library_harness_refuses_a_fifo_journal(tmp_path):
    from shapleig_tasks.harness import RunJournal, run_benchmark

    out = tmp_path / "r.parquet"
    with drained_fifo(journal_path(out)) as received:
        with pytest.raises(ValueError, match=r"r\.parquet\.partial\.jsonl is a FIFO \(named pipe\)"):
            run_benchmark(["wvg-7"], ["kernelshap"], ["2p"], [0], out=out, progress=False)
        with pytest.raises(ValueError, match="is a FIFO"):
            RunJournal(journal_path(out))
    assert received == []


def test_output_checks_name_each_kind_of_path(tmp_path):
    assert check_output_file(tmp_path / "new.csv") == tmp_path / "new.csv"
    (tmp_path / "old.csv").write_text("x")
    assert check_output_path(tmp_path / "old.csv") == tmp_path / "old.csv"
    with pytest.raises(ValueError, match="is a folder"):
        check_output_file(tmp_path)
    with pytest.raises(ValueError, match=r"/dev/null is a character device, not a regular file"):
        check_output_path("/dev/null")
    with drained_fifo(tmp_path / "pipe.csv"), pytest.raises(ValueError, match="is a FIFO"):
        check_output_path(tmp_path / "pipe.csv")
