"""The README's links into the repository (the docs pages, the examples) lead somewhere.

The site's pages are held by ``mkdocs build --strict``; the README is not part of the site,
so its relative links are checked here: each names a file that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def relative_targets(text: str) -> list[str]:
    """The link targets of ``text`` that are paths in the repository (no URL, no anchor)."""
    targets = (match["target"].split("#", 1)[0] for match in LINK.finditer(text))
    return [target for target in targets if target and "://" not in target]


def test_the_readme_links_into_the_docs() -> None:
    targets = relative_targets((ROOT / "README.md").read_text())
    assert "docs/how-to/troubleshooting.md" in targets
    assert len(targets) > 10


def test_every_relative_link_of_the_readme_names_a_file_that_exists() -> None:
    missing = [
        t for t in relative_targets((ROOT / "README.md").read_text()) if not (ROOT / t).exists()
    ]
    assert missing == []


def test_a_link_to_a_missing_file_is_found() -> None:
    text = "See [a](docs/nothing.md), [b](https://example.com) and [c](README.md#setup)."
    assert relative_targets(text) == ["docs/nothing.md", "README.md"]
    assert not (ROOT / "docs/nothing.md").exists()
