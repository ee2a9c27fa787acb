"""The human transcript of a session, folded incrementally from its event log.

``TranscriptFold.apply(event)`` returns the item changes that event causes. It reads append-origin
surface events and their neighbours (chunks, tool calls, turn ends, retries, compaction, todos,
end-seed) into the items of ``session/transcript/items.py``. It never reads ``agent/*`` live events, so a live
session and the same session reopened from disk produce the same items; the Markdown export reuses
this fold.

Cost is O(1) per event (streamed text is kept as a list of parts and joined lazily), so a
200k-event log folds in one pass. It is one state machine over the event types; its item classes, the
notices beside the conversation (compaction, changed files, dividers) and diff-hunk tracking live in
``items.py``, ``notices.py`` and ``hunks.py``.
"""

from __future__ import annotations

from typing import Any

from dsh_tui.session.content import content_text, tool_result_block
from dsh_tui.session.stats import UsageFold

from . import notices
from .hunks import SeenFiles
from .items import (
    ADD,
    PLAN,
    REMOVE,
    UPDATE,
    Change,
    CompactionItem,
    ContextItem,
    FooterItem,
    Item,
    PlanState,
    RetryItem,
    StreamItem,
    ToolItem,
    UserItem,
    context_producer,
    reason_text,
    tool_kind,
)

# A model request counts towards a turn footer's tok/s only when it decoded for at least this long:
# output that arrived in one burst (a server that buffers, a short tool call) measures the network.
MIN_DECODE_MS = 100


class TranscriptFold:
    """Incremental fold from events to transcript items (see the module docstring)."""

    def __init__(self, header: dict[str, Any] | None = None,
                 prices: dict[str, tuple[float, float, float]] | None = None) -> None:
        self.header = header or {}
        self.items: list[Item] = []
        self.by_key: dict[str, Item] = {}
        self.plan = PlanState()
        self.usage = UsageFold(prices)
        self.turn = 0
        self.step = 0
        self._attempt: list[StreamItem | ToolItem] = []  # items streamed by the current attempt
        self._stream_index: dict[tuple[str, int], StreamItem] = {}  # (assistant|thinking, index) -> its text
        self._tool_index: dict[int, ToolItem] = {}  # index -> the tool call being streamed
        self._tools: dict[str, ToolItem] = {}
        self._approvals: dict[str, ToolItem] = {}
        self._v4_cut_seen = False  # a v4 fork's end-seed {inherited: true} was folded
        self._retries: dict[str, RetryItem] = {}
        self._compactions: dict[str, CompactionItem] = {}
        self.workspace = str(self.header.get("cwd") or "")
        self.title_data: dict[str, Any] | None = None  # the latest session/title (a user title pins)
        self._turn_start_time: int | None = None
        self._first_chunk_time: int | None = None
        self._last_chunk_time: int | None = None
        # decode time of the turn: per model request, its first to its last streamed chunk, counted with
        # the request's output tokens once its usage arrives (a cancelled request has none)
        self._request_first: int | None = None
        self._decode_ms = 0
        self._decode_tokens = 0
        self._request_counted = False
        self._files = SeenFiles(self.workspace)  # line numbers for later diff hunks
        self._turn_files: dict[Any, tuple[list, int]] = {}  # turn -> (files changed, total)
        self.changed_files: dict[Any, list[str]] = {}  # turn -> files dsh's workspace/changes reported

    # -- helpers -------------------------------------------------------------------------------
    def _add(self, item: Item, out: list[Change]) -> Item:
        self.items.append(item)
        self.by_key[item.key] = item
        out.append((ADD, item))
        return item

    def _update(self, item: Item, out: list[Change]) -> None:
        item.touch()
        out.append((UPDATE, item))

    def _remove(self, item: Item, out: list[Change]) -> None:
        self.by_key.pop(item.key, None)
        try:
            self.items.remove(item)
        except ValueError:
            return
        out.append((REMOVE, item))

    @staticmethod
    def _key(prefix: str, seq: int, part: int = 0) -> str:
        # the creating event's seq (and block index) keeps keys unique and identical between a full
        # fold and a tail fold with its head prepended
        return f"{prefix}{seq}.{part}"

    def _new_attempt(self) -> None:
        self._attempt = []
        self._stream_index = {}
        self._tool_index = {}

    # -- folding -------------------------------------------------------------------------------
    def apply_all(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: dict[str, Any]) -> list[Change]:
        out: list[Change] = []
        etype = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            data = {}
        if etype == "assistant/chunk":
            # hot path: a 200k-event log is mostly text/reasoning deltas of an existing item
            chunk = data.get("chunk")
            if isinstance(chunk, dict):
                ctype = chunk.get("type")
                if ctype == "text-delta" or ctype == "reasoning-delta":
                    item = self._stream_index.get(
                        ("assistant" if ctype == "text-delta" else "thinking", chunk.get("index", 0)))
                    if item is not None:
                        item.parts.append(chunk.get("text") or "")
                        item._joined = None
                        item.version += 1
                        self._last_chunk_time = event.get("time")
                        out.append((UPDATE, item))
                        return out
                elif ctype == "usage":
                    self.usage.apply(event)
            self._on_chunk(event, data, event.get("seq", 0), out)
            return out
        if etype in _USAGE_TYPES:
            self.usage.apply(event)
        handler = _HANDLERS.get(etype)  # type: ignore[arg-type]
        if handler is not None:
            handler(self, event, data, event.get("seq", 0), out)
        return out

    def _on_turn_start(self, event, data, seq, out) -> None:
        self.turn = data.get("turn", self.turn + 1)
        self._turn_start_time = event.get("time")
        self._first_chunk_time = self._last_chunk_time = None
        self._request_first = None
        self._decode_ms = self._decode_tokens = 0
        self._request_counted = False

    def _on_step_start(self, event, data, seq, out) -> None:
        self.step = data.get("step", 0)
        self._new_attempt()
        self._request_first = None
        self._request_counted = False

    def _count_decode(self, usage: Any) -> None:
        """The current request's usage arrived: add its decode span and output tokens (once)."""
        if self._request_counted or not isinstance(usage, dict):
            return
        self._request_counted = True
        output = usage.get("outputTokens")
        first, last = self._request_first, self._last_chunk_time
        # a request whose output arrived in one burst tells nothing about the model's speed
        if isinstance(output, int) and output > 0 and isinstance(first, int) and isinstance(last, int) \
                and last - first >= MIN_DECODE_MS:
            self._decode_ms += last - first
            self._decode_tokens += output

    def _on_user_message(self, event, data, seq, out) -> None:
        if event.get("surfaceOp") != "append":
            return  # replacements (compaction summaries) shadow history for the model only
        source = data.get("source") or {}
        text = content_text(data.get("content"), marks=True)
        if source.get("kind") == "user":
            self._add(UserItem(f"u{seq}", "user", seq, self.turn, text=text), out)
        else:
            self._add(ContextItem(f"x{seq}", "context", seq, self.turn, producer=context_producer(source), text=text), out)

    def _on_chunk(self, event, data, seq, out) -> None:
        chunk = data.get("chunk") or {}
        ctype = chunk.get("type")
        time = event.get("time")
        if ctype in ("text-delta", "reasoning-delta", "tool-call-delta", "block-start"):
            if self._first_chunk_time is None:
                self._first_chunk_time = time
            if self._request_first is None:
                self._request_first = time
            self._last_chunk_time = time
        elif ctype == "usage":
            self._count_decode(chunk.get("usage"))
            return
        if ctype == "text-delta" or ctype == "reasoning-delta":
            kind = "assistant" if ctype == "text-delta" else "thinking"
            index = chunk.get("index", 0)
            item = self._stream_index.get((kind, index))
            if item is None:
                item = StreamItem(self._key("s", seq), kind, seq, self.turn, step=self.step)
                self._stream_index[(kind, index)] = item
                self._attempt.append(item)
                item.append(chunk.get("text") or "")
                self._add(item, out)
            else:
                item.append(chunk.get("text") or "")
                self._update(item, out)
        elif ctype == "tool-call-delta":
            index = chunk.get("index", 0)
            call = self._tool_index.get(index)
            if call is None:
                call_id = str(chunk.get("id") or "")
                name = str(chunk.get("name") or "")
                call = ToolItem(self._key("t", seq), "tool", seq, self.turn, call_id=call_id, name=name,
                                tool=tool_kind(name), step=self.step, state="requested", workspace=self.workspace)
                self._tool_index[index] = call
                self._attempt.append(call)
                call.arguments = chunk.get("argumentsDelta") or ""
                self._add(call, out)
            else:
                call.arguments += chunk.get("argumentsDelta") or ""
                if chunk.get("name") and not call.name:
                    call.name = chunk["name"]
                    call.tool = tool_kind(call.name)
                self._update(call, out)

    def _discard_attempt(self, out: list[Change]) -> None:
        for item in self._attempt:
            self._remove(item, out)
        self._new_attempt()

    def _on_assistant_message(self, event, data, seq, out) -> None:
        if event.get("surfaceOp") not in (None, "append"):
            return
        message = data.get("message") or {}
        interrupted = bool(data.get("interrupted"))
        self._count_decode(data.get("usage"))
        leftovers = list(self._attempt)
        self._new_attempt()
        for part, block in enumerate(message.get("content") or []):
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype in ("text", "reasoning"):
                kind = "assistant" if btype == "text" else "thinking"
                item = _take(leftovers, kind)
                text = block.get("text") or ""
                state = "interrupted" if interrupted else "final"
                if item is None:
                    new = StreamItem(self._key("s", seq, part), kind, seq, self.turn, step=self.step, state=state)
                    new.set_text(text)
                    self._add(new, out)
                else:
                    assert isinstance(item, StreamItem)
                    item.set_text(text)
                    item.state = state
                    self._update(item, out)
            elif btype == "tool-call":
                call_id = str(block.get("id") or "")
                name = str(block.get("name") or "")
                item = _take(leftovers, "tool")
                if item is None:
                    item = ToolItem(self._key("t", seq, part), "tool", seq, self.turn, call_id=call_id, name=name,
                                    tool=tool_kind(name), step=self.step, workspace=self.workspace)
                    self._add(item, out)
                else:
                    self._update(item, out)
                assert isinstance(item, ToolItem)
                item.call_id, item.name, item.tool = call_id, name, tool_kind(name)
                item.arguments = block.get("arguments") or ""
                self._tools[call_id] = item
        for item in leftovers:  # streamed but not kept (a dropped half tool call, a failed attempt)
            if interrupted and isinstance(item, StreamItem):
                item.state = "interrupted"
                self._update(item, out)
            else:
                self._remove(item, out)

    def _on_tool_call(self, event, data, seq, out) -> None:
        call_id = str(data.get("callId") or "")
        item = self._tools.get(call_id)
        name = str(data.get("name") or "")
        if item is None:
            item = ToolItem(self._key("t", seq), "tool", seq, self.turn, call_id=call_id, name=name,
                            tool=tool_kind(name), step=data.get("step", self.step),
                            arguments=data.get("arguments") or "", state="running", workspace=self.workspace)
            self._tools[call_id] = item
            self._add(item, out)
        else:
            item.state = "running"
            self._update(item, out)

    def _on_tool_result(self, event, data, seq, out) -> None:
        if event.get("surfaceOp") != "append":
            return  # pruned content rewrites keep the original card
        message = data.get("message") or {}
        call_id = str((message.get("source") or {}).get("callId") or "")
        block = tool_result_block(message)  # v0's wrapper block or a format-v4 tool message
        if not call_id:
            call_id = str(block.get("toolCallId") or "")
        item = self._tools.get(call_id)
        if item is None:
            item = ToolItem(self._key("t", seq), "tool", seq, self.turn, call_id=call_id, name="?", step=self.step, workspace=self.workspace)
            self._tools[call_id] = item
            self._add(item, out)
        else:
            item.touch()
            out.append((UPDATE, item))
        item.result = content_text(block.get("content"), marks=True)
        item.meta = data.get("meta")
        error = data.get("error") if isinstance(data.get("error"), dict) else None
        item.error_code = error.get("code") if error else None
        code = item.error_code or ""
        if code.startswith("ABORTED"):
            item.state = "aborted"
        elif code == "TOOL_OUTCOME_UNKNOWN":
            item.state = "unknown"
        elif block.get("isError") or error:
            item.state = "error"
        else:
            item.state = "ok"
        if item.state == "ok" and item.tool in ("read", "edit"):
            self._files.track(item)

    def _on_approval_asked(self, event, data, seq, out) -> None:
        item = self._tools.get(str(data.get("callId") or ""))
        if item is not None:
            item.approval, item.approval_reason = "asked", data.get("reason")
            self._approvals[str(data.get("id"))] = item
            self._update(item, out)

    def _on_approval_decided(self, event, data, seq, out) -> None:
        item = self._approvals.pop(str(data.get("id")), None)
        if item is not None:
            item.approval = str(data.get("outcome") or "")
            self._update(item, out)

    def _on_retry(self, event, data, seq, out) -> None:
        failure = data.get("failure") or {}
        self._add(RetryItem(f"r{seq}", "retry", seq, self.turn, attempt=data.get("retry", 0),
                            max_attempts=data.get("maxRetries"), delay_ms=data.get("delayMs", 0),
                            code=failure.get("code", ""), message=failure.get("message", "")), out)
        self._retries[str(data.get("retryId"))] = self.items[-1]  # type: ignore[assignment]

    def _on_retry_started(self, event, data, seq, out) -> None:
        self._discard_attempt(out)
        self._request_first = None
        self._request_counted = False
        item = self._retries.get(str(data.get("retryId")))
        if item is not None:
            item.started = True
            self._update(item, out)

    def _on_turn_end(self, event, data, seq, out) -> None:
        turn = data.get("turn", self.turn)
        reason = data.get("reason")
        kind = reason.get("kind", "?") if isinstance(reason, dict) else "?"
        usage = self.usage.turns.get(turn)
        end = event.get("time")
        duration = end - self._turn_start_time if isinstance(end, int) and isinstance(self._turn_start_time, int) else None
        ttft = None
        if isinstance(self._first_chunk_time, int) and isinstance(self._turn_start_time, int):
            ttft = self._first_chunk_time - self._turn_start_time
        rate = None
        if self._decode_tokens and self._decode_ms:
            rate = self._decode_tokens * 1000.0 / self._decode_ms
        for item in self._attempt:  # a crash or cancel left streamed text without its message
            if isinstance(item, StreamItem) and item.state == "streaming":
                item.state = "interrupted"
                self._update(item, out)
        self._new_attempt()
        for tool in self._tools.values():
            if tool.state in ("requested", "running") and tool.turn == turn:
                tool.state = "aborted" if kind == "aborted" else "unknown"
                self._update(tool, out)
        self._add(FooterItem(f"f{seq}", "footer", seq, turn, reason=kind, reason_text=reason_text(reason),
                             duration_ms=duration, ttft_ms=ttft, tokens_per_s=rate,
                             input_tokens=usage.billed_input if usage else 0,
                             output_tokens=usage.output if usage else 0,
                             cache_read_tokens=usage.cache_read if usage else 0), out)
        if turn in self._turn_files:
            footer = self.items[-1]
            footer.files, footer.files_total = self._turn_files[turn]  # type: ignore[attr-defined]

    def _on_todo(self, event, data, seq, out) -> None:
        todos = data.get("todos")
        self.plan = PlanState([t for t in todos if isinstance(t, dict)] if isinstance(todos, list) else [])
        out.append((PLAN, self.plan))

    @property
    def title(self) -> str | None:
        return None if self.title_data is None else self.title_data["title"]

    def _on_title(self, event, data, seq, out) -> None:
        from dsh_tui.session.folds import title_update  # its module imports the row codec and JSON: not
        # on the way to a new chat's first frame

        self.title_data = title_update(self.title_data, event)

    def prepend(self, head: TranscriptFold) -> None:
        """Put the items of ``head`` (a fold of the events before this fold's first turn) in front.

        Tail-first loading: a long log's last turns are folded and shown first; the head is folded
        in the background and prepended. A turn boundary separates the two, so no per-turn state
        crosses it; only the plan and the usage totals carry over.
        """
        if head.title_data is not None:  # the head's events come first
            from dsh_tui.session.folds import title_update

            tail = self.title_data
            self.title_data = head.title_data if tail is None else title_update(head.title_data, {"data": tail})
        self.items[:0] = head.items
        for item in head.items:
            self.by_key[item.key] = item
        if not self.plan.todos and head.plan.todos:
            self.plan = head.plan
        self.usage.merge_head(head.usage)
        for call_id, tool in head._tools.items():
            self._tools.setdefault(call_id, tool)


def tail_start(events: list[dict[str, Any]], min_events: int) -> int:
    """Index of the ``turn/start`` at or before ``len(events) - min_events`` (0 for a short log)."""
    if len(events) <= min_events:
        return 0
    for i in range(len(events) - min_events, 0, -1):
        if events[i].get("type") == "turn/start":
            return i
    return 0



def _take(items: list, kind: str) -> Any:
    for i, item in enumerate(items):
        if item.kind == kind:
            return items.pop(i)
    return None


_USAGE_TYPES = frozenset({"assistant/message", "step/start", "llm/retry-started", "compaction/end",
                          "request/header", "request/context"})

_HANDLERS = {
    "turn/start": TranscriptFold._on_turn_start,
    "step/start": TranscriptFold._on_step_start,
    "user/message": TranscriptFold._on_user_message,
    "assistant/chunk": TranscriptFold._on_chunk,
    "assistant/message": TranscriptFold._on_assistant_message,
    "tool/call": TranscriptFold._on_tool_call,
    "tool/result": TranscriptFold._on_tool_result,
    "approval/asked": TranscriptFold._on_approval_asked,
    "approval/decided": TranscriptFold._on_approval_decided,
    "llm/retry": TranscriptFold._on_retry,
    "llm/retry-started": TranscriptFold._on_retry_started,
    "compaction/start": notices.on_compaction,
    "compaction/summary": notices.on_compaction,
    "compaction/prune": notices.on_compaction,
    "compaction/end": notices.on_compaction,
    "turn/end": TranscriptFold._on_turn_end,
    "todo/write": TranscriptFold._on_todo,
    "session/end-seed": notices.on_end_seed,
    "session/title": TranscriptFold._on_title,
    "workspace/changes": notices.on_dsh_workspace_changes,
    "agent-instructions/skipped": notices.on_skipped,
    "skills/skipped": notices.on_skipped,
    "workspace-changes/turn": notices.on_workspace_changes,
    "workspace-changes/undo": notices.on_workspace_undo,
}


def fold_transcript(header: dict[str, Any] | None, events: list[dict[str, Any]]) -> TranscriptFold:
    """Fold a whole log (cold load); the same items a live view builds event by event."""
    fold = TranscriptFold(header)
    fold.apply_all(events)
    return fold
