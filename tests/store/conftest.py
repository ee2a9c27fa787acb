"""Fixtures shared by the store tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def root(tmp_path):
    """An empty session root (a test module may define its own)."""
    r = tmp_path / "sessions"
    r.mkdir()
    return r
