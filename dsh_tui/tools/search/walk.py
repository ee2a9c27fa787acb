"""Walking the tree for ``glob`` and ``grep``: files only (symlinks not followed), VCS directories
skipped, ignore files honoured for ``grep``, a deadline and a stop flag; paths displayed the way ripgrep
prints them; the blocking ``glob`` walk (ascending mtime)."""

from __future__ import annotations

import os
import stat as stat_mod
import threading
import time

from dsh_tui.tools.base import ToolContext
from dsh_tui.tools.common import search_error
from dsh_tui.tools.paths import resolve_target

from .globs import _compile_user_glob
from .ignore import VCS_DIRS, _git_root, _ignored, _IgnoreLevel, _level

RAW_OUTPUT_MAX_BYTES = 20_000_000


class _Budget:
    """dsh caps the raw ``rg`` output it parses (20 MB); ours bounds the collected results the same way."""

    def __init__(self, tool: str) -> None:
        self.tool, self.cap, self.used = tool, RAW_OUTPUT_MAX_BYTES, 0

    def spend(self, amount: int) -> None:
        self.used += amount
        if self.used > self.cap:
            raise search_error(
                f"{self.tool} produced more raw output than the subprocess seam retained within the "
                f"{self.cap}-byte cap; narrow pattern, path, or include and retry",
                "SEARCH_RAW_OUTPUT_OVERFLOW",
            )


class _Aborted(Exception):  # control flow (the walk's stop/deadline unwinding): not a DshError
    pass


def _check(stop: threading.Event, deadline: float) -> None:
    if stop.is_set() or time.monotonic() > deadline:
        raise _Aborted


def _aborted(tool: str) -> Exception:
    return search_error(
        f"{tool} was aborted before completion (tool timeout or caller cancellation)", "SEARCH_ABORTED"
    )


def _search_root(ctx: ToolContext, raw: str | None, tool: str) -> str:
    """The absolute root of a search: the session cwd, or the given ``path`` (which must exist)."""
    if raw is None:
        return str(ctx.cwd)
    root_abs = resolve_target(ctx, raw, subject="operation").display_path
    if not os.path.exists(root_abs):
        raise _rg_missing(tool, raw)
    return root_abs


def _rg_missing(tool: str, shown: str) -> Exception:
    return search_error(
        f"{tool} search failed (exit 2): rg: {shown}: IO error for operation on {shown}: "
        "No such file or directory (os error 2)",
        "SEARCH_FAILED",
    )


def _display(raw: str | None, root_abs: str, rel: str, cwd: str) -> str:
    """How ripgrep prints a found path, then dsh's ``toWorkdirRelative``."""
    if raw is None:
        shown = rel
    elif rel == "":
        shown = raw
    else:
        shown = raw + rel if raw.endswith("/") else f"{raw}/{rel}"
    if os.path.isabs(shown):
        rp = os.path.relpath(shown, cwd)
        if rp == ".":
            return "."
        if rp != ".." and not rp.startswith("../"):
            return rp
    return shown


def _walk_files(root_abs: str, stop: threading.Event, deadline: float, *, respect_ignores: bool):
    """Yield ``(rel_path, abs_path, stat)`` for regular files under root (symlinks not followed)."""
    levels: list[_IgnoreLevel] = []
    git_root = _git_root(root_abs) if respect_ignores else None
    if respect_ignores:
        # Ignore files of the parent directories apply too (ripgrep's default).
        ancestors = []
        cur = os.path.dirname(os.path.abspath(root_abs))
        while True:
            ancestors.append(cur)
            parent = os.path.dirname(cur)
            if parent == cur:
                break
            cur = parent
        for directory in reversed(ancestors):
            level = _level(directory, git_root)
            if level is not None:
                levels.append(level)

    def visit(dir_abs: str, dir_rel: str):
        _check(stop, deadline)
        try:
            entries = sorted(os.scandir(dir_abs), key=lambda e: e.name)
        except OSError:
            return
        pushed = False
        if respect_ignores:
            level = _level(dir_abs, git_root)
            if level is not None:
                levels.append(level)
                pushed = True
        try:
            for entry in entries:
                name = entry.name
                rel = f"{dir_rel}/{name}" if dir_rel else name
                try:
                    if entry.is_symlink():
                        continue
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if name in VCS_DIRS:
                        continue
                    if respect_ignores and (name.startswith(".") or _ignored(levels, entry.path, True)):
                        continue
                    yield from visit(entry.path, rel)
                    continue
                if respect_ignores and (name.startswith(".") or _ignored(levels, entry.path, False)):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat_mod.S_ISREG(st.st_mode):
                    yield rel, entry.path, st
        finally:
            if pushed:
                levels.pop()

    yield from visit(root_abs, "")


def _glob_blocking(ctx: ToolContext, pattern: str, raw: str | None, timeout_ms: int, stop: threading.Event):
    deadline = time.monotonic() + timeout_ms / 1000
    cwd = str(ctx.cwd)
    rule = _compile_user_glob("glob", pattern)
    root_abs = _search_root(ctx, raw, "glob")
    found: list[tuple[int, str]] = []
    if raw is not None and VCS_DIRS & set(os.path.normpath(raw).split(os.sep)):
        return {"root": _display(raw, root_abs, "", cwd), "paths": []}  # VCS metadata stays excluded
    try:
        if os.path.isfile(root_abs):
            if rule.regex.match(os.path.basename(root_abs)):
                found.append((os.stat(root_abs).st_mtime_ns, _display(raw, root_abs, "", cwd)))
        else:
            budget = _Budget("glob")
            for rel, _abs, st in _walk_files(root_abs, stop, deadline, respect_ignores=False):
                if rule.dir_only or not rule.regex.match(rel):
                    continue
                budget.spend(len(rel) + 1)
                found.append((st.st_mtime_ns, _display(raw, root_abs, rel, cwd)))
    except _Aborted:
        raise _aborted("glob") from None
    found.sort(key=lambda item: (item[0], item[1]))
    root = "." if raw is None else _display(raw, root_abs, "", cwd)
    return {"root": root, "paths": [p for _, p in found]}
