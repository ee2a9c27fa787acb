"""The session browser's row actions: one object, ``SessionActions``, for what the list's keys do to the
selected session — open read-only (Enter), resume (**r**), a new session here (Ctrl+N), timeline (**t**), fork (**f**), rename (**n**), export (**e**), archive
(**a**), delete to the trash (**d**), restore or unarchive (Enter in a bucket), show subagents (**c**).

Every action takes its row the same way (``row_for``: refused in the trash or the archive with what to do
first; an unreadable or still-indexing row says so) and reports a failure the same way (``attempt``: one
error toast, never a traceback). A session open in the chat is changed through its live harness (its log is
this process's: a rename or an undo is appended there); any other through the catalog
(``dsh_tui.store.catalog``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dsh_tui.store import catalog as cat
from dsh_tui.store.catalog import SessionRow
from dsh_tui.ui.screens.modals import ChoiceModal, ConfirmModal, TextModal

if TYPE_CHECKING:
    from dsh_tui.ui.bridge import SessionBackend
    from dsh_tui.ui.screens.browser.screen import BrowserScreen

T = TypeVar("T")


def live_harness(app: Any) -> SessionBackend | None:
    return getattr(getattr(app, "bridge", None), "harness", None)


def live_root(app: Any) -> Path | None:
    """The session root of the app's live harness (``dsh-tui run --root R``, the demo, a resume)."""
    harness = live_harness(app)
    return harness.store_root() if harness is not None else None


def live_cwd(app: Any) -> str | None:
    """The workspace of the session the app's chat has open (the demo's is not the current directory)."""
    harness = live_harness(app)
    cwd = (harness.header() or {}).get("cwd") if harness is not None else None
    return cwd if isinstance(cwd, str) and cwd else None


def live_id(app: Any) -> str | None:
    """The id of the session the app's chat has open (its lock is this process's)."""
    harness = live_harness(app)
    return harness.session_id() if harness is not None else None


class _Failed:
    """``attempt``'s result when the action failed (and said so)."""


FAILED = _Failed()


class SessionActions:
    """The row actions of one browser screen (see the module docstring)."""

    def __init__(self, browser: BrowserScreen) -> None:
        self.browser = browser

    # -- the shared parts ----------------------------------------------------------------------------
    def in_archive(self) -> bool:
        """The bucket shown is the archive (not the trash)."""
        b = self.browser
        return b.trash_mode and b.bucket == cat.ARCHIVE_DIR

    def refuse_in_bucket(self, what: str) -> bool:
        """A trashed or archived row: say what to do first (True: refused)."""
        b = self.browser
        if not b.trash_mode:
            return False
        if self.in_archive():
            b.notify(f"This session is archived: unarchive it first (Enter), then {what} it.", severity="warning",
                     timeout=5)
        else:
            b.notify(f"This session is in the trash: restore it first (Enter), then {what} it.",
                     severity="warning", timeout=5)
        return True

    def current(self) -> Any:
        """The selected list entry, or None (said)."""
        entry = self.browser.list.current
        if entry is None:
            self.browser.notify("No session selected.", timeout=3)
        return entry

    def readable(self) -> SessionRow | None:
        """The selected row when it can be read (indexed, not unreadable), else None (said)."""
        entry = self.current()
        if entry is None:
            return None
        if entry.row.state == cat.UNREADABLE:
            self.browser.notify(f"Unreadable: {entry.row.reason}", severity="error", timeout=5)
            return None
        if entry.row.id is None:
            self.browser.notify("Still indexing this session…", timeout=3)
            return None
        return entry.row

    def row_for(self, what: str) -> SessionRow | None:
        """The row an action ``what`` works on: not in a bucket, readable."""
        if self.refuse_in_bucket(what):
            return None
        return self.readable()

    def attempt(self, verb: str, fn: Callable[[], T]) -> T | _Failed:
        """``fn()``, or ``FAILED`` after one error toast "<verb> failed: <why>"."""
        try:
            return fn()
        except Exception as err:  # noqa: BLE001 - shown to the user, never a traceback
            self.browser.notify(f"{verb} failed: {err}", severity="error", timeout=6)
            return FAILED

    def _live(self, row: SessionRow) -> bool:
        """``row`` is the session open in the chat (its live harness writes its log)."""
        return row.id is not None and row.id == live_id(self.browser.app)

    @property
    def app(self) -> Any:
        """The DshApp (``open_chat``, ``bridge``)."""
        return self.browser.app

    def _worker(self, work: Any, description: str, group: str = "browser-action") -> None:
        self.browser.run_worker(work, group=group, description=description)

    # -- open --------------------------------------------------------------------------------------
    def new_session(self) -> None:
        """A new session in this workspace, in the chat (the app's root: the live session's, the first
        ``--root``, else dsh's default)."""
        b = self.browser
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        provider, model, hint = b.provider_route()
        if provider is None:
            b.notify(hint or "No model provider is configured.", severity="warning", timeout=6)
            return
        if b.new_root is not None:
            root = b.new_root
        else:
            from dsh_tui.paths import default_sessions_root

            root = default_sessions_root()
        spec = HarnessSpec(root=root, cwd=Path(b.cwd), provider=provider, model=model)
        self.app.open_chat(lambda bridge: open_harness(bridge, spec))

    def open(self, row: SessionRow, *, at_seq: int | None = None, resume: bool = False) -> None:
        """Open ``row`` read-only (or resumed) in the chat screen; ``at_seq`` scrolls to an event."""
        b = self.browser
        opener = getattr(b.app, "open_session", None)
        if opener is not None:
            opener(row, at_seq=at_seq, resume=resume)
            return
        if resume:
            from dsh_tui.ui.harness import HarnessSpec, open_harness

            provider, model, hint = b.provider_route()
            if provider is None:
                b.notify(hint or "No model provider is configured.", severity="warning", timeout=6)
                return
            spec = HarnessSpec(root=Path(row.root), cwd=Path(row.cwd or b.cwd), provider=provider, model=model,
                               resume_id=row.id)
            self.app.open_chat(lambda bridge: open_harness(bridge, spec))
            return
        self._open_read_only(row, at_seq)

    def _open_read_only(self, row: SessionRow, at_seq: int | None) -> None:
        b = self.browser

        def load() -> None:
            try:
                res = cat._store_for(row).inspect(row.id)
            except Exception as err:  # noqa: BLE001 - shown to the user, never a traceback
                b.app.call_from_thread(b.notify, f"Cannot open: {err}", severity="error", timeout=6)
                return
            b.app.call_from_thread(self._show_read_only, res.header, res.events, at_seq)

        b.run_worker(load, thread=True, group="browser-open", description="load session")

    def _show_read_only(self, header: dict, events: list[dict], at_seq: int | None) -> None:
        b = self.browser
        from dsh_tui.ui.replay import ReplayHarness

        async def factory(_bridge):
            return ReplayHarness(header, events, preload_turns=1 << 30)

        chat = self.app.open_chat(factory)
        b.opened_at = None
        if at_seq is None:
            return
        if getattr(chat, "scroll_to_seq", None) is None:
            # A chat screen that cannot scroll to an event: show the event in the timeline instead.
            b.app.push_screen(self.timeline_screen(header, events, at_seq))
            return
        deadline = time.monotonic() + 10

        def try_scroll() -> None:
            # The session reaches the chat through the bridge; retry until it is folded.
            if chat.is_attached and chat.fold.items and chat.scroll_to_seq(at_seq):
                b.opened_at = at_seq
                return
            if time.monotonic() < deadline:
                b.set_timer(0.05, try_scroll)

        b.set_timer(0.05, try_scroll)

    def timeline_screen(self, header: dict, events: list[dict], at_seq: int | None) -> Any:
        from dsh_tui.ui.screens.timeline import TimelineScreen

        return TimelineScreen(header=header, events=events, focus_seq=at_seq)

    def resume(self) -> None:
        b = self.browser
        row = self.row_for("resume")
        if row is None:
            return
        if self._live(row) and b.chat_below() is not None:
            b.action_back()  # the chat's own session: back to it
            return
        if row.state == cat.OPEN_ELSEWHERE:
            b.notify("This session is open in another process.", severity="warning", timeout=5)
            return
        b.open_session(row, resume=True)

    def timeline(self) -> None:
        b = self.browser
        row = self.readable()
        if row is None:
            return
        at_seq = b.list.current.hit_seq if b.list.current else None

        def load() -> None:
            try:
                res = cat._store_for(row).inspect(row.id)
            except Exception as err:  # noqa: BLE001
                b.app.call_from_thread(b.notify, f"Cannot open: {err}", severity="error", timeout=6)
                return
            b.app.call_from_thread(b.app.push_screen, self.timeline_screen(res.header, res.events, at_seq))

        b.run_worker(load, thread=True, group="browser-open", description="load timeline")

    # -- fork -------------------------------------------------------------------------------------
    def fork(self) -> None:
        self._worker(self._fork(), "fork")

    async def _fork(self) -> None:
        b = self.browser
        row = self.row_for("fork")
        if row is None:
            return
        try:
            turns = cat.ended_turns(row)
        except Exception as err:  # noqa: BLE001
            b.notify(f"Cannot read the session: {err}", severity="error", timeout=6)
            return
        if not turns:
            b.notify("No completed turn to fork at.", severity="warning", timeout=4)
            return
        marks = {"aborted": " (cancelled)", "error": " (failed)", "max-tokens": " (cut at the output limit)"}
        choices = [(f"after turn {n}: {text}{marks.get(kind, '' if kind == 'completed' else f' ({kind})')}", n)
                   for n, text, kind in reversed(turns)]
        turn = await b.app.push_screen_wait(ChoiceModal(f"Fork “{row.display_title or row.id}” after which turn?",
                                                        choices))
        if turn is None:
            return
        files = await self._fork_files(row, turn)
        if files is False:
            return
        child = self.attempt("Fork", lambda: cat.fork_at_turn(row, turn, taken_titles=[r.title for r in b.rows]))
        if isinstance(child, _Failed):
            return
        b.notify(f"Forked after turn {turn}: {child}", timeout=4)
        b.reload(select=child)

    async def _fork_files(self, row: Any, turn: int) -> bool | None:
        """When turns after ``turn`` changed files: "conversation only" or "conversation and files" (those
        files put back first, the undo in the session's log). False: cancelled, or the undo failed."""
        from dsh_tui.extensions.undo import ops
        from dsh_tui.store.ids import store_for
        from dsh_tui.ui.screens.rewind import files_choices

        b = self.browser
        try:
            store = store_for(row)
            plan = await asyncio.to_thread(lambda: ops.files_plan(store.inspect(row.id).events, turn + 1))
        except Exception:  # noqa: BLE001 - no file changes to offer: the fork goes on as before
            return None
        if plan is None:
            return None
        choice = await b.app.push_screen_wait(ChoiceModal(
            f"Fork after turn {turn}: the turns after it changed files. What goes to the fork? (Esc: nothing)",
            files_choices(plan, "Fork")))
        if choice is None:
            return False
        if choice == "conversation":
            return None
        force = choice == "force"
        try:
            if self._live(row):  # open in the chat: its live log records the undo
                future = self.app.bridge.call(lambda h: h.undo_files(turn + 1, force))
                if future is None or not await asyncio.wrap_future(future):
                    raise ops.UndoError("see the notice")
            else:
                await asyncio.to_thread(ops.undo_stored, store, row.id, turn + 1, force=force)
        except Exception as err:  # noqa: BLE001
            b.notify(f"Files not put back: {err}", severity="error", timeout=6)
            return False
        return True

    # -- rename and export ----------------------------------------------------------------------------
    def rename(self) -> None:
        self._worker(self._rename(), "rename")

    async def _rename(self) -> None:
        b = self.browser
        row = self.row_for("rename")
        if row is None:
            return
        title = await b.app.push_screen_wait(TextModal("New title:", row.display_title or ""))
        if title is None or not title.strip():
            return
        try:
            if self._live(row):  # open in the chat: the live log appends it
                await asyncio.wrap_future(self.app.bridge.call(lambda h: h.set_title(title)))
            else:
                cat.rename(row, title)
        except Exception as err:  # noqa: BLE001
            b.notify(f"Rename failed: {err}", severity="error", timeout=6)
            return
        b.reload(select=row.id)

    def export(self) -> None:
        self._worker(self._export(), "export")

    async def _export(self) -> None:
        b = self.browser
        row = self.readable()
        if row is None:
            return
        fmt = await b.app.push_screen_wait(ChoiceModal(
            "Export as", [("Markdown (.md)", "md"), ("HTML (.html)", "html"), ("Raw log (.jsonl)", "jsonl")]))
        if fmt is None:
            return

        def write() -> None:  # a thread: the whole log is read and rendered
            from dsh_tui.export import default_filename, export_session

            try:
                text = export_session(str(row.id), fmt, roots=[row.root])
                out = Path(b.cwd) / default_filename(str(row.id), fmt)
                out.write_text(text, encoding="utf-8")
            except Exception as err:  # noqa: BLE001
                b.app.call_from_thread(b.notify, f"Export failed: {err}", severity="error", timeout=6)
                return
            b.app.call_from_thread(b.notify, f"Exported to {out}", timeout=5)

        b.run_worker(write, thread=True, group="browser-export", description="export")

    # -- archive, trash, restore ------------------------------------------------------------------------
    def archive(self) -> None:
        b = self.browser
        if self.in_archive():
            b.notify("Already archived (Enter unarchives it).", timeout=4)
            return
        row = self.row_for("archive")
        if row is None:
            return
        dest = self.attempt("Archive", lambda: cat.archive(row))
        if isinstance(dest, _Failed):
            return
        b.notify(f"Archived to {dest} (A lists the archive; Enter there unarchives)", timeout=4)
        b.reload()

    def delete(self) -> None:
        self._worker(self._delete(), "delete")

    async def _delete(self) -> None:
        b = self.browser
        if self.in_archive() and self.refuse_in_bucket("delete"):
            return
        if b.trash_mode:
            b.notify("Already in the trash (Enter restores it).", timeout=4)
            return
        entry = self.current()
        if entry is None:
            return
        row = entry.row
        name = row.display_title or row.id or row.path
        ok = await b.app.push_screen_wait(ConfirmModal(f"Move “{name}” to the trash? (restorable with T)",
                                                       "Move to trash"))
        if not ok:
            return
        dest = self.attempt("Delete", lambda: cat.move_to_trash(row))
        if isinstance(dest, _Failed):
            return
        b.notify(f"Moved to the trash: {dest}", timeout=4)
        b.reload()

    def restore(self, row: SessionRow) -> None:
        b = self.browser
        verb = "Unarchive" if self.in_archive() else "Restore"
        dest = self.attempt(verb, lambda: cat.restore(row))
        if isinstance(dest, _Failed):
            return
        b.notify(f"{verb[:-1]}d {row.display_title or row.id} to {dest.parent}", timeout=4)
        b.open_bucket(b.bucket)

    # -- lineage ------------------------------------------------------------------------------------
    def children(self) -> None:
        b = self.browser
        entry = self.current()
        if entry is None or not entry.row.id:
            return
        rid = entry.row.id
        if not any(r.is_subagent and r.parent == rid for r in b.rows):
            b.notify("No subagent sessions under this one.", timeout=3)
            return
        b.expanded.symmetric_difference_update({rid})
        b.rebuild(keep_cursor=True)
