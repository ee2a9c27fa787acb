"""The reference MCP server, installed once per machine (see everything.py). Never skips: if it cannot be
installed the tests that need it fail with the reason."""

from __future__ import annotations

import pytest

from tests.mcp.everything import Unavailable, install


@pytest.fixture(scope="session")
def everything() -> list[str]:
    try:
        return install()
    except Unavailable as err:
        pytest.fail(f"@modelcontextprotocol/server-everything unavailable: {err}", pytrace=False)
