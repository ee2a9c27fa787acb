"""Issue #30 item 10: docs/plugins.md pointed at a README MCP section that did not exist. Every relative link
in the docs that talk about MCP and plugins reaches an existing file and, with ``#anchor``, an existing heading."""

from __future__ import annotations

import re

from tests.conftest import REPO

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def test_links_from_the_plugin_and_mcp_docs_reach_existing_sections():
    broken = []
    for doc in (REPO / "README.md", REPO / "docs" / "plugins.md", REPO / "docs" / "cli.md"):
        for target in LINK.findall(doc.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file) if file else doc
            if not path.exists():
                broken.append(f"{doc.name}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken, broken
    assert "(cli.md#mcp-servers)" in (REPO / "docs" / "plugins.md").read_text()
