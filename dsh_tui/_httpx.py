"""httpx, imported without its command-line module (see ``_httpx_without_cli``)."""

from __future__ import annotations

import sys
import types


def _httpx_without_cli():
    """Import httpx without its command-line module.

    httpx imports ``httpx._main`` (its CLI: click, rich, pygments) eagerly whenever those are installed.
    The CLI is never used here, it costs ~50 ms of start-up, and rich must stay out of every layer
    below ``dsh_tui.ui`` (tests/test_layering.py). A stand-in module takes its place.
    """
    if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
        stub = types.ModuleType("httpx._main")

        def main() -> None:
            raise SystemExit("the httpx command line is not available inside dsh-tui")

        stub.main = main  # type: ignore[attr-defined]
        sys.modules["httpx._main"] = stub
    import httpx

    return httpx


httpx = _httpx_without_cli()
