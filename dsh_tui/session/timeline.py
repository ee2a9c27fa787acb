"""Event-level helpers of the timeline: one-line summaries for the ledger, and where a model request
was dispatched (the seq of its first chunk) with the ``request/header`` it used.

The span tree itself (turns, steps, requests, tools, …) is ``dsh_tui/session/spans.py``.
"""

from __future__ import annotations

from typing import Any

from dsh_tui.session.content import content_text

# -------------------------------------------------------------------------------------------------
# Ledger rows and the request inspector


def summarize(event: dict[str, Any], width: int = 120) -> str:
    """A one-line description of an event for the ledger (no JSON parsing beyond the dict)."""
    etype = event.get("type")
    d = event.get("data")
    d = d if isinstance(d, dict) else {}
    text = ""
    if etype == "assistant/chunk":
        c = d.get("chunk") or {}
        ct = c.get("type")
        if ct in ("text-delta", "reasoning-delta"):
            text = f"{ct} {c.get('text', '')!r}"
        elif ct == "tool-call-delta":
            text = f"tool-call-delta {c.get('name') or ''} {c.get('argumentsDelta', '')!r}"
        elif ct == "usage":
            u = c.get("usage") or {}
            text = f"usage in {u.get('inputTokens', 0)} out {u.get('outputTokens', 0)} cache {u.get('cacheReadTokens', 0)}"
        elif ct == "finish":
            text = f"finish {(c.get('reason') or {}).get('kind')}"
        else:
            text = str(ct)
    elif etype in ("user/message",):
        text = f"{(d.get('source') or {}).get('kind', '?')}: {_blocks(d.get('content'))}"
    elif etype == "assistant/message":
        text = _blocks((d.get("message") or {}).get("content"))
        if d.get("interrupted"):
            text = "(interrupted) " + text
    elif etype == "tool/call":
        text = f"{d.get('name')} {d.get('arguments', '')}"
    elif etype == "tool/result":
        text = _blocks((d.get("message") or {}).get("content"))
        err = d.get("error")
        if isinstance(err, dict):
            text = f"[{err.get('code')}] {text}"
    elif etype in ("turn/start", "step/start", "step/end"):
        text = f"turn {d.get('turn')}" + (f" step {d['step']}" if "step" in d else "")
    elif etype == "turn/end":
        text = f"turn {d.get('turn')} {(d.get('reason') or {}).get('kind')}"
    elif etype == "request/header":
        config = (d.get("header") or {}).get("config") or {}
        text = f"{d.get('reason')} {config.get('provider')}/{config.get('model')}"
    elif etype == "session/title":
        text = str(d.get("title"))
    elif etype == "plan/mode":
        text = "plan mode on" if d.get("active") else "plan mode off"
    elif etype == "goal/change":
        g = d.get("goal")
        goal = g if isinstance(g, dict) else {}
        if d.get("operation") == "clear":
            text = f"clear {(d.get('cleared') or {}).get('id', '')}"
        else:
            text = (f"{d.get('operation')} {goal.get('phase')} {d.get('roundsStarted')}/{goal.get('maxGoalRounds')}: "
                    f"{goal.get('objective', '')}")
            reason = goal.get("blockedReason")
            if isinstance(reason, dict):
                text += f" [{reason.get('code')}: {reason.get('message')}]"
    elif etype == "llm/retry":
        text = f"retry {d.get('retry')} in {d.get('delayMs')} ms {(d.get('failure') or {}).get('code', '')}"
    else:
        try:
            import json

            text = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            text = str(d)
    text = text.replace("\n", "⏎ ")
    return text[:width]


def _blocks(blocks: Any) -> str:
    return content_text(blocks, sep=" ", calls="→ {name}({arguments})", marks=True)


def request_header_at(events: list[dict[str, Any]], before: int) -> dict[str, Any] | None:
    """The latest ``request/header`` envelope before ``before`` (the one the request used)."""
    for k in range(min(before, len(events)) - 1, -1, -1):
        if events[k].get("type") == "request/header":
            return (events[k].get("data") or {}).get("header")
    return None
