"""The ``repeat-tool-reminder`` built-in plugin: dsh's loop guard (``@deepseek-ai/dsh-repeat-tool-reminder``).

An advisory per-agent detector of consecutive identical tool calls (same name, same arguments after a deep
key sort). When a run of them reaches a threshold (default 3, 5, 8) the call's result carries a reminder for
the next step (``additionalContexts``: the message enters the inbox's next step, as dsh logs it): at the first
threshold dsh's gentle text, at the later ones the detailed text naming the tool, the count and the canonical
arguments (at most ``argumentsPreviewChars``, default 500, quoted). It never blocks or rewrites a call; a denied
or failing call counts too; a user message entering a step resets the run.

Config (``[plugins.repeat-tool-reminder]``): ``thresholds`` (``[3, 5, 8]``; integers >= 2, no duplicates),
``include`` / ``exclude`` (``*``-wildcard tool-name patterns: only included tools are tracked; excluded ones
neither count nor reset), ``argumentsPreviewChars`` (500). The texts are dsh's, byte for byte.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.session.jsonutil import dumps

name = "repeat-tool-reminder"
PLUGIN_SOURCE = {"kind": "plugin", "plugin": "repeat-tool-reminder"}
DEFAULTS: dict[str, Any] = {"thresholds": [3, 5, 8], "include": [], "exclude": [], "argumentsPreviewChars": 500}

GENTLE_REMINDER = (
    "You are repeating the exact same tool call with identical arguments. "
    "Carefully analyze the previous result before calling again: if the task is "
    "not complete, try a different approach or different arguments instead of "
    "repeating the call."
)


def detailed_reminder(tool_name: str, count: int, canonical_arguments: str) -> str:
    return ("Repeated tool call detected:\n"
            f"- tool: {tool_name}\n"
            f"- consecutive_calls: {count}\n"
            f"- arguments: {canonical_arguments}\n"
            "The repeated calls are not making progress. Do not call this tool with "
            "these exact arguments again. Inspect the latest result and choose a "
            "different action, different arguments, or finish the task if enough "
            "evidence has been gathered.")


def _sorted(value: Any) -> Any:
    """dsh's ``sortJsonValue``: object keys in JavaScript's ``sort()`` order (UTF-16 code units)."""
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))}
    return value


def canonicalize(arguments: Any) -> str:
    """``JSON.stringify(sortJsonValue(arguments))`` (malformed arguments arrive as their raw string)."""
    if isinstance(arguments, (dict, list, str, int, float, bool)) or arguments is None:
        return dumps(_sorted(arguments))
    return dumps(str(arguments))


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_head(text: str, units: int) -> str:
    return text.encode("utf-16-le", "surrogatepass")[: units * 2].decode("utf-16-le", "surrogatepass")


def preview_arguments(canonical: str, cap: int) -> str:
    length = _utf16_len(canonical)
    if length <= cap:
        return canonical
    return f"{_utf16_head(canonical, cap)}… (+{length - cap} more chars)"


def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$", re.S)


def _config(raw: Any) -> dict[str, Any]:
    cfg = dict(DEFAULTS)
    raw = dict(raw or {}) if isinstance(raw, Mapping) else {}
    unknown = set(raw) - set(DEFAULTS)
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected {', '.join(DEFAULTS)})")
    cfg.update(raw)
    thresholds = cfg["thresholds"]
    if not isinstance(thresholds, list) or not thresholds:
        raise DshError("repeat-tool-reminder: `thresholds` must not be empty")
    for value in thresholds:
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise DshError(f"repeat-tool-reminder: invalid threshold {value} — every threshold must be an integer >= 2")
    if len(set(thresholds)) != len(thresholds):
        raise DshError("repeat-tool-reminder: `thresholds` must not contain duplicates")
    cfg["thresholds"] = sorted(thresholds)
    for key in ("include", "exclude"):
        if not isinstance(cfg[key], list) or not all(isinstance(p, str) for p in cfg[key]):
            raise DshError(f"repeat-tool-reminder: `{key}` must be a list of tool-name patterns")
    cap = cfg["argumentsPreviewChars"]
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise DshError(f"repeat-tool-reminder: invalid argumentsPreviewChars {cap} — must be an integer >= 1")
    return cfg


class RepeatGuard:
    """One agent's consecutive-repeat chain: the last tracked call's key and its run length."""

    def __init__(self, config: Any = None) -> None:
        cfg = _config(config)
        self.thresholds: list[int] = cfg["thresholds"]
        self.include = [_wildcard(p) for p in cfg["include"]]
        self.exclude = [_wildcard(p) for p in cfg["exclude"]]
        self.preview_chars: int = cfg["argumentsPreviewChars"]
        self.chain: tuple[str, int] | None = None

    def tracked(self, tool_name: str) -> bool:
        if self.include and not any(p.match(tool_name) for p in self.include):
            return False
        return not any(p.match(tool_name) for p in self.exclude)

    def observe(self, tool_name: str, arguments: Any) -> dict | None:
        """Advance the chain for one call; the reminder message when the run length hits a threshold."""
        if not self.tracked(tool_name):
            return None
        canonical = canonicalize(arguments)
        key = dumps([tool_name, canonical])
        count = self.chain[1] + 1 if self.chain is not None and self.chain[0] == key else 1
        self.chain = (key, count)
        if count not in self.thresholds:
            return None
        text = (GENTLE_REMINDER if count == self.thresholds[0]
                else detailed_reminder(tool_name, count, preview_arguments(canonical, self.preview_chars)))
        return {"content": [{"type": "text", "text": text}],
                "source": {**PLUGIN_SOURCE, "form": "notice", "summary": f"{tool_name} × {count}"},
                "role": "user", "id": str(uuid.uuid4())}


def apply(ctx: Any, config: Any = None) -> None:
    guard = RepeatGuard(config)

    async def post_execute(payload: dict, next: Any) -> Any:  # noqa: A002 - the waterfall's name
        reminder = guard.observe(str(payload.get("name") or ""), payload.get("arguments"))
        downstream = await next()
        if reminder is None:
            return downstream
        downstream = dict(downstream or {"kind": "accept"})
        downstream["additionalContexts"] = [reminder, *(downstream.get("additionalContexts") or [])]
        return downstream

    async def pre_step(payload: dict, next: Any) -> Any:  # noqa: A002
        messages = payload.get("messages") or []
        if any(isinstance(m, dict) and (m.get("source") or {}).get("kind") == "user" for m in messages):
            guard.chain = None  # a user interjection changes the context: repetition across it is no loop
        return await next()

    ctx.on("tools/post-execute", post_execute)
    ctx.on("agent/pre-step", pre_step)
