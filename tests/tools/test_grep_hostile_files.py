"""``grep`` over a workspace holding what a hostile repository can plant: a 5 GB sparse file, a FIFO, a
symlink to a device. The search skips them and finds the rest; a search cut by its timeout is one tool
error for the model, never a traceback on the user's stderr."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dsh_tui.tools.search import tools as search_tools
from dsh_tui.tools.search.walk import _aborted
from tests.llm.sse_server import DONE, chunk, sse, tool_call
from tests.tools.harness import Bench

GB = 1 << 30


def _hostile(ws) -> None:
    ws.mkdir()
    (ws / "notes.txt").write_text("nothing here\nthe NEEDLE-77 is here\n")
    with open(ws / "huge.img", "wb") as fh:  # 5 GB, no block on disk: a hole read as NUL bytes
        fh.truncate(5 * GB)
    with open(ws / "tail.log", "wb") as fh:  # 64 MB: a hole, then a line with the needle at its end
        fh.seek(64 << 20)
        fh.write(b"\nNEEDLE-77 after a hole\n")
    os.mkfifo(ws / "pipe")  # nobody ever writes to it: reading it would wait forever
    (ws / "zero").symlink_to("/dev/zero")


async def test_grep_skips_sparse_files_fifos_and_devices(tmp_path):
    ws = tmp_path / "ws"
    _hostile(ws)
    bench = Bench(ws)
    out = await asyncio.wait_for(bench.run("grep", {"pattern": "NEEDLE-77"}), 60)
    assert not out.is_error, out.text
    assert "notes.txt" in out.text and "the NEEDLE-77 is here" in out.text
    assert "huge.img" not in out.text and "pipe" not in out.text and "zero" not in out.text
    assert "tail.log" not in out.text  # a NUL byte makes it binary, as ripgrep skips it
    for single in ("pipe", "zero", "huge.img"):  # named as the path itself
        out = await asyncio.wait_for(bench.run("grep", {"pattern": "x", "path": single}), 60)
        assert "NEEDLE" not in out.text, out.text


async def test_a_search_cut_by_its_timeout_leaves_no_exception_unretrieved():
    """The tool's timeout cancels the call while its walk runs in a thread: what the walk ends with is
    taken, not left to asyncio's "Task exception was never retrieved" on stderr."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    walked = threading.Event()

    def walk(stop: threading.Event) -> dict:
        while not stop.wait(0.01):
            pass
        walked.set()
        raise _aborted("grep")

    class Ctx:
        cancelled = asyncio.Event()

    task = asyncio.ensure_future(search_tools._watch_cancel(Ctx(), walk, tool="grep"))
    await asyncio.sleep(0.1)
    task.cancel()  # as the runtime's tool timeout does
    try:
        await task
    except asyncio.CancelledError:
        pass
    while not walked.is_set():
        await asyncio.sleep(0.01)
    for _ in range(20):
        await asyncio.sleep(0.01)
        gc.collect()
    assert reported == [], [str(c.get("message")) + repr(c.get("exception")) for c in reported]


class GrepModel:
    """A model server: the first request calls ``grep NEEDLE-77``; after the result, it answers with it."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                last = (body.get("messages") or [{}])[-1]
                usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
                if last.get("role") == "tool":
                    text = "grep said: " + json.dumps(last.get("content"))[:300]
                    events = [chunk(text, role="assistant"), chunk(finish="stop")]
                else:
                    call = tool_call(0, id="call_1", name="grep", args=json.dumps({"pattern": "NEEDLE-77"}))
                    events = [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls")]
                payload = b"".join(sse(e) for e in [*events, chunk(no_choices=True, usage=usage)]) + DONE
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _bounded_memory() -> None:  # a regression must not take the machine's memory with it
    resource.setrlimit(resource.RLIMIT_AS, (3 * GB, 3 * GB))


def test_a_headless_grep_over_a_hostile_workspace_answers_with_a_clean_stderr(tmp_path):
    ws = tmp_path / "ws"
    _hostile(ws)
    model = GrepModel()
    env = {**os.environ, "DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": model.base_url,
           "DSH_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    try:
        started = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "find the needle",
                            "--root", str(tmp_path / "sessions")], cwd=ws, env=env, capture_output=True,
                           text=True, timeout=120, preexec_fn=_bounded_memory)
        elapsed = time.monotonic() - started
    finally:
        model.close()
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "never retrieved" not in p.stderr and p.stderr.strip() == "", p.stderr
    assert "grep said:" in p.stdout and "notes.txt" in p.stdout and "NEEDLE-77 is here" in p.stdout, p.stdout
    assert elapsed < 120  # (bounded by the subprocess timeout: measured in docs, not asserted)


def test_a_grep_that_times_out_is_one_tool_error_and_a_clean_stderr(tmp_path):
    """The tool's own timeout (here 1 ms, a plugin setting a short one would do the same) ends the walk:
    the model gets "timed out", the user's stderr stays empty."""
    ws = tmp_path / "ws"
    _hostile(ws)
    for i in range(300):
        (ws / f"f{i}.txt").write_text("x\n" * 100)
    script = f"""
import asyncio, json, sys
sys.path.insert(0, {os.getcwd()!r})
from dsh_tui.llm import scripted as s
from dsh_tui.tools import builtin_tools
from tests.runtime.helpers import make_agent, of_type, run_followup
tools = [t for t in builtin_tools() if t.name == "grep"]
tools[0].timeout_ms = 1
async def main():
    agent = make_agent([s.call("c1", "grep", {{"pattern": "NEEDLE-77"}}), s.text("ok")], tools,
                       tool_grace_s=0.5, cwd={str(ws)!r})
    await run_followup(agent, "go")
    await asyncio.sleep(1.0)
    import gc; gc.collect()
    print(json.dumps(of_type(agent, "tool/result")[0]["data"]["message"]["content"][0]))
asyncio.run(main())
"""
    p = subprocess.run([sys.executable, "-c", script], cwd=ws, capture_output=True, text=True, timeout=120,
                       preexec_fn=_bounded_memory)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "timed out after 1ms" in p.stdout, p.stdout


async def test_a_big_file_not_read_in_its_time_is_skipped_and_the_search_goes_on(tmp_path, monkeypatch):
    from dsh_tui.tools.search import grep

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_bytes(b"x\n" * (5 << 20) + b"NEEDLE-77 at the end\n")  # 10 MiB: read by chunks
    (ws / "small.txt").write_text("NEEDLE-77 small\n")
    bench = Bench(ws)
    out = await bench.run("grep", {"pattern": "NEEDLE-77"})
    assert "big.txt" in out.text and "small.txt" in out.text, out.text
    monkeypatch.setattr(grep, "FILE_TIME_S", 0.0)
    out = await bench.run("grep", {"pattern": "NEEDLE-77"})
    assert not out.is_error and "big.txt" not in out.text and "NEEDLE-77 small" in out.text, out.text
