"""The agent inbox (docs/runtime.md, "Inbox").

Two ordered lists, ``next-turn`` and ``next-step``. Every mutation is first appended as a durable
``agent/inbox/spliced`` event (normalised JS splice coordinates), then applied to the in-memory lists,
then announced live (``agent/inbox/discarded`` per cancelled message, ``agent/inbox/inserted`` per
inserted message). The lists are rebuilt from the log on construction (resume) — only from the events
after the header's ``seedLength`` (dsh ``Inbox``): a fork child never replays its parent's queued input.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.session.rows import events_of

_SPLICED = frozenset({"agent/inbox/spliced"})

NEXT_TURN = "next-turn"
NEXT_STEP = "next-step"
TARGETS = (NEXT_TURN, NEXT_STEP)


class InboxError(DshError):
    pass


def seed_length(session: Any) -> int:
    """The durable fork boundary of ``session`` (header ``seedLength``; 0 when it was not forked). A resumed
    session's own stored prefix is *not* a seed here: its pending input is whatever its splices fold to."""
    header = getattr(session, "header", None) or {}
    n = header.get("seedLength")
    return n if type(n) is int and n > 0 else 0


class Inbox:
    def __init__(self, session: Any, notify: Callable[[str, dict], None] | None = None) -> None:
        self.session = session
        self._notify = notify or (lambda name, payload: None)
        self.lists: dict[str, list[dict]] = {NEXT_TURN: [], NEXT_STEP: []}
        first = seed_length(session)
        for ev in events_of(session.events, _SPLICED):  # a loaded v4 log decodes only these
            if ev["type"] == "agent/inbox/spliced" and ev["seq"] >= first:
                self._apply(ev["data"])

    # ---- views -------------------------------------------------------------------------------
    @property
    def next_turn(self) -> list[dict]:
        return self.lists[NEXT_TURN]

    @property
    def next_step(self) -> list[dict]:
        return self.lists[NEXT_STEP]

    def pending(self) -> bool:
        return bool(self.lists[NEXT_TURN] or self.lists[NEXT_STEP])

    def __len__(self) -> int:
        return len(self.lists[NEXT_TURN]) + len(self.lists[NEXT_STEP])

    def find(self, message_id: str) -> tuple[str, int] | None:
        for target in TARGETS:
            for i, m in enumerate(self.lists[target]):
                if m.get("id") == message_id:
                    return target, i
        return None

    # ---- the single mutation primitive -----------------------------------------------------------
    def _apply(self, data: dict) -> list[dict]:
        lst = self.lists[data["target"]]
        start = data["start"]
        removed_count = data.get("removedCount", 0)
        removed = lst[start : start + removed_count]
        lst[start : start + removed_count] = list(data.get("inserted", []))
        return removed

    def splice(
        self,
        target: str,
        start: int,
        removed_count: int,
        inserted: list[dict],
        *,
        canceled: bool = False,
    ) -> list[dict]:
        if target not in TARGETS:
            raise InboxError(f"invalid inbox target {target!r}")
        lst = self.lists[target]
        if start < 0 or start > len(lst) or removed_count < 0 or start + removed_count > len(lst):
            raise InboxError(f"invalid inbox splice at {start} (+{removed_count}) of {len(lst)}")
        if removed_count == 0 and not inserted:
            return []  # no-op splices are not recorded
        removed_ids = {m.get("id") for m in lst[start : start + removed_count]}
        seen: set[str] = set()
        for m in inserted:
            mid = m.get("id")
            if not isinstance(mid, str) or not mid:
                raise InboxError("inbox messages need a non-empty id")
            if mid in seen or (self.find(mid) is not None and mid not in removed_ids):
                raise InboxError(f"duplicate pending inbox message id {mid}")
            seen.add(mid)
        data: dict[str, Any] = {"target": target, "start": start}
        if removed_count:
            data["removedCount"] = removed_count
        data["inserted"] = list(inserted)
        if canceled:
            data["outcome"] = "canceled"
        self.session.append("agent/inbox/spliced", data)  # durable first
        removed = self._apply(data)
        if canceled:
            for m in removed:
                self._notify("agent/inbox/discarded", {"message": m})
        for m in inserted:
            self._notify("agent/inbox/inserted", {"message": m})
        return removed

    # ---- operations ------------------------------------------------------------------------------
    def append(self, target: str, message: dict) -> None:
        self.splice(target, len(self.lists[target]), 0, [message])

    def prepend(self, target: str, message: dict) -> None:
        self.splice(target, 0, 0, [message])

    def replace(self, message_id: str, message: dict) -> bool:
        where = self.find(message_id)
        if where is None:
            return False
        target, i = where
        self.splice(target, i, 1, [message], canceled=True)
        return True

    def remove(self, message_id: str) -> bool:
        where = self.find(message_id)
        if where is None:
            return False
        target, i = where
        self.splice(target, i, 1, [], canceled=True)
        return True

    def clear(self) -> None:
        for target in (NEXT_STEP, NEXT_TURN):
            n = len(self.lists[target])
            if n:
                self.splice(target, 0, n, [], canceled=True)

    def claim(self, target: str, turn: int) -> list[dict]:
        """Take all next-step input, plus one next-turn message when ``target`` is next-turn, in that
        order (dsh's code)."""
        claimed: list[dict] = []
        n = len(self.lists[NEXT_STEP])
        if n:
            claimed.extend(self.splice(NEXT_STEP, 0, n, []))
        if target == NEXT_TURN and self.lists[NEXT_TURN]:
            claimed.extend(self.splice(NEXT_TURN, 0, 1, []))
        for m in claimed:
            self._notify("agent/inbox/claimed", {"message": m, "turn": turn})
        return claimed


def user_message(content: str | list | dict, source: dict | None = None) -> dict:
    if isinstance(content, dict) and "role" in content:
        msg = dict(content)
        msg.setdefault("id", str(uuid.uuid4()))
        msg.setdefault("source", source or {"kind": "user"})
        return msg
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    return {"id": str(uuid.uuid4()), "role": "user", "content": blocks, "source": source or {"kind": "user"}}
