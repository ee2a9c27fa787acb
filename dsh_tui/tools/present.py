"""Pure helpers that turn recorded tool results into card facts for the UI (no I/O, no textual).

dsh records no ``meta`` for ``bash`` (the recorded scenarios have none), so a bash card reads its
facts back from the model-visible text that ``render_bash_result`` produced; write/edit cards count
``+added -removed`` lines over the recorded diff hunks.
"""

from __future__ import annotations

import re
from typing import Any

from dsh_tui.tools.fs import diff_counts

__all__ = ["bash_summary", "diff_counts", "diff_stat"]

_MARKER = re.compile(
    r"^\[(timed out after (?P<t>[0-9.e+]+)ms|killed by signal: (?P<s>\w+)|exit code: (?P<c>-?\d+))\]$"
)
_TRUNC = re.compile(r"\n\[output truncated; full output: (?P<p>[^\n]*)\]")


def bash_summary(text: str, *, head_lines: int = 5, tail_lines: int = 5) -> dict[str, Any]:
    """Exit status, markers and a head/tail of the output from a rendered bash result."""
    lines = text.split("\n")
    exit_code: int | None = 0
    signal: str | None = None
    timeout_ms: str | None = None
    while lines and (m := _MARKER.match(lines[-1])):
        if m.group("t"):
            timeout_ms = m.group("t")
        elif m.group("s"):
            signal, exit_code = m.group("s"), None
        else:
            exit_code = int(m.group("c"))
        lines.pop()
    body = "\n".join(lines)
    spills = [m.group("p") for m in _TRUNC.finditer(body)]
    if body == "(no output)":
        body = ""
    out_lines = body.rstrip("\n").split("\n") if body else []
    return {
        "exitCode": exit_code,
        "signal": signal,
        "timedOutMs": timeout_ms,
        "truncated": bool(spills),
        "spillPaths": [p for p in spills if p != "(unavailable)"],
        "hasStderr": body.startswith("[stderr]\n") or "\n[stderr]\n" in body,
        "lineCount": len(out_lines),
        "head": out_lines[:head_lines],
        "tail": out_lines[head_lines:][-tail_lines:] if len(out_lines) > head_lines else [],
    }


def diff_stat(meta: Any, args: Any = None) -> tuple[int, int] | None:
    """``(+added, -removed)`` for a write/edit ``meta``; None when the meta is not a diff list.

    A created file records ``{"diffs": []}`` (dsh shows the call's content instead): with the
    call's ``args`` its lines count as added.
    """
    if not isinstance(meta, dict) or not isinstance(meta.get("diffs"), list):
        return None
    if not meta["diffs"] and isinstance(args, dict) and isinstance(args.get("content"), str):
        content = args["content"]
        return (len(content.rstrip("\n").split("\n")) if content else 0), 0
    return diff_counts(meta["diffs"])
