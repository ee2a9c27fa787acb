"""Tool cards: a tool call as the transcript shows it (pure: item -> Rich renderable, as ``render.py``).

The title line (``tool_title``) with its pills (exit code, diff stat, search counts, LSP errors, approval);
a collapsed card's preview (an edit's first diff lines, a call's first output lines); the expanded body
(a write or edit's numbered diff, a read's lines, the plan's checklist, pretty arguments and the clipped
result); and the approval panel's view of a call (``describe_call``). The cards stay consistent with each
other by living together; ``render.render_item`` picks ``render_tool`` for a ``ToolItem``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from dsh_tui.session.transcript import ToolItem
from dsh_tui.ui.widgets.textfit import clip, one_line

STATE_ICON = {
    "requested": "…",
    "running": "⠿",
    "ok": "✓",
    "error": "✗",
    "aborted": "■",
    "unknown": "?",
}
STATE_STYLE = {
    "requested": "dim",
    "running": "bold cyan",
    "ok": "green",
    "error": "bold red",
    "aborted": "yellow",
    "unknown": "magenta",
}


def shown_path(item: ToolItem, path: Any) -> str:
    """A path as a card shows it: relative to the session's workspace when it lies inside it."""
    if not isinstance(path, str) or not path:
        return ""
    workspace = item.workspace.rstrip("/")
    if workspace and path.startswith(workspace + "/"):
        return path[len(workspace) + 1:] or "."
    if workspace and path == workspace:
        return "."
    return path


def tool_title(item: ToolItem) -> str:
    args = item.args()
    if item.tool == "bash":
        workdir = args.get("workdir")
        where = f"({shown_path(item, workdir)}) " if isinstance(workdir, str) and workdir else ""
        return f"{where}$ {one_line(str(args.get('command', item.arguments)), 90)}"
    if item.tool == "read":
        path = shown_path(item, args.get("file_path") or args.get("path"))
        rng = ""
        if args.get("offset") or args.get("limit"):
            start = int(args.get("offset") or 1)
            rng = f" :{start}" + (f"-{start + int(args['limit']) - 1}" if args.get("limit") else "")
        return f"read {path}{rng}"
    if item.tool == "edit":
        return f"{item.name} {shown_path(item, args.get('file_path') or args.get('path'))}"
    if item.tool == "search":
        where = shown_path(item, args.get("path"))
        return f"{item.name} {args.get('pattern', '')!s} {where}".rstrip()
    if item.tool == "todo":
        todos = args.get("todos")
        n = len(todos) if isinstance(todos, list) else 0
        return f"{item.name} · {n} item{'' if n == 1 else 's'}"
    if item.name == "lsp" and isinstance(args.get("operation"), str):  # dsh's presentLspCall title
        where = shown_path(item, args.get("file_path"))
        return f"LSP {args['operation']} {where}:{args.get('line')}:{args.get('character')}"
    if item.name == "skill" and isinstance(args.get("name"), str):  # the skill tool: its skill's name
        return f"skill {one_line(args['name'], 70)}"
    if item.name.startswith("mcp__"):  # an MCP server's tool: server › tool key: value, …
        from dsh_tui.extensions.mcp.naming import split_public_name

        parts = split_public_name(item.name)
        if parts is not None:
            return f"{parts[0]} › {parts[1]} {one_line(_inline_args(item), 60)}".rstrip()
    return f"{item.name} {one_line(item.arguments, 70)}"


def _inline_args(item: ToolItem) -> str:
    """A call's arguments as ``key: value, …`` (strings unquoted); the raw text when not an object."""
    args = item.args()
    if not args:
        return "" if item.arguments.strip() in ("", "{}") else item.arguments
    import json  # (json, orjson and jsonutil: imported by the first card that needs them, not on the first frame)

    shown = []
    for key, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        shown.append(f"{key}: {text}")
    return ", ".join(shown)


def _exit_code(result: str) -> int | None:
    for line in reversed(result.splitlines()[-3:]):
        if line.startswith("[exit code: ") and line.endswith("]"):
            try:
                return int(line[len("[exit code: "):-1])
            except ValueError:
                return None
    return None


def _plural(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def search_counts(item: ToolItem) -> str | None:
    """What a glob/grep found, from its presentation meta: "2 files", "7 matches in 3 files"."""
    meta = item.meta if isinstance(item.meta, dict) else {}
    total = meta.get("total")
    if meta.get("shape") == "paths" and isinstance(total, int):
        return _plural(total, "file")
    if meta.get("shape") == "matches" and isinstance(total, int):
        files = meta.get("files")
        n_files = len(files) if isinstance(files, list) else 0
        more = "+" if meta.get("truncated") else ""
        return _plural(total, "match", "matches") + (
            f" in {n_files}{more} file{'' if n_files == 1 else 's'}" if total else "")
    return None


def _diff_lines(item: ToolItem) -> list[tuple[str, str]]:
    """(style, line) rows of a write/edit card's diff: numbered old/new lines with the recorded context.

    From the recorded hunks (``meta.diffs``, 3 lines of context each); a created file shows its content;
    while the call runs (or when it failed) the call's own old/new strings."""
    import difflib

    args = item.args()
    meta = item.meta if isinstance(item.meta, dict) else {}
    diffs = meta.get("diffs") if item.state == "ok" else None
    rows: list[tuple[str, str]] = []
    if isinstance(diffs, list) and not diffs and isinstance(args.get("content"), str):
        content = args["content"]
        lines = content.split("\n")[:-1] if content.endswith("\n") else content.split("\n")
        return [("green", f"{n:>4} + {line}") for n, line in enumerate(lines, 1)]
    if isinstance(diffs, list):
        starts = item.hunk_starts or []
        for i, hunk in enumerate(diffs):
            if not isinstance(hunk, dict):
                continue
            old = str(hunk["oldText"]).split("\n") if hunk.get("oldText") else []
            new = str(hunk["newText"]).split("\n") if hunk.get("newText") else []
            start = starts[i] if i < len(starts) else None
            if i:
                rows.append(("dim", "     ⋮"))
            o = n = start
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
                if tag == "equal":
                    for line in old[i1:i2]:
                        rows.append(("dim", f"{_num(n)}   {line}"))
                        o, n = _inc(o), _inc(n)
                    continue
                for line in old[i1:i2]:
                    rows.append(("red", f"{_num(o)} - {line}"))
                    o = _inc(o)
                for line in new[j1:j2]:
                    rows.append(("green", f"{_num(n)} + {line}"))
                    n = _inc(n)
        return rows
    old_text = str(args.get("old_string") or "")
    new_text = str(args.get("new_string") if "new_string" in args else args.get("content") or "")
    rows += [("red", f"     - {line}") for line in old_text.splitlines()]
    rows += [("green", f"     + {line}") for line in new_text.splitlines()]
    return rows


def _num(n: int | None) -> str:
    return f"{n:>4}" if n is not None else "    "


def _inc(n: int | None) -> int | None:
    return None if n is None else n + 1


def _diff_stat(item: ToolItem) -> tuple[int, int]:
    rows = _diff_lines(item)
    return sum(1 for style, _ in rows if style == "green"), sum(1 for style, _ in rows if style == "red")


TODO_MARK = {"completed": ("✓", "green"), "in_progress": ("▶", "bold"), "pending": ("○", "dim")}


def _todo_lines(item: ToolItem) -> Text | None:
    todos = item.args().get("todos")
    if not isinstance(todos, list):
        return None
    text = Text()
    for todo in todos:
        if not isinstance(todo, dict):
            continue
        mark, style = TODO_MARK.get(str(todo.get("status")), ("·", ""))
        text.append(f"  {mark} ", style=style)
        content = str(todo.get("content", ""))
        text.append(content + "\n", style="strike dim" if todo.get("status") == "completed" else style)
    text.rstrip()
    return text


LSP_DIAGNOSTICS_HEAD = "LSP errors detected in this file, please fix:\n<diagnostics file="


def lsp_diagnostics(item: ToolItem) -> tuple[list[str], int]:
    """A write/edit card's language-server errors (the ``lsp`` built-in appends opencode's block to the
    result): the ``ERROR [line:col] message`` lines, and how many errors there are in all."""
    if item.tool != "edit" or item.state != "ok":
        return [], 0
    start = item.result.find(LSP_DIAGNOSTICS_HEAD)
    if start < 0:
        return [], 0
    body = item.result[start:].split("\n", 2)[2] if item.result[start:].count("\n") >= 2 else ""
    lines = [line for line in body.split("</diagnostics>", 1)[0].splitlines() if line.strip()]
    more = 0
    if lines and lines[-1].startswith("... and ") and lines[-1].endswith(" more"):
        with contextlib.suppress(ValueError):
            more = int(lines[-1][len("... and "):-len(" more")])
        lines = lines[:-1]
    return lines, len(lines) + more


def _lsp_text(lines: list[str], total: int, limit: int) -> Text:
    text = Text()
    for line in lines[:limit]:
        text.append("     " + (line if len(line) <= 160 else line[:159] + "…") + "\n", style="red")
    if total > min(limit, len(lines)):
        text.append(f"     … {total - min(limit, len(lines))} more\n", style="dim")
    text.rstrip()
    return text


def render_tool(item: ToolItem, expanded: bool) -> RenderableType:
    icon = STATE_ICON.get(item.state, "·")
    head = Text()
    asked = item.approval == "asked" and item.state in ("requested", "running")
    head.append(f"{icon} " if not asked else "? ", style=STATE_STYLE.get(item.state, "") if not asked else "bold yellow")
    head.append(tool_title(item), style="bold")
    pills: list[tuple[str, str]] = []
    background = item.tool == "bash" and item.state == "ok" and item.result.startswith("started background job ")
    if background:  # a background job (dsh_tui/extensions/jobs): no exit code yet, its id
        pills.append((f" {item.result.rsplit(' ', 1)[-1]} ", "bold"))
    elif item.tool == "bash" and item.state in ("ok", "error"):
        code = _exit_code(item.result)
        code = 0 if code is None and item.state == "ok" else code
        if code is not None:
            pills.append((f" exit {code} ", "black on green" if code == 0 else "white on red"))
    if item.tool == "edit" and item.state not in ("error", "aborted", "unknown"):
        added, removed = _diff_stat(item)
        created = item.state == "ok" and isinstance(item.meta, dict) and item.meta.get("diffs") == []
        pills.append((f" {'created ' if created else ''}+{added} −{removed} ", "bold"))
    elif item.tool == "edit" and item.state == "error":
        pills.append((" not written ", "white on red"))
    lsp_lines, lsp_total = lsp_diagnostics(item)
    if lsp_total:
        pills.append((f" {lsp_total} LSP error{'s' if lsp_total != 1 else ''} ", "white on red"))
    if item.tool == "search" and item.state == "ok":
        counts = search_counts(item)
        if counts:
            pills.append((f" {counts} ", "dim"))
    if item.state == "aborted":
        pills.append((" aborted ", "yellow"))
    elif item.state == "unknown":
        pills.append((" outcome unknown ", "magenta"))
    elif item.state == "running" and not asked:
        pills.append((" running ", "dim"))
    if asked:
        pills.append((" waiting for approval ", "bold yellow"))
    elif item.approval == "rejected":
        reason = rejection_reason(item)
        pills.append((f" rejected: {one_line(reason, 70)} " if reason else " rejected ", "red"))
    for label, style in pills:
        head.append(" ")
        head.append(label, style=style)
    if item.state == "error" and item.tool != "bash" and item.result.strip():
        head.append("  " + one_line(item.result.strip().splitlines()[0], 70), style="red")
    if item.tool == "todo" and item.state in ("requested", "running", "ok"):
        todos = item.args().get("todos")
        if isinstance(todos, list):
            done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
            head.append(f"  {done}/{len(todos)} done", style="dim")
        checklist = _todo_lines(item)
        if not expanded or checklist is None or not checklist.plain:
            return head
        return Group(head, checklist)
    if not expanded:
        preview = _preview(item)
        return head if preview is None else Group(head, preview)
    parts: list[RenderableType] = [head]
    if item.tool == "edit":
        rows = _diff_lines(item)
        failed = item.state in ("error", "aborted", "unknown")
        diff = Text()
        if failed and rows:
            diff.append("     not applied:\n", style="dim italic")
        for style, line in rows[:60]:
            diff.append(line + "\n", style="dim" if failed else style)
        if len(rows) > 60:
            diff.append(f"     … {len(rows) - 60} more lines\n", style="dim")
        diff.rstrip()
        if diff.plain:
            parts.append(diff)
        if item.state in ("error", "aborted", "unknown") and item.result:
            parts.append(Text(clip(item.result), style="red" if item.state == "error" else ""))
        if lsp_total:
            parts.append(_lsp_text(lsp_lines, lsp_total, 20))
        return Group(*parts)
    if item.tool not in ("bash", "read", "search", "todo"):
        import json

        from dsh_tui.session.jsonutil import loads_bounded

        try:
            pretty = json.dumps(loads_bounded(item.arguments), indent=1, ensure_ascii=False) if item.arguments else ""
        except ValueError:
            pretty = item.arguments
        if pretty and not (pretty == "{}" and item.name.startswith("mcp__")):  # an MCP call without arguments
            parts.append(Text(clip(pretty, 8, 2), style="dim"))
    body = _read_lines(item) if item.tool == "read" and item.state == "ok" else None
    if body is not None:
        parts.append(Text(clip(body), style="dim"))
    elif item.result:
        style = "red" if item.state == "error" else ""
        parts.append(Text(clip(item.result), style=style))
    return Group(*parts)


PREVIEW_DIFF_LINES = 8
PREVIEW_OUTPUT_LINES = 3


def _more(n: int) -> Text:
    return Text(f"     … +{n} line{'s' if n != 1 else ''} (Enter on the card expands it)", style="dim")


def _preview(item: ToolItem) -> RenderableType | None:
    """What a collapsed card shows under its title: the first lines of an edit's diff or of a finished
    call's output, with "+N lines" (None: nothing worth showing, e.g. a read or a search's counts)."""
    if item.tool == "edit" and item.state == "ok":
        rows = _diff_lines(item)
        lsp_lines, lsp_total = lsp_diagnostics(item)
        errors = [_lsp_text(lsp_lines, lsp_total, 3)] if lsp_total else []
        if not rows:
            return Group(*errors) if errors else None
        text = Text()
        for style, line in rows[:PREVIEW_DIFF_LINES]:
            text.append(line + "\n", style=style)
        text.rstrip()
        if len(rows) > PREVIEW_DIFF_LINES:
            return Group(text, _more(len(rows) - PREVIEW_DIFF_LINES), *errors)
        return Group(text, *errors) if errors else text
    if item.tool in ("read", "search", "todo", "edit") or item.state not in ("ok", "error"):
        return None
    result = item.result
    if item.tool == "bash":
        lines = [line for line in result.splitlines() if not (line.startswith("[exit code: ") and line.endswith("]"))]
        if item.state == "ok" and result.startswith("started background job "):
            return None
    else:
        lines = result.splitlines()
        if item.state == "error":
            lines = lines[1:]  # the first line is on the card's title line
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return None
    style = "red" if item.state == "error" else "dim"
    shown = [line.rstrip() if len(line) <= 160 else line[:159] + "…" for line in lines[:PREVIEW_OUTPUT_LINES]]
    text = Text("\n".join("     " + line if line else "" for line in shown), style=style)
    return Group(text, _more(len(lines) - PREVIEW_OUTPUT_LINES)) if len(lines) > PREVIEW_OUTPUT_LINES else text


def _read_lines(item: ToolItem) -> str | None:
    """A read card's body from its presentation meta: numbered lines, no path wrapper."""
    meta = item.meta if isinstance(item.meta, dict) else {}
    lines = meta.get("lines")
    if not isinstance(lines, list):
        return None
    out = [f"{line.get('number', ''):>4}  {line.get('text', '')}" for line in lines if isinstance(line, dict)]
    total = meta.get("totalLines")
    if isinstance(total, int) and total > len(out):
        out.append(f"      … {total} lines in the file")
    return "\n".join(out)


def describe_call(tool: str, arguments: str) -> RenderableType:
    """The approval panel's view of a call: a write's new file with numbered lines, an edit's diff (as
    the card shows them), the command for bash, pretty JSON otherwise."""
    import json

    try:
        args: Any = json.loads(arguments) if arguments else {}
    except ValueError:
        args = None
    if tool in ("write", "edit") and isinstance(args, dict):
        rows: list[tuple[str, str]] = []
        if tool == "write" and isinstance(args.get("content"), str):
            content = args["content"]
            lines = content.split("\n")[:-1] if content.endswith("\n") else content.split("\n")
            rows = [("green", f"{n:>4} + {line}") for n, line in enumerate(lines, 1)]
        elif isinstance(args.get("old_string"), str) and isinstance(args.get("new_string"), str):
            rows = [("red", f"     - {line}") for line in args["old_string"].split("\n")]
            rows += [("green", f"     + {line}") for line in args["new_string"].split("\n")]
        if rows:
            out = Text()
            path = args.get("file_path") or args.get("path")
            if path:
                flag = " (all occurrences)" if args.get("replace_all") else ""
                out.append(f"{path}{flag}\n", style="bold")
            for style, line in rows[:200]:
                out.append(line + "\n", style=style)
            if len(rows) > 200:
                out.append(f"     … {len(rows) - 200} more lines\n", style="dim")
            out.rstrip()
            return out
    return Text(describe_args(arguments))


def rejection_reason(item: ToolItem) -> str:
    """The reason the user gave when rejecting this call ("" if none): it is in the tool's result."""
    if item.approval != "rejected" or not item.result:
        return ""
    _, found, reason = item.result.partition("The user's reason: ")
    return " ".join(reason.split()) if found else ""


def describe_args(arguments: str) -> str:
    """Approval panel text for a call's arguments: the command for bash, pretty JSON otherwise."""
    import json

    from dsh_tui.session.jsonutil import loads_bounded

    try:
        value: Any = loads_bounded(arguments) if arguments else {}
    except ValueError:
        return arguments
    if isinstance(value, dict) and "command" in value:
        return f"$ {value['command']}"
    return json.dumps(value, indent=1, ensure_ascii=False)
