"""``--output-format text|json|stream-json`` and ``--input-format text|stream-json`` for the headless
commands (``run --headless``, ``resume --headless``).

* ``text`` (the default): the final answer on stdout; a turn that did not complete is one line on stderr.
* ``json``: one object per turn: ``{"type": "result", "sessionId", "output", "finishReason", "error"?,
  "usage", "costUsd", "durationMs", "numTurns"}`` (``costUsd`` null when the model has no price).
* ``stream-json``: every session event as it is appended, as dsh's headless agent prints them
  (``{"type": "session_event", "sessionId", "event"}``), then dsh's result object
  (``{"type": "result", "sessionId", "output", "usage"?}``).

``--input-format stream-json`` reads the prompts from stdin, one JSON value per line (a string, or an
object with ``"prompt"``, or ``{"type": "user", "message": {"content": ...}}`` as Claude Code writes
it), and runs them one after another in the same session until stdin ends; each turn gets its result.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from dsh_tui.session.terminal import for_terminal

OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
_USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                        help="headless output: the answer (text), one JSON result object per turn (json), or "
                             "every session event as a JSON line, then the result (stream-json)")
    parser.add_argument("--input-format", choices=INPUT_FORMATS, default="text",
                        help="stream-json: read prompts from stdin, one JSON line each, until it ends")


def _json_line(obj: dict[str, Any]) -> str:
    from dsh_tui.session import jsonutil

    return jsonutil.dumps(obj)


def prompts_from(stream: TextIO) -> Iterator[str]:
    """The prompts of a stream-json input, one per non-blank line; a bad line is a ``UsageError`` naming it."""
    import json

    from dsh_tui.session.errors import UsageError

    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            raise UsageError(f"--input-format stream-json: line {number} is not JSON") from None
        text = _prompt_of(value)
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f'--input-format stream-json: line {number} holds no prompt (a JSON string, '
                             '{"prompt": "..."} or {"type": "user", "message": {"content": ...}})')
        yield text


def _prompt_of(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    if "prompt" in value:
        return value["prompt"]
    message = value.get("message") if value.get("type") == "user" else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content


class HeadlessOutput:
    """Prints one headless command's output in the chosen format. ``attach(host)`` (stream-json) follows
    the session's appends; ``report(result)`` prints a turn's result and returns its exit code."""

    def __init__(self, fmt: str = "text", out: TextIO | None = None, err: TextIO | None = None,
                 describe: Any = None) -> None:
        self.fmt = fmt
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.describe = describe or (lambda reason: reason.get("kind", "?"))
        self._turn_start = 0
        self._started = time.monotonic()
        self._session: Any = None
        self.code = 0  # 1 once any turn did not complete
        self._ended: list[str] = []

    def attach(self, host: Any) -> None:
        self._session = host.session
        self._turn_start = len(host.session.events)
        if self.fmt == "stream-json":
            sid = host.session.header["id"]

            def emit(_session: Any, event: dict[str, Any]) -> None:
                self.out.write(_json_line({"type": "session_event", "sessionId": sid, "event": event}) + "\n")
                self.out.flush()

            host.session.subscribe(emit)

    def report(self, result: Any) -> int:
        """Print ``result`` (a ``TurnResult``); 0 when the turn completed, else 1."""
        reason = result.reason or {}
        completed = reason.get("kind") == "completed"
        if self.fmt == "text":
            if result.answer:
                # the log keeps the text as it came; a terminal gets no control sequence from the model
                print(for_terminal(result.answer), file=self.out, flush=True)
        else:
            events = self._session.events[self._turn_start:] if self._session is not None else []
            usage = _usage(events)
            if self.fmt == "stream-json":
                obj: dict[str, Any] = {"type": "result", "sessionId": result.session_id, "output": result.answer}
                if usage:
                    obj["usage"] = usage
            else:
                obj = {"type": "result", "sessionId": result.session_id, "output": result.answer,
                       "finishReason": reason.get("kind", "none")}
                if reason.get("error"):
                    obj["error"] = reason["error"]
                obj.update(usage=usage, costUsd=_cost(events),
                           durationMs=round((time.monotonic() - self._started) * 1000),
                           numTurns=sum(1 for e in events if e.get("type") == "turn/start"))
            self.out.write(_json_line(obj) + "\n")
            self.out.flush()
        if not completed:
            # said once the session is closed (``finish``): if closing fails, its one line is all
            why = " ".join(for_terminal(str(self.describe(reason))).split())
            self._ended.append(f"dsh-tui: turn ended: {why}")
        if self._session is not None:
            self._turn_start = len(self._session.events)
        self._started = time.monotonic()
        if not completed:
            self.code = 1
        return 0 if completed else 1

    def finish(self) -> int:
        """After the session closed cleanly: the turn-end lines on stderr; the exit code."""
        for line in self._ended:
            print(line, file=self.err, flush=True)
        self._ended.clear()
        return self.code

    def interrupted(self, signum: int) -> None:
        """Signal ``signum`` ended the run: said first by ``finish``; the exit code becomes ``128 + signum``."""
        import signal

        self._ended.insert(0, f"dsh-tui: interrupted by {signal.Signals(signum).name}")
        self.code = 128 + signum


def _usage(events: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for e in events:
        if e.get("type") != "assistant/message":
            continue
        usage = (e.get("data") or {}).get("usage") or {}
        for key in _USAGE_KEYS:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def _cost(events: list[dict[str, Any]]) -> float | None:
    from dsh_tui.session.stats import UsageFold

    fold = UsageFold()
    for e in events:
        fold.apply(e)
    return fold.cost_usd()
