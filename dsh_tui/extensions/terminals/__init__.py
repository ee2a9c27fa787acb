"""The ``terminals`` built-in plugin: dsh's six ``terminal_*`` tools over persistent PTYs (dsh's ``terminal`` +
``terminal-bash`` + ``tool-terminal``), off by default as in dsh's own composition
(``[plugins.terminals] enabled = true`` turns it on; docs/tools.md, "Terminals").

- A registry of backends by type and of this agent's sessions (ids ``pty-1``, ``pty-2``, …; names unique per
  agent). The ``shell`` backend (``local.py``) runs an interactive bash on a real PTY, wrapped in the OS
  sandbox (``dsh_tui.tools.sandbox``, the same bubblewrap argv as the ``bash`` tool) when the call's sandbox
  mode confines.
- The tools' names, descriptions, parameters, result texts and the system-prompt section are dsh's, byte for
  byte. ``terminal_send`` with ``run_in_background`` is a ``pty-send`` job of the ``jobs`` plugin.
- Every session ends with the agent (awaited, the whole process tree); ``session(id)`` gives the app a live
  session (its ``screen()`` and ``listeners``).

Config (``[plugins.terminals]``): ``max_result_bytes`` (262144), ``enable_run_in_background`` (true), and the
shell backend's ``shell_path``, ``shell_args``, ``rows``, ``cols``, ``idle_silence_ms``, ``timeout_ms``,
``dispose_grace_ms``, … (``local.DEFAULTS``), and ``backends``: backends of your own (``"module:Class"``, or
from Python the objects), each with a ``type`` and ``async spawn(spec)`` giving a session like ``local``'s.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

from dsh_tui.extensions.terminals.render import (
    TRUNCATED,
    bound_terminal_text,
    render_list,
    render_read,
    render_send,
    render_spawn,
)
from dsh_tui.extensions.terminals.service import ShellBackend, TerminalService
from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError, ToolSchema

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

__all__ = ["SCHEMAS", "TOOL_NAMES", "TRUNCATED", "ShellBackend", "TerminalService", "apply", "bound_terminal_text",
           "render_list", "render_read", "render_send", "render_spawn"]

name = "terminals"
DEFAULT_MAX_RESULT_BYTES = 256 * 1024
MIN_MAX_RESULT_BYTES = 64
SECTION = ("Use a terminal session only when work needs persistent terminal state or interactive stdin; prefer "
           "shell/read/write/edit for bounded one-shot operations. Track every terminal session id and close "
           "sessions that no longer matter. An inferred_idle or timeout result does not prove the foreground "
           "command exited.")
_SESSION_ID = {"type": "string", "description": "Terminal session id."}
TERMINAL_OPEN: ToolSchema = {
    "name": "terminal_open",
    "description": "Create a persistent, owner-isolated terminal session from a registered backend type. Use this "
                   "for shell or REPL state that must survive across tool calls.",
    "parameters": {"type": "object", "properties": {
        "type": {"type": "string", "description": 'Registered terminal backend type, usually "shell".'},
        "name": {"type": "string", "description": 'Optional owner-local display name such as "main" or "gdb".'},
        "cwd": {"type": "string", "description": "Initial working directory. Defaults to the deployment workspace "
                                                 "root."}},
        "required": ["type"]},
}
_SEND_DESCRIPTION = ("Send text to a persistent terminal. By default Enter is submitted and the call waits for a "
                     "prompt, stdin wait, output silence, timeout, or session exit.")
_BACKGROUND = " Background mode returns a job id for job_output/job_kill."
TERMINAL_SEND: ToolSchema = {
    "name": "terminal_send",
    "description": _SEND_DESCRIPTION + _BACKGROUND,
    "parameters": {"type": "object", "properties": {
        "sessionId": {"type": "string", "description": "Terminal session id returned by terminal_open or "
                                                       "terminal_list."},
        "text": {"type": "string", "description": "UTF-8 text to write to the terminal."},
        "submit": {"type": "boolean", "description": "Submit Enter after text (default true). Set false for control "
                                                     "characters or incomplete REPL input."},
        "run_in_background": {"type": "boolean", "description": "Return a job id immediately; collect with "
                                                                "job_output or stop with job_kill."}},
        "required": ["sessionId", "text"]},
}
TERMINAL_READ: ToolSchema = {
    "name": "terminal_read",
    "description": "Read a bounded page of retained output from a persistent terminal without sending input.",
    "parameters": {"type": "object", "properties": {
        "sessionId": _SESSION_ID,
        "offset": {"type": "number", "description": "Newest-relative line offset (default 0)."},
        "count": {"type": "number", "description": "Requested line count (default 500; backend caps apply)."}},
        "required": ["sessionId"]},
}
TERMINAL_SIGNAL: ToolSchema = {
    "name": "terminal_signal",
    "description": "Send an allowed signal to the current foreground process group of a persistent terminal.",
    "parameters": {"type": "object", "properties": {
        "sessionId": _SESSION_ID,
        "signal": {"type": "string", "description": "Signal to deliver. Shell-targeted SIGKILL is rejected; use "
                                                    "terminal_close.",
                   "enum": ["SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP"]}},
        "required": ["sessionId", "signal"]},
}
TERMINAL_CLOSE: ToolSchema = {
    "name": "terminal_close",
    "description": "Close one persistent terminal and wait until its captured owned process tree is gone.",
    "parameters": {"type": "object", "properties": {"sessionId": _SESSION_ID}, "required": ["sessionId"]},
}
TERMINAL_LIST: ToolSchema = {
    "name": "terminal_list",
    "description": "List persistent terminal sessions owned by the current agent.",
    "parameters": {"type": "object", "properties": {}},
}
SCHEMAS = (TERMINAL_OPEN, TERMINAL_SEND, TERMINAL_READ, TERMINAL_SIGNAL, TERMINAL_CLOSE, TERMINAL_LIST)
TOOL_NAMES = tuple(s["name"] for s in SCHEMAS)


# ---- the plugin -------------------------------------------------------------------------------------------

def _config(raw: Any) -> dict[str, Any]:
    from dsh_tui.extensions.terminals.local import DEFAULTS

    known = {"max_result_bytes": DEFAULT_MAX_RESULT_BYTES, "enable_run_in_background": True, "backends": (),
             **DEFAULTS}
    raw = dict(raw or {})
    unknown = set(raw) - set(known)
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected {', '.join(known)})")
    cfg = {**known, **raw}
    for key, default in known.items():
        v = cfg[key]
        if isinstance(default, int) and not isinstance(default, bool) and (
                isinstance(v, bool) or not isinstance(v, int) or v <= 0):
            raise DshError(f"{key} must be a positive integer, got {v!r}")
    if cfg["max_result_bytes"] < MIN_MAX_RESULT_BYTES:
        raise DshError(f"max_result_bytes must be a safe integer of at least {MIN_MAX_RESULT_BYTES}")
    if not isinstance(cfg["shell_args"], list | tuple) or not all(isinstance(a, str) for a in cfg["shell_args"]):
        raise DshError("shell_args must be a list of strings")
    cfg["shell_args"] = list(cfg["shell_args"])
    return cfg


def _text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def apply(ctx: BuiltinContext, config: Any = None) -> TerminalService:
    cfg = _config(config)
    max_bytes = cfg["max_result_bytes"]
    background = bool(cfg["enable_run_in_background"])
    service = TerminalService(ctx.agent.id)
    service.register_backend(ShellBackend(cfg, ctx.agent.sandbox))
    for backend in cfg["backends"]:  # a deployment's backend replaces the shell of that type
        if isinstance(backend, str):  # "package.module:Class" (settings): an instance of it
            import importlib

            module, _, attr = backend.partition(":")
            try:
                backend = getattr(importlib.import_module(module), attr)()
            except Exception as err:  # noqa: BLE001 - a plugin load error names it
                raise DshError(f"backends: cannot load {backend!r}: {err}") from None
        service.backends[backend.type] = backend
    ctx.provide("terminals", service)  # as the jobs plugin's registry (``AgentView.terminals``); withdrawn after
    ctx.effect(lambda: service.dispose)  # the service is disposed (disposers run newest first)

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if "terminal_open" in ctx.agent.tool_names:
            assembly.sections.append(prompt_mod.Section("tool:pty", 106, SECTION))
        return assembly

    ctx.on("system-prompt/assemble", assemble)

    def bounded(render: Any) -> Any:
        return lambda args, value: _text(bound_terminal_text(render(args, value), max_bytes))

    async def t_open(args: dict, tctx: Any) -> dict:
        type_ = args.get("type")
        if not isinstance(type_, str) or not type_:
            raise ToolError("type must be a non-empty string")
        try:
            return await service.spawn(type_, args.get("name"), args.get("cwd"), tctx)
        except (RuntimeError, OSError) as err:
            raise ToolError(str(err)) from None

    async def t_send(args: dict, tctx: Any) -> dict:
        sid: str = args["sessionId"]  # required by the schema: the tool service checked it is a string
        text = args.get("text", "")
        submit = args.get("submit", True) is not False
        if args.get("run_in_background") is True:
            if not background:
                raise ToolError("background terminal sends are disabled by tool-terminal configuration")
            jobs = ctx.agent.jobs
            if jobs is None:
                raise ToolError("background terminal sends require @deepseek-ai/dsh-jobs and @deepseek-ai/dsh-tool-jobs")
            service.expect(sid)

            async def starter(handle: Any) -> Any:
                op = await service.start_send(sid, text, submit)
                state = {"cancelled": False}
                op.sinks = [handle.append]

                async def run() -> None:
                    try:
                        result = await op.future
                    except Exception as err:  # noqa: BLE001
                        handle.settle("failed", str(err))
                        return
                    st = result["sessionStatus"]
                    detail = (f"wait: {result['waitReason']}" if st["kind"] == "running" else
                              f"session exited: {st.get('exitCode') if st.get('exitCode') is not None else st.get('signal') or 'unknown'}")
                    handle.settle("killed" if state["cancelled"] else "completed", detail)

                asyncio.ensure_future(run())

                def cancel(_reason: str | None = None) -> None:
                    state["cancelled"] = True
                    op.cancel()

                return cancel

            job = await jobs.start("pty-send", f"{sid}: {text or '(input)'}", starter)
            return {"kind": "background", "jobId": job.id}
        if not isinstance(text, str):
            raise ToolError("text must be a string")
        op = await service.start_send(sid, text, submit, tctx.cancelled)
        result = await op.future
        if tctx.cancelled.is_set():
            raise ToolError("terminal send aborted")
        return {"kind": "foreground", **result}

    def render_send_value(_args: Any, value: dict) -> str:
        if value["kind"] == "background":
            return f"started background job {value['jobId']}"
        return render_send(value, max_bytes)

    async def t_read(args: dict, tctx: Any) -> dict:
        record = service.expect(args["sessionId"])  # required by the schema (checked by the tool service)
        offset, count = args.get("offset"), args.get("count")
        offset = int(offset) if isinstance(offset, float) and offset.is_integer() else offset
        count = int(count) if isinstance(count, float) and count.is_integer() else count
        try:
            return record.session.read(offset, count)
        except ValueError as err:
            raise ToolError(str(err)) from None

    async def t_signal(args: dict, tctx: Any) -> dict:
        record = service.expect(args["sessionId"])  # required by the schema (checked by the tool service)
        sig = args.get("signal")
        from dsh_tui.extensions.terminals.local import SIGNALS

        if sig not in SIGNALS:
            raise ToolError(f"signal must be one of {', '.join(SIGNALS)}")
        try:
            return await record.session.signal(sig)
        except (RuntimeError, OSError) as err:
            raise ToolError(str(err)) from None

    async def t_close(args: dict, tctx: Any) -> dict:
        sid: str = args["sessionId"]  # required by the schema (checked by the tool service)
        try:
            closed = await service.kill(sid)
        except RuntimeError as err:
            raise ToolError(str(err)) from None
        return {"sessionId": sid, "outcome": "closed" if closed else "already-closing"}

    async def t_list(args: dict, tctx: Any) -> list:
        return service.list()

    def render_close(_args: Any, value: dict) -> str:
        if value["outcome"] == "closed":
            return f"closed terminal session {value['sessionId']}"
        return f"terminal session {value['sessionId']} was already closing"

    sandboxed = ctx.agent.sandbox is not None
    send_schema = copy.deepcopy(TERMINAL_SEND)
    if not background:
        send_schema["description"] = _SEND_DESCRIPTION
        del send_schema["parameters"]["properties"]["run_in_background"]
    tools = (
        (TERMINAL_OPEN, t_open, lambda a, v: render_spawn(v, max_bytes), "exec"),
        (send_schema, t_send, render_send_value, "exec"),
        (TERMINAL_READ, t_read, lambda a, v: render_read(v, max_bytes), "read"),
        (TERMINAL_SIGNAL, t_signal,
         lambda a, v: f"delivered {a.get('signal')} to foreground process group {v['targetPgid']}", "exec"),
        (TERMINAL_CLOSE, t_close, render_close, "exec"),
        (TERMINAL_LIST, t_list, lambda a, v: render_list(v, max_bytes), "read"),
    )
    def send_meta(_args: Any, value: dict) -> dict | None:  # dsh's presentationMeta: a foreground send's result
        if value.get("kind") != "foreground":
            return None
        return {"viewport": value.get("viewport"), "waitReason": value.get("waitReason"),
                "sessionStatus": value.get("sessionStatus"), "truncated": value.get("truncated")}

    for schema, execute, render, access in tools:
        ctx.tools.register(ToolDefinition(schema["name"], schema["description"], copy.deepcopy(schema["parameters"]),
                                          execute, bounded(render), access=access,
                                          sandboxed=sandboxed and access == "exec",
                                          presentation_meta=send_meta if schema is send_schema else None))
    return service
