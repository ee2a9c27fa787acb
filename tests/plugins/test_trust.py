"""Workspace trust (``dsh_tui.config.trust``) and project plugins (``.dsh-tui/plugins/``): never imported in a
workspace not trusted (``dsh-tui plugins`` and ``run`` say so), loaded once trusted (``--trust``, or the app's
question, which keys typed for the composer never answer)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from dsh_tui.config import trust
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.mcp.helpers import write_settings
from tests.ui.conftest import submit, wait_for
from tests.ui.screen_text import screen_text

USAGE = {"prompt_tokens": 3, "completion_tokens": 1}


def _workspace(tmp_path: Path) -> Path:
    """A workspace with a module plugin and a package plugin; each writes a marker when imported."""
    ws = tmp_path / "ws"
    plugins = ws / ".dsh-tui" / "plugins"
    (plugins / "pkgplug").mkdir(parents=True)
    marker = tmp_path / "imported"
    (plugins / "notes.py").write_text(f'''
from pathlib import Path
Path({str(marker)!r}).open("a").write("notes\\n")
from dsh_tui.plugins import user_message
name = "notes"

def apply(ctx, config):
    text = config.get("text", "project note")
    async def pre_step(payload, next):
        decision = await next()
        if payload["step"] == 1 and decision["kind"] == "enter":
            decision = {{**decision, "messages": [*decision["messages"], user_message(text)]}}
        return decision
    ctx.on("agent/pre-step", pre_step)
    ctx.commands.register("hello", "say hello", lambda call: "hello from the project")
''')
    (plugins / "pkgplug" / "__init__.py").write_text(
        f'from pathlib import Path\nPath({str(marker)!r}).open("a").write("pkg\\n")\nfrom .impl import apply\n'
        'name = "pkg-plug"\n')
    (plugins / "pkgplug" / "impl.py").write_text("def apply(ctx):\n    ctx.on('agent/status', lambda p: None)\n")
    (plugins / "_private.py").write_text("raise SystemExit('not a plugin')\n")
    return ws


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "dsh_tui", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def test_trust_is_private_remembered_and_covers_subfolders(tmp_path):
    ws = _workspace(tmp_path)
    assert trust.needs_trust(ws) == ["project plugins (.dsh-tui/plugins/): notes, pkgplug"]
    assert trust.needs_trust(tmp_path) == []
    assert not trust.is_trusted(ws)
    assert trust.trust(ws) == ws.resolve()
    trust.trust(ws)  # idempotent
    assert trust.trusted_roots() == [ws.resolve()]
    assert trust.is_trusted(ws / "sub" / "deeper") and not trust.is_trusted(tmp_path)
    path = trust.trust_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    link = tmp_path / "link"
    link.symlink_to(ws)
    assert trust.is_trusted(link)
    assert trust.untrust(ws) and not trust.is_trusted(ws)


def test_plugins_lists_project_plugins_as_skipped_and_never_imports_them_until_trusted(tmp_path):
    ws = _workspace(tmp_path)
    p = _cli(ws, "plugins")
    assert p.returncode == 0, p.stderr
    lines = {line.split()[0]: line for line in p.stdout.splitlines() if line.strip() and not line.startswith(" ")}
    reason = f"the workspace {ws.resolve()} is not trusted: trust it when the app asks, or run with --trust"
    assert lines["notes"].split()[1:3] == ["skipped", "project"] and reason in lines["notes"]
    assert lines["pkgplug"].split()[1] == "skipped" and "_private" not in p.stdout
    assert not (tmp_path / "imported").exists()  # not imported at all
    trust.trust(ws)
    p = _cli(ws, "plugins")
    assert p.returncode == 0, p.stderr
    lines = {line.split()[0]: line.split()[1:3] for line in p.stdout.splitlines() if line and not line[0].isspace()}
    assert lines["notes"] == lines["pkg-plug"] == ["loaded", "project"]
    assert "commands: /hello" in p.stdout and "pkg-plug" in p.stdout
    assert sorted((tmp_path / "imported").read_text().split()) == ["notes", "pkg"]


def test_run_headless_skips_them_with_one_line_and_trust_loads_them_and_is_remembered(tmp_path):
    ws = _workspace(tmp_path)
    with ScriptServer() as srv:
        for _ in range(3):
            srv.push(sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv, '[plugins.notes]\ntext = "from settings"\n')

        def run(*extra: str) -> subprocess.CompletedProcess:
            return _cli(ws, "run", "--headless", "hi", "--root", str(tmp_path / "root"), *extra)

        p = run()
        assert p.returncode == 0, p.stderr
        assert (f"dsh-tui: project plugin notes ({ws / '.dsh-tui/plugins/notes.py'}) skipped: the workspace "
                f"{ws.resolve()} is not trusted") in p.stderr
        assert not (tmp_path / "imported").exists()
        assert "from settings" not in str(srv.requests[-1]["body"]["messages"])
        p = run("--trust")
        assert p.returncode == 0, p.stderr
        assert "skipped" not in p.stderr and "failed" not in p.stderr, p.stderr
        assert "from settings" in str(srv.requests[-1]["body"]["messages"])  # its config from [plugins.notes]
        assert trust.is_trusted(ws)
        p = run()  # remembered
        assert p.returncode == 0 and "skipped" not in p.stderr, p.stderr
        assert "from settings" in str(srv.requests[-1]["body"]["messages"])


def _app(ws: Path, tmp_path: Path) -> DshApp:
    provider = ScriptedProvider([scripted.text("ok")], name="mock", context_window=100_000)
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=ws, provider=provider, model="mock-model")
    return DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))


async def test_the_app_asks_once_and_keys_typed_for_the_composer_never_answer(tmp_path, monkeypatch):
    from dsh_tui.ui.widgets import approval

    ws = _workspace(tmp_path)
    app = _app(ws, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "Trust this workspace?" in screen_text(app))
        text = " ".join(screen_text(app).split())
        assert "project plugins (.dsh-tui/plugins/): notes, pkgplug" in text and "Don't trust [r]" in text
        panel = app.screen.approval
        monkeypatch.setattr(approval, "GRACE_S", 5.0)
        panel.show_request(panel.request, take_focus=True)  # as shown on its own: keys now were typed elsewhere
        await pilot.press("a", "enter")
        await pilot.pause()
        assert app.bridge.harness is None and not trust.is_trusted(ws)  # neither key answered
        assert not (tmp_path / "imported").exists()
        await pilot.press("tab")  # deliberate: to the panel
        panel.focus_buttons()
        await pilot.press("enter")  # Enter never decides
        await pilot.pause()
        assert app.bridge.harness is None
        await pilot.press("a")
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        assert trust.is_trusted(ws) and (tmp_path / "imported").exists()
        await submit(pilot, "/hello")
        await wait_for(pilot, lambda: "hello from the project" in screen_text(app))


async def test_the_app_declined_skips_them_and_says_so(tmp_path):
    ws = _workspace(tmp_path)
    app = _app(ws, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "Trust this workspace?" in screen_text(app))
        app.screen.approval.focus_buttons()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await wait_for(pilot, lambda: any("project plugins skipped: the workspace" in n.message for n in app._notifications))
        assert not trust.is_trusted(ws) and not (tmp_path / "imported").exists()
        records = {r.id: r.state for r in app.bridge.harness.agent.plugins.records}
        assert records["notes"] == records["pkgplug"] == "skipped"


def test_the_sdk_skips_them_unless_trust_is_passed(tmp_path, capsys):
    from dsh_tui import Harness

    ws = _workspace(tmp_path)
    with Harness(model="mock-model", cwd=ws, session_root=tmp_path / "sessions",
                 provider_instance=ScriptedProvider([scripted.text("hi")])) as harness:
        harness.run("hi")
    assert not (tmp_path / "imported").exists() and "skipped: the workspace" in capsys.readouterr().err
    provider = ScriptedProvider([scripted.text("hi")])
    with Harness(model="mock-model", cwd=ws, session_root=tmp_path / "sessions", trust=True,
                 provider_instance=provider) as harness:
        harness.run("hi")
    assert "project note" in str(provider.requests[-1]["messages"]) and trust.is_trusted(ws)
