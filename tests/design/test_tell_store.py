"""Telling an ask/tell run from other processes: ``shapleig.tell_store`` in a worker, ``AskTell.sync`` in the driver.

Promises: values worker processes report into the run's store are taken by the driver's sync (at
``ask``, ``done`` and ``result``), and the run ends on the estimate of an in-process ask/tell run
told the same values in the same pattern; a value reported for a coalition not asked yet waits in
the store and is used when the run asks it; a value told twice (a worker, then the driver) is
charged once and the stored one wins; a store of another game is refused; a bad report is refused
by name and writes nothing.

Workers are real processes (``sys.executable``), started and waited for: the driver syncs only
after they exited, so nothing depends on timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import shapleig
from shapleig import EvaluationStore, FunctionGame, ShaplEIG
from shapleig.errors import CoalitionError, GameError, StoreError, StoreMismatchError
from shapleig.games.coalitions import coalition_keys

P = 5
GAME = textwrap.dedent("""
    import numpy as np

    def value(Z):
        '''Neither additive nor a function of the size: the GP has something to learn.'''
        Z = np.atleast_2d(Z).astype(float)
        return Z @ np.arange(1.0, Z.shape[1] + 1.0) + 1.5 * Z[:, 0] * Z[:, 1] - 0.7 * Z[:, 2] * Z[:, 4] \\
            + np.sin(Z.sum(axis=1))
""")
_namespace: dict = {}
exec(compile(GAME, "GAME", "exec"), _namespace)  # noqa: S102 - the same source the workers run
value = _namespace["value"]

WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    import shapleig
    from game import value

    store, batch, game_id = sys.argv[1], sys.argv[2], sys.argv[3] or None
    n_players = int(sys.argv[4]) if len(sys.argv) > 4 else {p}
    Z = np.load(batch)
    print(shapleig.tell_store(store, Z, value(Z), n_players=n_players, game_id=game_id), flush=True)
""").format(p=P)


@pytest.fixture
def workers(tmp_path):
    """``report(store, Z, game_id="g", n_players=P, split=1) -> (returncodes, stdouts, stderrs)``: worker
    processes each evaluate a share of ``Z`` and tell it into the store; all of them have exited on return."""
    (tmp_path / "game.py").write_text(GAME)
    (tmp_path / "worker.py").write_text(WORKER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(tmp_path)}
    calls = [0]

    def report(store, Z, game_id="g", n_players=P, split=1):
        procs = []
        for share in np.array_split(np.arange(len(Z)), split):
            calls[0] += 1
            batch = tmp_path / f"batch{calls[0]}.npy"
            np.save(batch, Z[share])
            procs.append(subprocess.Popen(  # started together: they write the store concurrently
                [sys.executable, str(tmp_path / "worker.py"), str(store), str(batch), game_id or "", str(n_players)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        outs = [proc.communicate() for proc in procs]
        return [proc.returncode for proc in procs], [o for o, _ in outs], [e for _, e in outs]

    return report


def _drive(run, report, seed: int = 0) -> None:
    """Ask a random number of coalitions, report a random subset of the pending ones (in asking order)."""
    rng = np.random.default_rng(seed)
    while not run.done:
        run.ask(int(rng.integers(1, 4)))
        out = run.pending
        if len(out):
            pick = np.sort(rng.choice(len(out), size=int(rng.integers(1, len(out) + 1)), replace=False))
            report(out[pick])


# -- 1. workers report, the driver syncs: the in-process run's estimate -----------------------------------
def test_values_reported_by_worker_processes_end_on_the_in_process_estimate(tmp_path, workers):
    budget, store = 13, tmp_path / "run.sqlite"
    reference = ShaplEIG(pool_size=64).ask_tell(P, budget, seed=3, game_id="g")
    _drive(reference, lambda Z: reference.tell(Z, value(Z)))

    run = ShaplEIG(pool_size=64).ask_tell(P, budget, seed=3, store=store, game_id="g")
    synced: list[int] = []

    def report(Z):
        codes, outs, errs = workers(store, Z, split=min(2, len(Z)))
        assert codes == [0] * len(codes), errs
        assert sum(int(o) for o in outs) == len(Z)  # every value written, once
        assert set(coalition_keys(Z)) <= set(coalition_keys(run.pending))  # stored, not synced yet
        synced.append(len(Z))

    _drive(run, report)
    got, want = run.result(), reference.result()
    np.testing.assert_array_equal(run.loop.X, reference.loop.X)  # the same coalitions, told in the same order
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.std, want.std, rtol=0, atol=1e-12)
    assert run.told == budget == sum(synced) and len(synced) > 3
    accounting = run.loop.game.accounting()
    assert accounting["n_evaluations"] == budget and accounting["n_store_hits"] == budget  # charged once each
    assert accounting["n_game_evaluations"] == 0  # the driver told nothing itself
    assert len(EvaluationStore(store)) == budget  # one row per coalition: nothing written twice


def test_sync_takes_what_is_stored_and_returns_how_many(tmp_path, workers):
    store = tmp_path / "run.sqlite"
    run = ShaplEIG(pool_size=64).ask_tell(P, P + 5, seed=0, store=store, game_id="g")
    design = run.ask(P + 1)
    assert run.sync() == 0  # nothing stored yet
    workers(store, design[[4, 1]])
    assert run.told == 0 and len(run.pending) == P + 1  # stored, not yet synced
    assert run.sync() == 2 and run.told == 2
    assert run.sync() == 0  # taken once
    assert set(coalition_keys(run.pending)) == set(coalition_keys(np.delete(design, [1, 4], axis=0)))
    workers(store, design[[0, 2, 3, 5]])
    with_sync = run.result()  # result() syncs first: the design is complete, the estimate exists
    assert with_sync.evaluations == P + 1 and with_sync.info["pending"] == 0
    assert len(run.ask(3)) == 3  # acquisitions start
    assert len(run.ask(3)) == 1  # the budget leaves one more
    workers(store, run.pending)
    assert run.told == P + 1 and run.done  # done syncs first: every value is told, nothing is left
    assert run.told == P + 5 and run.result().evaluations == P + 5


# -- 2. not-pending values wait in the store --------------------------------------------------------------
def test_values_of_coalitions_not_asked_yet_wait_and_are_used_when_asked(tmp_path, workers):
    budget, store = 14, tmp_path / "run.sqlite"
    reference = ShaplEIG(pool_size=64).ask_tell(P, budget, seed=1, game_id="g")
    while not reference.done:
        Z = reference.ask(1)
        reference.tell(Z, value(Z))
    future = reference.loop.X[[P + 3, P + 5, P + 6]]  # acquisitions the run will select later
    never = np.ones((1, P), dtype=bool)
    never[0, 1:4] = False
    assert not set(coalition_keys(never)) & set(coalition_keys(reference.loop.X))  # never asked in this run

    run = ShaplEIG(pool_size=64).ask_tell(P, budget, seed=1, store=store, game_id="g")
    codes, _, errs = workers(store, np.concatenate([future, never]))
    assert codes == [0], errs
    assert run.sync() == 0 and run.told == 0  # nothing pending: the values wait
    asked: list[bytes] = []
    while not run.done:
        Z = run.ask(1)
        asked.extend(coalition_keys(Z))
        run.tell(Z, value(Z))
    assert not set(asked) & set(coalition_keys(future))  # taken from the store when selected, never asked
    assert len(asked) == budget - len(future)
    np.testing.assert_array_equal(run.loop.X, reference.loop.X)
    np.testing.assert_allclose(run.result().values, reference.result().values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.result().std, reference.result().std, rtol=0, atol=1e-12)
    assert run.loop.game.accounting()["n_store_hits"] == len(future)
    assert len(EvaluationStore(store)) == budget + 1  # the never-asked value is kept, not charged


# -- 3. a value told twice: charged once, the stored value wins ---------------------------------------------
def test_a_value_told_by_a_worker_and_by_the_driver_is_charged_once_and_the_stored_one_wins(tmp_path, workers):
    store = tmp_path / "run.sqlite"
    run = ShaplEIG(pool_size=64).ask_tell(P, P + 4, seed=2, store=store, game_id="g")
    design = run.ask(P + 1)
    workers(store, design[:2])
    run.tell(design[:1], [123.0])  # before any sync: the store's value wins over the told one
    assert run.told == 1 and run.loop.game.evaluations == 1
    assert run.loop.game.history()[1][0] == value(design[:1])[0] != 123.0
    assert run.sync() == 1 and run.told == 2  # the second one, reported by the worker
    run.tell(design[1:2], [456.0])  # synced already: accepted, left as stored, not charged again
    assert run.told == 2 and run.loop.game.evaluations == 2
    assert run.loop.game.history()[1][1] == value(design[1:2])[0]
    with pytest.raises(CoalitionError, match="told already"):  # the driver's own tell is still told once
        run.tell(design[:1], [0.0])
    run.tell(design[2:], value(design[2:]))
    np.testing.assert_array_equal(run.loop.game.history()[1], value(design))  # the archive holds the stored values
    found, stored = EvaluationStore(store).lookup(design)
    assert found.all()
    np.testing.assert_array_equal(stored, value(design))
    assert len(EvaluationStore(store)) == P + 1  # no second row for either


# -- 4. a store of another game is refused ------------------------------------------------------------------
def test_a_store_of_another_game_is_refused_by_a_worker_and_nothing_is_written(tmp_path, workers):
    store = tmp_path / "run.sqlite"
    run = ShaplEIG(pool_size=64).ask_tell(P, P + 4, seed=0, store=store, game_id="g")
    design = run.ask(P + 1)
    codes, _, errs = workers(store, design[:2], game_id="other")
    assert codes == [1] and "StoreMismatchError" in errs[0] and "ask_tell: g vs other" in errs[0]
    codes, _, errs = workers(store, np.ones((1, P + 1), dtype=bool), n_players=P + 1)
    assert codes == [1] and "StoreMismatchError" in errs[0] and "n_players" in errs[0]
    # the store of an estimate() run on a game: not an ask/tell run's store
    other = tmp_path / "estimate.sqlite"
    ShaplEIG(pool_size=64).estimate(FunctionGame(value, n_players=P, game_id="g"), P + 2, seed=0, store=other)
    with pytest.raises(StoreMismatchError, match="ToldValues"):
        shapleig.tell_store(other, design[:1], [1.0], n_players=P, game_id="g")
    assert len(EvaluationStore(store)) == 0 and len(EvaluationStore(other)) == P + 2
    assert run.sync() == 0 and run.told == 0


# -- 5. bad reports: refused by name, nothing written --------------------------------------------------------
def test_bad_reports_are_refused_by_name_and_write_nothing(tmp_path):
    store = tmp_path / "run.sqlite"
    run = ShaplEIG(pool_size=64).ask_tell(P, P + 4, seed=1, store=store)
    design = run.ask(P + 1)
    Z, y = design[:2], value(design[:2])
    unbound = tmp_path / "unbound.sqlite"
    EvaluationStore(unbound).close()  # a store file no run has used
    missing = tmp_path / "missing.sqlite"
    cases = [
        (dict(Z=Z[:, :-1]), CoalitionError, "shape"),
        (dict(Z=Z.astype(float)), CoalitionError, "dtype"),
        (dict(Z=np.concatenate([Z[:1], Z[:1]])), CoalitionError, "repeats"),
        (dict(y=[y[0], np.nan]), ValueError, "not finite"),
        (dict(y=[np.inf, y[1]]), ValueError, "not finite"),
        (dict(y=y[:1]), ValueError, "one value per coalition"),
        (dict(y=["a", "b"]), ValueError, "one number per coalition"),
        (dict(seconds=[1.0, -1.0]), ValueError, "seconds"),
        (dict(seconds=[1.0, 2.0, 3.0]), ValueError, "seconds"),
        (dict(n_players=1), GameError, "players"),
        (dict(n_players=P + 1), CoalitionError, "shape"),
        (dict(store=missing), StoreError, "no evaluation store"),
        (dict(store=":memory:"), StoreError, "no evaluation store"),
        (dict(store=unbound), StoreError, "belongs to no run"),
        (dict(game_id="other"), StoreMismatchError, "ask_tell:  vs other"),
    ]
    for change, error, message in cases:
        call = dict(store=store, Z=Z, y=y, n_players=P, game_id=None) | change
        with pytest.raises(error, match=message):
            shapleig.tell_store(call.pop("store"), call.pop("Z"), call.pop("y"), **call)
        assert len(EvaluationStore(store).records()) == 0 and not missing.exists()
        assert len(EvaluationStore(unbound).records()) == 0 and not EvaluationStore(unbound).meta()
    assert run.sync() == 0 and run.told == 0
    assert shapleig.tell_store(store, Z, y, n_players=P, seconds=[0.5, 2.0]) == 2  # the refused calls left it usable
    assert shapleig.tell_store(store, Z[::-1], y[::-1], n_players=P) == 0  # stored already: kept, nothing written
    assert [r.seconds for r in EvaluationStore(store).records()] == [0.5, 2.0]
    assert shapleig.tell_store(store, np.zeros((0, P), dtype=bool), [], n_players=P) == 0
    assert run.sync() == 2


# -- 6. the guide's SLURM example runs as written (sbatch played by a script starting the array jobs) -------
FAKE_SBATCH = textwrap.dedent("""\
    #!{python}
    # sbatch --wait --array=0-N worker.sh: the array's jobs, one process each, started together and waited for
    import os, subprocess, sys
    array = next(a for a in sys.argv if a.startswith("--array="))
    first, last = map(int, array.split("=")[1].split("-"))
    assert "--wait" in sys.argv and sys.argv[-1] == "worker.sh", sys.argv
    jobs = [subprocess.Popen([sys.executable, "worker.py"], env={{**os.environ, "SLURM_ARRAY_TASK_ID": str(i)}})
            for i in range(first, last + 1)]
    sys.exit(max(job.wait() for job in jobs))
""")


def guide_blocks(heading: str = "Tell from another process") -> dict[str, str]:
    """The ``text`` blocks under the guide's ``#### <heading>``, keyed by the file each names in its first line."""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text(encoding="utf-8")
    match = re.search(rf"^#### {re.escape(heading)}\n(.*?)(?=^#{{2,4}} )", text, flags=re.S | re.M)
    assert match is not None, f"docs/guide.md has no section '#### {heading}'"
    blocks = re.findall(r"^```text\n# ([\w.]+)[^\n]*\n(.*?)^```", match.group(1), flags=re.S | re.M)
    return {name: body for name, body in blocks}


def test_the_guides_slurm_example_runs_and_ends_on_the_in_process_estimate(tmp_path, monkeypatch):
    blocks = guide_blocks()
    assert {"driver.py", "worker.py", "ray_driver.py"} <= set(blocks)
    (tmp_path / "my_project.py").write_text(GAME + "\n\ndef simulate(z):\n    return float(value(z)[0])\n")
    (tmp_path / "worker.py").write_text(blocks["worker.py"])
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text(FAKE_SBATCH.format(python=sys.executable))
    sbatch.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{sbatch.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    real_run, rounds = subprocess.run, []

    def counted_run(*args, **kwargs):  # a driver that never sees its values would submit for ever: fail instead
        rounds.append(args)
        if len(rounds) > 8:
            raise RuntimeError(f"the driver submitted {len(rounds)} rounds; 3 tell every value")
        return real_run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted_run)
    namespace: dict = {"__name__": "__guide_example__"}
    exec(compile(blocks["driver.py"], "docs/guide.md (driver.py)", "exec", dont_inherit=True), namespace)  # noqa: S102
    run, est = namespace["run"], namespace["est"]
    p, budget, q = run.n_players, run.budget, namespace["q"]
    reference = ShaplEIG().ask_tell(p, budget, seed=0, game_id="my-sim")  # the same values, the same pattern
    while not reference.done:
        reference.ask(q)
        reference.tell(reference.pending, np.array([float(value(z)[0]) for z in reference.pending]))
    np.testing.assert_array_equal(run.loop.X, reference.loop.X)
    np.testing.assert_allclose(est.values, reference.result().values, rtol=0, atol=1e-12)
    assert est.evaluations == budget and run.loop.game.accounting()["n_game_evaluations"] == 0
    assert len(rounds) == 3  # the design (7), then 8 and 5 acquisitions
    compile(blocks["ray_driver.py"], "docs/guide.md (ray_driver.py)", "exec")  # not run (no Ray): it parses
