"""The composer's prompt history: Up/Down recall and the incremental history search.

Entries, newest first, each once: what was submitted from this composer in this run (slash commands too),
then the prompts of the open session (the user items of the chat's transcript fold, which is the session
log folded), then the prompts of this workspace's past sessions, read from the catalog's index in a
thread the first time the history is used (``dsh_tui/store/catalog/prompts.py``).

:class:`PromptHistory` is the navigation (no Textual): the draft being typed is kept when Up first leaves
it and comes back when Down goes past the newest entry; an entry edited while browsing keeps its edit
until the browse ends. :class:`ChatHistory` adds the chat's sources and the loading thread.
:class:`HistorySearch` is one search: the composer hands it its keys while it runs (``composer.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any


def _unique(texts: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for text in texts:
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out


class PromptHistory:
    """Up/Down over earlier prompts. ``current()`` gives the open session's prompts, newest first."""

    def __init__(self, current: Callable[[], list[str]] | None = None) -> None:
        self.current = current or (lambda: [])
        self.past: list[str] = []  # past sessions of the workspace, newest first
        self.submitted: list[str] = []  # sent from the composer in this run, oldest first
        self.entries: list[str] = []  # the browse's snapshot, newest first
        self.index = -1  # -1: the draft
        self.draft = ""
        self.edits: dict[int, str] = {}
        self._folded: list[str] = []

    @property
    def browsing(self) -> bool:
        return self.index >= 0

    def snapshot(self) -> list[str]:
        return _unique([*reversed(self.submitted), *self.current(), *self.past])

    def _begin(self, text: str) -> None:
        entries = self.snapshot()
        if entries != self.entries:
            self.edits.clear()
            self._folded = []
        self.entries = entries
        self.draft = text

    def record(self, text: str) -> None:
        """``text`` was submitted: it is the newest entry, and the browse ends."""
        text = text.strip()
        if text:
            if text in self.submitted:
                self.submitted.remove(text)
            self.submitted.append(text)
        self.reset()

    def reset(self) -> None:
        self.index = -1
        self.edits.clear()

    def add_past(self, prompts: list[str]) -> None:
        """The past sessions' prompts arrived: they are older than every entry, so a browse in progress
        keeps its place and can go on into them."""
        self.past = prompts
        if self.entries:
            known = set(self.entries)
            self.entries += [p for p in _unique(prompts) if p not in known]

    def _keep(self, text: str) -> None:
        if self.index >= 0:
            if text != self.entries[self.index]:
                self.edits[self.index] = text
            else:
                self.edits.pop(self.index, None)

    def _at(self, index: int) -> str:
        return self.edits.get(index, self.entries[index])

    def older(self, text: str) -> str | None:
        """The entry before the one shown (``text`` is what the composer holds now); None: none."""
        if self.index < 0:
            self._begin(text)
        if self.index + 1 >= len(self.entries):
            return None
        self._keep(text)
        self.index += 1
        return self._at(self.index)

    def newer(self, text: str) -> str | None:
        """The entry after the one shown, or the draft past the newest; None: not browsing."""
        if self.index < 0:
            return None
        self._keep(text)
        self.index -= 1
        return self.draft if self.index < 0 else self._at(self.index)

    def jump(self, index: int, text: str) -> str:
        """Show entry ``index`` of the current snapshot (a search accepted it); ``text`` is what the
        composer holds now (the draft when not browsing)."""
        if self.index < 0:
            self.draft = text
        else:
            self._keep(text)
        self.index = index
        return self._at(index)

    def matching(self, query: str) -> list[int]:
        """The indexes of the entries that hold ``query`` (case-insensitive), newest first."""
        self.find(query, len(self.entries))  # brings the folded copies up to date
        needle = query.casefold()
        return [i for i, text in enumerate(self._folded) if needle in text]

    def find(self, query: str, start: int, step: int = 1) -> tuple[int, int] | None:
        """The first entry from ``start`` (older with ``step`` 1, newer with -1) that holds ``query``
        (case-insensitive): (entry index, offset of the match); None: none."""
        if not self.entries:
            return None
        folded = self._folded
        if len(folded) != len(self.entries):
            folded += [e.casefold() for e in self.entries[len(folded):]]
        needle = query.casefold()
        i = start
        while 0 <= i < len(folded):
            at = folded[i].find(needle)
            if at >= 0:
                return i, at
            i += step
        return None


class ChatHistory(PromptHistory):
    """The chat's history: the open session's prompts from its transcript fold, the past sessions' from
    the catalog (loaded once, in a thread, the first time it is needed)."""

    def __init__(self, screen: Any) -> None:
        super().__init__(self._session_prompts)
        self.screen = screen
        self.loading = False
        self.loaded = False
        self.on_loaded: Callable[[], None] | None = None  # the composer's: a pending Up goes on

    def _session_prompts(self) -> list[str]:
        fold = getattr(self.screen, "fold", None)
        items = getattr(fold, "items", None) or []
        return [item.text.strip() for item in reversed(items) if item.kind == "user"]

    def _sources(self) -> tuple[list[Any], str | None, str | None]:
        """(extra session roots, workspace, open session id) as the session browser finds them."""
        app = self.screen.app
        harness = getattr(getattr(self.screen, "bridge", None), "harness", None)
        roots = list(getattr(app, "session_roots", None) or [])
        if harness is None:
            return roots, None, None
        root = harness.store_root()
        if root is not None:
            roots.append(root)
        cwd = (harness.header() or {}).get("cwd")
        return roots, cwd if isinstance(cwd, str) and cwd else None, harness.session_id()

    def load(self) -> None:
        """Start reading the past sessions' prompts (once; the result arrives through ``add_past``)."""
        if self.loading or self.loaded:
            return
        if getattr(getattr(self.screen, "bridge", None), "harness", None) is None:
            return  # the session is not open yet: its workspace and root are not known
        self.loading = True
        roots, cwd, sid = self._sources()
        self.screen.run_worker(lambda: self._read(roots, cwd or os.getcwd(), sid), thread=True,
                               group="composer-history", description="read the workspace's past prompts",
                               exit_on_error=False)

    def _read(self, roots: list[Any], cwd: str, sid: str | None) -> None:
        from dsh_tui.store.catalog import Catalog, resolve_roots
        from dsh_tui.store.catalog.prompts import workspace_prompts

        prompts: list[str] = []
        catalog = Catalog(resolve_roots(roots))
        try:
            prompts = workspace_prompts(catalog, cwd, exclude=[sid] if sid else [])
        except Exception:  # noqa: BLE001 - a catalog that cannot be read: the session's own history still works
            prompts = []
        finally:
            catalog.close()
            self.screen.app.call_from_thread(self._loaded, prompts)

    def _loaded(self, prompts: list[str]) -> None:
        self.loading = False
        self.loaded = True
        self.add_past(prompts)
        if self.on_loaded is not None:
            self.on_loaded()


SEARCH_HINT = "Enter accept · Esc cancel · {key}/Up older · Down newer"


class HistorySearch:
    """One incremental search of the history (started by ``composer.history_search``): the composer
    shows the match, the bar above it the query. Enter keeps the match in the composer, Esc restores what
    was there."""

    def __init__(self, composer: Any, history: PromptHistory, bar: Any, key_name: str) -> None:
        self.composer = composer
        self.history = history
        self.bar = bar
        self.key_name = key_name
        self.saved = composer.text
        self.saved_index = history.index
        self.saved_edits = dict(history.edits)
        self.saved_recalled = composer.recalled
        if history.index < 0:
            history._begin(self.saved)
        self.query = ""
        self.match: tuple[int, int] | None = None
        self.failed = False
        self.show()

    def show(self) -> None:
        count = len(self.history.entries)
        if self.match is not None:  # the match's rank among the entries holding the query, not among all
            hits = self.history.matching(self.query)
            where = f"match {hits.index(self.match[0]) + 1 if self.match[0] in hits else '?'} of {len(hits)}"
        elif not count:
            where = "loading…" if getattr(self.history, "loading", False) else "no history yet"
        else:
            where = f"{count} entries"
        state = "no match · " if self.failed else ""
        self.bar.show(self.query, f"{state}{where} · {SEARCH_HINT.format(key=self.key_name)}", failed=self.failed)

    def _find(self, start: int, step: int) -> None:
        if not self.query:
            self.match, self.failed = None, False
            self.composer.show_text(self.saved)
            self.show()
            return
        found = self.history.find(self.query, start, step)
        if found is None:
            self.failed = True  # the composer keeps the last match, as a shell's search does
        else:
            self.failed = False
            self.match = found
            index, at = found
            self.composer.show_text(self.history.entries[index], select=(at, at + len(self.query)))
        self.show()

    def type(self, text: str) -> None:
        self.query += text
        self._find(self.match[0] if self.match else 0, 1)

    def backspace(self) -> None:
        self.query = self.query[:-1]
        self._find(0, 1)

    def older(self) -> None:
        self._find(self.match[0] + 1 if self.match else 0, 1)

    def newer(self) -> None:
        if self.match is not None:
            self._find(self.match[0] - 1, -1)

    def refresh(self) -> None:
        """The entries grew (the past sessions' prompts arrived): look again if nothing matched."""
        if self.match is None and self.query:
            self._find(0, 1)
        else:
            self.show()

    def accept(self) -> None:
        if self.match is None:
            self.cancel()
            return
        self.history.index, self.history.edits = self.saved_index, self.saved_edits
        text = self.history.jump(self.match[0], self.saved)
        self.close()
        self.composer.show_text(text, recalled=True)

    def cancel(self) -> None:
        self.history.index, self.history.edits = self.saved_index, self.saved_edits
        self.close()
        self.composer.show_text(self.saved, recalled=self.saved_recalled)

    def close(self) -> None:
        self.bar.hide()
        self.composer.search = None
