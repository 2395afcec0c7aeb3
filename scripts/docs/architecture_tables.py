"""Print the module tables of docs/architecture.md from the modules' own docstrings.

    python scripts/docs/architecture_tables.py > /tmp/tables.md    # paste into docs/architecture.md

Every module of ``shapleig``, ``baselines`` and ``tasks`` gets one row: its path and the first
sentence of its docstring. ``tests/project/test_architecture.py`` checks that the page lists every
module, so a new module without a row fails the suite.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shapleig", "baselines", "tasks")


def modules(package: str) -> list[Path]:
    """Every ``.py`` file of ``package`` (``__init__`` included), sorted by folder then name."""
    return sorted((ROOT / package).rglob("*.py"), key=lambda p: (p.parent.as_posix(), p.name != "__init__.py", p.name))


def summary(path: Path) -> str:
    """The first sentence of the module docstring (one line), or an empty string."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return first.replace("|", "\\|")


def table(paths: list[Path]) -> str:
    rows = ["| module | what it is |", "|---|---|"]
    rows += [f"| `{p.relative_to(ROOT).as_posix()}` | {summary(p)} |" for p in paths]
    return "\n".join(rows)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for package in PACKAGES:
        groups: dict[str, list[Path]] = {}
        for p in modules(package):
            groups.setdefault(p.parent.relative_to(ROOT).as_posix(), []).append(p)
        for folder, paths in groups.items():
            print(f"### `{folder}/`\n\n{table(paths)}\n")


if __name__ == "__main__":
    main()
