"""Export a session as Markdown, HTML or its raw JSONL log.

Markdown and HTML are rendered from the same transcript fold the chat screen uses
(``dsh_tui.session.transcript``), so an export shows exactly what the app shows: user messages,
assistant text, tool calls with their results, turn footers, retries, compaction and
resume/fork dividers. Reasoning is left out unless asked for. JSONL is the stored log verbatim
(the decoded text of complete frames, packed rows and key order kept), like dsh's "export log".
"""

from __future__ import annotations

import datetime as _dt
import html
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.session.terminal import for_terminal
from dsh_tui.session.transcript import fold_transcript

FORMATS = ("md", "html", "jsonl")
_RESULT_LIMIT = 4000  # characters of one tool result kept in md/html


class ExportError(DshError):
    pass


@dataclass
class Located:
    """A session found in the roots: its store, id and log path."""

    store: Any
    session_id: str
    path: Path
    root: Path


def locate(session_id: str, roots: Iterable[str | os.PathLike] | None = None) -> Located:
    """Find ``session_id`` (or a unique id prefix) in the roots via the catalog's disk scan."""
    from dsh_tui.store.ids import find_row, store_for

    row = find_row(session_id, roots)
    if row.id is None:  # (find_row refuses such a row already)
        raise DshError(f"session {row.path} is unreadable: {row.reason}")
    return Located(store_for(row), row.id, Path(row.path), Path(row.root))


def _when(ms: int | None) -> str:
    if not ms:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _title(events: list[dict]) -> str | None:
    title = None
    for e in events:
        if e.get("type") == "session/title":
            t = (e.get("data") or {}).get("title")
            if isinstance(t, str):
                title = t
    return title


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _clip(text: str) -> str:
    if len(text) <= _RESULT_LIMIT:
        return text
    return text[:_RESULT_LIMIT] + f"\n… ({len(text) - _RESULT_LIMIT:,} more characters)"


def _footer_text(item) -> str:
    parts = []
    if item.reason_text:
        parts.append(item.reason_text)
    if item.duration_ms is not None:
        parts.append(f"{item.duration_ms / 1000:.1f} s")
    if item.ttft_ms is not None:
        parts.append(f"first token {item.ttft_ms / 1000:.1f} s")
    if item.input_tokens or item.output_tokens:
        parts.append(f"↑{item.input_tokens:,} ↓{item.output_tokens:,} tokens")
    return " · ".join(parts) or "completed"


def _facts(header: dict) -> list[tuple[str, str, bool]]:
    """The session facts both exports list first: (label, value, shown as code)."""
    facts = [("Session", str(header.get("id")), True)]
    if header.get("cwd"):
        facts.append(("Workspace", header["cwd"], True))
    facts.append(("Created", _when(header.get("createdAt")), False))
    if header.get("parentSession"):
        facts.append(("Parent", header["parentSession"], True))
    return facts


def _items(header: dict, events: list[dict]):
    return fold_transcript(header, events).items


def to_markdown(header: dict, events: list[dict], *, reasoning: bool = False) -> str:
    title = _title(events) or header.get("id", "session")
    out = [f"# {title}", ""]
    out += [f"- {label}: `{value}`" if code else f"- {label}: {value}" for label, value, code in _facts(header)]
    out.append("")
    last_role = None
    for item in _items(header, events):
        k = item.kind
        if k == "user":
            out += ["## You", "", item.text, ""]
            last_role = "user"
        elif k == "context":
            out += [f"> Context · {item.producer}", ""]
        elif k == "thinking":
            if reasoning:
                out += ["<details><summary>Thinking</summary>", "", item.text, "", "</details>", ""]
        elif k == "assistant":
            if last_role != "assistant":
                out += ["## Assistant", ""]
                last_role = "assistant"
            text = item.text
            if item.state == "interrupted":
                text += "\n\n*(interrupted)*"
            out += [text, ""]
        elif k == "tool":
            out += [f"**Tool `{item.name}`** ({item.state})", "", _fence(item.arguments or "", "json"), ""]
            if item.result:
                out += ["Result:", "", _fence(_clip(item.result)), ""]
        elif k == "footer":
            out += [f"*Turn {item.turn}: {_footer_text(item)}*", "", "---", ""]
            last_role = None
        elif k in ("retry", "compaction"):
            out += [f"*{item.describe()}*", ""]
            if k == "compaction" and item.summary:
                out += ["<details><summary>Summary</summary>", "", item.summary, "", "</details>", ""]
        elif k == "divider":
            out += [f"--- *{item.text}* ---", ""]
            last_role = None
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#222}
.user{background:#eef4ff;border-left:4px solid #3b6fd8;padding:.5rem 1rem;margin:1rem 0}
.assistant{padding:.25rem 1rem;margin:1rem 0}
.tool{border:1px solid #ccc;border-radius:6px;padding:.25rem 1rem;margin:.5rem 0}
.tool.error,.tool.aborted,.tool.unknown{border-color:#c33}
.footer{color:#666;font-size:.9em;border-bottom:1px solid #ddd;padding-bottom:.5rem}
.muted{color:#666;font-style:italic}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
details{margin:.5rem 0}
"""


def to_html(header: dict, events: list[dict], *, reasoning: bool = False) -> str:
    e = html.escape
    title = _title(events) or header.get("id", "session")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>", "<ul>"]
    out += [f"<li>{label}: <code>{e(value)}</code></li>" if code else f"<li>{label}: {e(value)}</li>"
            for label, value, code in _facts(header)]
    out.append("</ul>")

    def pre(text: str) -> str:
        return f"<pre>{e(text)}</pre>"

    for item in _items(header, events):
        k = item.kind
        if k == "user":
            out.append(f'<div class="user"><strong>You</strong>{pre(item.text)}</div>')
        elif k == "context":
            out.append(f'<details class="muted"><summary>Context · {e(item.producer)}</summary>'
                       f"{pre(item.text)}</details>")
        elif k == "thinking":
            if reasoning:
                out.append(f"<details><summary>Thinking</summary>{pre(item.text)}</details>")
        elif k == "assistant":
            note = ' <span class="muted">(interrupted)</span>' if item.state == "interrupted" else ""
            out.append(f'<div class="assistant">{pre(item.text)}{note}</div>')
        elif k == "tool":
            res = f"<div>Result:</div>{pre(_clip(item.result))}" if item.result else ""
            out.append(f'<div class="tool {e(item.state)}"><strong>Tool <code>{e(item.name)}</code></strong> '
                       f"({e(item.state)}){pre(item.arguments or '')}{res}</div>")
        elif k == "footer":
            out.append(f'<div class="footer">Turn {item.turn}: {e(_footer_text(item))}</div>')
        elif k in ("retry", "compaction"):
            out.append(f'<div class="muted">{e(item.describe())}</div>')
            if k == "compaction" and item.summary:
                out.append(f"<details><summary>Summary</summary>{pre(item.summary)}</details>")
        elif k == "divider":
            out.append(f'<hr><div class="muted">{e(item.text)}</div>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def export_session(session_id: str, fmt: str, *, roots: Iterable[str | os.PathLike] | None = None,
                   reasoning: bool = False) -> str:
    """The export text of one session in ``fmt`` (md, html or jsonl)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (expected md, html or jsonl)")
    loc = locate(session_id, roots)
    if fmt == "jsonl":
        raw = loc.store.read_raw(loc.session_id)
        if raw is None:  # a SQLite session has no log file: its events in dsh's JSONL form
            from dsh_tui.store.jsonl import encode_materialization

            res = loc.store.inspect(loc.session_id)
            events = res.events[: len(res.events) - len(res.closers)] if res.closers else res.events
            return encode_materialization(res.header, events, "none").decode("utf-8", "surrogatepass")
        return raw.content
    res = loc.store.inspect(loc.session_id)
    render = to_markdown if fmt == "md" else to_html
    # A document for people: well-formed UTF-8 (a lone surrogate the log keeps as dsh does is U+FFFD) and
    # no terminal control sequence from the model (``cat``-ing the export must not write the clipboard).
    return for_terminal(render(res.header, res.events, reasoning=reasoning))


def default_filename(session_id: str, fmt: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
    return f"{safe}.{fmt}"
