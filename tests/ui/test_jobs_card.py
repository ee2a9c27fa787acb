"""The bash card of a background job (dsh_tui/extensions/jobs/): its job id, not an exit code."""

from __future__ import annotations


def test_a_background_bash_card_shows_the_job_id_not_an_exit_code():
    from rich.console import Console

    from dsh_tui.session.transcript import ToolItem
    from dsh_tui.ui.widgets.toolcard import render_tool

    def head(result: str) -> str:
        item = ToolItem("k", "tool", 1, name="bash", tool="bash", arguments='{"command": "sleep 9"}', state="ok",
                        result=result)
        console = Console(width=100, record=True, color_system=None)
        console.print(render_tool(item, False))
        return console.export_text().splitlines()[0]

    assert "bash-3" in head("started background job bash-3") and "exit" not in head("started background job bash-3")
    assert "exit 0" in head("done\n")
