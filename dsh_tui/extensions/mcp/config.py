"""The MCP servers to connect: ``[mcp.servers.<name>]`` tables in settings.toml and ``--mcp NAME=COMMAND``.

dsh's per-server config (docs/extensions.md, "MCP") in snake case::

    [mcp.servers.files]                 # the name: 1-32 of [A-Za-z0-9_-]
    command = "npx"                     # stdio: the program (no shell), its args, env and cwd
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env = { LOG_LEVEL = "warn" }        # over the parent environment minus secret-looking names
    cwd = ""
    tool_call_timeout_ms = 60000
    startup_timeout_ms = 10000          # initialize + tools/list; past it the attempt has failed
    allowed_tools = ["read_file"]       # these tools (or "*": all) run without asking
    trust_annotations = false           # true: a tool annotated readOnlyHint runs without asking
    fail_on_startup_error = false
    reconnect = { enabled = true, initial_delay_ms = 500, max_delay_ms = 30000, max_attempts = 10 }

    [mcp.servers.remote]
    url = "http://127.0.0.1:3001/mcp"   # streamable HTTP
    headers = { Authorization = "Bearer ..." }

``transport`` (``stdio`` | ``streamable-http``) may be given; by default it follows from ``command`` or
``url``. ``enabled = false`` keeps a server configured but off. Errors name the field path
(``mcp.servers.files.args: ...``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dsh_tui.extensions.mcp.naming import SERVER_NAME
from dsh_tui.session.errors import DshError


class McpConfigError(DshError):
    """An invalid MCP server configuration (the message names the field)."""

    exit_code = 2


class Reconnect(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    enabled: bool = True
    initial_delay_ms: int = Field(default=500, gt=0, le=2_147_483_647)
    max_delay_ms: int = Field(default=30_000, gt=0, le=2_147_483_647)
    max_attempts: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _order(self) -> Reconnect:
        if self.initial_delay_ms > self.max_delay_ms:
            raise ValueError("initial_delay_ms must be less than or equal to max_delay_ms")
        return self


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = ""
    transport: Literal["stdio", "streamable-http"] | None = None
    enabled: bool = True
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str = ""
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    tool_call_timeout_ms: int = Field(default=60_000, gt=0)
    startup_timeout_ms: int = Field(default=10_000, gt=0)  # initialize + tools/list of one connection attempt
    allowed_tools: list[str] = Field(default_factory=list)  # raw tool names (or "*") that never ask
    trust_annotations: bool = False  # a tool annotated readOnlyHint: true runs without asking
    fail_on_startup_error: bool = False
    reconnect: Reconnect = Field(default_factory=Reconnect)
    source: str = "settings"  # "settings" | "cli" (not a settings key: set by the loader)

    @model_validator(mode="after")
    def _transport(self) -> ServerConfig:
        if self.transport is None:
            if self.command is not None and self.url is not None:
                raise ValueError("give either command (stdio) or url (streamable HTTP), not both")
            if self.command is None and self.url is None:
                raise ValueError("needs command (a stdio server) or url (a streamable HTTP server)")
            self.transport = "stdio" if self.command is not None else "streamable-http"
        if self.transport == "stdio" and not self.command:
            raise ValueError("command is required for the stdio transport")
        if self.transport == "streamable-http":
            if not self.url:
                raise ValueError("url is required for the streamable-http transport")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError(f"url must be an http:// or https:// URL, not {self.url!r}")
        return self

    @property
    def target(self) -> str:
        """What the server is, for a listing: its command line or URL."""
        if self.transport == "stdio":
            return shlex.join([self.command or "", *self.args])
        return self.url or ""


def _errors(err: ValidationError, where: str) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "__root__")
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}{'.' + loc if loc else ''}: {msg}")
    return "; ".join(parts)


def parse_servers(table: Any, cli: Sequence[str] = ()) -> list[ServerConfig]:
    """The configured servers: ``table`` is ``settings.get("mcp")`` (or None), ``cli`` the ``--mcp``
    values. Raises ``McpConfigError`` naming the field. A ``--mcp`` name that the settings also use
    is kept (it fails when connected, as dsh fails a duplicate ``serverName``)."""
    out: list[ServerConfig] = []
    if table is not None:
        if not isinstance(table, Mapping):
            raise McpConfigError("settings: mcp must be a table with [mcp.servers.<name>] tables")
        unknown = sorted(set(table) - {"servers"})
        if unknown:
            raise McpConfigError(f"settings: mcp.{unknown[0]}: unknown key (servers go in [mcp.servers.<name>])")
        servers = table.get("servers", {})
        if not isinstance(servers, Mapping):
            raise McpConfigError("settings: mcp.servers must be a table of [mcp.servers.<name>] tables")
        for name, raw in servers.items():
            where = f"settings: mcp.servers.{name}"
            if not SERVER_NAME.match(str(name)):
                raise McpConfigError(f"{where}: a server name is 1-32 characters of A-Z a-z 0-9 _ -")
            if not isinstance(raw, Mapping):
                raise McpConfigError(f"{where} must be a table")
            if "name" in raw or "source" in raw:
                bad = "name" if "name" in raw else "source"
                raise McpConfigError(f"{where}.{bad}: unknown key")
            try:
                out.append(ServerConfig.model_validate({**raw, "name": str(name)}))
            except ValidationError as err:
                raise McpConfigError(_errors(err, where)) from None
    for value in cli:
        out.append(parse_cli(value))
    return out


def parse_cli(value: str) -> ServerConfig:
    """``NAME=COMMAND [ARGS...]`` (one shell-quoted string) or ``NAME=http(s)://URL``."""
    name, sep, rest = value.partition("=")
    where = f"--mcp {value!r}"
    if not sep or not rest.strip():
        raise McpConfigError(f"{where}: expected NAME=COMMAND (for example --mcp 'files=npx -y server-pkg .')")
    if not SERVER_NAME.match(name):
        raise McpConfigError(f"{where}: a server name is 1-32 characters of A-Z a-z 0-9 _ -")
    rest = rest.strip()
    if rest.startswith(("http://", "https://")) and " " not in rest:
        return ServerConfig(name=name, url=rest, source="cli")
    try:
        argv = shlex.split(rest)
    except ValueError as err:
        raise McpConfigError(f"{where}: {err}") from None
    return ServerConfig(name=name, command=argv[0], args=argv[1:], source="cli")
