"""The README stays short and every page it leads to is reachable: README.md is at most
12,000 bytes, links every page under docs/, and no relative link in README.md or
docs/**/*.md points to a missing file or a missing heading (GitHub's anchors)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

import tests as _tests

ROOT = _tests.ROOT
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_LIMIT = 12_000

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
# [text](target) and ![alt](target); the target up to whitespace or ")"; an optional title
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose(text: str) -> str:
    """The text outside fenced code blocks and code spans (links there are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text lower-cased, punctuation other
    than '-' and '_' dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links → their text
    text = re.sub(r"[`*]|(?<!\w)_|_(?!\w)", "", text)  # code and emphasis marks
    text = text.strip().lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file; repeats get -1, -2 … as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(path: Path) -> list[str]:
    targets = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.IGNORECASE)]


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(root)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(root)}")
    return broken


def test_readme_is_at_most_12000_bytes():
    size = README.stat().st_size
    assert size <= README_LIMIT, (
        f"README.md is {size:,} bytes (limit {README_LIMIT:,}): move detail into docs/"
    )


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    assert broken_links(page) == []


def test_readme_links_every_docs_page():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in relative_links(README)}
    missing = [str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md") if p.resolve() not in linked]
    assert missing == [], f"README's Read more does not link: {missing}"


def test_link_checker_catches_a_missing_file_and_a_missing_heading(tmp_path):
    """The checker itself: a good link passes, a missing file and a missing anchor fail,
    and links inside code are not links."""
    (tmp_path / "b.md").write_text(
        "# Runs (`gbdesk run`) — resumable\n\n## Same\n\n## Same\n", encoding="utf-8"
    )
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#runs-gbdesk-run--resumable) [ok](b.md#same-1) [web](https://x.org/y)\n"
        "[gone](c.md) [no anchor](b.md#nothing) `[code](d.md)`\n"
        "```\n[fenced](e.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page, root=tmp_path) == [
        "c.md: no file c.md",
        "b.md#nothing: no heading #nothing in b.md",
    ]
