"""The ``lsp`` built-in plugin: dsh's ``lsp`` tool (``tool-lsp`` over ``lsp-stdio``) and diagnostics after
``write``/``edit`` (opencode's behaviour), over stdio language servers configured in settings::

    [lsp]
    diagnostics = true            # diagnostics of a file written or edited come back in the tool result
    diagnostics_wait_ms = 3000    # how long to wait for the server's publishDiagnostics
    max_diagnostics = 20          # errors listed per file
    max_locations = 100           # dsh's maxLocations
    max_result_chars = 16000      # dsh's maxResultChars
    timeout_ms = 60000            # dsh's timeoutMs (the lsp tool call's budget)

    [lsp.servers.pylsp]
    command = "pylsp"
    args = []
    extensions = [".py"]          # or {".py" = "python"}: extension -> LSP language id
    root_markers = ["pyproject.toml"]   # optional: the root is the nearest such folder, else the session cwd
    env = {}
    initialization_options = {}
    configuration = {}            # the answer to the server's workspace/configuration requests

The tool is offered only when a server is configured (the plugin is not applied otherwise). Each server
starts on first use, one process per (server, workspace root), and is shut down with the session
(``shutdown``/``exit``, then SIGTERM/SIGKILL of its process group). ``[plugins.lsp] enabled = false`` turns
it all off.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsh_tui.extensions.lsp.client import LspClient, LspError, LspUnavailable
from dsh_tui.extensions.lsp.render import (
    DEFAULT_MAX_LOCATIONS,
    DEFAULT_MAX_RESULT_CHARS,
    LSP_OPERATIONS,
    diagnostics_block,
    format_hover,
    format_locations,
    normalize_hover,
    normalize_locations,
    parse_args,
)
from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError, ToolSchema

name = "lsp"
__all__ = ["apply", "name", "DEFAULTS", "LSP_PROMPT_TEXT", "LSP_TOOL_SCHEMA", "LspClient", "needed"]

DEFAULTS: dict[str, Any] = {"diagnostics": True, "diagnostics_wait_ms": 3000, "max_diagnostics": 20,
                            "max_locations": DEFAULT_MAX_LOCATIONS, "max_result_chars": DEFAULT_MAX_RESULT_CHARS,
                            "timeout_ms": 60_000, "servers": {}}
SERVER_KEYS = ("command", "args", "extensions", "root_markers", "env", "initialization_options", "configuration")
DIAGNOSTIC_TOOLS = ("write", "edit")
START_TIMEOUT_S = 30.0
DIAGNOSTICS_START_S = 10.0

LSP_PROMPT_TEXT = (
    "Use search/read for ordinary navigation. Use lsp when textual matches are ambiguous or before a change requires "
    "precise definitions, implementations, or references. Positions are one-based line and character (UTF-16) at the "
    "cursor; an off-symbol position may return no results. findReferences always includes the declaration.")
LSP_TOOL_SCHEMA: ToolSchema = {
    "name": "lsp",
    "description": "Query a language server for precise code navigation. operation is one of goToDefinition, "
                   "findReferences, goToImplementation, hover. line and character are one-based UTF-16 cursor "
                   "coordinates. findReferences includes the declaration.",
    "parameters": {"type": "object", "properties": {
        "operation": {"type": "string", "description": "goToDefinition, findReferences, goToImplementation, or hover.",
                      "enum": list(LSP_OPERATIONS)},
        "file_path": {"type": "string",
                      "description": "The source file to query, relative to the workspace or absolute."},
        "line": {"type": "number", "description": "One-based line of the cursor."},
        "character": {"type": "number", "description": "One-based UTF-16 column of the cursor."}},
        "required": ["operation", "file_path", "line", "character"]},
}
REQUEST_METHOD = {"goToDefinition": "textDocument/definition", "findReferences": "textDocument/references",
                  "goToImplementation": "textDocument/implementation", "hover": "textDocument/hover"}
CAPABILITY = {"goToDefinition": "definitionProvider", "findReferences": "referencesProvider",
              "goToImplementation": "implementationProvider", "hover": "hoverProvider"}
LANGUAGE_IDS = {".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescriptreact",
                ".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".rs": "rust", ".go": "go",
                ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".rb": "ruby",
                ".lua": "lua", ".sh": "shellscript", ".json": "json", ".toml": "toml", ".yaml": "yaml",
                ".yml": "yaml", ".md": "markdown", ".zig": "zig", ".cs": "csharp", ".php": "php",
                ".swift": "swift", ".kt": "kotlin"}


def needed(config: Any) -> bool:
    """Applied only when at least one server is configured."""
    return isinstance(config, Mapping) and bool(config.get("servers"))


def final_extension(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return "" if dot <= 0 else base[dot:].lower()


def _config(raw: Any) -> dict[str, Any]:
    raw = dict(raw or {})
    raw.pop("enabled", None)
    raw.pop("listener_timeout_ms", None)
    unknown = set(raw) - set(DEFAULTS)
    if unknown:
        raise DshError(f"lsp: unknown option(s) {', '.join(sorted(unknown))} (expected {', '.join(DEFAULTS)})")
    cfg = {**copy.deepcopy(DEFAULTS), **raw}
    for key in ("diagnostics_wait_ms", "max_diagnostics", "max_locations", "max_result_chars", "timeout_ms"):
        v = cfg[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise DshError(f"lsp: {key} must be a positive integer, got {v!r}")
    if not isinstance(cfg["diagnostics"], bool):
        raise DshError(f"lsp: diagnostics must be true or false, got {cfg['diagnostics']!r}")
    servers = {}
    for sid, table in dict(cfg["servers"]).items():
        servers[sid] = _server(sid, table)
    seen: dict[str, str] = {}
    for sid, server in servers.items():
        for ext in server["extensions"]:
            if ext in seen:
                raise DshError(f'lsp: extension "{ext}" is already handled by server "{seen[ext]}"')
            seen[ext] = sid
    cfg["servers"] = servers
    return cfg


def _server(sid: str, table: Any) -> dict[str, Any]:
    where = f"lsp.servers.{sid}"
    if not isinstance(table, Mapping):
        raise DshError(f"{where} must be a table")
    unknown = set(table) - set(SERVER_KEYS)
    if unknown:
        raise DshError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (expected {', '.join(SERVER_KEYS)})")
    command = table.get("command")
    if not isinstance(command, str) or not command.strip():
        raise DshError(f"{where}.command must be a non-empty string")
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise DshError(f"{where}.args must be a list of strings")
    exts = table.get("extensions")
    mapping: dict[str, str] = {}
    items = exts.items() if isinstance(exts, Mapping) else ((e, None) for e in exts) if isinstance(exts, list) else None
    if items is None:
        raise DshError(f'{where}.extensions must be a list like [".py"] or a table like {{".py" = "python"}}')
    for ext, lang in items:
        if not isinstance(ext, str) or not ext.strip(".") or "/" in ext:
            raise DshError(f"{where}.extensions: invalid extension {ext!r}")
        key = ext.lower() if ext.startswith(".") else "." + ext.lower()
        mapping[key] = lang if isinstance(lang, str) and lang else LANGUAGE_IDS.get(key, key[1:])
    if not mapping:
        raise DshError(f"{where}.extensions must name at least one extension")
    markers = table.get("root_markers", [])
    if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
        raise DshError(f"{where}.root_markers must be a list of file names")
    env = table.get("env", {})
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise DshError(f"{where}.env must be a table of strings")
    return {"command": command, "args": list(args), "extensions": mapping, "root_markers": list(markers),
            "env": dict(env), "initialization_options": table.get("initialization_options"),
            "configuration": table.get("configuration")}


class LspHost:
    """The configured servers and their running clients, one per (server, root)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.clients: dict[tuple[str, str], LspClient] = {}
        self.routes = {ext: sid for sid, s in cfg["servers"].items() for ext in s["extensions"]}
        self.locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.closed = False

    def route(self, path: str) -> tuple[str, str] | None:
        sid = self.routes.get(final_extension(path))
        return None if sid is None else (sid, self.cfg["servers"][sid]["extensions"][final_extension(path)])

    def root_for(self, sid: str, file: Path, cwd: Path) -> Path:
        markers = self.cfg["servers"][sid]["root_markers"]
        if markers:
            for folder in file.parents:
                if any((folder / m).exists() for m in markers):
                    return folder
                if folder == cwd:
                    break
        return cwd

    async def client(self, sid: str, root: Path) -> LspClient:
        if self.closed:
            raise LspError("lsp-stdio provider is disposed", "LSP_DISPOSED")
        key = (sid, str(root))
        cl = self.clients.get(key)
        if cl is not None and cl.dead is not None and cl.proc is not None:
            # a server that died while idle is replaced once: queries are read-only
            await cl.close()
            cl = None
        if cl is None:
            s = self.cfg["servers"][sid]
            cl = self.clients[key] = LspClient(
                sid, s["command"], s["args"], str(root), env=s["env"],
                initialization_options=s["initialization_options"], configuration=s["configuration"],
                request_timeout=self.cfg["timeout_ms"] / 1000)
        try:
            await asyncio.wait_for(asyncio.shield(cl.ensure_started()), START_TIMEOUT_S)
        except TimeoutError:
            await cl.close()
            self.clients.pop(key, None)
            raise LspUnavailable(f'language server "{sid}" did not finish initializing within '
                                 f"{START_TIMEOUT_S:g} s") from None
        except LspUnavailable:
            self.clients.pop(key, None)
            raise
        return cl

    def lock(self, sid: str, root: Path) -> asyncio.Lock:
        return self.locks.setdefault((sid, str(root)), asyncio.Lock())

    async def close(self) -> None:
        self.closed = True
        clients = list(self.clients.values())
        self.clients.clear()
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)


def _read_source(file_path: str, cwd: Path, contain: bool = True) -> tuple[Path, str]:
    path = Path(file_path)
    path = path if path.is_absolute() else cwd / path
    try:
        path = path.resolve(strict=True)
    except OSError as err:
        raise ToolError(f'source "{file_path}" cannot be resolved: {err.strerror or err}') from None
    if contain and not path.is_relative_to(cwd.resolve()):
        raise ToolError(f'source "{file_path}" resolves outside the workspace')
    try:
        return path, path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ToolError(f'source "{file_path}" could not be read: {getattr(err, "strerror", None) or err}') from None


def apply(ctx: Any, config: Any = None) -> None:
    cfg = _config(config)
    host = LspHost(cfg)
    ctx.effect(lambda: host.close)

    async def execute(args: Any, tctx: Any) -> dict:
        operation, file_path, line, character = parse_args(args)
        cwd = Path(tctx.cwd)
        route = host.route(file_path)
        if route is None:
            raise ToolError(f'no LSP provider handles "{file_path}"', "LSP_UNAVAILABLE")
        sid, language_id = route
        path, text = await asyncio.to_thread(_read_source, file_path, cwd)
        root = host.root_for(sid, path, cwd.resolve())
        try:
            async with host.lock(sid, root):
                client = await host.client(sid, root)
                if not _supports(client.capabilities.get(CAPABILITY[operation])):
                    raise ToolError(f"server does not support {operation}", "LSP_UNSUPPORTED_OPERATION")
                uri = path.as_uri()
                _mark, opened = await client.sync(uri, language_id, text)
                try:
                    params: dict[str, Any] = {"textDocument": {"uri": uri},
                                              "position": {"line": line, "character": character}}
                    if operation == "findReferences":
                        params["context"] = {"includeDeclaration": True}
                    payload = await client.request(REQUEST_METHOD[operation], params)
                finally:
                    if opened:
                        with contextlib.suppress(LspError):
                            await client.close_doc(uri)
        except LspError as err:
            raise ToolError(str(err), err.code) from None
        if operation == "hover":
            try:
                return {"kind": "hover", "hover": normalize_hover(payload)}
            except LspError as err:
                raise ToolError(str(err), err.code) from None
        try:
            locations = normalize_locations(payload)
        except LspError as err:
            raise ToolError(str(err), err.code) from None
        return {"kind": "locations", "locations": locations, "resolvedWorkspaceUri": root.as_uri()}

    def render(_args: Any, value: dict) -> list[dict]:
        if value["kind"] == "hover":
            text = format_hover(value["hover"], cfg["max_result_chars"])
        else:
            text = format_locations(value["locations"], value["resolvedWorkspaceUri"], cfg["max_locations"],
                                    cfg["max_result_chars"])
        return [{"type": "text", "text": text}]

    def meta(args: Any, _value: Any) -> dict:
        a = args if isinstance(args, dict) else {}
        return {"title": f"LSP {a.get('operation')} {a.get('file_path')}:{a.get('line')}:{a.get('character')}"}

    ctx.tools.register(ToolDefinition(LSP_TOOL_SCHEMA["name"], LSP_TOOL_SCHEMA["description"],
                                      LSP_TOOL_SCHEMA["parameters"], execute, render=render,
                                      timeout_ms=cfg["timeout_ms"], is_concurrency_safe=lambda _a: True,
                                      access="read"))

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if "lsp" in ctx.agent.tool_names:
            # dsh's order 112 sits after its job guidance (106) and before the goal tools (114): here the job
            # guidance is 114 and the subagent tools 116.5
            assembly.sections.append(prompt_mod.Section("tool:lsp", 114.5, LSP_PROMPT_TEXT))
        return assembly

    ctx.on("system-prompt/assemble", assemble)

    if cfg["diagnostics"]:
        async def on_post_execute(payload: dict, nxt: Any) -> Any:
            downstream = await nxt()
            if payload.get("name") not in DIAGNOSTIC_TOOLS or not isinstance(downstream, dict) \
                    or downstream.get("kind", "accept") != "accept":
                return downstream
            result = payload.get("result") or {}
            args = payload.get("arguments")
            file_path = args.get("file_path") if isinstance(args, dict) else None
            if result.get("isError") or not isinstance(file_path, str) or host.route(file_path) is None:
                return downstream
            ex = payload.get("exec")
            cwd = Path(getattr(getattr(ex, "ctx", None), "cwd", None) or ctx.session.header.get("cwd") or ".")
            try:  # bounded: the server's start (first use) plus the wait for its publishDiagnostics
                block = await asyncio.wait_for(diagnostics_for(file_path, cwd),
                                               cfg["diagnostics_wait_ms"] / 1000 + DIAGNOSTICS_START_S)
            except TimeoutError:
                block = None
            if block is None:
                return downstream
            content = list(downstream.get("content", result.get("content")) or [])
            if content and content[-1].get("type") == "text":
                content[-1] = {**content[-1], "text": content[-1]["text"] + "\n\n" + block}
            else:
                content.append({"type": "text", "text": block})
            return {**downstream, "content": content}

        async def diagnostics_for(file_path: str, cwd: Path) -> str | None:
            route = host.route(file_path)
            if route is None:
                return None
            sid, language_id = route
            try:
                path, text = await asyncio.to_thread(_read_source, file_path, cwd, False)
                root = host.root_for(sid, path, cwd.resolve())
                async with host.lock(sid, root):
                    client = await host.client(sid, root)
                    uri = path.as_uri()
                    mark, _opened = await client.sync(uri, language_id, text)
                    diags = await client.wait_diagnostics(uri, mark, cfg["diagnostics_wait_ms"] / 1000)
            except (LspError, ToolError) as err:
                ctx.log.info("lsp diagnostics for %s skipped: %s", file_path, err)
                return None
            if not diags:
                return None
            return diagnostics_block(str(path), diags, cfg["max_diagnostics"])

        ctx.on("tools/post-execute", on_post_execute)


def _supports(value: Any) -> bool:
    return value is not None and value is not False
