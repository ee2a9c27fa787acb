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

Over 500 lines for a reason: one plugin whose parts (discovery, dsh's exact texts and byte budget, the
resume fold) are used only by it and only make sense together.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from dsh_tui.runtime.inbox import NEXT_STEP
from dsh_tui.session.rows import events_of
from dsh_tui.tools import wsread

KIND = "agent-instructions"
SKIPPED = "agent-instructions/skipped"  # {path, reason}: a file found but not read (tools/wsread.py)
INTRO = ("The following workspace instructions may be relevant to your work. Use them as guidance when applicable. "
         "More specific instructions take precedence over broader ones. They do not override system, developer, "
         "or direct user instructions.")
SUPERSEDE = "This complete workspace instruction baseline replaces all earlier workspace instruction baselines."
NONE_ACTIVE = "No workspace instructions are currently active."
SHORT_INTRO = "Workspace instructions were omitted or truncated to fit the configured byte budget."
SET_TEXT = ("These instructions apply to work under `{dir}`. Use them as guidance when relevant; more specific "
            "instructions take precedence. They do not override system, developer, or direct user instructions.")
REPLACE_TEXT = ("This file changed after it was loaded. Use the following content instead of the previously loaded "
                "instructions from this file.")
REMOVE_TEXT = "The previously loaded instructions from this file no longer apply."
HOME_SCOPE = "user-global"
TOUCH_TOOLS = ("read", "write", "edit")


class InstructionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    maxBytes: int = 65536  # noqa: N815 - dsh's config keys
    maxSourceBytes: int = 1048576  # noqa: N815
    projectRootMarkers: list[str] = [".git"]  # noqa: N815
    instructionFileCandidates: list[str] = ["AGENTS.md", "CLAUDE.md"]  # noqa: N815
    localInstructionFileCandidates: list[str] = ["AGENTS.local.md", "CLAUDE.local.md"]  # noqa: N815
    dshHome: str | None = None  # noqa: N815 - default: $DSH_HOME if non-blank, else ~/.dsh


@dataclass
class Source:
    """One instruction file: its scope (``<dir>\\0<name>``), display path, content and SHA-1."""

    scope: str
    path: str
    dir: str  # what a "set" names: the directory relative to the project root, or "user-global"
    content: str
    digest: str


def _valid(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()  # noqa: S324 - dsh's digest, not security


def escape(text: str) -> str:
    return text.replace("</system-reminder>", "<\\/system-reminder>")


def frame(body: str) -> str:
    return "<system-reminder>\n" + escape(body) + "\n</system-reminder>"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


class Workspace:
    """Where instructions come from for one cwd: the home file, the project root and the dirs to probe."""

    def __init__(self, cwd: str | os.PathLike, config: InstructionsConfig,
                 env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.config = config
        self.cwd = Path(os.path.abspath(cwd))
        home = config.dshHome if config.dshHome and config.dshHome.strip() else None
        dsh_home = env.get("DSH_HOME")
        if home is not None:
            self.home, self.home_display = Path(home), home.rstrip("/") + "/AGENTS.md"
        elif dsh_home and dsh_home.strip():
            self.home, self.home_display = Path(dsh_home), "$DSH_HOME/AGENTS.md"
        else:
            self.home, self.home_display = Path(os.path.expanduser("~")) / ".dsh", "~/.dsh/AGENTS.md"
        self.root = self._find_root()
        self.base = [n for n in config.instructionFileCandidates if _valid(n)]
        self.local = [n for n in config.localInstructionFileCandidates if _valid(n)]
        self.skipped: list[wsread.Skip] = []  # files found but not read (see dsh_tui.tools.wsread)

    def _find_root(self) -> Path:
        markers = [m for m in self.config.projectRootMarkers if m]
        cur = self.cwd
        while True:
            if any(os.path.lexists(cur / m) for m in markers):
                return cur
            if cur.parent == cur:
                return self.cwd
            cur = cur.parent

    def identity(self) -> str:
        rel = os.path.relpath(self.root, self.cwd)
        c = self.config
        return json.dumps({"projectRoot": "" if rel == "." else rel, "projectRootMarkers": c.projectRootMarkers,
                           "maxBytes": c.maxBytes, "maxSourceBytes": c.maxSourceBytes,
                           "instructionFileCandidates": c.instructionFileCandidates,
                           "localInstructionFileCandidates": c.localInstructionFileCandidates},
                          separators=(",", ":"), ensure_ascii=False)

    def baseline_dirs(self) -> list[str]:
        """The directories from the project root down to the cwd, root-relative (``.`` for the root)."""
        rel = os.path.relpath(self.cwd, self.root)
        if rel == ".":
            return ["."]
        parts = Path(rel).parts
        return ["."] + ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]

    def dirs_to(self, file_path: str) -> list[str]:
        """The directories strictly below the cwd down to ``file_path``'s (root-relative); none outside it."""
        target = Path(os.path.abspath(self.cwd / file_path.strip())).parent
        try:
            below = target.relative_to(self.cwd)
        except ValueError:
            return []
        if not below.parts:
            return []
        base = os.path.relpath(self.cwd, self.root)
        prefix = [] if base == "." else list(Path(base).parts)
        return ["/".join(prefix + list(below.parts[:i])) for i in range(1, len(below.parts) + 1)]

    def _read(self, path: Path, workspace: Path | None) -> str | None:
        """The file's text, or None: missing, or skipped (a symlink out of the workspace, a file under
        /proc, /sys or /dev, not a regular file, too big; recorded in ``self.skipped``)."""
        got = wsread.read_text(path, workspace, self.config.maxSourceBytes)
        if isinstance(got, wsread.Skip):
            if got not in self.skipped:
                self.skipped.append(got)
            return None
        return got

    def home_source(self) -> Source | None:
        content = self._read(self.home / "AGENTS.md", None)  # the user's own file: wherever it points
        if content is None:
            return None
        return Source(f"{HOME_SCOPE}\0AGENTS.md", self.home_display, HOME_SCOPE, content, sha1(content))

    def probe(self, rel_dir: str) -> list[Source]:
        """The kept instruction files of one directory (base candidates, then local ones, de-duplicated)."""
        where = self.root if rel_dir == "." else self.root / rel_dir
        out: list[Source] = []
        seen: set[str] = set()
        for name in self.base + self.local:
            content = self._read(where / name, self.root)
            if content is None:
                continue
            key = sha1(content.strip())
            if key in seen:
                continue
            seen.add(key)
            path = name if rel_dir == "." else f"{rel_dir}/{name}"
            out.append(Source(f"{rel_dir}\0{name}", path, os.path.dirname(path) or ".", content, sha1(content)))
        return out

    def probe_scope(self, scope: str) -> Source | None:
        rel_dir, _, name = scope.partition("\0")
        if rel_dir == HOME_SCOPE:
            return self.home_source()
        return next((s for s in self.probe(rel_dir) if s.scope == scope), None)

    def baseline_sources(self) -> list[Source]:
        out = []
        home = self.home_source()
        if home is not None:
            out.append(home)
        for d in self.baseline_dirs():
            out.extend(self.probe(d))
        return out


# -------------------------------------------------------------------------------------------------
# Rendering


def _fit(blocks_for: Any, max_bytes: int) -> str | None:
    text = frame("\n\n".join(b for b in blocks_for if b))
    return text if _size(text) <= max_bytes else None


def _marker(max_bytes: int, omitted: list[str], truncated: tuple[str, int, int] | None) -> str:
    clauses = []
    if omitted:
        clauses.append("omitted " + ", ".join(omitted))
    if truncated is not None:
        clauses.append(f"truncated {truncated[0]} from {truncated[1]} to {truncated[2]} bytes")
    return f"Workspace instruction budget {max_bytes} bytes: " + "; ".join(clauses)


def _prefix(text: str, n: int) -> str:
    return text.encode("utf-8")[:max(0, n)].decode("utf-8", "ignore")


def render(sections: list[tuple[Source, str, str | None]], intro: str, max_bytes: int) -> tuple[str, list[Source]]:
    """The framed message of ``sections`` (``(source, head, content)``, broad to specific) under the
    byte budget, and the sources that survived (a file cut to 0 bytes is not loaded)."""
    if max_bytes <= 0:
        return "", []

    blocks = [h if c is None else h + "\n\n" + c for _, h, c in sections]
    text = _fit([intro] + blocks, max_bytes)
    if text is not None:
        return text, [s for s, _, _ in sections]
    for k in range(1, len(sections)):  # drop whole files from the broad end
        omitted = [s.path for s, _, _ in sections[:k]]
        text = _fit([_marker(max_bytes, omitted, None), intro] + blocks[k:], max_bytes)
        if text is not None:
            return text, [s for s, _, _ in sections[k:]]
    if not sections:
        return "", []
    omitted = [s.path for s, _, _ in sections[:-1]]
    last, head, content = sections[-1]
    if content is None:  # a removal cannot be cut
        text = frame(_marker(max_bytes, [s.path for s, _, _ in sections], None))
        return (text if _size(text) <= max_bytes else ""), []
    orig = _size(content)
    for this_intro in (intro, SHORT_INTRO):
        kept_bytes = orig
        # the marker's length depends on the kept size: settle it by iterating
        for _ in range(8):
            marker = _marker(max_bytes, omitted, (last.path, orig, kept_bytes))
            fixed = _size(frame("\n\n".join(b for b in [marker, this_intro, head + "\n\n"] if b)))
            room = max_bytes - fixed
            cut = _prefix(content, room)
            if _size(cut) == kept_bytes:
                break
            kept_bytes = _size(cut)
        marker = _marker(max_bytes, omitted, (last.path, orig, kept_bytes))
        if kept_bytes > 0:
            text = _fit([marker, this_intro, head + "\n\n" + _prefix(content, kept_bytes)], max_bytes)
            if text is not None:
                return text, [last]
    marker = _marker(max_bytes, [s.path for s, _, _ in sections], None)
    text = frame(marker)
    return (text if _size(text) <= max_bytes else ""), []


def baseline_sections(sources: list[Source]) -> list[tuple[Source, str, str | None]]:
    return [(s, f"Instructions from: {s.path}", s.content) for s in sources]


def change_sections(changes: list[tuple[str, Source]]) -> list[tuple[Source, str, str | None]]:
    """Each change's section: its source, heading and content (None for a removal)."""
    out: list[tuple[Source, str, str | None]] = []
    for action, s in changes:
        if action == "set":
            out.append((s, f"Additional instructions from: {s.path}\n\n" + SET_TEXT.format(dir=s.dir), s.content))
        elif action == "replace":
            out.append((s, f"Updated instructions from: {s.path}\n\n" + REPLACE_TEXT, s.content))
        else:
            out.append((s, f"Instructions removed: {s.path}\n\n" + REMOVE_TEXT, None))
    return out


def _change(action: str, s: Source) -> dict:
    c = {"action": action, "scope": s.scope, "path": s.path}
    if action != "remove":
        c["digest"] = s.digest
    return c


def _message(text: str, source: dict) -> dict:
    return {"content": [{"type": "text", "text": text}], "source": source, "role": "user", "id": str(uuid.uuid4())}


def baseline_message(ws: Workspace, sources: list[Source], *, superseding: bool = False,
                     removed: Sequence[Source] = ()) -> tuple[dict | None, list[Source]]:
    """The baseline ``user/message`` (None when there is nothing to say) and the sources it loads."""
    max_bytes = ws.config.maxBytes
    if max_bytes <= 0:
        return None, []
    if not sources and not superseding:
        return None, []
    intro = f"{SUPERSEDE} {INTRO}" if superseding else INTRO
    if sources:
        text, kept = render(baseline_sections(sources), intro, max_bytes)
    else:
        text, kept = frame(f"{SUPERSEDE} {NONE_ACTIVE}"), []
    if not text:
        return None, []
    changes = [_change("set", s) for s in kept] + [_change("remove", s) for s in removed]
    source = {"kind": KIND, "form": "instructions", "baseline": True, "baselineIdentity": ws.identity(),
              "changes": changes}
    return _message(text, source), kept


def readd_message(ws: Workspace, baseline: list[Source], dynamic: list[Source]) -> tuple[dict | None, list[Source]]:
    """After a compaction shadowed the baseline: one ``baseline: true`` message whose first block is the
    baseline (the baseline files) and whose second is the loaded deeper scopes ("Additional instructions"),
    as dsh composes it (its agent-instructions recording)."""
    if ws.config.maxBytes <= 0 or not (baseline or dynamic):
        return None, []
    blocks, kept = [], []
    if baseline:
        sections: list[tuple[Source, str, str | None]] = list(baseline_sections(baseline))
        text, kept_baseline = render(sections, INTRO, ws.config.maxBytes)
        if text:
            blocks.append(text)
            kept += kept_baseline
    if dynamic:
        text, kept_dynamic = render(change_sections([("set", s) for s in dynamic]), "", ws.config.maxBytes)
        if text:
            blocks.append(text)
            kept += kept_dynamic
    if not blocks:
        return None, []
    source = {"kind": KIND, "form": "instructions", "baseline": True, "baselineIdentity": ws.identity(),
              "changes": [_change("set", s) for s in kept]}
    message = _message(blocks[0], source)
    message["content"] += [{"type": "text", "text": b} for b in blocks[1:]]
    return message, kept


def changes_message(ws: Workspace, changes: list[tuple[str, Source]]) -> tuple[dict | None, list[tuple[str, Source]]]:
    """One dynamic message for ``changes`` (no intro) and the changes it carries."""
    if not changes or ws.config.maxBytes <= 0:
        return None, []
    text, kept_sources = render(change_sections(changes), "", ws.config.maxBytes)
    if not text:
        return None, []
    kept_ids = {id(s) for s in kept_sources}
    kept = [(a, s) for a, s in changes if id(s) in kept_ids or a == "remove"]
    source = {"kind": KIND, "form": "instructions", "changes": [_change(a, s) for a, s in kept]}
    return _message(text, source), kept


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
