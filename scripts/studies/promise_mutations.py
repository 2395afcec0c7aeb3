"""Break each integrity promise (issues 20, 27 and 34) once, run the tests that pin it, restore, report.

Each mutation is a one-line change to the source (a promise broken on purpose); it is *caught*
when the named tests fail with it in place. The file is restored byte for byte afterwards (also
on Ctrl-C). Run from the repository root on a clean work tree:

    PYTHONPATH=. python scripts/studies/promise_mutations.py            # all mutations (~10 minutes)
    PYTHONPATH=. python scripts/studies/promise_mutations.py --only bic # those whose name contains "bic"
    PYTHONPATH=. python scripts/studies/promise_mutations.py --only graded --only async  # either text
    PYTHONPATH=. python scripts/studies/promise_mutations.py --mutations-file candidates.json

``--mutations-file`` runs the mutations of a JSON file instead of the list below (to try a candidate
before adding it): a list of objects with the keys ``name``, ``file`` (relative to the repository
root), ``old`` (the text replaced; it must occur exactly once), ``new`` and ``tests`` (a list, each
``"path::test"`` or ``"path -k 'expression'"``).

Prints one line per mutation (``CAUGHT``, ``MISSED``, or ``SKIP`` when the text to mutate does not
occur exactly once) and ``caught N of M`` (skipped ones not counted); exits 1 if any mutation survived.
Mutations of ``tasks/`` and ``baselines/`` take effect only in the checkout that is installed
(editable): their packages, ``shapleig_tasks`` and ``shapleig_baselines``, are imported from there.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_DIGESTS = "tests/runs/test_store_row_digests.py"

Mutation = tuple[str, str, str, str, list[str]]

# (name, file, text to replace, replacement, tests that must fail)
MUTATIONS: list[Mutation] = [
    ("synchronous FULL -> OFF", "shapleig/runs/store.py", 'PRAGMA synchronous = FULL")  # a committed value survives',
     'PRAGMA synchronous = OFF")  # a committed value survives',
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
     "return acquisition.select(PoolView(self.pool.W, self.available), q, self._select_rng)",
     "return acquisition.select(PoolView(self.pool.W, self.available), q, self._design_rng)",
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
    ("model identity ignores the LightGBM model string", "shapleig/games/model_identity.py",
     'return {f"{prefix}string": show_value(booster.model_to_string(num_iteration=-1), "model string", opaque),',
     'return {f"{prefix}string": "?",', ["tests/explanation/test_explain_store_identity.py -k lightgbm"]),
    ("model identity ignores fitted attributes", "shapleig/games/model_identity.py",
     '        out[f"{prefix}fitted.{key}"] = show_value(value, f"model fitted {key}", opaque)', "        pass",
     ["tests/explanation/test_explain_store_identity.py -k ridge"]),
    ("model identity ignores torch weights", "shapleig/games/model_identity.py",
     'out = {f"{prefix}state_dict.{name}": show_value(t, f"model state_dict {name}", opaque) for name, t in state.items()}',
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
    # -- issue 34, items 2 and 4: each identity component of an HPI game and names in builtins; each
    # caught by the test of that one component (run them: --only 'issue 34') ----------------------
    ('drops the seed (issue 34)', 'shapleig/hpo/games.py',
     ', "param.seed": str(self.seed)}',
     '}',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[seed]']),
    ('drops the definition number (issue 34)', 'shapleig/hpo/games.py',
     '{"param.definition": str(self.definition), ',
     '{',
     ['tests/hpo/test_hpi_identity.py::test_the_definition_number_tells_installed_games_apart']),
    ('drops the space (issue 34)', 'shapleig/hpo/identity.py',
     '    return {"param.space": show_value(space.to_json(), "space"),\n',
     '    return {\n',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[space]']),
    ('drops the baseline (issue 34)', 'shapleig/hpo/identity.py',
     '            "param.baseline": show_value(space.baseline, "baseline"),\n',
     '',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[baseline]']),
    ("drops ConfigSpace's version (issue 34)", 'shapleig/hpo/identity.py',
     '            "ConfigSpace.version": package_version("ConfigSpace")}',
     '}',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[ConfigSpace version]']),
    ("drops a plain objective's content (issue 34)", 'shapleig/hpo/identity.py',
     '        merge_identity(out, function_identity(objective, "objective"), opaque)',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[objective code]', 'tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[objective global]', 'tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[objective closure]']),
    ("drops an objective's params (issue 34)", 'shapleig/hpo/identity.py',
     '            out.update(value_identity(value, f"objective.{key}", opaque))',
     '            pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[objective params]']),
    ("drops an objective's class (issue 34)", 'shapleig/hpo/identity.py',
     '        out["objective.class"] = qualname(type(objective))',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_the_objective_class_tells_installed_objectives_apart']),
    ("drops an objective's class code (issue 34)", 'shapleig/hpo/identity.py',
     '        out.update(class_code_identity(type(objective), "objective.", opaque))',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[objective class code]']),
    ('drops objective_id (issue 34)', 'shapleig/hpo/identity.py',
     '        out["objective.id"] = str(objective_id)',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[objective id]']),
    ('refuses an objective named by objective_id (issue 34)', 'shapleig/hpo/identity.py',
     '            out["objective.opaque"] = "; ".join(opaque)',
     '            out["opaque"] = "; ".join(opaque)',
     ['tests/hpo/test_hpi_identity.py::test_an_objective_that_cannot_be_read_needs_an_objective_id']),
    ('reads a model parameter as a plain value (issue 34)', 'shapleig/hpo/identity.py',
     '    if is_library_model(value):',
     '    if False:',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[estimator parameter]']),
    ('digests a dict parameter whole (issue 34)', 'shapleig/hpo/identity.py',
     '    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):',
     '    if False:',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[bundled dataset]']),
    ("drops a tuner's class (issue 34)", 'shapleig/hpo/identity.py',
     '    out = {f"{prefix}class": qualname(type(tuner))}',
     '    out = {}',
     ['tests/hpo/test_hpi_identity.py::test_the_tuner_class_tells_installed_tuners_apart']),
    ("drops a tuner's class code (issue 34)", 'shapleig/hpo/identity.py',
     '    out.update(class_code_identity(type(tuner), prefix, opaque))',
     '    pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[tuner code]']),
    ("drops a tuner's params (issue 34)", 'shapleig/hpo/identity.py',
     '        out.update(value_identity(value, f"{prefix}{key}", opaque))',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[tuner trials]', 'tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[tuner sampler]']),
    ("drops a tuner's state (issue 34)", 'shapleig/hpo/identity.py',
     'params = tuner.params() if callable(getattr(tuner, "params", None)) else object_state(tuner)',
     'params = tuner.params() if callable(getattr(tuner, "params", None)) else {}',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[tuner state]']),
    ("drops Optuna's version (issue 34)", 'shapleig/hpo/identity.py',
     '        out[f"{prefix}{package}.version"] = package_version(package)',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[optuna version]']),
    ('drops the ablation target (issue 34)', 'shapleig/hpo/games.py',
     '        return {"param.target": show_value(self.target, "target")}',
     '        return {}',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[target]']),
    ('drops the tunability tuner (issue 34)', 'shapleig/hpo/games.py',
     '        return tuner_identity(self.tuner, "tuner.")',
     '        return {}',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[tuner trials]']),
    ('drops the sensitivity sample size (issue 34)', 'shapleig/hpo/games.py',
     '        return {"param.n_samples": str(self.sampler.n_trials)}',
     '        return {}',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[n_samples]']),
    ('drops the optimizer (issue 34)', 'shapleig/hpo/games.py',
     '        merge_identity(out, tuner_identity(self.optimizer, "optimizer."), opaque)',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[optimizer]']),
    ('drops the ensemble (issue 34)', 'shapleig/hpo/games.py',
     '            merge_identity(out, tuner_identity(tuner, f"ensemble.{k}."), opaque)',
     '            pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[ensemble member]', 'tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[ensemble size]']),
    ("drops the game's class code (issue 34)", 'shapleig/hpo/games.py',
     '        out.update(class_code_identity(type(self), "", opaque))  # the code that turns runs into v(S)',
     '        pass',
     ['tests/hpo/test_hpi_identity.py::test_each_part_of_an_hpi_game_is_in_its_identity[game code]']),
    ('CV objective drops the model (issue 34)', 'tasks/hpi.py',
     '        return {"model": self.model, ',
     '        return {',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[model family]', 'tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[estimator parameter]']),
    ('CV objective drops the data (issue 34)', 'tasks/hpi.py',
     '"data": self.data.__dict__, "metric"',
     '"metric"',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[bundled dataset]', 'tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[CSV content]']),
    ('CV objective drops the metric (issue 34)', 'tasks/hpi.py',
     '"metric": self.metric,\n                "n_folds"',
     '\n                "n_folds"',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[metric]']),
    ('CV objective drops the folds (issue 34)', 'tasks/hpi.py',
     '"n_folds": self.n_folds, "seed": self.seed,',
     '"seed": self.seed,',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[folds]']),
    ('CV objective drops its seed (issue 34)', 'tasks/hpi.py',
     '"seed": self.seed, "versions"',
     '"versions"',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[objective seed]']),
    ('CV objective drops the library versions (issue 34)', 'tasks/hpi.py',
     ', "versions": self.versions()}',
     '}',
     ['tests/test_tasks/test_hpi_study_identity.py::test_each_part_of_the_cv_objective_is_in_the_study_identity[LightGBM version]']),
    ('HyperSHAP game identity as before (class and names) (issue 34)', 'shapleig/hpo/hypershap.py',
     '        out = hypershap_identity(self.game)',
     "        out = {'names': str(self.names)}",
     ['tests/interop/test_hypershap_identity.py::test_another_seed_or_surrogate_on_one_store_is_refused_never_served_the_old_values[seed 1]', 'tests/interop/test_hypershap_identity.py::test_another_seed_or_surrogate_on_one_store_is_refused_never_served_the_old_values[surrogate on 2 y]']),
    ('HyperSHAP drops game_id (issue 34)', 'shapleig/hpo/hypershap.py',
     '            out["game_id"] = self.game_id',
     '            pass',
     ['tests/interop/test_hypershap_identity.py::test_a_surrogate_of_an_unreadable_library_needs_a_game_id']),
    ('HyperSHAP drops list items (issue 34)', 'shapleig/hpo/identity.py',
     '                self.part(item, f"{name}.{i}")',
     '                pass',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[ensemble searcher]']),
    ('HyperSHAP drops the configuration space (issue 34)', 'shapleig/hpo/identity.py',
     '            self.out[name] = show_value(space_json(obj), name)',
     '            self.out[name] = "a space"',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[configuration space]']),
    ('HyperSHAP drops configurations (issue 34)', 'shapleig/hpo/identity.py',
     '            self.out[name] = show_value(dict(obj), name, self.opaque)',
     '            self.out[name] = "a configuration"',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[baseline]', 'tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[ablation target]']),
    ('HyperSHAP drops the aggregation mode (issue 34)', 'shapleig/hpo/identity.py',
     '            self.out[name] = f"{qualname(type(obj))}.{obj.name}"',
     '            self.out[name] = "a mode"',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[searcher mode]']),
    ("HyperSHAP drops the surrogate's fitted state (issue 34)", 'shapleig/hpo/identity.py',
     '            merge_identity(self.out, fitted_model_identity(obj, None, f"{name}."), self.opaque)',
     '            pass',
     ['tests/interop/test_hypershap_identity.py::test_another_seed_or_surrogate_on_one_store_is_refused_never_served_the_old_values[surrogate on 2 y]']),
    ('HyperSHAP drops class names (issue 34)', 'shapleig/hpo/identity.py',
     '            self.out[f"{name}.class"] = qualname(type(obj))',
     '            pass',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[game class]']),
    ('HyperSHAP drops class code and versions (issue 34)', 'shapleig/hpo/identity.py',
     '            self.out.update(class_code_identity(type(obj), f"{name}.", self.opaque))',
     '            pass',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[surrogate code]', 'tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[HyperSHAP version]']),
    ('HyperSHAP drops attributes (issue 34)', 'shapleig/hpo/identity.py',
     '                    self.part(value, f"{name}.{attr}")',
     '                    pass',
     ['tests/interop/test_hypershap_identity.py::test_another_seed_or_surrogate_on_one_store_is_refused_never_served_the_old_values[seed 1]']),
    ("HyperSHAP drops other values (the searcher's sample) (issue 34)", 'shapleig/hpo/identity.py',
     '            self.out[name] = show_value(obj, name, self.opaque)',
     '            self.out[name] = type(obj).__name__',
     ['tests/interop/test_hypershap_identity.py::test_another_seed_or_surrogate_on_one_store_is_refused_never_served_the_old_values[seed 1]', 'tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[searcher sample size]', 'tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[surrogate attribute]']),
    ("HyperSHAP digests shapiq's game_id (issue 34)", 'shapleig/hpo/identity.py',
     '"normalization_value", "game_id",',
     '"normalization_value",',
     ['tests/interop/test_hypershap_identity.py::test_the_same_game_rebuilt_from_scratch_is_served']),
    ("HyperSHAP digests shapiq's cached values (issue 34)", 'shapleig/hpo/identity.py',
     '"_precompute_flag", "game_values",',
     '"_precompute_flag",',
     ['tests/interop/test_hypershap_identity.py::test_the_same_game_rebuilt_from_scratch_is_served']),
    ("HyperSHAP digests the searcher's memo (issue 34)", 'shapleig/hpo/identity.py',
     '"n_players", "coalition_cache"})',
     '"n_players"})',
     ['tests/interop/test_hypershap_identity.py::test_the_same_game_rebuilt_from_scratch_is_served']),
    ("HyperSHAP drops ConfigSpace's version (issue 34)", 'shapleig/hpo/identity.py',
     '    walk.out["ConfigSpace.version"] = package_version("ConfigSpace")',
     '    pass',
     ['tests/interop/test_hypershap_identity.py::test_each_part_of_a_hypershap_game_is_in_its_identity[ConfigSpace version]']),
    ('an unreadable library model is not opaque (issue 34)', 'shapleig/games/model_identity.py',
     '    else:\n        package = (type(model).__module__ or "").split(".")[0]',
     '    elif False:\n        package = (type(model).__module__ or "").split(".")[0]',
     ['tests/interop/test_hypershap_identity.py::test_a_surrogate_of_an_unreadable_library_needs_a_game_id']),
    ('identity ignores names injected into builtins (issue 34)', 'shapleig/games/identity.py',
     '    for name, value in _injected_builtins(found, None if reads_all else {n for n in names if n not in g}).items():',
     '    for name, value in {}.items():',
     ['tests/games/test_identity_adversarial.py::test_a_name_injected_into_builtins_in_another_process_is_another_game']),
    ('identity ignores builtins.K read through the module (issue 34)', 'shapleig/games/identity.py',
     '            for attr, inner in _injected_builtins(vars(value), None if any_attribute else names | strings).items():',
     '            for attr, inner in {}.items():',
     ['tests/games/test_identity_adversarial.py::test_a_name_in_builtins_counts_read_bare_or_through_the_module']),
    ("identity takes every builtin for the interpreter's own (issue 34)", 'shapleig/games/identity.py',
     '    if name.startswith("__") and name.endswith("__"):  # interpreter bookkeeping',
     '    if True:  # interpreter bookkeeping',
     ['tests/games/test_identity_adversarial.py::test_a_name_injected_into_builtins_in_another_process_is_another_game']),
    ("identity lists the interpreter's own builtins (issue 34)", 'shapleig/games/identity.py',
     '    return getattr(value, "__module__", None) == "builtins" and getattr(value, "__name__", None) ==',
     '    return False and getattr(value, "__name__", None) ==',
     ['tests/games/test_identity_adversarial.py::test_the_interpreters_own_builtins_are_not_listed']),
    ("identity reads the process's builtins, not the function's (issue 34)", 'shapleig/games/identity.py',
     '    space = getattr(fn, "__builtins__", None) or fn.__globals__.get("__builtins__", builtins)',
     '    space = builtins',
     ['tests/games/test_identity_adversarial.py::test_a_replaced_builtin_counts']),
    # -- issue 34: row digests of the evaluation store (an edited finite value was served) --------------
    ("row digest: not checked on lookup", "shapleig/runs/store.py", "self._check_row(key, row[:-1])  # the value is",
     "pass  # the value is", [f"{_DIGESTS} -k edited_row_is_refused"]),
    ("row digest: not checked by records()", "shapleig/runs/store.py",
     "        for row in rows:\n            self._check_row(key, row)\n", "",
     [f"{_DIGESTS} -k 'every_way and (records or history)'"]),
    ("row digest: verify's sample not checked", "shapleig/runs/store.py",
     "        for row in chosen:  # an edited value", "        for row in []:  # an edited value",
     [f"{_DIGESTS} -k 'every_way and verify'"]),
    ("row digest: leaves out the value", "shapleig/runs/row_digest.py", 'b"".join([_encode(v) for v in row])',
     'b"".join([_encode(v) for i, v in enumerate(row) if i != 3])', [f"{_DIGESTS} -k edited_row_is_refused"]),
    ("row digest: leaves out the row id", "shapleig/runs/row_digest.py", 'b"".join([_encode(v) for v in row])',
     'b"".join([_encode(v) for v in row[1:]])', [f"{_DIGESTS} -k moved_to_another_id"]),
    ("row digest: one key for every store", "shapleig/runs/row_digest.py", "return secrets.token_hex(KEY_BYTES)",
     'return "ab" * KEY_BYTES', [f"{_DIGESTS} -k row_copied_from_another_store"]),
    ("row digest: rows without a digest accepted", "shapleig/runs/row_digest.py",
     "not isinstance(stored, bytes):\n        return False", "not isinstance(stored, bytes):\n        return True",
     [f"{_DIGESTS} -k without_digest"]),
    ("row digest: -0.0 digested as written", "shapleig/runs/row_digest.py", '_DOUBLE(value + 0.0)',
     '_DOUBLE(value)', [f"{_DIGESTS} -k signed_zero"]),
    ("row digest: deleted rows accepted", "shapleig/runs/store.py", "        if missing != expected:",
     "        if False:", [f"{_DIGESTS} -k deleted_row"]),
    ("row digest: earlier-version stores not digested", "shapleig/runs/store.py",
     "[(row_digest(key, r), r[0]) for r in rows]", "[]", [f"{_DIGESTS} -k earlier_version_gets"]),
    ("row digest: earlier-version stores digested after the schema transaction", "shapleig/runs/store.py",
     '            self._add_digests(conn)\n            self._check_rows_complete(conn)\n            conn.execute("COMMIT")\n',
     '            self._check_rows_complete(conn)\n            conn.execute("COMMIT")\n            self._add_digests(conn)\n',
     [f"{_DIGESTS} -k earlier_version_at_once"]),
    ("row digest: rebuild copies rows that fail", "shapleig/runs/store_rebuild.py",
     "keep = [row for row in rows if _why_left_out(key, row) is None]", "keep = list(rows)",
     [f"{_DIGESTS} -k rebuild_keeps"]),
    # -- issue 34, items 5-7: acquisitions' scores, hangs, raw failures -----------------------------------
    ("acquisition scores unchecked", "shapleig/design/acquisition.py",
     "        return check_scores(score(self, candidates), candidates, type(self).__name__)",
     "        return score(self, candidates)", ["tests/design/test_acquisition.py -k scores_are_checked"]),
    ("NaN acquisition scores accepted", "shapleig/design/acquisition.py", "    if nan.size:\n        raise AcquisitionError",
     "    if False:\n        raise AcquisitionError", ["tests/design/test_acquisition.py -k scores_are_checked"]),
    ("unavailable candidates' scores can win", "shapleig/design/acquisition.py",
     "j = first_argmax(np.where(candidates.available, self.score(candidates), -np.inf))",
     "j = first_argmax(self.score(candidates))", ["tests/design/test_acquisition.py -k ignore_unavailable"]),
    ("a broken acquisition reported as a failed run", "tasks/harness.py", "            if isinstance(exc, AcquisitionError):",
     "            if False:", ["tests/test_tasks/test_ablation.py -k broken_acquisition"]),
    ("sys.exit() in an acquisition file ends the command", "tasks/ablation.py",
     "    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a sys.exit()",
     "    except Exception as exc:  # noqa: BLE001 - a sys.exit()", ["tests/test_tasks/test_ablation.py -k sys_exit"]),
    ("output paths may be FIFOs", "tasks/harness.py", '    if kind is not None:\n        raise ValueError(f"output path',
     '    if False:\n        raise ValueError(f"output path', ["tests/test_tasks/test_cli_output_paths.py"]),
    ("the run journal's path left to the run", "tasks/cli.py",
     "        harness.check_output_file(harness.journal_path(out))  # the journal of finished runs beside it\n", "",
     ["tests/test_tasks/test_cli_output_paths.py -k partial"]),
    ("uncertainty block read as a dict unchecked", "shapleig/estimation/uncertainty_block.py",
     '    if not isinstance(block, dict):\n        raise ValueError(f"{name} is a JSON',
     '    if False:\n        raise ValueError(f"{name} is a JSON', ["tests/estimation/test_uncertainty_block.py"]),
    ("graded covariance: parity coefficients of every size", "shapleig/gp/walsh.py",
     "c = parity_coefficients(operator.spec, p, operator.max_order, MAX_ORDER)  # orders <= 3: sizes u <= 3 only\n"
     "    members", "c = parity_coefficients(operator.spec, p, operator.max_order)\n    members", ["tests/gp/test_walsh.py -k 600_players"]),
    ("graded covariance: a run holds its own member", "shapleig/gp/walsh.py",
     "run = runs[np.maximum(bounds[:, a + 1], 0), :, bounds[:, a] + 1]",
     "run = runs[np.maximum(bounds[:, a + 1], 0), :, np.maximum(bounds[:, a], 0)]",
     ["tests/gp/test_walsh.py -k '600_players or each_order'"]),
    ("laplace evidence at any number of players", "shapleig/gp/options.py",
     'return LAPLACE_MAX_PLAYERS if self.evidence == "laplace" else None', "return None",
     ["tests/gp/test_kernel_choice.py -k laplace_refuses"]),
    # -- issue 34, item 9: survivors of a round of one-line mutations, each caught by a test next to the code ----
    ("graded: one order factor of 1 taken for the Hamming kernel", "shapleig/gp/kernels/graded.py",
     "return bool(np.all(self.g == 1.0))", "return bool(np.any(self.g == 1.0))",
     ["tests/gp/test_graded_spec.py -k walsh_definition"]),
    ("graded BIC without the learned noise", "shapleig/gp/kernels/graded.py", "return 2 + self.orders + int(self.learn_noise)",
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
     "loop.X.shape[0] >= self._refit.adopt_at", "loop.X.shape[0] > self._refit.adopt_at",
     ["tests/design/test_async_loop.py -k batch_size_more_values"]),
    ("async refit adopted at the next arrival (t + q -> t)", "shapleig/design/async_loop.py",
     "job.t + self._loop.options.batch_size)", "job.t)", ["tests/design/test_async_loop.py -k batch_size_more_values"]),
    ("random picks drawn with replacement", "shapleig/design/acquisition.py", "replace=False).astype(np.int64)",
     "replace=True).astype(np.int64)", ["tests/design/test_acquisition.py -k distinct_available"]),
    # (explanation/model_identity.py also sends a user subclass's predict to function_identity: either
    # path digests the class's code; the fitted-model path is the one a held model takes)
    ("model identity reads a user's sklearn subclass as a library estimator", "shapleig/games/model_identity.py",
     "if not is_library(type(estimator)):  # a user subclass", "if False:  # a user subclass",
     ["tests/explanation/test_explain_store_identity.py -k user_sklearn"]),
    ("explain_X runs every row with the first row's seed", "shapleig/explanation/row_jobs.py",
     "self.budget, self.seeds[r], store=path", "self.budget, self.seeds[0], store=path",
     ["tests/explanation/test_explain_rows.py -k own_spawned_seed"]),
    ("start method check or -> and (forkserver accepted)", "shapleig/runs/timeout.py",
     "if method not in START_METHODS or method not in", "if method not in START_METHODS and method not in",
     ["tests/runs/test_timeout.py -k three_supported"]),
    # -- issue 35: the read-out over structures, degenerate evidence and the probe design --------------
    ("structure read-out without the families' disagreement", "shapleig/gp/structures.py",
     "cov += w * (m.standardized_covariance() + np.outer(d, d))", "cov += w * m.standardized_covariance()",
     ["tests/gp/test_structures.py -k equal_weight"]),
    ("structure families weighed by evidence, not floored at 1/M", "shapleig/gp/structures.py",
     "            return {name: 1.0 / len(names) for name in names}",
     "            return {name: float(name == \"fitted\") for name in names}",
     ["tests/gp/test_structures.py -k three_families"]),
    ("the probe family at 1/M like the others, not half the mass", "shapleig/gp/structures.py",
     "PROBE_WEIGHT = 0.5\n", "PROBE_WEIGHT = 1.0 / 4.0\n",
     ["tests/gp/test_structures.py -k probe_family_holds_half"]),
    ("the kernels family drops the surrogate's kernels", "shapleig/gp/structure_readout.py",
     "            if len(usable) >= 2:", "            if False:",
     ["tests/gp/test_structures.py -k kernels_and_additive"]),
    ("degenerate evidence judged by raw LOO residuals scaled by the predictive sd", "shapleig/gp/posterior.py",
     "        return alpha[idx] / q\n", "        return alpha[idx] / np.sqrt(q)\n",
     ["tests/design/test_structure_readout.py -k leave_one_out_quantile"]),
    ("no probing under degenerate evidence", "shapleig/design/loop.py",
     "        if not self.options.probe_degenerate:\n            return False",
     "        if True:\n            return False",
     ["tests/design/test_structure_readout.py -k probes_the_degenerate"]),
    ("probing never stops on a confirmed structure", "shapleig/design/loop.py",
     "        return self._probe_streak >= max(3, round(PROBE_CONFIRMATIONS_PER_PLAYER * self.n_players))",
     "        return False", ["tests/design/test_structure_readout.py -k stops_being_probed"]),
    ("tol checked on the narrower interval of the fitted surrogate", "shapleig/design/loop.py",
     "        readout = self._structure_readout()\n        if readout is None and not refit:",
     "        readout = None\n        if readout is None and not refit:",
     ["tests/design/test_structure_readout.py -k tol"]),
    ("rough kernel not white (a short lengthscale instead)", "shapleig/gp/kernels/rough.py",
     "WHITE_LENGTHSCALE = 1e-300", "WHITE_LENGTHSCALE = 0.3", ["tests/gp/test_kernel_spec.py -k rough"]),
    ("additive kernel's Walsh scale without 1/p", "shapleig/gp/kernels/additive.py",
     "        return np.ones(p), params.variance / p", "        return np.ones(p), params.variance",
     ["tests/gp/test_kernel_spec.py -k additive"]),
]


def read_mutations(path: str | os.PathLike[str]) -> list[Mutation]:
    """The mutations of a JSON file (the format in the module docstring), checked entry by entry."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--mutations-file {path}: not a readable JSON file ({exc})") from None
    if not isinstance(entries, list):
        raise SystemExit(f"--mutations-file {path}: a JSON list of mutations expected, got {type(entries).__name__}")
    out: list[Mutation] = []
    keys = ("name", "file", "old", "new", "tests")
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict) or sorted(entry) != sorted(keys):
            raise SystemExit(f"--mutations-file {path}: entry {k} must be an object with exactly the keys {keys}")
        if not all(isinstance(entry[key], str) for key in keys[:4]) or not entry["old"]:
            raise SystemExit(f"--mutations-file {path}: entry {k}: name, file, old and new must be strings, "
                             "old non-empty")
        tests = entry["tests"]
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t for t in tests):
            raise SystemExit(f"--mutations-file {path}: entry {k}: tests must be a non-empty list of strings")
        out.append((entry["name"], entry["file"], entry["old"], entry["new"], list(tests)))
    return out


def run(only: list[str] | None, mutations: list[Mutation] | None = None) -> int:
    """Make each mutation (``MUTATIONS`` unless given) whose name contains a text of ``only``; 1 if any survived."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    caught = total = 0
    for name, rel, old, new, tests in MUTATIONS if mutations is None else mutations:
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
    parser.add_argument("--mutations-file", metavar="JSON",
                        help="run the mutations of this JSON file instead of the built-in list "
                             "(format: the script's docstring)")
    args = parser.parse_args()
    sys.exit(run(args.only, read_mutations(args.mutations_file) if args.mutations_file else None))
