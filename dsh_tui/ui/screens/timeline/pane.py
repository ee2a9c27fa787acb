"""The timeline's inspector pane: what the selected row is (its head line and collapsible sections: a
message and its chunks, a tool call's arguments, approval and result, tokens, the raw events), and for a model
request what it sent and what changed since the previous request (derived in a worker: ``inspector.py``), and
the request's copies (**c** JSON, **C** ``curl``, the key redacted)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from dsh_tui.session.jsonutil import loads_bounded
from dsh_tui.session.spans import Node, message_label
from dsh_tui.ui.screens.timeline.inspector import (
    curl_command,
    provider_endpoint,
    request_changes,
    request_context,
    request_of,
    wire_body,
)
from dsh_tui.ui.screens.timeline.tree import fmt_ms

if TYPE_CHECKING:
    from dsh_tui.ui.screens.timeline.screen import TimelineScreen

BODY_LIMIT = 20_000  # characters of a section body shown (the copy keys give the whole request)


def _json(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return text if len(text) <= BODY_LIMIT else text[:BODY_LIMIT] + f"\n… ({len(text) - BODY_LIMIT:,} more characters)"


def _gist(message: Any) -> str:
    """``role (source): a one-line gist`` of a model message."""
    if not isinstance(message, dict):
        return str(message)[:100]
    source = (message.get("source") or {}).get("kind")
    role = str(message.get("role", "?")) + (f" ({source})" if source and source != message.get("role") else "")
    return f"{role}: {message_label(message.get('content'), 100)}"


def _result_text(data: dict) -> str:
    """A tool result as the model read it: its text blocks (else the JSON), and the error code if any."""
    blocks = (data.get("message") or {}).get("content") or []
    texts: list[str] = []
    for b in blocks:
        inner = b.get("content") if isinstance(b, dict) and b.get("type") == "tool-result" else [b]
        for c in inner or []:
            if not (isinstance(c, dict) and c.get("type") == "text"):
                return _json(blocks)
            texts.append(str(c.get("text", "")))
    err = data.get("error")
    head = f"[{err.get('code')}]\n" if isinstance(err, dict) else ""
    return _json(head + "\n".join(texts)) if texts or head else "(no output)"


def _section(title: str, body: str | Text, *, open_: bool = False, sid: str = "") -> Collapsible:
    content = body if isinstance(body, Text) else Text(body)
    return Collapsible(Static(content, classes="section-body"), title=title, collapsed=not open_,
                       classes=f"section {sid}".strip())


class InspectorPane:
    """The right pane of one timeline screen (see the module docstring)."""

    def __init__(self, screen: TimelineScreen) -> None:
        self.screen = screen
        self.request_views: dict[int, dict] = {}  # request index -> {"ctx", "prev", "changes", "prev_seq"}

    def show(self, item: Node | int) -> None:
        """The inspector for ``item`` (a span, or an event index of the ledger)."""
        t = self.screen
        head = t.query_one("#inspect-head", Static)
        body = t.query_one("#inspect-body", Vertical)
        body.remove_children()
        if isinstance(item, int):
            e = t.events[item]
            head.update(Text(f"#{item} {e.get('type')}", "bold"))
            body.mount(_section(f"Event #{item}", _json(e), open_=True))
            return
        head.update(self._head_text(item))
        sections: list[Collapsible] = []
        n = item
        if n.kind in ("request", "waiting", "decoding", "usage"):
            r = request_of(n, t.fold)
            if r is not None:
                sections.append(_section("What changed since the previous request", "Deriving the request…",
                                         open_=True, sid="changes"))
                self._load_request(r)
        elif n.kind == "message":
            msg = t.events[n.seq] if n.seq < len(t.events) and t.events[n.seq].get("type") == \
                "assistant/message" else None
            if msg is not None:
                sections.append(_section("Message", _json((msg.get("data") or {}).get("message")), open_=True))
            if n.first_chunk is not None:
                end = n.end_seq if n.end_seq is not None else len(t.events) - 1
                from dsh_tui.session.timeline import summarize

                lines = [f"#{s} {summarize(t.events[s], 100)}" for s in range(n.first_chunk, end + 1)
                         if t.events[s].get("type") == "assistant/chunk"]
                sections.append(_section(f"Chunks ({len(lines)}) — → on the row lists them in the tree",
                                         _json("\n".join(lines[:2000]))))
        elif n.kind in ("tool", "approval", "execution", "result", "subagent"):
            tool = n if n.kind == "tool" else n.parent
            if tool is not None and tool.kind == "tool":
                call = t.events[tool.seq].get("data") or {}
                args: Any = call.get("arguments", "")
                try:
                    args = loads_bounded(args)
                except (TypeError, ValueError):
                    pass
                sections.append(_section("Arguments", _json(args), open_=n.kind in ("tool", "execution")))
                approval = next((c for c in tool.children if c.kind == "approval"), None)
                if approval is not None:
                    sections.append(_section(f"Approval · {approval.state}",
                                             f"reason: {approval.detail or '(none)'}\nwaited "
                                             f"{fmt_ms(approval.duration_ms)}", open_=n.kind == "approval"))
                if tool.end_seq is not None:
                    res = (t.events[tool.end_seq].get("data") or {})
                    sections.append(_section(f"Result · {tool.state}", _result_text(res),
                                             open_=n.kind in ("tool", "result")))
        elif n.kind in ("turn", "step") and n.usage is not None:
            u = n.usage
            sections.append(_section("Tokens", f"in {u.input:,} · cached {u.cache_read:,} · out {u.output:,} · "
                                               f"reasoning {u.reasoning:,}", open_=True))
        if n.seq < len(t.events):
            sections.append(_section(f"Event #{n.seq}", _json(t.events[n.seq])))
        if n.end_seq is not None and n.end_seq != n.seq and n.end_seq < len(t.events):
            sections.append(_section(f"Event #{n.end_seq}", _json(t.events[n.end_seq])))
        body.mount_all(sections)

    def refresh_head(self, n: Node) -> None:
        """The head line again (a running span's duration grows)."""
        self.screen.query_one("#inspect-head", Static).update(self._head_text(n))

    def _head_text(self, n: Node) -> Text:
        fold = self.screen.fold
        t = Text()
        t.append(f"{n.kind} ", "bold")
        t.append(f"{n.label}\n", "bold")
        where = f"turn {n.turn}" + (f" · step {n.step}" if n.step else "")
        seqs = f"#{n.seq}" + (f"–#{n.end_seq}" if n.end_seq is not None and n.end_seq != n.seq else "")
        dur = "" if n.point else f" · {fmt_ms(n.duration_ms)}"
        t.append(f"{where} · {seqs}{dur} · {n.state}\n", "dim")
        r = request_of(n, fold) if n.kind in ("request", "waiting", "decoding", "usage") else None
        if r is not None:
            t.append(f"waiting {fmt_ms(r.waiting_ms)} · decoding {fmt_ms(r.decoding_ms)}"
                     f" · {r.chunks} chunks", "dim")
            if r.usage is not None:
                u = r.usage
                t.append(f" · in {u.input:,} cached {u.cache_read:,} out {u.output:,}", "dim")
            t.append("\nc copy as JSON · C copy as curl", "dim italic")
        elif n.kind == "tool":
            ap = next((c for c in n.children if c.kind == "approval"), None)
            ex = next((c for c in n.children if c.kind == "execution"), None)
            parts = []
            if ap is not None:
                parts.append(f"approval wait {fmt_ms(ap.duration_ms)} ({ap.state})")
            if ex is not None:
                parts.append(f"execution {fmt_ms(ex.duration_ms)}")
            parts.append(f"slot {n.slot}")
            t.append(" · ".join(parts), "dim")
        return t

    def _load_request(self, r: Node) -> None:
        t = self.screen

        def derive() -> None:
            view = self.request_view(r)
            t.app.call_from_thread(self._show_request, r, view)

        t.run_worker(derive, thread=True, exclusive=True, group="timeline-request", description="derive a request")

    def request_view(self, r: Node) -> dict:
        """What request ``r`` sent and what changed since the previous one (cached once it ended)."""
        t = self.screen
        cached = self.request_views.get(r.index)
        if cached is not None and r.end is not None:
            return cached
        ctx = request_context(t.header, t.events, r)
        prev_node = t.fold.requests[r.index - 1] if 0 < r.index <= len(t.fold.requests) else None
        prev = request_context(t.header, t.events, prev_node) if prev_node is not None else None
        view = {"ctx": ctx, "prev": prev, "changes": request_changes(prev, ctx),
                "prev_seq": prev_node.seq if prev_node is not None else None}
        self.request_views[r.index] = view
        return view

    def _show_request(self, r: Node, view: dict) -> None:
        t = self.screen
        item = t.spans.current
        if not isinstance(item, Node) or request_of(item, t.fold) is not r:
            return
        body = t.query_one("#inspect-body", Vertical)
        ch, ctx = view["changes"], view["ctx"]
        header = ctx["header"] or {}
        msgs = ctx["messages"]
        diff = Text()
        if ch["first"]:
            diff.append(f"The first request of the session: {len(ch['new'])} messages.\n", "bold")
        else:
            diff.append(f"Since the previous request (#{view['prev_seq']}): {len(ch['new'])} new message(s), "
                        f"{ch['kept']} unchanged.\n", "bold")
            if ch["removed"]:
                diff.append(f"Surface rewrite: {len(ch['removed'])} earlier message(s) replaced or removed "
                            f"(from position {ch['kept']}).\n", "bold yellow")
                for m in ch["removed"]:
                    diff.append(f"- {_gist(m)}\n", "bold red")
                    diff.append("  " + _json(m).replace("\n", "\n  ") + "\n", "red")
            for line in ch["header"]:
                diff.append(f"* {line}\n", "yellow")
        for m in ch["new"]:
            diff.append(f"+ {_gist(m)}\n", "bold green")
            diff.append("  " + _json(m).replace("\n", "\n  ") + "\n", "green")
        tools = header.get("tools")
        count = len(tools) if isinstance(tools, list) else "?"
        new = [
            _section("What changed since the previous request", diff, open_=True, sid="changes"),
            _section(f"Messages ({len(msgs) if isinstance(msgs, list) else '?'})", _json(msgs)),
            _section(f"System prompt ({len(str(header.get('system') or ''))} chars)", str(header.get("system") or "")),
            _section(f"Tools ({count})", _json(tools)),
            _section("Model", _json(header.get("config"))),
            _section(f"Sent before event #{ctx['dispatch']}", _json(t.events[r.seq]) if r.seq < len(t.events)
                     else ""),
        ]
        body.remove_children()
        body.mount_all(new)

    # -- copy ----------------------------------------------------------------------------------
    def copy(self, form: str) -> None:
        """**c** / **C**: the selected request as JSON, or as ``curl`` (the key redacted)."""
        t = self.screen
        item = t.spans.current
        r = request_of(item, t.fold) if isinstance(item, Node) else None
        if r is None:
            t.notify("Select a model request (or a row inside one) to copy it.", timeout=3)
            return
        self._copy(r, form)

    def _copy(self, r: Node, form: str) -> None:
        self.screen.run_worker(lambda: self._build_copy(r, form), thread=True, exclusive=True,
                               group="timeline-copy", description="build a request copy")

    def _build_copy(self, r: Node, form: str) -> None:
        view = self.request_view(r)
        body = self._wire_body(view["ctx"])
        if form == "json":
            text, name = json.dumps(body, ensure_ascii=False, indent=2) + "\n", "request JSON"
        else:
            endpoint, headers = self._endpoint(view["ctx"])
            text, name = curl_command(body, endpoint, headers), "request as curl"
        self.screen.app.call_from_thread(self._copied, text, name)

    def _copied(self, text: str, name: str) -> None:
        from dsh_tui.ui.clipboard import copy_text

        t = self.screen
        t.last_copy = copy_text(t.app, text, name=name)
        t.notify(t.last_copy, timeout=6)

    def _provider(self) -> Any:
        harness = self.screen._harness
        return harness.provider() if harness is not None else None

    def _wire_body(self, ctx: dict) -> dict:
        provider = self._provider()
        build = getattr(provider, "build_body", None)
        if callable(build):
            header = ctx.get("header") or {}
            try:
                return build({"config": header.get("config") or {}, "system": header.get("system"),
                              "messages": ctx["messages"] if isinstance(ctx["messages"], list) else [],
                              "tools": header.get("tools") if isinstance(header.get("tools"), list) else []})
            except Exception:  # noqa: BLE001 - fall back to the default serialiser
                pass
        return wire_body(ctx)

    def _endpoint(self, ctx: dict) -> tuple[str, dict[str, str] | None]:
        """The request's provider: the live one when it is the same, else the settings' (browser), else a
        placeholder."""
        name = ((ctx.get("header") or {}).get("config") or {}).get("provider")
        provider = self._provider()
        if provider is None or (name and getattr(provider, "name", None) != name):
            return provider_endpoint(name if isinstance(name, str) else None), None
        endpoint = getattr(provider, "endpoint", None)
        headers = None
        build = getattr(provider, "_headers", None)  # the provider's own header builder, without the key
        if callable(build):
            try:
                headers = build(None, {})
            except Exception:  # noqa: BLE001
                headers = None
        return (endpoint if isinstance(endpoint, str) else provider_endpoint(name)), headers

