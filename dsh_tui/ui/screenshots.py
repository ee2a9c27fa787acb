"""SVG screenshots of the real app in its main states, regenerated with one command::

    .venv/bin/python -m dsh_tui.ui.screenshots [OUT_DIR]   # default: screenshots/

Each state runs the real harness, real tools and a scripted model on a temporary root, with frozen
clocks, so the pictures are deterministic; the snapshot tests (tests/ui/test_snapshots.py) use the
same ``STATES``.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.session.transcript import StreamItem
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen

EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def step_clock(step_ms: int = 37) -> Callable[[], int]:
    """A deterministic epoch-ms clock: every call advances by ``step_ms``."""
    counter = itertools.count()
    return lambda: EPOCH_MS + step_ms * next(counter)


def _write_workspace(ws: Path) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "notes.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    (ws / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n", encoding="utf-8")


def _responses(kind: str) -> list:
    long_answer = ("## Plan\n\nI read `app.py` and `notes.txt`. The greeting concatenates strings, "
                   "which is fine, but the tests expect **title case**.\n\n"
                   "```python\ndef greet(name):\n    return f\"Hi {name.title()}\"\n```\n\n"
                   "Next I will run the tests and")
    if kind == "streaming":
        return [[*scripted.text("thinking…", reasoning="Look at the files first.")[:4],
                 {"type": "block-start", "index": 1, "blockType": "text"},
                 {"type": "text-delta", "index": 1, "text": long_answer}, scripted.Hang()]]
    if kind == "tools":
        return [scripted.calls([("c0", "read", {"file_path": "app.py"}), ("c1", "read", {"file_path": "notes.txt"})],
                               usage={"inputTokens": 2100, "outputTokens": 60}),
                scripted.calls([("c2", "bash", {"command": "grep -n beta notes.txt; exit 1", "description": "find beta"}),
                                ("c3", "edit", {"file_path": "app.py", "old_string": "    return 'hi ' + name\n",
                                                "new_string": "    greeting = 'Hi'\n    return f'{greeting} {name}'\n"})],
                               usage={"inputTokens": 3200, "outputTokens": 180, "cacheReadTokens": 2400}),
                scripted.calls([("c4", "glob", {"pattern": "*.txt"})],
                               usage={"inputTokens": 700, "outputTokens": 40, "cacheReadTokens": 3300}),
                scripted.text("The greeting is fixed; `notes.txt` has **beta** on line 2.",
                              usage={"inputTokens": 900, "outputTokens": 60, "cacheReadTokens": 3900})]
    if kind == "approval":
        return [scripted.call("c1", "bash", {"command": "rm -rf build && make release", "description": "rebuild"}),
                scripted.text("ok")]
    if kind == "error":
        return [scripted.finish_error("AUTH", "invalid API key (HTTP 401)", status=401)]
    if kind == "retry":
        return [scripted.empty(), [scripted.Delay(0.05), *scripted.text("Recovered after one retry.")]]
    return [scripted.text("Hello! I can read, search and edit files in this workspace, and run commands.",
                          reasoning="A greeting.")]


@dataclass
class State:
    """One screenshot: which script to run, what to type, what to wait for."""

    name: str
    script: str
    prompt: str
    preset: str = "full-access"
    size: tuple[int, int] = (100, 30)
    keys: tuple[str, ...] = ()
    done: Callable[[DshApp], bool] = lambda app: False
    #: After the keys: what the screen must show before the picture (a fixed pause is not enough under load)
    settled: Callable[[DshApp], bool] = lambda app: True


def _footers(app: DshApp) -> int:
    return sum(1 for i in app.chat.fold.items if i.kind == "footer") if app.chat else 0


def _chat(app: DshApp) -> ChatScreen:
    """The app's chat: every state is reached from one (``drive`` types into its composer first)."""
    if app.chat is None:
        raise RuntimeError("no chat is open")
    return app.chat


def _answered(app: DshApp, text: str) -> bool:
    return any(isinstance(i, StreamItem) and i.kind == "assistant" and text in i.text for i in _chat(app).fold.items)


STATES: dict[str, State] = {s.name: s for s in [
    State("chat-idle", "plain", "hello", done=lambda app: _footers(app) == 1),
    State("chat-streaming", "streaming", "Fix the greeting",
          done=lambda app: _answered(app, "run the tests")),
    State("tool-cards", "tools", "Find beta and fix the greeting", done=lambda app: _footers(app) == 1),
    State("tool-cards-expanded", "tools", "Find beta and fix the greeting", keys=("ctrl+o",),
          done=lambda app: _footers(app) == 1),
    State("approval", "approval", "Rebuild the release", preset="workspace-write",
          # asked, and the panel laid out (it is mounted on first use, a refresh after the request)
          done=lambda app: _chat(app).approval.request is not None and _chat(app).approval.region.height > 0),
    State("error-notice", "error", "hello", done=lambda app: _footers(app) == 1),
    State("retry", "retry", "hello", done=lambda app: _footers(app) == 1),
    State("chat-80x24", "tools", "Find beta and fix the greeting", size=(80, 24),
          done=lambda app: _footers(app) == 1),
    State("search", "tools", "Find beta and fix the greeting", keys=("ctrl+f", "b", "e", "t", "a", "enter"),
          done=lambda app: _footers(app) == 1,
          # the older match is current and the view has scrolled to it
          settled=lambda app: _chat(app).search_bar.counts == (4, 5) and not _chat(app).transcript.following),
]}


def build_app(state: State, base: Path) -> DshApp:
    """The app for ``state`` on a fresh root under ``base`` (frozen clocks, fixed theme)."""
    ws = base / "ws"
    _write_workspace(ws)
    provider = scripted.ScriptedProvider(_responses(state.script), name="deepseek-official", context_window=128_000,
                                         retry_policy=RetryPolicy(initial_delay_ms=1000, max_delay_ms=1000,
                                                                  jitter_ratio=0.0),
                                         fallback=lambda _r: scripted.text("…"))
    spec = HarnessSpec(root=base / "sessions", cwd=ws, provider=provider, model="deepseek-v4-flash",
                       preset=state.preset, clock=step_clock(), agent_options={"runtime_context": False})
    settings = UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": True, "ui.cursor_blink": False})
    return DshApp(lambda bridge: open_harness(bridge, spec), settings=settings, clock=lambda: 0.0)


async def drive(pilot: Any, state: State, timeout: float = 20.0) -> None:
    """Type the prompt, wait for the state, press its keys, let the screen settle."""
    app = pilot.app
    end = time.monotonic() + timeout
    while app.bridge.harness is None and time.monotonic() < end:
        await pilot.pause(0.02)
    app.chat.composer.value = state.prompt
    await pilot.press("enter")
    while not state.done(app) and time.monotonic() < end:
        await pilot.pause(0.05)
    if not state.done(app):
        raise RuntimeError(f"screenshot state {state.name!r} not reached")
    await pilot.pause(0.2)
    for key in state.keys:
        await pilot.press(key)
    while not state.settled(app) and time.monotonic() < end:
        await pilot.pause(0.05)
    if not state.settled(app):
        raise RuntimeError(f"screenshot state {state.name!r} did not settle after its keys")
    await pilot.pause(0.1)
    app.chat.composer.cursor_blink = False


def run_before(state: State) -> Callable[[Any], Awaitable[None]]:
    async def before(pilot: Any) -> None:
        await drive(pilot, state)

    return before


def shown_dir(state: State) -> str:
    """The directory the pictures show for ``state`` (the real one is per run, see ``state_dir``)."""
    return f"/tmp/dsh-tui-screens/{state.name}"


def state_dir(state: State, parent: Path | None = None) -> Path:
    """A fresh directory of this run's own (parallel runs never share or delete one) under ``parent`` (default:
    the temp dir, else /tmp when that path is too long), whose path has exactly the length of ``shown_dir``:
    ``build_app`` shows the one in place of the other, so the layout and the pictures do not depend on where
    the temp dir is. The caller removes it with ``shutil.rmtree(base.parent)``."""
    want = len(shown_dir(state))
    candidates = [Path(parent)] if parent is not None else [Path(tempfile.gettempdir()), Path("/tmp")]
    for where in candidates:
        # mkdtemp's name is the prefix plus 8 characters; a filler directory pads to the wanted length
        room = want - len(str(where)) - len("/s12345678/")
        if room < 1 or not where.is_dir():
            continue
        run = Path(tempfile.mkdtemp(prefix="s", dir=where))
        base = run / ("p" * (want - len(str(run)) - 1))
        base.mkdir()
        return base
    raise RuntimeError(f"no temporary directory with a path shorter than {want - 12} characters for the screenshots")


def masked(app: DshApp, real: str, shown: str) -> DshApp:
    """Make ``app``'s screenshots show ``shown`` wherever the screen shows ``real`` (same length: same layout)."""
    if len(real) != len(shown):
        raise ValueError(f"{real!r} and {shown!r} differ in length; the layout would differ")
    export = app.export_screenshot

    def export_screenshot(*args: Any, **kwargs: Any) -> str:
        svg = export(*args, **kwargs)
        svg = svg.replace(real, shown).replace(real.replace(" ", "&#160;"), shown)
        # Textual names the SVG's classes after a hash of what it rendered (the real path): rename them
        # after what the picture shows, so the same picture is the same file
        plain = re.sub(r"\bterminal-\d+-", "terminal-", svg)
        return re.sub(r"\bterminal-\d+-", f"terminal-{zlib.crc32(plain.encode())}-", svg)

    app.export_screenshot = export_screenshot  # type: ignore[method-assign]
    return app


async def _shoot(state: State, out: Path) -> Path:
    base = state_dir(state)
    try:
        app = masked(build_app(state, base), str(base), shown_dir(state))
        async with app.run_test(size=state.size, notifications=True) as pilot:
            await drive(pilot, state)
            path = out / f"{state.name}.svg"
            path.write_text(app.export_screenshot(simplify=True), encoding="utf-8")
    finally:
        shutil.rmtree(base.parent, ignore_errors=True)
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    for state in STATES.values():
        path = asyncio.run(_shoot(state, out))
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
