"""The shell-hook protocol Claude Code and Codex hooks speak, as dsh's ``hook-protocol`` package runs it.

A hook is a shell command. It gets one JSON object on stdin (Claude Code: followed by a newline; Codex:
without), runs in the session's working directory, and answers by its exit code and output:

- exit 2 blocks (``decision = "block"``), its stderr the reason;
- exit 0 with a JSON object on stdout: ``continue``/``stopReason``, ``systemMessage``, a top-level
  ``decision`` (``approve``/``block``) and ``reason``, and ``hookSpecificOutput`` (only when its
  ``hookEventName`` is the event that ran it) with ``permissionDecision`` (``allow``/``deny``/``ask``),
  ``permissionDecisionReason``, ``additionalContext``, ``updatedInput``;
- anything else passes.

Several hooks on one point merge: the strongest decision wins (deny/block > ask > allow/approve), with the
reasons of that rank joined; the first ``continue: false`` stops; additional contexts are all kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import time
from dataclasses import dataclass, field
from typing import Any

BLOCKING_EXIT_CODE = 2
DEFAULT_HOOK_TIMEOUT_MS = 600_000
DEFAULT_STDERR_SUMMARY_MAX_CHARS = 500
MAX_OUTPUT_BYTES = 1 << 20  # what a hook may print before the rest is dropped
_CLAUDE_LITERAL = re.compile(r"^[A-Za-z0-9_|]+$")


@dataclass
class CommandHook:
    command: str
    timeout_sec: float | None = None


@dataclass
class MatcherGroup:
    hooks: list[CommandHook]
    matcher: str | None = None


@dataclass
class HookOutput:
    exit_code: int | None
    stderr: str
    stdout: str
    continue_: bool | None = None
    stop_reason: str | None = None
    decision: str | None = None  # approve | allow | block | deny | ask
    reason: str | None = None
    hook_event_name: str | None = None
    additional_context: str | None = None
    system_message: str | None = None
    updated_input: dict[str, Any] | None = None


@dataclass
class Merged:
    decision: str = "none"  # allow | ask | deny | none
    reason: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    additional_context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)


def _is_match_all(matcher: str | None) -> bool:
    return matcher is None or matcher in ("", "*")


def _compile(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def matcher_diagnostic(matcher: str | None, mode: str) -> str | None:
    """Why ``matcher`` can never match (an invalid regex), or None."""
    if _is_match_all(matcher):
        return None
    assert matcher is not None
    if mode == "claude-code" and _CLAUDE_LITERAL.match(matcher):
        return None
    return None if _compile(matcher) is not None else f"invalid {mode} regex matcher {json.dumps(matcher)}"


def matches(matcher: str | None, query: str, mode: str) -> bool:
    """dsh's rule: empty or ``*`` matches all; Claude Code's ``A|B`` of plain names matches exactly one of
    them; anything else is a regex searched in ``query``."""
    if _is_match_all(matcher):
        return True
    assert matcher is not None
    if mode == "claude-code" and _CLAUDE_LITERAL.match(matcher):
        return query in matcher.split("|")
    pattern = _compile(matcher)
    return pattern is not None and pattern.search(query) is not None


def parse_hook_output(exit_code: int | None, stdout: str, stderr: str, expected_event: str | None = None) -> HookOutput:
    out = HookOutput(exit_code, stderr.strip(), stdout.strip())
    if exit_code == BLOCKING_EXIT_CODE:
        out.decision = "block"
        if out.stderr:
            out.reason = out.stderr
    if exit_code == 0 and out.stdout.startswith("{"):
        try:
            parsed = json.loads(out.stdout)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            _apply_structured(out, parsed, expected_event)
    return out


def _str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _apply_structured(out: HookOutput, parsed: dict[str, Any], expected_event: str | None) -> None:
    if isinstance(parsed.get("continue"), bool):
        out.continue_ = parsed["continue"]
    out.stop_reason = _str(parsed, "stopReason") or out.stop_reason
    out.system_message = _str(parsed, "systemMessage") or out.system_message
    if _str(parsed, "decision") in ("approve", "block"):
        out.decision = parsed["decision"]
    if _str(parsed, "reason") is not None:
        out.reason = parsed["reason"]
    hso = parsed.get("hookSpecificOutput")
    if not isinstance(hso, dict):
        return
    event = _str(hso, "hookEventName")
    if event is not None:
        out.hook_event_name = event
    if expected_event is not None and event != expected_event:
        return
    if _str(hso, "permissionDecision") in ("allow", "deny", "ask"):
        out.decision = hso["permissionDecision"]
    if _str(hso, "permissionDecisionReason") is not None:
        out.reason = hso["permissionDecisionReason"]
    if _str(hso, "additionalContext") is not None:
        out.additional_context = hso["additionalContext"]
    if isinstance(hso.get("updatedInput"), dict):
        out.updated_input = hso["updatedInput"]


_RANK = {"deny": 3, "block": 3, "ask": 2, "approve": 1, "allow": 1}
_DECISION = {3: "deny", 2: "ask", 1: "allow", 0: "none"}


def merge(outputs: list[HookOutput]) -> Merged:
    top = 0
    reasons: dict[int, list[str]] = {}
    merged = Merged()
    for out in outputs:
        rank = _RANK.get(out.decision or "", 0)
        top = max(top, rank)
        if rank in (2, 3) and out.reason:
            reasons.setdefault(rank, []).append(out.reason)
        if out.continue_ is False and not merged.stop:
            merged.stop = True
            merged.stop_reason = out.stop_reason
        if out.additional_context:
            merged.additional_context.append(out.additional_context)
        if out.system_message:
            merged.system_messages.append(out.system_message)
    merged.decision = _DECISION[top]
    if reasons.get(top):
        merged.reason = "\n\n".join(reasons[top])
    return merged


def summarize_stderr(stderr: str, max_chars: int) -> str | None:
    text = stderr.strip()
    if not text:
        return None
    return text[:max_chars] + "…" if len(text) > max_chars else text


async def _read_capped(stream: asyncio.StreamReader) -> bytes:
    """Everything up to EOF, keeping the first ``MAX_OUTPUT_BYTES`` (the rest is read and dropped)."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < MAX_OUTPUT_BYTES:
            kept += chunk[: MAX_OUTPUT_BYTES - len(kept)]
    return bytes(kept)


async def run_hook(hook: CommandHook, payload: Any, *, cwd: str | None, env: dict[str, str],
                   trailing_newline: bool, default_timeout_ms: float, expected_event: str | None,
                   cancelled: asyncio.Event | None = None) -> tuple[HookOutput, int]:
    """Run one hook command (``bash -c``) with ``payload`` on stdin; its output and how long it took (ms).
    A hook that outlives its timeout (or a cancelled turn) is killed with its whole process group."""
    from dsh_tui.tools.procs import killpg, release, track

    started = time.monotonic()
    timeout = hook.timeout_sec if hook.timeout_sec is not None else default_timeout_ms / 1000
    stdin = (json.dumps(payload, ensure_ascii=False) + ("\n" if trailing_newline else "")).encode()
    try:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", hook.command, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except OSError as err:
        return parse_hook_output(None, "", str(err)), int((time.monotonic() - started) * 1000)
    pgid = track(proc.pid)

    async def talk() -> tuple[bytes, bytes]:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()
        out, err = await asyncio.gather(_read_capped(proc.stdout), _read_capped(proc.stderr))
        await proc.wait()
        return out, err

    work = asyncio.ensure_future(talk())
    waits: set[asyncio.Future[Any]] = {work}
    stop = asyncio.ensure_future(cancelled.wait()) if cancelled is not None else None
    if stop is not None:
        waits.add(stop)
    try:
        done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            out, errout = work.result()
            output = parse_hook_output(proc.returncode, out.decode("utf-8", "replace"),
                                       errout.decode("utf-8", "replace"), expected_event)
        else:
            killpg(pgid, signal.SIGKILL)
            work.cancel()
            why = "cancelled" if stop is not None and stop in done else f"timed out after {timeout:g}s"
            output = parse_hook_output(None, "", f"hook {why}: {hook.command}")
    finally:
        if stop is not None:
            stop.cancel()
        if proc.returncode is None:
            killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(proc.wait(), 1.0)
        release(pgid)
    return output, int((time.monotonic() - started) * 1000)
