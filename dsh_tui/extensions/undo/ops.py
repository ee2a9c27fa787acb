"""What the session's turns changed, and putting it back: the fold of ``workspace-changes/*`` events, the
undo plan (with the files changed since by someone else), applying it, and the diff text.

Used by the app (``/undo``, ``/diff``, rewind), the command line (``dsh-tui undo`` / ``diff``) and the
built-in plugin (``dsh_tui/extensions/undo/__init__.py``). See docs/undo.md.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.extensions.undo.store import SnapshotError, SnapshotStore, current_blob
from dsh_tui.session.errors import DshError

TURN_EVENT = "workspace-changes/turn"
UNDO_EVENT = "workspace-changes/undo"
#: dsh 0.2's own marker: ``{turn}`` only (its summaries live in its process); written beside ours.
DSH_EVENT = "workspace/changes"


class UndoError(DshError):
    """Nothing to undo, a turn without changes, a store that lost the snapshot: one line for the user."""


@dataclass
class TurnChanges:
    turn: int
    seq: int
    cwd: str
    before: str
    after: str
    files: list[dict[str, Any]]
    skipped: list[str] = field(default_factory=list)
    undone: bool = False


def fold(events: list[dict]) -> list[TurnChanges]:
    """The turns that changed files, in order, each marked undone when a later undo covered it. A turn
    recorded twice (a record after an aborted turn's end) keeps its latest record."""
    by_turn: dict[int, TurnChanges] = {}
    for ev in events:
        t = ev.get("type")
        data = ev.get("data")
        if not isinstance(data, dict):
            continue
        if t == TURN_EVENT and isinstance(data.get("turn"), int):
            by_turn[data["turn"]] = TurnChanges(
                data["turn"], ev.get("seq", 0), str(data.get("cwd") or ""), str(data.get("before") or ""),
                str(data.get("after") or ""), [f for f in data.get("files") or [] if isinstance(f, dict)],
                [s for s in data.get("skipped") or [] if isinstance(s, str)])
        elif t == UNDO_EVENT:
            for n in data.get("turns") or []:
                if n in by_turn:
                    by_turn[n].undone = True
    return [by_turn[n] for n in sorted(by_turn)]


def changed_files(events: list[dict]) -> dict[int, list[dict[str, Any]]]:
    """turn -> the files it changed (for the timeline and the turn footers)."""
    return {tc.turn: tc.files for tc in fold(events)}


@dataclass
class FilePlan:
    path: str
    target: str | None  # blob id to put back (None: remove the file)
    mode: str | None
    expected: str | None  # what the last turn left (None: no file)
    status: str  # what the undo does: "restore" | "remove" | "recreate"


@dataclass
class Plan:
    cwd: str
    turns: list[int]
    files: list[FilePlan]
    conflicts: list[str]  # changed since the turn (by the user or a later command): not overwritten silently
    skipped: list[str]  # too large when snapshotted: left as they are

    def describe(self, limit: int = 30) -> str:
        what = f"turn {self.turns[0]}" if len(self.turns) == 1 else f"turns {self.turns[0]}–{self.turns[-1]}"
        lines = [f"Undo {what}: {len(self.files)} file{'s' if len(self.files) != 1 else ''}"]
        for fp in self.files[:limit]:
            mark = " (changed since)" if fp.path in self.conflicts else ""
            lines.append(f"  {fp.status:<8} {fp.path}{mark}")
        if len(self.files) > limit:
            lines.append(f"  … and {len(self.files) - limit} more")
        for s in self.skipped:
            lines.append(f"  skipped  {s} (too large to keep: left as it is)")
        return "\n".join(lines)


def plan(events: list[dict], turn: int | None = None) -> Plan:
    """The undo of the last turn that changed files (``turn`` None) or of every turn from ``turn`` on (the
    workspace as it was before turn ``turn``). Turns already undone are left out."""
    active = [tc for tc in fold(events) if not tc.undone]
    if turn is None:
        if not active:
            raise UndoError("nothing to undo: no turn of this session changed files (or all were undone)")
        chosen = [active[-1]]
    else:
        chosen = [tc for tc in active if tc.turn >= turn]
        if not chosen:
            raise UndoError(f"nothing to undo from turn {turn} on: no later turn changed files "
                            "(or they were undone)")
    cwd = chosen[0].cwd
    first: dict[str, dict] = {}
    last: dict[str, dict] = {}
    skipped: list[str] = []
    for tc in chosen:
        for f in tc.files:
            path = f.get("path")
            if not isinstance(path, str):
                continue
            first.setdefault(path, f)
            last[path] = f
        skipped.extend(s for s in tc.skipped if s not in skipped)
    files = []
    for path, f in first.items():
        target, mode = f.get("before"), f.get("beforeMode")
        expected = last[path].get("after")
        if target == expected:
            continue
        status = "remove" if target is None else "recreate" if expected is None else "restore"
        files.append(FilePlan(path, target, mode, expected, status))
    root = Path(cwd)
    conflicts = [fp.path for fp in files if current_blob(root / fp.path) != fp.expected]
    return Plan(cwd, [tc.turn for tc in chosen], files, conflicts, skipped)


def apply(p: Plan, *, force: bool = False, store: SnapshotStore | None = None) -> list[str]:
    """Put the files of ``p`` back. Refuses (``UndoError`` listing them) when files changed since the turn,
    unless ``force``. Returns the paths written or removed."""
    if p.conflicts and not force:
        raise UndoError("not undone: changed since the turn (undo would overwrite them): "
                        + ", ".join(p.conflicts[:10]) + (" …" if len(p.conflicts) > 10 else ""))
    store = store or SnapshotStore(p.cwd)
    missing = [fp.path for fp in p.files if fp.target is not None and not store.has(fp.target)]
    if missing:
        raise UndoError("the snapshot store no longer has the earlier content of: " + ", ".join(missing[:10]))
    done: list[str] = []
    for fp in p.files:
        try:
            store.restore(fp.path, fp.target, fp.mode)
        except (OSError, SnapshotError) as err:
            raise UndoError(f"{fp.path}: {err} (undone so far: {', '.join(done) or 'nothing'})") from None
        done.append(fp.path)
    return done


def undo_data(p: Plan, done: list[str]) -> dict[str, Any]:
    """The ``workspace-changes/undo`` event's data."""
    return {"turns": p.turns, "files": done, "cwd": p.cwd}


def files_plan(events: list[dict], turn: int) -> Plan | None:
    """The undo back to before ``turn``, or None when no turn from ``turn`` on changed files (rewind and
    fork offer "conversation and files" only then)."""
    try:
        p = plan(events, turn)
    except UndoError:
        return None
    return p if p.files else None


def undo_stored(store: Any, session_id: str, turn: int | None, *, force: bool = False) -> tuple[Plan, list[str]]:
    """Undo on a stored session that no process has open (``dsh-tui undo``, the browser's fork): the files
    put back, then the undo appended to its log (taking its lock: a session open elsewhere is refused
    before any file changes)."""
    from dsh_tui.store.lifecycle import resume

    p = plan(store.inspect(session_id).events, turn)
    if p.conflicts and not force:
        raise UndoError("not undone: changed since the turn (undo would overwrite them): "
                        + ", ".join(p.conflicts[:10]) + (" …" if len(p.conflicts) > 10 else ""))
    session, writer = resume(store, session_id)
    try:
        done = apply(p, force=force)
        session.append(UNDO_EVENT, undo_data(p, done), ignorable=True)
    finally:
        writer.close()
    return p, done


# -- diff ------------------------------------------------------------------------------------------------
def _text(store: SnapshotStore, oid: str | None) -> list[str] | None:
    """The lines of a blob ([] for none); None when it is binary."""
    if oid is None:
        return []
    data = store.blob(oid)
    if b"\0" in data[:8000]:
        return None
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def diff(events: list[dict], turn: int | None = None, *, numbered: bool = False,
         store: SnapshotStore | None = None) -> str:
    """What the session's turns changed (``turn``: that turn only), as a unified diff (``numbered``: each
    line with its old and new line numbers, for reading). Turns that were undone are left out."""
    turns = [tc for tc in fold(events) if not tc.undone]
    if turn is not None:
        turns = [tc for tc in fold(events) if tc.turn == turn]
        if not turns:
            raise UndoError(f"turn {turn} changed no files")
    if not turns:
        return ""
    store = store or SnapshotStore(turns[0].cwd)
    first: dict[str, dict] = {}
    last: dict[str, dict] = {}
    for tc in turns:
        for f in tc.files:
            if isinstance(f.get("path"), str):
                first.setdefault(f["path"], f)
                last[f["path"]] = f
    out: list[str] = []
    for path, f in first.items():
        a, b = f.get("before"), last[path].get("after")
        if a == b:
            continue
        try:
            old, new = _text(store, a), _text(store, b)
        except SnapshotError as err:
            out.append(f"{path}: {err}\n")
            continue
        absolute = path.startswith("/")  # a captured file outside the workspace
        name_a = "/dev/null" if a is None else path if absolute else f"a/{path}"
        name_b = "/dev/null" if b is None else path if absolute else f"b/{path}"
        if old is None or new is None:
            out.append(f"Binary files {name_a} and {name_b} differ\n")
            continue
        lines = list(difflib.unified_diff(old, new, name_a, name_b, n=3))
        if not numbered:
            out.extend(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
            continue
        out.append(f"{path} ({'added' if a is None else 'deleted' if b is None else 'modified'})\n")
        out.extend(_numbered(lines[2:]))
    return "".join(out)


def _numbered(lines: list[str]) -> list[str]:
    out = []
    o = n = 0
    for line in lines:
        if line.startswith("@@"):
            head = line.split()
            o = int(head[1][1:].split(",")[0])
            n = int(head[2][1:].split(",")[0])
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        body = line[1:].rstrip("\n")
        if line.startswith("-"):
            out.append(f"{o:>5}       - {body}\n")
            o += 1
        elif line.startswith("+"):
            out.append(f"      {n:>5} + {body}\n")
            n += 1
        else:
            out.append(f"{o:>5} {n:>5}   {body}\n")
            o += 1
            n += 1
    return out
