"""A plugin's ``ctx.log`` in the app: WARNING and above are notices (ERROR as an error), everything goes to
``<cache>/logs/plugins.log`` (docs/plugins.md, "The context")."""

from __future__ import annotations

import types

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.paths import cache_dir
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings
from tests.ui.conftest import wait_for


async def test_plugin_warnings_are_notices_in_the_app_and_every_record_is_in_the_file(tmp_path):
    def apply(ctx):
        ctx.log.info("just so you know")
        ctx.log.warning("the cache is cold")
        ctx.log.error("the token sk-abcdefghijklmnopqrstuvwx expired")

    plugin = types.SimpleNamespace(name="warner", apply=apply)
    ws = tmp_path / "ws"
    ws.mkdir()
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=ws, provider=ScriptedProvider([scripted.text("ok")]),
                       model="mock-model", plugin_objects=(plugin,))
    app = DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await wait_for(pilot, lambda: len([n for n in app._notifications if "plugin warner" in n.message]) >= 2)
        notes = {n.message: n.severity for n in app._notifications if "plugin warner" in n.message}
        assert notes["plugin warner: the cache is cold"] == "information"
        assert [s for m, s in notes.items() if "expired" in m] == ["error"]
        assert not any("just so you know" in m for m in notes)
    text = (cache_dir() / "logs" / "plugins.log").read_text()
    assert "INFO dsh_tui.plugins.warner: just so you know" in text and "the cache is cold" in text


def test_docs_name_every_event_with_its_payload_type_and_mode():
    """docs/plugins.md's event table: every event a plugin can listen on, its mode and its payload type."""
    from dsh_tui.plugins import EVENTS
    from dsh_tui.plugins.events import PAYLOADS
    from tests.conftest import REPO

    text = (REPO / "docs" / "plugins.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `") and " | " in line]
    for event, mode in EVENTS.items():
        short = event.rsplit("/", 1)[1]
        row = next((r for r in rows if f"`{event}`" in r.split(" | ")[0] or (
            event.startswith("agent/inbox/") and f"`{short}`" in r.split(" | ")[0])), None)
        assert row is not None, event
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[1] == mode, (event, cells)
        assert cells[2].startswith(f"`{PAYLOADS[event].__name__}`"), (event, cells[2])
