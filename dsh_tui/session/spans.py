"""The span tree of a session: the timeline as a trace ("why did the agent do X?").

One node per thing that took time (or happened at a point), nested the way a turn runs::

    turn
      step
        request            one model attempt: dispatch -> last chunk / message
          waiting          dispatch -> first token
          decoding         first token -> end
          usage            (a point: the attempt's token counts)
          message          the assistant message; its streamed chunks are folded into it (``chunks``)
        retry              llm/retry -> llm/retry-started (the backoff)
        compaction         compaction/start -> compaction/end
        tool               tool/call -> tool/result, in a parallel ``slot`` (overlapping calls differ)
          approval         approval/asked -> approval/decided (the wait for the user)
          execution        approval/decided (or tool/call) -> tool/result
          result           (a point: the tool/result)

Pure and incremental: ``SpanFold.apply(event)`` is O(1) amortised (a turn's end walks that turn once to
close what was left open), so a cold load and a live session build the same tree. Chunks are never
nodes: a message keeps the seq range of its attempt's chunks and a viewer lists them on demand. Times
are the events' own ``time`` fields (epoch ms); nothing here reads a clock.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

from dsh_tui.session.stats import Usage, UsageFold

from .span_nodes import Node as Node  # (re-exported: the tree's node, in span_nodes.py)

TOOL_STATES = {"ABORTED": "aborted", "ABORTED_BEFORE_DISPATCH": "aborted", "TOOL_OUTCOME_UNKNOWN": "unknown"}
FINISH_STATES: dict[str | None, str] = {"stop": "ok", "tool-calls": "ok", "max-tokens": "ok", "aborted": "aborted"}


class SpanFold:
    """Events -> a forest of turn nodes (plus compactions between turns); ``turn_of`` per seq."""

    def __init__(self) -> None:
        self.roots: list[Node] = []
        self.turns: list[Node] = []
        self.requests: list[Node] = []
        self.turn_of = array("i")  # turn number of each seq (0 = between turns)
        self.usage = UsageFold()
        self.last_time = 0  # the latest event time seen (the right edge of a running turn)
        self.version = 0  # bumped by every event that changed the tree (viewers re-flatten on change)
        self._turn: Node | None = None
        self._step: Node | None = None
        self._request: Node | None = None
        self._tools: dict[str, Node] = {}
        self._slots: set[int] = set()
        self._approvals: dict[str, Node] = {}
        self._retries: dict[str, Node] = {}
        self._compactions: dict[str, Node] = {}
        self._model = "model"

    @property
    def count(self) -> int:
        return len(self.turn_of)

    # -- folding ------------------------------------------------------------------------------
    def apply_all(self, events: Any) -> None:
        for e in events:
            self.apply(e)

    def apply(self, event: dict[str, Any]) -> None:
        etype = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            data = {}
        seq = event.get("seq", len(self.turn_of))
        t = event.get("time")
        t = t if isinstance(t, int) else 0
        if t > self.last_time:
            self.last_time = t
        self.usage.apply(event)
        if etype == "turn/start":
            self._turn = Node("turn", f"Turn {_int(data.get('turn')) or len(self.turns) + 1}", seq, t,
                              turn=_int(data.get("turn")) or len(self.turns) + 1)
            self.turns.append(self._turn)
            self.roots.append(self._turn)
            self._step = self._request = None
            self._tools.clear()
            self._slots.clear()
            self._approvals.clear()
            self.version += 1
        turn = self._turn
        self.turn_of.append(turn.turn if turn is not None else 0)
        handler = _HANDLERS.get(etype)
        if handler is None:
            return
        if etype in ("workspace-changes/turn", "workspace-changes/undo"):  # also after its turn's end
            self._on_files(etype, data, seq, t)
            self.version += 1
            return
        if turn is None and etype not in ("compaction/start", "compaction/end"):
            return
        handler(self, turn, data, seq, t)
        self.version += 1

    # turn and step
    def _on_turn_end(self, turn: Node, data, seq, t) -> None:
        turn.end, turn.end_seq = t, seq
        reason = data.get("reason")
        kind = reason.get("kind") if isinstance(reason, dict) else str(reason or "")
        turn.state = kind or "ok"
        turn.detail = kind or ""  # (a reason without its kind: no detail)
        turn.usage = self.usage.turns.get(turn.turn, turn.usage)
        self._close_request(t, seq)
        closing = "interrupted" if kind == "interrupted" else "aborted"
        for n in turn.walk():
            if n.end is None and n is not turn:
                if n.kind == "step":
                    n.end, n.end_seq, n.state = t, seq, "ok" if kind == "completed" else closing
                else:
                    n.state = closing if n.state in ("running", "pending") else n.state
        self._turn = self._step = None

    def _on_files(self, etype: str, data, seq, t) -> None:
        """The files a turn changed (the ``workspace-changes`` plugin): a point row under the turn; an undo
        marks it."""
        turns = [data.get("turn")] if etype == "workspace-changes/turn" else list(data.get("turns") or [])
        for number in turns:
            turn = next((n for n in reversed(self.turns) if n.turn == number), None)
            if turn is None:
                continue
            if etype == "workspace-changes/undo":
                for c in turn.children:
                    if c.kind == "files":
                        c.state, c.detail = "undone", "undone"
                continue
            turn.children = [c for c in turn.children if c.kind != "files"]
            files = [f for f in data.get("files") or [] if isinstance(f, dict)]
            total = data.get("total") if isinstance(data.get("total"), int) else len(files)
            names = [str(f.get("path", "")) for f in files[:3]]
            more = f" +{total - len(names)} more" if total > len(names) else ""
            turn.add(Node("files", f"changed {total} file{'s' if total != 1 else ''}: {', '.join(names)}{more}",
                          seq, t, end=t, end_seq=seq, state="ok", turn=turn.turn))

    def _on_step_start(self, turn: Node, data, seq, t) -> None:
        step = _int(data.get("step")) or sum(1 for c in turn.children if c.kind == "step") + 1
        self._step = turn.add(Node("step", f"step {step}", seq, t, turn=turn.turn, step=step, open=True))
        self._open_request(seq, t)

    def _on_step_end(self, turn: Node, data, seq, t) -> None:
        self._close_request(t, seq)
        s = self._step
        if s is not None:
            s.end, s.end_seq, s.state = t, seq, "ok"
            su = self.usage.steps.get((turn.turn, s.step))
            if su is not None:
                s.usage = su.usage
        turn.usage = self.usage.turns.get(turn.turn, turn.usage)

    def _parent(self) -> Node | None:
        return self._step if self._step is not None else self._turn

    # model requests
    def _open_request(self, seq: int, t: int) -> Node | None:
        parent = self._parent()
        if parent is None:
            return None
        r = Node("request", self._model, seq, t, turn=parent.turn, step=parent.step)
        r.index = len(self.requests)
        self.requests.append(r)
        r.add(Node("waiting", "waiting", seq, t, turn=r.turn, step=r.step))
        self._request = parent.add(r)
        return r

    def _close_request(self, t: int, seq: int, state: str | None = None) -> None:
        r, self._request = self._request, None
        if r is None:
            return
        if r.end is None:
            r.end, r.end_seq = t, seq
            if r.first_token is None:
                r.state = state or "error"  # nothing streamed: the attempt failed (waiting only)
            else:
                r.state = state or ("ok" if r.state == "running" else r.state)
        elif state is not None and r.state == "ok":
            r.state = state
        for c in r.children:
            if c.end is None and not c.point:
                c.end, c.end_seq, c.state = r.end, r.end_seq, r.state
            elif c.kind == "message" and c.state == "running":
                c.state, c.label = r.state, f"(no message: {r.state})"

    def _on_header(self, turn: Node, data, seq, t) -> None:
        config = ((data.get("header") or {}).get("config")) or {}
        self._model = str(config.get("model") or self._model)
        r = self._request
        if r is not None and r.first_token is None:
            r.label = self._model
            r.start = r.children[0].start = t  # dispatch follows the header
            r.seq = r.children[0].seq = seq

    def _on_chunk(self, turn: Node, data, seq, t) -> None:
        r = self._request
        if r is None or r.end is not None:
            r = self._open_request(seq, t)
            if r is None:
                return
        r.chunks += 1
        if r.first_token is None:
            r.first_token, r.first_chunk = t, seq
            w = r.children[0]
            w.end, w.end_seq, w.state = t, seq, "ok"
            r.add(Node("decoding", "decoding", seq, t, turn=r.turn, step=r.step))
            msg = r.add(Node("message", "streaming", seq, t, turn=r.turn, step=r.step))
            msg.first_chunk = seq
        msg = r.children[-1]  # waiting, decoding, [usage], message
        msg.chunks, msg.end, msg.end_seq = r.chunks, t, seq
        chunk = data.get("chunk") or {}
        ctype = chunk.get("type")
        if ctype == "usage":
            u = chunk.get("usage") or {}
            usage = Usage(input=_int(u.get("inputTokens")), output=_int(u.get("outputTokens")),
                          cache_read=_int(u.get("cacheReadTokens")), reasoning=_int(u.get("reasoningTokens")))
            r.usage = usage
            node = Node("usage", _usage_label(usage), seq, t, end=t, end_seq=seq, state="ok", turn=r.turn,
                        step=r.step, usage=usage)
            node.parent = r
            r.children.insert(2, node)  # before the message
        elif ctype == "finish":
            reason = (chunk.get("reason") or {}).get("kind")
            state = FINISH_STATES.get(reason, "error")
            r.end, r.end_seq, r.state, r.detail = t, seq, state, str(reason or "")
            for c in r.children:
                if c.kind == "decoding":
                    c.end, c.end_seq, c.state = t, seq, state

    def _on_message(self, turn: Node, data, seq, t) -> None:
        r = self._request
        if r is None:
            return
        if r.end is None:
            r.end, r.end_seq = t, seq
        if r.state in ("running", "ok"):
            r.state = "aborted" if data.get("interrupted") else "ok"
        msg = next((c for c in r.children if c.kind == "message"), None)
        if msg is None:
            msg = r.add(Node("message", "", seq, t, turn=r.turn, step=r.step))
        for c in r.children:
            if c.kind == "decoding" and c.end is None:
                c.end, c.end_seq, c.state = t, seq, r.state
        msg.seq, msg.start, msg.end, msg.end_seq, msg.state = seq, t, t, seq, r.state
        msg.label = message_label((data.get("message") or {}).get("content"))
        if data.get("interrupted"):
            msg.label = "(interrupted) " + msg.label
        self._request = None

    # tools and approvals
    def _on_tool_call(self, turn: Node, data, seq, t) -> None:
        slot = 0
        while slot in self._slots:
            slot += 1
        self._slots.add(slot)
        parent = self._parent() or turn
        name = str(data.get("name", "tool"))
        node = parent.add(Node("tool", name, seq, t, turn=turn.turn, step=_int(data.get("step")) or parent.step,
                               slot=slot, detail=str(data.get("arguments", ""))[:200], ref=str(data.get("callId")),
                               open=True))
        node.add(Node("execution", "execution", seq, t, turn=node.turn, step=node.step))
        self._tools[str(data.get("callId"))] = node

    def _on_approval_asked(self, turn: Node, data, seq, t) -> None:
        tool = self._tools.get(str(data.get("callId")))
        if tool is None:
            return
        node = Node("approval", "approval wait", seq, t, turn=tool.turn, step=tool.step,
                    detail=str(data.get("reason") or ""))
        node.parent = tool
        tool.children.insert(len(tool.children) - 1, node)  # before the execution
        ex = tool.children[-1]
        ex.seq, ex.start, ex.state = seq, t, "pending"  # execution waits for the answer
        self._approvals[str(data.get("id"))] = node

    def _on_approval_decided(self, turn: Node, data, seq, t) -> None:
        node = self._approvals.pop(str(data.get("id")), None)
        if node is None:
            return
        node.end, node.end_seq = t, seq
        node.state = str(data.get("outcome") or "")
        node.label = f"approval wait · {node.state}"
        tool = node.parent
        if tool is not None and tool.children and tool.children[-1].kind == "execution":
            ex = tool.children[-1]
            ex.seq, ex.start, ex.state = seq, t, "running"

    def _on_tool_result(self, turn: Node, data, seq, t) -> None:
        msg = data.get("message") or {}
        call_id = str((msg.get("source") or {}).get("callId"))
        tool = self._tools.pop(call_id, None)
        if tool is None:
            return
        self._slots.discard(tool.slot)
        err = data.get("error") or {}
        code = err.get("code") if isinstance(err, dict) else None
        blocks = msg.get("content") or []
        is_error = any(isinstance(b, dict) and b.get("isError") for b in blocks)
        state = TOOL_STATES.get(code or "", "error" if (is_error or code) else "ok")
        tool.end, tool.end_seq, tool.state = t, seq, state
        ex = tool.children[-1]
        if ex.kind == "execution":
            if ex.start > t:  # an approval decided after the result (never in order): no execution time
                ex.start = t
            ex.end, ex.end_seq, ex.state = t, seq, state
            approval = next((c for c in tool.children if c.kind == "approval"), None)
            if approval is not None and approval.state not in ("allowed-once", "running"):
                ex.label, ex.start = "not run", t
        text = message_label(blocks)
        tool.add(Node("result", f"[{code}] {text}" if code else text, seq, t, end=t, end_seq=seq, state=state,
                      turn=tool.turn, step=tool.step))

    # retries and compaction
    def _on_retry(self, turn: Node, data, seq, t) -> None:
        self._close_request(t, seq, "error")
        failure = data.get("failure") or {}
        delay = _int(data.get("delayMs"))
        parent = self._parent() or turn
        node = parent.add(Node("retry", f"retry {data.get('retry', '?')}", seq, t, end=t + delay, state="ok",
                               turn=turn.turn, step=parent.step, detail=str(failure.get("code", ""))))
        self._retries[str(data.get("retryId"))] = node

    def _on_retry_started(self, turn: Node, data, seq, t) -> None:
        node = self._retries.pop(str(data.get("retryId")), None)
        if node is not None:
            node.end, node.end_seq = t, seq
        self._open_request(seq, t)

    def _on_compaction(self, turn: Node | None, data, seq, t) -> None:
        if "shadowedRange" in data or "summary" in data:
            return  # compaction/summary, compaction/prune: inside the bracket
        cid = str(data.get("compactionId"))
        node = self._compactions.get(cid)
        if node is None:
            self._close_request(t, seq, "error")
            node = Node("compaction", "compaction", seq, t, turn=turn.turn if turn else 0,
                        step=self._step.step if self._step else 0)
            parent = self._parent()
            if parent is not None:
                parent.add(node)
            else:
                self.roots.append(node)
            self._compactions[cid] = node
            return
        node.end, node.end_seq = t, seq
        node.state = "error" if data.get("error") else "ok"
        self._compactions.pop(cid, None)
        if self._step is not None and self._step.end is None:
            self._open_request(seq, t)

    # -- queries ------------------------------------------------------------------------------
    def turn_node(self, turn: int) -> Node | None:
        for n in reversed(self.turns):
            if n.turn == turn:
                return n
        return None

    def node_at(self, seq: int) -> Node | None:
        """The deepest node whose events contain ``seq`` (a chunk -> its message)."""
        if not 0 <= seq < len(self.turn_of):
            return None
        turn = self.turn_of[seq]
        roots = [self.turn_node(turn)] if turn else self.roots
        best: Node | None = None
        for root in roots:
            if root is None:
                continue
            for n in root.walk():
                end = n.end_seq if n.end_seq is not None else 1 << 62
                if n.kind == "message" and n.first_chunk is not None and n.first_chunk <= seq <= end:
                    return n
                if n.seq <= seq <= end and (best is None or n.depth >= best.depth):
                    best = n
        return best


# each takes (fold, turn, data, seq, time); the files handler takes the event type first
_HANDLERS: dict[str | None, Callable[..., None]] = {
    "turn/end": SpanFold._on_turn_end,
    "step/start": SpanFold._on_step_start,
    "step/end": SpanFold._on_step_end,
    "request/header": SpanFold._on_header,
    "assistant/chunk": SpanFold._on_chunk,
    "assistant/message": SpanFold._on_message,
    "tool/call": SpanFold._on_tool_call,
    "tool/result": SpanFold._on_tool_result,
    "approval/asked": SpanFold._on_approval_asked,
    "approval/decided": SpanFold._on_approval_decided,
    "llm/retry": SpanFold._on_retry,
    "llm/retry-started": SpanFold._on_retry_started,
    "compaction/start": SpanFold._on_compaction,
    "compaction/end": SpanFold._on_compaction,
    "workspace-changes/turn": SpanFold._on_files,
    "workspace-changes/undo": SpanFold._on_files,
}


def fold_spans(events: Any) -> SpanFold:
    fold = SpanFold()
    fold.apply_all(events)
    return fold


def message_label(blocks: Any, width: int = 80) -> str:
    """A one-line gist of message content: its text (or reasoning), then its tool calls."""
    if not isinstance(blocks, list):
        return ""
    text, calls, reasoning = "", [], ""
    for b in blocks:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and not text:
            text = str(b.get("text", ""))
        elif bt == "reasoning" and not reasoning:
            reasoning = str(b.get("text", ""))
        elif bt == "tool-call":
            calls.append(str(b.get("name")))
        elif bt == "tool-result" and not text:
            text = message_label(b.get("content"), width)
    out = text or (f"(thinking) {reasoning}" if reasoning and not calls else "")
    if calls:
        out = (out + " " if out else "") + "→ " + ", ".join(calls)
    out = " ".join(out.split())
    return out[:width]


def _usage_label(u: Usage) -> str:
    return f"usage in {u.input:,} · cached {u.cache_read:,} · out {u.output:,}"


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
