"""Issue #30 (plugins round 2), items 2 and 6: a listener's error reaches the log as it was raised from the
sync ``Harness.run`` too, and plugins can be named by module as ``--plugin`` takes them."""

from __future__ import annotations

from typing import Any

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider


class Exploding:
    name = "exploding"

    def apply(self, ctx: Any, config: dict) -> None:
        async def bad(payload: dict, next_: Any = None) -> Any:
            raise ValueError("listener exploded")

        ctx.on("agent/request", bad)


def test_a_listener_error_from_sync_run_keeps_its_own_message(tmp_path):
    from dsh_tui import Harness

    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[Exploding()],
                 provider_instance=ScriptedProvider([scripted.text("hi")])) as harness:
        result = harness.run("hello")
    (end,) = [e for e in result.events if e["type"] == "turn/end"]
    assert end["data"]["reason"]["error"]["message"] == "listener exploded"  # was "...: no running event loop"


def test_a_plugin_named_by_module_is_loaded(tmp_path):
    from dsh_tui import Harness
    from tests.plugins import named_plugin

    named_plugin.SEEN.clear()
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=["tests.plugins.named_plugin"],
                 provider_instance=ScriptedProvider([scripted.text("hi")])) as harness:
        result = harness.run("hello")
    assert result.finish_reason == "completed" and named_plugin.SEEN == ["agent/request"]
