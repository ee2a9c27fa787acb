"""httpx without its command-line module (``dsh_tui._httpx``, shared with the web tools)."""

from __future__ import annotations

from dsh_tui._httpx import httpx

__all__ = ["httpx"]
