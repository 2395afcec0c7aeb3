"""Install size and import time of shapleig with and without the torch stack (extra ``botorch``).

For each install, a fresh virtual environment gets ``pip install -c constraints/ci-cpu.txt .[EXTRAS]``
(a regular, non-editable install of this checkout); printed: the environment's size on disk (du),
the packages pip installed, whether torch is importable, and the time of ``import shapleig`` and of
a first default ``ShaplEIG().estimate`` (best of 3 fresh interpreters each).

    python scripts/bench/bench_install.py                      # "" (the default) and "botorch"
    python scripts/bench/bench_install.py --extras "" botorch shapiq --python python3.12
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORT = "import time; t = time.perf_counter(); import shapleig; print(time.perf_counter() - t)"
FIRST_RUN = ("import time; t = time.perf_counter(); import numpy as np, shapleig; "
             "g = shapleig.FunctionGame(lambda Z: Z @ np.arange(1.0, 7.0), 6); "
             "shapleig.ShaplEIG().estimate(g, 16, seed=0); print(time.perf_counter() - t)")


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def best_of(python: Path, code: str, n: int = 3) -> float:
    times = []
    for _ in range(n):
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return min(times)


def measure(python: str, extras: str, workdir: Path) -> dict:
    venv = workdir / f"venv-{extras or 'default'}"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    start = time.perf_counter()
    subprocess.run([str(pip), "install", "--quiet", "-c", str(ROOT / "constraints/ci-cpu.txt"), target], check=True)
    install_s = time.perf_counter() - start
    py = venv / "bin" / "python"
    listed = json.loads(subprocess.run([str(pip), "list", "--format", "json"], capture_output=True, text=True,
                                       check=True).stdout)
    names = {p["name"].lower() for p in listed}
    return {"extras": extras or "(none)", "size_mb": du(venv) / 2**20, "packages": len(names),
            "torch": "torch" in names, "install_s": install_s, "import_s": best_of(py, IMPORT),
            "first_estimate_s": best_of(py, FIRST_RUN)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", nargs="+", default=["", "botorch"], help='extras per install ("" = none)')
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the environments")
    parser.add_argument("--keep", action="store_true", help="keep the environments (printed folder)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="shapleig-install-"))
    try:
        rows = [measure(args.python, extras, workdir) for extras in args.extras]
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"python: {subprocess.run([args.python, '-V'], capture_output=True, text=True).stdout.strip()}")
    print("| install | environment size | packages | torch | pip install | import shapleig | first ShaplEIG run |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| `pip install .{'[' + r['extras'] + ']' if r['extras'] != '(none)' else ''}` | {r['size_mb']:.0f} MB | "
              f"{r['packages']} | {'yes' if r['torch'] else 'no'} | {r['install_s']:.0f} s | {r['import_s']:.2f} s | "
              f"{r['first_estimate_s']:.2f} s |")


if __name__ == "__main__":
    main()
