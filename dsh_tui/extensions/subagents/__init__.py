"""The ``subagents`` built-in plugin: dsh's subagent tools (docs/extensions.md, "Subagents").

- ``subagent`` (spawn: a fresh child; continuable, background by default) and ``subagent_fork`` (fork: a
  child seeded with the parent's completed turns; one-shot, waits);
- ``send_message``, ``interrupt_agent``, ``list_agents`` (agents that can start children) and ``report``
  (in continuable children);
- ``ask_user_question`` in children only, refused as dsh refuses it there (no human can answer a child).

Children are real sessions in the parent's store, opened through the agent host (``AgentHost.open``) with
the parent's provider, options and plugins. Config (``[plugins.subagents]`` in the settings file, the pydantic
``Config`` below):
``max_depth`` (3, or ``"provider-managed"``), ``subagent_mode`` (``continuable``), ``fork_mode``
(``one-shot``), ``subagent_background`` (true) and ``fork_background`` (false: the fork tool always waits,
as dsh's shipped ``subagent_fork`` with ``enableRunInBackground: false``). One-shot *background* runs are
jobs of the ``jobs`` plugin (``dsh_tui.extensions.jobs``: ``started background subagent job <id>``, collected
with ``job_output``, stopped with ``job_kill``); without that plugin the combination is refused.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path
from typing import Any

from dsh_tui.extensions.subagents import children as ch
from dsh_tui.extensions.subagents import texts
from dsh_tui.extensions.subagents.background import start_job_child
from dsh_tui.extensions.subagents.config import CAPS, DEFAULTS, Config
from dsh_tui.extensions.subagents.config import parse as _config
from dsh_tui.llm.protocol import ChildProviders
from dsh_tui.session.errors import DshError
from dsh_tui.session.rows import events_of
from dsh_tui.tools.base import ToolDefinition, ToolError, ToolSchema

name = "subagents"
__all__ = ["apply", "name", "CAPS", "Config", "DEFAULTS"]

def _check_jobs(cfg: Config, agent: Any) -> None:
    """One-shot background runs are jobs: without the ``jobs`` plugin that combination is refused."""
    if getattr(agent, "jobs", None) is not None:
        return
    for mode, background in (("subagent_mode", "subagent_background"), ("fork_mode", "fork_background")):
        if getattr(cfg, mode) == "one-shot" and getattr(cfg, background):
            raise DshError(f"{background} = true with {mode} = \"one-shot\" needs background jobs (job_output, "
                           f"job_kill): enable the jobs plugin or set {background} = false")


def _text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


_DESCRIPTOR = frozenset({"subagent/descriptor"})
_SANDBOX_MODE = frozenset({"sandbox/mode"})


def _descriptor(session: Any) -> dict | None:
    for ev in events_of(session.events, _DESCRIPTOR):  # a loaded v4 log decodes only these
        if ev["type"] == "subagent/descriptor":
            return ev["data"]
    return None


def _delegation_depth(agent: Any) -> int:
    return int(agent.session.header.get("delegationDepth") or 0)


def _sandbox_override(session: Any) -> str | None:
    mode = None
    for ev in events_of(session.events, _SANDBOX_MODE):
        if ev["type"] == "sandbox/mode":
            mode = (ev.get("data") or {}).get("mode")
    return mode


def apply(ctx: Any, config: Any = None) -> None:
    cfg = _config(config)
    agent = ctx.driver
    _check_jobs(cfg, agent)
    if getattr(agent, "host", None) is None:
        return  # children are opened through the agent host: an agent built without one has no subagents
    agent_id: str = agent.id
    state = ctx.host.subagents  # the session tree's, owned by its root agent host
    state.opener = open_child  # ralph's rounds open their children through it
    state.agents[agent_id] = agent
    state.caps[agent_id] = {key: getattr(cfg, key) for key in CAPS}
    ctx.effect(lambda: lambda: state.agents.pop(agent_id, None) if state.agents.get(agent_id) is agent else None)
    ctx.effect(lambda: lambda: state.caps.pop(agent_id, None) if state.agents.get(agent_id) in (None, agent) else None)
    # for the core, which imports no extension: its host's run_turn(settle=True); its user-questions seam
    ctx.provide("settle_children", lambda timeout=600.0: ch.settle(agent, timeout))
    ctx.provide("delegated", lambda: getattr(state.children.get(agent_id), "host", None) is not None)

    def spawn_tool(tool_name: str, provider: str, mode: str, background_enabled: bool) -> ToolDefinition:
        base, prompt_desc = (texts.SPAWN_BASE, texts.SPAWN_PROMPT) if provider == "spawn" else (
            texts.FORK_BASE, texts.FORK_PROMPT)
        props: dict[str, Any] = {"description": {"type": "string", "description": texts.DESCRIPTION_PARAM},
                                 "prompt": {"type": "string", "description": prompt_desc}}
        if not background_enabled:
            description = base + texts.NO_BACKGROUND_SUFFIX
        elif mode == "continuable":
            description = base + texts.CONTINUABLE_SUFFIX
            props["run_in_background"] = {"type": "boolean", "description": texts.CONTINUABLE_PARAM}
        else:
            description = base + texts.ONE_SHOT_SUFFIX
            props["run_in_background"] = {"type": "boolean", "description": texts.ONE_SHOT_PARAM}
        parameters = {"type": "object", "properties": props, "required": ["description", "prompt"]}

        async def execute(args: dict, tctx: Any) -> Any:
            background = args.get("run_in_background")
            if background is True and not background_enabled:
                raise ToolError(texts.BACKGROUND_DISABLED)
            if background is None:
                background = background_enabled and mode == "continuable"
            jobs = getattr(agent, "jobs", None)
            if background and mode == "one-shot" and jobs is None:
                raise ToolError("background jobs unavailable: load @deepseek-ai/dsh-jobs and "
                                "@deepseek-ai/dsh-tool-jobs")
            depth = max(_delegation_depth(agent), 0) + 1
            if cfg.max_depth != "provider-managed" and depth > cfg.max_depth:
                raise ToolError(f"subagent depth {depth} exceeds maxDepth {cfg.max_depth}")
            ch.check_fanout(agent)  # a refusal is the tool's error: the model sees why
            host = agent.host
            if background and mode == "one-shot" and jobs is not None:  # (None: refused above)
                # a job: collected with job_output, stopped with job_kill
                job = await jobs.start("subagent", args["description"], lambda handle: start_job_child(
                    agent, host, handle, open_child=open_child, provider=provider, args=args, tool_name=tool_name,
                    call_id=tctx.call_id, depth=depth))
                return {"kind": "job", "jobId": job.id}
            child_mode = "continuable" if background else "one-shot"  # dsh: a foreground child is one-shot
            child = await open_child(agent, host, provider=provider, mode=child_mode, label=args["description"],
                                     tool_name=tool_name, call_id=tctx.call_id, depth=depth)
            prompt = {"role": "user", "content": _text(args["prompt"]), "source": {"kind": "user"}}
            cagent = child.agent
            child.epoch_start = len(cagent.session.events)
            try:
                cagent.followup(prompt)
            except Exception as err:  # the published child could not start its run: it is released either way
                await _settle_foreground(child, f"Error: {err}")
                raise
            if child_mode == "one-shot":  # inside the first turn, after turn/start and the claim, before step/start
                cagent.session.append("subagent/descriptor", _one_shot_descriptor(provider, args["description"]))
            ch.notify_watchers(child)
            if background:
                ch.watch_continuable(child)
                return {"kind": "continuable", "subagentId": child.id}
            return await _foreground(child, tctx)

        def render(args: Any, value: Any) -> list[dict]:
            if isinstance(value, dict) and value.get("kind") == "continuable":
                return _text(f"started subagent {value['subagentId']}")
            if isinstance(value, dict) and value.get("kind") == "job":
                return _text(f"started background subagent job {value['jobId']}")
            return _text(value.get("text", "") if isinstance(value, dict) else str(value))

        return ToolDefinition(tool_name, description, parameters, execute, render,
                              is_concurrency_safe=lambda _a: True, access="read")

    ctx.tools.register(spawn_tool("subagent", "spawn", cfg.subagent_mode, cfg.subagent_background))
    ctx.tools.register(spawn_tool("subagent_fork", "fork", cfg.fork_mode, cfg.fork_background))
    continuable = cfg.subagent_mode == "continuable" or cfg.fork_mode == "continuable"
    if continuable:
        _register_control_tools(ctx, agent)
    desc = _descriptor(agent.session)
    is_child = agent.session.header.get("origin") == "subagent"
    if desc is not None and desc.get("mode") == "continuable":
        _register_report(ctx, agent)
    if is_child and "ask_user_question" not in agent.tools.tools:
        _register_child_question(ctx)

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if is_child and assembly.contexts is not None and agent.config.runtime_context:
            assembly.contexts.append(prompt_mod.Section("subagent:delegated", 90, texts.DELEGATED_CONTEXT))
        names = agent.tools.tools
        for tool_name, mode in (("subagent", cfg.subagent_mode), ("subagent_fork", cfg.fork_mode)):
            if mode == "continuable" and tool_name in names:
                assembly.sections.append(prompt_mod.Section(f"tool:{tool_name}", 116.5,
                                                            texts.continuable_section(tool_name)))
        if "report" in names:
            assembly.sections.append(prompt_mod.Section("tool:report", 116.6, texts.REPORT_SECTION))
        return assembly

    ctx.on("system-prompt/assemble", assemble)

    if _is_resumed(agent.session):  # continuable children with queued input run again (and settle to us)
        task = asyncio.get_running_loop().create_task(resume_pending_children(agent))
        state.resuming[agent.id] = task
        task.add_done_callback(lambda t: state.resuming.pop(agent.id, None)
                               if state.resuming.get(agent.id) is t else None)
        ctx.effect(lambda: lambda: task.cancel() if not task.done() else None)

    async def close_children() -> None:  # host teardown disposes descendants child-first
        for child in ch.live_children(state, agent.id):
            await ch.close_child(child)

    ctx.effect(lambda: close_children)


def _is_resumed(session: Any) -> bool:
    """A session opened from the store (not a new one, nor a new child's seed)."""
    end = session.end_seed_seq
    seeded = session.header.get("seedLength")
    if end is None or (seeded is not None and end <= seeded):
        return False
    return end + 1 == len(session.events) and any(
        e["type"] == "turn/start" for e in session.events)


async def resume_pending_children(parent: Any) -> list[str]:
    """After the parent is resumed: each stored continuable child of it whose inbox still holds input (a
    ``send_message`` turn the crash or the close left unrun) is cold-resumed from its descriptor and runs
    it; its settlement notice reaches the parent. Returns the ids it resumed."""
    store = parent.host.store
    try:
        headers = await asyncio.to_thread(store.list)
    except Exception:  # noqa: BLE001 - listing is best effort; send_message still resumes on demand
        return []
    resumed = []
    for header in headers:
        sid = header.get("id")
        if header.get("parentSession") != parent.id or header.get("origin") != "subagent":
            continue
        known = parent.host.subagents.children.get(sid)
        if known is not None and known.host is not None:
            continue
        try:
            child = await _cold_resume(parent, sid)
        except ToolError:
            continue
        cagent = child.agent
        if cagent.inbox.pending():
            child.epoch_start = len(cagent.session.events)
            cagent._wake()
            ch.notify_watchers(child)
            resumed.append(sid)
        else:
            await ch.close_child(child)
    return resumed


def _one_shot_descriptor(provider: str, label: str) -> dict:
    return {"version": 2, "mode": "one-shot", "provider": provider, "label": label}


async def open_child(parent: Any, host: Any, *, provider: str, mode: str, label: str, tool_name: str,
                     call_id: str, depth: int, resume_id: str | None = None) -> ch.Child:
    """Open a new child of ``parent`` (or cold-resume ``resume_id``) through the agent host."""
    from dsh_tui.runtime.host import AgentHost, HostSpec

    spec = host.spec
    seed: list[dict] | None = None
    fields: dict[str, Any] = {"parentSession": parent.id, "origin": "subagent", "delegationDepth": depth}
    now = parent.clock()
    child_id = resume_id or str(uuid.uuid4())
    fields["id"] = child_id
    if resume_id is None:
        if provider == "fork":
            events = parent.session.events
            end = max((i for i, e in enumerate(events) if e["type"] == "turn/end"), default=-1)
            seed = [copy.deepcopy(dict(e)) for e in events[: end + 1]]
            if seed:
                fields["seedLength"] = len(seed)
        if mode == "continuable":
            desc: dict[str, Any] = {"version": 2, "mode": "continuable", "provider": provider, "label": label,
                                    "agentProvider": parent.config.provider, "agentModel": parent.config.model}
            seed = (seed or []) + [{"seq": len(seed or []), "time": now, "type": "subagent/descriptor",
                                    "data": desc}]
    child_provider = parent.provider
    if isinstance(parent.provider, ChildProviders):
        child_provider = parent.provider.child_provider(child_id)
    options = dict(spec.agent_options)
    options["approval_policy"] = "never"
    # the child starts in the parent's working directory (working_directory may have moved it) but keeps the
    # parent's workspace: the directory writes are confined to never widens by a cd
    options["workspace"] = str(parent.config.workspace or parent.config.cwd)
    child_spec = HostSpec(
        root=None, store=host.store, cwd=Path(parent.config.cwd) if resume_id is None else None,
        provider=child_provider, model=parent.config.model, reasoning_effort=parent.config.reasoning_effort,
        preset=parent.config.preset, resume_id=resume_id, clock=spec.clock, persona=spec.persona,
        agent_options=options, plugins=spec.plugins, plugin_objects=spec.plugin_objects,
        strict_plugins=spec.strict_plugins, on_plugin_failure=spec.on_plugin_failure, close_provider=False,
        trust=spec.trust, subagents=host.subagents,
        header_fields=fields if resume_id is None else {}, seed=seed, tool_options=dict(spec.tool_options),
        plugin_config=copy.deepcopy(spec.plugin_config))
    ch.check_fanout(parent, new=resume_id is None)
    with ch.opening(parent):
        child_host = await AgentHost.open(child_spec)
    if resume_id is None:
        sandbox = _sandbox_override(parent.session)
        if sandbox is not None:
            child_host.session.append("sandbox/mode", {"mode": sandbox, "source": "delegation"})
        if _approval_service(parent):
            # dsh seeds the delegated approval policy only under a host with an approval service (the app,
            # ACP); a headless or SDK parent has none, and its child logs none (the child never asks either way)
            child_host.session.append("approval/policy", {"policy": "never", "source": "delegation"})
    state = host.subagents
    child = state.children.get(child_id)
    if child is None:
        child = ch.Child(child_id, parent.id, depth, mode, provider, label, tool_name, call_id, state=state)
        state.children[child_id] = child
    child.host = child_host
    child.session = child_host.session
    child.closing = None
    child.ended_at = None
    child.outcome = None
    ch.watch(child)
    ch.notify_watchers(child)  # before its first prompt: a watcher sees the child's whole activation
    return child


async def _foreground(child: ch.Child, tctx: Any) -> dict:
    agent = child.agent
    idle = asyncio.ensure_future(agent.wait_idle())
    cancelled = asyncio.ensure_future(tctx.cancelled.wait())
    try:
        await asyncio.wait({idle, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        if not idle.done():  # the parent's call was cancelled: so is the child's run
            agent.cancel({"kind": "user"})
            await asyncio.shield(idle)
    finally:
        cancelled.cancel()
    outcome = ch.epoch_outcome(agent.session.events, child.epoch_start)
    child.outcome = outcome
    await _settle_foreground(child, None if outcome["kind"] == "completed" else "Error: " + ch.foreground_error(outcome))
    return {"kind": "completed", "text": outcome["text"]}


async def _settle_foreground(child: ch.Child, run_error: str | None) -> None:
    """Release a foreground child and report as dsh's subagent tool does: a failed run and a failed release
    together, else whichever failed (``run_error`` and the release's error as JavaScript's ``String(error)``)."""
    try:
        await ch.close_child(child, strict=True)
    except Exception as err:  # noqa: BLE001 - reported in the tool result
        if run_error is not None:
            raise ToolError(f"subagent run failed: {run_error}; dispose failed: Error: {err}") from err
        raise ToolError(str(err)) from err
    if run_error is not None:
        raise ToolError(run_error.removeprefix("Error: "))


class SubagentError(ToolError):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code, "SubagentError")


def _register_control_tools(ctx: Any, agent: Any) -> None:
    def schema_tool(schema: ToolSchema, execute: Any) -> ToolDefinition:
        return ToolDefinition(schema["name"], schema["description"], copy.deepcopy(schema["parameters"]), execute,
                              lambda _a, v: _text(str(v)), access="read")

    async def send_message(args: dict, tctx: Any) -> str:
        sid, text = args["subagent_id"], args["message"]
        child = agent.host.subagents.children.get(sid)
        if child is not None and child.closing is not None:
            await asyncio.shield(child.closing)
        if child is not None and child.parent_id != agent.id:
            raise SubagentError(f'subagent "{sid}" belongs to another parent session', "UNAUTHORIZED")
        if child is None or child.host is None:
            child = await _cold_resume(agent, sid)
        msg = {"role": "user", "content": _text(text),
               "source": {"kind": "coordinator", "form": "relay", "senderSessionId": agent.id}}
        cagent = child.agent
        if cagent.status != "running":
            child.epoch_start = len(cagent.session.events)
        cagent.send(msg, "next-turn", True)
        ch.notify_watchers(child)
        return f"message queued as the next turn for subagent {sid}"

    async def interrupt_agent(args: dict, tctx: Any) -> str:
        aid = args["agent_id"]
        below = {c.id: c for c, _d in ch.descendants(agent.host.subagents, agent.id)}
        target = below.get(aid)
        if target is not None and target.agent is not None and target.agent.status == "running":
            target.agent._wake_requested = False  # queued messages stay parked until a later send_message
            target.agent.cancel({"kind": "interrupted"}, keep_inbox=True)
        return f"interrupt requested for agent {aid}"

    async def list_agents(args: dict, tctx: Any) -> str:
        scope = args.get("scope") or "children"
        await _adopt_stored_children(agent)
        rows = [(c, d) for c, d in ch.descendants(agent.host.subagents, agent.id) if c.mode in ("continuable", "diagnostic")]
        if scope == "children":
            rows = [(c, d) for c, d in rows if d == 1]
        lines = []
        for c, d in rows:
            extra = f" parent={c.parent_id} depth={d}" if scope == "descendants" else ""
            if c.mode == "diagnostic":
                lines.append(f"{c.id} [diagnostic: {c.label}]{extra}")
            else:
                lines.append(f"{c.id} [{c.status}]{extra} — {c.label}")
        return "\n".join(lines) if lines else "(no subagents)"

    ctx.tools.register(schema_tool(texts.SEND_MESSAGE_SCHEMA, send_message))
    ctx.tools.register(schema_tool(texts.INTERRUPT_AGENT_SCHEMA, interrupt_agent))
    ctx.tools.register(schema_tool(texts.LIST_AGENTS_SCHEMA, list_agents))


async def _adopt_stored_children(parent: Any) -> None:
    """Register the stored children of ``parent`` this process has not seen (after a restart) as ``ready``
    (continuable) or as diagnostics (``corrupt``: unreadable; ``unsupported``: no continuable descriptor)."""
    store = getattr(getattr(parent, "host", None), "store", None)
    if store is None:
        return
    try:
        headers = await asyncio.to_thread(store.list)
    except Exception:  # noqa: BLE001 - listing is best effort
        return
    state = parent.host.subagents
    for header in headers:
        sid = header.get("id")
        if header.get("parentSession") != parent.id or header.get("origin") != "subagent" or sid in state.children:
            continue
        depth = int(header.get("delegationDepth") or 1)
        created = float(header.get("createdAt") or 0) / 1000 - 1e12
        try:
            info = await asyncio.to_thread(store.inspect, sid)
            desc = next((e["data"] for e in info.events if e["type"] == "subagent/descriptor"), None)
        except Exception:  # noqa: BLE001 - a child that cannot be read is reported, not dropped
            desc = None
        if not isinstance(desc, dict):  # unreadable, or a subagent child without its descriptor: dsh reports it
            state.children[sid] = ch.Child(sid, parent.id, depth, "diagnostic", "spawn", "corrupt", "subagent", "",
                                           created_at=created, state=state)  # as corrupt
            continue
        mode = "continuable" if desc.get("mode") == "continuable" else "one-shot"
        state.children[sid] = ch.Child(sid, parent.id, depth, mode, desc.get("provider", "spawn"),
                                       str(desc.get("label", "")), "subagent", "", created_at=created, state=state)

async def _cold_resume(parent: Any, sid: str) -> ch.Child:
    """Open a stored continuable child of ``parent`` from its descriptor."""
    host = getattr(parent, "host", None)
    store = getattr(host, "store", None)
    unavailable = SubagentError(f'subagent "{sid}" is unavailable', "NOT_RESUMABLE")
    if store is None:
        raise unavailable
    try:
        exists = await asyncio.to_thread(store.exists, sid)
    except Exception:  # noqa: BLE001 - a malformed id is simply not a stored child
        exists = False
    if not exists:
        raise unavailable
    try:
        info = await asyncio.to_thread(store.inspect, sid)
    except Exception as err:  # noqa: BLE001
        raise unavailable from err
    header = info.header
    if header.get("parentSession") != parent.id:
        raise SubagentError(f'subagent "{sid}" belongs to another parent session', "UNAUTHORIZED")
    desc = next((e["data"] for e in info.events if e["type"] == "subagent/descriptor"), None)
    if not isinstance(desc, dict) or desc.get("mode") != "continuable":
        raise SubagentError(f'subagent "{sid}" has no supported continuation state and cannot be resumed; '
                            f"do not retry send_message with this id", "NOT_RESUMABLE")
    label = desc.get("label", "")
    depth = int(header.get("delegationDepth") or 1)
    child = await open_child(parent, host, provider=desc.get("provider", "spawn"), mode="continuable",
                             label=label, tool_name="subagent", call_id="", depth=depth, resume_id=sid)
    ch.watch_continuable(child)
    return child


def _register_child_question(ctx: Any) -> None:
    """dsh's ``ask_user_question`` in a child: nobody can answer, so every call is refused with dsh's error."""
    schema = texts.ASK_USER_QUESTION_SCHEMA

    async def ask(args: dict, tctx: Any) -> str:
        raise ToolError(texts.DELEGATED_QUESTION, "DELEGATED_CALLER", "UserQuestionError")

    ctx.tools.register(ToolDefinition(schema["name"], schema["description"], copy.deepcopy(schema["parameters"]),
                                      ask, lambda _a, v: _text(str(v)), access="read"))


def _approval_service(parent: Any) -> bool:
    """Whether the tree's host answers approvals: someone answers the parent's ``approval/request``, or the
    parent is itself a child that was seeded the delegated policy."""
    if parent.bus.has("approval/request", parent.id):
        return True
    return any(e["type"] == "approval/policy" and (e.get("data") or {}).get("source") == "delegation"
               for e in parent.session.events)


def _register_report(ctx: Any, agent: Any) -> None:
    async def report(args: dict, tctx: Any) -> str:
        parent_id = agent.session.header.get("parentSession")
        parent = agent.host.subagents.agents.get(parent_id)
        if parent is None or getattr(parent, "_disposed", False):
            raise ToolError("direct parent is not live; report was not delivered")
        msg = {"id": str(uuid.uuid4()), "role": "user",
               "content": [{"type": "text", "text": f"Background subagent {agent.id} reported:"},
                           {"type": "text", "text": args["output"]}],
               "source": {"kind": "subagent-report", "form": "relay", "senderSessionId": agent.id}}
        ch.deliver(parent, msg, notice=False)
        return f"report accepted by the agent that started you as message {msg['id']}"

    schema = texts.REPORT_SCHEMA
    ctx.tools.register(ToolDefinition(schema["name"], schema["description"], copy.deepcopy(schema["parameters"]),
                                      report, lambda _a, v: _text(str(v)), access="read"))

