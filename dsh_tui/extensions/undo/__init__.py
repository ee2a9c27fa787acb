"""The ``workspace-changes`` built-in plugin: every turn's file changes recorded, so they can be undone.

Before a turn's first tool that may change files (anything but the read-only tools) runs, the workspace is
snapshotted into dsh-tui's own store (``store.py``); a file tool (``write``, ``edit``) keeps just its file
(``capture``), with no walk of the workspace. When the turn stops (or after its end, when it was cancelled)
the workspace is snapshotted again (if it was before) and the files that differ are recorded in the session
log:

- ``workspace/changes`` ``{turn}``: dsh 0.2's own marker, exactly its shape;
- ``workspace-changes/turn`` (plugin-owned, ``ignorable``: dsh skips it) ``{turn, cwd, before, after,
  files: [{path, before, after, beforeMode?, afterMode?, added, deleted, binary?}], total, skipped?}``,
  where ``before``/``after`` are snapshot trees and the files' blob ids in the store.

``/undo``, ``/diff``, rewind "conversation and files", ``dsh-tui undo`` / ``diff`` read these events
(``ops.py``); an undo appends ``workspace-changes/undo`` ``{turns, files, cwd}``. Sub-agent sessions are
not recorded (their parent's turn covers their changes). Config (``[plugins.workspace-changes]``):
``enabled`` (true), ``max_file_bytes`` (4 MiB: larger files are skipped, with a note), ``max_files`` (500
listed per turn), ``max_workspace_files`` (100,000: a bigger workspace is not snapshotted), ``max_store_mb``
(1024), ``dir`` (the store's folder). See docs/undo.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from typing import Any

from dsh_tui.extensions.undo.ops import DSH_EVENT, TURN_EVENT, UNDO_EVENT
from dsh_tui.extensions.undo.store import MAX_FILE_BYTES, MAX_FILES, Snapshot, SnapshotError, SnapshotStore

name = "workspace-changes"
__all__ = ["apply", "name", "READ_ONLY_TOOLS", "Recorder"]

log = logging.getLogger("dsh_tui.extensions.undo")

#: Tools that never change files: no snapshot before them.
READ_ONLY_TOOLS = frozenset({
    "read", "grep", "glob", "ls", "todo_write", "job_output", "job_list", "web_fetch", "web_search",
    "read_image", "ask_user_question", "skill", "task_output", "exit_plan_mode", "enter_plan_mode",
})
DEFAULTS: dict[str, Any] = {"max_file_bytes": MAX_FILE_BYTES, "max_files": 500, "max_store_mb": 1024}


class _Turn:
    """What one turn has kept so far: its snapshot before the first command, the file tools' files."""

    __slots__ = ("turn", "before", "captures", "recording")

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.before: asyncio.Future | None = None
        self.captures: dict[str, tuple[str | None, str | None] | None] = {}  # real path -> before side
        self.recording: asyncio.Future | None = None

    @property
    def kept(self) -> bool:
        return self.before is not None or bool(self.captures)


class Recorder:
    """One agent's turn recorder."""

    def __init__(self, ctx: Any, store: SnapshotStore, max_files: int, max_store_bytes: int) -> None:
        self.ctx = ctx
        self.store = store
        self.max_files = max_files
        self.max_store_bytes = max_store_bytes
        self.state = _Turn(0)
        self.recorded: set[int] = set()
        self.pending: set[asyncio.Task] = set()
        self.failed = False
        self.failure = ""  # why snapshots are off here (git missing, the home folder, too many files)
        self.snapshots = 0

    # -- the turn ---------------------------------------------------------------------------------------
    async def _roll(self, turn: int) -> _Turn:
        """The state of ``turn``; a previous turn that kept something and ended without stopping (cancelled,
        and the next turn began at once) is recorded first."""
        st = self.state
        if st.turn == turn:
            return st
        if st.kept:
            await self.record_state(st)
        if self.state is st:
            self.state = _Turn(turn)
        return self.state

    async def ensure_before(self, turn: int) -> None:
        st = await self._roll(turn)
        if st.before is None:
            if self.failed:  # git missing, a workspace too big: not retried every turn
                return
            st.before = asyncio.ensure_future(self._snapshot())
        await asyncio.shield(st.before)

    async def capture(self, turn: int, path: str) -> None:
        """Keep what is at ``path`` before a file tool's first change of it in this turn: a file outside the
        workspace, or one its snapshots do not cover (ignored, too large for them), is undoable too."""
        st = await self._roll(turn)
        if path in st.captures:
            return
        st.captures[path] = None  # taken (even if it cannot be kept)
        try:
            st.captures[path] = await asyncio.to_thread(self._read_side, path)
        except (OSError, SnapshotError) as err:
            log.info("workspace-changes: %s: %s", path, err)

    def _read_side(self, path: str) -> tuple[str | None, str | None] | None:
        """(blob id, mode) of what is at ``path`` now, kept in the store; (None, None): nothing there;
        None: not a file, or larger than the store keeps."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None, None
        if stat.S_ISLNK(st.st_mode):
            return self.store.write_blob(os.fsencode(os.readlink(path))), "120000"
        if not stat.S_ISREG(st.st_mode) or st.st_size > self.store.max_file_bytes:
            return None
        with open(path, "rb") as f:
            data = f.read(self.store.max_file_bytes + 1)
        if len(data) > self.store.max_file_bytes:
            return None
        return self.store.write_blob(data), "100755" if st.st_mode & 0o111 else "100644"

    async def _snapshot(self) -> Snapshot | None:
        try:
            return await asyncio.to_thread(self.store.snapshot)
        except SnapshotError as err:
            if not self.failed:
                self.failed = True
                self.failure = str(err)
                log.warning("workspace-changes: %s", err)
            return None

    async def record(self, turn: int | None) -> None:
        """The turn is stopping: record it (inside the turn, as dsh does); another turn's (or a payload
        without one, None) records nothing."""
        if self.state.turn == turn:
            await self.record_state(self.state)

    async def record_state(self, st: _Turn) -> None:
        """Snapshot again and append the turn's changes, once per turn. A failure here is logged: it never
        fails the turn."""
        if st.recording is None:
            st.recording = asyncio.ensure_future(self._record_safely(st))
        await asyncio.shield(st.recording)

    async def _record_safely(self, st: _Turn) -> None:
        try:
            await self._record(st)
        except Exception as err:  # noqa: BLE001 - recording is beside the turn
            log.warning("workspace-changes: turn %s not recorded: %r", st.turn, err)

    async def _record(self, st: _Turn) -> None:
        turn = st.turn
        if turn in self.recorded or not st.kept:
            return
        self.recorded.add(turn)
        before = await asyncio.shield(st.before) if st.before is not None else None
        after = await self._snapshot() if before is not None else None
        changes: list[Any] = []
        if before is not None and after is not None:
            try:
                changes = await asyncio.to_thread(self.store.changes, before.tree, after.tree)
            except SnapshotError as err:
                log.warning("workspace-changes: %s", err)
        skipped = sorted(set(after.skipped) - set(before.skipped)) if before and after and after.skipped else []
        files = []
        earliest = self._captured_sides(st.captures)
        for ch in changes[: self.max_files]:
            f: dict[str, Any] = {"path": ch.path, "before": ch.before, "after": ch.after,
                                 "added": ch.added, "deleted": ch.deleted}
            side = earliest.get(ch.path)
            if side is not None and side[0] != ch.before:  # a file tool changed it before the snapshot
                ch.before, ch.before_mode = side
                f["before"] = ch.before
                f["added"], f["deleted"] = await asyncio.to_thread(_counts, self.store, ch.before, ch.after)
                if ch.before == ch.after:
                    continue
            if ch.before_mode:
                f["beforeMode"] = ch.before_mode
            if ch.after_mode:
                f["afterMode"] = ch.after_mode
            if ch.binary:
                f["binary"] = True
            files.append(f)
        captured = await asyncio.to_thread(self._captured, st.captures, {ch.path for ch in changes})
        files.extend(captured)
        if not files and not skipped:
            return
        data: dict[str, Any] = {"turn": turn, "cwd": str(self.store.workspace),
                                "before": before.tree if before else None, "after": after.tree if after else None,
                                "files": files, "total": len(changes) + len(captured)}
        if skipped:
            data["skipped"] = skipped
        self.ctx.append(DSH_EVENT, {"turn": turn})
        self.ctx.append(TURN_EVENT, data)
        self.snapshots += 1
        if self.snapshots % 20 == 0:
            threading.Thread(target=self._maintain, daemon=True, name="snapshot-maintain").start()

    def _rel(self, path: str) -> str:
        root = str(self.store.workspace)
        return os.path.relpath(path, root) if path == root or path.startswith(root + os.sep) else path

    def _captured_sides(self, captures: dict) -> dict[str, tuple[str | None, str | None]]:
        return {self._rel(p): side for p, side in captures.items() if side is not None}

    def _captured(self, captures: dict, listed: set[str]) -> list[dict[str, Any]]:
        """The captured files (tool targets) that changed and the snapshots did not list."""
        out = []
        for path, side in list(captures.items()):
            if side is None:
                continue
            rel = self._rel(path)
            if rel in listed:
                continue
            now = self._read_side(path)
            if now is None or now == side:
                continue
            f: dict[str, Any] = {"path": rel, "before": side[0], "after": now[0], "captured": True}
            if side[1]:
                f["beforeMode"] = side[1]
            if now[1]:
                f["afterMode"] = now[1]
            f["added"], f["deleted"] = _counts(self.store, side[0], now[0])
            out.append(f)
        return out

    def _maintain(self) -> None:
        try:
            self.store.maintain(self.max_store_bytes)
        except (SnapshotError, OSError) as err:
            log.warning("workspace-changes: store maintenance: %s", err)

    def after_end(self) -> None:
        """The agent went idle: a turn that ended without stopping (cancelled, failed) is recorded now, after
        its end."""
        st = self.state
        if st.turn in self.recorded or not st.kept:
            return
        task = asyncio.ensure_future(self.record_state(st))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def settle(self) -> None:
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)

    def warm(self) -> None:
        """A workspace seen for the first time: its first snapshot (every file read once) starts now, beside
        the session, so the first turn does not wait for it."""
        if (self.store.git_dir / "index").exists():
            return

        def run() -> None:
            try:
                self.store.snapshot()
            except (SnapshotError, OSError) as err:
                log.info("workspace-changes: %s", err)

        threading.Thread(target=run, daemon=True, name="snapshot-warm").start()


def _counts(store: SnapshotStore, a: str | None, b: str | None) -> tuple[int, int]:
    """Lines added and deleted between two blobs (0, 0 for binary content)."""
    import difflib

    def lines(oid: str | None) -> list[str] | None:
        if oid is None:
            return []
        data = store.blob(oid)
        return None if b"\0" in data[:8000] else data.decode("utf-8", "replace").splitlines()

    old, new = lines(a), lines(b)
    if old is None or new is None:
        return 0, 0
    added = deleted = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            deleted += 1
    return added, deleted


#: File tools and the argument naming the file they change (captured before their first change in a turn).
WRITE_TOOLS = {"write": "file_path", "edit": "file_path", "str_replace_editor": "path", "notebook_edit": "notebook_path"}


def _eligible(ctx: Any) -> str | None:
    header = ctx.session.header
    if header.get("origin") == "subagent" or (header.get("delegationDepth") or 0) > 0:
        return None
    config = ctx.agent.config
    where = config.get("workspace") or config.get("cwd") or header.get("cwd")
    return str(where) if where else None


def apply(ctx: Any, config: Any = None) -> Recorder | None:
    cfg = {**DEFAULTS, **(dict(config) if isinstance(config, dict) else {})}
    cfg.pop("enabled", None)
    workspace = _eligible(ctx)
    if workspace is None or not os.path.isdir(workspace):
        return None
    base = cfg.get("dir")
    store = SnapshotStore(workspace, base, max_file_bytes=int(cfg["max_file_bytes"]),
                          max_files=int(cfg.get("max_workspace_files", MAX_FILES)))
    rec = Recorder(ctx, store, int(cfg["max_files"]), int(cfg["max_store_mb"]) * 1024 * 1024)

    async def execute(payload: dict, nxt: Any) -> Any:
        name = payload.get("name")
        if name not in READ_ONLY_TOOLS:
            try:
                await before_tool(payload, name)
            except Exception as err:  # noqa: BLE001 - the tool runs whatever the recorder's trouble
                log.warning("workspace-changes: %r", err)
        return await nxt()

    async def before_tool(payload: dict, name: Any) -> None:
        tool_ctx = getattr(payload.get("exec"), "ctx", None)
        turn = getattr(tool_ctx, "turn", None) or ctx.session.last_turn
        args = payload.get("arguments")
        raw = args.get(WRITE_TOOLS[name]) if name in WRITE_TOOLS and isinstance(args, dict) else None
        if isinstance(raw, str) and raw.strip():  # a file tool: its one file kept, no walk of the workspace
            base = str(getattr(tool_ctx, "cwd", None) or workspace)
            await rec.capture(turn, os.path.realpath(os.path.join(base, raw)))
        else:  # a command (or any other tool): the whole workspace
            await rec.ensure_before(turn)

    async def stopping(payload: dict) -> None:
        await rec.record(payload.get("turn"))

    def status(payload: Any) -> None:
        if isinstance(payload, dict) and payload.get("status") == "idle":
            rec.after_end()

    async def flush(_payload: Any = None) -> None:
        await rec.settle()

    ctx.commands.register("undo", "put back the files the last turn changed (/undo N: to before turn N)",
                          lambda call: _undo_command(call, rec), usage="/undo [turn]")
    ctx.commands.register("diff", "show what this session's turns changed (/diff N: turn N) as a numbered diff",
                          lambda call: _diff_command(call, rec), usage="/diff [turn]")
    ctx.on("tools/execute", execute, prepend=True)
    ctx.on("agent/turn-stopping", stopping)
    ctx.on("agent/status", status)  # not session/event: no listener on every streamed chunk
    ctx.on("session/flush", flush)
    rec.warm()
    return rec


def _turn_arg(call: Any, usage: str) -> int | None:
    from dsh_tui.runtime.commands import CommandError

    if not call.args:
        return None
    if not call.args.isdigit() or int(call.args) < 1:
        raise CommandError(f"Usage: {usage} (a turn number, 1 or more)")
    return int(call.args)


async def _undo_command(call: Any, rec: Recorder) -> Any:
    """``/undo [N]``: what would be put back, for the UI to ask about (``action: undo``); nothing is changed
    until the user says yes (``undo_files``)."""
    from dsh_tui.extensions.undo import ops
    from dsh_tui.runtime.commands import CommandError, CommandResult

    turn = _turn_arg(call, "/undo [turn]")
    if call.agent.status == "running":
        raise CommandError("A turn is running: /undo when it has ended (Esc cancels it).")
    await rec.settle()
    try:
        plan = await asyncio.to_thread(ops.plan, list(call.agent.session.events), turn)
    except ops.UndoError as err:
        if rec.failure:
            raise CommandError(f"Nothing to undo: file changes are not recorded here ({rec.failure})") from None
        raise CommandError(str(err)[:1].upper() + str(err)[1:]) from None
    return CommandResult(plan.describe(), action={"kind": "undo", "turn": turn, "files": [f.path for f in plan.files],
                                                  "conflicts": list(plan.conflicts), "turns": list(plan.turns)})


async def _diff_command(call: Any, rec: Recorder) -> Any:
    from dsh_tui.extensions.undo import ops
    from dsh_tui.runtime.commands import CommandError

    turn = _turn_arg(call, "/diff [turn]")
    await rec.settle()
    try:
        text = await asyncio.to_thread(ops.diff, list(call.agent.session.events), turn, numbered=True,
                                       store=rec.store)
    except (ops.UndoError, SnapshotError) as err:
        raise CommandError(str(err)) from None
    return text or "No file changes recorded in this session."


async def undo_files(agent: Any, turn: int | None, *, force: bool = False) -> tuple[list[int], list[str]]:
    """Undo on the live ``agent`` (after the user said yes): put the files back, then record it in the log
    (``workspace-changes/undo``). Returns (turns, paths). Raises ``ops.UndoError`` (files changed since, and
    not ``force``; nothing to undo)."""
    from dsh_tui.extensions.undo import ops

    plan = await asyncio.to_thread(ops.plan, list(agent.session.events), turn)
    done = await asyncio.to_thread(ops.apply, plan, force=force)
    agent.session.append(ops.UNDO_EVENT, ops.undo_data(plan, done), ignorable=True)
    return plan.turns, done


__all__ += ["undo_files", "UNDO_EVENT", "TURN_EVENT", "DSH_EVENT", "DEFAULTS"]
