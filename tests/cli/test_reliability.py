"""Issue #15: every defect the attack on the store, the CLI and the tools found, each as a regression test.

Real files, real zstd, real SQLite, real subprocesses (a live lock holder, a process without root's
permission bypass); the CLI runs in process through ``dsh_tui.cli.main`` where it can.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dsh_tui.cli import main
from dsh_tui.cli.resume_cmd import _store, find_session, resume_headless
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.store.open import open_store
from tests.store.test_catalog_support import make_header, user_turn, write_session

REPO = Path(__file__).resolve().parents[2]


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("dsh-tui: ") and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------------
# 1. log repair (and every log-writing command) respects the session lock


HOLD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repo!r})
    from dsh_tui.store import lock as locks
    from dsh_tui.store.open import open_store
    store = open_store({root!r}, backend={backend!r})
    with locks.acquire(store, {sid!r}):
        print("locked", flush=True)
        sys.stdin.read()
""")


class Holder:
    """A real second process holding a session's writer lock (``lock.acquire``, as lifecycle.start does)."""

    def __init__(self, root: Path, sid: str, backend: str = "jsonl") -> None:
        code = HOLD.format(repo=str(REPO), root=str(root), backend=backend, sid=sid)
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.mark.parametrize("zstd", [False, True])
def test_log_repair_refuses_a_session_a_live_process_holds(tmp_path, capsys, zstd):
    root = tmp_path / "r"
    path = write_session(root, make_header("live", str(tmp_path)), user_turn(0, 1, "hi", "there", close=False),
                         zstd=zstd)
    before = path.read_bytes()
    holder = Holder(root, "live")
    try:
        rc, out, err = cli(capsys, "log", "repair", path)
        assert rc == 1 and one_line_error(err), err
        assert f"session live is in use by pid {holder.proc.pid}" in err
        assert path.read_bytes() == before  # nothing appended under the live writer
    finally:
        holder.release()
    rc, out, err = cli(capsys, "log", "repair", path)  # once the writer is gone, repair closes the turn
    assert rc == 0 and "appended" in out
    assert not (path.parent / "session.lock").exists()


def test_fork_refuses_a_parent_a_live_process_holds(tmp_path, capsys):
    root = tmp_path / "r"
    write_session(root, make_header("par", str(tmp_path)), user_turn(0, 1, "hi", "there"))
    holder = Holder(root, "par")
    try:
        rc, out, err = cli(capsys, "fork", "par", "--root", root)
        assert rc == 1 and one_line_error(err) and "session par is in use by pid" in err
    finally:
        holder.release()
    assert sum(1 for _ in root.rglob("session*.jsonl*")) == 1  # no child was written
    rc, out, _ = cli(capsys, "fork", "par", "--root", root)
    assert rc == 0 and out.strip().startswith("session-")


def test_resume_of_a_held_session_gives_runs_message(tmp_path, capsys):
    root = tmp_path / "r"
    write_session(root, make_header("held", str(tmp_path)), user_turn(0, 1, "hi", "there"))
    holder = Holder(root, "held")
    try:
        rc, _, err = cli(capsys, "resume", "held", "--root", root, "--headless", "again")
        assert rc == 1 and one_line_error(err)
        assert err == f"dsh-tui: session held is in use by pid {holder.proc.pid}\n"
    finally:
        holder.release()


# ---------------------------------------------------------------------------------------------------------
# 2. every command works on a SQLite root


def _sqlite_session(root: Path, sid: str, cwd: str) -> None:
    store = open_store(root, backend="sqlite")
    store.create(make_header(sid, cwd))
    store.append(sid, user_turn(0, 1, "hello", "world"))
    store.close()


def test_resume_and_export_of_a_sqlite_session(tmp_path, capsys, monkeypatch):
    root = tmp_path / "r"
    _sqlite_session(root, "sq-1", str(tmp_path))
    monkeypatch.delenv("DSH_TUI_BACKEND", raising=False)
    for ident, last in (("sq-1", False), ("sq", False), (None, True)):
        row = find_session(ident, last, [str(root)], str(tmp_path))
        assert row.id == "sq-1"
    provider = ScriptedProvider([scripted.text("second answer")], name="mock", context_window=100_000)
    answer, reason = asyncio.run(resume_headless(_store(row), row.id, provider, "m1", "again"))
    assert (answer, reason) == ("second answer", "completed")
    rc, out, err = cli(capsys, "export", "sq", "--format", "jsonl", "--root", root)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith('{"type":"session"') and '"id":"sq-1"' in lines[0]
    assert '"again"' in out and "second answer" in out
    rc, out, err = cli(capsys, "fork", "sq-1", "--root", root)
    assert rc == 0, err
    store = open_store(root, backend="sqlite")
    assert out.strip() in {h["id"] for h in store.list()}
    store.close()


def test_jsonl_logs_beside_a_sqlite_store_are_listed_and_usable(tmp_path, capsys, monkeypatch):
    """``DSH_TUI_BACKEND=sqlite dsh-tui run --root R`` on a root already holding JSONL logs adds
    ``sessions.sqlite`` beside them: every log stays listed (nothing on disk is hidden) and every command
    still finds each session in its own backend."""
    from dsh_tui.store.catalog import Catalog

    monkeypatch.delenv("DSH_TUI_BACKEND", raising=False)
    root = tmp_path / "r"
    write_session(root, make_header("js-1", str(tmp_path)), user_turn(0, 1, "from jsonl", "ok"))
    _sqlite_session(root, "sq-1", str(tmp_path))
    for method in ("scan", "listing"):
        cat = Catalog([root], db_path=tmp_path / f"cat-{method}.sqlite")
        try:
            assert {r.id for r in getattr(cat, method)()} == {"js-1", "sq-1"}, method
        finally:
            cat.close()
    rc, out, err = cli(capsys, "sessions", "--all", "--root", root)
    assert rc == 0 and "js-1" in out and "sq-1" in out, out + err
    rc, out, err = cli(capsys, "sessions", "--all", "--root", root, "--search", "from jsonl")
    assert rc == 0 and "js-1" in out, out + err
    rc, out, err = cli(capsys, "export", "js-1", "--format", "jsonl", "--root", root)
    assert rc == 0 and '"id":"js-1"' in out.splitlines()[0], err
    rc, out, err = cli(capsys, "fork", "js-1", "--root", root)
    assert rc == 0, err
    assert next(root.rglob(f"{out.strip()}/session.jsonl*"))  # the child beside its parent, in JSONL
    row = find_session("js", False, [str(root)], str(tmp_path))
    provider = ScriptedProvider([scripted.text("jsonl answer")], name="mock", context_window=100_000)
    assert asyncio.run(resume_headless(_store(row), row.id, provider, "m1", "again")) == ("jsonl answer",
                                                                                         "completed")


# ---------------------------------------------------------------------------------------------------------
# 3. text a log cannot hold losslessly is refused before anything is written; readers agree


def test_non_utf8_prompt_or_cwd_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")  # never reached
    root = tmp_path / "r"
    rc, _, err = cli(capsys, "run", "--headless", "say hi \udcff", "--root", root)
    assert rc == 2 and one_line_error(err) and "prompt is not valid UTF-8" in err
    bad = tmp_path / os.fsdecode(b"ws\xff")
    bad.mkdir()
    rc, _, err = cli(capsys, "run", "--headless", "hi", "--cwd", bad, "--root", root)
    assert rc == 2 and one_line_error(err) and "working directory" in err and "\\xff" in err
    assert not root.exists()
    write_session(root, make_header("s1", str(tmp_path)), user_turn(0, 1, "hi", "there"))
    rc, _, err = cli(capsys, "resume", "s1", "--root", root, "--headless", "again \udcff")
    assert rc == 2 and "prompt is not valid UTF-8" in err


def test_a_non_utf8_session_root_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    """A log under a root whose name is not UTF-8 is one the catalog lists as unreadable and resume, export
    and fork refuse: ``run`` refuses such a root (``--root`` or ``$DSH_HOME``) instead of writing there."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")  # never reached
    bad = tmp_path / os.fsdecode(b"root\xff")
    rc, _, err = cli(capsys, "run", "--headless", "hi", "--root", bad)
    assert rc == 2 and one_line_error(err) and "session root" in err and "\\xff" in err, err
    monkeypatch.setenv("DSH_HOME", str(bad))
    rc, _, err = cli(capsys, "run", "--headless", "hi")
    assert rc == 2 and one_line_error(err) and "session root" in err, err
    import argparse

    from dsh_tui.cli.app_cmd import chat_app
    from dsh_tui.cli.run_cmd import add_arguments
    from dsh_tui.session.errors import UsageError

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(UsageError, match="session root"):
        chat_app(parser.parse_args(["--root", str(bad)]))
    assert not bad.exists()


def test_a_new_session_in_a_non_utf8_cwd_is_refused_by_the_host(tmp_path):
    """The app's browser (Ctrl+N) and the SDK open a new session through ``AgentHost.open`` with the
    process's cwd: a name that is not UTF-8 is refused there too, before the root is touched."""
    from dsh_tui.runtime.host import AgentHost, HostSpec
    from dsh_tui.session.errors import UsageError

    bad = tmp_path / os.fsdecode(b"ws\xff")
    bad.mkdir()
    root = tmp_path / "r"
    provider = ScriptedProvider([scripted.text("never")], name="mock", context_window=100_000)
    with pytest.raises(UsageError, match=r"^the working directory .*ws\\xff is not valid UTF-8 .*nothing was written$"):
        asyncio.run(AgentHost.open(HostSpec(root=root, cwd=bad, provider=provider, model="m1")))
    assert not root.exists()


@pytest.mark.parametrize("zstd", [False, True])
def test_a_lone_surrogate_in_the_header_reads_alike_everywhere(tmp_path, capsys, zstd):
    """dsh (JavaScript) may write a header whose cwd holds a lone surrogate escape (``"\\udcff"``): the
    catalog listed it while ``log cat``, ``export`` and ``resume`` called the header "not valid JSON"."""
    root = tmp_path / "r"
    store = open_store(root, backend="jsonl", compression="zstd" if zstd else "none")
    store.create(make_header("hsur", "/w/ws\udcff"))
    store.append("hsur", user_turn(0, 1, "hi", "there"))
    path = store.find("hsur")
    for action in ("check", "cat", "messages"):
        rc, out, err = cli(capsys, "log", action, path)
        assert rc == 0, (action, out, err)
    rc, out, err = cli(capsys, "sessions", "--root", root, "--all")
    assert rc == 0 and "hsur" in out and "unreadable" not in out, out + err
    rc, out, err = cli(capsys, "export", "hsur", "--root", root, "--format", "jsonl")
    assert rc == 0 and "\\udcff" in out.splitlines()[0], err
    assert store.load("hsur").header["cwd"] == "/w/ws\udcff"


@pytest.mark.parametrize("zstd", [False, True])
def test_log_check_catalog_and_resume_agree_on_a_lone_surrogate(tmp_path, capsys, zstd):
    """dsh (JavaScript) writes a lone surrogate as ``"\\udcff"``: valid in a log. ``log check`` accepted it
    while the catalog called it unparsable and hid it from resume --last."""
    root = tmp_path / "r"
    store = open_store(root, backend="jsonl", compression="zstd" if zstd else "none")
    store.create(make_header("sur", str(tmp_path)))
    store.append("sur", user_turn(0, 1, "say hi \udcff", "ok \udcff"))
    path = store.find("sur")
    if not zstd:
        assert b"\\udcff" in path.read_bytes()
    rc, out, _ = cli(capsys, "log", "check", path)
    assert rc == 0 and '"ok":true' in out
    rc, out, err = cli(capsys, "sessions", "--root", root, "--all")
    assert rc == 0 and "unreadable" not in out and "sur" in out, out + err
    assert find_session(None, True, [str(root)], str(tmp_path)).id == "sur"
    rc, out, err = cli(capsys, "sessions", "--root", root, "--all", "--search", "say hi")
    assert rc == 0 and "sur" in out


# ---------------------------------------------------------------------------------------------------------
# 4. the bash tool's environment holds no credential


def test_bash_env_scrubs_every_configured_and_credential_looking_name(monkeypatch, tmp_path):
    from dsh_tui.config import config_dir
    from dsh_tui.tools.bash import bash_env

    cfg = config_dir()
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "settings.toml").write_text(textwrap.dedent("""
        [providers.gateway]
        base_url = "http://127.0.0.1:9/v1"
        api_key_env = "GW_CRED"
    """))
    creds = cfg / "credentials.toml"
    creds.write_text('FILE_NAMED = "file-secret-1"\n[providers.gateway]\napi_key = "file-secret-2"\n')
    creds.chmod(0o600)
    env = {"GATEWAY_API_KEY": "gw-1", "GW_CRED": "gw-2", "GITHUB_TOKEN": "t", "DB_PASSWORD": "p",
           "AWS_SECRET_ACCESS_KEY": "s", "my_api_key": "lower", "FILE_NAMED": "x", "INNOCENT": "file-secret-2",
           "DEEPSEEK_API_KEY": "sk-1", "KEEP_ME": "visible"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    out = bash_env()
    assert out["KEEP_ME"] == "visible"
    assert (set(env) - {"KEEP_ME"}) & set(out) == set()
    assert not {v for v in out.values()} & {"gw-1", "gw-2", "sk-1", "file-secret-2"}


@pytest.mark.parametrize("preset", ["read-only", "workspace-write", "full-access"])
def test_bash_env_under_every_preset_shows_no_key(tmp_path, preset):
    """The model asks for ``env`` through a real gateway provider (key in GATEWAY_API_KEY); neither the
    gateway key nor any credential-looking variable reaches the command, the answer or the log."""
    import json

    from dsh_tui.config import settings_path
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call

    with ScriptServer() as srv:
        srv.push(sse_reply(chunk(tool_calls=[tool_call(0, id="c1", name="bash",
                                                       args=json.dumps({"command": "env", "description": "env"}))]),
                           chunk(finish="tool_calls")),
                 sse_reply(chunk("done"), chunk(finish="stop")))
        path = settings_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[default]\nprovider = "gateway"\nmodel = "m"\n'
                        f'[providers.gateway]\nbase_url = "{srv.base_url}/v1"\napi_key_env = "GATEWAY_API_KEY"\n')
        env = dict(os.environ, GATEWAY_API_KEY="gw-secret-123", OTHER_TOKEN="tok-secret-456", PLAIN_VAR="plain-789")
        root = tmp_path / "root"
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "show env", "--root", str(root),
                            "--preset", preset], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        assert srv.requests[0]["headers"].get("authorization") == "Bearer gw-secret-123"
    logs = list(root.rglob("session*.jsonl*"))
    assert len(logs) == 1
    from dsh_tui.store.fixture import open_log_file
    from dsh_tui.store.jsonl import decode_raw_text

    text = decode_raw_text(logs[0].read_bytes()).decode()
    assert [e for e in open_log_file(logs[0]).events if e["type"] == "tool/result"]
    if preset == "full-access":  # the command ran (another preset may refuse it: then nothing can leak either)
        assert "plain-789" in text
    assert "gw-secret-123" not in text and "tok-secret-456" not in text and "gw-secret-123" not in p.stdout


# ---------------------------------------------------------------------------------------------------------
# refusals outside the workspace: the README's text and the behaviour agree


@pytest.mark.parametrize("preset", ["read-only", "workspace-write", "full-access"])
async def test_reads_outside_the_workspace_get_the_approval_text_under_a_preset(tmp_path, preset):
    from dsh_tui.tools import builtin_tools
    from tests.runtime.helpers import make_agent, of_type, run_followup

    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    agent = make_agent([scripted.calls([("c1", "read", {"file_path": "../secret.txt"}),
                                        ("c2", "read", {"file_path": "link.txt"}),
                                        ("c3", "read", {"file_path": str(tmp_path / "secret.txt")})]),
                        scripted.text("done")],
                       builtin_tools(), tmp_path=ws, preset=preset)
    await run_followup(agent, "go")
    from dsh_tui.session.content import tool_result_block

    results = [tool_result_block(r["data"]["message"])["content"][0]["text"] for r in of_type(agent, "tool/result")]
    assert len(results) == 3
    for text in results:
        assert "[sandbox:" not in text
        if preset == "full-access":
            assert "outside" in text
        else:
            assert text == 'Error: tool "read" requires approval, but no approval channel is available'
