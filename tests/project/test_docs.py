"""Every design reference in the code points into the repository's docs/ folder.

Source comments cite the design documents as ``docs/<page>.md §N``. This checks that each cited
page exists and has a heading numbered N, that no section mark appears without its page on the
same line, and that nothing cites a document kept outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("shapleig", "baselines", "tasks", "scripts", "tests")
PAGE = re.compile(r"docs/([\w-]+)\.md")
SECTION = re.compile("\u00a7" r"(\d+)")  # the section sign, written so this file does not cite itself
HEADING = re.compile(r"^#{1,6}\s+(\d+)\.\s", re.M)
# names of documents that used to live outside the repository, and bare page names without docs/
OUTSIDE = re.compile(r"math doc|shared/docs|shared/papers|shapleig_math|(?<![\w/.-])(?:games|baselines|architecture|math)\.md",
                     re.I)


def _code_lines():
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.resolve() == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                yield path.relative_to(ROOT), number, line


def _sections(page: str) -> set[int]:
    return {int(n) for n in HEADING.findall((ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8"))}


def citations(line: str) -> tuple[list[tuple[str, int | None]], list[int]]:
    """(page, section or None) cited on ``line`` and the sections with no page before them."""
    found, bare = [], []
    events = sorted([(m.start(), "page", m.group(1)) for m in PAGE.finditer(line)]
                    + [(m.start(), "section", int(m.group(1))) for m in SECTION.finditer(line)])
    page = None
    for _, kind, value in events:
        if kind == "page":
            page = value
            found.append((page, None))
        elif page is None:
            bare.append(value)
        else:
            found.append((page, value))
    return found, bare


def test_citation_parser():
    s = "\u00a7"
    assert citations(f"(docs/math.md {s}6, {s}7, {s}10.2)") == (
        [("math", None), ("math", 6), ("math", 7), ("math", 10)], [])
    assert citations(f"see {s}3 and docs/games.md {s}7") == ([("games", None), ("games", 7)], [3])
    assert OUTSIDE.search("math doc " + s + "3") and OUTSIDE.search("baselines.md " + s + "1")
    assert not OUTSIDE.search("docs/baselines.md " + s + "1")


def test_every_code_citation_resolves_inside_the_repository():
    assert (ROOT / "docs").is_dir(), "the docs/ folder is missing"
    problems, cited = [], 0
    cache: dict[str, set[int]] = {}
    for path, number, line in _code_lines():
        where = f"{path}:{number}: {line.strip()}"
        if OUTSIDE.search(line):
            problems.append(f"cites a document outside docs/: {where}")
        found, bare = citations(line)
        if bare:
            problems.append(f"section mark without its docs/ page on the line: {where}")
        for page, section in found:
            if not (ROOT / "docs" / f"{page}.md").is_file():
                problems.append(f"docs/{page}.md does not exist: {where}")
                continue
            if section is not None:
                cited += 1
                if section not in cache.setdefault(page, _sections(page)):
                    problems.append(f"docs/{page}.md has no section {section}: {where}")
    assert not problems, "\n".join(problems)
    assert cited > 50  # the code does cite the docs (guards against a parser that finds nothing)


@pytest.mark.parametrize("page", ["math", "games", "baselines"])
def test_pages_keep_their_section_numbers(page):
    """Sections are numbered 1..n without gaps, so citations stay stable when pages change."""
    numbers = sorted(_sections(page))
    assert numbers == list(range(1, len(numbers) + 1))
