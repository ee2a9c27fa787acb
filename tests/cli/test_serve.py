"""``dsh-tui serve``: loopback by default, a token on every request, one app process per websocket, each
ended when its websocket closes or the server stops. A real server process, real HTTP and websocket clients."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import textwrap

import aiohttp
import httpx
import pytest

from dsh_tui.ui.serve import SERVE_PRIVATE_NAMES, TESTED_TEXTUAL_SERVE
from tests.cli.serve_support import DSH_TUI, Served, gone, listening

PATHS = ["/", "/ws", "/static/js/textual.js", "/static/css/xterm.css", "/download/abc"]


def test_listens_on_loopback_only_and_refuses_every_request_without_a_ticket(tmp_path):
    with Served(["--port", "0", "--root", str(tmp_path / "r")]) as s:
        assert s.url.startswith(f"http://127.0.0.1:{s.port}/?ticket=") and len(s.ticket) >= 32
        assert listening(s.port) == ["127.0.0.1"]
        upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                   "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": s.base}
        with httpx.Client(base_url=s.base, timeout=10) as client:
            for params in ({}, {"ticket": "wrong"}, {"ticket": ""}, {"ticket": s.ticket[:-1]},
                           {"token": "x" * 32}, {"token": ""}):
                r = client.get("/", params=params)
                assert r.status_code == 403, (params, r.status_code)
                assert "set-cookie" not in r.headers
            for path in ("/ws", f"/ws/{s.ticket}", "/ws/guess"):  # a websocket without its page's ticket
                assert client.get(path, headers=upgrade).status_code == 403, path
            # the right ticket through another name (DNS rebinding: evil.example resolving to 127.0.0.1)
            r = client.get("/", params={"ticket": s.ticket}, headers={"Host": f"evil.example:{s.port}"})
            assert r.status_code == 403
            assert client.get("/static/js/textual.js", headers={"Host": f"evil.example:{s.port}"}).status_code == 403
            assert s.started() == [] and s.children() == []

            first = s.take_url()
            page = client.get(first)
            assert page.status_code == 200 and 'id="terminal"' in page.text
            assert f'"ws://127.0.0.1:{s.port}/ws/' in page.text and "googleapis" not in page.text
            assert "set-cookie" not in page.headers and page.headers["referrer-policy"] == "no-referrer"
            assert client.get(first).status_code == 403  # used: a leaked URL opens nothing
            nxt = s.take_url()  # a fresh one for the next tab, printed when the first was used
            assert nxt != first and client.get(nxt).status_code == 200
            js = client.get("/static/js/textual.js")  # textual-serve's public files, for the page
            assert js.status_code == 200 and len(js.content) > 100_000
        assert s.started() == []
    assert "refused" in s.log() and s.ticket not in s.log()


async def _ws(s: Served, *, origin: str | None = "", url: str | None = None):
    """A tab: its page (a fresh URL), then the websocket the page names, from the page's origin."""
    if url is None:
        with httpx.Client(timeout=10) as client:
            url = await asyncio.to_thread(s.ws_url, client)
    session = aiohttp.ClientSession()
    headers = {} if origin is None else {"Origin": origin or s.base}
    try:
        ws = await session.ws_connect(url + "?width=100&height=30", headers=headers)
    except BaseException:
        await session.close()
        raise
    return session, ws


async def _first_screen(ws, needle: bytes, timeout: float = 30, either: bytes | None = None) -> bytes:
    seen = b""
    try:
        async with asyncio.timeout(timeout):
            while needle not in seen and (either is None or either not in seen):
                msg = await ws.receive()
                if msg.type == aiohttp.WSMsgType.BINARY:
                    seen += msg.data
                elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    raise AssertionError(f"websocket closed before {needle!r}: {_plain(seen)[-800:]!r}")
    except TimeoutError:
        raise AssertionError(f"never saw {needle!r}; the last output: {_plain(seen)[-800:]!r}") from None
    return seen


def _plain(data: bytes) -> str:
    import re

    return re.sub(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]", b"", data).decode("utf-8", "replace")


async def test_a_websocket_needs_its_pages_one_time_ticket_and_its_origin(tmp_path):
    with Served(["--port", "0", "--root", str(tmp_path / "r")]) as s:
        with httpx.Client(timeout=10) as client:
            urls = [await asyncio.to_thread(s.ws_url, client) for _ in range(3)]
        for origin in (None, "http://evil.example", f"http://127.0.0.1:{s.port + 1}", "null"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as err:
                await _ws(s, origin=origin, url=urls[0])
            assert err.value.status == 403, origin
        assert s.started() == [] and s.children() == []
        session, ws = await _ws(s, url=urls[1])  # the page's own origin, its own ticket
        try:
            await _first_screen(ws, b"Filter")
            assert len(s.started()) == 1
            with pytest.raises(aiohttp.WSServerHandshakeError) as err:  # a ticket opens one websocket
                await _ws(s, url=urls[1])
            assert err.value.status == 403
        finally:
            await ws.close()
            await session.close()
        assert s.wait_log(lambda s: s.ended())
        assert len(s.started()) == 1


def test_terminal_sizes_are_clamped():
    from dsh_tui.ui.serve import clamp_size

    assert clamp_size("100000", "99999999") == (1000, 500)
    assert clamp_size("-5", "0") == (1, 1)
    assert clamp_size(None, "x") == (80, 24) and clamp_size(120, 40) == (120, 40)


async def test_a_token_of_the_users_own_comes_from_a_file_or_the_environment(tmp_path):
    token = "a-token-of-my-own-1234"
    (tmp_path / "tok").write_text(token + "\n")
    for args, env in ((["--token-file", str(tmp_path / "tok")], {}), ([], {"DSH_TUI_SERVE_TOKEN": token})):
        with Served(["--port", "0", *args, "--root", str(tmp_path / "r")], env=env) as s:
            with httpx.Client(base_url=s.base, timeout=10) as client:
                for _ in range(2):  # reusable, unlike the printed URLs
                    assert client.get("/", params={"token": token}).status_code == 200
                assert client.get("/", params={"token": token[:-1]}).status_code == 403
                url = s.ws_url(client, f"{s.base}/?token={token}")
            session, ws = await _ws(s, url=url)
            try:
                await _first_screen(ws, b"Filter")
            finally:
                await ws.close()
                await session.close()
            assert token not in s.log() and token not in "".join(s.out)


def test_ipv6_loopback(tmp_path):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no ::1 on this machine")
    for host in ("::1", "[::1]"):
        with Served(["--host", host, "--port", "0", "--root", str(tmp_path / "r")]) as s:
            assert s.url.startswith(f"http://[::1]:{s.port}/?ticket="), s.url
            assert listening(s.port) == ["::1"]
            with httpx.Client(timeout=10) as client:
                page = client.get(s.take_url())
            assert page.status_code == 200 and f"ws://[::1]:{s.port}/ws/" in page.text
            assert "warning" not in s.log()


async def test_a_tab_never_imports_from_the_servers_cwd(tmp_path):
    """A cloned repository as the cwd, with a ``textual.py``, a ``platformdirs.py`` and a ``dsh_tui/`` of its
    own that each leave a marker when imported: the tab's app imports none of them."""
    repo = tmp_path / "repo"
    (repo / "dsh_tui").mkdir(parents=True)
    marker = tmp_path / "imported"
    plant = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("textual.py", "platformdirs.py", "yaml.py", "dsh_tui/__init__.py", "dsh_tui/__main__.py"):
        (repo / name).write_text(plant)
    with Served(["--port", "0", "--root", str(tmp_path / "r")], cwd=repo) as s:
        session, ws = await _ws(s)
        try:
            await _first_screen(ws, b"Filter")
        finally:
            await ws.close()
            await session.close()
        assert s.wait_log(lambda s: s.ended())
    assert not marker.exists(), marker.read_text()


async def test_each_websocket_gets_its_own_app_process_and_closing_it_ends_that_process(tmp_path):
    with Served(["--port", "0", "--root", str(tmp_path / "r")]) as s:
        one, ws1 = await _ws(s)
        two, ws2 = await _ws(s)
        try:
            await _first_screen(ws1, b"Filter")
            await _first_screen(ws2, b"Filter")
            assert s.wait_log(lambda s: len(s.started()) == 2)
            first, second = s.started()
            assert first != second and sorted(s.children()) == sorted([first, second])
            await ws1.close()  # the tab closes
            assert s.wait_log(lambda s: first in s.ended()), s.log()
            assert s.ended()[first] == "0" and gone(first)
            assert not gone(second) and second not in s.ended()
            await ws2.send_json(["stdin", "x"])  # the other app still answers
            await _first_screen(ws2, b"x")
        finally:
            await ws1.close()
            await one.close()
        # the server stops (Ctrl+C / SIGTERM) with a tab still open: that app quits first
        code = await asyncio.to_thread(s.stop)
        await ws2.close()
        await two.close()
        assert code == 0, s.log()
        assert s.ended().get(second) == "0" and gone(second)


async def test_an_app_that_will_not_quit_is_terminated_with_its_process_group(tmp_path, monkeypatch):
    """The quit packet is ignored, SIGTERM too: after the grace periods SIGKILL ends the app, what it
    started in its process group, and what it started in a session of its own (as the bash tool and
    background jobs do: its process group is not the app's)."""
    from textual_serve.download_manager import DownloadManager

    from dsh_tui.ui import serve

    monkeypatch.setattr(serve, "QUIT_GRACE_S", 0.5)
    monkeypatch.setattr(serve, "TERM_GRACE_S", 0.5)
    pidfile = tmp_path / "child.pid"
    stubborn = textwrap.dedent(f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        tool = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        open({str(pidfile)!r}, "w").write(f"{{child.pid}} {{tool.pid}}")
        sys.stdout.write("__GANGLION__\\n"); sys.stdout.flush()
        time.sleep(600)
    """)
    sent: list[bytes] = []

    async def write_bytes(data: bytes) -> None:
        sent.append(data)

    async def write_str(data: str) -> None:
        pass

    async def close() -> None:
        pass

    ended: list[int] = []
    app = serve.ServedApp([sys.executable, "-c", stubborn], on_exit=lambda a: ended.append(a.pid),
                          write_bytes=write_bytes, write_str=write_str, close=close,
                          download_manager=DownloadManager())
    await app.start(80, 24)
    async with asyncio.timeout(30):
        while not pidfile.exists() or not pidfile.read_text():
            await asyncio.sleep(0.05)
    child, tool = map(int, pidfile.read_text().split())
    async with asyncio.timeout(60):  # (a survivor holding the app's stdout kept the reader waiting)
        await app.stop()
    assert ended == [app.pid] and app._process.returncode == -9
    async with asyncio.timeout(10):
        while not (gone(child) and gone(tool)):  # killed; reaped by init once their parent is gone
            await asyncio.sleep(0.05)
    await app.stop()  # idempotent


def test_another_host_warns_what_it_exposes(tmp_path):
    with Served(["--host", "0.0.0.0", "--port", "0", "--root", str(tmp_path / "r")]) as s:
        assert listening(s.port) == ["0.0.0.0"]
        assert s.wait_log(lambda s: len(s.urls) == 2) and s.url.startswith("http://127.0.0.1:")
        # the warning is on stderr, read by another thread than the URLs on stdout: wait for it too
        assert s.wait_log(lambda s: "plain HTTP" in s.log())
        warning = s.log()
        assert "warning: listening on 0.0.0.0, not on loopback" in warning
        assert "can run shell commands on this machine" in warning and "plain HTTP" in warning
        assert httpx.get(s.base + "/", timeout=10).status_code == 403
        # reached by any of the machine's addresses (any Host), still one tab per ticket
        with httpx.Client(timeout=10) as client:
            url = s.take_url()
            assert client.get(url, headers={"Host": f"192.0.2.7:{s.port}"}).status_code == 200
            assert client.get(url).status_code == 403


def _refused(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DSH_TUI), "serve", *args], capture_output=True, text=True, timeout=60, cwd=cwd)


@pytest.mark.parametrize(("args", "code", "words"), [
    (["--", "sessions"], 2, "cannot serve `dsh-tui sessions`"),
    (["--root", "/tmp", "--", "run"], 2, "--root before -- is for the browser"),
    (["--token", "a-token-of-my-own-1234"], 2, "--token on the command line is visible to every user"),
    (["--token-file", "/nonexistent/tok"], 2, "cannot read --token-file /nonexistent/tok"),
    (["--", "run", "--headless", "hi"], 2, "cannot serve --headless"),
    (["--", "resume", "--no-such-option"], 2, "unrecognized arguments: --no-such-option"),
    (["--port", "70000"], 2, "port out of range"),
])
def test_refusals_are_one_line_and_start_nothing(args, code, words):
    r = _refused(*args)
    assert r.returncode == code, r
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("dsh-tui: "), r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr


def test_a_port_in_use_is_one_line():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _refused("--port", str(port))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"dsh-tui: cannot listen on 127.0.0.1:{port}: address already in use"] \
        or (len(r.stderr.splitlines()) == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr), r.stderr


async def test_closing_the_websocket_mid_turn_closes_the_turn_in_the_log(tmp_path):
    """The model is still streaming when the tab closes: the app quits, its harness ends the turn (aborted)
    and the log on disk is valid, with no open turn and everything streamed so far."""
    import json

    from tests.ui.browser_support import ModelServer

    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    root = tmp_path / "sessions"
    with ModelServer() as model:
        env = {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": model.base_url}
        with Served(["--port", "0", "--", "run", "--root", str(root)], cwd=ws_dir, env=env) as s:
            session, ws = await _ws(s)
            try:
                await _first_screen(ws, b"sk the agent")  # (the A is under the cursor: styled apart)
                assert s.wait_log(lambda s: any(root.rglob("session.lock")), timeout=60)  # the session opens
                await ws.send_json(["focus"])  # as the page does when its terminal takes the focus
                deadline = asyncio.get_running_loop().time() + 120
                while asyncio.get_running_loop().time() < deadline:
                    for key in "keep streaming\r":  # as xterm.js sends them, one by one
                        await ws.send_json(["stdin", key])
                    # a prompt sent while the chat's session is still opening is refused (a race of the
                    # chat, not of serve; see tests/ui/browser_support.send_prompt): send it again
                    seen = await _first_screen(ws, b"still streaming", either=b"No session is open")
                    if b"still streaming" in seen:
                        break
                    await asyncio.sleep(7)  # the refusal's notice (6 s) is gone: its repaints no longer count
                else:
                    raise AssertionError(f"the prompt was refused for 2 minutes: {_plain(seen)[-500:]!r}")
                pid = s.started()[0]
            finally:
                await ws.close()
                await session.close()
            assert s.wait_log(lambda s: pid in s.ended()), s.log()
            assert s.ended()[pid] == "0" and gone(pid)
    logs = [p for p in root.rglob("session*.jsonl*") if p.is_file()]
    check = subprocess.run([str(DSH_TUI), "log", "check", str(logs[0])], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and json.loads(check.stdout)["open_turn"] is False, check
    cat = subprocess.run([str(DSH_TUI), "log", "cat", str(logs[0])], capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in cat.stdout.splitlines()]
    ends = [e for e in events if e["type"] == "turn/end"]  # (a session title may be written after it)
    assert len(ends) == 1 and ends[0]["data"]["reason"]["kind"] == "aborted", ends
    streamed = "".join(e["data"]["chunk"].get("text", "") for e in events if e["type"] == "assistant/chunk")
    assert streamed == "first words still streaming"


def test_without_the_web_extra_it_says_what_to_install(monkeypatch, capsys):
    import importlib.util

    from dsh_tui.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "textual_serve" else real(name, *a))
    assert main(["serve"]) == 1
    err = capsys.readouterr().err
    assert err == "dsh-tui: serve needs textual-serve: pip install 'dsh-tui[web]'\n"


def test_the_page_escapes_what_comes_from_the_request(tmp_path):
    with Served(["--port", "0", "--root", str(tmp_path / "r")]) as s:
        r = httpx.get(s.base + "/", params={"ticket": s.ticket},
                      headers={"Host": 'x"><script>alert(1)</script>'}, timeout=10)
        assert r.status_code in (200, 400, 403)
        assert "<script>alert(1)" not in r.text


def test_a_host_or_origin_without_a_port_is_taken_at_the_default_port():
    from dsh_tui.ui.serve import _origin_netloc, _with_port

    assert _with_port("127.0.0.1") == "127.0.0.1:80" and _with_port("[::1]") == "[::1]:80"
    assert _with_port("LocalHost:8765") == "localhost:8765" and _with_port("[::1]:9") == "[::1]:9"
    assert _with_port(_origin_netloc("http://127.0.0.1")) == "127.0.0.1:80"
    assert _origin_netloc("null") == "" and _origin_netloc("file:///x") == ""


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's reaping is init's business)."""
    from pathlib import Path

    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


async def test_a_tab_ends_with_a_server_killed_by_sigkill_and_closes_its_turn(tmp_path):
    """Issue #26 item 4: ``kill -9`` of the server with a tab mid-turn. The tab's app used to run on forever
    (stdin at EOF) holding the session lock; now the kernel tells it (PR_SET_PDEATHSIG: SIGTERM), it quits as
    Ctrl+Q does — the turn is closed as aborted in the log — and nothing of it is left running. (Under load the
    quit's close and the unmount's, after the output pipe broke, ran at once and the second cut the first short:
    ``tests/ui/test_bridge_stop.py``.)"""
    events = await _kill_server_mid_turn(tmp_path)
    ends = [e for e in events if e["type"] == "turn/end"]
    assert len(ends) == 1 and ends[0]["data"]["reason"]["kind"] == "aborted", [e["type"] for e in events]


async def test_the_kernels_repeated_parent_death_signal_does_not_cut_the_tabs_quit_short(tmp_path):
    """The kernel sends the parent-death signal again each time the dying server's threads hand the orphaned
    tab on (one SIGTERM per thread of the server). The tab's app took the second one for a user's "now!" and
    ended at once (exit 143) while its first quit was still closing the turn: the aborted ``turn/end`` was
    lost whenever that close took longer than the repeats (about 1 full CI run in 4; always with a command
    running, which takes its grace period to stop). Here the turn runs a command that ignores SIGTERM, and
    SIGTERMs keep coming, as the kernel's repeats, from the server's death until the app has gone: the turn
    is closed all the same."""
    events = await _kill_server_mid_turn(tmp_path, prompt="run the slow command", repeat_sigterm=True)
    ends = [e for e in events if e["type"] == "turn/end"]
    assert len(ends) == 1 and ends[0]["data"]["reason"]["kind"] == "aborted", [e["type"] for e in events]
    results = [e for e in events if e["type"] == "tool/result"]
    assert len(results) == 1, [e["type"] for e in events]  # the command's call closed too


def test_a_tab_whose_server_vanished_unannounced_quits_and_closes_its_turn(tmp_path):
    """Where the kernel does not report the server's death (no ``PR_SET_PDEATHSIG`` off Linux; on Linux the
    pipes can break before its signal comes), the tab's app learns it from its pipes: stdin at EOF, stdout
    closed. Textual's web driver ignored the EOF, and its write to the closed stdout raised in a refresh whose
    error handling wrote (a bell) and raised again: the app ran on half stopped, holding its session, with
    the turn open. Now either end closing is a hang-up and the app quits as Ctrl+Q does. Here the app runs
    as the server starts it, minus the server's pid (no parent-death signal), and the "server" closes its
    ends of the pipes mid-turn."""
    import json
    import os
    import select
    import time

    from dsh_tui.cli.serve_cmd import app_argv
    from dsh_tui.ui.serve import ServedApp
    from dsh_tui.ui.served import SERVER_PID_ENV
    from tests.ui.browser_support import ModelServer
    from tests.ui.pty_support import session_events

    async def nothing(*_args) -> None:
        return None

    def packet(kind: bytes, payload: bytes) -> bytes:
        return kind + len(payload).to_bytes(4, "big") + payload

    ws_dir, root = tmp_path / "ws", tmp_path / "sessions"
    ws_dir.mkdir()
    with ModelServer() as model:
        service = ServedApp(app_argv(["run", "--root", str(root)]), write_bytes=nothing, write_str=nothing,
                            close=nothing, download_manager=None)
        env = {**service.app_environment(100, 30), "DEEPSEEK_API_KEY": "sk-test",
               "DEEPSEEK_BASE_URL": model.base_url}
        env.pop(SERVER_PID_ENV)
        proc = subprocess.Popen(service.argv, cwd=ws_dir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            seen = b""

            def screen_shows(needle: bytes, timeout: float = 60) -> bool:
                nonlocal seen
                end = time.monotonic() + timeout
                while needle not in seen and time.monotonic() < end:
                    if select.select([proc.stdout], [], [], 0.2)[0]:
                        seen += os.read(proc.stdout.fileno(), 65536)
                return needle in seen

            assert screen_shows(b"sk the agent"), _plain(seen)[-800:]
            end = time.monotonic() + 60
            while not any(root.rglob("session.lock")) and time.monotonic() < end:
                time.sleep(0.1)
            proc.stdin.write(packet(b"M", json.dumps({"type": "focus"}).encode()))
            for key in "keep streaming\r":
                proc.stdin.write(packet(b"D", key.encode()))
            proc.stdin.flush()
            assert screen_shows(b"still streaming"), _plain(seen)[-800:]
            proc.stdin.close()  # the server is gone: its ends of the pipes close, and nothing else happens
            proc.stdout.close()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                raise AssertionError("the tab's app outlived its server's pipes") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    ends = [e["data"]["reason"] for e in session_events(root) if e["type"] == "turn/end"]
    assert len(ends) == 1 and ends[0]["kind"] == "aborted", ends


def _slow_command_server():
    """The scripted model server; "run the slow command" gets a ``bash`` call that ignores SIGTERM (the turn's
    cancel then waits out the bash tool's grace period before SIGKILL)."""
    import json

    from tests.llm.sse_server import chunk, tool_call
    from tests.ui.browser_support import ModelServer

    class SlowCommand(ModelServer):
        def reply(self, body):
            messages = body.get("messages") or []
            last = messages[-1] if messages else {}
            system = json.dumps([m.get("content") for m in messages if m.get("role") == "system"]).lower()
            titling = "title" in system and "concise" in system  # the title request: the usual title
            prompts = json.dumps([m.get("content") for m in messages if m.get("role") == "user"])
            if not titling and last.get("role") != "tool" and "run the slow command" in prompts:
                command = "trap '' TERM; touch started; sleep 120"
                call = tool_call(0, id="call_1", name="bash", args=json.dumps({"command": command,
                                                                                "description": "slow"}))
                usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
                return [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls"),
                        chunk(no_choices=True, usage=usage)]
            return super().reply(body)

    return SlowCommand()


async def _kill_server_mid_turn(tmp_path, prompt: str = "keep streaming", repeat_sigterm: bool = False) -> list[dict]:
    """A served tab mid-turn (``prompt``: "keep streaming", a stream left open; "run the slow command", a
    command that ignores SIGTERM), its server SIGKILLed; ``repeat_sigterm``: the tab's app then gets SIGTERM
    after SIGTERM, as the kernel's repeated parent-death signal, until it has gone. The session log's events."""
    import json
    import os
    import signal
    import time

    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    root = tmp_path / "sessions"
    args = ["--port", "0", "--", "run", "--root", str(root)]
    if "command" in prompt:
        args += ["--preset", "full-access"]  # the command runs without asking
    with _slow_command_server() as model:
        env = {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": model.base_url}
        with Served(args, cwd=ws_dir, env=env) as s:
            session, ws = await _ws(s)
            try:
                await _first_screen(ws, b"sk the agent")
                assert s.wait_log(lambda s: any(root.rglob("session.lock")), timeout=60)
                await ws.send_json(["focus"])
                deadline = asyncio.get_running_loop().time() + 120
                running = (lambda: (ws_dir / "started").exists()) if "command" in prompt else None
                while asyncio.get_running_loop().time() < deadline:
                    for key in prompt + "\r":
                        await ws.send_json(["stdin", key])
                    if running is not None:
                        for _ in range(300):
                            if running():
                                break
                            await asyncio.sleep(0.1)
                        if running():
                            break
                        continue
                    seen = await _first_screen(ws, b"still streaming", either=b"No session is open")
                    if b"still streaming" in seen:
                        break
                    await asyncio.sleep(7)
                else:
                    raise AssertionError("the turn never got going")
                pid = s.started()[0]
                s.proc.kill()  # SIGKILL: the server runs no cleanup of its own
                s.proc.wait(30)
                end = time.monotonic() + 60
                while _running(pid) and time.monotonic() < end:
                    if repeat_sigterm:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGTERM)
                    await asyncio.sleep(0.002 if repeat_sigterm else 0.1)
                assert not _running(pid), "the tab's app outlived its server"
            finally:
                await ws.close()
                await session.close()
                if _running(s.started()[0]):
                    os.kill(s.started()[0], signal.SIGKILL)
    logs = [p for p in root.rglob("session*.jsonl*") if p.is_file()]
    assert len(logs) == 1, logs
    cat = subprocess.run([str(DSH_TUI), "log", "cat", str(logs[0])], capture_output=True, text=True, timeout=60)
    return [json.loads(line) for line in cat.stdout.splitlines()]


@pytest.mark.parametrize(("path", "name"), SERVE_PRIVATE_NAMES)
def test_every_private_textual_serve_name_exists_on_the_installed_release(path, name):
    """serve.py overrides and reads private textual-serve names: each must still be there (attributes set in
    ``__init__`` are checked on an instance)."""
    import importlib

    from textual_serve.download_manager import DownloadManager

    module, _, cls_name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), cls_name)
    if hasattr(cls, name):
        return

    async def nothing(*_args) -> None:
        return None

    instance = cls("true", write_bytes=nothing, write_str=nothing, close=nothing,
                   download_manager=DownloadManager())
    assert hasattr(instance, name), f"{path}.{name} is gone from this textual-serve"


def test_another_textual_serve_release_is_refused_in_one_line():
    from dsh_tui.session.errors import DshError
    from dsh_tui.ui.serve import check_serve_version

    check_serve_version()  # the installed one is the tested one (pinned)
    with pytest.raises(DshError, match=rf"needs textual-serve {TESTED_TEXTUAL_SERVE} \(found 1\.2\.0\)"):
        check_serve_version("1.2.0")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, importlib.metadata as md
        real = md.version
        md.version = lambda name: "1.2.0" if name == "textual-serve" else real(name)
        from dsh_tui.cli import main
        sys.exit(main(["serve", "--port", "0"]))
        """)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith(f"pip install 'textual-serve=={TESTED_TEXTUAL_SERVE}'"), out.stderr
