"""Small helpers shared by the built-in tools: errors, JS-compatible number text, spill files, paths."""

from __future__ import annotations

import math
import os
import re
import uuid
from pathlib import Path
from typing import Any

from dsh_tui.tools.base import ToolContext, ToolError

# Retrieval hint dsh's local spill store attaches to every saved result (bash-spill fixture).
SPILL_RETRIEVAL_HINT = "Use read with offset/limit, or grep this path to search within it."

SANDBOX_MODE = "workspace-write"
SANDBOX_DENIED = "[sandbox: file access denied under {mode} mode]"
SANDBOX_ESCALATION_HINT = (
    "[sandbox: escalation available — retry this exact {subject} once with sandbox_permissions "
    "(the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
)


def fs_error(message: str, code: str) -> ToolError:
    """dsh's ``FsError`` (a HarnessError): ``tool/result.error = {name: 'FsError', code}``."""
    return ToolError(message, code=code, name="FsError")


def search_error(message: str, code: str) -> ToolError:
    return ToolError(message, code=code, name="SearchError")


def plain_error(message: str) -> ToolError:
    """A plain JS ``Error``: rendered ``Error: <message>``, no ``error`` info on the row."""
    return ToolError(message)


def aborted_error() -> ToolError:
    return ToolError("tool call aborted", code="ABORTED", name="AbortError")


def js_number(value: Any) -> str:
    """``JSON.stringify`` of a number (5.0 -> ``5``, 1e21 -> ``1e+21``); non-numbers as JSON."""
    import json

    if isinstance(value, bool) or not isinstance(value, int | float):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, float):
        if not math.isfinite(value):
            return "null"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        if "e" in text:
            mant, exp = text.split("e")
            sign = "-" if exp.startswith("-") else "+"
            text = f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"
        return text
    return str(value)


def utf16_len(text: str) -> int:
    """Length in JS UTF-16 code units."""
    n = len(text)
    if text.isascii():
        return n
    return n + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf16_prefix(text: str, units: int) -> str:
    """``text.substring(0, units)`` in JS terms (may split a surrogate pair like JS does)."""
    if text.isascii() or utf16_len(text) == len(text):
        return text[:units]
    raw = text.encode("utf-16-le", "surrogatepass")[: units * 2]
    return raw.decode("utf-16-le", "surrogatepass")


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text, 'utf8')``: lone surrogates count 3 bytes (as U+FFFD)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def head_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """Keep at most ``max_bytes`` UTF-8 bytes of the head without splitting a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text, False
    cut = data[:max_bytes]
    k = len(cut) - 1
    while k > 0 and len(cut) - k < 4 and (cut[k] & 0xC0) == 0x80:
        k -= 1
    if k >= 0 and cut[k] >= 0xC0:
        need = 2 if cut[k] < 0xE0 else 3 if cut[k] < 0xF0 else 4
        if k + need > len(cut):
            cut = cut[:k]
    return cut.decode("utf-8", "surrogatepass"), True


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n")


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_PRIVATE: dict[str, Path] = {}


def private_dir(*parts: str) -> Path:
    """A directory only this user can read: ``$TMPDIR/dsh-tui-<uid>`` (0700), then ``parts`` below it,
    created as needed. Every spill file lives under it (tool results, the bash tool's output).

    ``/tmp`` is shared: a ``dsh-tui-<uid>`` that is a symlink, not a directory or owned by another user
    is not used (another user planted it); a fresh private ``mkdtemp`` directory is used instead, for the
    rest of this process. One of ours with looser permissions is made 0700. Raises ``OSError`` when no
    private directory can be made."""
    base = _PRIVATE.get("base")
    if base is None or not _is_private(base):
        base = _make_private_base()
        _PRIVATE["base"] = base
    path = base
    for part in parts:
        path = path / (_SAFE_NAME.sub("_", part) or "_")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not _is_private(path):
                raise OSError(f"{path} is not a private directory") from None
    return path


def _is_private(path: Path) -> bool:
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _make_private_base() -> Path:
    import stat
    import tempfile

    uid = os.getuid()
    base = Path(tempfile.gettempdir()) / f"dsh-tui-{uid}"
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return Path(tempfile.mkdtemp(prefix=f"dsh-tui-{uid}-"))
    try:
        st = os.lstat(base)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid:
            if st.st_mode & 0o077:
                os.chmod(base, 0o700)
            return base
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix=f"dsh-tui-{uid}-"))  # planted by someone else: not ours to use


def save_spill(ctx: ToolContext, suggested_name: str, content: str | bytes) -> str | None:
    """Save a complete result to ``ctx.spill_dir`` (an agent's is under ``private_dir()``); returns the
    locator (absolute path) or None.

    Best effort, like dsh's spill store: any failure returns None and the caller reports that the
    complete result could not be saved. Files are owner-only (0600).
    """
    if ctx.spill_dir is None:
        return None
    try:
        directory = Path(ctx.spill_dir)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        call = _SAFE_NAME.sub("_", ctx.call_id)[:40] or uuid.uuid4().hex[:12]
        name = _SAFE_NAME.sub("_", suggested_name)
        path = directory / f"{call}-{uuid.uuid4().hex[:8]}-{name}"
        data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
        return str(path)
    except OSError:
        return None
