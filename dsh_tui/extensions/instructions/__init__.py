"""Project instructions (``AGENTS.md``) as the built-in plugin ``agent-instructions``.

Discovery: ``<dshHome>/AGENTS.md`` (``$DSH_HOME`` if set, else ``~/.dsh``), then, for every directory from
the project root (the nearest ancestor of the cwd with a ``.git``, else the cwd) down to the cwd, the
existing ``AGENTS.md``/``CLAUDE.md`` and then ``AGENTS.local.md``/``CLAUDE.local.md`` (regular files,
symlinks followed, at most ``maxSourceBytes``); within one directory a file whose stripped content has
the SHA-1 of an earlier kept one is dropped. Only those directories are probed (no walk of the tree).

Entry: the baseline (every file, framed in dsh's exact ``<system-reminder>`` texts, cut to ``maxBytes``)
enters at the first step of the agent, right after the claimed prompt. After a successful ``read``,
``write`` or ``edit`` of a file below the cwd, the step's touched directories are probed at the step's end
and the ``set``/``replace``/``remove`` changes are queued as one ``next-step`` message. A resumed session
keeps its visible baseline when the configuration is the same and only adds what changed offline;
otherwise a complete superseding baseline replaces it.

Discovery is ``workspace.py``, dsh's texts and the byte budget ``render.py``; this module is the plugin and
the resume fold.
"""

from __future__ import annotations

import os
from typing import Any

from dsh_tui.extensions.instructions.render import (
    KIND,
    _change,
    baseline_message,
    changes_message,
    readd_message,
)
from dsh_tui.extensions.instructions.workspace import InstructionsConfig, Source, Workspace
from dsh_tui.runtime.inbox import NEXT_STEP
from dsh_tui.session.rows import events_of
from dsh_tui.tools import wsread

SKIPPED = "agent-instructions/skipped"  # {path, reason}: a file found but not read (tools/wsread.py)
TOUCH_TOOLS = ("read", "write", "edit")

__all__ = ["AGENT_INSTRUCTIONS", "KIND", "SKIPPED", "InstructionsConfig", "Source", "Workspace", "baseline_message",
           "changes_message", "readd_message"]


# -------------------------------------------------------------------------------------------------
# State: what the visible log has loaded


def _visible_sources(session: Any) -> list[dict]:
    try:
        messages = session.derive_messages().to_list()
    except Exception:  # noqa: BLE001 - a session without the projection: nothing is loaded
        return []
    return [m["source"] for m in messages if isinstance(m, dict) and isinstance(m.get("source"), dict)
            and m["source"].get("kind") == KIND]


_USER = frozenset({"user/message"})


def _ever_logged(session: Any) -> bool:
    return any(e.get("type") == "user/message" and ((e.get("data") or {}).get("source") or {}).get("kind") == KIND
               for e in events_of(session.events, _USER))


def fold_loaded(sources: list[dict]) -> tuple[str | None, dict[str, dict]]:
    """(identity of the newest visible baseline, scope -> its last set/replace change) of the log."""
    identity: str | None = None
    loaded: dict[str, dict] = {}
    start = max((i for i, s in enumerate(sources) if s.get("baseline")), default=None)
    if start is None:
        return None, {}
    identity = sources[start].get("baselineIdentity")
    for s in sources[start:]:
        for c in s.get("changes") or []:
            if not isinstance(c, dict) or not isinstance(c.get("scope"), str):
                continue
            if c.get("action") == "remove":
                loaded.pop(c["scope"], None)
            else:
                loaded[c["scope"]] = c
    return identity, loaded


class AgentInstructions:
    name = "agent-instructions"
    Config = InstructionsConfig

    def apply(self, ctx: Any, config: InstructionsConfig) -> None:
        agent = ctx.driver
        ws = Workspace(agent.config.cwd or os.getcwd(), config)
        state: dict[str, Any] = {"started": False, "loaded": {}, "touched": [], "pending": None, "generation": 0}
        if config.maxBytes <= 0:
            return
        reported: set[tuple[str, str]] = set()

        def report() -> None:
            """Record each newly skipped file once (``agent-instructions/skipped``, ignorable: dsh skips it)."""
            for skip in ws.skipped:
                shown = skip.path
                if shown == os.fspath(ws.home / "AGENTS.md"):
                    shown = ws.home_display
                elif wsread.inside(os.fspath(ws.root), shown):
                    shown = os.path.relpath(shown, ws.root)
                if (shown, skip.reason) in reported:
                    continue
                reported.add((shown, skip.reason))
                ctx.append(SKIPPED, {"path": shown, "reason": skip.reason})
            ws.skipped.clear()

        def first_entry() -> dict | None:
            """The message the first step enters: a baseline, or the offline changes of a resumed baseline."""
            identity, loaded = fold_loaded(_visible_sources(agent.session))
            if identity is not None and identity == ws.identity():
                state["loaded"] = {scope: (c.get("path"), c.get("digest")) for scope, c in loaded.items()}
                changes = diff(extra_dirs=ws.baseline_dirs(), include_home=True)
                message, kept = changes_message(ws, changes)
                remember(kept)
                return message
            superseding = identity is not None or _ever_logged(agent.session)
            sources = ws.baseline_sources()
            removed = []
            if identity is not None:
                current = {s.scope for s in sources}
                removed = [Source(scope, c.get("path") or "", "", "", "") for scope, c in loaded.items()
                           if scope not in current]
            message, loaded_sources = baseline_message(ws, sources, superseding=superseding, removed=removed)
            state["loaded"] = {s.scope: (s.path, s.digest) for s in loaded_sources}
            return message

        def diff(extra_dirs: list[str], include_home: bool = False) -> list[tuple[str, Source]]:
            loaded = state["loaded"]
            changes: list[tuple[str, Source]] = []
            seen: set[str] = set()
            for scope, (path, digest) in list(loaded.items()):  # re-probe every loaded scope
                seen.add(scope)
                now = ws.probe_scope(scope)
                if now is None:
                    rel_dir, _, name = scope.partition("\0")
                    changes.append(("remove", Source(scope, path or name, rel_dir, "", "")))
                elif now.digest != digest:
                    changes.append(("replace", now))
            found: list[Source] = []
            if include_home:
                home = ws.home_source()
                if home is not None:
                    found.append(home)
            for d in extra_dirs:
                found.extend(ws.probe(d))
            for s in found:
                if s.scope not in seen:
                    seen.add(s.scope)
                    changes.append(("set", s))
            return changes

        def remember(kept: list[tuple[str, Source]]) -> None:
            for action, s in kept:
                if action == "remove":
                    state["loaded"].pop(s.scope, None)
                else:
                    state["loaded"][s.scope] = (s.path, s.digest)

        def after_compaction(extra: list[Source] | None = None) -> dict | None:
            """A compaction that shadowed the baseline: the loaded files again (and ``extra`` deeper scopes
            just found), as one baseline."""
            identity, _ = fold_loaded(_visible_sources(agent.session))
            if identity is not None:
                return None
            baseline = ws.baseline_sources()
            in_baseline = {s.scope for s in baseline}
            dynamic = [s for scope in state["loaded"] if scope not in in_baseline
                       for s in [ws.probe_scope(scope)] if s is not None]
            dynamic += [s for s in extra or [] if s.scope not in in_baseline and s.scope not in state["loaded"]]
            message, kept = readd_message(ws, baseline, dynamic)
            state["loaded"] = {s.scope: (s.path, s.digest) for s in kept}
            return message

        def _is_baseline(message: Any) -> bool:
            src = message.get("source") if isinstance(message, dict) else None
            return isinstance(src, dict) and src.get("kind") == KIND and src.get("baseline") is True

        async def pre_step(payload: dict, nxt: Any) -> Any:
            decision = await nxt()
            generation = agent.session.replace_generation
            first = not state["started"]
            if first:
                state["started"] = True
                message = first_entry()
            elif generation != state["generation"]:
                if any(_is_baseline(m) for m in payload.get("messages") or []):
                    state["generation"] = generation  # the step enters the restored baseline already
                    return decision
                message = after_compaction()
            else:
                return decision
            report()
            state["generation"] = generation
            if message is None:
                return decision
            # step 1: right after the claimed prompt; after a compaction: in this step whatever it enters
            if isinstance(decision, dict) and decision.get("kind") == "enter" \
                    and (decision.get("messages") or not first):
                messages = list(decision.get("messages") or [])
                at = min(len(payload.get("messages") or []), len(messages))
                messages.insert(at, message)
                return {**decision, "messages": messages}
            agent.inbox.append(NEXT_STEP, message)  # a rejected or empty first step: it waits for the next
            return decision

        def on_result(payload: dict) -> None:
            ex, result = payload.get("exec"), payload.get("result") or {}
            name = (getattr(ex, "call", None) or {}).get("name")
            if name not in TOUCH_TOOLS or result.get("isError"):
                return
            args = getattr(ex, "args", None)
            path = args.get("file_path") if isinstance(args, dict) else None
            if isinstance(path, str) and path.strip():
                state["touched"].append(path)

        def on_step_end(payload: dict) -> None:
            touched, state["touched"] = state["touched"], []
            signal = payload.get("signal")
            if not touched or not state["started"] or (signal is not None and signal.aborted):
                return
            dirs: list[str] = []
            for path in touched:
                for d in ws.dirs_to(path):
                    if d not in dirs:
                        dirs.append(d)
            changes = diff(extra_dirs=dirs)
            report()
            if not changes:
                return
            pending = state["pending"]
            if agent.session.replace_generation != state["generation"] and \
                    fold_loaded(_visible_sources(agent.session))[0] is None and _ever_logged(agent.session):
                # the baseline was shadowed since it entered: the restored baseline carries these scopes too
                message = after_compaction([s for a, s in changes if a == "set"])
                if message is not None:
                    if pending is not None and agent.inbox.find(pending["id"]) is not None:
                        agent.inbox.replace(pending["id"], message)
                    else:
                        agent.inbox.append(NEXT_STEP, message)
                    state["pending"] = message
                    return
            if pending is not None and agent.inbox.find(pending["id"]) is not None:
                # a still-pending message is replaced by one carrying its changes and the new ones
                merged = {c["scope"]: c for c in pending["source"]["changes"]}
                for action, s in changes:
                    merged[s.scope] = _change(action, s)
                changes = _rebuild(ws, merged, changes)
            message, kept = changes_message(ws, changes)
            if message is None:
                return
            remember(kept)
            if pending is not None and agent.inbox.find(pending["id"]) is not None:
                agent.inbox.replace(pending["id"], message)
            else:
                agent.inbox.append(NEXT_STEP, message)
            state["pending"] = message

        ctx.on("agent/pre-step", pre_step)
        ctx.on("tools/result", on_result)
        ctx.on("agent/step-end", on_step_end)


def _rebuild(ws: Workspace, merged: dict[str, dict], latest: list[tuple[str, Source]]) -> list[tuple[str, Source]]:
    """The changes of a replaced pending message plus the new ones, as sources (current file contents)."""
    by_scope = {s.scope: (a, s) for a, s in latest}
    out = []
    for scope, c in merged.items():
        if scope in by_scope:
            out.append(by_scope[scope])
            continue
        now = ws.probe_scope(scope)
        if c.get("action") == "remove" or now is None:
            rel_dir, _, name = scope.partition("\0")
            out.append(("remove", Source(scope, c.get("path") or name, rel_dir, "", "")))
        else:
            out.append((c["action"], now))
    return out


AGENT_INSTRUCTIONS = AgentInstructions()
