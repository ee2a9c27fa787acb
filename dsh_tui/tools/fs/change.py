"""The ``write`` and ``edit`` tools (dsh ``tool-fs`` + ``fs-local``): refused over a file not read first or
changed since (``fs-observation-policy``), written atomically, the new version recorded as observed."""

from __future__ import annotations

import asyncio
import codecs
import os
import stat as stat_mod
from typing import Any

from dsh_tui.store.fsio import write_atomic
from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import aborted_error, fs_error, normalize_newlines, plain_error
from dsh_tui.tools.fs.common import (
    NOT_OBSERVED_REMEDY,
    STALE_REMEDY,
    _file_path,
    _in_thread,
    _observed,
    _stat,
    _text,
    version_of,
)
from dsh_tui.tools.fs.diff import _read_text_for_diff, compute_hunk_diffs
from dsh_tui.tools.paths import Target, resolve_target


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
