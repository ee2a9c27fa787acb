"""An MCP server's state as the user sees it: the ``/mcp`` row (``ServerStatus``) and the one line a failed
connection attempt is reported with (``describe``; ``needs_login`` tells an OAuth login apart)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh_tui.extensions.mcp.stdio import TransportStats


@dataclass
class ServerStatus:
    """One row of the ``/mcp`` listing."""

    name: str
    transport: str
    target: str
    state: str  # connecting | ready | reconnecting | needs-login | failed | disabled | closed
    tools: list[str]
    error: str = ""
    attempt: int = 0
    max_attempts: int = 0
    source: str = "settings"
    notes: list[str] | None = None  # what was left out of the server's tool list, one line each
    prompts: list[str] | None = None  # its prompts' slash commands (without the /)

    @property
    def text(self) -> str:
        """``name  ready · 3 tools`` and friends (one line)."""
        n = len(self.tools)
        if self.state == "ready":
            detail = f"ready · {n} tool{'' if n == 1 else 's'}"
        elif self.state == "reconnecting":
            detail = f"reconnecting (attempt {self.attempt}/{self.max_attempts})"
            if self.error:
                detail += f" · {self.error}"
        elif self.state == "failed":
            detail = f"failed: {self.error}" if self.error else "failed"
        elif self.state == "needs-login":
            detail = f"needs login: run dsh-tui mcp login {self.name}"
        else:
            detail = self.state
        return f"{self.name}  {detail}"


def needs_login(err: BaseException) -> bool:
    """The attempt ended because the server asks for an OAuth login (``oauth.NeedsLogin``, perhaps in a group)."""
    from dsh_tui.extensions.mcp.oauth import NeedsLogin

    seen = 0
    todo: list[BaseException | None] = [err]
    while todo and seen < 50:
        e = todo.pop()
        seen += 1
        if isinstance(e, NeedsLogin):
            return True
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        elif e is not None:
            todo.extend([e.__cause__, e.__context__])
    return False


def describe(err: BaseException, errfile: Any) -> str:
    """One line for a failed attempt: the SDK's or OS's message, plus the server's last stderr line."""
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    if isinstance(err, BaseExceptionGroup):
        err = err.exceptions[0]
    if isinstance(err, FileNotFoundError):
        text = f"cannot start {err.filename or 'the server'}: no such file or directory"
    elif isinstance(err, OSError) and err.strerror:
        text = f"{err.strerror}" + (f": {err.filename}" if err.filename else "")
    else:
        text = str(err) or type(err).__name__
    text = " ".join(text.split())
    last = errfile.stderr_last_line() if isinstance(errfile, TransportStats) else ""
    if last:
        text += f" (stderr: {last})"
    return text
