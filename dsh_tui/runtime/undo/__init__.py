"""The ``workspace-changes`` built-in plugin: every turn's file changes recorded, so they can be undone.

Before a turn's first tool that may change files (anything but the read-only tools) runs, the workspace is
snapshotted into dsh-tui's own store (``store.py``); when the turn stops (or after its end, when it was
cancelled) it is snapshotted again and the files that differ are recorded in the session log:

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
import threading
from typing import Any

from dsh_tui.runtime.undo.ops import DSH_EVENT, TURN_EVENT, UNDO_EVENT
from dsh_tui.runtime.undo.store import MAX_FILE_BYTES, MAX_FILES, Snapshot, SnapshotError, SnapshotStore

name = "workspace-changes"
__all__ = ["apply", "name", "READ_ONLY_TOOLS", "Recorder"]

log = logging.getLogger("dsh_tui.runtime.undo")

#: Tools that never change files: no snapshot before them.
READ_ONLY_TOOLS = frozenset({
    "read", "grep", "glob", "ls", "todo_write", "job_output", "job_list", "web_fetch", "web_search",
    "read_image", "ask_user_question", "skill", "task_output", "exit_plan_mode", "enter_plan_mode",
})
DEFAULTS: dict[str, Any] = {"max_file_bytes": MAX_FILE_BYTES, "max_files": 500, "max_store_mb": 1024}


class Recorder:
    """One agent's turn recorder."""

    def __init__(self, ctx: Any, store: SnapshotStore, max_files: int, max_store_bytes: int) -> None:
        self.ctx = ctx
        self.store = store
        self.max_files = max_files
        self.max_store_bytes = max_store_bytes
        self.turn = 0
        self.before: asyncio.Future | None = None  # the turn's first snapshot (taken once)
        self.recorded: set[int] = set()
        self.pending: set[asyncio.Task] = set()
        self.failed = False
        self.snapshots = 0

    # -- the turn ---------------------------------------------------------------------------------------
    async def ensure_before(self, turn: int) -> None:
        if turn != self.turn:
            self.turn, self.before = turn, None
        if self.before is None:
            if self.failed:  # git missing, a workspace too big: not retried every turn
                return
            self.before = asyncio.ensure_future(self._snapshot())
        await asyncio.shield(self.before)

    async def _snapshot(self) -> Snapshot | None:
        try:
            return await asyncio.to_thread(self.store.snapshot)
        except SnapshotError as err:
            if not self.failed:
                self.failed = True
                log.warning("workspace-changes: %s", err)
            return None

    async def record(self, turn: int) -> None:
        """Snapshot again and append the turn's changes (once per turn)."""
        if turn != self.turn or self.before is None or turn in self.recorded:
            return
        before = await asyncio.shield(self.before)
        if before is None or turn in self.recorded:
            return
        self.recorded.add(turn)
        after = await self._snapshot()
        if after is None:
            return
        try:
            changes = await asyncio.to_thread(self.store.changes, before.tree, after.tree)
        except SnapshotError as err:
            log.warning("workspace-changes: %s", err)
            return
        skipped = sorted(set(after.skipped) - set(before.skipped)) if after.skipped else []
        if not changes and not skipped:
            return
        files = []
        for ch in changes[: self.max_files]:
            f: dict[str, Any] = {"path": ch.path, "before": ch.before, "after": ch.after,
                                 "added": ch.added, "deleted": ch.deleted}
            if ch.before_mode:
                f["beforeMode"] = ch.before_mode
            if ch.after_mode:
                f["afterMode"] = ch.after_mode
            if ch.binary:
                f["binary"] = True
            files.append(f)
        data: dict[str, Any] = {"turn": turn, "cwd": str(self.store.workspace), "before": before.tree,
                                "after": after.tree, "files": files, "total": len(changes)}
        if skipped:
            data["skipped"] = skipped
        self.ctx.append(DSH_EVENT, {"turn": turn})
        self.ctx.append(TURN_EVENT, data)
        self.snapshots += 1
        if self.snapshots % 20 == 0:
            threading.Thread(target=self._maintain, daemon=True, name="snapshot-maintain").start()

    def _maintain(self) -> None:
        try:
            self.store.maintain(self.max_store_bytes)
        except (SnapshotError, OSError) as err:
            log.warning("workspace-changes: store maintenance: %s", err)

    def after_end(self, turn: int) -> None:
        """A turn that ended without stopping (cancelled, failed): record it after its end."""
        if turn in self.recorded or self.before is None or turn != self.turn:
            return
        task = asyncio.ensure_future(self.record(turn))
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
        if payload.get("name") not in READ_ONLY_TOOLS:
            ex = payload.get("exec")
            turn = getattr(getattr(ex, "ctx", None), "turn", None) or ctx.session.last_turn
            await rec.ensure_before(turn)
        return await nxt()

    async def stopping(payload: dict) -> None:
        await rec.record(payload.get("turn"))

    def event(payload: Any) -> None:
        ev = payload.get("event") if isinstance(payload, dict) and "event" in payload else payload
        if isinstance(ev, dict) and ev.get("type") == "turn/end":
            rec.after_end((ev.get("data") or {}).get("turn"))

    async def flush(_payload: Any = None) -> None:
        await rec.settle()

    ctx.commands.register("undo", "put back the files the last turn changed (/undo N: to before turn N)",
                          lambda call: _undo_command(call, rec), usage="/undo [turn]")
    ctx.commands.register("diff", "show what this session's turns changed (/diff N: turn N) as a numbered diff",
                          lambda call: _diff_command(call, rec), usage="/diff [turn]")
    ctx.on("tools/execute", execute, prepend=True)
    ctx.on("agent/turn-stopping", stopping)
    ctx.on("session/event", event)
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
    from dsh_tui.runtime.commands import CommandError, CommandResult
    from dsh_tui.runtime.undo import ops

    turn = _turn_arg(call, "/undo [turn]")
    if call.agent.status == "running":
        raise CommandError("A turn is running: /undo when it has ended (Esc cancels it).")
    await rec.settle()
    try:
        plan = await asyncio.to_thread(ops.plan, list(call.agent.session.events), turn)
    except ops.UndoError as err:
        raise CommandError(str(err)[:1].upper() + str(err)[1:]) from None
    return CommandResult(plan.describe(), action={"kind": "undo", "turn": turn, "files": [f.path for f in plan.files],
                                                  "conflicts": list(plan.conflicts), "turns": list(plan.turns)})


async def _diff_command(call: Any, rec: Recorder) -> Any:
    from dsh_tui.runtime.commands import CommandError
    from dsh_tui.runtime.undo import ops

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
    from dsh_tui.runtime.undo import ops

    plan = await asyncio.to_thread(ops.plan, list(agent.session.events), turn)
    done = await asyncio.to_thread(ops.apply, plan, force=force)
    agent.session.append(ops.UNDO_EVENT, ops.undo_data(plan, done), ignorable=True)
    return plan.turns, done


__all__ += ["undo_files", "UNDO_EVENT", "TURN_EVENT", "DSH_EVENT", "DEFAULTS"]
