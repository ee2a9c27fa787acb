"""Pilot tests: the MCP servers panel (palette "MCP servers") with the real harness and real MCP servers
(tests/mcp/server.py over stdio): states, tool counts, reasons, reconnecting one; MCP tool cards."""

from __future__ import annotations

import shlex
import sys

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.screens.mcp import NO_SESSION, NONE_CONFIGURED, McpScreen
from dsh_tui.ui.settings import UiSettings
from tests.conftest import REPO
from tests.ui.conftest import items, submit, wait_for
from tests.ui.screen_text import screen_text

SERVER = shlex.join([sys.executable, str(REPO / "tests" / "mcp" / "server.py"), "stdio"])


def _app(tmp_path, responses, mcp=()) -> DshApp:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    provider = ScriptedProvider(responses, name="mock", context_window=100_000,
                                retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=workspace, provider=provider, model="mock-model",
                       preset="workspace-write", mcp=tuple(mcp))
    return DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))


def _flat(app) -> str:
    """The screen's text with the panel's borders gone and runs of blanks (and wrapped lines) as one space."""
    return " ".join(" ".join(line.strip(" █▊▎▌▐") for line in screen_text(app).splitlines()).split())


def _palette_titles(app) -> list[str]:
    return [c.title for c in app.get_system_commands(app.screen)]


async def test_the_panel_lists_states_and_reconnects_one(tmp_path):
    app = _app(tmp_path, [scripted.call("c1", "mcp__t__echo", {"text": "hi"}), scripted.text("done")],
               mcp=(f"t={SERVER}", f"missing={tmp_path / 'nope'}"))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        assert "MCP servers" in _palette_titles(app)
        app.action_mcp()
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        await wait_for(pilot, lambda: "t  ready · 12 tools" in screen_text(app), timeout=90)
        # the missing server's first failed start, with its reason (it may still be connecting when t is ready)
        await wait_for(pilot, lambda: "no such file or directory" in _flat(app), timeout=90)
        text = _flat(app)
        # the command line (its middle is cut when it is longer than the row, e.g. in a deep temp clone)
        command = f"stdio: {sys.executable}"
        assert command in text or (command[:20] in text and "…" in text), text
        assert "missing reconnecting (attempt " in text  # with the reason
        assert "tools: " in text and "echo" in text.split("tools: ", 1)[1]  # the names, not only a count
        assert f"/10) · cannot start {tmp_path / 'nope'}: no such file or directory" in text
        # r on the highlighted row (the first: t) reconnects it
        server = app.bridge.harness.agent.mcp.get("t")
        assert server.connections == 1
        await pilot.press("r")
        await wait_for(pilot, lambda: "Reconnecting MCP server t" in [n.message for n in app._notifications])
        await wait_for(pilot, lambda: server.connections == 2, timeout=90)
        await wait_for(pilot, lambda: "t ready · 12 tools" in _flat(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, McpScreen))
        app.bridge.harness.agent.config.preset = "full-access"  # MCP calls ask under the other presets
        await submit(pilot, "echo it")
        await wait_for(pilot, lambda: any(i.state == "ok" for i in items(app, "tool")), timeout=30)
        await wait_for(pilot, lambda: "✓ t › echo" in screen_text(app))  # the card, once painted


async def test_the_panel_without_servers_or_session(tmp_path):
    app = _app(tmp_path, [scripted.text("x")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.action_mcp()
        await wait_for(pilot, lambda: NONE_CONFIGURED.split(".")[0] in screen_text(app).replace("\n", " "))
        await pilot.press("escape")
    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(80, 24)) as pilot:
        app.action_mcp()
        await wait_for(pilot, lambda: NO_SESSION.split(":")[0] in screen_text(app))


async def test_the_mcp_command_opens_the_panel(tmp_path):
    app = _app(tmp_path, [scripted.text("x")], mcp=(f"t={SERVER}",))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "/mcp")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        await wait_for(pilot, lambda: "t  ready · 12 tools" in screen_text(app), timeout=90)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, McpScreen))
        server = app.bridge.harness.agent.mcp.get("t")
        await submit(pilot, "/mcp reconnect t")  # reconnects it and shows the panel again
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        await wait_for(pilot, lambda: server.connections == 2, timeout=90)
        await pilot.press("escape")
        await submit(pilot, "/mcp reconnect nope")
        await wait_for(pilot, lambda: "No MCP server named nope (t)." in screen_text(app))
        assert not isinstance(app.screen, McpScreen)
        assert app.bridge.harness.agent.provider.calls == 0  # commands never reach the model
