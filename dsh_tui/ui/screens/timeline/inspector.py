"""What the inspector shows for a span, and the copies of a model request (JSON body, ``curl``).

``request_context`` rebuilds what the model received for a request node: the header in force and
``derive_messages`` over the log before the attempt's first chunk (or before its failure when
nothing streamed). ``request_changes`` compares it with the previous request: the messages added
since, any surface rewrite (earlier messages replaced or removed, as a compaction does), and the
system prompt / tool / model changes. The copies use the provider's own request serialiser and
header builder, with the API key replaced by the redaction marker.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from dsh_tui.llm.openai import serialize_request
from dsh_tui.llm.redact import REDACTED
from dsh_tui.session.spans import Node, SpanFold
from dsh_tui.session.timeline import request_header_at

# a session whose provider is not configured here: never another vendor's URL
PLACEHOLDER_ENDPOINT = "https://PROVIDER-BASE-URL/chat/completions"


def provider_endpoint(name: str | None) -> str:
    """The ``/chat/completions`` URL of the provider ``name`` as configured in the settings (the browser has no
    live provider); the placeholder when it is unnamed, unknown or the settings cannot be read."""
    if not name:
        return PLACEHOLDER_ENDPOINT
    try:
        from dsh_tui.config.settings import load_settings

        base = (load_settings().provider(name).base_url or "").rstrip("/")
    except Exception:  # noqa: BLE001 - a broken settings file or an unknown provider: the placeholder
        return PLACEHOLDER_ENDPOINT
    if base.endswith("/chat/completions"):
        base = base[: -len("/chat/completions")]
    return f"{base}/chat/completions"


def request_of(n: Node | None, fold: SpanFold) -> Node | None:
    """The model request a node belongs to: itself, its request ancestor, or, for a tool (and what it
    holds), the request of the same step that asked for it."""
    p = n
    while p is not None:
        if p.kind == "request":
            return p
        if p.kind == "tool":
            parent = p.parent
            if parent is None:
                return None
            before = [c for c in parent.children if c.kind == "request" and c.seq <= p.seq]
            return before[-1] if before else None
        p = p.parent
    return None


def dispatch_point(r: Node, events_len: int) -> int:
    """The seq before which the request was sent (its first chunk, else where it failed)."""
    if r.first_chunk is not None:
        return r.first_chunk
    if r.end_seq is not None:
        return r.end_seq
    return events_len


def request_context(header: dict, events: Sequence[dict], r: Node) -> dict[str, Any]:
    """{"dispatch", "header", "messages"} of request ``r`` (messages: a list, or an error string)."""
    d = dispatch_point(r, len(events))
    req_header = request_header_at(events, d)  # type: ignore[arg-type]
    messages: Any
    try:
        from dsh_tui.session.log import Session

        session = Session(header, list(events[:d]))
        messages = session.derive_messages().to_list()
        canonical = session.request_header()
        if canonical is not None:
            req_header = canonical
    except Exception as err:  # noqa: BLE001 - an inspector shows what it can
        messages = f"(cannot derive the messages: {err})"
    return {"dispatch": d, "header": req_header or {}, "messages": messages}


def request_changes(prev: dict[str, Any] | None, cur: dict[str, Any]) -> dict[str, Any]:
    """What changed from ``prev`` to ``cur`` (request contexts): new messages, rewrite, header changes."""
    msgs = cur["messages"] if isinstance(cur["messages"], list) else []
    if prev is None:
        return {"first": True, "new": msgs, "kept": 0, "removed": [], "header": []}
    old = prev["messages"] if isinstance(prev["messages"], list) else []
    k = 0
    while k < len(old) and k < len(msgs) and old[k] == msgs[k]:
        k += 1
    changes: list[str] = []
    ph, ch = prev.get("header") or {}, cur.get("header") or {}
    if ph.get("system") != ch.get("system"):
        changes.append(f"system prompt changed ({len(str(ph.get('system') or ''))} → "
                       f"{len(str(ch.get('system') or ''))} chars)")
    pt, ct = _tool_map(ph.get("tools")), _tool_map(ch.get("tools"))
    added = sorted(set(ct) - set(pt))
    gone = sorted(set(pt) - set(ct))
    changed = sorted(name for name in set(pt) & set(ct) if pt[name] != ct[name])
    if added:
        changes.append("tools added: " + ", ".join(added))
    if gone:
        changes.append("tools removed: " + ", ".join(gone))
    if changed:
        changes.append("tool schemas changed: " + ", ".join(changed))
    if ph.get("config") != ch.get("config"):
        changes.append(f"model settings: {json.dumps(ph.get('config'))} → {json.dumps(ch.get('config'))}")
    return {"first": False, "new": msgs[k:], "kept": k, "removed": old[k:], "header": changes}


def _tool_map(tools: Any) -> dict[str, Any]:
    if not isinstance(tools, list):
        return {} if tools is None else {"(tools)": tools}
    return {str(t.get("name")): t for t in tools if isinstance(t, dict)}


def wire_body(ctx: dict[str, Any]) -> dict[str, Any]:
    """The ``/chat/completions`` body the provider sends for this request context."""
    header = ctx.get("header") or {}
    tools = header.get("tools")
    request = {"config": header.get("config") or {}, "system": header.get("system"),
               "messages": ctx["messages"] if isinstance(ctx["messages"], list) else [],
               "tools": tools if isinstance(tools, list) else []}
    return serialize_request(request)


def curl_command(body: dict[str, Any], endpoint: str = PLACEHOLDER_ENDPOINT,
                 headers: dict[str, str] | None = None) -> str:
    """A ``curl`` that replays the request; any credential header's value is the redaction marker."""
    hs = dict(headers or {"content-type": "application/json", "accept": "text/event-stream"})
    hs["authorization"] = f"Bearer {REDACTED}"
    lines = [f"curl -sSN {shlex.quote(endpoint)}"]
    for k, v in hs.items():
        secret = k.lower() in ("authorization", "x-api-key", "api-key") or "key" in k.lower() or "token" in k.lower()
        value = f"Bearer {REDACTED}" if k.lower() == "authorization" else (REDACTED if secret else v)
        lines.append(f"  -H {shlex.quote(f'{k}: {value}')}")
    lines.append("  --data-binary @- <<'DSH_REQUEST'")
    text = "\n".join(line + " \\" for line in lines[:-1]) + "\n" + lines[-1] + "\n"
    return text + json.dumps(body, ensure_ascii=False, indent=2) + "\nDSH_REQUEST\n"
