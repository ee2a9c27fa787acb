"""The chat composer's completion: slash commands (and skills) at column 0, ``@`` paths in the workspace.

``Completer`` is the chat screen's controller for it (``chat.completer``); the screen's handlers of the
composer's ``Changed`` / ``SelectionChanged`` call ``refresh_soon`` (Textual registers ``@on`` handlers on the
screen class itself), and the composer asks ``key`` first for Up/Down/Enter/Tab/Esc while the list shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the completion list's module is imported when it is first shown
    from dsh_tui.ui.screens.chat import ChatScreen
    from dsh_tui.ui.widgets.completion import Candidate


class Completer:
    """The completion list of one chat screen's composer (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.path_index: Any = None  # dsh_tui.extensions.filerefs.PathIndex of the cwd, built on the first @
        self._index_timer: Any = None
        self._pending = False
        self._skill_names: list[tuple[str, str]] | None = None  # user-invocable skills, read when / opens
        self._shown_for: tuple[str, tuple[int, int]] | None = None  # the composer state the list was made for

    def refresh_soon(self) -> None:
        # a keystroke posts both Changed and SelectionChanged: one refresh after both
        if not self._pending:
            self._pending = True
            self.chat.call_later(self._refresh_once)

    def _refresh_once(self) -> None:
        self._pending = False
        self.refresh()

    def hide(self) -> None:
        if self.chat.built("completion") is not None:
            self.chat.completion.hide()

    def _state(self) -> tuple[str, tuple[int, int]]:
        composer = self.chat.composer
        row, col = composer.cursor_location
        return composer.document.get_line(row), (row, col)

    def refresh(self) -> None:
        chat = self.chat
        composer = chat.composer
        self._shown_for = self._state()
        if chat.read_only or composer.recalled or composer.selection.start != composer.selection.end:
            self.hide()
            return
        row, col = composer.cursor_location
        line = composer.document.get_line(row)
        candidates: list[Candidate] = []
        kind = ""
        if row == 0 and line.startswith("/") and col >= 1 and not any(c.isspace() for c in line[:col]):
            kind = "command"
            candidates = self._command_candidates(line, col)
        else:
            from dsh_tui.extensions.filerefs import mention_at

            mention = mention_at(line, col)
            if mention is not None:
                kind = "path"
                candidates = self._path_candidates(row, line, mention)
        if not candidates:
            self.hide()
            return
        chat.ensure_mounted(chat.completion)
        chat.completion.show(kind, candidates)

    def _command_candidates(self, line: str, col: int) -> list[Candidate]:
        from dsh_tui.ui.widgets.completion import Candidate

        commands = self.chat.commands.registry()
        if commands is None:
            return []
        end = col
        while end < len(line) and not line[end].isspace():
            end += 1
        query = line[1:col]
        out = [Candidate(f"/{c.name}", c.help, f"/{c.name} ", 0, 0, end) for c in commands.sorted()
               if c.name.startswith(query)]
        if self._skill_names is None or col == 1:
            self._skill_names = self.read_skills()
        taken = {c.name for c in commands.sorted()}
        out += [Candidate(f"/{name}", f"skill: {help_}", f"/{name} ", 0, 0, end) for name, help_ in self._skill_names
                if name.startswith(query) and name not in taken]
        return out

    def read_skills(self) -> list[tuple[str, str]]:
        harness = self.chat.bridge.harness
        return harness.skills() if harness is not None else []

    def _path_candidates(self, row: int, line: str, mention: Any) -> list[Candidate]:
        from dsh_tui.extensions.filerefs import PathIndex, insertion
        from dsh_tui.ui.widgets.completion import Candidate

        index = self.path_index
        if index is None:
            harness = self.chat.bridge.harness
            cwd = harness.cwd() if harness is not None and harness.live() else None
            if cwd is None:
                return []
            index = self.path_index = PathIndex(cwd).start()
        if not index.done.is_set() and self._index_timer is None:
            self._index_timer = self.chat.set_interval(0.1, self._index_progress)
        end = mention.end
        while end < len(line) and not line[end].isspace() and not mention.quoted:
            end += 1
        out = []
        for path in index.search(mention.query):
            is_dir = path.endswith("/")
            text = insertion(path.rstrip("/"), is_dir, mention.quoted)
            if text is None:
                continue
            out.append(Candidate(path, "", text + ("" if is_dir else " "), row, mention.start, end, reopen=is_dir))
        return out

    def _index_progress(self) -> None:
        """While the index builds: the list shown grows with it (a query with no match yet may find one)."""
        index = self.path_index
        if (index is None or index.done.is_set()) and self._index_timer is not None:
            self._index_timer.stop()
            self._index_timer = None
        if self.chat.composer.has_focus and not self.chat.read_only:
            self.refresh()

    def key(self, key: str) -> bool:
        """A key the composer offers the list first: True when the list took it."""
        completion = self.chat.completion
        if not completion.shown:
            return False
        if self._shown_for != self._state():
            # keys typed faster than the list's refresh (it runs after the composer's Changed message): a
            # list made for an earlier text must not decide what Enter or Tab inserts
            self._pending = False
            self.refresh()
            if not completion.shown:
                return False
        if key == "escape":
            completion.hide()
            return True
        if key in ("up", "down"):
            completion.move(-1 if key == "up" else 1)
            return True
        chosen = completion.current
        if chosen is None:
            return False
        if key == "enter":
            line = self.chat.composer.document.get_line(chosen.row)
            if line[chosen.start:chosen.end] == chosen.insert.rstrip():
                completion.hide()
                return False  # the token is complete: Enter sends (or runs the command)
        self._accept(chosen)
        return True

    def _accept(self, chosen: Candidate) -> None:
        composer = self.chat.composer
        line = composer.document.get_line(chosen.row)
        insert = chosen.insert
        if insert.endswith(" ") and line[chosen.end:chosen.end + 1].isspace():
            insert = insert[:-1]
        result = composer.replace(insert, (chosen.row, chosen.start), (chosen.row, chosen.end),
                                  maintain_selection_offset=False)
        composer.move_cursor(result.end_location)
        if not chosen.reopen:
            self.hide()
