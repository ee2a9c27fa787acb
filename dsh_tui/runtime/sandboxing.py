"""Which OS sandbox an agent's commands run in (docs/sandbox.md): ``[sandbox]`` in the settings, the
``DSH_TUI_SANDBOX`` environment variable, ``--sandbox`` (``set_sandbox_options``) and the SDK's ``sandbox=``,
each over the one before. The mechanics are ``dsh_tui.tools.sandbox``."""

from __future__ import annotations

import os
from typing import Any

from dsh_tui.tools.sandbox import MODES, SandboxSettings, probe

_PROCESS: dict[str, Any] = {"choice": None, "allow_escalation": False}
_SAID: set[str] = set()


def set_sandbox_options(choice: str | None = None, allow_escalation: bool = False) -> None:
    """The command line's ``--sandbox MODE`` and ``--allow-escalation``: every agent this process opens."""
    _PROCESS.update(choice=choice, allow_escalation=bool(allow_escalation))


def process_allows_escalation() -> bool:
    return bool(_PROCESS["allow_escalation"])


def settings_from(table: Any, choice: str | None = None) -> SandboxSettings:
    """``[sandbox]`` (the typed ``SandboxSection`` of ``dsh_tui.config.tree``, or its table), with the mode
    ``choice`` / ``DSH_TUI_SANDBOX`` / ``--sandbox`` give."""
    if table is None or isinstance(table, dict):
        from dsh_tui.config.tree import parse_section

        table = parse_section({"sandbox": table} if table is not None else {}, "sandbox")
    mode = choice or _PROCESS["choice"] or os.environ.get("DSH_TUI_SANDBOX") or table.mode
    if mode not in MODES:
        from dsh_tui.session.errors import UsageError

        raise UsageError(f"sandbox mode must be one of {', '.join(MODES)}, not {mode!r}")
    return SandboxSettings(mode=mode, network=table.network, writable=tuple(table.writable),
                           readable=tuple(table.readable))


def resolve(choice: str | None = None) -> tuple[Any, str | None]:
    """(the ``Sandbox``, or None; the one line that says why there is none where one was asked for)."""
    from dsh_tui.config import load_settings

    return probe(settings_from(load_settings().section("sandbox"), choice))


def say_once(note: str | None, write: Any) -> None:
    """``write(note)`` once per process (each agent a process opens finds the same machine)."""
    if note and note not in _SAID:
        _SAID.add(note)
        write(note)
