"""``dsh-tui mcp add|remove|get|list``: manage the MCP servers of ``settings.toml`` from the command line.

    dsh-tui mcp add files -- npx -y @modelcontextprotocol/server-filesystem .
    dsh-tui mcp add remote https://example.com/mcp --header "Authorization: Bearer $TOKEN"
    dsh-tui mcp list            # each server's state and tool names (connects to each, bounded)
    dsh-tui mcp get files       # its settings (env and header values hidden)
    dsh-tui mcp remove files
    dsh-tui mcp login remote    # OAuth: authorize in a browser; tokens kept privately per server
    dsh-tui mcp logout remote   # forget them

``add`` and ``remove`` edit ``[mcp.servers.<name>]`` in place (comments and layout kept); a file that then
holds an ``env`` or ``headers`` value (often a secret) is made private (0600).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import stat
import sys
from typing import Any

HELP = "manage MCP servers in settings.toml: add, remove, get, list (with each server's tools), login, logout"
LIST_TIMEOUT_S = 15.0
LOGIN_TIMEOUT_S = 300.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="add|remove|get|list|login|logout")
    sub.required = True
    add = sub.add_parser("add", help="add a server: NAME -- COMMAND [ARGS...], or NAME URL")
    add.add_argument("name", help="server name (1-32 of A-Z a-z 0-9 _ -)")
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                     help="environment variable for a stdio server (repeatable)")
    add.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                     help="HTTP header for a URL server (repeatable)")
    add.add_argument("--disabled", action="store_true", help="add it switched off (enabled = false)")
    add.add_argument("target", nargs=argparse.REMAINDER,
                     help="-- COMMAND [ARGS...] for a stdio server, or an http(s):// URL")
    rm = sub.add_parser("remove", help="remove a server")
    rm.add_argument("name")
    get = sub.add_parser("get", help="show a server's settings (secret values hidden)")
    get.add_argument("name")
    get.add_argument("--json", action="store_true")
    ls = sub.add_parser("list", help="every server, its state and tool names")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--no-connect", action="store_true", help="list the settings only, connect to nothing")
    ls.add_argument("--timeout", type=float, default=LIST_TIMEOUT_S, help="seconds to wait for each server")
    login = sub.add_parser("login", help="authorize an HTTP server that asks for OAuth (opens the URL to visit)")
    login.add_argument("name")
    login.add_argument("--no-browser", action="store_true", help="only print the authorization URL")
    login.add_argument("--timeout", type=float, default=LOGIN_TIMEOUT_S,
                       help="seconds to wait for the browser to come back (default %(default)g)")
    logout = sub.add_parser("logout", help="forget a server's OAuth tokens")
    logout.add_argument("name")


def _load() -> tuple[Any, dict[str, Any]]:
    from dsh_tui.config import settings_path
    from dsh_tui.config.files import read_settings_file

    path = settings_path()
    return path, read_settings_file(path)


def _servers(data: dict[str, Any]) -> dict[str, Any]:
    from dsh_tui.extensions.mcp.config import McpConfigError

    mcp = data.get("mcp", {})
    servers = mcp.get("servers", {}) if isinstance(mcp, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError("settings: mcp.servers must be a table of [mcp.servers.<name>] tables")
    return servers


def _save(path: Any, data: dict[str, Any]) -> None:
    from dsh_tui.config.files import write_toml

    private = any(isinstance(s, dict) and (s.get("env") or s.get("headers")) for s in _servers(data).values())
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o644
    if private:
        mode = 0o600
    path.parent.mkdir(parents=True, exist_ok=True)
    write_toml(path, data, mode=mode)


def _pairs(values: list[str], sep: str, what: str) -> dict[str, str]:
    from dsh_tui.session.errors import UsageError

    out: dict[str, str] = {}
    for value in values:
        key, found, val = value.partition(sep)
        if not found or not key.strip():
            raise UsageError(f"{what} {value!r}: expected KEY{sep}VALUE")
        out[key.strip()] = val.strip() if sep == ":" else val
    return out


def _add(args: argparse.Namespace) -> int:
    from dsh_tui.extensions.mcp.config import parse_servers
    from dsh_tui.extensions.mcp.naming import SERVER_NAME
    from dsh_tui.session.errors import UsageError

    if not SERVER_NAME.match(args.name):
        raise UsageError(f"mcp add: {args.name!r}: a server name is 1-32 characters of A-Z a-z 0-9 _ -")
    # argparse hands everything after NAME to the remainder: our options may come anywhere before "--"
    # (after a URL too); everything after "--" is the command, verbatim
    raw, target = list(args.target), []
    while raw:
        token = raw.pop(0)
        if token == "--":
            target += raw
            break
        flag, eq, inline = token.partition("=")
        if flag == "--disabled" and not eq:
            args.disabled = True
        elif flag in ("--env", "--header"):
            if not eq:
                if not raw:
                    raise UsageError(f"mcp add: {flag} needs a value")
                inline = raw.pop(0)
            (args.env if flag == "--env" else args.header).append(inline)
        else:
            target.append(token)
    if not target:
        raise UsageError("mcp add: give -- COMMAND [ARGS...] or a URL, e.g. dsh-tui mcp add files -- npx -y "
                         "@modelcontextprotocol/server-filesystem .")
    table: dict[str, Any] = {}
    if len(target) == 1 and target[0].startswith(("http://", "https://")):
        if args.env:
            raise UsageError("mcp add: --env is for a stdio server (a command), not a URL")
        table["url"] = target[0]
        if args.header:
            table["headers"] = _pairs(args.header, ":", "--header")
    else:
        if args.header:
            raise UsageError("mcp add: --header is for a URL server, not a command")
        table["command"] = target[0]
        if target[1:]:
            table["args"] = target[1:]
        if args.env:
            table["env"] = _pairs(args.env, "=", "--env")
    if args.disabled:
        table["enabled"] = False
    path, data = _load()
    servers = _servers(data)
    if args.name in servers:
        raise UsageError(f"mcp add: a server named {args.name!r} is already in {path} (dsh-tui mcp remove "
                         f"{args.name} first)")
    parse_servers({"servers": {args.name: table}})  # the same checks as at start-up, naming the field
    data.setdefault("mcp", {}).setdefault("servers", {})[args.name] = table
    _save(path, data)
    print(f"added MCP server {args.name} ({table.get('url') or ' '.join([table['command'], *table.get('args', [])])})"
          f" to {path}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from dsh_tui.session.errors import UsageError

    path, data = _load()
    servers = _servers(data)
    if args.name not in servers:
        raise UsageError(f"mcp remove: no MCP server named {args.name!r} in {path}" + _known(servers))
    del servers[args.name]
    from dsh_tui.extensions.mcp.oauth import forget

    forget(args.name)  # its OAuth tokens too (dsh-tui mcp login)
    if not servers:  # no empty [mcp.servers] left behind (and tomlkit keeps the file's comments)
        del data["mcp"]["servers"]
        if not data["mcp"]:
            del data["mcp"]
    _save(path, data)
    print(f"removed MCP server {args.name} from {path}")
    return 0


def _known(servers: dict[str, Any]) -> str:
    return f" (configured: {', '.join(sorted(servers))})" if servers else " (none configured)"


def _hidden(table: dict[str, Any]) -> dict[str, Any]:
    out = dict(table)
    for key in ("env", "headers"):
        if isinstance(out.get(key), dict):
            out[key] = {k: "***" for k in out[key]}
    return out


def _get(args: argparse.Namespace) -> int:
    from dsh_tui.session.errors import UsageError

    path, data = _load()
    servers = _servers(data)
    if args.name not in servers:
        raise UsageError(f"mcp get: no MCP server named {args.name!r} in {path}" + _known(servers))
    table = _hidden(servers[args.name])
    if args.json:
        print(json.dumps({"name": args.name, **table}, indent=2))
    else:
        print(f"[mcp.servers.{args.name}]")
        for key, value in table.items():
            print(f"{key} = {json.dumps(value)}")
    return 0


async def _connect(configs: list[Any], timeout: float) -> list[Any]:
    from dsh_tui.extensions.mcp import McpManager

    manager = McpManager(configs, lambda _definition: (lambda: None))
    try:
        await manager.first_attempts(timeout)
        return manager.status()
    finally:
        await manager.close()


def _list(args: argparse.Namespace) -> int:
    from dsh_tui.extensions.mcp.config import parse_servers

    path, data = _load()
    configs = parse_servers(data.get("mcp"))
    if not configs:
        print(f"no MCP servers in {path} (add one: dsh-tui mcp add NAME -- COMMAND...)", file=sys.stderr)
        if args.json:
            print("[]")
        return 0
    if args.no_connect:
        rows = [{"name": c.name, "target": c.target, "state": "not connected", "tools": [], "error": ""}
                for c in configs]
    else:
        if not args.json:
            print(f"connecting to {len(configs)} server{'s' if len(configs) != 1 else ''}…", file=sys.stderr,
                  flush=True)
        rows = [{"name": s.name, "target": s.target, "state": s.state, "tools": sorted(s.tools), "error": s.error}
                for s in asyncio.run(_connect(configs, max(0.1, args.timeout)))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        state = str(row["state"]) + (f": {row['error']}" if row["error"] else "")
        if row["state"] == "needs-login":
            from dsh_tui.extensions.mcp.oauth import login_hint

            state = login_hint(str(row["name"]))
        print(f"{row['name']}  {row['target']}  {state}")
        for tool in row["tools"]:
            print(f"    {tool}")
    return 0


def _http_server(args: argparse.Namespace, what: str) -> Any:
    """The configured server ``args.name`` (a URL server), or a usage error."""
    from dsh_tui.extensions.mcp.config import parse_servers
    from dsh_tui.session.errors import UsageError

    path, data = _load()
    for config in parse_servers(data.get("mcp")):
        if config.name == args.name:
            if config.transport != "streamable-http":
                raise UsageError(f"mcp {what}: {args.name} is a stdio server; OAuth is for HTTP (url) servers")
            return config
    raise UsageError(f"mcp {what}: no MCP server named {args.name!r} in {path}" + _known(_servers(data)))


def _login(args: argparse.Namespace) -> int:
    from dsh_tui.extensions.mcp import oauth

    config = _http_server(args, "login")
    if oauth.has_authorization_header(config.headers):
        print(f"dsh-tui: mcp login: {args.name} has an Authorization header in its settings; OAuth is not used "
              "for it", file=sys.stderr)
        return 1

    def show(url: str) -> None:
        print(f"To authorize dsh-tui for MCP server {args.name}, open this URL in a browser:", file=sys.stderr)
        print(url, flush=True)  # stdout, alone on its line: easy to copy (or to follow from a script)
        print(f"waiting for the browser (up to {args.timeout:g} s; Ctrl-C to stop)…", file=sys.stderr, flush=True)

    async def go() -> tuple[bool, list[str]]:
        return await oauth.login(config, show_url=show, open_browser=not args.no_browser,
                                 timeout=max(1.0, args.timeout))

    from dsh_tui.extensions.mcp import route_logging

    route_logging()  # the mcp library's logging (its tracebacks too) to the MCP log, never the terminal
    print(f"connecting to {config.url}…", file=sys.stderr, flush=True)
    try:
        asked, tools = asyncio.run(go())
    except KeyboardInterrupt:
        oauth.forget(args.name)
        print(f"dsh-tui: mcp login: {args.name}: stopped", file=sys.stderr)
        return 130
    except BaseException as err:  # noqa: BLE001 - one line, whatever the flow raised
        if isinstance(err, (SystemExit, KeyboardInterrupt)):
            raise
        oauth.forget(args.name)  # nothing half-done is kept
        print(f"dsh-tui: mcp login: {args.name}: {_login_failure(err)}", file=sys.stderr)
        return 1
    count = f"{len(tools)} tool{'' if len(tools) == 1 else 's'}"
    if not asked:
        oauth.forget(args.name)
        print(f"MCP server {args.name} did not ask for authorization (connected without it: {count})")
        return 0
    print(f"logged in to MCP server {args.name} ({count}); tokens kept in {oauth.token_path(args.name)}")
    return 0


def _login_failure(err: BaseException) -> str:
    """One line for a failed login: the innermost meaningful error of the flow."""
    from dsh_tui.extensions.mcp.client import _describe
    from dsh_tui.extensions.mcp.oauth import LoginError

    todo: list[BaseException] = [err]
    while todo:
        e = todo.pop()
        if isinstance(e, LoginError):
            return str(e)
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
    return _describe(err, None)


def _logout(args: argparse.Namespace) -> int:
    from dsh_tui.extensions.mcp import oauth
    from dsh_tui.extensions.mcp.naming import SERVER_NAME
    from dsh_tui.session.errors import UsageError

    if not SERVER_NAME.match(args.name):
        raise UsageError(f"mcp logout: {args.name!r}: a server name is 1-32 characters of A-Z a-z 0-9 _ -")
    if oauth.token_path(args.name).exists() and oauth.forget(args.name):  # configured or not (removed since)
        print(f"logged out of MCP server {args.name} (its tokens were deleted)")
        return 0
    config = _http_server(args, "logout")
    if oauth.forget(config.name):
        print(f"logged out of MCP server {config.name} (its tokens were deleted)")
    else:
        print(f"MCP server {config.name} had no stored tokens")
    return 0


def run(args: argparse.Namespace) -> int:
    return {"add": _add, "remove": _remove, "get": _get, "list": _list, "login": _login,
            "logout": _logout}[args.action](args)
