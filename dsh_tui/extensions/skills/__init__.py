"""Skills (dsh ``skill``, ``skill-filesystem``, ``tool-skill``; docs/extensions.md, "Skills").

A skill is a ``SKILL.md`` (or ``<x>.md``) with a YAML front matter ``name`` and ``description``, found one
level below a skill root. Roots and their rank (the lower rank wins a name):

100 ``<projectRoot>/.dsh/skills``, 200 ``<projectRoot>/.agents/skills``, 300 ``customSkillDirs`` (plugin
config), 400 ``<dshHome>/skills`` (not ``.system``), 500 ``<$DSH_AGENTS_HOME|~/.agents>/skills``,
600 ``$DSH_BUNDLED_SKILL_DIR``. The project root is the nearest ancestor of the cwd holding ``.git``.

Built-in plugins: ``skills`` (the catalog message at each accepted pre-step and the user's ``/name``
invocations) and ``skill-tool`` (the model's ``skill`` tool). With ``skill-tool`` disabled the catalog is
empty (dsh: the catalog lists only what the agent can load).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

from dsh_tui.session.errors import DshError

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
INVOCATION = re.compile(r"(?<!\S)/([a-z0-9]+(?:-[a-z0-9]+)*)(?!\S)")
CATALOG_DESCRIPTION_MAX = 500

TOOL_DESCRIPTION = ("Load the full instructions for a skill. Call it before acting on a task that names or clearly "
                    "matches a skill in the session skill catalog.")  # dsh 0.2's text
TOOL_PARAMETERS = {"type": "object", "properties": {"name": {
    "type": "string", "description": "The exact skill name from the available skills list."}}, "required": ["name"]}

CATALOG_INTRO = ("A skill is a reusable set of task-specific instructions. The following skills are available in "
                 "this session:")
CATALOG_USE = ("If the user names a skill, or the task clearly matches a skill's description, call the `skill` "
               "tool with the exact skill name before taking task actions. Load all applicable skills, then "
               "follow their full instructions. This catalog contains summaries only; do not infer or follow a "
               "skill's instructions until it has been loaded.")
USER_MAY = ("A user may also invoke a skill directly; its <skill_content> block then appears in this "
            "conversation. Follow it, and do not call the `skill` tool again for that skill.")
UPDATE_INTRO = ("The available skill catalog changed. This complete catalog replaces every earlier "
                "available-skills list in this session:")
UPDATE_USE = ("Use only names in this replacement catalog. If the user names a listed skill, or the task "
              "clearly matches its description, call the `skill` tool with the exact name before acting.")
UPDATE_EMPTY = ("No skills are currently available through the `skill` tool. Do not use names from earlier "
                "skill catalogs.")
UPDATE_EMPTY_USER = ("A user may still invoke a skill directly; its <skill_content> block then appears in this "
                     "conversation. Follow it, and do not call the `skill` tool for it.")

_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False,
               "0": False}
_LEGACY_KEYS = ("disableModelInvocation", "modelInvocable", "userInvocable")


@dataclass
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md (or <x>.md)
    base: Path  # the resource base directory
    source: str  # "project-dsh", "project-agents", "custom", "user-dsh", "user-agents", "bundled"
    rank: int
    model_invocable: bool = True
    user_invocable: bool = True
    workspace: Path | None = None  # a project skill may not point out of it (dsh_tui.tools.wsread)

    def body(self) -> str:
        """The instructions, as the file is now (a skill edited mid-session is loaded as it is now; an
        unchanged file is not parsed again)."""
        return read_skill_file(self.path, self.workspace)[1]


class SkillFormatError(DshError, ValueError):
    pass


class SkillSkipped(SkillFormatError):
    """A skill file not read or not parsed for the user's safety (a symlink out of the workspace, over
    ``SKILL_MAX_BYTES``, YAML nested deeper than ``YAML_MAX_DEPTH``): recorded as ``skills/skipped``."""


SKILL_MAX_BYTES = 1 << 20  # a SKILL.md bigger than this (a 1.5 GB sparse file, say) is never read
YAML_MAX_DEPTH = 64  # front matter nested deeper is refused before it is built (no RecursionError)
_CACHE_MAX = 4096
# real path -> ((size, mtime_ns, ctime_ns, inode, device), (front matter, body) or the error it gave)
_PARSED: dict[str, tuple[tuple[int, ...], Any]] = {}


def read_skill_file(path: Path, workspace: Path | None) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a skill file, parsed once while its size, times and inode stay the same.
    ``FileNotFoundError`` when it is gone, ``SkillSkipped`` / ``SkillFormatError`` otherwise."""
    from dsh_tui.tools import wsread

    found = wsread.check(path, workspace, SKILL_MAX_BYTES)
    if found is None:
        raise FileNotFoundError(str(path))
    if isinstance(found, wsread.Skip):
        raise SkillSkipped(found.reason)
    real, st = found
    key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    hit = _PARSED.get(real)
    if hit is not None and hit[0] == key:
        value = hit[1]
    else:
        raw = wsread.read(path, workspace, SKILL_MAX_BYTES)
        if raw is None:
            raise FileNotFoundError(str(path))
        if isinstance(raw, wsread.Skip):
            raise SkillSkipped(raw.reason)
        try:
            value = parse_skill_text(raw.decode("utf-8"))
        except UnicodeDecodeError:
            value = SkillFormatError("not UTF-8 text")
        except SkillFormatError as err:
            value = err
        if len(_PARSED) >= _CACHE_MAX:
            _PARSED.clear()
        _PARSED[real] = (key, value)
    if isinstance(value, Exception):
        raise value
    return value


def _check_depth(source: str) -> None:
    """Refuse YAML nested deeper than ``YAML_MAX_DEPTH`` from the parser's events (an iterative state
    machine), before PyYAML's recursive composer builds it."""
    import yaml

    depth = 0
    for event in yaml.parse(source, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > YAML_MAX_DEPTH:
                raise SkillSkipped(f"front matter nested deeper than {YAML_MAX_DEPTH} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _flag(meta: Mapping[str, Any], key: str, default: bool) -> bool:
    if key not in meta:
        return default
    value = meta[key]
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.strip().lower()]
    raise SkillFormatError(f"{key} must be a boolean")


def parse_skill_text(text: str) -> tuple[dict[str, Any], str]:
    """(front matter mapping, body) of a skill file; ``SkillFormatError`` when it has no valid front matter."""
    import yaml

    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise SkillFormatError("the first line must be ---")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r") == "---":
            break
    else:
        raise SkillFormatError("the front matter has no closing ---")
    source = "\n".join(line.rstrip("\r") for line in lines[1:i])
    try:
        _check_depth(source)
        meta = yaml.safe_load(source)
    except yaml.YAMLError as err:
        raise SkillFormatError(f"invalid YAML: {err}") from None
    except RecursionError:
        raise SkillSkipped("front matter too deeply nested") from None
    if not isinstance(meta, dict):
        raise SkillFormatError("the front matter must be a mapping")
    return meta, "\n".join(lines[i + 1:]).strip()


def load_skill(path: Path, base: Path, source: str, rank: int, workspace: Path | None = None) -> Skill:
    meta, _body = read_skill_file(path, workspace)
    name = meta.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise SkillFormatError("name must match ^[a-z0-9]+(-[a-z0-9]+)*$")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError("description is required")
    if "metadata" in meta and meta["metadata"] is not None and not isinstance(meta["metadata"], dict):
        raise SkillFormatError("metadata must be a mapping")
    if any(k in meta for k in _LEGACY_KEYS):
        raise SkillFormatError("legacy invocation keys are not accepted")
    model = not _flag(meta, "disable-model-invocation", False)
    user = _flag(meta, "user-invocable", True)
    return Skill(name, description, path, base, source, rank, model, user, workspace)


def project_root(cwd: Path) -> Path:
    here = Path(cwd).resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return here


def skill_roots(cwd: Path, custom_dirs: Iterable[str] = (), env: Mapping[str, str] | None = None
                ) -> list[tuple[int, str, Path]]:
    env = os.environ if env is None else env
    root = project_root(cwd)
    home = Path.home()
    dsh_home = Path(env["DSH_HOME"]) if env.get("DSH_HOME", "").strip() else home / ".dsh"
    agents_home = Path(env["DSH_AGENTS_HOME"]) if env.get("DSH_AGENTS_HOME", "").strip() else home / ".agents"
    roots = [(100, "project-dsh", root / ".dsh" / "skills"), (200, "project-agents", root / ".agents" / "skills")]
    roots += [(300, "custom", (Path(cwd) / Path(d).expanduser())) for d in custom_dirs]
    roots += [(400, "user-dsh", dsh_home / "skills"), (500, "user-agents", agents_home / "skills")]
    if env.get("DSH_BUNDLED_SKILL_DIR", "").strip():
        roots.append((600, "bundled", Path(env["DSH_BUNDLED_SKILL_DIR"])))
    return roots


def discover(cwd: Path, custom_dirs: Iterable[str] = (), env: Mapping[str, str] | None = None,
             roots: list[tuple[int, str, Path]] | None = None,
             skipped: list[tuple[str, str]] | None = None) -> list[Skill]:
    """Every valid skill that wins its name, sorted by name. Invalid files are skipped; ``skipped``
    receives ``(path, reason)`` of those skipped for safety (``SkillSkipped``). ``roots``: the result of
    ``skill_roots`` when the caller keeps it (it walks up to the project root)."""
    found: dict[str, Skill] = {}
    for rank, source, root in (roots if roots is not None else skill_roots(cwd, custom_dirs, env)):
        # a project skill root is <projectRoot>/.dsh/skills or .agents/skills: its files stay in the project
        workspace = root.parent.parent if source.startswith("project-") else None
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if source == "user-dsh" and entry.name == ".system":
                continue
            try:
                if entry.is_dir():
                    path, base = Path(entry.path) / "SKILL.md", Path(entry.path)
                    if not path.is_file():
                        continue
                elif entry.is_file() and entry.name.endswith(".md"):
                    path, base = Path(entry.path), Path(root)
                else:
                    continue
                skill = load_skill(path, base, source, rank, workspace)
            except SkillSkipped as err:
                if skipped is not None:
                    skipped.append((str(path), str(err)))
                continue
            except (OSError, UnicodeDecodeError, SkillFormatError):
                continue
            held = found.get(skill.name)
            if held is None or skill.rank < held.rank:
                found[skill.name] = skill
    return [found[n] for n in sorted(found)]


# -------------------------------------------------------------------------------------------------
# Model-visible texts


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def catalog_description(description: str) -> str:
    text = " ".join(description.split())
    if _utf16_len(text) <= CATALOG_DESCRIPTION_MAX:
        return text
    units = text.encode("utf-16-le")[: (CATALOG_DESCRIPTION_MAX - 3) * 2]
    return units.decode("utf-16-le", errors="ignore") + "..."


def _escape(text: str, quote: bool = False) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return text.replace('"', "&quot;") if quote else text.replace(">", "&gt;")


def catalog_entries(skills: Iterable[Skill]) -> list[dict[str, str]]:
    return [{"name": s.name, "description": catalog_description(s.description)} for s in skills if s.model_invocable]


def render_catalog(entries: list[dict[str, str]], update: bool = False) -> str:
    lines = ["<system-reminder>"]
    block = ["<available_skills>", *(f"- `{e['name']}`: {_escape(e['description'])}" for e in entries),
             "</available_skills>"]
    if not update:
        lines += [CATALOG_INTRO, "", *block, "", CATALOG_USE, USER_MAY]
    elif entries:
        lines += [UPDATE_INTRO, "", *block, "", UPDATE_USE, USER_MAY]
    else:
        lines += [UPDATE_INTRO, "", *block, "", UPDATE_EMPTY, UPDATE_EMPTY_USER]
    lines.append("</system-reminder>")
    return "\n".join(lines)


def render_content(name: str, base: Path | str, body: str) -> str:
    return (f'<skill_content name="{_escape(name, quote=True)}">\n<skill_resources>\n'
            f"Base directory for this skill: {_escape(str(base))}\n"
            "Resolve relative paths mentioned by this skill against the base directory before using them. "
            "Load referenced resources only as needed.\n</skill_resources>\n\n"
            f"<skill_instructions>\n{body}\n</skill_instructions>\n</skill_content>")


def invoked_names(text: str) -> list[str]:
    """``/name`` tokens in ``text`` (start or whitespace before, whitespace or end after), first seen first."""
    return list(dict.fromkeys(m.group(1) for m in INVOCATION.finditer(text)))


def _message(text: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": text}], "source": source}


# -------------------------------------------------------------------------------------------------
# The plugins


class SkillService:
    """What the ``skills`` plugin keeps on the agent (``agent.skills``): discovery and the catalog state."""

    def __init__(self, agent: Any, custom_dirs: Iterable[str] = ()) -> None:
        self.agent = agent
        self.custom_dirs = tuple(custom_dirs)
        self._roots_key: tuple | None = None
        self._roots: list[tuple[int, str, Path]] = []
        self._cursor = 0  # events looked at by _catalog_state
        self._ever = False  # a catalog was published in this session
        self._visible: list[dict] | None = None  # the newest visible catalog's entries
        self._skipped: list[tuple[str, str]] = []  # found by discover(), not yet recorded
        self._reported: set[tuple[str, str]] = set()

    def discover(self) -> list[Skill]:
        # the roots (a walk up to the project root and the home directories) are worked out once per cwd
        # and environment; the skill folders themselves are read at every step, as dsh does
        cwd = Path(self.agent.config.cwd)
        key = (cwd, os.environ.get("DSH_HOME"), os.environ.get("DSH_AGENTS_HOME"),
               os.environ.get("DSH_BUNDLED_SKILL_DIR"), os.environ.get("HOME"))
        if key != self._roots_key:
            self._roots_key, self._roots = key, skill_roots(cwd, self.custom_dirs)
        return discover(cwd, self.custom_dirs, roots=self._roots, skipped=self._skipped)

    def report_skipped(self) -> None:
        """Record each skill file newly skipped for safety once, as ``skills/skipped`` ``{path, reason}``
        (ignorable: dsh skips a type it does not know); the transcript shows it as a quiet row."""
        skipped, self._skipped = self._skipped, []
        cwd = str(self.agent.config.cwd)
        for path, reason in skipped:
            shown = os.path.relpath(path, cwd) if path.startswith(cwd.rstrip(os.sep) + os.sep) else path
            if (shown, reason) in self._reported:
                continue
            self._reported.add((shown, reason))
            self.agent.session.append("skills/skipped", {"path": shown, "reason": reason}, ignorable=True)

    def find(self, name: str) -> Skill | None:
        return next((s for s in self.discover() if s.name == name), None)

    def _catalog_state(self) -> tuple[list[dict] | None, bool]:
        """(entries of the newest visible catalog or None, whether any catalog was ever published).

        Incremental: only the events appended since the last call are looked at (a per-step rescan of the
        history made every step's cost grow with the session). A surface rewrite (compaction) may hide the
        catalog: then the visible messages are searched once again."""
        events = self.agent.session.events
        n = len(events)
        rewritten = False
        for i in range(self._cursor, n):
            e = events[i]
            op = e.get("surfaceOp")
            if op is not None and op != "append":
                rewritten = True
            if e["type"] == "user/message":
                src = e["data"].get("source")
                if isinstance(src, dict) and src.get("kind") == "skill-catalog":
                    self._ever = True
                    self._visible = list(src.get("entries") or [])
        self._cursor = n
        if rewritten:
            self._visible = None
            for m in reversed(self.agent.session.messages_view()):
                src = m.get("source") if isinstance(m, dict) else None
                if isinstance(src, dict) and src.get("kind") == "skill-catalog":
                    self._visible = list(src.get("entries") or [])
                    break
        return self._visible, self._ever

    def entering(self, claimed: list[dict]) -> list[dict]:
        """The catalog message (when it changed) and the user's ``/name`` invocations for this step."""
        skills = self.discover()
        self.report_skipped()
        out: list[dict] = []
        entries = catalog_entries(skills) if "skill" in self.agent.tools.tools else []
        visible, ever = self._catalog_state()
        if (visible is None and entries) or (visible is not None and visible != entries):
            source: dict[str, Any] = {"kind": "skill-catalog", "form": "catalog", "entries": entries}
            if ever:
                source["update"] = True
            out.append(_message(render_catalog(entries, update=ever), source))
        by_name = {s.name: s for s in skills}
        names: list[str] = []
        for m in claimed:
            src = m.get("source") if isinstance(m, dict) else None
            if not (isinstance(src, dict) and src.get("kind") == "user"):
                continue
            for block in m.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text":
                    names += invoked_names(str(block.get("text") or ""))
        for name in dict.fromkeys(names):
            skill = by_name.get(name)
            if skill is None or not skill.user_invocable:
                continue
            try:
                body = skill.body()
            except (OSError, UnicodeDecodeError, SkillFormatError):
                continue
            out.append(_message(render_content(skill.name, skill.base, body),
                                {"kind": "skill-invocation", "name": skill.name, "form": "instructions"}))
        return out


def apply_skills(ctx: BuiltinContext) -> None:
    agent = ctx.driver
    config = ctx.config if isinstance(ctx.config, Mapping) else {}
    dirs = config.get("customSkillDirs") or []
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise ValueError("customSkillDirs must be a list of directories")
    service = SkillService(agent, dirs)
    ctx.provide("skills", service)

    async def on_pre_step(payload: dict, next_: Any) -> Any:
        decision = await next_()
        if not isinstance(decision, dict) or decision.get("kind") != "enter":
            return decision
        messages = list(decision.get("messages") or [])
        if not messages and payload.get("step") == 1:
            return decision  # nothing claimed: the turn does not start
        extra = service.entering(list(payload.get("messages") or []))
        return {**decision, "messages": messages + extra} if extra else decision

    ctx.on("agent/pre-step", on_pre_step)


def skill_tool(agent: Any) -> Any:
    from dsh_tui.tools.base import ToolDefinition, ToolError

    async def execute(args: Any, _ctx: Any) -> Any:
        name = args.get("name") if isinstance(args, dict) else None
        if not isinstance(name, str) or not NAME.match(name):
            raise ToolError(f'invalid skill name "{name}"')
        service = getattr(agent, "skills", None) or SkillService(agent)
        skill = service.find(name)
        if skill is None:
            raise ToolError(f'skill "{name}" is unknown or no longer available')
        if not skill.model_invocable:
            raise ToolError(f'skill "{name}" is not available for model invocation')
        try:
            body = skill.body()
        except (OSError, UnicodeDecodeError, SkillFormatError):
            raise ToolError(f'skill "{name}" is unknown or no longer available') from None
        return {"name": skill.name, "provider": skill.source, "resourceBase": str(skill.base), "content": body}

    def render(_args: Any, value: Any) -> list[dict]:
        return [{"type": "text", "text": render_content(value["name"], value["resourceBase"], value["content"])}]

    return ToolDefinition(name="skill", description=TOOL_DESCRIPTION, parameters=TOOL_PARAMETERS,
                          execute=execute, render=render, access="read")


def apply_skill_tool(ctx: BuiltinContext) -> None:
    ctx.tools.register(skill_tool(ctx.driver))
