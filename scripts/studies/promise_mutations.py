"""Break each integrity promise (issues 20, 27 and 34) once, run the tests that pin it, restore, report.

Each mutation is a one-line change to the source (a promise broken on purpose); it is *caught*
when the named tests fail with it in place. The file is restored byte for byte afterwards (also
on Ctrl-C). Run from the repository root on a clean work tree:

    PYTHONPATH=. python scripts/studies/promise_mutations.py            # all mutations (~10 minutes)
    PYTHONPATH=. python scripts/studies/promise_mutations.py --only bic # those whose name contains "bic"
    PYTHONPATH=. python scripts/studies/promise_mutations.py --only graded --only async  # either text

Prints one line per mutation and ``caught N of M``; exits 1 if any mutation survived.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# (name, file, text to replace, replacement, tests that must fail)
MUTATIONS: list[tuple[str, str, str, str, list[str]]] = [
    ("synchronous FULL -> OFF", "shapleig/runs/store.py", 'PRAGMA synchronous = FULL"', 'PRAGMA synchronous = OFF"',
     ["tests/project/test_promises.py::test_the_store_commits_with_synchronous_full"]),
    ("first stored value wins -> last", "shapleig/runs/store.py", "stored.setdefault(code, float(value))",
     "stored[code] = float(value)", ["tests/project/test_promises.py::test_the_first_stored_value_wins"]),
    ("heartbeat lease/4 -> lease*4", "shapleig/runs/claims.py", "interval = self.lease_seconds / 4",
     "interval = self.lease_seconds * 4", ["tests/project/test_promises.py::test_the_heartbeat_refreshes_claims_every_quarter_lease"]),
    ("identity ignores Generator state", "shapleig/games/identity.py",
     'self.text("Generator")\n            self.feed(obj.bit_generator.state, depth, where)',
     'self.text("Generator")', ["tests/games/test_identity_adversarial.py -k generator"]),
    ("identity ignores dict keys", "shapleig/games/identity.py",
     "            for k, v in sorted(obj.items(), key=lambda kv: digest_value(kv[0])):\n                self.feed(k, depth, where)\n",
     "            for k, v in sorted(obj.items(), key=lambda kv: digest_value(kv[0])):\n",
     ["tests/games/test_identity_digest.py::test_a_dict_digest_does_not_depend_on_insertion_order"]),
    ("identity ignores partial arguments", "shapleig/games/identity.py",
     'out[f"{prefix}.keywords"] = show_value(fn.keywords, f"{prefix}.keywords", opaque)', "pass",
     ["tests/games/test_identity_adversarial.py -k partial_other_args"]),
    ("identity ignores class bodies", "shapleig/games/identity.py", "    if is_library(cls):\n        return {f\"{prefix}class.version\"",
     "    if True:\n        return {f\"{prefix}class.version\"", ["tests/games/test_identity_adversarial.py -k class_call_code"]),
    ("identity ignores reads through modules", "shapleig/games/identity.py",
     "            for attr, inner in _module_values(value, None if any_attribute else names | strings).items():",
     "            for attr, inner in {}.items():", ["tests/games/test_identity_adversarial.py -k module_attribute"]),
    ("identity ignores package versions", "shapleig/games/identity.py",
     '        out = {f"{prefix}.name": qualname(fn),\n               f"{prefix}.version": package_version(',
     '        out = {f"{prefix}.name": qualname(fn),\n               f"{prefix}.nothing": (',
     ["tests/games/test_identity_adversarial.py::test_an_upgraded_installed_package_is_another_game"]),
    ("BIC penalty d log t instead of d/2 log t", "shapleig/gp/kernel_choice.py", "- 0.5 * n_params * np.log(n_obs)",
     "- n_params * np.log(n_obs)", ["tests/project/test_promises.py::test_bic_log_evidence_by_hand"]),
    ("Leverage SHAP row weights without P(z)", "baselines/leverage.py",
     "w = 1.0 / (s * (n - s) * weight_layer[s])", "w = 1.0 / (s * (n - s))",
     ["tests/test_baselines/test_baselines_leverage_msr.py -k own_full_sample"]),
    ("antithetic permutations not reversed", "baselines/permutation.py", "perms[1::2] = perms[0::2, ::-1]",
     "perms[1::2] = perms[0::2]", ["tests/project/test_promises.py::test_antithetic_permutations_come_as_reversed_pairs"]),
    ("resolve_budget truncates", "tasks/harness.py", "return int(round(float(spec[:-1] or 1) * p))",
     "return int(float(spec[:-1] or 1) * p)", ["tests/project/test_promises.py::test_resolve_budget_rounds_to_the_nearest_integer"]),
    ("random acquisition reuses the design stream", "shapleig/design/loop.py",
     "picks = random_indices(self.available, q, self._select_rng)", "picks = random_indices(self.available, q, self._design_rng)",
     ["tests/project/test_promises.py::test_random_acquisition_draws_from_its_own_stream"]),
    ("triggers accepted", "shapleig/runs/store.py", "        if foreign:  # a trigger", "        if False:  # a trigger",
     ["tests/runs/test_store_tampering.py::test_a_store_with_a_trigger_is_refused"]),
    ("verify re-checks the first rows only", "shapleig/runs/store.py", "chosen = [rows[i] for i in sorted(pick)]",
     "chosen = rows[: self.verify_count]", ["tests/runs/test_store_tampering.py::test_verify_re_evaluates_a_random_sample_and_names_each_difference"]),
    ("schema created statement by statement", "shapleig/runs/store.py",
     '        conn.execute("BEGIN IMMEDIATE")\n        try:\n            self._check_contents(conn)  # again',
     '        conn.execute("BEGIN IMMEDIATE"); conn.execute("COMMIT")\n        try:\n            self._check_contents(conn)  # again',
     ["tests/runs/test_store_tampering.py::test_processes_creating_the_same_new_store_all_succeed"]),
    ("standardize floors small stds at 1", "shapleig/gp/posterior.py",
     "    if not (scale > 0.0 and np.isfinite(scale)):  # a subnormal spread",
     "    if scale < 1e-8:\n        scale = 1.0\n    if not (scale > 0.0 and np.isfinite(scale)):  # a subnormal spread",
     ["tests/estimation/test_scale_invariance.py -k 'standardize or gp_arms'"]),
    ("heartbeat keeps every claim alive", "shapleig/runs/claims.py", "if now <= until]", "]",
     ["tests/runs/test_timeout.py::test_the_heartbeat_stops_holding_a_claim_of_a_process_stuck_without_timeout"]),
    ("claims cover the whole batch", "shapleig/runs/budget.py",
     "step = self.evaluator.chunk_size if isinstance(self.evaluator, SerialEvaluator) else None",
     "step = None", ["tests/runs/test_timeout.py::test_a_second_process_takes_over_a_coalition_whose_evaluation_hung"]),
    ("hung calls are not killed", "shapleig/runs/evaluators.py", "if self.timeout is not None:  # in a worker process",
     "if False:  # in a worker process", ["tests/runs/test_timeout.py::test_a_hung_call_is_killed_retried_and_reported[1]"]),
    # issue 27 (identity digest, timeouts, model identity): each pinned by a test next to the code
    ("identity digest drops a function's defaults", "shapleig/games/identity.py",
     "        self.feed(fn.__defaults__, depth, where)\n", "", ["tests/games/test_identity_digest.py -k defaults"]),
    ("identity digest drops an array's shape", "shapleig/games/identity.py",
     'self.text("ndarray", f"{obj.dtype.str}{obj.shape}")', 'self.text("ndarray", f"{obj.dtype.str}")',
     ["tests/games/test_identity_digest.py -k shape"]),
    ("identity digest keeps dict insertion order", "shapleig/games/identity.py",
     "for k, v in sorted(obj.items(), key=lambda kv: digest_value(kv[0])):", "for k, v in obj.items():",
     ["tests/games/test_identity_digest.py -k insertion_order"]),
    ("identity digest sorts dict keys by repr (PYTHONHASHSEED)", "shapleig/games/identity.py",
     "for k, v in sorted(obj.items(), key=lambda kv: digest_value(kv[0])):",
     'for k, v in sorted(obj.items(), key=lambda kv: f"{type(kv[0]).__name__}:{kv[0]!r}"):',
     ["tests/games/test_identity_adversarial.py::test_frozenset_keys_digest_the_same_under_every_hash_seed"]),
    ("identity digest without its depth limit", "shapleig/games/identity.py", "        if depth > _MAX_DEPTH:",
     "        if False:", ["tests/games/test_identity_digest.py -k depth_limit"]),
    ("identity digest ignores pandas dtypes", "shapleig/games/identity.py",
     "            self.feed([repr(t) for t in dtypes], depth, where)\n", "",
     ["tests/games/test_identity_digest.py -k pandas"]),
    ("identity trusts a user __getstate__", "shapleig/games/identity.py",
     "    if owner is not object and is_library(owner):", "    if owner is not object:",
     ["tests/games/test_identity_digest.py -k getstate"]),
    ("model identity ignores the LightGBM model string", "shapleig/explanation/model_identity.py",
     'return {f"{PREFIX}string": show_value(booster.model_to_string(num_iteration=-1), "model string", opaque),',
     'return {f"{PREFIX}string": "?",', ["tests/explanation/test_explain_store_identity.py -k lightgbm"]),
    ("model identity ignores fitted attributes", "shapleig/explanation/model_identity.py",
     '        out[f"{PREFIX}fitted.{key}"] = show_value(value, f"model fitted {key}", opaque)', "        pass",
     ["tests/explanation/test_explain_store_identity.py -k ridge"]),
    ("model identity ignores torch weights", "shapleig/explanation/model_identity.py",
     'out = {f"{PREFIX}state_dict.{name}": show_value(t, f"model state_dict {name}", opaque) for name, t in state.items()}',
     "out = {}", ["tests/explanation/test_explain_store_identity.py -k torch"]),
    ("executor timeout taken as 4x", "shapleig/runs/evaluators.py",
     "elif now - started[future] > self.timeout and not future.done():",
     "elif now - started[future] > 4 * self.timeout and not future.done():",
     ["tests/runs/test_timeout.py::test_the_executor_timeout_abandons_a_task_at_the_timeout_not_later"]),
    ("timed workers forked again", "shapleig/runs/timeout.py",
     '        return "subprocess" if os.name == "posix" and sys.executable else "spawn"', '        return "fork"',
     ["tests/runs/test_timeout.py::test_a_worker_copy_missing_state_changed_at_run_time_is_refused"]),
    ("a worker's copy of the game not checked", "shapleig/runs/timeout.py",
     '        if copy == expected or "opaque" in expected:', "        if True:",
     ["tests/runs/test_timeout.py::test_a_worker_copy_missing_state_changed_at_run_time_is_refused"]),
    ("timed worker started per evaluate call", "shapleig/runs/evaluators.py",
     "        if worker is not None and worker.game is game and worker.alive:", "        if False:",
     ["tests/runs/test_timeout.py::test_the_worker_is_reused_across_evaluations_and_closes_cleanly"]),
    ("workers started from the calling thread", "shapleig/runs/timeout.py", "    return _LAUNCHER.submit(start).result()",
     "    return start()", ["tests/runs/test_timeout.py::test_a_worker_started_from_a_short_lived_thread_outlives_it"]),
    ("verify re-evaluates in-process", "shapleig/runs/store.py", "now = as_value_vector((evaluate or game)(Z.copy())",
     "now = as_value_vector(game(Z.copy())", ["tests/runs/test_timeout.py::test_verify_re_evaluates_through_the_timeout"]),
    ("seeds >= 2**63 accepted", "shapleig/seeding.py", "    if value >= SEED_LIMIT:", "    if False:",
     ["tests/test_tasks/test_cli_integrity.py"]),
    ("complex values coerced", "shapleig/games/game.py", '    elif kind == "c":', '    elif False:',
     ["tests/runs/test_store_tampering.py -k complex"]),
    # -- issue 27, item 9: each caught by a unit test next to the code it changes ------------------
    ("verify_rtol 1e-9 -> 1e-3", "shapleig/runs/store.py", "verify_rtol: float = 1e-9,", "verify_rtol: float = 1e-3,",
     ["tests/runs/test_store_promises.py -k sixth_significant"]),
    ("journal_mode WAL -> DELETE", "shapleig/runs/store.py", 'conn.execute("PRAGMA journal_mode = WAL")',
     'conn.execute("PRAGMA journal_mode = DELETE")', ["tests/runs/test_store_promises.py -k wal_mode"]),
    ("verify sample MIN(id) -> MAX(id)", "shapleig/runs/store.py", "id IN (SELECT MIN(id) ", "id IN (SELECT MAX(id) ",
     ["tests/runs/test_store_promises.py -k served_the_first"]),
    ("claim hold timeout*calls+1 -> timeout+1", "shapleig/runs/budget.py", "return step, float(timeout) * calls + 1.0",
     "return step, float(timeout) + 1.0", ["tests/runs/test_store_promises.py -k claim_hold_covers"]),
    ("enumeration p <= 20 -> p < 20", "shapleig/estimation/enumeration.py",
     "return n_players <= MAX_ENUMERATION_PLAYERS and", "return n_players < MAX_ENUMERATION_PLAYERS and",
     ["tests/estimation/test_enumeration.py -k 20_players"]),
    ("enumerated baseline from v(N)", "shapleig/estimation/enumeration.py", "baseline=float(values[0])",
     "baseline=float(values[-1])", ["tests/estimation/test_enumeration.py -k baseline_from_the_empty"]),
    ("adaptive refit mean(z**2) -> mean(z)", "shapleig/design/refit.py", "bool(np.mean(z**2) > self.threshold)",
     "bool(np.mean(z) > self.threshold)", ["tests/design/test_refit_policy.py -k adaptive_trigger"]),
    ("adaptive refit window [t_fit:t] -> [:t]", "shapleig/design/refit.py",
     "z = loop.posterior.innovations()[t_fit:t]\n            return", "z = loop.posterior.innovations()[:t]\n            return",
     ["tests/design/test_refit_policy.py -k adaptive_trigger"]),
    ("auto refit mean(z**2) -> mean(z)", "shapleig/design/refit.py", "bool(np.mean(innovations**2) > self.threshold)",
     "bool(np.mean(innovations) > self.threshold)", ["tests/design/test_refit_policy.py -k auto_trigger"]),
    ("auto refit window [t_fit:t] -> [:t]", "shapleig/design/refit.py", "innovations()[t_fit:t] if between",
     "innovations()[:t] if between", ["tests/design/test_refit_policy.py -k auto_trigger"]),
    ("MSR residual weights without 1/m_s", "baselines/msr.py", "coef = r / per_size[s]", "coef = r",
     ["tests/test_baselines/test_baselines_leverage_msr.py -k own_full_sample"]),
    # -- issue 27, the fixes of items 4-8: each pinned by the adversarial test that found it ----------
    ("triggers named like internal objects pass", "shapleig/runs/store.py",
     'conn.execute("SELECT type, name FROM sqlite_master").fetchall()',
     'conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE \'sqlite_%\'").fetchall()',
     ["tests/runs/test_store_edges.py -k whatever_their_name"]),
    ("non-finite stored values served", "shapleig/runs/store.py", "if not math.isfinite(value):  # only finite",
     "if False:  # only finite", ["tests/runs/test_store_edges.py -k written_after_opening"]),
    ("hard-linked store files accepted", "shapleig/runs/store.py", "if info.st_nlink > 1:", "if False:",
     ["tests/runs/test_store_edges.py -k hard_links"]),
    ("leases read on the owner's wall clock only", "shapleig/runs/claims.py",
     "return now - seen[2] <= self.lease_seconds", "return True",
     ["tests/runs/test_store_edges.py -k owner_clock_runs_ahead"]),
    ("registry marked loaded before loading", "shapleig/registry.py",
     "        _loading = True\n        try:\n", "        _loading = True\n        _providers_loaded = True\n        try:\n",
     ["tests/test_baselines/test_registry_threads.py -k fresh_registry"]),
    ("KernelSHAP on raw values", "baselines/kernelshap.py", "scale = power_of_two_scale(v0, vn, v_enum, draws.values)",
     "scale = 1.0", ["tests/estimation/test_scale_equivariance.py -k 'float64_limit and kernelshap'"]),
    ("MSR fits LightGBM on raw targets", "baselines/msr.py", "scale = power_of_two_scale(values - values[0])",
     "scale = 1.0", ["tests/estimation/test_scale_equivariance.py -k 'regression-msr and 1e-50'"]),
    ("boolean options not checked", "tasks/methods.py", "        checked[key] = parse_bool(options[key],",
     "        continue\n        checked[key] = parse_bool(options[key],", ["tests/test_tasks/test_cli_edges.py -k strictly"]),
    # -- issue 34, item 9: survivors of a round of one-line mutations, each caught by a test next to the code ----
    ("graded: one order factor of 1 taken for the Hamming kernel", "shapleig/gp/graded.py",
     "return bool(np.all(self.g == 1.0))", "return bool(np.any(self.g == 1.0))",
     ["tests/gp/test_graded_spec.py -k walsh_definition"]),
    ("graded BIC without the learned noise", "shapleig/gp/graded.py", "return 2 + self.orders + int(self.learn_noise)",
     "return 2 + self.orders", ["tests/gp/test_graded_spec.py -k bic_counts"]),
    ("importance target exp(-objective), not exp(-t objective)", "shapleig/gp/integrate.py",
     "return -problem.X.shape[0] * value if", "return -value if", ["tests/gp/test_integrate.py -k dense_reference"]),
    ("integrated MAP component keeps the full kernel weight", "shapleig/gp/integrate.py",
     "out.append((k.kernel, k.weight * draws[0][0], draws[0][1]))", "out.append((k.kernel, k.weight, draws[0][1]))",
     ["tests/gp/test_integrate.py -k split_each"]),
    ("Laplace proposal's Hessian doubled", "shapleig/gp/integrate.py", "* (t / (2.0 * STEP))", "* (t / STEP)",
     ["tests/gp/test_integrate.py -k dense_reference"]),
    ("in flight: stored values not consumed first", "shapleig/runs/in_flight.py", "rank = (0, self._store_rank.get(",
     "rank = (1, self._store_rank.get(", ["tests/runs/test_in_flight.py -k stored_values_come_first"]),
    ("in flight: a later outcome overwrites the first", "shapleig/runs/in_flight.py",
     "if key not in self._arrived_keys:\n            self._arrived_keys.add(key)",
     "if True:\n            self._arrived_keys.add(key)", ["tests/runs/test_in_flight.py -k first_outcome"]),
    ("async refit adopted one arrival late (>= -> >)", "shapleig/design/async_loop.py",
     "self.X.shape[0] >= self._refit[3]", "self.X.shape[0] > self._refit[3]",
     ["tests/design/test_async_loop.py -k batch_size_more_values"]),
    ("async refit adopted at the next arrival (t + q -> t)", "shapleig/design/async_loop.py",
     "t, t + self.options.batch_size)", "t, t)", ["tests/design/test_async_loop.py -k batch_size_more_values"]),
    ("random picks drawn with replacement", "shapleig/design/acquisition.py", "replace=False).astype(np.int64)",
     "replace=True).astype(np.int64)", ["tests/design/test_acquisition.py -k distinct_available"]),
    ("model identity reads a user's sklearn subclass as a library estimator", "shapleig/explanation/model_identity.py",
     "if _is_code(owner) or not is_library(type(owner)):", "if _is_code(owner):",
     ["tests/explanation/test_explain_store_identity.py -k user_sklearn"]),
    ("explain_X runs every row with the first row's seed", "shapleig/explanation/explain_rows.py",
     "budget, seeds[r], store=path", "budget, seeds[0], store=path",
     ["tests/explanation/test_explain_rows.py -k own_spawned_seed"]),
    ("start method check or -> and (forkserver accepted)", "shapleig/runs/timeout.py",
     "if method not in START_METHODS or method not in", "if method not in START_METHODS and method not in",
     ["tests/runs/test_timeout.py -k three_supported"]),
]


def run(only: list[str] | None) -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    caught = total = 0
    for name, rel, old, new, tests in MUTATIONS:
        if only and not any(text in name for text in only):
            continue
        path = REPO / rel
        original = path.read_bytes()
        text = original.decode()
        if text.count(old) != 1:
            print(f"SKIP   {name}: the text to mutate occurs {text.count(old)} times in {rel}")
            continue
        total += 1
        start = time.perf_counter()
        try:
            path.write_text(text.replace(old, new))
            argv: list[str] = []
            for t in tests:  # "path::test" or "path -k 'expression'"
                target, _, expr = t.partition(" -k ")
                argv += [target] + (["-k", expr.strip("'")] if expr else [])
            try:
                out = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *argv],
                                     cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
                ok = out.returncode == 1  # tests ran and failed (2-5: collection/usage problems)
                last = (out.stdout.strip().splitlines() or [""])[-1]
            except subprocess.TimeoutExpired:  # e.g. a hung call no longer killed: the test hangs
                ok, last = True, "the tests hung (killed after 180 s)"
        finally:
            path.write_bytes(original)
        caught += ok
        print(f"{'CAUGHT' if ok else 'MISSED'} {name} ({time.perf_counter() - start:.0f} s): {last}", flush=True)
    print(f"caught {caught} of {total}")
    return 0 if caught == total else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=None,
                        help="run the mutations whose name contains this text (repeat: any of them)")
    sys.exit(run(parser.parse_args().only))
