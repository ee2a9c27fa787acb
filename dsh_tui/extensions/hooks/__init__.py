"""The hooks people already have: Claude Code's and Codex's shell hooks, run as dsh's bridges run them
(dsh's ``hooks-claude-code`` and ``hooks-codex``; the protocol in ``protocol.py``).

Two built-in plugins, ``hooks-claude-code`` and ``hooks-codex``, each off by ``[plugins.<id>] enabled =
false``. Where the hooks come from (``[plugins.<id>]`` keys):

- ``user`` (default true): the user's own file — Claude Code's ``~/.claude/settings.json``, Codex's
  ``~/.codex/hooks.json``;
- ``project`` (default true): the workspace's — ``.claude/settings.json`` and ``.claude/settings.local.json``,
  ``.codex/hooks.json`` — only once the user has trusted the workspace (``dsh_tui.config.trust``: the app's
  question, ``--trust``), since they run commands a repository carries;
- ``configPath``: one more file (or a list), as dsh's bridges take it;
- ``defaultTimeoutMs`` (600000) and ``stderrSummaryMaxChars`` (500).

Points (dsh's): ``SessionStart`` (its additional context injected), ``UserPromptSubmit`` (a deny rejects the
prompt; additional context joins the step), ``PreToolUse`` (deny refuses the call with the reason, ask sends
it to the approval panel; Codex hooks cannot ask), ``PostToolUse`` (deny replaces the result with the reason;
additional context follows it), ``Stop`` (a deny continues the turn with the reason); Claude Code also
``SubagentStart``/``SubagentStop`` (dsh's subagent runs are announced to the hooks of the child), and
Claude Code's own ``SessionEnd``, ``PreCompact`` and ``Notification`` (an approval waits). Each run in a turn
is logged as ``hook/invoked`` and ``hook/result``.

Tool names: a hook's ``matcher`` is tested against dsh's tool name (``bash``) and Claude Code's (``Bash``), so
existing Claude Code matchers work unchanged; the payload's ``tool_name`` is dsh's, as dsh's bridge sends it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import uuid
from pathlib import Path
from typing import Any

from dsh_tui.config.trust import project_hook_files
from dsh_tui.extensions.hooks import protocol as hp
from dsh_tui.session.errors import DshError

CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStart",
                 "SubagentStop", "SessionEnd", "PreCompact", "Notification")
CODEX_EVENTS = ("PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop")
#: dsh's tool names as Claude Code names its own (a matcher may use either)
CLAUDE_TOOL_NAMES = {"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "glob": "Glob",
                     "grep": "Grep", "todo_write": "TodoWrite", "web_fetch": "WebFetch", "web_search": "WebSearch",
                     "subagent": "Task", "ask_user_question": "AskUserQuestion", "exit_plan_mode": "ExitPlanMode",
                     "str_replace_editor": "MultiEdit"}
SUBAGENT_TYPE = "general-purpose"
_counter = itertools.count(1)


class HookConfigError(DshError, ValueError):
    pass


def _substitute(command: str, plugin_root: str | None, project_dir: str | None) -> str:
    if plugin_root is not None:
        command = command.replace("${CLAUDE_PLUGIN_ROOT}", plugin_root)
    if project_dir is not None:
        command = command.replace("${CLAUDE_PROJECT_DIR}", project_dir)
    return command


def parse_config(raw: Any, dialect: str, *, plugin_root: str | None = None,
                 project_dir: str | None = None) -> tuple[dict[str, list[hp.MatcherGroup]], list[str]]:
    """A hooks file (``{"hooks": {Event: [{matcher, hooks: [{type, command, timeout}]}]}}``, or the map
    itself) as matcher groups by event, and what was skipped (one line each). An invalid regex matcher is a
    ``HookConfigError`` (dsh refuses the whole file)."""
    config: dict[str, list[hp.MatcherGroup]] = {}
    skipped: list[str] = []
    root = raw if isinstance(raw, dict) else None
    hooks_map = root.get("hooks") if root is not None and isinstance(root.get("hooks"), dict) else root
    if not isinstance(hooks_map, dict):
        return config, skipped
    for event in CLAUDE_EVENTS if dialect == "claude-code" else CODEX_EVENTS:
        raw_groups = hooks_map.get(event)
        if not isinstance(raw_groups, list):
            continue
        groups = []
        for raw_group in raw_groups:
            if not isinstance(raw_group, dict) or not isinstance(raw_group.get("hooks"), list):
                continue
            commands = []
            for raw_hook in raw_group["hooks"]:
                if not isinstance(raw_hook, dict):
                    continue
                kind = raw_hook.get("type") if isinstance(raw_hook.get("type"), str) else "command"
                if kind != "command":
                    skipped.append(f'unsupported "{kind}" hook on {event} (only command hooks run)')
                    continue
                if dialect == "codex" and raw_hook.get("async") is True:
                    skipped.append(f"async hook on {event} (only sync command hooks run)")
                    continue
                if not isinstance(raw_hook.get("command"), str):
                    continue
                timeout = raw_hook.get("timeout")
                if dialect == "codex" and not isinstance(timeout, int | float):
                    timeout = raw_hook.get("timeoutSec")
                command = raw_hook["command"] if dialect == "codex" else _substitute(raw_hook["command"],
                                                                                      plugin_root, project_dir)
                commands.append(hp.CommandHook(command, float(timeout) if isinstance(timeout, int | float)
                                               and not isinstance(timeout, bool) else None))
            if not commands:
                continue
            matcher = None if event in ("UserPromptSubmit", "Stop") else (
                raw_group["matcher"] if isinstance(raw_group.get("matcher"), str) else None)
            problem = hp.matcher_diagnostic(matcher, dialect)
            if problem is not None:
                raise HookConfigError(f"{problem} on event {json.dumps(event)}")
            groups.append(hp.MatcherGroup(commands, matcher))
        if groups:
            config[event] = groups
    return config, skipped


def hook_files(dialect: str, cwd: str | None, config: dict[str, Any]) -> tuple[list[Path], list[Path]]:
    """The files this bridge reads, in order (user, project in a trusted workspace, ``configPath``), and the
    project files it leaves alone because the workspace is not trusted."""
    home = Path.home()
    files: list[Path] = []
    untrusted: list[Path] = []
    if config.get("user", True):
        files.append(home / ".claude" / "settings.json" if dialect == "claude-code" else home / ".codex" / "hooks.json")
    if config.get("project", True) and cwd:
        project = project_hook_files(Path(cwd), dialect)
        if project:
            from dsh_tui.config.trust import is_trusted

            (files if is_trusted(cwd) else untrusted).extend(project)
    extra = config.get("configPath")
    for item in [extra] if isinstance(extra, str) else list(extra or []):
        files.append(Path(str(item)).expanduser())
    seen: list[Path] = []
    for f in files:
        if f not in seen:
            seen.append(f)
    return seen, untrusted


def _load(dialect: str, files: list[Path], project_dir: str | None,
          log: Any) -> tuple[dict[str, list[hp.MatcherGroup]], list[str]]:
    """The hooks of ``files`` merged by event, and one line per file saying what became of it."""
    merged: dict[str, list[hp.MatcherGroup]] = {}
    report: list[str] = []
    label = f"hooks-{dialect}"
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as err:
            log.warning("%s: could not read hook config %s: %s", label, path, err)
            report.append(f"{path}: not read ({err.strerror or err})")
            continue
        try:
            config, skipped = parse_config(json.loads(text), dialect, project_dir=project_dir,
                                           plugin_root=str(path.parent))
        except (ValueError, HookConfigError) as err:
            log.warning('%s: could not load hook config "%s": %s — no hooks registered from it', label, path, err)
            report.append(f"{path}: not loaded ({err})")
            continue
        for line in skipped:
            log.warning("%s: skipping %s", label, line)
        count = sum(len(g.hooks) for groups in config.values() for g in groups)
        events = ", ".join(f"{event} ×{sum(len(g.hooks) for g in groups)}" for event, groups in config.items())
        report.append(f"{path}: {count} hook{'s' if count != 1 else ''}" + (f" ({events})" if events else ""))
        for event, groups in config.items():
            merged.setdefault(event, []).extend(groups)
    return merged, report


#: What each agent's bridges loaded (agent id -> dialect -> report lines), for ``/hooks``.
ACTIVE: dict[str, dict[str, list[str]]] = {}


def hooks_report(agent_id: str) -> str:
    rows = ACTIVE.get(agent_id) or {}
    lines = []
    for dialect, label in (("claude-code", "Claude Code hooks"), ("codex", "Codex hooks")):
        if dialect not in rows:
            continue
        lines.append(f"{label}:")
        lines.extend(f"  {line}" for line in rows[dialect] or ["none found"])
    if not lines:
        return "No hook bridge is on ([plugins.hooks-claude-code] / [plugins.hooks-codex])."
    lines.append("Read: ~/.claude/settings.json, ~/.codex/hooks.json, and the workspace's .claude/settings.json, "
                 ".claude/settings.local.json and .codex/hooks.json once it is trusted.")
    return "\n".join(lines)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _last_turn(events: Any) -> int:
    for e in reversed(events):
        if e["type"] == "turn/start":
            return int(e["data"]["turn"])
    return 0


def _bridge(dialect: str):
    def apply(ctx: Any, config: Any = None) -> None:
        from dsh_tui.tools.bash import credential_free_environ

        cfg = dict(config or {}) if isinstance(config, dict) else {}
        summary_max = int(cfg.get("stderrSummaryMaxChars", hp.DEFAULT_STDERR_SUMMARY_MAX_CHARS))
        default_timeout_ms = float(cfg.get("defaultTimeoutMs", hp.DEFAULT_HOOK_TIMEOUT_MS))
        if summary_max < 1:
            raise ValueError(f"hooks-{dialect}: stderrSummaryMaxChars must be a positive integer")
        header = ctx.session.header
        cwd = header.get("cwd")
        project_dir = cfg.get("projectDir") or cwd
        files, untrusted = hook_files(dialect, cwd, cfg)
        parsed, report = _load(dialect, files, project_dir, ctx.log)
        report += [f"{path}: skipped, the workspace is not trusted (dsh-tui run --trust, or the app's question)"
                   for path in untrusted]
        agent_id = ctx.agent.id
        ACTIVE.setdefault(agent_id, {})[dialect] = report
        ctx.commands.register("hooks", "list the Claude Code and Codex hooks that are active, and from where",
                              lambda _call: hooks_report(agent_id))

        def forget() -> None:
            rows = ACTIVE.get(agent_id) or {}
            rows.pop(dialect, None)
            if not rows:
                ACTIVE.pop(agent_id, None)

        ctx.effect(lambda: forget)
        if not parsed:
            return
        source = {"kind": "plugin", "plugin": f"hooks-{dialect}"}
        model = str(cfg.get("model", ""))
        pending: set[asyncio.Future[Any]] = set()

        def base(event: str) -> dict[str, Any]:
            out: dict[str, Any] = {"session_id": ctx.session.id, "transcript_path": _transcript(ctx) or (
                "" if dialect == "claude-code" else None), "cwd": cwd or os.getcwd(), "hook_event_name": event}
            if dialect == "codex":
                out.update({"model": model, "permission_mode": "default"})
            return out

        def turn_base(event: str) -> dict[str, Any]:
            out = base(event)
            if dialect == "codex":
                out["turn_id"] = str(_last_turn(ctx.session.events))
            return out

        async def run_point(point: str, query: str, payload: dict[str, Any], turn: int | None,
                            signal: Any = None, plain_stdout_context: bool = False) -> hp.Merged:
            env = credential_free_environ()
            if dialect == "claude-code" and project_dir:
                env["CLAUDE_PROJECT_DIR"] = str(project_dir)
            queries = {query, CLAUDE_TOOL_NAMES.get(query, query)}
            cancelled, off = _event_of(signal)
            try:
                return await _run_groups(point, queries, payload, turn, env, cancelled, plain_stdout_context)
            finally:
                off()

        async def _run_groups(point: str, queries: set[str], payload: dict[str, Any], turn: int | None,
                              env: dict[str, str], cancelled: asyncio.Event | None,
                              plain_stdout_context: bool) -> hp.Merged:
            outputs = []
            for group in parsed.get(point, []):
                if not any(hp.matches(group.matcher, q, dialect) for q in queries):
                    continue
                for hook in group.hooks:
                    handler = f"{dialect}:{point}:{next(_counter)}"
                    if turn is not None:
                        invoked = {"turn": turn, "point": point, "dialect": dialect, "handlerId": handler}
                        if group.matcher is not None:
                            invoked["matcher"] = group.matcher
                        ctx.append("hook/invoked", invoked)
                    output, ms = await hp.run_hook(
                        hook, payload, cwd=cwd if cwd and Path(cwd).is_dir() else None, env=env,
                        trailing_newline=dialect == "claude-code", default_timeout_ms=default_timeout_ms,
                        expected_event=point, cancelled=cancelled)
                    if (plain_stdout_context and output.exit_code == 0 and output.additional_context is None
                            and output.stdout and not output.stdout.startswith("{")):
                        output.additional_context = output.stdout
                    if output.updated_input is not None:
                        ctx.log.warning("hooks-%s: %s hook requested updatedInput, which is not yet honored "
                                        "(ignored)", dialect, point)
                    if output.system_message is not None:
                        ctx.log.warning("hooks-%s: %s hook emitted a systemMessage: %s", dialect, point,
                                        output.system_message)
                    outputs.append(output)
                    if turn is not None:
                        result: dict[str, Any] = {"turn": turn, "point": point, "handlerId": handler,
                                                  "decision": output.decision or (
                                                      "stop" if output.continue_ is False else "pass")}
                        if output.exit_code is not None:
                            result["exitCode"] = output.exit_code
                        summary = hp.summarize_stderr(output.stderr, summary_max)
                        if summary is not None:
                            result["stderrSummary"] = summary
                        result["durationMs"] = ms
                        ctx.append("hook/result", result)
            return hp.merge(outputs)

        def context_message(merged: hp.Merged) -> dict[str, Any] | None:
            if not merged.additional_context:
                return None
            return {"id": str(uuid.uuid4()), "role": "user",
                    "content": [{"type": "text", "text": t} for t in merged.additional_context], "source": dict(source)}

        def track(coro: Any) -> None:
            task = asyncio.ensure_future(coro)
            pending.add(task)
            task.add_done_callback(pending.discard)

        def on_session_start(payload: dict[str, Any]) -> None:
            kind = payload.get("source", "startup")

            async def go() -> None:
                merged = await run_point("SessionStart", kind, {**base("SessionStart"), "source": kind}, None,
                                         plain_stdout_context=dialect == "codex")
                message = context_message(merged)
                if message is not None:
                    ctx.agent.inject(message)

            track(go())

        async def on_pre_step(payload: dict[str, Any], nxt: Any) -> Any:
            messages = payload.get("messages") or []
            if not messages:  # dsh: every step that takes new messages in (a prompt, a steer, a notice)
                return await nxt()
            prompt = "".join(_text(m.get("content")) for m in messages)
            body = {**base("UserPromptSubmit"), "prompt": prompt}
            if dialect == "codex":
                body = {**base("UserPromptSubmit"), "turn_id": str(payload.get("turn", 0)), "prompt": prompt}
            merged = await run_point("UserPromptSubmit", "", body, payload.get("turn"), payload.get("signal"),
                                     plain_stdout_context=dialect == "codex")
            if merged.decision == "deny":
                return {"kind": "reject"}
            downstream = await nxt()
            ours = context_message(merged)
            if ours is None or not isinstance(downstream, dict) or downstream.get("kind") != "enter":
                return downstream
            return {**downstream, "messages": [*downstream.get("messages", []), ours]}

        def tool_input(args: Any) -> Any:
            if dialect == "codex":
                command = args.get("command") if isinstance(args, dict) else None
                return {"command": command if isinstance(command, str) else ""}
            return args

        async def on_pre_execute(payload: dict[str, Any], nxt: Any) -> Any:
            name = str(payload.get("name", ""))
            body = {**turn_base("PreToolUse"), "tool_name": name, "tool_input": tool_input(_args(payload)),
                    "tool_use_id": payload.get("callId")}
            merged = await run_point("PreToolUse", name, body, _last_turn(ctx.session.events), payload.get("signal"))
            if merged.decision == "deny":
                return {"kind": "deny", "reason": merged.reason or "blocked by PreToolUse hook"}
            if merged.decision == "ask" and dialect == "claude-code":
                return {"kind": "ask", **({"reason": merged.reason} if merged.reason else {})}
            return await nxt()

        async def on_post_execute(payload: dict[str, Any], nxt: Any) -> Any:
            name = str(payload.get("name", ""))
            result = payload.get("result") or {}
            body = {**turn_base("PostToolUse"), "tool_name": name, "tool_input": tool_input(_args(payload)),
                    "tool_use_id": payload.get("callId"), "tool_response": _text(result.get("content"))}
            merged = await run_point("PostToolUse", name, body, _last_turn(ctx.session.events), payload.get("signal"))
            context = context_message(merged)
            if merged.decision == "deny":
                decision: dict[str, Any] = {"kind": "block", "feedback": [
                    {"type": "text", "text": merged.reason or "blocked by PostToolUse hook"}]}
                if context is not None:
                    decision["additionalContexts"] = [context]
                return decision
            downstream = await nxt()
            if context is None or not isinstance(downstream, dict):
                return downstream
            return {**downstream, "additionalContexts": [context, *(downstream.get("additionalContexts") or [])]}

        async def on_turn_stopping(payload: dict[str, Any]) -> None:
            body = {**turn_base("Stop"), "stop_hook_active": False}
            if dialect == "codex":
                body["last_assistant_message"] = None
            merged = await run_point("Stop", "", body, payload.get("turn"), payload.get("signal"))
            if merged.decision == "deny":
                text = merged.reason or "continue: blocked by Stop hook"
                ctx.agent.steer({"role": "user", "content": [{"type": "text", "text": text}], "source": dict(source)})

        # the children of this agent's session tree (its host's subagent state; a bare agent opens none)
        subagents = getattr(getattr(ctx, "host", None), "subagents", None)
        if dialect == "claude-code" and ("SubagentStart" in parsed or "SubagentStop" in parsed) \
                and subagents is not None:
            started: set[str] = set()
            stopped: set[str] = set()

            def subagent_payload(event: str, child: Any) -> dict[str, Any]:
                body = {**base(event), "session_id": child.id, "agent_id": child.id, "agent_type": SUBAGENT_TYPE}
                if child.session is not None:
                    body["cwd"] = child.session.header.get("cwd") or body["cwd"]
                if event == "SubagentStop":
                    body["stop_hook_active"] = False
                return body

            def on_child(child: Any) -> None:
                if child.parent_id != agent_id:
                    return
                if child.id not in started and child.agent is not None:
                    started.add(child.id)
                    agent = child.agent

                    async def start() -> None:
                        merged = await run_point("SubagentStart", SUBAGENT_TYPE,
                                                 subagent_payload("SubagentStart", child), None)
                        message = context_message(merged)
                        if message is not None and not getattr(agent, "_disposed", False):
                            agent.inject(message)

                    track(start())
                if child.outcome is not None and child.id in started and child.id not in stopped:
                    stopped.add(child.id)
                    track(run_point("SubagentStop", SUBAGENT_TYPE, subagent_payload("SubagentStop", child), None))

            ctx.effect(lambda: subagents.watch(on_child))

        ctx.on("agent/session-start", on_session_start)
        ctx.on("agent/pre-step", on_pre_step)
        ctx.on("tools/pre-execute", on_pre_execute)
        ctx.on("tools/post-execute", on_post_execute)
        ctx.on("agent/turn-stopping", on_turn_stopping)

        if dialect == "claude-code" and "PreCompact" in parsed:
            def on_event(payload: dict[str, Any]) -> None:
                event = payload.get("event") or {}
                if event.get("type") != "compaction/start":
                    return
                trigger = "manual" if (event.get("data") or {}).get("turn") is None else "auto"
                track(run_point("PreCompact", trigger, {**base("PreCompact"), "trigger": trigger,
                                                        "custom_instructions": ""}, None))

            ctx.on("session/event", on_event)

        if dialect == "claude-code" and "Notification" in parsed:
            async def on_approval(payload: dict[str, Any], nxt: Any) -> Any:
                tool = str(payload.get("toolName") or "a tool")
                message = f"Claude needs your permission to use {CLAUDE_TOOL_NAMES.get(tool, tool)}"
                track(run_point("Notification", "", {**base("Notification"), "message": message}, None))
                return await nxt()

            ctx.on("approval/request", on_approval, prepend=True)

        async def drain() -> None:
            if dialect == "claude-code" and "SessionEnd" in parsed:
                try:  # the session is closing: its hooks still run (bounded by their timeouts)
                    await run_point("SessionEnd", "other", {**base("SessionEnd"), "reason": "other"}, None)
                except Exception as err:  # noqa: BLE001 - a failing hook never blocks closing
                    ctx.log.warning("hooks-claude-code: SessionEnd hook failed: %s", err)
            if pending:  # detached runs (SessionStart, Notification, …) get a moment to finish, then stop
                await asyncio.wait(list(pending), timeout=5)
            for task in list(pending):
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

        ctx.effect(lambda: drain)

    apply.__name__ = f"apply_{dialect.replace('-', '_')}"
    return apply


def _args(payload: dict[str, Any]) -> Any:
    args = payload.get("arguments")
    if isinstance(args, str):
        try:
            return json.loads(args or "{}")
        except ValueError:
            return args
    return args


def _event_of(signal: Any) -> tuple[asyncio.Event | None, Any]:
    """The turn's ``AbortSignal`` as an ``asyncio.Event`` set when it aborts (and the undo of that)."""
    if signal is None or not hasattr(signal, "on_abort"):
        return None, lambda: None
    event = asyncio.Event()
    if getattr(signal, "aborted", False):
        event.set()
    return event, signal.on_abort(lambda _reason: event.set())


def _transcript(ctx: Any) -> str | None:
    path = getattr(getattr(ctx, "session", None), "path", None)
    return str(path) if path else None


apply_claude_code = _bridge("claude-code")
apply_codex = _bridge("codex")
