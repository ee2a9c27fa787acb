"""A write/edit card shows the language-server errors the ``lsp`` built-in appended to its result."""

from __future__ import annotations

import json


def _text(result: str, expanded: bool, tool: str = "write") -> str:
    from rich.console import Console

    from dsh_tui.session.transcript import ToolItem
    from dsh_tui.ui.widgets.toolcard import render_tool

    item = ToolItem("k", "tool", 1, name=tool, tool="edit", state="ok", result=result, meta={"diffs": []},
                    arguments=json.dumps({"file_path": "broken.py", "content": "x = make_squar(2)\n"}))
    console = Console(width=100, record=True, color_system=None)
    console.print(render_tool(item, expanded))
    return console.export_text()


RESULT = ('Wrote broken.py\n\nLSP errors detected in this file, please fix:\n<diagnostics file="/w/broken.py">\n'
          "ERROR [1:5] undefined name 'make_squar'\nERROR [2:1] undefined name 'y'\n... and 3 more\n</diagnostics>")


def test_a_write_card_shows_its_lsp_errors_collapsed_and_expanded():
    collapsed = _text(RESULT, False)
    assert "5 LSP errors" in collapsed.splitlines()[0]
    assert "ERROR [1:5] undefined name 'make_squar'" in collapsed and "… 3 more" in collapsed
    expanded = _text(RESULT, True)
    assert "ERROR [2:1] undefined name 'y'" in expanded and "… 3 more" in expanded
    clean = _text("Wrote broken.py", False)
    assert "LSP" not in clean


def test_an_lsp_card_is_titled_as_dsh_presents_the_call():
    from rich.console import Console

    from dsh_tui.session.transcript import ToolItem
    from dsh_tui.ui.widgets.toolcard import render_tool

    item = ToolItem("k", "tool", 1, name="lsp", tool="generic", state="ok", result="shapes.py:6:5",
                    arguments=json.dumps({"operation": "goToDefinition", "file_path": "main.py", "line": 3,
                                          "character": 7}))
    console = Console(width=100, record=True, color_system=None)
    console.print(render_tool(item, False))
    text = console.export_text()
    assert text.splitlines()[0].startswith("✓ LSP goToDefinition main.py:3:7") and "shapes.py:6:5" in text
