"""Abort signals: one controller per turn / activity
(docs/runtime.md, "Event bus dispatch modes", abort signals).

``AbortSignal.abort(reason)`` is synchronous and first-cause-wins. Code checks ``throw_if_aborted()`` at
the same points the TypeScript loop does; long waits go through ``race(awaitable)``, which cancels the
awaited work when the signal aborts and raises ``AbortError`` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class AbortError(Exception):  # control flow (a cancel unwinding), not a failure: not a DshError
    """The activity was cancelled; ``reason`` is the cancel cause dict (e.g. ``{"kind": "user"}``)."""

    name = "AbortError"

    def __init__(self, reason: Any = None) -> None:
        super().__init__("aborted")
        self.reason = reason


class AbortSignal:
    __slots__ = ("aborted", "reason", "_tasks", "_callbacks", "_event")

    def __init__(self) -> None:
        self.aborted = False
        self.reason: Any = None
        self._tasks: set[asyncio.Future] = set()
        self._callbacks: list[Callable[[Any], None]] = []
        self._event: asyncio.Event | None = None

    def abort(self, reason: Any = None) -> bool:
        """Abort with ``reason``; returns False when already aborted (the first cause wins)."""
        if self.aborted:
            return False
        self.aborted = True
        self.reason = reason
        for task in list(self._tasks):
            task.cancel()
        if self._event is not None:
            self._event.set()
        for cb in list(self._callbacks):
            try:
                cb(reason)
            except Exception:  # noqa: BLE001 - a failing observer never blocks the abort
                pass
        return True

    def on_abort(self, cb: Callable[[Any], None]) -> Callable[[], None]:
        self._callbacks.append(cb)

        def off() -> None:
            if cb in self._callbacks:
                self._callbacks.remove(cb)

        return off

    def throw_if_aborted(self) -> None:
        if self.aborted:
            raise AbortError(self.reason)

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
            if self.aborted:
                self._event.set()
        await self._event.wait()

    async def race(self, aw: Awaitable[T]) -> T:
        """Await ``aw``; if the signal aborts first, cancel it and raise ``AbortError``."""
        if self.aborted:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise AbortError(self.reason)
        task = asyncio.ensure_future(aw)
        self._tasks.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.aborted and (current is None or not current.cancelling()):
                raise AbortError(self.reason) from None
            raise
        finally:
            self._tasks.discard(task)
            if not task.done():
                task.cancel()

    async def sleep(self, seconds: float, sleep: Callable[[float], Awaitable[Any]] | None = None) -> None:
        await self.race((sleep or asyncio.sleep)(seconds))
