"""The ``str-replace-editor`` built-in plugin: dsh 0.1's ``str_replace_editor`` tool
(``@deepseek-ai/dsh-tool-str-replace-editor``), **off by default** as in dsh 0.2: turn it on with
``[plugins.str-replace-editor] enabled = true``.

One tool with four commands over absolute paths: ``view`` (a file as ``cat -n``, optionally a
``view_range``; a directory listed two levels deep without hidden items, ``node_modules`` and ``__pycache__``),
``create`` (a new file only), ``str_replace`` (exactly one verbatim occurrence) and ``insert`` (after line
``insert_line``). Texts, errors and the 16000-character clip are dsh's. It shares the ``read``/``write``/
``edit`` tools' observation state (a file must be viewed or read before ``str_replace``/``insert`` changes it,
and must not have changed since) and their workspace confinement.

Config: ``maxOutputChars`` (16000), ``description`` (dsh's text).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import stat as stat_mod
from collections.abc import Mapping
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.store.fsio import write_atomic
from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import fs_error, plain_error, utf16_len, utf16_prefix
from dsh_tui.tools.fs import NOT_OBSERVED_REMEDY, STALE_REMEDY, STATE_KEY, version_of
from dsh_tui.tools.paths import Target, resolve_target

name = "str-replace-editor"

TRUNCATED_MESSAGE = ("<response clipped><NOTE>To save on context only part of this file has been shown to you. You "
                     "should retry this tool after you have searched inside the file with `grep -n` in order to find "
                     "the line numbers of what you are looking for.</NOTE>")

DEFAULT_DESCRIPTION = """Custom editing tool for viewing, creating and editing files
* State is persistent across command calls and discussions with the user
* If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a directory, `view` lists non-hidden files and directories up to 2 levels deep
* The `create` command cannot be used if the specified `path` already exists as a file
* If a `command` generates a long output, it will be truncated and marked with `<response clipped>`

Notes for using the `str_replace` command:
* The `old_str` parameter should match EXACTLY one or more consecutive lines from the original file. Be mindful of whitespaces!
* If the `old_str` parameter is not unique in the file, the replacement will not be performed. Make sure to include enough context in `old_str` to make it unique
* The `new_str` parameter should contain the edited lines that should replace the `old_str`"""  # noqa: E501

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"],
                    "description": "The commands to run. Allowed options are: `view`, `create`, `str_replace`, "
                                   "`insert`."},
        "path": {"type": "string",
                 "description": "Absolute path to file or directory, e.g. `/repo/file.py` or `/repo`."},
        "file_text": {"type": "string", "description": "Required parameter of `create` command, with the content "
                                                       "of the file to be created."},
        "insert_line": {"type": "integer", "description": "Required parameter of `insert` command. The `new_str` "
                                                          "will be inserted AFTER the line `insert_line` of `path`."},
        "new_str": {"type": "string", "description": "Optional parameter of `str_replace` command containing the new "
                                                     "string (if not given, no string will be added). Required "
                                                     "parameter of `insert` command containing the string to insert."},
        "old_str": {"type": "string", "description": "Required parameter of `str_replace` command containing the "
                                                     "string in `path` to replace."},
        "view_range": {"type": "array", "items": {"type": "integer"},
                       "description": "Optional parameter of `view` command when `path` points to a file. If none is "
                                      "given, the full file is shown. If provided, the file will be shown in the "
                                      "indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing "
                                      "at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to "
                                      "the end of the file."},
    },
    "required": ["command", "path"],
}


def _config(raw: Any) -> dict[str, Any]:
    raw = dict(raw) if isinstance(raw, Mapping) else {}
    unknown = set(raw) - {"maxOutputChars", "description"}
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected maxOutputChars, description)")
    cap = raw.get("maxOutputChars", 16_000)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
        raise DshError("tool-str-replace-editor: maxOutputChars must be a positive safe integer")
    description = raw.get("description", DEFAULT_DESCRIPTION)
    if not isinstance(description, str) or not description.strip():
        raise DshError("tool-str-replace-editor: description must be non-empty")
    return {"maxOutputChars": cap, "description": description}


def maybe_truncate(content: str, cap: int) -> str:
    return content if utf16_len(content) <= cap else utf16_prefix(content, cap) + TRUNCATED_MESSAGE


def _observed(ctx: ToolContext) -> dict[str, dict[str, Any]]:
    return ctx.state.setdefault(STATE_KEY, {})


def _js_list(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values)


def _read_text(target: Target) -> str:
    with open(target.real_path, "rb") as fh:
        data = fh.read()
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise fs_error(f'cannot read "{target.display_path}": invalid UTF-8 text', "FS_NOT_TEXT") from None


class Editor:
    def __init__(self, cap: int) -> None:
        self.cap = cap

    # -- helpers ---------------------------------------------------------------------------------
    def resolve(self, ctx: ToolContext, path: Any, *, change: bool) -> Target:
        if not isinstance(path, str) or not path.strip():
            raise plain_error("path must be a non-empty string")
        if not os.path.isabs(path):
            raise plain_error(f"The path {path} is not an absolute path, it should start with `/`. "
                              f"Maybe you meant /{path}?")
        return resolve_target(ctx, path, subject="operation")

    def stat_existing(self, ctx: ToolContext, target: Target, command: str) -> os.stat_result:
        try:
            st = os.stat(target.real_path)
        except FileNotFoundError:
            _observed(ctx)[target.real_path] = {"kind": "absent"}
            raise fs_error(f"The path {target.display_path} does not exist. Please provide a valid path.",
                           "FS_NOT_FOUND") from None
        if stat_mod.S_ISDIR(st.st_mode) and command != "view":
            raise fs_error(f"The path {target.display_path} is a directory and only the `view` command can be "
                           "used on directories", "FS_NOT_REGULAR_FILE")
        return st

    def observed_version(self, ctx: ToolContext, target: Target, st: os.stat_result, verb: str) -> None:
        """The observation policy of ``edit`` (dsh's ``fs/edit-intent``): read first, unchanged since."""
        prior = _observed(ctx).get(target.real_path)
        if prior is None or prior.get("kind") != "present":
            raise fs_error(f'{verb} requires reading "{target.display_path}" first{NOT_OBSERVED_REMEDY}',
                           "FS_NOT_OBSERVED")
        if version_of(st) != prior.get("version"):
            raise fs_error(f'cannot {verb} "{target.display_path}": file changed since it was read{STALE_REMEDY}',
                           "FS_STALE_VERSION")

    def commit(self, ctx: ToolContext, target: Target, text: str, st: os.stat_result | None) -> None:
        mode = None if st is None else stat_mod.S_IMODE(st.st_mode)
        write_atomic(target.real_path, text.encode("utf-8", "surrogatepass"), create_only=st is None, mode=mode)
        _observed(ctx)[target.real_path] = {"kind": "present", "version": version_of(os.stat(target.real_path))}

    # -- commands --------------------------------------------------------------------------------
    def view(self, ctx: ToolContext, args: dict) -> str:
        target = self.resolve(ctx, args.get("path"), change=False)
        st = self.stat_existing(ctx, target, "view")
        view_range = args.get("view_range")
        if stat_mod.S_ISDIR(st.st_mode):
            if view_range is not None:
                raise plain_error("The `view_range` parameter is not allowed when `path` points to a directory.")
            return self.listing(target)
        if not stat_mod.S_ISREG(st.st_mode):
            raise fs_error(f'cannot view "{target.display_path}": not a regular file or directory',
                           "FS_NOT_REGULAR_FILE")
        content = _read_text(target)
        _observed(ctx)[target.real_path] = {"kind": "present", "version": version_of(st)}
        return self.file_view(target.display_path, content, view_range)

    def file_view(self, path: str, content: str, view_range: Any) -> str:
        all_lines = content.split("\n")
        lines, initial = all_lines, 1
        prompt = f"Here's the content of {path} with line numbers (which has a total of {len(all_lines)} lines)"
        if view_range is not None:
            if (not isinstance(view_range, list) or len(view_range) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in view_range)):
                raise plain_error("Invalid `view_range`. It should be a list of two integers.")
            initial, final = view_range
            shown = _js_list(view_range)
            if initial < 1 or initial > len(all_lines):
                raise plain_error(f"Invalid `view_range`: [{shown}]. Its first element `{initial}` should be within "
                                  f"the range of lines of the file: [1, {len(all_lines)}]")
            if final > len(all_lines):
                raise plain_error(f"Invalid `view_range`: [{shown}]. Its second element `{final}` should be smaller "
                                  f"than the number of lines in the file: `{len(all_lines)}`")
            if final != -1 and final < initial:
                raise plain_error(f"Invalid `view_range`: [{shown}]. Its second element `{final}` should be larger "
                                  f"or equal than its first `{initial}`")
            lines = all_lines[initial - 1:] if final == -1 else all_lines[initial - 1:final]
            prompt += f" with view_range=[{initial}, {final}]"
        numbered = "\n".join(f"{str(initial + i).rjust(6)}  {line}" for i, line in enumerate(lines))
        return maybe_truncate(f"{prompt}:\n{numbered}\n", self.cap)

    def listing(self, target: Target) -> str:
        rows = [f"d\t{target.display_path}"]

        def visit(real: str, shown: str, depth: int) -> None:
            with os.scandir(real) as it:
                entries = sorted(it, key=lambda e: e.name)
            for entry in entries:
                if entry.name.startswith(".") or entry.name in ("node_modules", "__pycache__"):
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                kind = "d" if is_dir else "f" if entry.is_file(follow_symlinks=False) else "?"
                child = os.path.join(shown, entry.name)
                rows.append(f"{kind}\t{child}")
                if is_dir and depth < 2:
                    visit(entry.path, child, depth + 1)

        visit(target.real_path, target.display_path, 1)
        rows.sort(key=lambda r: r.split("\t", 1)[1].encode("utf-16-be", "surrogatepass"))
        listing = maybe_truncate("\n".join(rows) + "\n", self.cap)
        return (f"Here're the files and directories up to 2 levels deep in {target.display_path}, excluding hidden "
                f"items, node_modules, and Python cache directories:\n{listing}\n")

    def create(self, ctx: ToolContext, args: dict) -> str:
        text = args.get("file_text")
        if text is None:
            raise plain_error("Parameter `file_text` is required for command: create")
        target = self.resolve(ctx, args.get("path"), change=True)
        if os.path.lexists(target.real_path):
            raise plain_error(f"File already exists at: {target.display_path}. Cannot overwrite files using "
                              "command `create`.")
        try:
            self.commit(ctx, target, text, None)
        except FileExistsError:
            raise plain_error(f"File already exists at: {target.display_path}. Cannot overwrite files using "
                              "command `create`.") from None
        return f"New file created successfully at: {target.display_path}"

    def str_replace(self, ctx: ToolContext, args: dict) -> str:
        target = self.resolve(ctx, args.get("path"), change=True)
        old = args.get("old_str")
        if old is None:
            raise plain_error("Parameter `old_str` is required for command: str_replace")
        if old == "":
            raise plain_error("Parameter `old_str` is empty for command: str_replace")
        new = args.get("new_str") or ""
        st = self.stat_existing(ctx, target, "str_replace")
        if not stat_mod.S_ISREG(st.st_mode):
            raise fs_error(f'cannot edit "{target.display_path}": not a regular file', "FS_NOT_REGULAR_FILE")
        self.observed_version(ctx, target, st, "edit")
        before = _read_text(target)
        offsets = []
        at = before.find(old)
        while at >= 0:
            offsets.append(at)
            at = before.find(old, at + len(old))
        if not offsets:
            raise fs_error(f"No replacement was performed, old_str `{old}` did not appear verbatim in "
                           f"{target.display_path}.", "FS_EDIT_NOT_FOUND")
        if len(offsets) > 1:
            lines = [before.count("\n", 0, o) + 1 for o in offsets]
            raise fs_error(f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines "
                           f"[{_js_list(lines)}]. Please ensure it is unique", "FS_AMBIGUOUS_EDIT")
        o = offsets[0]
        self.commit(ctx, target, before[:o] + new + before[o + len(old):], st)
        return f"The file {target.display_path} has been edited successfully."

    def insert(self, ctx: ToolContext, args: dict) -> str:
        line = args.get("insert_line")
        if line is None:
            raise plain_error("Parameter `insert_line` is required for command: insert")
        value = args.get("new_str")
        if value is None:
            raise plain_error("Parameter `new_str` is required for command: insert")
        target = self.resolve(ctx, args.get("path"), change=True)
        st = self.stat_existing(ctx, target, "insert")
        if not stat_mod.S_ISREG(st.st_mode):
            raise fs_error(f'cannot insert into "{target.display_path}": not a regular file', "FS_NOT_REGULAR_FILE")
        self.observed_version(ctx, target, st, "edit")
        lines = _read_text(target).split("\n")
        if isinstance(line, bool) or not isinstance(line, int) or line < 0 or line > len(lines):
            raise plain_error(f"Invalid `insert_line` parameter: {line}. It should be within the range of lines of "
                              f"the file: [0, {len(lines)}]")
        self.commit(ctx, target, "\n".join([*lines[:line], *value.split("\n"), *lines[line:]]), st)
        return f"The file {target.display_path} has been edited successfully."


def tool(config: Any = None) -> ToolDefinition:
    cfg = _config(config)
    editor = Editor(cfg["maxOutputChars"])
    commands = {"view": editor.view, "create": editor.create, "str_replace": editor.str_replace,
                "insert": editor.insert}

    async def execute(args: Any, ctx: ToolContext) -> Any:
        run = commands.get(args.get("command"))
        if run is None:
            raise plain_error(f"Unrecognized command {args.get('command')}. The allowed commands for the "
                              "str_replace_editor tool are: view, create, str_replace, insert")
        try:
            return await asyncio.to_thread(run, ctx, args)
        except PermissionError:
            raise fs_error(f'cannot {args["command"]} "{args.get("path")}": permission denied',
                           "FS_PERMISSION_DENIED") from None

    return ToolDefinition(name="str_replace_editor", description=cfg["description"], parameters=PARAMETERS,
                          execute=execute, render=lambda _a, value: [{"type": "text", "text": value}],
                          access="write")


def apply(ctx: Any, config: Any = None) -> None:
    ctx.tools.register(tool(config))
