"""Session titles as built-in plugins.

``session-title``: the fallback title. Before the first model request after the session's first human
prompt (``agent/request``), if the session has no ``session/title`` at all, the first eligible prompt's
first 5 words (40 bytes) are appended as ``{title, messageSeqs:[seq], source:{kind:"fallback"}}`` - in
dsh's place: after the step's entering messages, before its ``request/header``.

``session-title-llm``: dsh's first-prompt LLM title. When the first eligible prompt of a new, unforked,
untitled session reaches its first main model request (``llm/stream``), a ``session/title-llm-request``
is appended (dsh's place: after ``request/context``, before the first chunk) and the title request is sent
once the main request's first chunk is in: it runs beside the turn and never delays its first byte.
A valid reply is appended as ``{..., source:{kind:"provider", provider:"session-title-first-prompt-llm",
model:{provider, model}}}``; a failure is logged (``session "<id>": automatic title generation failed:
...``), the fallback stays and nothing is retried. A user title (``set_user_title``, the browser's
rename) pins: no automatic title is appended after it.

``session/flush`` (headless ``run``/``resume`` after their turn) waits for a pending title request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, model_validator

from dsh_tui.runtime.assembler import BlockAssembler
from dsh_tui.session.errors import DshError
from dsh_tui.session.rows import events_of
from dsh_tui.session.titles import (
    FALLBACK_MAX_BYTES,
    FALLBACK_MAX_WORDS,
    MAX_TITLE_BYTES,
    clean,
    fallback_title,
    is_eligible,
    message_text,
    normalize,
    user_title_data,
)

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

_USER = frozenset({"user/message"})
_TITLE = frozenset({"session/title"})

log = logging.getLogger("dsh_tui.runtime.titles")

TITLE_PROVIDER = "session-title-first-prompt-llm"
REQUEST_PLUGIN = "dsh-session-title-llm"
USER_TEXT_PREFIX = "Generate the session title from this JSON array of human messages:\n"


def system_prompt(target_words: int = 5, target_cjk: int = 10) -> str:
    return "\n".join([
        "Create a concise title for an AI coding-assistant session from the supplied human messages.",
        "Return only the title on one line, **in plain text of natural language**, with no quotes, prefix, "
        "explanation, Markdown, XML, or terminal control codes. No code is allowed.",
        "Use the language of the messages.",
        f"Aim for about {target_words} words in non-CJK languages or {target_cjk} CJK characters.",
    ])


class TitleError(DshError):
    """A title request that produced no usable title (its message is what the log warning says)."""


def _pinned(session: Any) -> bool:
    data = session.title_data() if callable(getattr(session, "title_data", None)) else None
    return isinstance(data, dict) and (data.get("source") or {}).get("kind") == "user"


def set_user_title(session: Any, text: str) -> dict:
    """Rename a live session (``/title``): append a ``source: user`` title, which pins it. ``ValueError``
    (``session title must contain visible characters``) when ``text`` has nothing visible."""
    return session.append("session/title", user_title_data(text))


def _human_messages(session: Any, start: int = 0) -> list[tuple[int, dict]]:
    """(seq, data) of every eligible human ``user/message`` from ``start`` on."""
    events = session.events
    out = []
    for ev in (events_of(events, _USER) if start == 0 else events[start:]):
        if ev.get("type") == "user/message" and is_eligible(ev.get("data")):
            out.append((ev["seq"], ev["data"]))
    return out


# -------------------------------------------------------------------------------------------------
# session-title: the fallback


class FallbackConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fallbackMaxWords: int = FALLBACK_MAX_WORDS  # noqa: N815 - dsh's config key
    fallbackMaxBytes: int = FALLBACK_MAX_BYTES  # noqa: N815
    maxTitleBytes: int = MAX_TITLE_BYTES  # noqa: N815


class SessionTitle:
    name = "session-title"
    Config = FallbackConfig

    def apply(self, ctx: BuiltinContext, config: FallbackConfig) -> None:
        session = ctx.live_session
        if session.title_data() is not None:
            return  # titled (or a fork child that inherited its parent's title): nothing to do
        off = None
        scanned = [0]  # events already searched for a human prompt (each is looked at once)

        async def ensure_fallback(payload: dict, nxt: Any) -> Any:
            if session.title_data() is None:
                first = next(iter(_human_messages(session, scanned[0])), None)
                scanned[0] = len(session.events)
                if first is not None:
                    seq, message = first
                    title = fallback_title(message_text(message), config.fallbackMaxWords, config.fallbackMaxBytes)
                    session.append("session/title", {"title": title, "messageSeqs": [seq],
                                                     "source": {"kind": "fallback"}})
            if session.title_data() is not None and off is not None:
                off()
            return await nxt()

        off = ctx.on("agent/request", ensure_fallback)


# -------------------------------------------------------------------------------------------------
# session-title-llm: the first prompt's LLM title


class LlmTitleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    targetWords: int = 5  # noqa: N815 - dsh's config keys
    targetCjkCharacters: int = 10  # noqa: N815
    maxInputBytes: int = 4096  # noqa: N815
    maxOutputTokens: int = 64  # noqa: N815
    timeoutMs: int = 60_000  # noqa: N815
    maxTitleBytes: int = MAX_TITLE_BYTES  # noqa: N815
    provider: str | None = None
    model: str | None = None

    @model_validator(mode="after")
    def _route_pair(self) -> LlmTitleConfig:
        if (self.provider is None) != (self.model is None):
            raise ValueError("configure provider and model together")
        return self


def request_body(seq: int, text: str, route: dict, config: LlmTitleConfig, message_id: str) -> dict:
    """The ``session/title-llm-request`` data for the first prompt (``seq``, raw ``text``): dsh's exact
    shape and key order."""
    user = USER_TEXT_PREFIX + json.dumps([{"seq": seq, "text": text}], separators=(",", ":"), ensure_ascii=False)
    message = {"content": [{"type": "text", "text": user}], "source": {"kind": "plugin", "plugin": REQUEST_PLUGIN},
               "role": "user", "id": message_id}
    return {"titleProvider": TITLE_PROVIDER, "messageSeqs": [seq], "route": dict(route),
            "system": system_prompt(config.targetWords, config.targetCjkCharacters), "messages": [message],
            "maxTokens": config.maxOutputTokens}


async def request_title(provider: Any, body: dict, session_id: str, timeout_s: float, max_bytes: int) -> str:
    """Send the title request of ``body`` and return the normalized title (``TitleError`` otherwise)."""
    route = body["route"]
    request = {"config": {"provider": route["provider"], "model": route["model"], "maxTokens": body["maxTokens"]},
               "system": body["system"], "tools": [], "messages": body["messages"], "sessionId": session_id,
               "purpose": "session-title"}
    asm = BlockAssembler()

    async def consume() -> None:
        stream = provider.stream(request)
        try:
            async for chunk in stream:
                asm.feed(chunk)
                if chunk.get("type") == "finish":
                    break
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    try:
        await asyncio.wait_for(consume(), timeout_s)
    except TimeoutError:
        raise TitleError(f"session-title-llm: title request timed out after {int(timeout_s * 1000)} ms "
                         f"(SESSION_TITLE_TIMEOUT)") from None
    except asyncio.CancelledError:
        raise
    except Exception as err:  # noqa: BLE001 - any provider failure is a title failure
        raise TitleError(str(err) or type(err).__name__) from None
    kind = asm.finish_kind
    if kind == "max-tokens":
        raise TitleError("session-title-llm: title output reached maxOutputTokens")
    if kind in ("error", "aborted"):
        failure = (asm.finish or {}).get("failure") or {}
        raise TitleError(str(failure.get("message") or f"title request finished with {kind}"))
    blocks = asm.blocks()
    if any(b.get("type") == "tool-call" for b in blocks):
        raise TitleError("session-title-llm: title model requested a tool call")
    if kind != "stop":
        raise TitleError(f"session-title-llm: title request finished with {kind or 'no finish'}")
    text = clean(" ".join(b.get("text", "") for b in blocks if b.get("type") == "text"))
    if not text:
        raise TitleError("session-title-llm: title model produced no text")
    return normalize(text, max_bytes)


class SessionTitleLlm:
    name = "session-title-llm"
    Config = LlmTitleConfig

    def apply(self, ctx: BuiltinContext, config: LlmTitleConfig) -> None:
        agent = ctx.driver
        session = agent.session
        if (session.header or {}).get("parentSession") or session.title_data() is not None:
            return  # fork and subagent children, titled sessions: no first-prompt LLM title
        if any(ev.get("type") == "user/message" and is_eligible(ev.get("data"))
               for ev in events_of(session.events, _USER)):
            return  # the first prompt was before this agent: its title work is not pending here
        start = len(session.events)
        state: dict[str, Any] = {"task": None, "off": None}

        def first_prompt() -> tuple[int, dict] | None:
            found = _human_messages(session, start)
            return found[0] if found else None

        async def on_stream(payload: dict, nxt: Any) -> Any:
            request = payload.get("request") or {}
            launch = None
            if state["task"] is None and request.get("purpose", "turn") == "turn":
                first = first_prompt()
                if first is not None:
                    state["off"]()
                    seq, message = first
                    titled_before = any(e.get("type") == "session/title" and e.get("seq", 0) < seq
                                        for e in events_of(session.events, _TITLE))
                    if not titled_before and not _pinned(session):
                        launch = self._start(ctx, config, state, seq, message_text(message),
                                             request.get("config") or {})
            stream = await nxt()
            if launch is None:
                return stream
            return _launch_after_first_chunk(stream, launch)

        state["off"] = ctx.on("llm/stream", on_stream)

        async def flush(_payload: dict) -> None:
            task = state["task"]
            if isinstance(task, asyncio.Task) and not task.done():
                await asyncio.wait({task})

        ctx.on("session/flush", flush)

        def cancel() -> None:
            task = state["task"]
            if isinstance(task, asyncio.Task) and not task.done():
                task.cancel()

        ctx.effect(lambda: cancel)

    def _start(self, ctx: BuiltinContext, config: LlmTitleConfig, state: dict, seq: int, text: str, main: dict) -> Any:
        """Log the title request (or the reason there is none) and return ``launch()``, which sends it."""
        agent = ctx.driver
        session = agent.session

        def failed(err: Any) -> None:
            ctx.log.warning('session "%s": automatic title generation failed: %s', session.id, err)
            state["error"] = str(err)

        state["task"] = False  # started (or failed before any record)
        body_text = USER_TEXT_PREFIX + json.dumps([{"seq": seq, "text": text}], separators=(",", ":"),
                                                  ensure_ascii=False)
        size = len(body_text.encode("utf-8"))
        if size > config.maxInputBytes:
            failed(f"session-title-llm: input is {size} bytes, exceeding maxInputBytes {config.maxInputBytes}")
            return None
        if config.provider is not None:
            route = {"provider": config.provider, "model": config.model}
        elif main.get("provider") and main.get("model"):
            route = {"provider": main["provider"], "model": main["model"]}
        else:
            failed("session-title-llm: no logged request route is available; configure provider and model together")
            return None
        if agent.provider is None:
            failed("session-title-llm: no provider is configured")
            return None
        body = request_body(seq, text, route, config, str(uuid.uuid4()))
        session.append("session/title-llm-request", body)

        def launch() -> None:
            if state["task"] is False and not getattr(agent, "_disposed", False):
                state["task"] = asyncio.get_running_loop().create_task(run())

        async def run() -> None:
            try:
                title = await request_title(agent.provider, body, session.id, config.timeoutMs / 1000,
                                            config.maxTitleBytes)
            except TitleError as err:
                return failed(err)
            if _pinned(session) or getattr(agent, "_disposed", False):
                return  # a user title came first, or the agent is closing: a stale result is dropped
            try:
                session.append("session/title", {"title": title, "messageSeqs": [seq],
                                                 "source": {"kind": "provider", "provider": TITLE_PROVIDER,
                                                            "model": dict(route)}})
            except Exception as err:  # noqa: BLE001 - a closed or failing log: the fallback stays
                failed(err)

        return launch


async def _launch_after_first_chunk(stream: Any, launch: Any) -> Any:
    """The turn's stream, unchanged; the title request is sent once its first chunk is in (or it ended):
    the two run side by side, and the title request never holds up the turn's first byte."""
    launched = False
    try:
        async for chunk in stream:
            if not launched:
                launched = True
                launch()
            yield chunk
    finally:
        if not launched:
            launch()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


SESSION_TITLE = SessionTitle()
SESSION_TITLE_LLM = SessionTitleLlm()
