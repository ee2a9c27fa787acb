"""The ``read`` tool (dsh ``tool-fs`` + ``fs-local``): a numbered window of a UTF-8 text file within line,
character and byte caps, its exact line count, and the file's version recorded as observed."""

from __future__ import annotations

import asyncio
import codecs
import stat as stat_mod
from typing import Any

from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import aborted_error, fs_error, plain_error, utf8_len, utf16_len, utf16_prefix
from dsh_tui.tools.fs.common import _file_path, _in_thread, _observed, _positive_int, _stat, _text, version_of
from dsh_tui.tools.paths import Target, resolve_target

READ_LIMIT = 2000
READ_MAX_LINE_LENGTH = 2000
READ_MAX_BYTES = 50 * 1024
BINARY_SAMPLE_BYTES = 8192
READ_CHUNK_BYTES = 1 << 20
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


def lang_from_path(path: str) -> str | None:
    base = path[max(path.rfind("/"), path.rfind("\\")) + 1 :]
    dot = base.rfind(".")
    if dot <= 0:
        return None
    return LANG_BY_EXTENSION.get(base[dot + 1 :].lower())


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
