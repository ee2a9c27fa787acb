"""``dsh-tui serve``: the app in a browser, over textual-serve, private by default.

The server is textual-serve's (aiohttp; the page is xterm.js speaking Textual's web driver protocol over
a websocket) with what an agent that runs shell commands needs around it:

- it listens on loopback unless told otherwise (``serve_cmd`` warns about any other address);
- every request must carry the token, as ``?token=`` (the URL printed at start-up) or the cookie the page
  is given with it (``HttpOnly; SameSite=Strict``: the page's own scripts, styles and websocket). A
  request without it gets 403 and starts nothing; a websocket from another origin gets 403 too;
- each websocket gets its own app process (``sys.executable -m dsh_tui ...``, no shell, its own process
  group, ``DSH_TUI_SERVED=1`` so the app offers the keys browsers keep for themselves). When the tab
  closes the process is asked to quit (Textual's ``quit`` packet: the app flushes and closes every session
  as Ctrl+Q does), then SIGTERM, then SIGKILL if it will not go; whatever it left running is ended too:
  its process group, and every process it had started (taken from ``/proc`` before the quit, so the bash
  tool's and background jobs' own sessions too). Stopping the server (Ctrl+C, SIGTERM) does the same for
  every open tab first.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from dsh_tui.tools.bash import killpg
from dsh_tui.ui.served import SERVED_ENV

TEMPLATES = Path(__file__).parent / "serve_templates"
QUIT_GRACE_S = 10.0  # after the quit packet: the app flushes and closes its sessions
TERM_GRACE_S = 5.0  # after SIGTERM, before SIGKILL

log = logging.getLogger("dsh_tui.serve")


def url_host(host: str) -> str:
    """``host`` as it goes in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ServedApp(AppService):
    """One browser tab's app process (textual-serve's ``AppService``, started without a shell, in its own
    process group, and always ended: see the module docstring)."""

    def __init__(self, argv: Sequence[str], *, on_exit: Callable[[ServedApp], None] | None = None,
                 **kwargs: Any) -> None:
        import shlex

        super().__init__(shlex.join(argv), **kwargs)
        self.argv = list(argv)
        self.on_exit = on_exit
        self.pid: int | None = None
        self._stopping: asyncio.Task[None] | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24):  # type: ignore[override]
        env = self._build_environment(width=width, height=height)
        env[SERVED_ENV] = "1"
        process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True,
        )
        self._process = process
        self._stdin = process.stdin
        self.pid = process.pid
        return process

    async def stop(self) -> None:  # type: ignore[override]
        """Ask the app to quit, then end it (and its process group) if it does not: idempotent, and safe
        to call from several places at once (the websocket handler, the server's shutdown)."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        # what the app started, in its group or in sessions of their own (the bash tool, background jobs,
        # MCP servers): once the app is gone they are init's children and can no longer be told apart
        tree: dict[int, str] = {}
        if process.returncode is None:
            tree = await asyncio.to_thread(descendants, process.pid)
            await self.send_meta({"type": "quit"})
        if not await _exited(process, QUIT_GRACE_S):
            log.warning("app process %s did not quit in %.0f s: terminating it", process.pid, QUIT_GRACE_S)
            tree.update(await asyncio.to_thread(descendants, process.pid))
            killpg(process.pid, signal.SIGTERM)
            if not await _exited(process, TERM_GRACE_S):
                killpg(process.pid, signal.SIGKILL)
                await _exited(process, None)
        killpg(process.pid, signal.SIGKILL)  # anything the app left behind in its process group
        left = await asyncio.to_thread(_kill_left, tree)
        if left:
            log.warning("app process %s left %d process(es) running: killed %s", process.pid, len(left),
                        " ".join(map(str, sorted(left))))
        if self._task is not None:  # the reader ends at the app's stdout EOF; a survivor could hold it open
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, TERM_GRACE_S)
            self._task = None
        if self.on_exit is not None:
            self.on_exit(self)


async def _exited(process: asyncio.subprocess.Process, timeout: float | None) -> bool:
    """The app process has exited (within ``timeout`` s). Not ``process.wait()``: on Python 3.11 that also
    waits for its pipes to close, which a survivor that inherited them never does."""
    loop = asyncio.get_running_loop()
    end = None if timeout is None else loop.time() + timeout
    while process.returncode is None:
        if end is not None and loop.time() >= end:
            return False
        await asyncio.sleep(0.05)
    return True


def _stat(pid: int | str) -> list[str] | None:
    """``/proc/PID/stat``'s fields after the command name (state, ppid, pgrp, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def descendants(pid: int) -> dict[int, str]:
    """Every process under ``pid``, each with its start time (``/proc``; empty where there is none)."""
    children: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return {}
    for name in entries:
        fields = _stat(name)
        if fields is not None and len(fields) > 19:
            children.setdefault(int(fields[1]), []).append(int(name))
            started[int(name)] = fields[19]
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found[child] = started[child]
                todo.append(child)
    return found


def _kill_left(tree: dict[int, str]) -> list[int]:
    """SIGKILL what is still running of ``tree`` (the same process: same start time, not a reused pid),
    with the process group each one leads; the pids killed."""
    killed = []
    for pid, start in tree.items():
        fields = _stat(pid)
        if fields is None or len(fields) <= 19 or fields[19] != start or fields[0] == "Z":
            continue
        if int(fields[2]) == pid:
            killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    return killed


@dataclass
class ServeOptions:
    argv: list[str]  # the app process's command line
    host: str = "127.0.0.1"
    port: int = 8765
    token: str = ""
    title: str = "dsh-tui"
    say: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))


class DshServer(Server):
    """textual-serve's server with the token, the origin check, ``ServedApp`` and a clean shutdown."""

    def __init__(self, options: ServeOptions) -> None:
        super().__init__(options.argv[0], host=options.host, port=options.port, title=options.title,
                         templates_path=TEMPLATES)
        self.options = options
        self.token = options.token
        self.apps: set[ServedApp] = set()
        self.bound_port: int | None = None
        self._stop = asyncio.Event()

    # -- the token ------------------------------------------------------------------------------
    @property
    def cookie(self) -> str:
        """Cookies are not kept per port: the name carries it, so two servers on one host do not mix."""
        return f"dsh-tui-token-{self.bound_port or self.options.port}"

    def _authorised(self, request: web.Request) -> tuple[bool, bool]:
        """(the request carries the token, it came in the query)."""
        expected = self.token.encode()
        supplied = request.query.get("token")
        if supplied is not None:
            return hmac.compare_digest(supplied.encode(), expected), True
        cookie = request.cookies.get(self.cookie)
        if cookie is not None:
            return hmac.compare_digest(cookie.encode(), expected), False
        return False, False

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        ok, in_query = self._authorised(request)
        if not ok:
            log.info("refused %s %s from %s: no valid token", request.method, request.path, request.remote)
            return web.Response(status=403, text="403 Forbidden: open the URL dsh-tui serve printed "
                                                 "(it carries the token)\n")
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin is not None and not _same_origin(origin, request.host):
            log.info("refused a websocket from origin %s", origin)
            return web.Response(status=403, text="403 Forbidden: cross-origin websocket\n")
        response = await handler(request)
        if in_query and request.path == "/" and isinstance(response, web.Response):
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
        if isinstance(response, web.Response):
            response.headers.setdefault("Referrer-Policy", "no-referrer")  # the token never leaves in a Referer
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path), autoescape=True)
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        return app

    # -- the page -------------------------------------------------------------------------------
    async def handle_index(self, request: web.Request) -> web.Response:  # type: ignore[override]
        """The page, with URLs on the host the browser used (``--host 0.0.0.0`` is not a place to go)."""
        base = f"{request.scheme}://{request.host}"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    # -- one app per websocket ------------------------------------------------------------------
    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        service: ServedApp | None = None
        try:
            await websocket.prepare(request)
            if self._stop.is_set():
                await websocket.close()
                return websocket
            service = ServedApp(
                self.options.argv, on_exit=self._app_ended, write_bytes=websocket.send_bytes,
                write_str=websocket.send_str, close=websocket.close, download_manager=self.download_manager,
            )
            self.apps.add(service)
            await service.start(width, height)
            self.options.say(f"dsh-tui serve: app process {service.pid} started for {request.remote}")
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:
            pass
        except Exception as error:  # noqa: BLE001 - one line in the server's log, never a traceback
            log.warning("websocket ended: %s: %s", type(error).__name__, error)
        finally:
            if service is not None:
                await service.stop()
            with contextlib.suppress(Exception):
                await websocket.close()
        return websocket

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """textual-serve's loop, with a malformed message ignored rather than ending the connection."""
        import json

        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
                if kind == "stdin" and isinstance(data, str):
                    await app_service.send_bytes(data.encode("utf-8"))
                elif kind == "resize" and isinstance(data, dict):
                    await app_service.set_terminal_size(int(data["width"]), int(data["height"]))
                elif kind == "ping":
                    await websocket.send_json(["pong", data])
                elif kind == "blur":
                    await app_service.blur()
                elif kind == "focus":
                    await app_service.focus()
            except (ValueError, TypeError, KeyError, IndexError):
                continue

    def _app_ended(self, service: ServedApp) -> None:
        self.apps.discard(service)
        code = service._process.returncode if service._process is not None else None
        self.options.say(f"dsh-tui serve: app process {service.pid} ended (exit {code})")

    # -- running --------------------------------------------------------------------------------
    def request_stop(self) -> None:
        self._stop.set()

    async def run(self, on_ready: Callable[[int], None]) -> None:
        """Listen, call ``on_ready(port)``, serve until ``request_stop()``; then end every app process
        (each flushes its sessions) before closing the listener."""
        app = await self._make_app()
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.options.host, self.options.port)
            await site.start()
            self.bound_port = int(runner.addresses[0][1])
            on_ready(self.bound_port)
            await self._stop.wait()
            await asyncio.gather(*(service.stop() for service in list(self.apps)), return_exceptions=True)
        finally:
            await runner.cleanup()


def _same_origin(origin: str, host: str) -> bool:
    from urllib.parse import urlsplit

    try:
        return urlsplit(origin).netloc.lower() == host.lower()
    except ValueError:
        return False


def serve(options: ServeOptions, on_ready: Callable[[int], None]) -> None:
    """Run the server until SIGINT / SIGTERM (the command line's entry)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("dsh-tui serve: %(message)s"))
    for name in ("dsh_tui.serve", "textual-serve", "aiohttp"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO if name == "dsh_tui.serve" else logging.WARNING)
        logger.propagate = False

    async def main() -> None:
        server = DshServer(options)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, server.request_stop)
        await server.run(on_ready)

    asyncio.run(main())


class _OneLine(logging.Formatter):
    """A log record as one line: an exception's traceback is left out (its message is in the record)."""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return " ".join(super().format(record).split())
