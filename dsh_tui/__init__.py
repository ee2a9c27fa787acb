"""dsh-tui: DeepSeek Harness sessions in Python, with a Textual terminal app.

Layers (imports only point down): cli -> ui | sdk -> plugins -> runtime -> (llm | tools) -> store -> session.
Nothing outside ``dsh_tui.ui`` imports textual or rich.

The SDK: ``from dsh_tui import DeepSeekHarness`` (``Harness``: a deprecated alias), ``RunResult``
(``dsh_tui.sdk``); loaded on first use, so ``import dsh_tui`` stays cheap.
"""

from typing import Any

__version__ = "0.1.0"

_SDK_NAMES = ("Harness", "DeepSeekHarness", "HarnessConfig", "DeepSeekHarnessConfig", "RunResult", "HarnessError")


def __getattr__(name: str) -> Any:
    if name in _SDK_NAMES:  # imported by name: the package root depends on nothing (every layer reads
        import importlib  # __version__ from here)

        return getattr(importlib.import_module("dsh_tui.sdk"), name)
    raise AttributeError(f"module 'dsh_tui' has no attribute {name!r}")
