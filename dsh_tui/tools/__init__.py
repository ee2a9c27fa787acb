"""dsh_tui.tools: the built-in tools (bash, read, write, edit, glob, grep, todo_write).

``builtin_tools(**options)`` returns fresh ``ToolDefinition``s (see ``base.py`` for the contract),
sorted by name like dsh's registry. Options:

- ``escalation`` (False): advertise ``sandbox_permissions``/``justification`` and the escalation
  paragraph, as dsh does under a sandboxing executor. ``escalation=True, background=True``
  reproduces the schemas of the recorded scenarios byte for byte.
- ``background`` (False) / ``jobs``: advertise ``run_in_background``; ``jobs`` is an object with
  ``async start(command, *, cwd, env, label) -> job_id`` (without it, the calling agent's job registry of
  the ``jobs`` plugin; without either a background call is refused with dsh's text).
- ``bash_env``: extra environment (managed ``DSH_*`` facts) for every bash call.
- ``bash_timeout_ms`` (120000), ``bash_max_timeout_ms`` (600000), ``bash_max_output_bytes`` (64000),
  ``bash_grace_ms`` (3000), ``glob_max_results`` (100), ``grep_max_matches`` (250),
  ``search_timeout_ms`` (30000).
- ``glob_sample_over_cap`` (False): dsh's ``sampleOverCapGlobResults``: an over-cap glob page is sampled
  round-robin across the result's top-level entries instead of keeping the modification-time head.
- ``sandbox``: a ``dsh_tui.tools.sandbox.Sandbox``: ``bash`` runs its commands in it (pass
  ``escalation=True`` with it, as dsh advertises the escalation fields under a sandboxing executor).
- ``names``: only these tools.
"""

from __future__ import annotations

from typing import Any

from dsh_tui.tools.base import ToolContext, ToolDefinition, ToolError

__all__ = ["builtin_tools", "ToolContext", "ToolDefinition", "ToolError", "BUILTIN_TOOL_NAMES"]

BUILTIN_TOOL_NAMES = ("bash", "edit", "glob", "grep", "read", "todo_write", "write")


def builtin_tools(**options: Any) -> list[ToolDefinition]:
    import copy

    from dsh_tui.tools import bash, schemas, search
    from dsh_tui.tools.bash import bash_tool
    from dsh_tui.tools.fs import edit_tool, read_tool, write_tool
    from dsh_tui.tools.search import glob_tool, grep_tool
    from dsh_tui.tools.todo import todo_write_tool

    escalation = bool(options.get("escalation", False))
    background = bool(options.get("background", False))
    names = options.get("names")
    unknown = set(options) - {
        "escalation", "background", "jobs", "bash_env", "bash_timeout_ms", "bash_max_timeout_ms",
        "bash_max_output_bytes", "bash_grace_ms", "glob_max_results", "grep_max_matches", "search_timeout_ms",
        "names", "sandbox", "glob_sample_over_cap",
    }  # fmt: skip
    if unknown:
        raise TypeError(f"builtin_tools: unknown options {sorted(unknown)}")

    glob_max = int(options.get("glob_max_results", schemas.GLOB_MAX_RESULTS))
    glob_sample = bool(options.get("glob_sample_over_cap", False))
    grep_max = int(options.get("grep_max_matches", schemas.GREP_MAX_MATCHES))
    search_timeout = int(options.get("search_timeout_ms", search.SEARCH_TIMEOUT_MS))

    builders = {
        "bash": lambda: bash_tool(
            {
                "description": schemas.bash_description(background=background, escalation=escalation),
                "parameters": schemas.bash_parameters(background=background, escalation=escalation),
            },
            background=background,
            escalation=escalation,
            jobs=options.get("jobs"),
            default_timeout_ms=options.get("bash_timeout_ms", bash.DEFAULT_TIMEOUT_MS),
            max_timeout_ms=options.get("bash_max_timeout_ms", bash.MAX_TIMEOUT_MS),
            max_output_bytes=int(options.get("bash_max_output_bytes", bash.MAX_OUTPUT_BYTES)),
            grace_ms=options.get("bash_grace_ms", bash.GRACE_MS),
            env=options.get("bash_env"),
            sandbox=options.get("sandbox"),
        ),
        "edit": lambda: edit_tool(schemas.fs_schema("edit", escalation=escalation)),
        "glob": lambda: glob_tool(
            {
                "description": schemas.glob_description(glob_max, glob_sample),
                "parameters": copy.deepcopy(schemas.GLOB_PARAMETERS),
            },
            max_results=glob_max,
            timeout_ms=search_timeout,
            sample_over_cap=glob_sample,
        ),
        "grep": lambda: grep_tool(
            {
                "description": schemas.grep_description(grep_max),
                "parameters": copy.deepcopy(schemas.GREP_PARAMETERS),
            },
            max_matches=grep_max,
            timeout_ms=search_timeout,
        ),
        "read": lambda: read_tool(schemas.fs_schema("read", escalation=escalation)),
        "todo_write": lambda: todo_write_tool(
            {
                "description": schemas.TODO_WRITE_DESCRIPTION,
                "parameters": copy.deepcopy(schemas.TODO_WRITE_PARAMETERS),
            }
        ),
        "write": lambda: write_tool(schemas.fs_schema("write", escalation=escalation)),
    }
    selected = (
        BUILTIN_TOOL_NAMES if names is None else tuple(n for n in BUILTIN_TOOL_NAMES if n in set(names))
    )
    return [builders[name]() for name in selected]
