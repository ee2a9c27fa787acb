"""System prompt assembly and the runtime-context snapshot
(docs/runtime.md, "System prompt and runtime context").

The system prompt is ordered sections joined by blank lines, with strict ``{{variable}}``
interpolation at render time. Dynamic facts (cwd, platform, date, git branch, ...) are *context
sections*: they are never put in the system prompt but rendered into one runtime-context
``user/message`` that is appended only when its text changes (cache friendly, append-only).
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_tui.session.errors import DshError
from dsh_tui.tools import wsread
from dsh_tui.tools.base import ToolSchema

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent

HARNESS_IDENTITY = "You are an AI agent powered by DeepSeek Harness."
SNAPSHOT_PLUGIN = "@deepseek-ai/dsh-system-prompt"
SNAPSHOT_PREFIX = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n"
CLEARED_TEXT = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."

# The ACP deployment persona of dsh (order 0), minus its sandbox sentence (dsh-tui has no OS sandbox).
DEFAULT_PERSONA = (
    "You are a coding assistant powered by the {{model}} model. Your working directory is {{cwd}}.\n\n"
    "Verify your work by running the code or tests. Keep answers brief and factual."
)
# Per-tool guidance sections (orders 100-199) as dsh renders them for its built-in tools.
TOOL_GUIDANCE: dict[str, tuple[int, str]] = {
    "read": (110, "Use the read tool — not shell commands like cat — to inspect text files. Results include line "
                  "numbers. Use offset and limit to continue reading large files."),
    "write": (111, "Use the write tool to create files or completely replace file contents. Existing files are "
                   "overwritten, so read an existing file first (the default fs-observation-policy requires it) "
                   "and prefer edit for targeted changes."),
    "edit": (112, "Use the edit tool for targeted changes to existing UTF-8 text files. It replaces literal "
                  "old_string with new_string; by default old_string must appear exactly once. If old_string "
                  "appears multiple times, provide a more specific old_string or set replace_all to true. Read "
                  "the file first (the default fs-observation-policy requires it), unless you just created or "
                  "edited it in this session."),
    "bash": (113, "Check the [exit code: N] marker on every bash result; investigate failures before moving on."),
}

_GROUP = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class PromptRenderError(DshError):
    pass


@dataclass
class Section:
    name: str
    order: float  # sections sort by it; a plugin's may fall between two built-in ones (114.5)
    text: str
    complete: bool = False


@dataclass
class Assembly:
    sections: list[Section] = field(default_factory=list)
    tools: list[ToolSchema] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    contexts: list[Section] = field(default_factory=list)


def interpolate(text: str, variables: dict[str, Any], where: str) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1).strip()
        if not _NAME.match(name):
            raise PromptRenderError(f'malformed prompt variable "{m.group(0)}" ({where})')
        value = variables.get(name)
        if value is None or value == "":
            raise PromptRenderError(f'prompt variable "{m.group(0)}" has no value for this assembly ({where})')
        return str(value)

    if "{{" in _GROUP.sub("", text):
        raise PromptRenderError(f"malformed prompt variable group ({where})")
    return _GROUP.sub(sub, text)


def render_sections(sections: list[Section], variables: dict[str, Any], kind: str = "section") -> list[tuple[str, str]]:
    ordered = sorted(sections, key=lambda s: s.order)
    complete = [s for s in ordered if s.complete]
    if len(complete) == 1:
        ordered = complete
    out = []
    for s in ordered:
        text = interpolate(s.text, variables, f'{kind} "{s.name}"')
        if text.strip():
            out.append((s.name, text))
    return out


def render_system(assembly: Assembly) -> str:
    return "\n\n".join(text for _, text in render_sections(assembly.sections, assembly.variables))


_HEAD_CACHE: dict[str, Path | None] = {}
GIT_FILE_MAX_BYTES = 4096  # a .git file or HEAD is one short line


def _head_file(cwd: Path) -> Path | None:
    """Where the HEAD of the repository containing ``cwd`` lives (looked up once per directory)."""
    key = str(cwd)
    if key in _HEAD_CACHE:
        return _HEAD_CACHE[key]
    found: Path | None = None
    try:
        here = cwd.resolve()
        for d in (here, *here.parents):
            git = d / ".git"
            if git.is_file():
                got = wsread.read_text(git, None, GIT_FILE_MAX_BYTES)  # never /proc, /sys, /dev or a FIFO
                line = got.strip() if isinstance(got, str) else ""
                if line.startswith("gitdir:"):
                    git = (d / line[7:].strip()).resolve()
            if (git / "HEAD").is_file():
                found = git / "HEAD"
                break
    except OSError:
        found = None
    _HEAD_CACHE[key] = found
    return found


def git_branch(cwd: Path) -> str | None:
    """The checked-out branch of the repository containing ``cwd`` (reads .git/HEAD; no subprocess)."""
    head = _head_file(cwd)
    if head is None:
        return None
    got = wsread.read_text(head, None, GIT_FILE_MAX_BYTES)  # a HEAD -> /proc/self/environ is not read
    if not isinstance(got, str):
        return None
    ref = got.strip()
    if ref.startswith("ref: refs/heads/"):
        return ref[len("ref: refs/heads/") :]
    return f"(detached at {ref[:12]})" if ref else None


PRESET_TEXTS = {
    "read-only": "Permission preset: read-only. Reading files inside the workspace needs no approval; file "
                 "changes, shell commands and anything outside the workspace ask the user first.",
    "workspace-write": "Permission preset: workspace-write. File changes inside the workspace need no approval; "
                       "shell commands and anything outside the workspace ask the user first.",
    "full-access": "Permission preset: full-access. No tool call asks for approval.",
}
# the same where bash runs its commands in the OS sandbox (docs/sandbox.md): they do not ask
SANDBOXED_PRESET_TEXTS = {
    "read-only": "Permission preset: read-only. Reading files inside the workspace needs no approval; shell commands "
                 "run without approval in a read-only sandbox without network access; file changes and anything "
                 "outside the workspace ask the user first.",
    "workspace-write": "Permission preset: workspace-write. File changes inside the workspace need no approval; shell "
                       "commands run without approval in a sandbox that may write only the workspace and a "
                       "temporary directory, without network access; anything else asks the user first.",
}


def default_context_sections(cwd: Path, now_ms: int, preset: str | None = None, *,
                             sandboxed: bool = False) -> list[Section]:
    date = _dt.datetime.fromtimestamp(now_ms / 1000).date().isoformat()  # local date
    out = [
        Section("environment:cwd", 0, f"Working directory: {cwd}"),
        Section("environment:platform", 1, f"Platform: {sys.platform}"),
        Section("environment:date", 2, f"Today's date: {date}"),
    ]
    branch = git_branch(cwd)
    if branch:
        out.append(Section("environment:git", 3, f"Git branch: {branch}"))
    if preset in PRESET_TEXTS:
        text = SANDBOXED_PRESET_TEXTS.get(preset, PRESET_TEXTS[preset]) if sandboxed else PRESET_TEXTS[preset]
        out.append(Section("permission:preset", 4, text))
    return out


def _single_text(message: dict) -> str | None:
    content = message.get("content")
    if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
        return content[0].get("text")
    return None


def _owned(message: Any) -> bool:
    src = message.get("source") if isinstance(message, dict) else None
    # format v4 stores the same producer as kind "runtime-context" (session.log.v4_source)
    return isinstance(src, dict) and ((src.get("kind") == "plugin" and src.get("plugin") == SNAPSHOT_PLUGIN)
                                      or src.get("kind") == "runtime-context")


class RuntimeContextTracker:
    """Incrementally tracks the retained snapshot on the surface without rescanning the log."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self._checked = 0
        self.ever_logged = False
        self._retained: dict | None = None  # the last owned message still on the surface

    def _rescan(self) -> None:
        self._retained = None
        for m in reversed(self.session.messages_view()):
            if _owned(m):
                self._retained = m
                break

    def _update(self) -> None:
        events = self.session.events
        n = len(events)
        replaced = False
        for i in range(self._checked, n):
            ev = events[i]
            if ev["type"] == "user/message" and _owned(ev["data"]):
                self.ever_logged = True
                self._retained = ev["data"]
            op = ev.get("surfaceOp")
            if op is not None and op != "append":
                replaced = True
        if replaced:
            self._rescan()
        self._checked = n

    def project(self, sections: list[tuple[str, str]]) -> dict | None:
        """The message to enter at this step, or None when the retained snapshot is current."""
        self._update()
        retained = self._retained
        retained_text = _single_text(retained) if retained is not None else None
        if sections:
            text = SNAPSHOT_PREFIX + "\n\n".join(t for _, t in sections)
            if retained_text == text:
                return None
            return {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": text}],
                    "source": {"kind": "plugin", "plugin": SNAPSHOT_PLUGIN, "form": "snapshot",
                               "sections": [{"name": n, "text": t} for n, t in sections]}}
        if not self.ever_logged or retained_text == CLEARED_TEXT:
            return None
        return {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": CLEARED_TEXT}],
                "source": {"kind": "plugin", "plugin": SNAPSHOT_PLUGIN}}


def default_assembly(agent: Agent) -> Assembly:
    """The system prompt and context sections of ``agent``'s config (``system-prompt/assemble``'s default)."""
    cfg = agent.config
    sections = []
    if cfg.include_harness_identity:
        sections.append(Section("harness:identity", -100, HARNESS_IDENTITY))
    if cfg.persona:
        sections.append(Section("deployment:persona", 0, cfg.persona))
    if cfg.tool_guidance:
        for name in agent.tools.tools:
            guide = TOOL_GUIDANCE.get(name)
            if guide is not None:
                sections.append(Section(f"tool:{name}", guide[0], guide[1]))
    for s in cfg.system_sections:
        sections.append(Section(s["name"], int(s.get("order", 0)), s["text"], bool(s.get("complete"))))
    if cfg.runtime_context:
        if cfg.context_sections is None:
            bash = agent.tools.tools.get("bash")
            contexts = default_context_sections(Path(cfg.resolved_cwd()), agent.clock(), cfg.preset,
                                                           sandboxed=bool(getattr(bash, "sandboxed", False)))
        else:
            contexts = [Section(c["name"], i, c["text"]) for i, c in enumerate(cfg.context_sections)]
    else:
        contexts = []
    variables = {"provider": cfg.provider, "model": cfg.model, "cwd": str(cfg.cwd)}
    return Assembly(sections=sections, tools=agent.tools.schemas(), variables=variables,
                               contexts=contexts)
