"""The ``read``, ``write`` and ``edit`` tools (dsh ``tool-fs`` + ``fs-local`` + ``fs-observation-policy``).

Model-visible strings are dsh's, exactly (docs/tools.md). The read-before-write policy
lives in ``ctx.state['fs.observed']``: real path -> ``{"kind": "present", "version"}`` or
``{"kind": "absent"}``. A read (or a successful write/edit) records the file's version
(``dev:ino:size:mtimeNs:ctimeNs``, as dsh); ``write`` over an unseen existing file and ``edit`` of
an unseen file are refused, and both refuse when the file changed since it was seen.
All file work runs in a worker thread; the event loop never blocks.

Over 500 lines for a reason: ``read``, ``write`` and ``edit`` are one dsh package (``tool-fs``) sharing the
observation policy and the diff helpers.
"""

from __future__ import annotations

import asyncio
import codecs
import difflib
import os
import stat as stat_mod
from typing import Any

from dsh_tui.store.fsio import write_atomic
from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import (
    aborted_error,
    fs_error,
    normalize_newlines,
    plain_error,
    utf8_len,
    utf16_len,
    utf16_prefix,
)
from dsh_tui.tools.paths import Target, resolve_target

READ_LIMIT = 2000
READ_MAX_LINE_LENGTH = 2000
READ_MAX_BYTES = 50 * 1024
BINARY_SAMPLE_BYTES = 8192
READ_CHUNK_BYTES = 1 << 20
DIFF_BASIS_MAX_BYTES = 16 * 1024 * 1024
DIFF_CONTEXT = 3

STATE_KEY = "fs.observed"

LANG_BY_EXTENSION = {
    "ts": "ts", "tsx": "tsx", "mts": "ts", "cts": "ts",
    "js": "js", "jsx": "jsx", "mjs": "js", "cjs": "js",
    "json": "json", "jsonc": "json",
    "py": "py", "rb": "rb", "go": "go", "rs": "rs", "java": "java",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp", "cxx": "cpp",
    "cs": "cs", "kt": "kotlin", "swift": "swift", "php": "php",
    "sh": "sh", "bash": "sh", "zsh": "sh",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini",
    "md": "md", "markdown": "md", "mdx": "mdx",
    "html": "html", "htm": "html", "css": "css", "scss": "scss", "less": "less",
    "sql": "sql", "xml": "xml", "lua": "lua",
}  # fmt: skip


# --------------------------------------------------------------------------- observation state


def _observed(ctx: ToolContext) -> dict[str, dict[str, Any]]:
    return ctx.state.setdefault(STATE_KEY, {})


def version_of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def lang_from_path(path: str) -> str | None:
    base = path[max(path.rfind("/"), path.rfind("\\")) + 1 :]
    dot = base.rfind(".")
    if dot <= 0:
        return None
    return LANG_BY_EXTENSION.get(base[dot + 1 :].lower())


# --------------------------------------------------------------------------- read


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


def parse_read_args(args: Any, max_limit: int = READ_LIMIT) -> tuple[str, int, int]:
    file_path = _file_path(args)
    offset = 1 if args.get("offset") is None else _positive_int(args["offset"], "offset")
    limit = max_limit if args.get("limit") is None else _positive_int(args["limit"], "limit")
    if limit > max_limit:
        raise plain_error(f"limit must be less than or equal to {max_limit}")
    return file_path, offset, limit


class _Window:
    """dsh ``buildWindow``: numbered lines within line/char/byte caps plus an exact line count."""

    def __init__(self, offset: int, limit: int, max_line: int, max_bytes: int) -> None:
        self.offset, self.limit, self.max_line, self.max_bytes = offset, limit, max_line, max_bytes
        self.lines: list[dict[str, Any]] = []
        self.total = 0
        self.out_bytes = 0
        self.capped = False
        self._pending = ""
        self._pending_over = False  # the current line already exceeds the buffer cap

    def _done(self) -> bool:
        return self.capped or len(self.lines) >= self.limit

    def _consume(self, raw: str) -> None:
        self.total += 1
        if raw.endswith("\r"):
            raw = raw[:-1]
        if self.capped or self.total < self.offset or len(self.lines) >= self.limit:
            return
        text = raw
        if utf16_len(raw) > self.max_line:
            text = f"{utf16_prefix(raw, self.max_line)}... (line truncated to {self.max_line} chars)"
        size = utf8_len(text) + (1 if self.lines else 0)
        if self.out_bytes + size > self.max_bytes:
            self.capped = True
            return
        self.out_bytes += size
        self.lines.append({"number": self.total, "text": text})

    def _hold(self, rest: str) -> None:
        """Append to the current partial line, keeping just enough to prove it overflows."""
        if self._pending_over:
            return
        cap = self.max_line + 1
        self._pending += rest
        if len(self._pending) > cap + 1:
            self._pending = self._pending[: cap + 1]
            self._pending_over = True

    def feed(self, chunk: str) -> None:
        cap = self.max_line + 1
        start = 0
        while True:
            if not self._pending and not self._pending_over:
                if self._done():
                    # Past the window: only count the remaining lines.
                    self.total += chunk.count("\n", start)
                    last = chunk.rfind("\n", start)
                    self._pending = chunk[last + 1 : last + 2] if last != -1 else chunk[start : start + 1]
                    return
                before = self.offset - 1 - self.total
                if before > 0:
                    # Lines ahead of the window are only counted.
                    if chunk.count("\n", start) <= before:
                        last = chunk.rfind("\n", start)
                        if last != -1:
                            self.total += chunk.count("\n", start)
                            start = last + 1
                        self._hold(chunk[start:])
                        return
                    for _ in range(before):
                        start = chunk.index("\n", start) + 1
                    self.total += before
                    continue
            nl = chunk.find("\n", start)
            if nl == -1:
                self._hold(chunk[start:])
                return
            if not self._pending_over:
                self._pending += chunk[start:nl]
            self._consume(self._pending[:cap] if len(self._pending) > cap else self._pending)
            self._pending = ""
            self._pending_over = False
            start = nl + 1

    def finish(self, shown: str) -> None:
        if self._pending or self._pending_over:
            cap = self.max_line + 1
            self._consume(self._pending[:cap] if len(self._pending) > cap else self._pending)
            self._pending = ""
        if not self.capped and self.offset > self.total and not (self.total == 0 and self.offset == 1):
            raise fs_error(
                f'offset {self.offset} is out of range for "{shown}" ({self.total} lines)', "FS_NOT_FOUND"
            )


def format_read_output(
    display: str, offset: int, lines: list[dict[str, Any]], total: int, capped: bool
) -> str:
    end = lines[-1]["number"] if lines else max(0, offset - 1)
    if capped:
        footer = f"(Output capped. Showing lines {offset}-{end}. Use offset={end + 1} to continue.)"
    elif end < total:
        footer = f"(Showing lines {offset}-{end} of {total}. Use offset={end + 1} to continue.)"
    else:
        footer = f"(End of file - total {total} lines)"
    if lines:
        body = "\n".join(f"{ln['number']}: {ln['text']}" for ln in lines) + "\n\n" + footer
    else:
        body = footer
    return f"<path>{display}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


def _read_blocking(ctx: ToolContext, target: Target, offset: int, limit: int, caps: dict[str, int]) -> dict:
    shown = target.display_path
    st = _stat(target.real_path)
    observed = _observed(ctx)
    if st is None:
        observed[target.real_path] = {"kind": "absent"}
        raise fs_error(f'cannot read "{shown}": not found', "FS_NOT_FOUND")
    if not stat_mod.S_ISREG(st.st_mode):
        raise fs_error(f'cannot read "{shown}": not a regular file', "FS_NOT_REGULAR_FILE")
    window = _Window(offset, limit, caps["max_line"], caps["max_bytes"])
    decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
    first = True
    try:
        with open(target.real_path, "rb") as fh:
            while True:
                if ctx.cancelled.is_set():
                    raise aborted_error()
                data = fh.read(READ_CHUNK_BYTES)
                if first:
                    first = False
                    if b"\x00" in data[:BINARY_SAMPLE_BYTES]:
                        raise fs_error(f'cannot read "{shown}": binary file', "FS_NOT_TEXT")
                final = not data
                try:
                    text = decoder.decode(data, final=final)
                except UnicodeDecodeError:
                    raise fs_error(f'cannot read "{shown}": invalid UTF-8 text', "FS_NOT_TEXT") from None
                if text:
                    window.feed(text)
                if final:
                    break
    except FileNotFoundError:
        observed[target.real_path] = {"kind": "absent"}
        raise fs_error(f'cannot read "{shown}": not found', "FS_NOT_FOUND") from None
    except IsADirectoryError:
        raise fs_error(f'cannot read "{shown}": not a regular file', "FS_NOT_REGULAR_FILE") from None
    window.finish(shown)
    observed[target.real_path] = {"kind": "present", "version": version_of(st)}
    return {"path": shown, "offset": offset, "lines": window.lines, "totalLines": window.total}


# --------------------------------------------------------------------------- write / edit helpers


def compute_hunk_diffs(path: str, before: str, after: str) -> list[dict[str, Any]]:
    """One ``{path, oldText, newText}`` per changed hunk with 3 context lines (jsdiff structuredPatch)."""
    a, b = _split_lf(before), _split_lf(after)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    diffs: list[dict[str, Any]] = []
    for group in matcher.get_grouped_opcodes(DIFF_CONTEXT):
        old_lines: list[str] = []
        new_lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    old_lines.append(_strip_nl(line))
                    new_lines.append(_strip_nl(line))
                continue
            if tag in ("replace", "delete"):
                old_lines.extend(_strip_nl(line) for line in a[i1:i2])
            if tag in ("replace", "insert"):
                new_lines.extend(_strip_nl(line) for line in b[j1:j2])
        diffs.append(
            {
                "path": path,
                "oldText": "\n".join(old_lines) if old_lines else None,
                "newText": "\n".join(new_lines),
            }
        )
    return diffs


def _split_lf(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _strip_nl(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def diff_counts(diffs: list[dict[str, Any]]) -> tuple[int, int]:
    """(+added, -removed) line counts over dsh diff hunks (for tool cards)."""
    added = removed = 0
    for hunk in diffs:
        old = str(hunk["oldText"]).split("\n") if hunk.get("oldText") else []
        new = str(hunk["newText"]).split("\n") if hunk.get("newText") else []
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag in ("replace", "delete"):
                removed += i2 - i1
            if tag in ("replace", "insert"):
                added += j2 - j1
    return added, removed


def _read_text_for_diff(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat_mod.S_ISREG(st.st_mode) or st.st_size >= DIFF_BASIS_MAX_BYTES:
                return None
            data = fh.read(DIFF_BASIS_MAX_BYTES)
    except OSError:
        return None
    if b"\x00" in data:
        return None
    try:
        return normalize_newlines(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None


STALE_REMEDY = " — re-read the file, then retry"
NOT_OBSERVED_REMEDY = " — read the file, then retry"


def parse_write_args(args: Any) -> tuple[str, str]:
    file_path = _file_path(args)
    content = args.get("content")
    if not isinstance(content, str):
        raise plain_error("content must be a string")
    return file_path, content


def _write_blocking(ctx: ToolContext, target: Target, content: str) -> dict[str, Any]:
    shown, real = target.display_path, target.real_path
    prior = _observed(ctx).get(real)
    st = _stat(real)
    if prior is None or prior.get("kind") != "present":
        if st is not None:
            if not stat_mod.S_ISREG(st.st_mode):
                raise fs_error(f'cannot write "{shown}": not a regular file', "FS_NOT_REGULAR_FILE")
            raise fs_error(
                f'cannot overwrite existing "{shown}" without reading it first{NOT_OBSERVED_REMEDY}',
                "FS_NOT_OBSERVED",
            )
        operation, before, mode = "create", None, None
    else:
        if st is None:
            raise fs_error(f'cannot write "{shown}": file no longer exists{STALE_REMEDY}', "FS_STALE_VERSION")
        if not stat_mod.S_ISREG(st.st_mode):
            raise fs_error(f'cannot write "{shown}": not a regular file', "FS_NOT_REGULAR_FILE")
        if version_of(st) != prior.get("version"):
            raise fs_error(
                f'cannot write "{shown}": file changed since it was read{STALE_REMEDY}', "FS_STALE_VERSION"
            )
        operation, before, mode = "update", _read_text_for_diff(real), stat_mod.S_IMODE(st.st_mode)
    data = content.encode("utf-8", "surrogatepass")
    try:
        write_atomic(real, data, create_only=operation == "create", mode=mode)
    except FileExistsError:
        raise fs_error(
            f'cannot overwrite existing "{shown}" without reading it first{NOT_OBSERVED_REMEDY}',
            "FS_NOT_OBSERVED",
        ) from None
    except (NotADirectoryError, IsADirectoryError):
        raise fs_error(f'cannot write "{shown}": not a regular file', "FS_NOT_REGULAR_FILE") from None
    except PermissionError:
        raise fs_error(f'cannot write "{shown}": permission denied', "FS_PERMISSION_DENIED") from None
    after_st = os.stat(real)
    _observed(ctx)[real] = {"kind": "present", "version": version_of(after_st)}
    return {"path": shown, "operation": operation, "before": before, "after": normalize_newlines(content)}


def format_write_output(display: str, operation: str) -> str:
    verb = "Created" if operation == "create" else "Updated"
    return f"<path>{display}</path>\n<type>file</type>\n<content>\n{verb} file\n</content>"


def parse_edit_args(args: Any) -> tuple[str, str, str, bool]:
    file_path = _file_path(args)
    old = args.get("old_string")
    new = args.get("new_string")
    if not isinstance(old, str) or len(old) == 0:
        raise plain_error("old_string must be a non-empty string")
    if not isinstance(new, str):
        raise plain_error("new_string must be a string")
    if old == new:
        raise plain_error("old_string and new_string must differ")
    return file_path, old, new, args.get("replace_all") is True


def _detect_crlf(raw: str) -> bool:
    sample = raw[:4096]
    crlf = sample.count("\r\n")
    lf = sample.count("\n") - crlf
    return crlf > lf


def _edit_blocking(ctx: ToolContext, target: Target, old: str, new: str, replace_all: bool) -> dict[str, Any]:
    shown, real = target.display_path, target.real_path
    prior = _observed(ctx).get(real)
    if prior is None:
        raise fs_error(f'edit requires reading "{shown}" first{NOT_OBSERVED_REMEDY}', "FS_NOT_OBSERVED")
    if prior.get("kind") == "absent":
        raise fs_error(f'cannot edit "{shown}": not found', "FS_NOT_FOUND")
    st = _stat(real)
    if st is None:
        raise fs_error(
            f'cannot edit "{shown}": file changed since it was read{STALE_REMEDY}', "FS_STALE_VERSION"
        )
    if not stat_mod.S_ISREG(st.st_mode):
        raise fs_error(f'cannot edit "{shown}": not a regular file', "FS_NOT_REGULAR_FILE")
    if version_of(st) != prior.get("version"):
        raise fs_error(
            f'cannot edit "{shown}": file changed since it was read{STALE_REMEDY}', "FS_STALE_VERSION"
        )
    with open(real, "rb") as fh:
        data = fh.read()
    if b"\x00" in data:
        raise fs_error(f'cannot edit "{shown}": binary file', "FS_NOT_TEXT")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise fs_error(f'cannot edit "{shown}": invalid UTF-8 text', "FS_NOT_TEXT") from None
    content = normalize_newlines(raw)
    crlf = _detect_crlf(raw)
    old_n, new_n = normalize_newlines(old), normalize_newlines(new)
    count = content.count(old_n)
    if count == 0:
        raise fs_error(f'old_string was not found in "{shown}"', "FS_EDIT_NOT_FOUND")
    if not replace_all and count > 1:
        raise fs_error(
            f'old_string matched {count} times in "{shown}"; provide a more specific old_string '
            "or set replace_all to true",
            "FS_AMBIGUOUS_EDIT",
        )
    edited = content.replace(old_n, new_n)
    out = edited.replace("\n", "\r\n") if crlf else edited
    payload = (codecs.BOM_UTF8 if bom else b"") + out.encode("utf-8", "surrogatepass")
    write_atomic(real, payload, create_only=False, mode=stat_mod.S_IMODE(st.st_mode))
    _observed(ctx)[real] = {"kind": "present", "version": version_of(os.stat(real))}
    return {"path": shown, "before": content, "after": edited}


def format_edit_output(display: str, replace_all: bool) -> str:
    if replace_all:
        return f"The file {display} has been updated. All occurrences were successfully replaced."
    return f"The file {display} has been updated successfully."


# --------------------------------------------------------------------------- definitions


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def read_tool(
    schema: dict[str, Any],
    *,
    max_limit: int = READ_LIMIT,
    max_line: int = READ_MAX_LINE_LENGTH,
    max_bytes: int = READ_MAX_BYTES,
) -> ToolDefinition:
    caps = {"max_line": max_line, "max_bytes": max_bytes}

    async def execute(args: Any, ctx: ToolContext) -> Any:
        file_path, offset, limit = parse_read_args(args, max_limit)
        target = await asyncio.to_thread(resolve_target, ctx, file_path, subject="operation")
        return await _in_thread("read", target, _read_blocking, ctx, target, offset, limit, caps)

    def render(args: Any, value: Any) -> list[dict[str, Any]]:
        _, _, limit = parse_read_args(args, max_limit)
        lines = value["lines"]
        end = lines[-1]["number"] if lines else max(0, value["offset"] - 1)
        capped = len(lines) < limit and end < value["totalLines"]
        return _text(format_read_output(value["path"], value["offset"], lines, value["totalLines"], capped))

    def meta(args: Any, value: Any) -> Any:
        out = {
            "path": value["path"],
            "offset": value["offset"],
            "lines": [{"number": ln["number"], "text": ln["text"]} for ln in value["lines"]],
            "totalLines": value["totalLines"],
        }
        lang = lang_from_path(value["path"])
        if lang is not None:
            out["lang"] = lang
        return out

    return ToolDefinition(
        name="read",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=render,
        presentation_meta=meta,
        is_concurrency_safe=lambda args: True,
        access="read",
    )


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


async def _resolve_for_change(ctx: ToolContext, file_path: str, schema: dict[str, Any]) -> Target:
    """Resolve a write/edit target (escalation when the schema advertises it); refuse once cancelled."""
    target = await asyncio.to_thread(
        resolve_target,
        ctx,
        file_path,
        subject="operation",
        escalation="sandbox_permissions" in schema["parameters"]["properties"],
    )
    if ctx.cancelled.is_set():
        raise aborted_error()
    return target


def write_tool(schema: dict[str, Any]) -> ToolDefinition:
    async def execute(args: Any, ctx: ToolContext) -> Any:
        file_path, content = parse_write_args(args)
        target = await _resolve_for_change(ctx, file_path, schema)
        return await _in_thread("write", target, _write_blocking, ctx, target, content)

    def render(args: Any, value: Any) -> list[dict[str, Any]]:
        return _text(format_write_output(value["path"], value["operation"]))

    def meta(args: Any, value: Any) -> Any:
        if value["before"] is None:
            return {"diffs": []}
        return {"diffs": compute_hunk_diffs(args["file_path"], value["before"], value["after"])}

    return ToolDefinition(
        name="write",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=render,
        presentation_meta=meta,
        is_concurrency_safe=None,
        access="write",
    )


def edit_tool(schema: dict[str, Any]) -> ToolDefinition:
    async def execute(args: Any, ctx: ToolContext) -> Any:
        file_path, old, new, replace_all = parse_edit_args(args)
        target = await _resolve_for_change(ctx, file_path, schema)
        return await _in_thread("edit", target, _edit_blocking, ctx, target, old, new, replace_all)

    def render(args: Any, value: Any) -> list[dict[str, Any]]:
        return _text(format_edit_output(value["path"], args.get("replace_all") is True))

    def meta(args: Any, value: Any) -> Any:
        return {"diffs": compute_hunk_diffs(args["file_path"], value["before"], value["after"])}

    return ToolDefinition(
        name="edit",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=render,
        presentation_meta=meta,
        is_concurrency_safe=None,
        access="write",
    )
