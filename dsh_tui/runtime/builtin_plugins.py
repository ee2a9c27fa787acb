"""The built-in plugins as data: one row per built-in (its id, where its ``apply`` or plugin object lives, whether
the agent host alone loads it, whether it is off until the settings turn it on, and when it has nothing to do).

Nothing here imports a built-in's module: a row names it (``"module:attribute"``) and :class:`LazyBuiltin`
imports it when the plugin is applied, so a built-in costs nothing until an agent loads it, and one that is
turned off (``[plugins.<id>] enabled = false``) is never imported. The order of the rows is the order the
built-ins' listeners run in.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


def _always(_config: Any) -> bool:
    return True


def _mcp_configured(config: Any) -> bool:  # [mcp.servers.<name>] or --mcp: the mcp SDK is imported only then
    return bool(isinstance(config, Mapping) and (config.get("settings") or config.get("cli")))


def _lsp_configured(config: Any) -> bool:
    return bool(isinstance(config, Mapping) and config.get("servers"))


def _privacy_opted_in(config: Any) -> bool:
    privacy = config.get("privacy") if isinstance(config, Mapping) else None
    return isinstance(privacy, Mapping) and (privacy.get("send_session_log") is True
                                             or privacy.get("send_plugin_packages") is True)


@dataclass(frozen=True)
class Builtin:
    """One built-in plugin. ``target`` is ``"module:function"`` (an ``apply(ctx)`` or ``apply(ctx, config)``)
    or ``"module:OBJECT"`` (a plugin object with its own ``Config``, used as it is)."""

    id: str
    target: str
    feature: bool = False  # loaded by the agent host (``discover``), not by a bare ``Agent``
    off: bool = False  # off by default (``[plugins.<id>] enabled = true`` turns it on), as in dsh 0.2
    needed: Callable[[Any], bool] = _always  # False: nothing to do with this config, its module is not imported
    about: str = ""


#: Every built-in, in the order their listeners run.
TABLE: tuple[Builtin, ...] = (
    Builtin("retry", "dsh_tui.extensions.retry:apply", about="dsh's retry of failed model requests"),
    Builtin("compaction", "dsh_tui.extensions.compaction:apply", about="automatic and /compact compaction"),
    Builtin("runtime-context", "dsh_tui.runtime.builtin_plugins:flag",
            about="the runtime-context messages, assembled by the agent (AgentConfig.runtime_context)"),
    Builtin("request-invariant", "dsh_tui.runtime.builtin_plugins:flag",
            about="the model-sees-what-is-recorded check (AgentConfig.check_requests)"),
    Builtin("agent-instructions", "dsh_tui.extensions.instructions:AGENT_INSTRUCTIONS", feature=True,
            about="AGENTS.md and the project's instruction files"),
    Builtin("session-title", "dsh_tui.extensions.titles:SESSION_TITLE", feature=True),
    Builtin("session-title-llm", "dsh_tui.extensions.titles:SESSION_TITLE_LLM", feature=True),
    Builtin("jobs", "dsh_tui.extensions.jobs:apply", feature=True,
            about="background jobs (run_in_background), job_output / job_list / job_kill"),
    Builtin("subagents", "dsh_tui.extensions.subagents:apply", about="dsh's subagent tools"),
    Builtin("mcp", "dsh_tui.extensions.mcp:apply", needed=_mcp_configured, about="MCP servers' tools"),
    Builtin("skills", "dsh_tui.extensions.skills:apply_skills"),
    Builtin("skill-tool", "dsh_tui.extensions.skills:apply_skill_tool"),
    Builtin("file-reference", "dsh_tui.extensions.filerefs:apply_file_reference", about="@file mentions"),
    Builtin("commands", "dsh_tui.extensions.commands:apply_commands", about="slash commands"),
    Builtin("hooks-claude-code", "dsh_tui.extensions.hooks:apply_claude_code", feature=True,
            about="Claude Code's shell hooks from the files it uses"),
    Builtin("hooks-codex", "dsh_tui.extensions.hooks:apply_codex", feature=True, about="Codex's shell hooks"),
    Builtin("workspace-changes", "dsh_tui.extensions.undo:apply", feature=True,
            about="every turn's file changes snapshotted, for /undo, /diff and rewind with files"),
    Builtin("images", "dsh_tui.extensions.images:apply", feature=True, about="read_image and images in prompts"),
    Builtin("web", "dsh_tui.extensions.web:apply", feature=True, about="web_search and web_fetch"),
    Builtin("ask-user", "dsh_tui.extensions.questions:apply", feature=True, about="ask_user_question"),
    Builtin("plan-mode", "dsh_tui.extensions.planmode:apply", feature=True, about="/plan and exit_plan_mode"),
    Builtin("goal", "dsh_tui.extensions.goals:apply", feature=True, about="the goal tools, /goal and goal rounds"),
    Builtin("ralph", "dsh_tui.extensions.ralph:apply", feature=True, off=True, about="fresh-agent rounds"),
    Builtin("lsp", "dsh_tui.extensions.lsp:apply", needed=_lsp_configured,
            about="the lsp tool and diagnostics after write/edit"),
    Builtin("deepseek-extensions", "dsh_tui.extensions.privacy:apply", needed=_privacy_opted_in,
            about="dsh 0.2's dsh_session_log / dsh_plugin_packages request fields, only when [privacy] opts in"),
    Builtin("working-directory", "dsh_tui.extensions.workdir:apply", about="dsh 0.2's working_directory tool"),
    Builtin("repeat-tool-reminder", "dsh_tui.extensions.repeat:apply", about="dsh's loop guard"),
    Builtin("str-replace-editor", "dsh_tui.extensions.str_replace_editor:apply", off=True,
            about="dsh 0.1's str_replace_editor"),
    Builtin("terminals", "dsh_tui.extensions.terminals:apply", feature=True, off=True,
            about="dsh's terminal_* tools over persistent PTYs"),
)

#: The built-in plugins, each disable-able by id.
BUILTIN_IDS: tuple[str, ...] = tuple(b.id for b in TABLE)
#: Built-in features the agent host loads; a bare ``Agent`` leaves them out.
FEATURE_IDS: tuple[str, ...] = tuple(b.id for b in TABLE if b.feature)
#: Built-ins that load only when the settings turn them on (``[plugins.<id>] enabled = true``), as in dsh 0.2.
OFF_BY_DEFAULT: tuple[str, ...] = tuple(b.id for b in TABLE if b.off)


def flag(ctx: Any) -> None:
    """The body of a built-in that is only a switch: the agent reads whether it is enabled."""


def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class LazyBuiltin:
    """A built-in function plugin, imported when applied (and not at all when ``needed`` says there is nothing
    to do)."""

    def __init__(self, row: Builtin) -> None:
        self.name = row.id
        self.row = row

    def apply(self, ctx: Any, config: Any) -> Any:
        if not self.row.needed(config):
            return None
        fn = _resolve(self.row.target)
        takes_config = len(inspect.signature(fn).parameters) >= 2
        return fn(ctx, config) if takes_config else fn(ctx)


class _Builtins(Mapping[str, Any]):
    """``id -> plugin``: a function built-in as a :class:`LazyBuiltin`, an object built-in (it has its own
    ``Config``) imported on first lookup."""

    def __init__(self) -> None:
        self._rows = {b.id: b for b in TABLE}
        self._made: dict[str, Any] = {}

    def __getitem__(self, pid: str) -> Any:
        if pid not in self._made:
            row = self._rows[pid]
            attr = row.target.rpartition(":")[2]
            self._made[pid] = _resolve(row.target) if attr.isupper() else LazyBuiltin(row)
        return self._made[pid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


BUILTINS: Mapping[str, Any] = _Builtins()
