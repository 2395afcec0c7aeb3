"""Print the module tables of docs/architecture.md from the modules' own docstrings.

    python scripts/docs/architecture_tables.py            # print the tables
    python scripts/docs/architecture_tables.py --write    # replace section 3 of docs/architecture.md

Every module of ``shapleig``, ``baselines`` and ``tasks`` gets one row: its path and the first
sentence of its docstring. ``tests/project/test_architecture.py`` checks that the page lists every
module, so a new module without a row fails the suite.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("shapleig", "baselines", "tasks")  # folders; installed as shapleig, shapleig_baselines, shapleig_tasks


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


def tables() -> str:
    """Every package's module tables, one per folder, as markdown."""
    out = []
    for package in PACKAGES:
        groups: dict[str, list[Path]] = {}
        for p in modules(package):
            groups.setdefault(p.parent.relative_to(ROOT).as_posix(), []).append(p)
        out += [f"#### `{folder}/`\n\n{table(paths)}\n" for folder, paths in groups.items()]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite section 3 of docs/architecture.md")
    args = parser.parse_args()
    if not args.write:
        print(tables())
        return
    page = ROOT / "docs/architecture.md"
    text = page.read_text()
    start = text.index("## 3. Modules\n") + len("## 3. Modules\n")
    end = text.index("## 4. ")
    page.write_text(text[:start] + "\n" + tables() + "\n" + text[end:])


if __name__ == "__main__":
    main()
