"""OAuth for streamable HTTP MCP servers, on the ``mcp`` library's ``OAuthClientProvider`` (as Claude Code does).

A server that answers ``401`` with OAuth metadata (RFC 9728 protected-resource metadata, RFC 8414
authorization-server metadata) is logged in to once by hand: ``dsh-tui mcp login NAME`` (``login()``)
registers a client (RFC 7591 dynamic registration), prints the authorization URL (and tries to open a
browser), receives the code on a one-shot listener on ``127.0.0.1`` and exchanges it (PKCE, S256). The
tokens and the registered client are kept per server in ``<data>/mcp-oauth/<name>.json`` (``token_path``;
the folder 0700, the file 0600), bound to the server's URL: a file written for another URL is ignored. An
expired access token is refreshed (its expiry is kept in the file); ``dsh-tui mcp logout NAME`` forgets it.

Runs that are not a login never ask anyone: a server that needs authorization (no tokens, or a refresh
that failed) ends its connection attempt at once with ``NeedsLogin`` — no registration, no browser — and
is shown as "needs login: run dsh-tui mcp login NAME". Tokens go only into the ``Authorization`` header
of requests to the server and its authorization server (the SDK's flow); never into a log line, a
session event or a child process's environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dsh_tui.session.errors import DshError

CLIENT_NAME = "dsh-tui"
CALLBACK_PATH = "/callback"


class NeedsLogin(DshError):
    """The server asks for authorization and this run may not ask the user for it."""

    def __init__(self, server: str) -> None:
        super().__init__(login_hint(server))
        self.server = server


def login_hint(server: str) -> str:
    return f"needs login: run dsh-tui mcp login {server}"


def token_dir() -> Path:
    from dsh_tui.paths import data_dir

    return data_dir() / "mcp-oauth"


def token_path(server: str) -> Path:
    """Where ``server``'s tokens and registered client are kept (a server name: never a path of its own)."""
    from dsh_tui.extensions.mcp.naming import SERVER_NAME

    if not SERVER_NAME.match(server):
        raise ValueError(f"not an MCP server name: {server!r}")
    return token_dir() / f"{server}.json"


def has_authorization_header(headers: dict[str, str]) -> bool:
    """The settings already authorize the server (``headers = { Authorization = ... }``): no OAuth."""
    return any(k.lower() == "authorization" for k in headers)


def _read(server: str, url: str) -> dict[str, Any]:
    try:
        data = json.loads(token_path(server).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("server_url") != url:
        return {}  # written for another URL (the server was re-added elsewhere): never sent there
    return data


def _write(server: str, data: dict[str, Any]) -> None:
    """Atomically, private: the folder 0700, the file 0600 from its first byte."""
    folder = token_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{server}.", suffix=".tmp", dir=folder)  # mkstemp: 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, token_path(server))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def forget(server: str) -> bool:
    """Delete ``server``'s tokens and client registration; False if there were none."""
    try:
        token_path(server).unlink()
    except FileNotFoundError:
        return False
    return True


def stored(server: str, url: str) -> dict[str, Any]:
    """What is kept for ``server`` at ``url`` (``{}`` if nothing): ``tokens``, ``expires_at``, ``client_info``."""
    return _read(server, url)


class FileTokenStorage:
    """The SDK's ``TokenStorage`` on ``token_path(server)``, bound to ``url``."""

    def __init__(self, server: str, url: str) -> None:
        self.server = server
        self.url = url

    def _data(self) -> dict[str, Any]:
        return _read(self.server, self.url) or {"server_url": self.url}

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._data().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None
        except ValueError:
            return None

    def expires_at(self) -> float | None:
        value = self._data().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    async def set_tokens(self, tokens: Any) -> None:
        data = self._data()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        _write(self.server, data)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._data().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        data = self._data()
        data["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        _write(self.server, data)


def provider(server: str, url: str, *, redirect_uri: str | None = None,
             redirect_handler: Any = None, callback_handler: Any = None) -> Any:
    """An ``httpx2.Auth`` for ``server``: stored tokens, refreshed when expired. Without handlers (every
    run but a login) a server asking for authorization raises ``NeedsLogin`` before registering a client
    or building an authorization URL."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    interactive = redirect_handler is not None
    storage = FileTokenStorage(server, url)

    class _Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            # the SDK keeps no expiry across processes: ours is in the file, so an expired token is
            # refreshed before it is sent rather than sent and refused
            self.context.token_expiry_time = storage.expires_at()

        async def _auth_flow(self, request: Any) -> Any:
            flow = super()._auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    if not interactive and outgoing is not request and outgoing.method == "POST" \
                            and not _is_refresh(outgoing):
                        raise NeedsLogin(server)  # a client registration: only a login may start one
                    response = yield outgoing
                    if not interactive and outgoing is request and response.status_code == 401 \
                            and self.context.can_refresh_token():
                        break  # a token refused before its time (revoked, a clock apart): refresh, not login
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
            async with self.context.lock:
                refreshed = await self._handle_refresh_response((yield await self._refresh_token()))
            if refreshed:
                self._add_auth_header(request)
                if (yield request).status_code != 401:
                    return
            raise NeedsLogin(server)

    async def refuse(_url: str) -> None:
        raise NeedsLogin(server)

    async def no_code() -> Any:
        raise NeedsLogin(server)

    from pydantic import AnyUrl

    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME, redirect_uris=[AnyUrl(redirect_uri or f"http://127.0.0.1{CALLBACK_PATH}")],
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="none")
    return _Provider(url, metadata, storage, redirect_handler=redirect_handler or refuse,
                     callback_handler=callback_handler or no_code)


def _is_refresh(request: Any) -> bool:
    try:
        body = request.content  # a built request's form body
    except Exception:  # noqa: BLE001 - a streaming body is not a refresh
        return False
    return b"grant_type=refresh_token" in (body or b"")


# ---- the login: a one-shot redirect listener on 127.0.0.1 -----------------------------------------------
PAGE = ("<!doctype html><meta charset=utf-8><title>dsh-tui</title>"
        "<p>{text}</p><p>You can close this tab and go back to the terminal.</p>")


class CallbackListener:
    """``http://127.0.0.1:<port>/callback``: answers the browser's redirect once, then stops listening."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def __aenter__(self) -> CallbackListener:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        status, text = "404 Not Found", "Not found."
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
            if target is not None and target.path == CALLBACK_PATH and self._result is not None \
                    and not self._result.done():
                query = {k: v[0] for k, v in parse_qs(target.query).items()}
                if "code" in query or "error" in query:
                    status = "200 OK"
                    text = ("Authorization received." if "code" in query
                            else f"Authorization refused: {query.get('error', '')}.")
                    self._result.set_result(query)
                    if self._server is not None:
                        self._server.close()  # one-shot
            body = PAGE.format(text=text).encode()
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def wait(self, timeout: float) -> dict[str, str]:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise LoginError(f"no authorization within {timeout:g} s (the browser never came back to "
                             f"{self.redirect_uri})") from None


class LoginError(DshError):
    """The login did not complete (one line)."""


async def login(config: Any, *, show_url: Callable[[str], None], open_browser: bool = True,
                timeout: float = 300.0) -> tuple[bool, list[str]]:
    """Authorize dsh-tui for the HTTP server ``config``: (whether the server asked for authorization, its
    tool names). Any stored tokens and client registration are replaced."""
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult

    from dsh_tui.extensions.mcp.naming import CLIENT_INFO

    url = config.url or ""
    asked = False
    async with CallbackListener() as listener:
        async def redirect(auth_url: str) -> None:
            nonlocal asked
            asked = True
            show_url(auth_url)
            if open_browser:
                await asyncio.to_thread(_open_browser, auth_url)

        async def callback() -> Any:
            query = await listener.wait(timeout)
            if "error" in query:
                detail = query.get("error_description") or query["error"]
                raise LoginError(f"the authorization server refused: {' '.join(detail.split())[:200]}")
            return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

        forget(config.name)  # a fresh registration for this listener's redirect URI
        auth = provider(config.name, url, redirect_uri=listener.redirect_uri, redirect_handler=redirect,
                        callback_handler=callback)
        async with create_mcp_http_client(headers=dict(config.headers), auth=auth) as client, \
                streamable_http_client(url, http_client=client) as streams, \
                ClientSession(streams[0], streams[1], client_info=types.Implementation(
                    name=CLIENT_INFO["name"], version=CLIENT_INFO["version"])) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
    return asked, tools


def _open_browser(url: str) -> None:
    """Try a graphical browser; never a console one (it would take the terminal) and never required."""
    import sys

    if not (sys.platform in ("darwin", "win32") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
            or os.environ.get("BROWSER")):
        return
    with contextlib.suppress(Exception):
        import webbrowser

        webbrowser.open(url)
