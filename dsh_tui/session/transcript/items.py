"""Transcript items: the rows the transcript fold produces, the plan strip, and their wording."""

from __future__ import annotations

from typing import Any

ADD, UPDATE, REMOVE, PLAN = "add", "update", "remove", "plan"

BASH_TOOLS = frozenset({"bash", "shell", "terminal", "exec", "exec_command"})
READ_TOOLS = frozenset({"read", "read_file", "read_image", "view"})
EDIT_TOOLS = frozenset({"write", "edit", "multi_edit", "multiedit", "apply_patch", "str_replace"})
SEARCH_TOOLS = frozenset({"glob", "grep", "ls", "list", "find", "search"})
TODO_TOOLS = frozenset({"todo_write", "todowrite", "TodoWrite"})

def tool_kind(name: str) -> str:
    """bash / read / edit / search / generic: decides how a tool card is drawn."""
    if name in BASH_TOOLS:
        return "bash"
    if name in READ_TOOLS:
        return "read"
    if name in EDIT_TOOLS:
        return "edit"
    if name in SEARCH_TOOLS:
        return "search"
    if name in TODO_TOOLS:
        return "todo"
    return "generic"


class _Record:
    """A plain slotted record (hand-written rather than ``@dataclass``: creating ten dataclasses cost
    ~12 ms of every chat start-up). ``FIELDS`` names every field in constructor order."""

    __slots__ = ()
    FIELDS: tuple[str, ...] = ()

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({inner})"


class Item(_Record):
    """One transcript row. ``version`` grows on each change: renderers cache on (key, version, width).

    Items compare by identity (a row is one live object)."""

    __slots__ = ("key", "kind", "seq", "turn", "version")
    FIELDS: tuple[str, ...] = __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0) -> None:
        self.key = key
        self.kind = kind
        self.seq = seq
        self.turn = turn
        self.version = version

    def touch(self) -> None:
        self.version += 1


class UserItem(Item):
    __slots__ = ("text",)
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, text: str = "") -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.text = text


class ContextItem(Item):
    __slots__ = ("producer", "text")
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, producer: str = "",
                 text: str = "") -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.producer = producer
        self.text = text


class StreamItem(Item):
    """Assistant text (kind "assistant") or reasoning (kind "thinking").

    ``state`` is "streaming", "final" or "interrupted" (cancelled mid-stream; the prefix stays).
    """

    __slots__ = ("state", "step", "parts", "_joined")
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, state: str = "streaming",
                 step: int = 0, parts: list[str] | None = None, _joined: str | None = None) -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.state = state
        self.step = step
        self.parts = [] if parts is None else parts
        self._joined = _joined

    @property
    def text(self) -> str:
        if self._joined is None or len(self.parts) != 1:
            self._joined = "".join(self.parts)
            self.parts[:] = [self._joined] if self._joined else []
        return self._joined

    def append(self, text: str) -> None:
        self.parts.append(text)
        self._joined = None

    def set_text(self, text: str) -> None:
        self.parts[:] = [text] if text else []
        self._joined = text

    def summary(self) -> str:
        """Latest non-empty line: the one-line summary of a collapsed Thinking row."""
        for line in reversed(self.text.splitlines()):
            if line.strip():
                return line.strip()
        return ""


class ToolItem(Item):
    """A tool card. ``state``: requested, running, ok, error, aborted, unknown.

    ``workspace``: the session's cwd (cards show paths relative to it); ``hunk_starts``: for a write or
    edit, the first line number of each recorded diff hunk in the old file where the session's earlier
    reads and writes of that file tell it (None where they do not: dsh records no line numbers)."""

    __slots__ = ("call_id", "name", "tool", "step", "arguments", "state", "result", "error_code", "meta",
                 "approval", "approval_reason", "workspace", "hunk_starts")
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, call_id: str = "",
                 name: str = "", tool: str = "generic", step: int = 0, arguments: str = "",
                 state: str = "requested", result: str = "", error_code: str | None = None, meta: Any = None,
                 approval: str | None = None, approval_reason: str | None = None, workspace: str = "",
                 hunk_starts: list[int | None] | None = None) -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.call_id = call_id
        self.name = name
        self.tool = tool  # tool kind
        self.step = step
        self.arguments = arguments
        self.state = state
        self.result = result
        self.error_code = error_code
        self.meta = meta
        self.approval = approval  # asked / allowed-once / rejected / cancelled / unavailable
        self.approval_reason = approval_reason
        self.workspace = workspace
        self.hunk_starts = hunk_starts

    def args(self) -> dict[str, Any]:
        from dsh_tui.session.jsonutil import loads_bounded  # only a card that shows its arguments needs it

        try:
            value = loads_bounded(self.arguments) if self.arguments else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


class FooterItem(Item):
    """End of a turn: timing, tokens and, for anything but completed, the reason in words."""

    __slots__ = ("reason", "reason_text", "duration_ms", "ttft_ms", "tokens_per_s", "input_tokens",
                 "output_tokens", "cache_read_tokens", "files", "files_total", "undone")
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, reason: str = "completed",
                 reason_text: str = "", duration_ms: int | None = None, ttft_ms: int | None = None,
                 tokens_per_s: float | None = None, input_tokens: int = 0, output_tokens: int = 0,
                 cache_read_tokens: int = 0) -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.reason = reason
        self.reason_text = reason_text
        self.duration_ms = duration_ms
        self.ttft_ms = ttft_ms
        self.tokens_per_s = tokens_per_s
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cache_read_tokens = cache_read_tokens
        self.files: list[dict[str, Any]] = []  # what the turn changed (``workspace-changes/turn``)
        self.files_total = 0
        self.undone = False  # put back since (``workspace-changes/undo``)


class RetryItem(Item):
    __slots__ = ("attempt", "max_attempts", "delay_ms", "code", "message", "started")
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, attempt: int = 0,
                 max_attempts: int | None = None, delay_ms: int = 0, code: str = "", message: str = "",
                 started: bool = False) -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.delay_ms = delay_ms
        self.code = code
        self.message = message
        self.started = started

    def describe(self) -> str:
        of = f"/{self.max_attempts}" if self.max_attempts else ""
        delay = _seconds(self.delay_ms)
        why = f" after {self.code}" if self.code else ""
        message = " ".join(str(self.message or "").split())
        if message:
            message = message if len(message) <= 160 else message[:159] + "…"
            why += f": {message}" if why else f" after: {message}"
        return f"Retrying model request ({self.attempt}{of}) in {delay}{why}"


class CompactionItem(Item):
    __slots__ = ("state", "messages", "tokens", "summary", "error")
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, state: str = "running",
                 messages: int = 0, tokens: int = 0, summary: str = "", error: str = "") -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.state = state  # running / done / error
        self.messages = messages
        self.tokens = tokens
        self.summary = summary
        self.error = error

    def describe(self) -> str:
        if self.state == "running":
            return "Compacting history…"
        if self.state == "error":
            return f"Compaction failed: {self.error}"
        noun = "message" if self.messages == 1 else "messages"
        return f"Compacted {self.messages} {noun} (~{self.tokens:,} tokens)"


class DividerItem(Item):
    __slots__ = ("text",)
    FIELDS = Item.FIELDS + __slots__

    def __init__(self, key: str, kind: str, seq: int, turn: int = 0, version: int = 0, text: str = "") -> None:
        Item.__init__(self, key, kind, seq, turn, version)
        self.text = text


class PlanState(_Record):
    """The plan strip above the composer (last ``todo/write`` wins). Compares by value."""

    __slots__ = ("todos",)
    FIELDS = __slots__
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, todos: list[dict[str, Any]] | None = None) -> None:
        self.todos = [] if todos is None else todos

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.todos == other.todos  # type: ignore[attr-defined]

    def counts(self) -> tuple[int, int, int]:
        done = sum(1 for t in self.todos if t.get("status") == "completed")
        doing = sum(1 for t in self.todos if t.get("status") == "in_progress")
        return done, doing, len(self.todos) - done - doing

    def describe(self) -> str:
        done, doing, pending = self.counts()
        return f"{done} completed · {doing} in progress · {pending} pending"


Change = tuple[str, Any]


def _seconds(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    return f"{ms / 1000:.0f} s" if ms % 1000 == 0 else f"{ms / 1000:.1f} s"


def reason_text(reason: Any) -> str:
    """A ``TurnEndReason`` explained in words ("" for completed)."""
    if not isinstance(reason, dict):
        return "Ended"
    kind = reason.get("kind")
    if kind == "completed":
        return ""
    if kind == "aborted":
        cause = (reason.get("reason") or {}).get("kind")
        stopped: dict[str | None, str] = {
            "user": "Stopped by you",
            "parent": "Stopped by the parent agent",
            "disposed": "Stopped: the agent was shut down",
            "legacy": "Stopped",
        }
        return stopped.get(cause, f"Stopped by a hook: {(reason.get('reason') or {}).get('reason', '')}".rstrip(": "))
    if kind == "blocked":
        return "Blocked: a hook or policy stopped this turn"
    if kind == "error":
        err = reason.get("error") or {}
        return f"Failed: {err.get('code', 'UNKNOWN')}: {err.get('message', '')}".rstrip(": ")
    if kind == "max-tokens":
        return "Output limit reached"
    if kind == "interrupted":
        return "Interrupted by a crash"
    return f"Ended: {kind}"


def context_producer(source: dict[str, Any]) -> str:
    kind = source.get("kind", "?")
    if kind == "agent-instructions":  # "instructions · AGENTS.md, nested/AGENTS.md": the files it names
        paths = [c["path"] for c in source.get("changes") or []
                 if isinstance(c, dict) and isinstance(c.get("path"), str)]
        return "instructions · " + ", ".join(dict.fromkeys(paths)) if paths else "instructions"
    if kind == "goal":  # dsh's goal rounds (dsh_tui/extensions/goals)
        return f"goal · round {source.get('round')}"
    if kind == "plugin":
        plugin = str(source.get("plugin", "plugin"))
        form = source.get("form")
        short = plugin.rsplit("/", 1)[-1]
        return f"{short} ({form})" if isinstance(form, str) else short
    return str(kind)
