"""The session browser: every session in the roots, scoped, filtered, searched, with lineage and actions.

Rows come from a disk scan (cheap: stat + cached index rows); new or changed logs are indexed by a
thread worker with its own SQLite connection while the list is already on screen ("indexing n/N").
Content search runs in a worker too; a hit opens the session at the matching event.

:class:`BrowserScreen` keeps the state its handlers (loading, the list, filter and search, open) all read
and write: rows, scope, filter, selection, expanded parents. Beside it: which rows are listed
(:mod:`.listing`), the row actions (:mod:`.actions`, one ``SessionActions``), the keys line (:mod:`.footer`),
the help and the lines' texts (:mod:`.texts`), the lineage (:mod:`.lineage`) and the dialogs
(:mod:`dsh_tui.ui.screens.modals`).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import Input, Static

from dsh_tui.store import catalog as cat
from dsh_tui.store.catalog import Catalog, SearchHit, SessionRow
from dsh_tui.ui.textual_compat import mount_toasts, notifications, run_own_binding
from dsh_tui.ui.widgets.sessionlist import ListEntry, PlainEntries, SessionList

from .actions import SessionActions, live_cwd, live_id, live_root
from .commands import BrowserCommands
from .footer import KeysFooter, browser_keys
from .listing import Listing
from .texts import HELP, empty_text, progress_label, scope_label

# per app: what the browser keeps between openings (scope, where the focus was, the selected session)
_MEMORY: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
PROGRESS_EVERY = 0.2  # seconds between progress/list refreshes while indexing


class FilterInput(Input):
    """The filter box: an ``Input`` whose keystrokes repaint only itself (as the chat's ``LightInput``,
    ``dsh_tui.ui.widgets.input``, which is not imported here: the chat widgets and the transcript fold it
    needs are not on the browser's way to its first frame)."""

    virtual_size = Reactive(Size(0, 0), layout=False, repaint=True)
    BINDINGS = [Binding("down", "screen.focus_list", "List", id="browser.list", show=False)]  # not a scroll

    async def _on_key(self, event: events.Key) -> None:
        # editing keys act in typing order (``run_own_binding``); Input's handler runs after this one
        if not event.is_printable and await run_own_binding(self, event.key):
            event.stop()
            event.prevent_default()


def _configured_route() -> tuple[Any, str, str]:
    """(provider, model, hint) from the settings, as ``dsh-tui run`` uses them."""
    from dsh_tui.llm.route import model_route

    return model_route()


class BrowserScreen(Screen):
    """See the module docstring."""

    COMMANDS = {BrowserCommands}

    HELP = HELP

    DEFAULT_CSS = """
    BrowserScreen { layout: vertical; }
    BrowserScreen #scope { height: 1; padding: 0 1; background: $boost; }
    BrowserScreen #filter { height: 3; border: tall $primary-muted; }
    BrowserScreen #filter:focus { border: tall $primary; }
    BrowserScreen #progress { height: 1; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("tab", "toggle_scope", "All/this workspace", id="browser.scope", priority=False),
        Binding("ctrl+f", "toggle_search", "Search content", id="browser.search"),
        Binding("escape", "escape", "Back", id="browser.escape", show=False),
        Binding("ctrl+b", "back", "Back to chat", id="browser.back", show=False),
        Binding("ctrl+n", "new_session", "New session", id="browser.new"),
        Binding("r", "resume", "Resume", id="browser.resume"),
        Binding("f", "fork", "Fork", id="browser.fork"),
        Binding("n", "rename", "Rename", id="browser.rename"),
        Binding("e", "export", "Export", id="browser.export"),
        Binding("a", "archive", "Archive", id="browser.archive", show=False),
        Binding("d,delete", "delete", "Delete", id="browser.delete"),
        Binding("t", "timeline", "Timeline", id="browser.timeline"),
        Binding("c", "children", "Subagents", id="browser.children", show=False),
        Binding("T", "trash", "Trash", id="browser.trash", show=False),
        Binding("A", "archived", "Archived", id="browser.archived", show=False),
        Binding("slash", "focus_filter", "Filter", id="browser.filter", show=False),
        Binding("f5", "refresh", "Refresh", id="browser.refresh", show=False),
    ]

    def __init__(self, app: Any = None, *, roots: list[str | os.PathLike] | None = None,
                 db_path: str | os.PathLike | None = None, cwd: str | None = None,
                 now_ms: Callable[[], int] | None = None, index_in_background: bool = True,
                 provider_route: Callable[[], tuple[Any, str, str]] | None = None) -> None:
        super().__init__()
        self.provider_route = provider_route or _configured_route
        if roots is not None:
            extra = list(roots)
        else:  # every root the app knows: the ones it was started with and the live session's
            extra = list(getattr(app, "session_roots", None) or [])
            root = live_root(app)
            if root is not None:
                extra.append(root)
        self.catalog = Catalog(cat.resolve_roots(extra), db_path)
        self.new_root = Path(extra[0]) if extra else None  # where Ctrl+N starts a session (else the default)
        self.cwd = cwd or live_cwd(app) or os.getcwd()  # "this workspace": the chat's, else the current
        self.listing = Listing(self.cwd)  # which rows are listed, and its caches
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.index_in_background = index_in_background
        self.rows: list[SessionRow] = []
        self.scope_all = False
        self.search_mode = False
        self.trash_mode = False  # a bucket's list is shown (the trash or the archive: ``bucket``)
        self.bucket = cat.TRASH_DIR
        self._scanned = False  # the roots were scanned once (an empty list then means no sessions)
        self.expanded: set[str] = set()
        self._labels: dict[str, str] = {}
        self.hits: list[SearchHit] = []
        self.indexing: tuple[int, int | None] | None = None
        self.loaded = threading.Event()  # first rows on screen (tests/benches wait on it)
        self.indexed = threading.Event()  # background indexing finished
        self._cancel = threading.Event()
        self.opened_at: int | None = None  # the event a content hit scrolled the chat to (tests read it)
        self._select_path: str | None = None  # select this row once it is listed (the last one selected)
        self._focusing_list = False  # ↓ in the filter asked the list for the focus; not moved yet
        self._told_slash = False
        self._auto_scope = False
        self.actions = SessionActions(self)  # the row actions (r f n e a d t c, Enter in a bucket)

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="scope")
        yield FilterInput(placeholder="Filter by title, workspace or id…   (Ctrl+F: search content, Tab: scope)",
                         id="filter")
        self.list = SessionList(now_ms=self.now_ms, id="sessions")
        yield self.list
        yield Static("", id="progress")
        yield KeysFooter()  # reads the focused widget's keys when it renders: the filter's, on the first frame

    async def on_mount(self) -> None:
        memory = _MEMORY.get(self.app) or {}
        self.scope_all = bool(memory.get("scope_all", False))
        self._select_path = memory.get("path")
        self._auto_scope = "scope_all" not in memory  # first open: no session here -> all workspaces
        self.list.live_id = live_id(self.app)
        if memory.get("focus") == "list":
            self.list.focus()
        else:
            self.query_one("#filter", Input).focus()
        # First paint from the directory listing joined with the index snapshot (no log is stat'ed
        # or read): the rows are there when the list first paints.
        try:
            rows = self.catalog.listing()
        except Exception:  # noqa: BLE001 - the index is only a cache; the revalidating scan lists from disk
            rows = []
        self._set_rows(rows)
        # Revalidate once the screen has painted: a worker that stats 10k files while the UI thread
        # is busy mounting loses the GIL on every syscall and runs several times slower.
        self.call_after_refresh(self._scan)
        await self._show_notices()

    async def _show_notices(self) -> None:
        """Mount the toasts of notices already raised (the app's "no model configured") with the screen,
        so they are on its first frame (awaited here: the screen paints once they are mounted). Textual
        mounts them from a callback queued when the screen resumes, which runs after the first frame;
        that callback then finds them mounted."""
        notes = notifications(self.app)
        if notes:
            await mount_toasts(self, notes)

    def on_unmount(self) -> None:
        self._remember()
        self._cancel.set()

    def on_screen_suspend(self) -> None:
        self._remember()

    def on_screen_resume(self) -> None:
        self.list.live_id = live_id(self.app)
        self.list.invalidate()

    def _remember(self) -> None:
        """Keep the scope, the focus and the selected session for the next browser of this app."""
        try:
            app = self.app
        except Exception:  # noqa: BLE001 - no app any more (torn down): nothing to keep
            return
        memory = _MEMORY.setdefault(app, {})
        memory["scope_all"] = self.scope_all
        if self.focused is not None:  # (none while the screen is being left)
            memory["focus"] = "list" if self.focused is self.list else "filter"
        current = self.list.current if self.list.is_attached else None
        if current is not None and not self.trash_mode:
            memory["path"] = current.row.path

    # -- loading ------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="browser-scan", description="scan session roots")
    def _scan(self) -> None:
        """Revalidate: stat every log (revisions), drop the gone, list the new, then index the new
        and grown logs, updating the rows on screen as it goes."""
        rows = self.catalog.scan()
        if self._cancel.is_set():
            return
        self.app.call_from_thread(self._set_rows, rows, True)
        todo = [r for r in rows if not r.indexed]
        if not todo or not self.index_in_background:
            self._save_snapshot()
            self.indexed.set()
            return
        last = [time.monotonic()]

        def progress(done: int, total: int, _row: SessionRow) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY or done == total:
                last[0] = now
                self.app.call_from_thread(self._progress, done, total)

        self.catalog.index(todo, progress=progress, cancel=self._cancel)
        if not self._cancel.is_set():
            self.app.call_from_thread(self._index_done, rows)
            self._save_snapshot()
        self.indexed.set()

    def _save_snapshot(self) -> None:
        try:
            self.catalog.save_snapshot()
        except Exception:  # noqa: BLE001 - a snapshot is only a first-paint hint (sqlite busy, disk full)
            pass

    def _index_done(self, rows: list[SessionRow]) -> None:
        # lineage and lock states are recomputed on the UI thread, so no paint sees them half-done
        self.catalog.post_process(rows)
        self.indexing = None
        self.rebuild(keep_cursor=True)

    def _set_rows(self, rows: list[SessionRow], revalidated: bool = False) -> None:
        self._scanned = self._scanned or revalidated
        if self.trash_mode:
            return  # the trash list stays until Esc
        self.rows = rows
        if self._auto_scope and rows:
            self._auto_scope = False
            if not self.scope_all and not self.listing.scoped(rows, False) and self.listing.scoped(rows, True):
                self.scope_all = True  # nothing in this workspace: show the sessions there are
        self.rebuild(keep_cursor=revalidated)
        if self._select_path is not None:  # the session selected when the browser was last left: on the
            for i, e in enumerate(self.list.entries):  # first rows only (never under a moving cursor)
                if e.row.path == self._select_path and e.hit_seq is None:
                    self.list.user_move(i)
                    break
            self._select_path = None
        self.loaded.set()

    def _progress(self, done: int | None, total: int | None) -> None:
        self.indexing = (done, total) if done is not None else None
        self.rebuild(keep_cursor=True)

    def action_refresh(self) -> None:
        self._scan()

    # -- building the visible list (which rows: ``listing.Listing``) --------------------------------------
    def rebuild(self, keep_cursor: bool = False, *, rows_changed: bool = True) -> None:
        if rows_changed:
            self.listing.rows_changed(self.rows)
        text = self.query_one("#filter", Input).value
        entries: Sequence[ListEntry]
        if self.trash_mode:
            entries = [ListEntry(r) for r in cat.sort_rows(self.rows)]
        elif self.search_mode:
            entries = self.listing.search_entries(self.rows, self.scope_all, self.hits)
        else:
            entries = self.listing.filtered(self.rows, self.scope_all, text, self.expanded)
        current = self.list.current
        self.list.empty_text = empty_text(self, text)
        self.list.set_entries(entries, keep_cursor=keep_cursor)
        plain = isinstance(entries, PlainEntries)
        if keep_cursor and current is not None and self.list.user_moved:  # (untouched: the top stays selected)
            pairs = ((e.path, None) for e in entries.rows) if isinstance(entries, PlainEntries) \
                else ((e.row.path, e.hit_seq) for e in entries)
            for i, key in enumerate(pairs):
                if key == (current.row.path, current.hit_seq):
                    self.list.move_to(i)
                    break
        self._update_header(len(entries) if plain else sum(1 for e in entries if e.hit_seq is None))

    def _update_header(self, shown: int) -> None:
        self._set_label("#scope", scope_label(self, shown))
        self._set_label("#progress", progress_label(self))
        self._refresh_footer()

    def _set_label(self, selector: str, text: str) -> None:
        # Static.update reflows the screen; most keystrokes leave these lines unchanged.
        if self._labels.get(selector) != text:
            self._labels[selector] = text
            self.query_one(selector, Static).update(Text(text))

    # -- input --------------------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if self.search_mode:
            self._search(event.value)
        else:
            self.rebuild(rows_changed=False)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.list.focus()

    def on_key(self, event: events.Key) -> None:
        # In the list, letters are commands: any other character types nothing (not even into the
        # filter, which a command letter never does either); "/" goes to the filter.
        if (self.focused is self.list and event.is_printable and event.character
                and event.key not in self.active_bindings):
            event.stop()
            self.app.bell()
            if not self._told_slash:  # said once; the bell after that
                self._told_slash = True
                self.notify("Letters are commands in the list: / filters.", timeout=3)

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self._focusing_list = False
        self._refresh_footer()
        self._remember()

    def _refresh_footer(self) -> None:
        for footer in self.query(KeysFooter):
            footer.refresh()

    def footer_items(self) -> list[tuple[str, str, int]]:
        """The keys the footer shows for where the focus is (``footer.browser_keys``)."""
        return browser_keys(self)

    @work(thread=True, exclusive=True, group="browser-search", description="content search")
    def _search(self, text: str) -> None:
        hits = self.catalog.search(text, limit=500) if text.strip() else []
        self.app.call_from_thread(self._show_hits, text, hits)

    def _show_hits(self, text: str, hits: list[SearchHit]) -> None:
        if text != self.query_one("#filter", Input).value:
            return  # a newer query is on its way
        self.hits = hits
        self.rebuild()

    def action_toggle_scope(self) -> None:
        if self.trash_mode:
            return
        self.scope_all = not self.scope_all
        self.rebuild(rows_changed=False)

    def action_toggle_search(self) -> None:
        self.search_mode = not self.search_mode
        self.trash_mode = False
        box = self.query_one("#filter", Input)
        box.placeholder = ("Search messages and tool output…   (Ctrl+F: back to filter)" if self.search_mode
                           else "Filter by title, workspace or id…   (Ctrl+F: search content, Tab: scope)")
        box.focus()
        if self.search_mode:
            self._search(box.value)
        else:
            self.rebuild()

    def action_escape(self) -> None:
        """Leave the trash, else clear the filter, else leave content search, else back to the chat."""
        box = self.query_one("#filter", Input)
        if self.trash_mode:
            self.trash_mode = False
            self.indexed.clear()
            self._scan()
            self.list.focus()
            return
        if box.value:
            box.value = ""
        elif self.search_mode:
            self.action_toggle_search()
        elif self.chat_below() is not None:
            self.action_back()
            return
        box.focus()

    def chat_below(self) -> Screen | None:
        """The chat screen this browser was opened over (Esc and Ctrl+B go back to it), or None."""
        try:
            stack = self.app.screen_stack
        except Exception:  # noqa: BLE001 - not running
            return None
        i = next((i for i, screen in enumerate(stack) if screen is self), 0)  # (the palette may be above)
        if i >= 1 and type(stack[i - 1]).__name__ == "ChatScreen":
            return stack[i - 1]
        return None

    def action_back(self) -> None:
        """Back to the chat this browser was opened over."""
        if self.chat_below() is None:
            self.notify("No chat is open under the session browser: Ctrl+N starts a new session.", timeout=4)
            return
        self._remember()
        if self.app.screen is self:
            self.app.pop_screen()
        else:  # from the command palette: once it has closed
            self.app.call_later(lambda: self.app.screen is self and self.app.pop_screen())

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_focus_list(self) -> None:
        if self._focusing_list:  # a second ↓ before the focus has moved (focus() is applied later)
            self.list.action_cursor_down()
            return
        self._focusing_list = True
        self.list.focus()

    def action_new_session(self) -> None:
        self.actions.new_session()

    # -- actions ------------------------------------------------------------------------------
    @on(SessionList.Selected)
    def _selected(self, event: SessionList.Selected) -> None:
        entry = self.list.current
        if entry is None:
            return
        if self.trash_mode:
            self.actions.restore(entry.row)
            return
        row = self.actions.readable()
        if row is not None:
            self.open_session(row, at_seq=entry.hit_seq)

    def open_session(self, row: SessionRow, *, at_seq: int | None = None, resume: bool = False) -> None:
        """Open ``row`` read-only (or resumed) in the chat screen; ``at_seq`` scrolls to an event."""
        self.actions.open(row, at_seq=at_seq, resume=resume)

    def action_resume(self) -> None:
        self.actions.resume()

    def action_timeline(self) -> None:
        self.actions.timeline()

    def action_fork(self) -> None:
        self.actions.fork()

    def action_rename(self) -> None:
        self.actions.rename()

    def action_export(self) -> None:
        self.actions.export()

    def action_archive(self) -> None:
        self.actions.archive()

    def action_delete(self) -> None:
        self.actions.delete()

    def action_children(self) -> None:
        self.actions.children()

    def action_trash(self) -> None:
        self.open_bucket(cat.TRASH_DIR)

    def action_archived(self) -> None:
        """The archived sessions (``a`` archives one; Enter here unarchives it)."""
        self.open_bucket(cat.ARCHIVE_DIR)

    def open_bucket(self, bucket: str) -> None:
        self.trash_mode = True
        self.bucket = bucket
        self.search_mode = False
        rows: list[SessionRow] = []
        for root in self.catalog.roots:
            rows += cat.bucket_rows(root, bucket)
        self.rows = rows
        self.rebuild()
        self.list.focus()

    def reload(self, select: str | None = None) -> None:
        self.trash_mode = False
        self.rows = self.catalog.refresh()
        self.rebuild(keep_cursor=select is None)
        if select is not None:
            for i, e in enumerate(self.list.entries):
                if e.row.id == select and e.hit_seq is None:
                    self.list.user_move(i)
                    break
