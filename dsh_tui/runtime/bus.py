"""Typed event dispatch in the four Cordis modes (docs/runtime.md, "Event bus dispatch modes").

- ``emit``: fire-and-forget, registration order; a listener's exception (or a failing coroutine it
  returns) is logged and contained, it can neither veto nor starve later listeners.
- ``waterfall``: around-middleware ``listener(payload, next)``; ``await next()`` delegates to the next
  listener and finally to the dispatcher's innermost default; returning without calling ``next``
  short-circuits. The composed return value is the result. Exceptions propagate.
- ``serial``: awaited one by one in registration order; an exception propagates.
- ``parallel``: all awaited concurrently (``asyncio.gather``); the first exception propagates.

Listeners may be plain or ``async`` functions. A listener registered with ``scope=<agent id>`` sees only
events carried by that agent; a global listener (``scope=None``) sees all.

Order: every listener has a *tier*. ``USER`` listeners (plugins, and ``agent.on`` by default) come before
``BUILTIN`` ones (retry, compaction, the host's approval answerer), whatever the registration order, so a
user's waterfall listener wraps the built-in behaviour and decides whether to call ``next()``. Within a
tier, registration order (``prepend=True``: first of its tier).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from inspect import isawaitable
from typing import Any

from dsh_tui.llm.redact import redact

log = logging.getLogger("dsh_tui.runtime.bus")

Listener = Callable[..., Any]

EMIT = "emit"
WATERFALL = "waterfall"
SERIAL = "serial"
PARALLEL = "parallel"

# Dispatch mode of every event the runtime raises
# (docs/runtime.md, "Event bus dispatch modes"; docs/plugins.md, "Events").
EVENT_MODES: dict[str, str] = {
    "agent/created": EMIT,
    "agent/disposed": EMIT,
    "agent/session-start": EMIT,
    "agent/status": EMIT,
    "agent/phase": EMIT,
    "agent/inbox/inserted": EMIT,
    "agent/inbox/claimed": EMIT,
    "agent/inbox/discarded": EMIT,
    "agent/pre-step": WATERFALL,
    "agent/request": WATERFALL,
    "agent/request-error": WATERFALL,
    "agent/turn-stopping": SERIAL,
    "agent/step-end": EMIT,
    "agent/error": EMIT,
    "system-prompt/assemble": WATERFALL,
    "llm/stream": WATERFALL,
    "tools/pre-execute": WATERFALL,
    "tools/execute": WATERFALL,
    "tools/post-execute": WATERFALL,
    "tools/result": EMIT,
    "approval/request": WATERFALL,
    "user-questions/request": WATERFALL,  # ask_user_question, the plan review (dsh_tui/runtime/questions.py)
    "session/flush": PARALLEL,
    "session/event": EMIT,
}


#: Listener tiers: user listeners run before built-in ones in every mode.
USER = 0
BUILTIN = 100


class _Entry:
    __slots__ = ("fn", "scope", "tier")

    def __init__(self, fn: Listener, scope: str | None, tier: int) -> None:
        self.fn = fn
        self.scope = scope
        self.tier = tier


def _as_async(fn: Listener) -> Listener:
    """A waterfall listener that is a plain function (or returns some other awaitable), as a coroutine function."""

    async def listener(payload: Any, nxt: Callable[[], Any]) -> Any:
        out = fn(payload, nxt)
        if isawaitable(out):
            out = await out
        return out

    return listener


def _log_task_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("emit listener failed: %s", redact(repr(task.exception())))


class EventBus:
    def __init__(self) -> None:
        self._listeners: dict[str, list[_Entry]] = {}
        self._cache: dict[tuple, list[Listener]] = {}

    def on(self, name: str, fn: Listener, *, scope: str | None = None, prepend: bool = False,
           tier: int = USER) -> Callable[[], None]:
        entry = _Entry(fn, scope, tier)
        lst = list(self._listeners.get(name, []))  # copy-on-write: an ongoing dispatch keeps its snapshot
        if prepend:  # first of its tier
            at = next((i for i, e in enumerate(lst) if e.tier >= tier), len(lst))
        else:  # last of its tier
            at = next((i for i, e in enumerate(lst) if e.tier > tier), len(lst))
        lst.insert(at, entry)
        self._listeners[name] = lst
        self._cache.clear()

        def off() -> None:
            current = self._listeners.get(name)
            if current and entry in current:
                self._listeners[name] = [e for e in current if e is not entry]
                self._cache.clear()

        return off

    def has(self, name: str, scope: str | None = None) -> bool:
        return bool(self._select(name, scope))

    def _select(self, name: str, scope: str | None) -> list[Listener]:
        key = (name, scope)
        cached = self._cache.get(key)
        if cached is None:
            lst = self._listeners.get(name) or []
            cached = self._cache[key] = [e.fn for e in lst if e.scope is None or e.scope == scope]
        return cached

    def emit(self, name: str, payload: Any, *, scope: str | None = None) -> None:
        for fn in self._select(name, scope):
            try:
                out = fn(payload)
            except Exception as err:  # noqa: BLE001 - contained by contract
                log.warning("listener for %s failed: %s", name, redact(repr(err)))
                continue
            if inspect.isawaitable(out):
                try:
                    task = asyncio.ensure_future(out)
                except RuntimeError as err:  # no running loop: the coroutine cannot be scheduled
                    if inspect.iscoroutine(out):
                        out.close()
                    log.warning("listener for %s returned an awaitable outside a loop: %r", name, err)
                    continue
                task.add_done_callback(_log_task_failure)

    async def waterfall(
        self,
        name: str,
        payload: Any,
        innermost: Callable[[], Any],
        *,
        scope: str | None = None,
    ) -> Any:
        chain = self._chain(name, scope)
        if not chain:
            out = innermost()
            if isawaitable(out):
                out = await out
            return out

        async def last() -> Any:
            out = innermost()
            if isawaitable(out):
                out = await out
            return out

        # next() of listener i is listener i+1 bound to the payload (every chain member is ``async``: plain
        # functions are wrapped once, in ``_chain``), so a no-op listener costs one coroutine, not two
        nxt: Callable[[], Any] = last
        for fn in reversed(chain):
            nxt = partial(fn, payload, nxt)
        return await nxt()

    def _chain(self, name: str, scope: str | None) -> list[Listener]:
        key = (name, scope, WATERFALL)
        cached = self._cache.get(key)  # type: ignore[arg-type]
        if cached is None:
            cached = [fn if inspect.iscoroutinefunction(fn) else _as_async(fn) for fn in self._select(name, scope)]
            self._cache[key] = cached  # type: ignore[index]
        return cached

    async def serial(self, name: str, payload: Any, *, scope: str | None = None) -> None:
        for fn in self._select(name, scope):
            out = fn(payload)
            if inspect.isawaitable(out):
                await out

    async def parallel(self, name: str, payload: Any, *, scope: str | None = None) -> list[Any]:
        outs: list[Awaitable[Any]] = []
        for fn in self._select(name, scope):
            out = fn(payload)
            if inspect.isawaitable(out):
                outs.append(out)
        return list(await asyncio.gather(*outs)) if outs else []
