"""Diff hunk positions: where a recorded write or edit's hunks start in the file lines the session has
seen (its earlier reads and writes of that file), kept per file by :class:`SeenFiles`."""

from __future__ import annotations

from typing import Any

from .items import ToolItem


def _hunk_lines(text: Any) -> list[str]:
    return text.split("\n") if isinstance(text, str) and text else []


def _hunk_starts(known: dict[int, str], diffs: list) -> list[int | None]:
    """Where each hunk's old lines (context included) start in ``known`` (line number -> text), in order."""
    starts: list[int | None] = []
    after = 1
    for hunk in diffs:
        old = _hunk_lines(hunk.get("oldText")) if isinstance(hunk, dict) else []
        found = None
        if old:
            for n in sorted(k for k, t in known.items() if k >= after and t == old[0]):
                if all(known.get(n + i) == line for i, line in enumerate(old)):
                    found = n
                    break
        elif not known:
            found = 1  # an empty file
        starts.append(found)
        if found is not None:
            after = found + len(old)
    return starts


class SeenFiles:
    """What the session's reads and writes showed of each file (absolute path -> {line number: text}),
    to put line numbers on later diff hunks (dsh records none)."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.files: dict[str, dict[int, str]] = {}

    def key(self, path: Any) -> str | None:
        if not isinstance(path, str) or not path:
            return None
        import posixpath

        if not posixpath.isabs(path) and self.workspace:
            path = posixpath.join(self.workspace, path)
        return posixpath.normpath(path)

    def track(self, item: ToolItem) -> None:
        meta = item.meta if isinstance(item.meta, dict) else {}
        args = item.args()
        key = self.key(args.get("file_path") or args.get("path"))
        if key is None:
            return
        if item.name in ("read", "read_file"):
            lines = meta.get("lines")
            if isinstance(lines, list):
                known = self.files.setdefault(key, {})
                for line in lines:
                    if isinstance(line, dict) and isinstance(line.get("number"), int):
                        known[line["number"]] = str(line.get("text", ""))
            return
        diffs = meta.get("diffs")
        if not isinstance(diffs, list):
            self.files.pop(key, None)
            return
        if item.name == "write" and isinstance(args.get("content"), str):
            old = self.files.get(key)
            if diffs and old is not None:
                item.hunk_starts = _hunk_starts(old, diffs)
            content = args["content"]
            self.files[key] = dict(enumerate(content.split("\n")[:-1] if content.endswith("\n")
                                              else content.split("\n"), 1)) if content else {}
            return
        tracked = self.files.get(key)
        if tracked is None:
            return
        known = tracked
        found = _hunk_starts(known, diffs)
        item.hunk_starts = found
        starts = [s for s in found if s is not None]
        if len(starts) != len(found):
            self.files.pop(key, None)  # lost track of where the file's lines are
            return
        for start, hunk in sorted(zip(starts, diffs), key=lambda pair: -pair[0]):
            old_lines = _hunk_lines(hunk.get("oldText"))
            new_lines = _hunk_lines(hunk.get("newText"))
            delta = len(new_lines) - len(old_lines)
            end = start + len(old_lines)
            shifted = {n if n < start else n + delta: t for n, t in known.items() if n < start or n >= end}
            shifted.update(enumerate(new_lines, start))
            known = shifted
        self.files[key] = known
