"""dsh 0.1's ``str_replace_editor`` (issue #32): off by default as in dsh 0.2; turned on in the settings, a real
``dsh-tui run --headless`` offers it with dsh's schema and its four commands give dsh's texts, against a
scripted Messages server on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys

from dsh_tui.extensions.str_replace_editor import DEFAULT_DESCRIPTION, PARAMETERS, TRUNCATED_MESSAGE, Editor
from tests.llm.sse_server import ScriptServer
from tests.llm.test_messages import text_reply, title, tool_reply
from tests.llm.test_provider_harness import _env

KEY = "sk-editor-0123456789abcdefghij"
ON = "[plugins.str-replace-editor]\nenabled = true\n"


def _run(tmp_path, settings: str | None, replies) -> list[dict]:
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY)
    env.pop("DSH_TUI_DEEPSEEK_API", None)
    if settings is not None:
        conf = tmp_path / "config" / "dsh-tui"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "settings.toml").write_text(settings)
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(*replies)
        env["DEEPSEEK_BASE_URL"] = server.base_url
        out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "edit it"], env=env,
                             cwd=tmp_path / "ws", capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return list(server.requests)


def _last_result(request: dict) -> tuple[str, bool]:
    block = request["body"]["messages"][-1]["content"][0]
    assert block["type"] == "tool_result"
    return block["content"][0]["text"], bool(block.get("is_error"))


def test_off_by_default(tmp_path):
    (tmp_path / "ws").mkdir()
    [first] = _run(tmp_path, None, [text_reply("Hi.")])
    assert "str_replace_editor" not in [t["name"] for t in first["body"]["tools"]]


def test_turned_on_its_commands_answer_as_dshs(tmp_path):
    ws = tmp_path / "ws"
    (ws / "pkg" / "deep" / "deeper").mkdir(parents=True)
    (ws / ".hidden").write_text("x")
    (ws / "pkg" / "__pycache__").mkdir()
    f = ws / "pkg" / "a.py"
    f.write_text("one\ntwo\ntwo\nthree\n")
    path, root = str(f), str(ws)
    calls = [
        ("view", {"command": "view", "path": path, "view_range": [2, 3]}),
        ("rel", {"command": "view", "path": "pkg/a.py"}),
        ("twice", {"command": "str_replace", "path": path, "old_str": "two", "new_str": "2"}),
        ("replace", {"command": "str_replace", "path": path, "old_str": "three", "new_str": "3"}),
        ("insert", {"command": "insert", "path": path, "insert_line": 1, "new_str": "one-and-a-half"}),
        ("create", {"command": "create", "path": str(ws / "new.txt"), "file_text": "fresh"}),
        ("exists", {"command": "create", "path": path, "file_text": "x"}),
        ("dir", {"command": "view", "path": root}),
    ]
    replies = [tool_reply(f"toolu_{i}", "str_replace_editor", json.dumps(args)) for i, (_n, args) in
               enumerate(calls)]
    requests = _run(tmp_path, ON, [*replies, text_reply("Done.")])
    [tool] = [t for t in requests[0]["body"]["tools"] if t["name"] == "str_replace_editor"]
    assert tool == {"name": "str_replace_editor", "description": DEFAULT_DESCRIPTION, "input_schema": PARAMETERS}
    results = {name: _last_result(requests[i + 1]) for i, (name, _a) in enumerate(calls)}
    assert results["view"] == (f"Here's the content of {path} with line numbers (which has a total of 5 lines) "
                               "with view_range=[2, 3]:\n     2  two\n     3  two\n", False)
    assert results["rel"] == ("Error: The path pkg/a.py is not an absolute path, it should start with `/`. "
                              "Maybe you meant /pkg/a.py?", True)
    assert results["twice"] == ("Error: No replacement was performed. Multiple occurrences of old_str `two` in "
                                "lines [2, 3]. Please ensure it is unique", True)
    assert results["replace"] == (f"The file {path} has been edited successfully.", False)
    assert results["insert"] == (f"The file {path} has been edited successfully.", False)
    assert f.read_text() == "one\none-and-a-half\ntwo\ntwo\n3\n"
    assert results["create"] == (f"New file created successfully at: {ws / 'new.txt'}", False)
    assert (ws / "new.txt").read_text() == "fresh"
    assert results["exists"] == (f"Error: File already exists at: {path}. Cannot overwrite files using command "
                                 "`create`.", True)
    listing, error = results["dir"]
    assert not error
    assert listing == (f"Here're the files and directories up to 2 levels deep in {root}, excluding hidden items, "
                       "node_modules, and Python cache directories:\n"
                       f"d\t{root}\nf\t{root}/new.txt\nd\t{root}/pkg\nf\t{root}/pkg/a.py\nd\t{root}/pkg/deep\n\n")


def test_an_edit_needs_a_view_first_and_long_views_are_clipped(tmp_path):
    from dsh_tui.tools.base import ToolContext

    f = tmp_path / "big.txt"
    f.write_text("abc\n" * 10)
    ctx = ToolContext(call_id="c", name="str_replace_editor", cwd=tmp_path, workspace=tmp_path)
    editor = Editor(20)
    try:
        editor.str_replace(ctx, {"path": str(f), "old_str": "abc", "new_str": "x"})
    except Exception as err:  # noqa: BLE001
        assert getattr(err, "code", None) == "FS_NOT_OBSERVED"
    else:
        raise AssertionError("an unviewed file was edited")
    view = editor.view(ctx, {"path": str(f)})
    assert view.endswith(TRUNCATED_MESSAGE) and len(view) == 20 + len(TRUNCATED_MESSAGE)
