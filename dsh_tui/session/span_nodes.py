"""A node of the span tree (:mod:`dsh_tui.session.spans`): one thing that took time, or happened at a point,
with its children, its times (the events' own epoch ms) and the durations a viewer shows. The fold that
builds the tree is ``spans.SpanFold``, which re-exports this class.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from dsh_tui.session.stats import Usage


@dataclass(slots=True, eq=False)
class Node:
    """One span (or point) of the tree. ``end`` is None while it runs (or if it was never closed)."""

    kind: str
    label: str
    seq: int
    start: int
    end: int | None = None
    end_seq: int | None = None
    state: str = "running"  # running / pending (approval) / ok / error / aborted / unknown / interrupted / …
    turn: int = 0
    step: int = 0
    slot: int = 0  # tools: the parallel position
    children: list[Node] = field(default_factory=list)
    parent: Node | None = None
    open: bool = False  # expanded in a viewer (steps and tools start open)
    first_token: int | None = None  # requests: time of the first chunk
    first_chunk: int | None = None  # requests/messages: seq of the attempt's first chunk
    chunks: int = 0  # requests/messages: number of chunks folded in
    usage: Usage | None = None
    detail: str = ""  # a short extra: arguments, the approval reason, a failure code
    index: int = -1  # requests: position in SpanFold.requests
    ref: str = ""  # tools: the call id; subagents: the child id

    @property
    def duration_ms(self) -> int | None:
        return None if self.end is None else self.end - self.start

    @property
    def waiting_ms(self) -> int | None:
        return None if self.first_token is None else self.first_token - self.start

    @property
    def decoding_ms(self) -> int | None:
        if self.first_token is None or self.end is None:
            return None
        return self.end - self.first_token

    @property
    def depth(self) -> int:
        d, p = 0, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d

    @property
    def point(self) -> bool:
        return self.kind in ("usage", "message", "result", "files")

    def add(self, child: Node) -> Node:
        child.parent = self
        self.children.append(child)
        return child

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()

    def turn_node(self) -> Node | None:
        n: Node | None = self
        while n is not None and n.kind != "turn":
            n = n.parent
        return n
