"""The blocking ``grep`` search: ripgrep-compatible regexes (Python ``re`` for the common subset),
``--glob`` include checks, files read whole or streamed, lines previewed, a raw-output budget."""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from typing import Any

from dsh_tui.tools.base import ToolContext
from dsh_tui.tools.common import plain_error, search_error
from dsh_tui.tools.wsread import read_at_most

from . import walk
from .globs import _compile_user_glob
from .walk import _Aborted, _aborted, _Budget, _check, _display, _search_root

GREP_MAX_LINE_BYTES = 2000
STREAM_MIN_BYTES = 8 << 20
STREAM_CHUNK = 1 << 20
LONG_LINE = 16 << 20  # a longer line is searched up to here (bounded memory)
FILE_TIME_S = 10.0  # one file not read in this time (a huge file on a slow disk) is skipped




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


def _hit(number: int, line: str) -> tuple[int, str]:
    if line.endswith("\r"):
        line = line[:-1]
    if any("\udc80" <= ch <= "\udcff" for ch in line):
        line = "(line is not valid UTF-8)"
    return number, line


def _grep_file(
    abs_path: str, regex: re.Pattern[str], budget: _Budget, overhead: int, size: int | None = None,
    stop: threading.Event | None = None, deadline: float | None = None,
) -> list[tuple[int, str]]:
    """The matching lines of one regular file; [] for a binary file (a NUL byte: a sparse file's hole
    too), for one that is not a regular file when opened (a FIFO, a device: never read, never waited
    on), and for one not read within ``FILE_TIME_S`` (skipped, so the rest of the search goes on)."""
    try:
        fd = os.open(abs_path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return []
        if size is None or size != st.st_size:
            size = st.st_size
        if size > STREAM_MIN_BYTES:
            until = time.monotonic() + FILE_TIME_S
            if deadline is not None:
                until = min(until, deadline)
            return _grep_stream(fd, regex, budget, overhead, stop, until)
        data = read_at_most(fd, size + 1)
    except OSError:
        return []
    finally:
        os.close(fd)
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
        line_end = text.find("\n", m.start())
        if line_end == -1:
            line_end = end
        if start < pos:  # an empty match at a line end: it belongs to this line
            start = pos
        number += text.count("\n", counted, start)
        counted = start
        line = text[start:line_end]
        # A match may not cross lines (ripgrep's default): the line must match on its own.
        if m.end() <= line_end or regex.search(line) is not None:
            budget.spend(len(line) + overhead)
            out.append(_hit(number, line))
        pos = line_end + 1
    return out




def _grep_stream(
    fd: int, regex: re.Pattern[str], budget: _Budget, overhead: int, stop: threading.Event | None, until: float
) -> list[tuple[int, str]]:
    """Large files: by chunks, bounded memory (a line longer than ``LONG_LINE`` is cut there); a NUL byte
    anywhere makes it a skipped binary file; past ``until`` (or on ``stop``) it is skipped too."""
    out: list[tuple[int, str]] = []
    number = 0
    rest = b""

    def lines(block: list[bytes]) -> None:
        nonlocal number
        for raw in block:
            number += 1
            text = raw.decode("utf-8", "surrogateescape")
            if regex.search(text) is not None:
                budget.spend(len(text) + overhead)
                out.append(_hit(number, text))

    while True:
        if (stop is not None and stop.is_set()) or time.monotonic() > until:
            return []
        chunk = os.read(fd, STREAM_CHUNK)
        if not chunk:
            break
        if b"\x00" in chunk:
            return []
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        if len(rest) > LONG_LINE:
            rest = rest[:LONG_LINE]
        lines(parts)
    if rest:
        lines([rest])
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
                for number, line in _grep_file(root_abs, regex, budget, len(shown) + 100, None, stop, deadline):
                    matches.append({"path": shown, "lineNumber": number, "line": line})
        else:
            for rel, abs_path, st in walk._walk_files(root_abs, stop, deadline, respect_ignores=True):
                if include_rule is not None and not include_rule.regex.match(rel):
                    continue
                shown = _display(raw, root_abs, rel, cwd)
                hits = _grep_file(abs_path, regex, budget, len(shown) + 100, st.st_size, stop, deadline)
                if hits:
                    matches.extend({"path": shown, "lineNumber": n, "line": ln} for n, ln in hits)
                _check(stop, deadline)
    except _Aborted:
        raise _aborted("grep") from None
    return {"matches": matches}
