"""``ShaplEIG.ask_tell``: the design loop driven from outside (ask coalitions, evaluate anywhere, tell values).

Promises: a sequential ask(1)/tell loop is ``estimate()``; ask(q) is the synchronous greedy batch;
bad tells are refused by name and change nothing; with a store every told value is recorded and a
new run (in this process or another, after a SIGKILL) resumes without asking anything twice.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shapleig import BudgetedGame, EvaluationStore, FunctionGame, ShaplEIG
from shapleig.design.loop import DesignLoop
from shapleig.errors import BudgetError, CoalitionError
from shapleig.games.coalitions import coalition_keys
from shapleig.gp.posterior import Hyperparameters

REPO = Path(__file__).resolve().parents[2]
P = 6
WEIGHTS = np.arange(1.0, P + 1.0)


def value(Z: np.ndarray) -> np.ndarray:
    """A game that is neither additive nor a function of the size (the GP has something to learn)."""
    Z = np.atleast_2d(Z).astype(float)
    return Z @ WEIGHTS + 1.5 * Z[:, 0] * Z[:, 1] - 0.7 * Z[:, 2] * Z[:, 4] + np.sin(Z.sum(axis=1))


def _sequential(run, counter: list | None = None) -> None:
    while not run.done:
        Z = run.ask(1)
        if counter is not None:
            counter.extend(coalition_keys(Z))
        run.tell(Z, value(Z))


def _fixed(p: int = P) -> Hyperparameters:
    return Hyperparameters.hamming(np.linspace(0.6, 1.8, p), 1.3, 1e-3, 0.1)


# -- 1. a sequential ask(1)/tell loop is estimate() ------------------------------------------------------
@pytest.mark.parametrize("options", [{}, {"refit": "every", "pool_size": 96}], ids=["default", "refit-every"])
def test_sequential_ask_tell_equals_estimate(options):
    budget, seed = 22, 3
    game = BudgetedGame(FunctionGame(value, n_players=P), budget)
    est = ShaplEIG.from_options(**options).estimate(game, budget, seed=seed)
    run = ShaplEIG.from_options(**options).ask_tell(P, budget, seed=seed)
    _sequential(run)
    got = run.result()
    np.testing.assert_array_equal(run.loop.X, game.history()[0])  # the same coalitions, in the same order
    np.testing.assert_allclose(got.values, est.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.std, est.std, rtol=0, atol=1e-12)
    assert got.evaluations == est.evaluations == budget and got.method == est.method
    assert run.result() is got  # the final read-out is computed once


# -- 2. ask(q): q distinct new coalitions, the synchronous greedy batch -------------------------------
@pytest.mark.parametrize("fixed", [True, False], ids=["fixed-hyper", "fitted"])
def test_ask_q_is_the_synchronous_greedy_batch(fixed):
    options = dict(pool_size=64, batch_size=4)
    if fixed:
        options["hyperparameters"] = _fixed()
    sync = DesignLoop(FunctionGame(value, n_players=P), 20, seed=5, **options)
    sync.step()  # the design
    sync.step()  # the first batch of 4
    if fixed:
        sync.step()
    run = ShaplEIG.from_options(**options).ask_tell(P, 20, seed=5)
    design = run.ask(P + 1)
    np.testing.assert_array_equal(design, sync.X[: P + 1])
    run.tell(design, value(design))
    first = run.ask(4)
    np.testing.assert_array_equal(first, sync.selected[0])
    second = run.ask(4)  # nothing told: conditioned on the 4 pending ones
    rows = np.concatenate([design, first, second])
    assert len({k for k in coalition_keys(rows)}) == len(rows) == P + 9  # distinct, never asked before
    if fixed:  # the EIG ignores values: conditioning on pending ones is conditioning on told ones
        np.testing.assert_array_equal(second, sync.selected[1])
    np.testing.assert_array_equal(run.pending, np.concatenate([first, second]))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_driver_telling_random_subsets_asks_each_coalition_once_and_spends_the_budget(seed):
    """Asks of random size, tells of random subsets in random order, refits in between: every
    coalition asked once, never more than the budget, and the run ends with every value told."""
    budget, rng = 26, np.random.default_rng(seed)
    run = ShaplEIG(refit="every", pool_size=64).ask_tell(P, budget, seed=seed)
    asked: list[bytes] = []
    while not run.done:
        Z = run.ask(int(rng.integers(1, 5)))
        asked.extend(coalition_keys(Z))
        assert len(asked) <= budget and len(run.pending) == len(asked) - run.told
        out = run.pending
        if len(out) and (len(Z) == 0 or rng.random() < 0.5):
            pick = rng.permutation(len(out))[: int(rng.integers(1, len(out) + 1))]
            run.tell(out[pick], value(out[pick]))
    assert len(set(asked)) == len(asked) == budget == run.told
    assert run.result().evaluations == budget


def test_the_design_is_handed_out_q_at_a_time_and_acquisitions_wait_for_it():
    run = ShaplEIG(pool_size=64).ask_tell(P, 14, seed=0)
    a = run.ask(4)
    b = run.ask(10)  # only the design's last p + 1 - 4 rows: nothing can be selected before its values
    assert len(a) == 4 and len(b) == P + 1 - 4
    assert len(run.ask(2)) == 0  # the design is out, no value told
    run.tell(b[::-1], value(b[::-1]))  # any order, any subset
    with pytest.raises(RuntimeError, match="initial-design"):
        run.result()
    run.tell(a, value(a))
    assert run.result().evaluations == P + 1  # the anytime estimate on the design
    assert len(run.ask(3)) == 3


# -- 3. bad input: named errors, nothing recorded --------------------------------------------------------
def test_bad_tells_are_refused_by_name_and_change_nothing(tmp_path):
    store = tmp_path / "s.sqlite"
    run = ShaplEIG(pool_size=64).ask_tell(P, P + 4, seed=1, store=store)
    design = run.ask(P + 1)
    run.tell(design, value(design))
    Z = run.ask(2)
    before = (run.pending.copy(), run.told, len(EvaluationStore(store)))
    never = np.ones((1, P), dtype=bool)
    never[0, :3] = False  # a coalition not asked (neither design nor pending)
    assert not any(k in coalition_keys(np.concatenate([design, Z])) for k in coalition_keys(never))
    cases = [
        (lambda: run.tell(never, [1.0]), CoalitionError, "never asked"),
        (lambda: run.tell(design[:1], [0.0]), CoalitionError, "told already"),
        (lambda: run.tell(Z, [1.0, np.nan]), ValueError, "not finite"),
        (lambda: run.tell(Z, [1.0, np.inf]), ValueError, "not finite"),
        (lambda: run.tell(Z, [1.0]), ValueError, "one value per coalition"),
        (lambda: run.tell(Z[:, :-1], [1.0, 2.0]), CoalitionError, "shape"),
        (lambda: run.tell(np.concatenate([Z[:1], Z[:1]]), [1.0, 1.0]), CoalitionError, "repeats"),
        (lambda: run.ask(0), ValueError, "positive integer"),
        (lambda: run.ask(1.5), ValueError, "positive integer"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
        np.testing.assert_array_equal(run.pending, before[0])
        assert (run.told, len(EvaluationStore(store))) == before[1:]
    run.tell(Z[1:], value(Z[1:]))  # the refused calls left the run usable
    run.tell(Z[:1], value(Z[:1]))
    assert len(EvaluationStore(store)) == P + 3


def test_ask_beyond_the_budget_returns_fewer_then_none():
    budget = P + 3
    run = ShaplEIG(pool_size=64).ask_tell(P, budget, seed=2)
    design = run.ask(P + 1)
    run.tell(design, value(design))
    Z = run.ask(5)
    assert len(Z) == 2 and not run.done  # the budget leaves 2
    assert len(run.ask(1)) == 0 and not run.done  # fully asked, 2 pending
    run.tell(Z, value(Z))
    assert run.done and len(run.ask(3)) == 0
    assert run.result().evaluations == budget


def test_budget_below_the_design_is_refused():
    with pytest.raises(BudgetError, match="budget"):
        ShaplEIG().ask_tell(P, P + 1)


# -- 4. the store: every value recorded, a new run resumes ------------------------------------------------
def test_every_told_value_is_in_the_store_and_a_new_run_resumes(tmp_path):
    store, budget = tmp_path / "run.sqlite", 20
    reference = ShaplEIG().ask_tell(P, budget, seed=4)
    _sequential(reference)
    first = ShaplEIG().ask_tell(P, budget, seed=4, store=store)
    asked_first: list[bytes] = []
    while first.told < 12:
        Z = first.ask(1)
        asked_first.extend(coalition_keys(Z))
        first.tell(Z, value(Z))
    left = first.ask(1)  # pending when the driver stops
    found, stored = EvaluationStore(store).lookup(first.loop.X)
    assert found.all()
    np.testing.assert_array_equal(stored, first.loop.y)  # keyed by coalition, as the loop's values are
    del first
    second = ShaplEIG().ask_tell(P, budget, seed=4, store=store)
    again = second.ask(1)
    np.testing.assert_array_equal(again, left)  # the pending coalition is asked again first
    asked_second = list(coalition_keys(again))
    second.tell(again, value(again))
    _sequential(second, asked_second)
    assert not set(asked_second) & set(asked_first[:-1])  # nothing told before is asked again
    np.testing.assert_array_equal(second.loop.X, reference.loop.X)
    np.testing.assert_allclose(second.result().values, reference.result().values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(second.result().std, reference.result().std, rtol=0, atol=1e-12)


DRIVER = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from design.test_ask_tell import value
    from shapleig import ShaplEIG

    store, mode, stop_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    run = ShaplEIG().ask_tell({p}, {budget}, seed=7, store=store)
    asked = 0
    while not run.done:
        Z = run.ask(1)
        asked += len(Z)
        if mode == "killed" and run.told == stop_at:
            np.save(store + ".pending.npy", Z)
            print("READY", flush=True)  # the parent kills this process now
            sys.stdin.read()
        run.tell(Z, value(Z))
    print("DONE", run.told, asked, flush=True)
""")


def test_a_run_killed_after_telling_resumes_in_another_process(tmp_path):
    """Ask/tell in one process, SIGKILL it with a coalition pending, finish in a second, read the
    result in a third (here): equal to an uninterrupted run."""
    budget = 19
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tests=str(REPO / "tests"), p=P, budget=budget))
    store = str(tmp_path / "run.sqlite")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    killed = subprocess.Popen([sys.executable, str(script), store, "killed", "11"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = killed.stdout.readline().strip()  # a state, not a time: 11 values told, one pending
    finally:
        killed.send_signal(signal.SIGKILL)  # never left blocked on its stdin, whatever happened
        killed.wait()
        killed.stdin.close()
        killed.stdout.close()
    assert line == "READY"
    assert killed.returncode == -signal.SIGKILL
    assert len(EvaluationStore(store)) == 11
    second = subprocess.run([sys.executable, str(script), store, "finish", "0"], capture_output=True, text=True,
                            env=env, check=True)
    # every value told by the end; only the 8 not told before were asked (the pending one among them)
    assert second.stdout.split() == ["DONE", str(budget), str(budget - 11)]
    third = ShaplEIG().ask_tell(P, budget, seed=7, store=store)
    assert len(third.ask(1)) == 0 and third.done  # every value comes from the store
    reference = ShaplEIG().ask_tell(P, budget, seed=7)
    _sequential(reference)
    np.testing.assert_array_equal(third.loop.X, reference.loop.X)
    pending = np.load(store + ".pending.npy")
    np.testing.assert_array_equal(third.loop.X[11:12], pending)  # asked again first, told once
    np.testing.assert_allclose(third.result().values, reference.result().values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(third.result().std, reference.result().std, rtol=0, atol=1e-12)


# -- 5. the guide's worked example runs as written ------------------------------------------------------
def guide_examples(text: str, heading: str = "Ask and tell: evaluate anywhere") -> list[str]:
    """The python blocks under the guide's ``### <heading>`` (up to the next heading)."""
    match = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^##)", text, flags=re.S | re.M)
    assert match is not None, f"docs/guide.md has no section '### {heading}'"
    return re.findall(r"^```python\n(.*?)^```", match.group(1), flags=re.S | re.M)


def test_the_guides_thread_pool_example_runs():
    blocks = guide_examples((REPO / "docs" / "guide.md").read_text(encoding="utf-8"))
    assert blocks and "ThreadPoolExecutor" in blocks[0]
    namespace: dict = {"__name__": "__guide_example__"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"docs/guide.md (ask and tell, block {k + 1})", "exec", dont_inherit=True), namespace)  # noqa: S102
    run, est = namespace["run"], namespace["est"]
    assert run.done and est.evaluations == 30 and len(run.pending) == 0
    assert len({k for k in coalition_keys(run.loop.X)}) == 30  # every coalition told once


def test_the_extraction_sees_a_broken_example():
    page = "### Ask and tell: evaluate anywhere\n\n```python\nassert 1 + 1 == 3\n```\n\n## 3. Next\n"
    (block,) = guide_examples(page)
    with pytest.raises(AssertionError):
        exec(compile(block, "page", "exec"), {})  # noqa: S102
