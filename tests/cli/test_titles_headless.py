"""Headless ``run`` and ``resume``: the session gets dsh's fallback title and the LLM title (the process
waits for it after the turn), the AGENTS.md baseline, and on resume what changed while it was closed;
``sessions`` lists the title."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dsh_tui.config import settings_path
from dsh_tui.store.open import open_store
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, title_reply


def _reply(text: str):
    return sse_reply(chunk(text), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1}))


def _dsh(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_run_and_resume_headless_get_titles_and_instructions(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Old rule.\n")
    root = tmp_path / "root"
    with ScriptServer() as srv:
        path = settings_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n'
                        f'[providers.local]\nbase_url = "{srv.base_url}/v1"\n')
        srv.push(_reply("first answer"), _reply("second answer"))
        srv.push_title(title_reply("Headless title", 0.3))  # answered after the turn ended: still waited for
        run = _dsh("run", "--headless", "Explain the build steps of this repo", "--root", str(root), "--cwd",
                   str(ws), cwd=ws)
        assert run.returncode == 0, run.stderr
        assert run.stdout == "first answer\n"
        listed = _dsh("sessions", "--json", "--root", str(root), cwd=ws)
        (ws / "AGENTS.md").write_text("New rule.\n")  # edited while the session is closed
        (row,) = json.loads(listed.stdout)
        resumed = _dsh("resume", row["id"], "--headless", "and now?", "--root", str(root), cwd=ws)
        assert resumed.returncode == 0, resumed.stderr
        assert len(srv.title_requests) == 1  # a resumed session asks for no second LLM title
    assert row["title"] == "Headless title"
    events = open_store(root).load(row["id"]).events
    titles = [(e["data"]["title"], e["data"]["source"]["kind"]) for e in events if e["type"] == "session/title"]
    assert titles == [("Explain the build steps of", "fallback"), ("Headless title", "provider")]
    instr = [e["data"] for e in events if e["type"] == "user/message"
             and e["data"]["source"]["kind"] == "agent-instructions"]
    assert [c["action"] for m in instr for c in m["source"]["changes"]] == ["set", "replace"]
    assert instr[0]["content"][0]["text"].endswith("Instructions from: AGENTS.md\n\nOld rule.\n\n</system-reminder>")
    assert "Updated instructions from: AGENTS.md" in instr[1]["content"][0]["text"]
    assert "New rule." in instr[1]["content"][0]["text"]
