"""Import time of ``import shapleig`` in fresh interpreters, and what it imports.

Prints the best and median of ``--runs`` fresh interpreters (each ``python -c "import shapleig"``
timed from inside, so interpreter start-up is excluded) and whether any heavy module (torch,
botorch, gpytorch, scipy, pandas, scikit-learn, matplotlib, lightgbm) was imported. The test suite
checks only what is imported (tests/project/test_light_imports.py); the time belongs here, where a
loaded machine is reported as such rather than failing a test.

    python scripts/bench/bench_import.py            # 5 interpreters
    python scripts/bench/bench_import.py --runs 20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "botorch", "gpytorch", "linear_operator", "scipy", "pandas", "sklearn", "matplotlib", "lightgbm")
CODE = f"""
import json, sys, time
t = time.perf_counter()
import shapleig
dt = time.perf_counter() - t
print(json.dumps({{"s": dt, "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""


def measure(runs: int) -> list[dict]:
    """One record ``{"s": seconds, "heavy": [...]}`` per fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, cwd=ROOT,
                              check=True, timeout=300)
        out.append(json.loads(done.stdout))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters to time (default 5)")
    args = parser.parse_args()
    records = measure(args.runs)
    times = sorted(r["s"] for r in records)
    heavy = sorted({m for r in records for m in r["heavy"]})
    print(f"import shapleig: best {times[0]:.3f} s, median {times[len(times) // 2]:.3f} s over {len(times)} "
          f"fresh interpreters (load average {os.getloadavg()[0]:.2f})")
    print(f"heavy modules imported: {', '.join(heavy) if heavy else 'none'}")


if __name__ == "__main__":
    main()
