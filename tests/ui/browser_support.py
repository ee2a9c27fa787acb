"""A real browser for the ``dsh-tui serve`` tests: headless Chromium (Debian's ``chromium``, which ``.ci/run``
installs) driven by Playwright for Python, and a scripted model server that answers by what it is asked.

The page draws the terminal on a canvas; ``SCREEN`` reads the text xterm.js holds for it (what it paints)
through ``window.__dshTerm``, set by ``HOOK`` when the page's script stores its ``Terminal``."""

from __future__ import annotations

import json
import re
import select
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.llm.sse_server import DONE, chunk, sse, tool_call

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# textual-serve's page does ``this.terminal = new Terminal(...)``: a setter on Object.prototype sees it
HOOK = """
Object.defineProperty(Object.prototype, "terminal", {configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
    if (value && value.buffer && value.buffer.active) window.__dshTerm = value;
  },
  get() { return undefined; }});
"""
SCREEN = """() => { const t = window.__dshTerm; if (!t) return ""; const b = t.buffer.active; const out = [];
  for (let i = 0; i < t.rows; i++) { const l = b.getLine(b.viewportY + i); out.push(l ? l.translateToString(true) : ""); }
  return out.join("\\n"); }"""


def launch(playwright: Any, tmp: Path) -> Any:
    """Headless Chromium with a fresh profile (fails, never skips, when Chromium is missing)."""
    assert Path(CHROMIUM).exists(), "Chromium is not installed (apt-get install chromium; .ci/run does it)"
    context = playwright.chromium.launch_persistent_context(
        str(tmp / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1200, "height": 760},
    )
    context.add_init_script(HOOK)
    return context


def screen_text(page: Any) -> str:
    return page.evaluate(SCREEN)


def wait_screen(page: Any, *needles: str, timeout: float = 60.0) -> str:
    """The screen once it shows every needle (an AssertionError with the screen otherwise)."""
    end = time.monotonic() + timeout
    text = ""
    while time.monotonic() < end:
        text = screen_text(page)
        if all(n in text for n in needles):
            return text
        page.wait_for_timeout(50)
    raise AssertionError(f"the browser never showed {needles!r}; it shows:\n{text}")


REFUSED = "No session is open"
STALL: Any = object()  # ends a scripted reply that never finishes


def send_prompt(page: Any, text: str, attempts: int = 12) -> None:
    """Type ``text`` in the chat's composer and send it, until the transcript shows it.

    The chat paints before its session is open, and a prompt sent in between is refused ("No session is
    open.", the composer cleared): a race of the chat itself, not of serve (reported). Each refusal is
    waited out (its notice gone) and the prompt sent again; any other outcome fails."""
    for _ in range(attempts):
        page.keyboard.type(text)
        page.keyboard.press("Enter")
        end = time.monotonic() + 60
        while time.monotonic() < end:
            screen = screen_text(page)
            if f"█ {text}" in screen:
                return
            if REFUSED in screen:
                break
            page.wait_for_timeout(50)
        else:
            raise AssertionError(f"the prompt never showed:\n{screen_text(page)}")
        while REFUSED in screen_text(page) and time.monotonic() < end:
            page.wait_for_timeout(100)
    raise AssertionError(f"the prompt was refused {attempts} times:\n{screen_text(page)}")


class ModelServer:
    """An OpenAI-compatible ``/chat/completions`` on 127.0.0.1 that answers by the request: a title request
    gets a title; a prompt asking to read a file gets a ``read`` tool call; after the tool result, the
    answer quotes the ``MAGIC-<digits>`` word the tool result holds; "keep streaming" gets two deltas and
    then nothing, the stream left open; anything else gets an echo."""

    ANSWER = "The file says: "

    def __init__(self) -> None:
        outer = self
        self.requests: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                outer.requests.append(body)
                events = outer.reply(body)
                stall = events[-1] is STALL
                payload = b"".join(sse(e) for e in events if e is not STALL) + (b"" if stall else DONE)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                if not stall:
                    self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()
                if stall:  # the stream stays open, sending nothing more, until the client goes or we stop
                    self.close_connection = True
                    while not outer.stopping.wait(0.05):
                        readable, _, _ = select.select([self.connection], [], [], 0)
                        if readable and not self.connection.recv(1, socket.MSG_PEEK):
                            return

        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        messages = body.get("messages") or []
        system = json.dumps([m.get("content") for m in messages if m.get("role") == "system"])
        if "title" in system.lower() and "concise" in system.lower():
            return [chunk("Served Title", role="assistant"), chunk(finish="stop"), chunk(no_choices=True, usage=usage)]
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            found = re.search(r"MAGIC-\d+", json.dumps(last.get("content", "")))  # what the tool really read
            text = self.ANSWER + (found.group(0) if found else "nothing I could find")
            return [chunk(text, role="assistant"), chunk(finish="stop"), chunk(no_choices=True, usage=usage)]
        prompts = json.dumps([m.get("content") for m in messages if m.get("role") == "user"])
        if "keep streaming" in prompts:  # a stream that starts and never ends
            return [chunk("first words ", role="assistant"), chunk("still streaming"), STALL]
        if "read a.txt" in prompts:
            call = tool_call(0, id="call_1", name="read", args=json.dumps({"file_path": "a.txt"}))
            return [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls"),
                    chunk(no_choices=True, usage=usage)]
        return [chunk("echo", role="assistant"), chunk(finish="stop"), chunk(no_choices=True, usage=usage)]

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
