"""The default path stays light: ``import shapleig`` and a default ``ShaplEIG().estimate`` import
neither torch, botorch nor gpytorch (the numpy engine) and print nothing on stderr. Each check runs in
a fresh interpreter, so modules imported by other tests do not count. The import time is a benchmark
(scripts/bench/bench_import.py), not a test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "botorch", "gpytorch", "linear_operator")


def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "default"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=False,
                          timeout=300)


def test_default_run_imports_no_torch_and_prints_no_warning() -> None:
    code = f"""
import json, sys
import numpy as np
import shapleig
game = shapleig.FunctionGame(lambda Z: np.sqrt(Z @ np.arange(1.0, 7.0)) + Z[:, 0] * Z[:, 1], 6)
est = shapleig.ShaplEIG().estimate(game, 16, seed=0)
assert est.evaluations == 16 and est.std is not None
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert done.stderr == "", f"a default run wrote to stderr: {done.stderr}"


@pytest.mark.torch
def test_published_setting_still_uses_botorch() -> None:
    from shapleig import ShaplEIG

    assert ShaplEIG.published().options.fit_engine == "gpytorch" and ShaplEIG().options.fit_engine == "numpy"


def test_import_shapleig_is_light() -> None:
    """Only what is imported is checked; the import time is measured by scripts/bench/bench_import.py
    (a time asserted here failed under load)."""
    code = f"""
import json, sys
import shapleig
heavy = {HEAVY!r} + ("scipy", "pandas", "sklearn", "matplotlib", "lightgbm")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""
    done = _run(code)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout) == []


def test_py_typed_ships_and_estimate_parameters_are_explicit() -> None:
    import inspect

    from shapleig import BaseEstimator, ShaplEIG

    assert (ROOT / "shapleig" / "py.typed").is_file()
    assert 'shapleig = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
    for fn in (BaseEstimator.estimate, ShaplEIG.estimate):
        params = inspect.signature(fn).parameters
        assert not any(p.kind is p.VAR_KEYWORD for p in params.values()), fn
        assert {"seed", "random_state", "store", "evaluator", "max_retries"} <= set(params)
    assert {"tol", "rtol"} <= set(inspect.signature(ShaplEIG.estimate).parameters)
