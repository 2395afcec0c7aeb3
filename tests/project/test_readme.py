"""The README's Python example runs as written and its claims hold on it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    est, exact = namespace["est"], namespace["exact"]
    assert est.evaluations <= 40 and est.values.shape == (8,)
    # a smooth 8-player game: 40 evaluations should get close to the exact values
    assert np.mean((est.values - exact) ** 2) < 1e-3
    assert namespace["ks"].evaluations <= 40


def test_readme_quickstart_has_exactly_two_commands():
    text = README.read_text()
    quick = text.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)[0].strip().splitlines()
    assert len(commands) == 2
    assert commands[0].endswith("shapleig demo") and "pytest" in commands[1]
