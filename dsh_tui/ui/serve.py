"""``dsh-tui serve``: the app in a browser, over textual-serve, private by default.

The server is textual-serve's (aiohttp; the page is xterm.js speaking Textual's web driver protocol over
a websocket) with what an agent that runs shell commands needs around it:

- it listens on loopback unless told otherwise (``serve_cmd`` warns about any other address);
- no cookie (cookies are not kept per port: every other server on 127.0.0.1 would get it). The URL
  printed carries a one-time ticket: the page it opens is served once, with a one-time websocket ticket
  of its own in its websocket URL (``/ws/<ticket>``), and a fresh URL is printed for the next tab. The
  user's own token (``--token-file``, ``$DSH_TUI_SERVE_TOKEN``) opens a page as often as it is used
  (``/?token=``). Every request must name this server in ``Host`` (its address and port: no DNS
  rebinding), and a websocket must come from this server's own page (``Origin``, required). Anything
  else gets 403 and starts nothing. The page's scripts and styles are textual-serve's public files;
- each websocket gets its own app process (``sys.executable -P -m dsh_tui ...``: the cwd, perhaps a cloned
  repository, is not on its ``sys.path``; no shell, its own process
  group, ``DSH_TUI_SERVED=1`` so the app offers the keys browsers keep for themselves). When the tab
  closes the process is asked to quit (Textual's ``quit`` packet: the app flushes and closes every session
  as Ctrl+Q does), then SIGTERM, then SIGKILL if it will not go; whatever it left running is ended too:
  its process group, and every process it had started (taken from ``/proc`` before the quit, so the bash
  tool's and background jobs' own sessions too). Stopping the server (Ctrl+C, SIGTERM) does the same for
  every open tab first. A server that dies outright takes its tabs with it: the kernel sends each app
  SIGTERM (``tools.procs.bind_to_parent``), and its pipes closing is a hang-up too
  (``dsh_tui.ui.served_driver``); either quits it as Ctrl+Q does.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
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

from dsh_tui.tools.procs import descendants, killpg
from dsh_tui.tools.procs import kill_tree as _kill_left
from dsh_tui.ui.served import SERVED_ENV, SERVER_PID_ENV

#: The textual-serve release the overrides below were written and tested against (pinned exactly in
#: ``pyproject.toml``); ``check_serve_version`` refuses another one with one line.
TESTED_TEXTUAL_SERVE = "1.1.3"
#: Every private textual-serve name this module touches or overrides: ``(class path, attribute)``;
#: ``tests/cli/test_serve.py`` checks each one exists on the installed textual-serve.
SERVE_PRIVATE_NAMES: tuple[tuple[str, str], ...] = (
    ("textual_serve.app_service.AppService", "_open_app_process"),  # overridden: no shell, own group
    ("textual_serve.app_service.AppService", "_build_environment"),
    ("textual_serve.app_service.AppService", "_process"),
    ("textual_serve.app_service.AppService", "_stdin"),
    ("textual_serve.app_service.AppService", "_task"),
    ("textual_serve.server.Server", "_make_app"),  # overridden: the Host/Origin/ticket guard
    ("textual_serve.server.Server", "_process_messages"),  # overridden: the quit packet, then the end
)


def check_serve_version(found: str | None = None) -> None:
    """Fail with one line (naming both versions) on a textual-serve other than ``TESTED_TEXTUAL_SERVE``."""
    if found is None:
        from importlib.metadata import version

        found = version("textual-serve")
    if found != TESTED_TEXTUAL_SERVE:
        from dsh_tui.session.errors import DshError

        raise DshError(f"serve needs textual-serve {TESTED_TEXTUAL_SERVE} (found {found}): reinstall it with "
                       f"pip install 'textual-serve=={TESTED_TEXTUAL_SERVE}'")


TEMPLATES = Path(__file__).parent / "serve_templates"
SERVED_DRIVER = "dsh_tui.ui.served_driver:ServedDriver"  # each app's Textual driver (TEXTUAL_DRIVER)
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

    def app_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        """The app process's environment: textual-serve's, with ``DSH_TUI_SERVED``, this server's pid (the app
        ends with it: ``tools.procs.bind_to_parent``) and the driver that takes the server's pipes closing as
        a hang-up (``dsh_tui.ui.served_driver``)."""
        env = self._build_environment(width=width, height=height)
        env[SERVED_ENV] = "1"
        env[SERVER_PID_ENV] = str(os.getpid())
        env["TEXTUAL_DRIVER"] = SERVED_DRIVER
        return env

    async def _open_app_process(self, width: int = 80, height: int = 24):  # type: ignore[override]
        env = self.app_environment(width, height)
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
        self.token = options.token  # the user's own (reusable) token, if any
        self.page_tickets: set[str] = set()
        self.ws_tickets: set[str] = set()
        self.on_ticket_used: Callable[[], None] | None = None
        self.apps: set[ServedApp] = set()
        self.bound_port: int | None = None
        self._stop = asyncio.Event()

    # -- tickets --------------------------------------------------------------------------------
    def allowed_hosts(self) -> set[str] | None:
        """The ``Host`` headers this server answers: its own address and port (a page loaded through
        another name, as DNS rebinding would, gets nothing). None on a wildcard address (``--host
        0.0.0.0``: reached by any of the machine's addresses; the tickets still guard it)."""
        if self.options.host in ("0.0.0.0", "::", ""):
            return None
        port = self.bound_port or self.options.port
        names = {self.options.host.strip("[]").lower()}
        if is_loopback(self.options.host):
            names |= {"127.0.0.1", "localhost", "::1"}
        return {f"{url_host(name)}:{port}" for name in names}

    def new_ticket(self) -> str:
        """A one-time ticket for the page (what the URL printed carries)."""
        ticket = secrets.token_urlsafe(24)
        self.page_tickets.add(ticket)
        return ticket

    def _take(self, tickets: set[str], supplied: str | None) -> bool:
        """``supplied`` is one of ``tickets``: it is used up."""
        if not supplied:
            return False
        for ticket in list(tickets):
            if hmac.compare_digest(ticket.encode(), supplied.encode()):
                tickets.discard(ticket)
                return True
        return False

    def _page_allowed(self, request: web.Request) -> bool:
        """The page: with the user's own token (``--token-file``, ``$DSH_TUI_SERVE_TOKEN``) or a ticket
        printed at start-up, used up now (the URL printed no longer works: a fresh one is printed)."""
        token = request.query.get("token")
        if token is not None:
            return bool(self.token) and hmac.compare_digest(token.encode(), self.token.encode())
        if self._take(self.page_tickets, request.query.get("ticket")):
            if self.on_ticket_used is not None:
                self.on_ticket_used()
            return True
        return False

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        allowed = self.allowed_hosts()
        if allowed is not None and _with_port(request.host) not in allowed:
            log.info("refused %s %s from %s: Host %r is not this server", request.method, request.path,
                     request.remote, request.host)
            return web.Response(status=403, text="403 Forbidden: not this server's address\n")
        if request.path == "/" and not self._page_allowed(request):
            log.info("refused %s %s from %s: no valid ticket", request.method, request.path, request.remote)
            return web.Response(status=403, text="403 Forbidden: open a fresh URL from dsh-tui serve (each URL "
                                                 "it prints opens one tab)\n")
        if request.path.startswith("/ws"):
            origin = request.headers.get("Origin")
            if origin is None or _with_port(_origin_netloc(origin), origin) != _with_port(request.host):
                log.info("refused a websocket from origin %s", origin)
                return web.Response(status=403, text="403 Forbidden: websocket from another origin\n")
            if not self._take(self.ws_tickets, request.match_info.get("ticket")):
                log.info("refused a websocket from %s: no valid ticket", request.remote)
                return web.Response(status=403, text="403 Forbidden: no valid websocket ticket\n")
        response = await handler(request)
        if isinstance(response, web.Response):
            response.headers.setdefault("Referrer-Policy", "no-referrer")  # a ticket never leaves in a Referer
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path), autoescape=True)
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws/{ticket}", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        return app

    # -- the page -------------------------------------------------------------------------------
    async def handle_index(self, request: web.Request) -> web.Response:  # type: ignore[override]
        """The page, with URLs on the host the browser used and a one-time websocket ticket of its own."""
        base = f"{request.scheme}://{request.host}"
        ticket = secrets.token_urlsafe(24)
        self.ws_tickets.add(ticket)
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws/{ticket}",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    # -- one app per websocket ------------------------------------------------------------------
    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        width, height = clamp_size(request.query.get("width"), request.query.get("height"))
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
                    await app_service.set_terminal_size(*clamp_size(data["width"], data["height"]))
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

    async def run(self, on_ready: Callable[[int, str], None]) -> None:
        """Listen, call ``on_ready(port, ticket)``, serve until ``request_stop()``; then end every app
        process (each flushes its sessions) before closing the listener. Each time a ticket is used,
        ``on_ready`` is called again with a fresh one (the URL for the next tab)."""
        app = await self._make_app()
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.options.host, self.options.port)
            await site.start()
            self.bound_port = int(runner.addresses[0][1])
            port = self.bound_port
            self.on_ticket_used = lambda: on_ready(port, self.new_ticket())
            on_ready(port, self.new_ticket())
            await self._stop.wait()
            await asyncio.gather(*(service.stop() for service in list(self.apps)), return_exceptions=True)
        finally:
            await runner.cleanup()


def _origin_netloc(origin: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(origin)
    except ValueError:
        return ""
    return parts.netloc.lower() if parts.scheme in ("http", "https") else ""


def _with_port(netloc: str, origin: str = "http:") -> str:
    """``host:port`` in lower case, the scheme's default port added where a browser leaves it out."""
    netloc = netloc.lower()
    if netloc and ":" not in netloc.rsplit("]", 1)[-1]:
        netloc += ":443" if origin.startswith("https:") else ":80"
    return netloc


MAX_WIDTH, MAX_HEIGHT = 1000, 500


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A terminal size a browser asked for, within 1..1000 columns and 1..500 rows (80x24 if not numbers)."""
    def one(value: object, default: int, top: int) -> int:
        try:
            number = int(str(value))
        except (TypeError, ValueError):
            number = default
        return max(1, min(number, top))

    return one(width, 80, MAX_WIDTH), one(height, 24, MAX_HEIGHT)


def serve(options: ServeOptions, on_ready: Callable[[int, str], None]) -> None:
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
