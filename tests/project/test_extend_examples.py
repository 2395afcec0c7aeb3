"""The worked examples of docs/architecture.md, "How to extend" (issue 28): every fenced python block
under a ``###`` heading of that section runs as it stands in the page, in a fresh namespace, and its
own asserts hold. The kernel and store examples are also checked in depth by tests/gp/test_kernel_spec.py
and tests/runs/test_store_protocol.py; this test guarantees that none of the section's blocks is
left unexecuted, including ones added later."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs/architecture.md"
SECTION = "How to extend"
# the examples the section must have (issue 28); others (a new acquisition) are run when present
REQUIRED = ("A new index", "A new kernel", "A new store")


def extend_examples(text: str) -> dict[str, list[str]]:
    """``{subsection heading: [python blocks]}`` of the ``## ... How to extend`` section of ``text``."""
    match = re.search(rf"^## [^\n]*{SECTION}[^\n]*\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    if match is None:
        raise AssertionError(f"docs/architecture.md has no section '## {SECTION}'")
    parts = re.split(r"^### (.+)$", match.group(1), flags=re.M)
    return {heading.strip(): re.findall(r"^```python\n(.*?)^```", body, flags=re.S | re.M)
            for heading, body in zip(parts[1::2], parts[2::2])}


EXAMPLES = extend_examples(PAGE.read_text(encoding="utf-8"))


def test_the_section_has_every_required_example() -> None:
    missing = [heading for heading in REQUIRED if not EXAMPLES.get(heading)]
    assert not missing, f"docs/architecture.md, {SECTION}: no python example under {missing}"


@pytest.mark.parametrize("heading", [h for h, blocks in EXAMPLES.items() if blocks])
def test_the_example_runs_as_written(heading: str) -> None:
    # an example's registrations end with it: tests/conftest.py (_extension_registries_as_found)
    namespace: dict = {"__name__": "__docs_example__"}
    for k, block in enumerate(EXAMPLES[heading]):
        code = compile(block, f"docs/architecture.md ({heading}, block {k + 1})", "exec", dont_inherit=True)
        exec(code, namespace)  # noqa: S102 - the page's own code, asserts included


def test_the_extraction_sees_a_broken_example() -> None:
    """A block whose assert fails is caught (the extraction is not vacuous)."""
    page = "## 5. How to extend\n\n### A new thing\n\n```python\nassert 1 + 1 == 3\n```\n\n## 6. Next\n"
    blocks = extend_examples(page)
    assert blocks == {"A new thing": ["assert 1 + 1 == 3\n"]}
    with pytest.raises(AssertionError):
        exec(compile(blocks["A new thing"][0], "page", "exec"), {})  # noqa: S102
