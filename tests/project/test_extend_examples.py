"""The worked examples of docs/architecture.md, "How to extend" (issue 28): every fenced python block
under a ``###`` heading of that section runs as it stands in the page, in a fresh namespace, and its
own asserts hold. The kernel and store examples are also checked in depth by tests/gp/test_kernel_spec.py
and tests/runs/test_store_protocol.py; this test guarantees that none of the section's blocks is
left unexecuted, including ones added later."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shapleig.design.acquisition import acquisition_names, unregister_acquisition
from shapleig.games.indices import index_names, unregister_index

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


# the registries as the package leaves them at import (collection time: no test has run yet)
BUILT_IN = (set(index_names()), set(acquisition_names()))


def _drop_registrations() -> None:
    for name in set(index_names()) - BUILT_IN[0]:
        unregister_index(name)
    for name in set(acquisition_names()) - BUILT_IN[1]:
        unregister_acquisition(name)


@pytest.fixture
def clean_registries():
    """Each example registers its index or acquisition into the registries as the package has them,
    whatever ran before (tests/project/test_readme.py runs the same blocks and leaves their names
    registered), and its registrations end with it."""
    _drop_registrations()
    yield
    _drop_registrations()


@pytest.mark.parametrize("heading", [h for h, blocks in EXAMPLES.items() if blocks])
def test_the_example_runs_as_written(heading: str, clean_registries) -> None:
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
