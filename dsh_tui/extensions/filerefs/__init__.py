"""``@file`` references (dsh ``file-reference``, ``file-reference-local``;
docs/extensions.md, "@file references").

The mention stays plain text in the user's message: nothing is inlined. While the ``read`` tool is visible
the system prompt carries the section ``context:file-reference`` (order 99) — the built-in plugin
``file-reference``. The composer's completion uses ``PathIndex`` (an index of the cwd built off the UI
thread, 10,000 entries, skipping ``.git`` and ``node_modules``; 20 results a query) and ``mention_at`` /
``insertion`` (dsh's grammar and quoting rules).
"""

from __future__ import annotations

import heapq
import os
import re
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_tui.tools import wsread

SECTION_NAME = "context:file-reference"
SECTION_ORDER = 99
SECTION_TEXT = ("Paths prefixed with @ are files explicitly referenced by the user. Use the read tool when their "
                "contents are needed; do not claim to have inspected a file before reading it.")
MAX_RESULTS = 20
MAX_ENTRIES = 10_000
EXCLUDED = frozenset({".git", "node_modules"})
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def apply_file_reference(ctx: Any) -> None:
    from dsh_tui.runtime.prompt import Section

    async def on_assemble(_payload: dict, next_: Any) -> Any:
        assembly = await next_()
        if any(t.get("name") == "read" for t in assembly.tools) and \
                not any(s.name == SECTION_NAME for s in assembly.sections):
            assembly.sections.append(Section(SECTION_NAME, SECTION_ORDER, SECTION_TEXT))
        return assembly

    ctx.on("system-prompt/assemble", on_assemble)


@dataclass(frozen=True)
class Mention:
    """The ``@`` token at the cursor: ``start`` is the index of the ``@``, ``end`` the cursor."""

    start: int
    end: int
    query: str
    quoted: bool


def mention_at(line: str, column: int) -> Mention | None:
    """The completion token ending at ``column`` of ``line``: ``@<non-space>*`` or ``@"<no quote>*``, at the
    line's start or after whitespace."""
    head = line[:column]
    at = head.rfind("@")
    while at >= 0:
        if at == 0 or head[at - 1].isspace():
            rest = head[at + 1:]
            if rest.startswith('"'):
                if '"' not in rest[1:]:
                    return Mention(at, column, rest[1:], True)
            elif not any(c.isspace() for c in rest):
                return Mention(at, column, rest, False)
            return None
        at = head.rfind("@", 0, at)
    return None


def insertion(path: str, is_dir: bool, quoted: bool = False) -> str | None:
    """The text that replaces the token: ``@path``, ``@dir/``, ``@"with space"``, ``@"dir with space/``
    (a directory keeps its quote open); None for a path that cannot be written (controls or ``"``)."""
    if _CONTROLS.search(path) or '"' in path:
        return None
    if is_dir and not path.endswith("/"):
        path += "/"
    if quoted or any(c.isspace() for c in path):
        return f'@"{path}' if is_dir else f'@"{path}"'
    return f"@{path}"


class PathIndex:
    """The cwd's files and directories (relative, ``/``-separated, directories end in ``/``), built
    breadth-first in a background thread; ``search`` answers from what is indexed so far."""

    def __init__(self, root: Path | str, max_entries: int = MAX_ENTRIES) -> None:
        self.root = Path(root)
        self.max_entries = max_entries
        self.entries: list[str] = []
        self._lows: list[str] = []  # lower-cased entries and names, kept by the builder (search reads them)
        self._names: list[str] = []
        self.done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PathIndex:
        if self._thread is None:
            self._thread = threading.Thread(target=self._build, name="dsh-path-index", daemon=True)
            self._thread.start()
        return self

    def _build(self) -> None:
        try:
            root = os.fspath(self.root)
            queue: deque[tuple[str, str]] = deque([(root, "")])
            while queue and len(self.entries) < self.max_entries:
                path, rel = queue.popleft()
                try:
                    with os.scandir(path) as it:
                        items = sorted(it, key=lambda e: e.name)
                except OSError:
                    continue
                for entry in items:
                    if entry.name in EXCLUDED:
                        continue
                    try:
                        is_dir = entry.is_dir()
                        link = entry.is_symlink()
                    except OSError:
                        continue
                    # a symlink out of the workspace (or into /proc, /sys, /dev) is not offered; one inside
                    # is listed but not walked (no loops, no tree reached twice)
                    if link and not wsread.may_follow(entry.path, root):
                        continue
                    name = rel + entry.name
                    if is_dir:
                        if not link:
                            queue.append((entry.path, name + "/"))
                        name += "/"
                    # names and lows first: search() reads a prefix of the shortest list (entries)
                    self._names.append(entry.name.lower())
                    self._lows.append(name.lower())
                    self.entries.append(name)
                    if len(self.entries) >= self.max_entries:
                        break
        finally:
            self.done.set()

    def search(self, query: str, limit: int = MAX_RESULTS) -> list[str]:
        """Up to ``limit`` entries matching ``query`` (case-insensitive): those whose name starts with it,
        then whose path starts with it, then containing it; shorter paths first within each group."""
        q = query.lower()
        n = len(self.entries)  # the builder thread appends: read a consistent prefix
        entries, lows, names = self.entries[:n], self._lows[:n], self._names[:n]
        if not q:
            groups = [[e for e, low in zip(entries, lows) if "/" not in low.rstrip("/")], [], []]
        else:
            # each group is computed only while the earlier ones hold fewer than ``limit``
            first = [i for i, name in enumerate(names) if name.startswith(q) and lows[i] != q]
            second: list[int] = []
            third: list[int] = []
            if len(first) < limit:
                taken = set(first)
                second = [i for i, low in enumerate(lows) if low.startswith(q) and low != q and i not in taken]
                if len(first) + len(second) < limit:
                    taken.update(second)
                    third = [i for i, low in enumerate(lows) if q in low and low != q and i not in taken]
            groups = [[entries[i] for i in g] for g in (first, second, third)]
        out: list[str] = []
        for group in groups:  # the shortest of each group (a heap: "f" may match thousands)
            out += heapq.nsmallest(limit - len(out), group, key=lambda e: (len(e), e))
            if len(out) >= limit:
                break
        return out
