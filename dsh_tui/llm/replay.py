"""Replay provider: model scripts derived from a recorded dsh log.

The recorded ``assistant/chunk`` events are grouped by (turn, step) and split at each ``finish`` into
*attempts*, in log order; ``compaction/summary`` rows with ``llmStreamCall: true`` become synthetic stop
streams (the summarizer's call) at their position. Each ``stream()`` call plays the next attempt.

Recorded ``session/title-llm-request`` rows are model-call slots too (their chunks are not logged);
requests of another purpose skip them. ``replay.override.json`` (a list) patches slots by position: ``{"kind": "chunks", "chunks": [...]}``
replaces the attempt; ``{"kind": "throw", "chunks": [...], "message", "code"}`` plays the chunks then
raises ``LlmError``; ``{"kind": "hang", "readyFile": "name"}`` plays the recorded chunks (those before
any finish), creates ``readyFile`` in ``cwd`` and then waits until cancelled.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Self

from dsh_tui.llm.protocol import UNKNOWN, LlmError, ModelInfo, RetryPolicy
from dsh_tui.session import jsonutil, rows


def read_log_events(path: Path | str) -> tuple[dict, list[dict]]:
    """Header and logical events of a raw JSONL log, runtime or projected fixture form.

    A file that is not such a log (not UTF-8 text, say a zstd-compressed one; a line that is not a
    JSON object) raises ``LlmError`` naming the file and the line, never a decoder traceback.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LlmError(
            f"replay log {path} is not UTF-8 JSONL (a compressed log? decompress it first)", UNKNOWN
        ) from None
    except OSError as err:
        raise LlmError(f"cannot read replay log {path}: {err.strerror or err}", UNKNOWN) from None
    lines = [(number, ln) for number, ln in enumerate(text.split("\n"), 1) if ln.strip()]
    if not lines:
        raise LlmError(f"replay log {path} is empty", UNKNOWN)
    header = _log_line(path, *lines[0])
    events: list[dict] = []
    for number, line in lines[1:]:
        obj = _log_line(path, number, line)
        if rows.is_packed_row(obj):
            if "seq0" not in obj:
                obj = {**obj, "seq0": len(events), "time0": 0}
            events.extend(rows.expand_line(obj))
        else:
            obj.setdefault("seq", len(events))
            obj.setdefault("time", 0)
            events.append(obj)
    return header, events


def _log_line(path: Path | str, number: int, line: str) -> dict:
    try:
        obj = jsonutil.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply for Python's parser
        obj = None
    if not isinstance(obj, dict):
        raise LlmError(
            f"replay log {path}: line {number} is not a JSON object (not a dsh session log?)", UNKNOWN
        )
    return obj


def attempts_from_events(events: list[dict]) -> list[dict]:
    """``[{"turn", "step", "chunks", "finished"}]`` in log order (synthetic summarizer streams included)."""
    out: list[dict] = []
    current: dict | None = None
    for ev in events:
        t = ev.get("type")
        if t == "assistant/chunk":
            d = ev["data"]
            key = (d.get("turn"), d.get("step"))
            if current is None or current["key"] != key or current["finished"]:
                current = {"key": key, "turn": key[0], "step": key[1], "chunks": [], "finished": False}
                out.append(current)
            current["chunks"].append(d["chunk"])
            if d["chunk"].get("type") == "finish":
                current["finished"] = True
        elif t == "compaction/summary" and ev["data"].get("llmStreamCall"):
            d = ev["data"]
            blocks = d.get("rawOutput") or d.get("summary") or []
            chunks: list[dict] = []
            for i, b in enumerate(blocks):
                chunks.append({"type": "block-start", "index": i, "blockType": b.get("type", "text")})
                if b.get("type", "text") in ("text", "reasoning"):
                    chunks.append(
                        {"type": f"{b.get('type', 'text')}-delta", "index": i, "text": b.get("text", "")}
                    )
                chunks.append({"type": "block-end", "index": i, "block": b})
            if d.get("usage"):
                chunks.append({"type": "usage", "usage": d["usage"]})
            chunks.append({"type": "finish", "reason": {"kind": "stop"}})
            out.append(
                {
                    "key": ("compaction", d.get("compactionId")),
                    "turn": None,
                    "step": None,
                    "chunks": chunks,
                    "finished": True,
                    "purpose": "compaction",
                }
            )
            current = None
        elif t == "session/title-llm-request":
            out.append(
                {
                    "key": ("title", ev.get("seq")),
                    "turn": None,
                    "step": None,
                    "chunks": None,
                    "finished": False,
                    "purpose": "session-title",
                }
            )
        elif t in ("step/end", "turn/end"):
            current = None
    for a in out:
        a.setdefault("purpose", "turn")
    return out


class ReplayProvider:
    def __init__(
        self,
        attempts: list[dict],
        *,
        name: str = "replay",
        override: list[dict] | None = None,
        cwd: Path | str | None = None,
        context_window: int | None = None,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        self.name = name
        self.attempts = attempts
        self.override = list(override or [])
        self.cwd = Path(cwd) if cwd else None
        self.context_window = context_window
        self._retry_policy = retry_policy or RetryPolicy()
        self.requests: list[dict] = []
        self.served = 0
        self._title_cursor = 0
        # a scenario child whose last turn reply waits until this root is idle (see ScenarioReplay)
        self._hold_last: ScenarioReplay | None = None

    @classmethod
    def from_file(
        cls, path: Path | str, *, override: Path | str | None = None, **kwargs: Any
    ) -> Self:
        header, events = read_log_events(path)
        ov = None
        candidate = Path(override) if override else Path(path).with_name("replay.override.json")
        if candidate.is_file():
            ov = json.loads(candidate.read_text(encoding="utf-8"))
        kwargs.setdefault("name", cls.recorded_route(events)[0] or "replay")
        attempts = attempts_from_events(events)
        cwd = kwargs.get("cwd")
        if cwd is not None:  # realize the fixtures' {{cwd}} placeholder in the model's text and arguments
            attempts = json.loads(json.dumps(attempts).replace("{{cwd}}", str(cwd)))
            ov = json.loads(json.dumps(ov).replace("{{cwd}}", str(cwd))) if ov is not None else None
        return cls(attempts, override=ov, **kwargs)

    @staticmethod
    def recorded_route(events: list[dict]) -> tuple[str | None, str | None]:
        for ev in events:
            if ev.get("type") == "request/header":
                cfg = ev["data"]["header"].get("config") or {}
                return cfg.get("provider"), cfg.get("model")
        return None, None

    def resolve_model(self, model: str) -> ModelInfo:
        from dsh_tui.llm.registry import DEEPSEEK_IMAGE_MODELS

        # a recording's DeepSeek vision model takes images, as in dsh's catalog (read_image replays)
        modalities = ("text", "image") if model in DEEPSEEK_IMAGE_MODELS else ("text",)
        return ModelInfo(context_window=self.context_window, input_modalities=modalities)

    def retry_policy(self) -> RetryPolicy:
        return self._retry_policy

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        hold = self._hold_last
        if hold is not None and hold.root_idle is not None and (request.get("purpose") or "turn") \
                == "turn" and self.served >= sum(1 for a in self.attempts if a["purpose"] == "turn") - 1:
            await hold.root_idle()
        self.requests.append(request)
        purpose = request.get("purpose") or "turn"
        if purpose == "session-title":
            # A title request runs beside the turn, in any order with it: title slots have their own
            # cursor and never move the turn/compaction one.
            i = self._title_cursor
            while i < len(self.attempts) and self.attempts[i]["purpose"] != purpose:
                i += 1
            self._title_cursor = i + 1
        else:
            i = self.served
            # Model-call slots of another purpose (e.g. session titles we never request) are skipped.
            while i < len(self.attempts) and self.attempts[i]["purpose"] != purpose:
                i += 1
            self.served = i + 1
        recorded = self.attempts[i]["chunks"] if i < len(self.attempts) else None
        patch = self.override[i] if i < len(self.override) else None
        if recorded is not None and FROM_REQUEST in json.dumps(recorded):
            recorded = resolve_from_request(recorded, request)
        if patch is not None and FROM_REQUEST in json.dumps(patch):
            patch = resolve_from_request(patch, request)
        if patch is None:
            if recorded is None:
                raise LlmError(f"replay script exhausted after {len(self.attempts)} model calls", UNKNOWN)
            for chunk in recorded:
                yield chunk
            return
        kind = patch.get("kind")
        if kind == "chunks":
            for chunk in patch.get("chunks") or []:
                yield chunk
        elif kind == "throw":
            for chunk in patch.get("chunks") or []:
                yield chunk
            raise LlmError(patch.get("message", "replayed provider error"), patch.get("code", UNKNOWN))
        elif kind == "hang":
            for chunk in recorded or []:
                if chunk.get("type") == "finish":
                    break
                yield chunk
            ready = patch.get("readyFile")
            if ready and self.cwd is not None:
                (self.cwd / ready).write_text("ready\n", encoding="utf-8")
            await asyncio.Event().wait()
        else:
            raise LlmError(f"unknown replay override kind {kind!r}", UNKNOWN)


FROM_REQUEST = "{{fromRequest:"


def _string_leaves(value: Any) -> list[str]:
    """Every string in ``value`` (mappings and sequences of any kind: a request's messages may be frozen)."""
    from collections.abc import Mapping, Sequence

    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _string_leaves(v)]
    if isinstance(value, Sequence):
        return [s for v in value for s in _string_leaves(v)]
    return []


def _resolve_text(text: str, corpus: str) -> str:
    out, pos = [], 0
    while (start := text.find(FROM_REQUEST, pos)) >= 0:
        begin = start + len(FROM_REQUEST)
        close = text.find("}}", begin)
        if close < 0:
            raise LlmError(f"replay: unterminated fromRequest placeholder in {text!r}", UNKNOWN)
        end = close
        while end < len(text) and text[end] == "}":
            end += 1  # the last two braces of a run of them close the placeholder
        pattern = text[begin:end - 2]
        try:
            matches = list(re.finditer(pattern, corpus))
        except re.error as exc:
            raise LlmError(f"replay: fromRequest has an invalid pattern {pattern!r}: {exc}", UNKNOWN) from exc
        if not matches:
            raise LlmError(f"replay: fromRequest pattern {pattern!r} matches nothing in the request", UNKNOWN)
        last = matches[-1]
        out += [text[pos:start], last.group(1) if last.re.groups else last.group(0)]
        pos = end
    return "".join(out) + text[pos:]


def resolve_from_request(entry: Any, request: dict[str, Any]) -> Any:
    """dsh-llm-replay's ``{{fromRequest:<regex>}}``: a scripted string's placeholder becomes the pattern's last
    match (its first group, if it has one) in the live request's messages (every string leaf, joined by
    newlines), for values no script can know beforehand, such as a goal id the model echoes back."""
    corpus = "\n".join(_string_leaves(request.get("messages") or []))

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _resolve_text(value, corpus) if FROM_REQUEST in value else value
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(entry)


def scenario_logs(directory: Path | str) -> tuple[Path, list[Path]]:
    """A recorded scenario directory: the root ``session.jsonl`` and the children's ``session.1.jsonl``,
    ``session.2.jsonl``, ... in creation order. A directory with only ``replay.override.json`` (dsh's authored
    scenarios, e.g. headless goal-tools) is one too: its root ``session.jsonl`` is then absent and the override
    is the whole model side."""
    d = Path(directory)
    root = d / "session.jsonl"
    if not root.is_file() and not (d / "replay.override.json").is_file():
        raise LlmError(f"replay directory {d} has no session.jsonl", UNKNOWN)
    children = []
    n = 1
    while (d / f"session.{n}.jsonl").is_file():
        children.append(d / f"session.{n}.jsonl")
        n += 1
    return root, children


def _own_events(events: list[dict]) -> list[dict]:
    """A child's events after its seed (a fork's parent prefix, a continuable descriptor)."""
    for i, ev in enumerate(events):
        if ev.get("type") == "session/end-seed":
            return events[i + 1:]
    return events


def _settlement_starts_a_turn(events: list[dict]) -> bool:
    """Whether a subagent settlement notice in this root recording started a turn of its own (the parent
    was idle when it arrived) rather than entering a running one."""
    last = None
    for e in events:
        t = e.get("type")
        if t in ("turn/start", "turn/end"):
            last = t
        elif t == "user/message":
            src = (e.get("data") or {}).get("source")
            if isinstance(src, dict) and src.get("kind") == "subagent-settled":
                return last == "turn/start" and _first_message_of_turn(events, e)
    return False


def _first_message_of_turn(events: list[dict], message: dict) -> bool:
    """``message`` is the first user/message after the latest turn/start before it (the turn's opener)."""
    opener = None
    for e in events:
        if e is message:
            return opener is None
        t = e.get("type")
        if t == "turn/start":
            opener = None
        elif t == "user/message" and opener is None:
            src = (e.get("data") or {}).get("source")
            if not (isinstance(src, dict) and src.get("kind") == "subagent-settled"):
                opener = e
    return False


class ScenarioReplay(ReplayProvider):
    """The root's provider for a recorded scenario directory (``run --replay DIR``): each subagent child
    (``child_provider``, in creation order across the whole tree) replays its own recording.
    ``replay.override.json`` patches the root only. ``children`` lists the child ids in creation order."""

    def __init__(self, attempts: list[dict], **kwargs: Any) -> None:
        super().__init__(attempts, **kwargs)
        self._child_logs: list[Path] = []
        self._child_ids: list[str] = []  # children's ids in creation order across the whole tree
        self._notices_start_turns = False
        # set by the runner: returns once the root is idle
        self.root_idle: Callable[[], Awaitable[None]] | None = None

    @classmethod
    def from_dir(cls, directory: Path | str, *, cwd: Path | str | None = None, **kwargs: Any) -> Self:
        root, child_logs = scenario_logs(directory)
        if root.is_file():
            provider = cls.from_file(root, cwd=cwd, **kwargs)
            provider._notices_start_turns = _settlement_starts_a_turn(read_log_events(root)[1])
        else:  # authored: the override alone scripts every model call
            text = (Path(directory) / "replay.override.json").read_text(encoding="utf-8")
            if cwd is not None:
                text = text.replace("{{cwd}}", json.dumps(str(cwd))[1:-1])
            try:
                override = json.loads(text)
            except ValueError:
                raise LlmError(f"replay override {Path(directory) / 'replay.override.json'} is not JSON",
                               UNKNOWN) from None
            provider = cls([], override=override, cwd=cwd, **kwargs)
        provider._child_logs = child_logs
        return provider

    def child_provider(self, child_id: str) -> ReplayProvider:
        i = len(self._child_ids)
        self._child_ids.append(child_id)
        if i >= len(self._child_logs):
            return _ScenarioChild([], root=self, name=self.name, cwd=self.cwd)
        _, events = read_log_events(self._child_logs[i])
        attempts = attempts_from_events(_own_events(events))
        if self.cwd is not None:
            attempts = json.loads(json.dumps(attempts).replace("{{cwd}}", str(self.cwd)))
        child = _ScenarioChild(attempts, root=self, name=self.recorded_route(events)[0] or self.name, cwd=self.cwd,
                               context_window=self.context_window, retry_policy=self._retry_policy)
        continuable = any(e["type"] == "subagent/descriptor" and (e.get("data") or {}).get("mode") == "continuable"
                          for e in events)
        if continuable and self._notices_start_turns:
            # dsh recorded this background child settling while its parent was idle (the notice started
            # a turn): its last reply waits for the root to be idle, so the replay takes the same path
            # whatever the machine's timing (else the notice may land in the running turn as a steer)
            child._hold_last = self
        return child

    @property
    def children(self) -> list[str]:
        return list(self._child_ids)


class _ScenarioChild(ReplayProvider):
    """A subagent child of a :class:`ScenarioReplay`: its own children (grandchildren) continue the root's
    creation order."""

    def __init__(self, attempts: list[dict], *, root: ScenarioReplay, **kwargs: Any) -> None:
        super().__init__(attempts, **kwargs)
        self._root = root

    def child_provider(self, child_id: str) -> ReplayProvider:
        return self._root.child_provider(child_id)


def replay_provider(replay: str, cwd: Any, model: str | None) -> tuple[ReplayProvider, str]:
    """The provider replaying a recorded dsh log (a file) or scenario (a directory: each subagent child replays
    its own ``session.N.jsonl``), its ``{{cwd}}`` placeholders made ``cwd``; and the model it recorded."""
    from pathlib import Path

    from dsh_tui.session.errors import DshError

    path = Path(replay)
    provider: ReplayProvider
    if path.is_dir():
        provider = ScenarioReplay.from_dir(path, cwd=cwd)
        root = path / "session.jsonl"
        events = read_log_events(root)[1] if root.is_file() else []
    elif not path.is_file():
        raise DshError(f"replay log not found: {path}")
    else:
        provider = ReplayProvider.from_file(path, cwd=cwd)
        events = read_log_events(path)[1]
    name, recorded = ReplayProvider.recorded_route(events)
    if name is None and recorded is None:
        # no request/header recorded (an authored scenario): replay in place of the configured default route, as
        # dsh's llm-replay plugin does, so the log names the route a live run would have used
        from dsh_tui.config import load_settings
        from dsh_tui.llm import registry

        try:
            name, recorded = registry.default_route(load_settings())
        except DshError:
            name, recorded = None, None
        provider.name = name or provider.name
    return provider, model or recorded or "replay"
