"""What ``read``, ``write`` and ``edit`` share: dsh's ``fs-observation-policy`` state (``ctx.state['fs.observed']``:
real path -> ``{"kind": "present", "version"}`` or ``{"kind": "absent"}``), the argument checks and the worker
thread every file operation runs in."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from dsh_tui.tools.base import ToolContext
from dsh_tui.tools.common import fs_error, plain_error
from dsh_tui.tools.paths import Target

STATE_KEY = "fs.observed"
STALE_REMEDY = " — re-read the file, then retry"
NOT_OBSERVED_REMEDY = " — read the file, then retry"


def _observed(ctx: ToolContext) -> dict[str, dict[str, Any]]:
    return ctx.state.setdefault(STATE_KEY, {})


def version_of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _positive_int(value: Any, name: str) -> int:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and isinstance(value, float):
        ok = value == value and value not in (float("inf"), float("-inf")) and value.is_integer()
    if not ok or value < 1:
        raise plain_error(f"{name} must be a positive integer")
    return int(value)


def _file_path(args: Any) -> str:
    file_path = args.get("file_path") if isinstance(args, dict) else None
    if not isinstance(file_path, str) or not file_path.strip():
        raise plain_error("file_path must be a non-empty string")
    return file_path


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


async def _in_thread(verb: str, target: Target, fn: Any, *args: Any) -> Any:
    """Run a file operation in a worker thread; an OS error none of its checks named (permission, a
    name too long, I/O) becomes ``cannot <verb> "<path>": <reason>`` instead of Python's errno text."""
    try:
        return await asyncio.to_thread(fn, *args)
    except PermissionError:
        raise fs_error(
            f'cannot {verb} "{target.display_path}": permission denied', "FS_PERMISSION_DENIED"
        ) from None
    except OSError as err:
        reason = (err.strerror or str(err) or type(err).__name__).lower()
        raise plain_error(f'cannot {verb} "{target.display_path}": {reason}') from None
