"""Compaction (docs/runtime.md, "Compaction").

Triggers: *pressure* (an ``agent/pre-step`` listener, before the step's messages are appended: at
``floor(context_window * 0.8)`` estimated tokens) and *overflow* (an ``agent/request-error`` listener
for ``CONTEXT_WINDOW_EXCEEDED``; retries only when the surface was actually replaced). Large tool
results are pruned first; then a balanced head range is summarised by the provider and replaced by
one checkpoint ``user/message`` (``surfaceOp replace``). Failures leave the surface untouched.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from typing import TYPE_CHECKING, Any

from dsh_tui.llm.protocol import CONTEXT_WINDOW_EXCEEDED
from dsh_tui.session.errors import DshError

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent
    from dsh_tui.runtime.plugin_context import BuiltinContext

log = logging.getLogger("dsh_tui.extensions.compaction")

PLUGIN = "compact"
PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up "
    "context. Treat the captured context as established background and build on it without restating it. "
    "Continue the task directly from the messages that follow, without acknowledging this checkpoint."
)
PRUNE_MARKER = "\n\n[... tool result middle pruned ...]\n\n"
PRUNE_HEAD = 4096
PRUNE_TAIL = 1024
# dsh's COMPACTION_INSTRUCTION is not in the reference material; this text asks for the same sections.
COMPACTION_INSTRUCTION = (
    "Your task is to create a detailed checkpoint of the conversation so far, so that the work can continue "
    "from it without the original messages. Output only a structured Markdown document with these sections:\n\n"
    "## Primary Request and Intent\n## Key Technical Concepts\n## Files and Code\n## Errors and Fixes\n"
    "## Pending Jobs\n## Current Work\n## Next Step\n## Critical Context\n\n"
    "If the conversation contains an earlier <compacted-summary>, merge its facts into the new checkpoint. "
    "Do not call tools. Be precise: keep file paths, identifiers, commands and decisions verbatim."
)


class CompactionError(DshError):
    pass


def u16len(s: str) -> int:
    """JavaScript's ``length``: UTF-16 code units (a lone surrogate, legal in a dsh log, counts one)."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _q(s: str) -> int:
    return math.ceil(u16len(s) / 4)


def block_price(b: dict) -> int:
    t = b.get("type")
    if t in ("text", "reasoning"):
        return _q(b.get("text", "")) + 4
    if t == "tool-call":
        return _q(b.get("name", "")) + _q(b.get("arguments", "")) + 4
    if t == "tool-result":
        return sum(block_price(x) for x in b.get("content") or []) + 4
    return 4 + _q(json.dumps(b, separators=(",", ":"), ensure_ascii=False))


def message_price(m: dict) -> int:
    return 4 + sum(block_price(b) for b in m.get("content") or [])


def header_price(system: str | None, tools: list[dict] | None) -> int:
    total = (_q(system) + 4) if system else 0
    for t in tools or []:
        total += _q(json.dumps(t, separators=(",", ":"), ensure_ascii=False)) + 4
    return total


def surface_nodes(events: list[dict]) -> list[int]:
    """The current surface as event seqs (docs/format.md, "Surface and projection"), without format v4's
    system and developer messages: the system prompt is the protected head, never compacted or pruned, and
    the runtime does not send either as a message."""
    nodes: list[int] = []
    for ev in events:
        op = ev.get("surfaceOp")
        if op is None:
            continue
        if op == "append":
            nodes.append(ev["seq"])
        else:
            i = nodes.index(op["start"] if "start" in op else op["startSeq"])  # format v4: startSeq/endSeq
            j = nodes.index(op["end"] if "end" in op else op["endSeq"])
            nodes[i : j + 1] = [ev["seq"]]
    return [s for s in nodes if events[s]["type"] not in _NOT_MESSAGES]


_NOT_MESSAGES = frozenset(("system/message", "developer/message"))


def node_message(ev: dict) -> dict | None:
    """The message a surface event projects to, as the runtime's providers read it (a format-v4 tool result is
    v0's user message with one ``tool-result`` block)."""
    from dsh_tui.session.log import v4_runtime_message

    if ev["type"] in ("user/message", "assistant/message", "tool/result"):
        m: dict | None = v4_runtime_message(ev)
        return m
    return None


class Compactor:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._overflow_used: dict[tuple[int, int], int] = {}
        self._gen_checked = 0
        self._gen = 0
        self._header_obj: dict | None = None
        self._header_price = 0
        self._measured_gen = -1
        self._measured_upto = 0
        self._surface_total = 0
        self._anchor: tuple[int, int, dict | None] | None = None
        self._header_raw: dict | None = None
        self._nodes: set[int] = set()
        self._nodes_upto = 0

    # ---- measurement -------------------------------------------------------------------------------
    def replace_generation(self) -> int:
        events = self.agent.session.events
        for i in range(self._gen_checked, len(events)):
            op = events[i].get("surfaceOp")
            if op is not None and op != "append":
                self._gen += 1
        self._gen_checked = len(events)
        return self._gen

    def measure(self) -> int:
        """Estimated tokens of the next request (dsh's token meter): heuristic surface + header price,
        anchored to the
        provider's usage of the latest assistant message when its request header is still current.
        Incremental: only events appended since the last call are priced (a surface replacement rescans)."""
        session = self.agent.session
        events = session.events
        gen = self.replace_generation()
        if gen != self._measured_gen:
            self._measured_gen = gen
            self._surface_total = 0
            self._anchor = None
            self._header_raw = None
            self._measured_upto = 0
            self._nodes = set(surface_nodes(events))
            self._nodes_upto = len(events)
        nodes = self._nodes
        for i in range(self._measured_upto, len(events)):
            ev = events[i]
            t = ev["type"]
            if t == "request/header":
                self._header_raw = ev["data"].get("header")
                continue
            op = ev.get("surfaceOp")
            if op is None:
                continue
            if op == "append" and i >= self._nodes_upto:
                nodes.add(ev["seq"])
            if ev["seq"] not in nodes:
                continue
            m = node_message(ev)
            if m is not None:
                self._surface_total += message_price(m)
            if t == "assistant/message" and ev["data"].get("usage"):
                u = ev["data"]["usage"]
                provider_total = sum(int(u.get(k) or 0) for k in
                                     ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens"))
                self._anchor = (provider_total, self._surface_total, self._header_raw)
        self._measured_upto = len(events)
        header = self._header_raw or {}
        if header is not self._header_obj:
            self._header_obj = header
            self._header_price = header_price(header.get("system"), header.get("tools"))
        heuristic = self._header_price + self._surface_total
        if self._anchor is not None:
            provider_total, surface_at_anchor, anchor_header = self._anchor
            if anchor_header == header:
                at_anchor = self._header_price + surface_at_anchor
                baseline = provider_total if provider_total >= at_anchor else at_anchor
                return baseline + (heuristic - at_anchor)
        return heuristic

    def _threshold(self) -> int | None:
        ctx = self.agent.session.request_context() or {}
        cw = ctx.get("contextWindow") or self.agent.context_window(ctx.get("model"))
        if not cw:
            return None
        return math.floor(cw * self.agent.config.compaction_threshold_ratio)

    # ---- triggers -------------------------------------------------------------------------------------
    async def on_pre_step(self, payload: dict, next_: Any) -> Any:
        if self.agent.session.request_header() is not None:
            threshold = self._threshold()
            if threshold is not None and self.measure() >= threshold:
                attempts = 1 + max(0, self.agent.config.compaction_retries)
                for attempt in range(attempts):
                    try:
                        await self.compact(mode="pressure", turn=payload["turn"], threshold=threshold)
                        break
                    except Exception as err:  # noqa: BLE001 - logged, the turn continues
                        log.warning("pressure compaction attempt %d failed: %s", attempt + 1, err)
                        if self.measure() < threshold:
                            break
        return await next_()

    async def on_request_error(self, payload: dict, next_: Any) -> Any:
        failure = payload.get("failure") or {}
        if failure.get("code") != CONTEXT_WINDOW_EXCEEDED:
            return await next_()
        key = (payload["turn"], payload["step"])
        if self._overflow_used.get(key, 0) >= self.agent.config.max_overflow_retries:
            return await next_()
        self._overflow_used[key] = self._overflow_used.get(key, 0) + 1
        before = self.replace_generation()
        try:
            await self.compact(mode="overflow", turn=payload["turn"])
        except Exception as err:  # noqa: BLE001
            log.warning("overflow compaction failed: %s", err)
        if self.replace_generation() > before:
            return {"kind": "retry"}
        return await next_()

    # ---- the work ---------------------------------------------------------------------------------------
    def _prune(self) -> bool:
        session = self.agent.session
        events = session.events
        limit = self.agent.config.prune_threshold_chars
        pruned = False
        for seq in surface_nodes(events):
            ev = events[seq]
            if ev["type"] != "tool/result":
                continue
            block = ev["data"]["message"]["content"][0]
            inner = block.get("content") or []
            if not inner or any(b.get("type") != "text" for b in inner):
                continue
            text = "".join(b.get("text", "") for b in inner)
            if len(text) <= limit:
                continue
            new_text = text[:PRUNE_HEAD] + PRUNE_MARKER + text[-PRUNE_TAIL:]
            session.append("compaction/prune", {"shadowedRange": {"start": seq, "end": seq}, "shadowedSeqs": [seq],
                                                "shadowedTokenCount": message_price(ev["data"]["message"])})
            data = json.loads(json.dumps(ev["data"]))
            data["message"]["content"][0]["content"] = [{"type": "text", "text": new_text}]
            session.append("tool/result", data, surface_op={"op": "replace", "start": seq, "end": seq},
                           source_event_seqs=[seq])
            pruned = True
        return pruned

    def _select(self, nodes: list[int], retain: int) -> int:
        """Index of the cut: nodes[:cut] get compacted. Balanced: no call/result pair straddles it."""
        events = self.agent.session.events
        prices = []
        for seq in nodes:
            m = node_message(events[seq])
            prices.append(message_price(m) if m else 0)
        if retain <= 0:
            cut = len(nodes) - 1
        else:
            acc = 0
            cut = len(nodes)
            while cut > 0 and acc < retain:
                cut -= 1
                acc += prices[cut]
        while cut > 0:
            head_calls = set()
            for seq in nodes[:cut]:
                ev = events[seq]
                if ev["type"] == "assistant/message":
                    for b in ev["data"]["message"].get("content") or []:
                        if b.get("type") == "tool-call":
                            head_calls.add(b.get("id"))
            straddle = None
            for idx in range(cut, len(nodes)):
                ev = events[nodes[idx]]
                if ev["type"] == "tool/result" and ev["data"]["message"]["source"].get("callId") in head_calls:
                    straddle = ev["data"]["message"]["source"]["callId"]
                    break
            if straddle is None:
                break
            # move the cut head-ward to the assistant message that made the call
            for idx in range(cut - 1, -1, -1):
                ev = events[nodes[idx]]
                if ev["type"] == "assistant/message" and any(
                    b.get("type") == "tool-call" and b.get("id") == straddle
                    for b in ev["data"]["message"].get("content") or []
                ):
                    cut = idx
                    break
            else:
                cut = 0
        return cut

    async def _summarize(self, messages: list[dict]) -> tuple[list[dict], dict | None, dict, list[dict]]:
        agent = self.agent
        header = agent.session.request_header() or {}
        cfg = dict(header.get("config") or {})
        # the session's current model: a /model since the last request counts (the header is the old one)
        config = {"provider": agent.config.provider or cfg.get("provider"), "model": agent.config.model or
                  cfg.get("model"), "maxTokens": agent.config.compaction_max_tokens}
        instruction = {"id": str(uuid.uuid4()), "role": "user",
                       "content": [{"type": "text", "text": COMPACTION_INSTRUCTION}],
                       "source": {"kind": "plugin", "plugin": "dsh-compaction-basic"}}
        request = {"config": config, "system": header.get("system"), "tools": header.get("tools") or [],
                   "messages": list(messages) + [instruction], "sessionId": agent.id, "purpose": "compaction"}
        from dsh_tui.runtime.assembler import BlockAssembler

        asm = BlockAssembler()
        signal = agent.signal

        async def run() -> None:
            agen = agent._boundary(request, signal)
            try:
                async for chunk in agen:
                    asm.feed(chunk)
            finally:
                await agen.aclose()

        await signal.race(run())
        kind = asm.finish_kind
        if kind == "max-tokens":
            raise CompactionError("summarization truncated at the token cap (incomplete checkpoint)")
        if kind in ("error", "aborted"):
            raise CompactionError(((asm.finish or {}).get("failure") or {}).get("message", "summarization failed"))
        blocks = asm.blocks()
        texts = [{"type": "text", "text": b["text"]} for b in blocks if b.get("type") == "text" and b.get("text", "").strip()]
        if not texts:
            raise CompactionError("summarization returned no text")
        return texts, asm.usage, config, blocks

    async def compact(self, *, mode: str, turn: int | None, threshold: int | None = None) -> bool:
        agent = self.agent
        session = agent.session
        cid = str(uuid.uuid4())
        session.append("compaction/start", {"compactionId": cid, "turn": turn})
        try:
            # a replacing tool/result needs an open turn, so manual compaction (turn None) never prunes
            if turn is not None and self._prune() and threshold is not None and self.measure() < threshold:
                session.append("compaction/end", {"compactionId": cid, "turn": turn})
                return True
            events = session.events
            nodes = surface_nodes(events)
            cw = agent.context_window((session.request_context() or {}).get("model")) or 0
            retain = 0 if mode == "overflow" else math.floor(cw * agent.config.compaction_retain_ratio)
            cut = self._select(nodes, retain)
            if cut <= 0 and mode == "manual" and retain > 0:
                cut = self._select(nodes, 0)  # an explicit /compact keeps only the newest unit if it must
            if cut <= 0:
                raise CompactionError("nothing to compact")
            shadowed = nodes[:cut]
            messages = [m for m in (node_message(events[s]) for s in shadowed) if m is not None]
            shadowed_price = sum(message_price(m) for m in messages)
            texts, usage, config, raw = await self._summarize(messages)
            content = [{"type": "text", "text": f"{PREAMBLE}\n\n<compacted-summary>"}, *texts,
                       {"type": "text", "text": "</compacted-summary>"}]
            checkpoint = {"id": str(uuid.uuid4()), "role": "user", "content": content,
                          "source": {"kind": "plugin", "plugin": PLUGIN, "compactionId": cid}}
            if message_price(checkpoint) >= shadowed_price:
                raise CompactionError("the summary does not shrink its source")
            summary: dict[str, Any] = {"compactionId": cid, "summary": texts,
                                       "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
                                       "shadowedSeqs": list(shadowed), "shadowedTokenCount": shadowed_price,
                                       "provider": config["provider"], "model": config["model"],
                                       "maxTokens": config["maxTokens"]}
            if usage is not None:
                summary["usage"] = usage
            # the summary came from one model call through the agent's stream: dsh's call provenance
            summary["rawOutput"] = raw
            summary["llmStreamCall"] = True
            start_seq = next(e["seq"] for e in reversed(session.events) if e["type"] == "compaction/start"
                             and e["data"].get("compactionId") == cid)
            sev = session.append("compaction/summary", summary)
            session.append("user/message", checkpoint,
                           surface_op={"op": "replace", "start": shadowed[0], "end": shadowed[-1]},
                           source_event_seqs=[start_seq, sev["seq"], *shadowed])
        except BaseException as err:
            session.append("compaction/end", {"compactionId": cid, "turn": turn, "error": str(err) or type(err).__name__})
            raise
        session.append("compaction/end", {"compactionId": cid, "turn": turn})
        return True


def apply(ctx: BuiltinContext) -> None:
    """The ``compaction`` built-in: the compactor ``/compact`` uses, and (``AgentConfig.compaction``) automatic
    compaction before a step and on a context-window error."""
    compactor = Compactor(ctx.driver)
    ctx.provide("compactor", compactor)
    if not ctx.options.compaction:
        return
    ctx.on("agent/pre-step", compactor.on_pre_step)
    ctx.on("agent/request-error", compactor.on_request_error)
