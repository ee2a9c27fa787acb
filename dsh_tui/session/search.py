"""Find text in a session's transcript: every item of the fold, not only what is on screen.

``TranscriptSearch`` keeps one lower-cased copy of the searchable text of every transcript item (cached
per item key and version, so a live session re-lowers only the items that changed) joined into one
string with a NUL between items. A query is then a few C-speed string scans over that string
(``str.count`` for the total, ``str.find`` / ``str.rfind`` to step), and a match maps to its item by a
bisect over the items' start offsets: no per-keystroke Python loop over the items
(``tests/bench/bench_search.py`` measures it on a 200k-event session).

Matches are case-insensitive and numbered from the oldest (1) to the newest; ``locate`` keeps the
current match near where it was as the query is refined, ``step`` moves older (-1) or newer (+1) and
wraps around.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from dsh_tui.session.transcript import (
    CompactionItem,
    ContextItem,
    DividerItem,
    FooterItem,
    Item,
    RetryItem,
    StreamItem,
    ToolItem,
    UserItem,
)

SEPARATOR = "\x00"  # between items: no query contains it, so no match spans two items


def item_text(item: Item) -> str:
    """The text of ``item`` a search looks at: what the item shows, expanded (a tool's arguments and
    its whole result, a reasoning row's whole text)."""
    if isinstance(item, (UserItem, DividerItem)):
        return item.text
    if isinstance(item, StreamItem):
        return item.text
    if isinstance(item, ToolItem):
        if item.tool == "bash":  # the card shows the command, not its description or the JSON around it
            args = item.args()
            command = args.get("command")
            if isinstance(command, str):
                return f"{args.get('workdir') or ''} $ {command}\n{item.result}"
        return f"{item.name} {item.arguments}\n{item.result}"
    if isinstance(item, ContextItem):
        return f"{item.producer}\n{item.text}"
    if isinstance(item, FooterItem):
        return item.reason_text
    if isinstance(item, RetryItem):
        return item.describe()
    if isinstance(item, CompactionItem):
        return f"{item.describe()}\n{item.summary}"
    return ""


class Match:
    """One match: its offset in the joined text, its number (1 = oldest) and the item it is in."""

    __slots__ = ("offset", "number", "index", "item")

    def __init__(self, offset: int, number: int, index: int, item: Item) -> None:
        self.offset = offset
        self.number = number
        self.index = index  # the item's position in the fold's items
        self.item = item

    def __repr__(self) -> str:
        return f"Match(offset={self.offset}, number={self.number}, index={self.index}, key={self.item.key!r})"


class TranscriptSearch:
    """Case-insensitive search over a list of transcript items (see the module docstring)."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[int, str]] = {}  # item key -> (version, lowered text)
        self._items: list[Item] = []
        self._starts: list[int] = []
        self._corpus = ""
        self._signature: Any = None
        self.query = ""
        self.count = 0
        self.current: Match | None = None

    # -- the joined text -------------------------------------------------------------------------
    @staticmethod
    def signature(items: list[Item]) -> Any:
        """Changes when an item is added, removed or updated (O(items), no text touched)."""
        if not items:
            return (0,)
        return (len(items), id(items[0]), id(items[-1]), sum(item.version for item in items))

    def sync(self, items: list[Item]) -> bool:
        """Bring the joined text up to date with ``items``; True when it changed."""
        signature = self.signature(items)
        if signature == self._signature:
            return False
        texts = self._texts
        fresh: dict[str, tuple[int, str]] = {}
        parts: list[str] = []
        starts: list[int] = []
        offset = 0
        for item in items:
            cached = texts.get(item.key)
            if cached is None or cached[0] != item.version:
                cached = (item.version, item_text(item).lower().replace(SEPARATOR, " "))
            fresh[item.key] = cached
            starts.append(offset)
            parts.append(cached[1])
            offset += len(cached[1]) + 1
        self._texts = fresh
        self._items = list(items)
        self._starts = starts
        self._corpus = SEPARATOR.join(parts)
        self._signature = signature
        return True

    @property
    def size(self) -> int:
        """Characters of searchable text."""
        return len(self._corpus)

    def lowered(self, item: Item) -> str:
        """The item's searchable text in lower case (cached while its version holds)."""
        cached = self._texts.get(item.key)
        if cached is None or cached[0] != item.version:
            return item_text(item).lower()
        return cached[1]

    def nth_in_item(self, match: Match) -> int:
        """Which occurrence of the query in its item ``match`` is (0 = the item's first)."""
        return self._corpus.count(self.query, self._starts[match.index], match.offset)

    # -- queries ---------------------------------------------------------------------------------
    def _match(self, offset: int) -> Match:
        index = bisect_right(self._starts, offset) - 1
        number = self._corpus.count(self.query, 0, offset) + 1
        return Match(offset, min(number, self.count), index, self._items[index])

    def locate(self, query: str, near: int | None = None) -> Match | None:
        """Search for ``query``: the match at or before offset ``near`` (the current match when the
        query is refined; None: the newest match), else the first one after it."""
        query = query.lower()
        self.query = query
        corpus = self._corpus
        if not query:
            self.count, self.current = 0, None
            return None
        self.count = corpus.count(query)
        if not self.count:
            self.current = None
            return None
        if near is None:
            offset = corpus.rfind(query)
        else:
            offset = corpus.rfind(query, 0, near + len(query))
            if offset < 0:
                offset = corpus.find(query, near)
        self.current = self._match(offset) if offset >= 0 else None
        return self.current

    def refine(self, query: str) -> Match | None:
        """``locate`` near the current match (the incremental search's keystroke)."""
        return self.locate(query, None if self.current is None else self.current.offset)

    def step(self, direction: int) -> Match | None:
        """The next older (``direction`` < 0) or newer match, wrapping around at either end."""
        query, corpus, current = self.query, self._corpus, self.current
        if not query or not self.count:
            return None
        if current is None:
            offset = corpus.rfind(query)
        elif direction < 0:
            offset = corpus.rfind(query, 0, current.offset + len(query) - 1)
            if offset < 0:
                offset = corpus.rfind(query)
        else:
            offset = corpus.find(query, current.offset + len(query))
            if offset < 0:
                offset = corpus.find(query)
        self.current = self._match(offset)
        return self.current

    def requery(self, items: list[Item]) -> Match | None:
        """After the items changed: the same query again, kept on the same item when it still matches."""
        current = self.current
        within = current.offset - self._starts[current.index] if current is not None else 0
        if not self.sync(items) or not self.query:
            return self.current
        near = None
        if current is not None:
            try:
                near = self._starts[self._items.index(current.item)] + within
            except ValueError:
                near = None
        return self.locate(self.query, near)


def copy_body(item: Item) -> tuple[str, str]:
    """(text, name) a copy of ``item`` takes: an answer's Markdown, a tool's output, a prompt's text."""
    kind = item.kind
    if isinstance(item, ToolItem):
        if item.result:
            return item.result, "tool output"
        return item.arguments, "tool call"
    if kind == "assistant":
        return getattr(item, "text", ""), "answer"
    if kind == "user":
        return getattr(item, "text", ""), "prompt"
    if kind == "thinking":
        return getattr(item, "text", ""), "reasoning"
    if kind == "compaction":
        return getattr(item, "summary", "") or item_text(item), "compaction summary"
    return item_text(item), kind


def find_all(text: str, query: str) -> list[int]:
    """Offsets of every (non-overlapping, case-insensitive) occurrence of ``query`` in ``text``."""
    if not query:
        return []
    low, query = text.lower(), query.lower()
    out: list[int] = []
    at = low.find(query)
    while at >= 0:
        out.append(at)
        at = low.find(query, at + len(query))
    return out
