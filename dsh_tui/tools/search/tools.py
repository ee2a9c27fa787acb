"""The ``glob`` and ``grep`` tool definitions: argument checks, the worker thread, spills."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import plain_error, save_spill
from dsh_tui.tools.schemas import GLOB_MAX_RESULTS, GREP_MAX_MATCHES

from .grep import _grep_blocking, validate_include
from .presentation import (
    _noun,
    format_grep_matches,
    glob_meta,
    grep_meta,
    preview_line,
    render_glob,
    render_grep,
)
from .walk import _aborted, _glob_blocking

SEARCH_TIMEOUT_MS = 30_000


def _path_arg(args: dict[str, Any]) -> str | None:
    raw = args.get("path")
    if raw is not None and (not isinstance(raw, str) or not raw.strip()):
        raise plain_error("path must be a non-empty string when given")
    return raw


async def _watch_cancel(ctx: ToolContext, fn: Callable[..., dict[str, Any]], *args: Any, tool: str) -> dict[str, Any]:
    """Run ``fn(*args, stop)`` (a walk) in a worker thread; ``ctx.cancelled`` sets ``stop`` promptly.

    Cancelled (the tool's timeout, the turn's cancel), the walk is told to stop and what it ends with
    is taken here: never "Task exception was never retrieved" with a traceback on the user's stderr."""
    stop = threading.Event()
    work = asyncio.ensure_future(asyncio.to_thread(fn, *args, stop))
    cancel = asyncio.ensure_future(ctx.cancelled.wait())
    try:
        done, _ = await asyncio.wait({work, cancel}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            return work.result()
        raise _aborted(tool)
    finally:
        cancel.cancel()
        if not work.done():
            stop.set()
            work.add_done_callback(lambda f: None if f.cancelled() else f.exception())  # ends on its own


def glob_tool(
    schema: dict[str, Any], *, max_results: int = GLOB_MAX_RESULTS, timeout_ms: int = SEARCH_TIMEOUT_MS,
    sample_over_cap: bool = False,
) -> ToolDefinition:
    """``sample_over_cap``: dsh's ``sampleOverCapGlobResults`` (an over-cap page spans the top-level entries)."""
    async def execute(args: Any, ctx: ToolContext) -> Any:
        if (
            not isinstance(args, dict)
            or not isinstance(args.get("pattern"), str)
            or not args["pattern"].strip()
        ):
            raise plain_error("pattern must be a non-empty string")
        raw = _path_arg(args)
        if ctx.cancelled.is_set():
            raise _aborted("glob")
        value = await _watch_cancel(ctx, _glob_blocking, ctx, args["pattern"], raw, timeout_ms, tool="glob")
        if len(value["paths"]) > max_results:
            locator = await asyncio.to_thread(save_spill, ctx, "glob-results.txt", "\n".join(value["paths"]))
            if locator:
                value["spill"] = locator
        return value

    return ToolDefinition(
        name="glob",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=lambda args, value: [{"type": "text", "text": render_glob(value, max_results, sample_over_cap)}],
        presentation_meta=lambda args, value: glob_meta(value, max_results, sample_over_cap),
        timeout_ms=timeout_ms,
        is_concurrency_safe=None,
        access="read",
    )


def grep_tool(
    schema: dict[str, Any], *, max_matches: int = GREP_MAX_MATCHES, timeout_ms: int = SEARCH_TIMEOUT_MS
) -> ToolDefinition:
    async def execute(args: Any, ctx: ToolContext) -> Any:
        if (
            not isinstance(args, dict)
            or not isinstance(args.get("pattern"), str)
            or len(args["pattern"]) == 0
        ):
            raise plain_error("pattern must be a non-empty string")
        raw = _path_arg(args)
        include = args.get("include")
        if include is not None:
            if not isinstance(include, str):
                raise plain_error("include must be a non-empty glob when given")
            validate_include(include)
        if ctx.cancelled.is_set():
            raise _aborted("grep")
        value = await _watch_cancel(
            ctx, _grep_blocking, ctx, args["pattern"], raw, include, timeout_ms, tool="grep"
        )
        matches = value["matches"]
        if len(matches) > max_matches:
            full = [{**m, "line": preview_line(m["line"])} for m in matches]
            text = f"Found {len(matches)} {_noun(len(matches))}\n\n{format_grep_matches(full)}"
            locator = await asyncio.to_thread(save_spill, ctx, "grep-results.txt", text)
            if locator:
                value["spill"] = locator
        return value

    return ToolDefinition(
        name="grep",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=lambda args, value: [{"type": "text", "text": render_grep(value, max_matches)}],
        presentation_meta=lambda args, value: grep_meta(value, max_matches),
        timeout_ms=timeout_ms,
        is_concurrency_safe=None,
        access="read",
    )
