"""OAuth for HTTP MCP servers, end to end with real parts: an OAuth-protected MCP server with its own
authorization server on 127.0.0.1 (tests/mcp/oauth_server.py, the ``mcp`` SDK's server-side auth),
``dsh-tui mcp login`` as a subprocess whose browser step the test does by following the printed URL, headless
runs against the scripted model server, a refresh of an expired token, ``mcp logout`` and "needs login"."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.mcp.helpers import call_chunks, run_headless, tool_messages, write_settings

USAGE = {"prompt_tokens": 3, "completion_tokens": 1}


def _start(env: dict | None = None):
    proc = subprocess.Popen([sys.executable, "-m", "tests.mcp.oauth_server"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **(env or {})})
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), f"the OAuth test server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def oauth_server():
    yield from _start()


@pytest.fixture
def denying_server():
    yield from _start({"MCP_TEST_DENY": "1"})


def dsh(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", *argv], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ))


def token_file() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "dsh-tui" / "mcp-oauth" / "remote.json"


def stats(base: str) -> dict:
    return httpx.get(f"{base}/test/stats").json()


def login(base: str) -> tuple[str, str]:
    """``dsh-tui mcp login remote``; the browser step done here: follow the printed URL (the authorization
    server approves and redirects to the command's listener). (stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "dsh_tui", "mcp", "login", "remote", "--no-browser",
                             "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith(f"{base}/authorize?"), url
        page = httpx.get(url, follow_redirects=True, timeout=30)
        assert page.status_code == 200 and "Authorization received" in page.text
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    return url + "\n" + out, err


def secrets_in(*texts: str) -> list[str]:
    data = json.loads(token_file().read_text())
    found = []
    for secret in (data["tokens"]["access_token"], data["tokens"]["refresh_token"]):
        found += [secret for t in texts if secret in t]
    return found


def logs_and_sessions(tmp_path: Path) -> str:
    texts = [p.read_text(errors="replace") for p in (tmp_path / "root").rglob("*") if p.is_file()]
    cache = Path(os.environ["XDG_CACHE_HOME"])
    texts += [p.read_text(errors="replace") for p in cache.rglob("*.log")]
    return "\n".join(texts)


def test_login_then_a_headless_run_offers_and_calls_the_tools_then_refresh_logout_and_needs_login(
        tmp_path, oauth_server):
    base = oauth_server
    with ScriptServer() as srv:
        write_settings(srv)
        added = dsh("mcp", "add", "remote", f"{base}/mcp")  # as a user adds it (the outside-author journey)
        assert added.returncode == 0, added.stderr
        from dsh_tui.config import settings_path

        with settings_path().open("a") as f:  # [mcp.servers.remote] is the file's last table
            f.write("startup_timeout_ms = 60000\n")
        # before any login: listed as needing one, quickly, with a defined exit code
        listed = dsh("mcp", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [(r["name"], r["state"]) for r in json.loads(listed.stdout)] == [("remote", "needs-login")]
        plain = dsh("mcp", "list")
        assert "remote  " in plain.stdout and "needs login: run dsh-tui mcp login remote" in plain.stdout
        assert stats(base)["registrations"] == 0  # a run that is not a login registers nothing

        out, err = login(base)
        assert "logged in to MCP server remote (12 tools)" in out
        assert stat.S_IMODE(token_file().stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file().parent.stat().st_mode) == 0o700
        assert stats(base)["code_exchanges"] == 1
        assert not secrets_in(out, err)

        # the first request of a headless run offers the server's tools and the model calls one
        srv.push(sse_reply(*call_chunks(("c1", "mcp__remote__echo", {"text": "behind oauth"})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("done"), chunk(finish="stop", usage=USAGE)))
        p = run_headless(tmp_path, "use the echo tool", "--preset", "full-access")
        assert p.returncode == 0, p.stderr
        first = srv.requests[0]["body"]
        assert "mcp__remote__echo" in [t["function"]["name"] for t in first.get("tools", [])]
        assert tool_messages(srv.requests[1]) == {"c1": "echo: behind oauth"}
        assert stats(base)["tool_calls"] == 1
        assert not secrets_in(p.stdout, p.stderr, logs_and_sessions(tmp_path))

        # an expired access token: refreshed before it is sent (the server no longer takes the old one)
        old = json.loads(token_file().read_text())
        data = {**old, "expires_at": time.time() - 60}
        token_file().write_text(json.dumps(data))
        httpx.post(f"{base}/test/expire")
        srv.requests.clear()
        srv.push(sse_reply(*call_chunks(("c2", "mcp__remote__echo", {"text": "refreshed"})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("done"), chunk(finish="stop", usage=USAGE)))
        p = run_headless(tmp_path, "again", "--preset", "full-access")
        assert p.returncode == 0, p.stderr
        assert tool_messages(srv.requests[1]) == {"c2": "echo: refreshed"}
        assert stats(base)["refreshes"] == 1 and stats(base)["authorizations"] == 1  # no new login
        new = json.loads(token_file().read_text())
        assert new["tokens"]["access_token"] != old["tokens"]["access_token"]
        assert new["expires_at"] > time.time()
        assert stat.S_IMODE(token_file().stat().st_mode) == 0o600
        assert not secrets_in(p.stdout, p.stderr, logs_and_sessions(tmp_path))

        # a token the server refuses before its time (revoked): refreshed too, not a new login
        httpx.post(f"{base}/test/expire")
        srv.requests.clear()
        srv.push(sse_reply(*call_chunks(("c3", "mcp__remote__echo", {"text": "revoked"})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("done"), chunk(finish="stop", usage=USAGE)))
        p = run_headless(tmp_path, "once more", "--preset", "full-access")
        assert p.returncode == 0, p.stderr
        assert tool_messages(srv.requests[1]) == {"c3": "echo: revoked"}
        assert stats(base)["refreshes"] == 2 and stats(base)["authorizations"] == 1
        assert not secrets_in(p.stdout, p.stderr, logs_and_sessions(tmp_path))

        # logout forgets the tokens: the next run reports the server as needing a login, without its tools
        out = dsh("mcp", "logout", "remote")
        assert out.returncode == 0 and "logged out of MCP server remote" in out.stdout, out.stderr
        assert not token_file().exists()
        srv.requests.clear()
        srv.push(sse_reply(chunk("no tools"), chunk(finish="stop", usage=USAGE)))
        started = time.monotonic()
        p = run_headless(tmp_path, "and now?")
        assert p.returncode == 0, p.stderr
        assert not any(t["function"]["name"].startswith("mcp__remote__") for t in srv.requests[0]["body"]
                       .get("tools", []))
        assert p.stderr.count("needs login") == 1, p.stderr
        assert "dsh-tui: MCP server remote: needs login: run dsh-tui mcp login remote" in p.stderr
        # it did not wait for its 60 s startup timeout (a bound, not a measurement: the run ends far sooner)
        assert time.monotonic() - started < 60
        assert stats(base)["registrations"] == 1

        # a server the run requires (fail_on_startup_error) stops it in one line saying what to do
        with settings_path().open("a") as f:
            f.write("fail_on_startup_error = true\n")
        p = run_headless(tmp_path, "required")
        assert p.returncode != 0
        assert p.stderr == "dsh-tui: MCP server remote needs login: run dsh-tui mcp login remote\n"

        # removing the server forgets its tokens too
        login(base)
        assert token_file().exists()
        assert dsh("mcp", "remove", "remote").returncode == 0
        assert not token_file().exists()


def test_login_and_logout_refuse_unknown_and_stdio_servers_in_one_line(tmp_path):
    with ScriptServer() as srv:
        write_settings(srv, f'[mcp.servers.local]\ncommand = {json.dumps(sys.executable)}\n')
        for argv in (("mcp", "login", "nope"), ("mcp", "logout", "nope"), ("mcp", "login", "local"),
                     ("mcp", "logout", "../../settings")):
            p = dsh(*argv)
            assert p.returncode == 2, (argv, p.stderr)
            assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
        assert "OAuth is for HTTP (url) servers" in dsh("mcp", "login", "local").stderr


def test_login_to_a_server_that_is_down_fails_in_one_line_and_keeps_nothing(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with ScriptServer() as srv:
        write_settings(srv, f'[mcp.servers.remote]\nurl = "http://127.0.0.1:{port}/mcp"\n')
        p = dsh("mcp", "login", "remote", "--no-browser", "--timeout", "5")
    assert p.returncode == 1
    assert p.stderr.splitlines()[-1].startswith("dsh-tui: mcp login: remote: ")
    assert "Traceback" not in p.stderr
    assert not token_file().exists()


def test_tokens_written_for_another_url_are_never_sent_there(tmp_path, oauth_server):
    """A token file bound to one URL is ignored when the server's URL is changed: no bearer to a stranger."""
    from dsh_tui.extensions.mcp import oauth

    oauth._write("remote", {"server_url": f"{oauth_server}/mcp", "tokens": {"access_token": "secret-at",
                                                                              "token_type": "Bearer"}})
    assert oauth.stored("remote", f"{oauth_server}/mcp")["tokens"]["access_token"] == "secret-at"
    assert oauth.stored("remote", "http://elsewhere.example/mcp") == {}
    assert stat.S_IMODE(token_file().stat().st_mode) == 0o600


def test_the_app_s_mcp_listing_and_a_notice_say_needs_login(tmp_path, oauth_server):
    """In process (as the app's harness has it): the ``/mcp`` listing row and the panel's text say the server
    needs a login, and one report goes to whoever listens (the app turns it into a notice)."""
    import asyncio

    from dsh_tui.extensions.commands import mcp_listing
    from dsh_tui.extensions.mcp import servers
    from tests.mcp.helpers import mcp_agent

    async def go() -> None:
        agent = mcp_agent([], {"remote": {"url": f"{oauth_server}/mcp"}}, tmp_path)
        try:
            await agent.mcp.first_attempts(30)
            rows = servers(agent)
            assert [(r.name, r.state, r.tools) for r in rows] == [("remote", "needs-login", [])]
            assert rows[0].text == "remote  needs login: run dsh-tui mcp login remote"
            assert "remote  needs login: run dsh-tui mcp login remote" in mcp_listing(rows)
            notices: list[str] = []
            agent.mcp.on_report = notices.append  # set late: the report made before it is not lost
            assert notices == ["MCP server remote needs login: run dsh-tui mcp login remote"]
        finally:
            await agent.mcp.close()

    asyncio.run(go())


async def test_the_app_shows_one_notice_and_the_panel_says_needs_login(tmp_path, oauth_server):
    """The real app (Textual pilot) with the OAuth server and no tokens: one notice naming the command, the
    ``/mcp`` panel's row says so, and the chat still works (the server never blocks it)."""
    from dsh_tui.llm import scripted
    from tests.ui.conftest import submit, wait_for
    from tests.ui.screen_text import screen_text
    from tests.ui.test_mcp_panel import McpScreen, _app, _flat

    app = _app(tmp_path, [scripted.text("still here")], mcp=(f"remote={oauth_server}/mcp",))
    hint = "MCP server remote needs login: run dsh-tui mcp login remote"
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await wait_for(pilot, lambda: hint in [n.message for n in app._notifications], timeout=60)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: "still here" in screen_text(app), timeout=30)
        app.action_mcp()
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        await wait_for(pilot, lambda: "remote needs login: run dsh-tui mcp login remote" in _flat(app), timeout=30)
        assert [n.message for n in app._notifications].count(hint) == 1


async def test_the_app_says_which_server_the_first_request_waits_for(tmp_path):
    """Issue #30 item 1: while the first request waits for a server's first connection attempt, the app says
    which one ("connecting MCP hang"); once its startup timeout passes the turn goes on."""
    from dsh_tui.llm import scripted
    from tests.ui.conftest import submit, wait_for
    from tests.ui.screen_text import screen_text
    from tests.ui.test_mcp_panel import _app

    hang = f"hang={sys.executable} -c 'import time; time.sleep(600)'"
    app = _app(tmp_path, [scripted.text("answered")], mcp=(hang,))
    seen: list[str] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.bridge.harness.agent.mcp.get("hang").config.startup_timeout_ms = 3000
        await submit(pilot, "hello")

        def look() -> bool:
            if "connecting MCP hang" in screen_text(app):
                seen.append("connecting")
            return "answered" in screen_text(app)

        await wait_for(pilot, look, timeout=60)
        assert seen, "the status never named the server being waited for"


def test_a_refused_authorization_and_a_stray_request_to_the_listener(tmp_path, denying_server):
    """The listener answers only its callback (a stray request gets 404 and it keeps listening); a refusal
    from the authorization server ends the login in one line, exit 1, with nothing kept."""
    with ScriptServer() as srv:
        write_settings(srv, f'[mcp.servers.remote]\nurl = "{denying_server}/mcp"\n')
        proc = subprocess.Popen([sys.executable, "-m", "dsh_tui", "mcp", "login", "remote", "--no-browser",
                                 "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ))
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            from urllib.parse import parse_qs, urlsplit

            callback = parse_qs(urlsplit(url).query)["redirect_uri"][0]
            stray = httpx.get(callback.replace("/callback", "/favicon.ico"))
            assert stray.status_code == 404
            page = httpx.get(url, follow_redirects=True, timeout=30)
            assert page.status_code == 200 and "Authorization refused: access_denied" in page.text
            _out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 1
    assert err.splitlines()[-1] == "dsh-tui: mcp login: remote: the authorization server refused: the user said no"
    assert "Traceback" not in err
    assert not token_file().exists()
