"""The user-defined ``Linear`` kernel of docs/architecture.md §5 ("A new kernel"), for the tests.

The page's example is executed up to its first use (``game = ...``): its classes only, loaded once
so every test module sees the same ``Linear`` and ``LinearParams`` classes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def docs_kernel() -> dict:
    """The namespace of the page's kernel example, run up to ``game = ``: its imports and classes."""
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "class Linear(KernelSpec)" in b)
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(block.split("\ngame = ")[0], "docs/architecture.md", "exec", dont_inherit=True), namespace)
    return namespace


DOCS = docs_kernel()
Linear, LinearParams, LinearFit = DOCS["Linear"], DOCS["LinearParams"], DOCS["LinearFit"]
