"""The ``glob`` and ``grep`` tools (dsh ``tool-fs-search``), implemented in-process.

dsh shells out to a packaged ripgrep; dsh-tui cannot assume ``rg`` exists, so both tools walk the
tree themselves in a worker thread with ripgrep's observable semantics:

- ``glob`` = ``rg --files --glob=<pattern> --sort=modified --no-ignore --hidden`` minus VCS dirs:
  files only (symlinks not followed), hidden and ignored files included, ascending mtime; a pattern
  without ``/`` matches the basename at any depth. Over 100 paths: the first 100 plus a footer with
  the spill locator (runtime-corrections C7/B.6).
- ``grep`` = ``rg --json --regexp=<pattern> [--glob=<include>]``: respects ``.gitignore`` (inside a
  git repository), ``.ignore`` and ``.rgignore``, skips hidden and binary files; matches grouped
  by file (files in path order), each line previewed to 2,000 UTF-8 bytes; over 250 matches the
  head plus a spill footer (C8/B.6). Regexes are Python ``re`` (ripgrep's syntax for the common
  subset).

Output paths are shown the way ripgrep prints them (relative to the session cwd, or prefixed by the
given ``path``); absolute ones inside the cwd become cwd-relative.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat as stat_mod
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dsh_tui.tools._common import SPILL_RETRIEVAL_HINT, head_utf8, plain_error, save_spill, search_error
from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.paths import resolve_target
from dsh_tui.tools.schemas import GLOB_MAX_RESULTS, GREP_MAX_MATCHES

VCS_DIRS = frozenset({".git", ".svn", ".hg", ".bzr", ".jj", ".sl"})
SEARCH_TIMEOUT_MS = 30_000
GREP_MAX_LINE_BYTES = 2000
SEARCH_META_MAX_BYTES = 65_536
RAW_OUTPUT_MAX_BYTES = 20_000_000
STREAM_MIN_BYTES = 8 << 20
IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")  # highest precedence first


# --------------------------------------------------------------------------- glob syntax


def _split_alternatives(body: str) -> list[str]:
    parts, depth, cur, i = [], 0, "", 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur += body[i : i + 2]
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            i += 1
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return parts


class GlobSyntaxError(ValueError):
    """A glob ripgrep's globset would refuse (the message is globset's)."""


def _glob_body(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        ch = pat[i]
        if ch == "*":
            if pat.startswith("**", i):
                before_ok = i == 0 or pat[i - 1] == "/"
                after = pat[i + 2 : i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and after == "":
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i + 1
            if j < n and pat[j] in "!^":
                j += 1
            if j < n and pat[j] == "]":
                j += 1
            while j < n and pat[j] != "]":
                j += 1
            if j >= n:
                raise GlobSyntaxError("unclosed character class; missing ']'")
            else:
                inner = pat[i + 1 : j]
                neg = inner[:1] in ("!", "^")
                if neg:
                    inner = inner[1:]
                inner = inner.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^' if neg else ''}{inner}]")
                i = j
        elif ch == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if pat[j] == "\\":
                    j += 2
                    continue
                depth += {"{": 1, "}": -1}.get(pat[j], 0)
                j += 1
            if depth:
                raise GlobSyntaxError("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
            else:
                alts = _split_alternatives(pat[i + 1 : j - 1])
                out.append("(?:" + "|".join(_glob_body(a) for a in alts) + ")")
                i = j
                continue
        elif ch == "}":
            raise GlobSyntaxError("unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)")
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class GlobRule:
    regex: re.Pattern[str]
    negated: bool = False
    dir_only: bool = False


def compile_glob(pattern: str, *, allow_negation: bool = False) -> GlobRule:
    """A gitignore-style glob matched against a ``/``-separated path relative to its base."""
    negated = False
    if allow_negation and pattern.startswith("!"):
        negated, pattern = True, pattern[1:]
    dir_only = pattern.endswith("/") and len(pattern) > 1
    if dir_only:
        pattern = pattern.rstrip("/")
    anchored = "/" in pattern
    if pattern.startswith("/"):
        pattern = pattern[1:]
    body = _glob_body(pattern)
    prefix = "" if anchored else "(?:.*/)?"
    return GlobRule(re.compile(f"^{prefix}{body}$", re.DOTALL), negated, dir_only)


def _compile_user_glob(tool: str, pattern: str) -> GlobRule:
    try:
        return compile_glob(pattern)
    except (GlobSyntaxError, re.error) as exc:
        raise search_error(
            f"{tool} pattern rejected by ripgrep: rg: error parsing glob '{pattern}': {exc}",
            "SEARCH_INVALID_PATTERN",
        ) from None


# --------------------------------------------------------------------------- ignore files


@dataclass
class _IgnoreLevel:
    base: str  # absolute path of the directory holding the ignore files
    files: list[list[GlobRule]] = field(default_factory=list)  # highest precedence first


def _parse_ignore(path: str) -> list[GlobRule]:
    rules: list[GlobRule] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.rstrip("\n").rstrip("\r")
                if not line or line.startswith("#"):
                    continue
                if not line.endswith("\\ "):
                    line = line.rstrip(" ")
                try:
                    if line.startswith("\\#") or line.startswith("\\!"):
                        rules.append(compile_glob(line[1:]))
                    else:
                        rules.append(compile_glob(line, allow_negation=True))
                except (GlobSyntaxError, re.error):
                    continue  # ripgrep warns and skips a bad ignore pattern
    except OSError:
        pass
    return rules


def _git_root(directory: str) -> str | None:
    cur = os.path.abspath(directory)
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _level(directory: str, git_root: str | None) -> _IgnoreLevel | None:
    level = _IgnoreLevel(directory)
    for name in IGNORE_FILES:
        if name == ".gitignore" and (
            git_root is None or not (directory + os.sep).startswith(git_root + os.sep)
        ):
            continue
        p = os.path.join(directory, name)
        if os.path.isfile(p):
            level.files.append(_parse_ignore(p))
    return level if level.files else None


def _ignored(levels: list[_IgnoreLevel], abs_path: str, is_dir: bool) -> bool:
    for level in reversed(levels):
        sub = abs_path[len(level.base.rstrip(os.sep)) + 1 :]
        for rules in level.files:
            for rule in reversed(rules):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(sub):
                    return not rule.negated
    return False


# --------------------------------------------------------------------------- walking


class _Aborted(Exception):
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


# --------------------------------------------------------------------------- grep


def validate_include(include: str) -> None:
    if not include.strip():
        raise plain_error("include must be a non-empty glob when given")
    if include.startswith("!"):
        raise plain_error('include must be a positive glob filter; negated patterns ("!…") are not supported')
    depth = 0
    for ch in include:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            raise plain_error(
                "include must be one glob, not a comma-separated list (use {a,b} alternation instead)"
            )


def compile_rg_regex(pattern: str) -> re.Pattern[str]:
    """ripgrep (Rust regex) syntax for the common subset, as a Python pattern."""
    translated = pattern.replace(r"\z", r"\Z")
    translated = re.sub(r"\(\?<(?![=!])", "(?P<", translated)
    translated = re.sub(r"\[\[:(alpha|digit|alnum|space|upper|lower|punct|xdigit|word):\]\]",
                        lambda m: {"alpha": "[a-zA-Z]", "digit": "[0-9]", "alnum": "[a-zA-Z0-9]",
                                   "space": r"\s", "upper": "[A-Z]", "lower": "[a-z]",
                                   "punct": r"[!-/:-@\[-`{-~]", "xdigit": "[0-9A-Fa-f]",
                                   "word": r"\w"}[m.group(1)], translated)  # fmt: skip
    if "\n" in pattern:
        raise search_error(
            "grep pattern rejected by ripgrep: regex parse error: the literal '\\n' is not allowed in a regex",
            "SEARCH_INVALID_PATTERN",
        )
    try:
        return re.compile(translated, re.MULTILINE)
    except re.error as exc:
        raise search_error(
            f"grep pattern rejected by ripgrep: regex parse error:\n    {pattern}\nerror: {exc}",
            "SEARCH_INVALID_PATTERN",
        ) from None


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


def _hit(number: int, line: str) -> tuple[int, str]:
    if line.endswith("\r"):
        line = line[:-1]
    if any("\udc80" <= ch <= "\udcff" for ch in line):
        line = "(line is not valid UTF-8)"
    return number, line


def _grep_file(
    abs_path: str, regex: re.Pattern[str], budget: _Budget, overhead: int, size: int | None = None
) -> list[tuple[int, str]]:
    try:
        if size is None:
            size = os.path.getsize(abs_path)
        if size > STREAM_MIN_BYTES:
            return _grep_stream(abs_path, regex, budget, overhead)
        with open(abs_path, "rb") as fh:
            data = fh.read()
    except OSError:
        return []
    if b"\x00" in data:
        return []
    text = data.decode("utf-8", "surrogateescape")
    out: list[tuple[int, str]] = []
    pos = counted = 0
    number = 1
    end = len(text)
    while pos < end:
        m = regex.search(text, pos)
        if m is None:
            break
        start = text.rfind("\n", 0, m.start()) + 1
        if start == end:  # the empty remainder after a final newline is not a line
            break
        stop = text.find("\n", m.start())
        if stop == -1:
            stop = end
        if start < pos:  # an empty match at a line end: it belongs to this line
            start = pos
        number += text.count("\n", counted, start)
        counted = start
        line = text[start:stop]
        # A match may not cross lines (ripgrep's default): the line must match on its own.
        if m.end() <= stop or regex.search(line) is not None:
            budget.spend(len(line) + overhead)
            out.append(_hit(number, line))
        pos = stop + 1
    return out


def _grep_stream(
    abs_path: str, regex: re.Pattern[str], budget: _Budget, overhead: int
) -> list[tuple[int, str]]:
    """Large files: line by line, bounded memory; a NUL byte anywhere makes it a skipped binary file."""
    out: list[tuple[int, str]] = []
    with open(abs_path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if b"\x00" in raw:
                return []
            line = raw[:-1] if raw.endswith(b"\n") else raw
            text = line.decode("utf-8", "surrogateescape")
            if regex.search(text) is not None:
                budget.spend(len(text) + overhead)
                out.append(_hit(number, text))
    return out


def _grep_blocking(
    ctx: ToolContext,
    pattern: str,
    raw: str | None,
    include: str | None,
    timeout_ms: int,
    stop: threading.Event,
):
    deadline = time.monotonic() + timeout_ms / 1000
    cwd = str(ctx.cwd)
    regex = compile_rg_regex(pattern)
    budget = _Budget("grep")
    include_rule = _compile_user_glob("grep", include) if include is not None else None
    root_abs = _search_root(ctx, raw, "grep")
    matches: list[dict[str, Any]] = []
    try:
        if os.path.isfile(root_abs):
            shown = _display(raw, root_abs, "", cwd)
            if include_rule is None or include_rule.regex.match(os.path.basename(root_abs)):
                for number, line in _grep_file(root_abs, regex, budget, len(shown) + 100):
                    matches.append({"path": shown, "lineNumber": number, "line": line})
        else:
            for rel, abs_path, st in _walk_files(root_abs, stop, deadline, respect_ignores=True):
                if include_rule is not None and not include_rule.regex.match(rel):
                    continue
                shown = _display(raw, root_abs, rel, cwd)
                hits = _grep_file(abs_path, regex, budget, len(shown) + 100, st.st_size)
                if hits:
                    matches.extend({"path": shown, "lineNumber": n, "line": ln} for n, ln in hits)
                _check(stop, deadline)
    except _Aborted:
        raise _aborted("grep") from None
    return {"matches": matches}


def preview_line(line: str, max_bytes: int = GREP_MAX_LINE_BYTES) -> str:
    kept, truncated = head_utf8(line, max_bytes)
    return f"{kept} (line truncated)" if truncated else kept


def format_grep_matches(matches: list[dict[str, Any]]) -> str:
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in matches:
        groups.setdefault(m["path"], []).append(m)
    return "\n\n".join(
        path + "\n" + "\n".join(f"Line {m['lineNumber']}: {m['line']}" for m in group)
        for path, group in groups.items()
    )


def _noun(count: int) -> str:
    return "match" if count == 1 else "matches"


def render_grep(value: dict[str, Any], max_matches: int) -> str:
    matches = value["matches"]
    seen = len(matches)
    if seen == 0:
        return "No matches found"
    kept = [{**m, "line": preview_line(m["line"])} for m in matches[:max_matches]]
    body = format_grep_matches(kept)
    if seen <= max_matches:
        return f"Found {seen} {_noun(seen)}\n\n{body}"
    locator = value.get("spill")
    recovery = (
        f"Full grep result stored at: {locator}. {SPILL_RETRIEVAL_HINT}"
        if locator
        else "The complete result could not be saved; narrow pattern, path, or include to see more."
    )
    return f"Found {len(kept)} of {seen} matches\n\n{body}\n\n({recovery})"


def render_glob(value: dict[str, Any], max_results: int) -> str:
    paths = value["paths"]
    if not paths:
        return "No files found"
    if len(paths) <= max_results:
        return "\n".join(paths)
    page = paths[:max_results]
    locator = value.get("spill")
    recovery = (
        f"Full sorted result stored at: {locator}. {SPILL_RETRIEVAL_HINT}"
        if locator
        else "The complete result could not be saved; narrow pattern or path to see more."
    )
    return "\n".join(page) + f"\n\n(Showing {len(page)} of {len(paths)} paths. {recovery})"


def _meta_bytes(meta: dict[str, Any]) -> int:
    return len(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _cap_meta(meta: dict[str, Any], key: str) -> dict[str, Any]:
    if _meta_bytes(meta) <= SEARCH_META_MAX_BYTES:
        return meta
    items = list(meta[key])
    while len(items) > 1 and _meta_bytes({**meta, key: items, "truncated": True}) > SEARCH_META_MAX_BYTES:
        items.pop()
    return {**meta, key: items, "truncated": True}


def glob_meta(value: dict[str, Any], max_results: int) -> dict[str, Any]:
    paths = value["paths"]
    meta = {
        "shape": "paths",
        "paths": paths[:max_results],
        "truncated": len(paths) > max_results,
        "total": len(paths),
    }
    return _cap_meta(meta, "paths")


def grep_meta(value: dict[str, Any], max_matches: int) -> dict[str, Any]:
    matches = value["matches"]
    files: dict[str, list[dict[str, Any]]] = {}
    for m in matches[:max_matches]:
        files.setdefault(m["path"], []).append(
            {"lineNumber": m["lineNumber"], "line": preview_line(m["line"])}
        )
    meta = {
        "shape": "matches",
        "files": [{"path": p, "matches": ms} for p, ms in files.items()],
        "truncated": len(matches) > max_matches,
        "total": len(matches),
    }
    return _cap_meta(meta, "files")


def _path_arg(args: dict[str, Any]) -> str | None:
    raw = args.get("path")
    if raw is not None and (not isinstance(raw, str) or not raw.strip()):
        raise plain_error("path must be a non-empty string when given")
    return raw


async def _watch_cancel(ctx: ToolContext, fn, *args, tool: str):
    """Run ``fn(*args, stop)`` (a walk) in a worker thread; ``ctx.cancelled`` sets ``stop`` promptly."""
    stop = threading.Event()
    work = asyncio.ensure_future(asyncio.to_thread(fn, *args, stop))
    cancel = asyncio.ensure_future(ctx.cancelled.wait())
    try:
        done, _ = await asyncio.wait({work, cancel}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            return work.result()
        stop.set()
        work.add_done_callback(
            lambda f: None if f.cancelled() else f.exception()
        )  # the thread ends on its own
        raise _aborted(tool)
    except asyncio.CancelledError:
        stop.set()
        raise
    finally:
        cancel.cancel()


def glob_tool(
    schema: dict[str, Any], *, max_results: int = GLOB_MAX_RESULTS, timeout_ms: int = SEARCH_TIMEOUT_MS
) -> ToolDefinition:
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
        render=lambda args, value: [{"type": "text", "text": render_glob(value, max_results)}],
        presentation_meta=lambda args, value: glob_meta(value, max_results),
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


__all__ = ["glob_tool", "grep_tool", "compile_glob"]
