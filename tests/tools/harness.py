"""Test helpers: run one built-in tool the way the runtime does (execute -> render / meta / error)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.tools import builtin_tools
from dsh_tui.tools.base import ToolContext, ToolError


@dataclass
class Outcome:
    text: str
    is_error: bool
    meta: Any = None
    error: dict[str, str] | None = None
    value: Any = None


@dataclass
class Bench:
    """One session's worth of tool state over a real temp workspace."""

    workspace: Path
    options: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict]] = field(default_factory=list)
    allow_outside: bool = False
    cwd: Path | None = None
    spill_dir: Path | None = None
    calls: int = 0

    def __post_init__(self) -> None:
        self.tools = {t.name: t for t in builtin_tools(**self.options)}

    def ctx(self, name: str, cancelled: asyncio.Event | None = None) -> ToolContext:
        self.calls += 1
        return ToolContext(
            call_id=f"call_{self.calls:02d}",
            name=name,
            cwd=self.cwd or self.workspace,
            workspace=self.workspace,
            allow_outside=self.allow_outside,
            cancelled=cancelled or asyncio.Event(),
            spill_dir=self.spill_dir,
            state=self.state,
            emit_event=lambda t, d: self.events.append((t, d)),
        )

    async def run(self, name: str, args: Any, cancelled: asyncio.Event | None = None) -> Outcome:
        tool = self.tools[name]
        try:
            value = await tool.execute(args, self.ctx(name, cancelled))
        except ToolError as exc:
            info = {"name": exc.name, "code": exc.code} if exc.code else None
            return Outcome(f"Error: {exc.message}", True, None, info)
        blocks = tool.render(args, value)
        assert len(blocks) == 1 and blocks[0]["type"] == "text"
        meta = tool.presentation_meta(args, value) if tool.presentation_meta else None
        return Outcome(blocks[0]["text"], False, meta, None, value)


class Ticker:
    """Counts event-loop turns while a tool runs: ``async with Ticker(0.01) as t: ...; t.ticks``."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.ticks = 0
        self._done = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while not self._done.is_set():
            self.ticks += 1
            await asyncio.sleep(self.interval)

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._done.set()
        assert self._task is not None
        await self._task
