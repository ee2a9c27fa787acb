"""Model-facing schemas of the built-in tools, exactly as dsh sends them.

``read``/``write``/``edit``/``todo_write``/``bash`` match the ``tool-schemas.expected.json`` files of
the recorded scenarios (``escalation=True, background=True`` reproduces them byte for byte);
``glob``/``grep`` follow dsh's ``tool-fs-search`` definitions with the shipped caps (100 paths, no
over-cap sampling, 250 matches). Without a sandbox dsh advertises neither ``sandbox_permissions``
nor ``justification`` and drops the escalation paragraph; without background jobs the bash
description says so and ``run_in_background`` is not advertised.
"""

from __future__ import annotations

import copy
from typing import Any

READ_DESCRIPTION = "Read a UTF-8 text file and return line-numbered content."
READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path to read, resolved by the filesystem backend."},
        "offset": {"type": "number", "description": "1-based first line to return. Defaults to 1."},
        "limit": {"type": "number", "description": "Maximum number of lines to return. Defaults to 2000."},
    },
    "required": ["file_path"],
}

WRITE_DESCRIPTION = "Create or fully replace a UTF-8 text file."
WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path to write, resolved by the filesystem backend."},
        "content": {"type": "string", "description": "Full UTF-8 text content to write."},
    },
    "required": ["file_path", "content"],
}

EDIT_DESCRIPTION = "Edit an existing UTF-8 text file by replacing literal text."
EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path to edit, resolved by the filesystem backend."},
        "old_string": {"type": "string", "description": "Literal text to replace. Must match exactly."},
        "new_string": {
            "type": "string",
            "description": "Literal replacement text. Use an empty string to delete the match.",
        },
        "replace_all": {
            "type": "boolean",
            "description": "Replace all matches. Defaults to false; when false, old_string must appear exactly once.",
        },
    },
    "required": ["file_path", "old_string", "new_string"],
}

FS_ESCALATION_FIELDS: dict[str, Any] = {
    "sandbox_permissions": {
        "type": "string",
        "description": "The wider sandbox mode this file operation needs. Only valid as a one-shot retry of an "
        "operation the sandbox just denied; requires justification and user approval.",
        "enum": ["workspace-write", "danger-full-access"],
    },
    "justification": {
        "type": "string",
        "description": "Required with sandbox_permissions: one sentence for the user explaining why this exact "
        "file operation needs the wider access.",
    },
}

TODO_WRITE_DESCRIPTION = (
    "Record and update a structured task list for the current work. Send the ENTIRE list every call — it "
    "REPLACES the previous list (there are no partial updates, no per-item edits). Use it to plan multi-step "
    "work and show progress: add one todo per concrete step before you start. Mark every todo being actively "
    "worked on `in_progress` — several at once when work genuinely runs in parallel (e.g. concurrent subagents "
    "or background commands), one for sequential work; while work remains, at least one task should be "
    "`in_progress`. Mark a todo `completed` the moment it is done (do not batch completions), and allow no "
    "`in_progress` item only once all work is complete. Skip the list for trivial single-step tasks. Statuses: "
    "`pending` (not started), `in_progress` (being worked on now), `completed` (finished)."
)
TODO_WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The COMPLETE task list, replacing any previous list.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "content": {
                        "type": "string",
                        "description": "What the task is — a short imperative line.",
                    },
                    "status": {
                        "type": "string",
                        "description": "pending (not started) | in_progress (now) | completed (done).",
                        "enum": ["pending", "in_progress", "completed"],
                    },
                },
                "required": ["content", "status"],
            },
        }
    },
    "required": ["todos"],
}

_BASH_BASE = (
    "Execute a bash command (`bash -c`) and return its stdout/stderr. "
    "Each call runs in a fresh shell: no state (cwd, variables, functions) persists between calls — "
    "pass `workdir` instead of using `cd`. Non-zero exits are reported as `[exit code: N]`. "
    "Current harness environment facts are exposed through managed `$DSH_*` variables; inspect them when needed. "
    "Commands may run under a file sandbox; a blocked file operation is reported as "
    "`[sandbox: file access denied under <mode> mode]` — a policy denial, not a bug in the command; do not retry "
    "another way. "
    "Long output is truncated to its tail; the full output is saved to a file whose path is reported when available. "
)
_BASH_BACKGROUND_ON = (
    "Set `run_in_background: true` for long-running commands: the call returns a job id immediately; read its "
    "output with `job_output` and stop it with `job_kill`."
)
_BASH_BACKGROUND_OFF = (
    "Background execution is not available; long-running commands must finish within the timeout."
)
_BASH_ESCALATION = (
    " Attempting a command the sandbox may deny is safe and expected: run it and read the "
    "marker rather than assuming the denial. When a command is denied and a wider mode would let it "
    "succeed, escalate immediately in the same turn — the one sanctioned exception to a denial: retry "
    "the exact same command once with `sandbox_permissions` (the narrowest wider mode that suffices) "
    "plus a one-sentence `justification`. Do not detour through chat to ask permission first — the "
    "approval prompt raised by that retry is how the user consents. If the session states approval "
    "prompts are disabled, there is no exception: a denial is final — do not set `sandbox_permissions`. "
    "Never escalate speculatively: ground the request in a real denial — normally the one this command "
    "just hit; escalating up front is fine only when this session already denied the same access. "
    "A rejected escalation is final for that command — stop and explain, never work around "
    "it — but it does not forbid attempting or escalating other commands later."
)


def bash_description(*, background: bool, escalation: bool) -> str:
    text = _BASH_BASE + (_BASH_BACKGROUND_ON if background else _BASH_BACKGROUND_OFF)
    return text + _BASH_ESCALATION if escalation else text


def bash_parameters(*, background: bool, escalation: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "command": {"type": "string", "description": "The bash command to execute."},
        "description": {
            "type": "string",
            "description": "Clear, concise description of what this command does in active voice, 5-10 words "
            '(shown in the UI). Examples: "ls" → "List files in current directory"; "git status" → '
            '"Show working tree status"; "npm install" → "Install package dependencies".',
        },
        "timeoutMs": {
            "type": "number",
            "description": "Timeout in milliseconds. The executor applies its configured default and cap, and "
            "kills the command on expiry.",
        },
        "workdir": {
            "type": "string",
            "description": "Working directory for this command. Defaults to the session workspace; a relative "
            "path is resolved against it.",
        },
    }
    if background:
        props["run_in_background"] = {
            "type": "boolean",
            "description": "Run in the background and return a job id immediately (collect with job_output, "
            "stop with job_kill). No timeout applies.",
        }
    if escalation:
        props["sandbox_permissions"] = {
            "type": "string",
            "description": "The wider sandbox mode this command needs. Only valid as a one-shot retry of a "
            "command the sandbox just denied; requires justification and user approval.",
            "enum": ["workspace-write", "danger-full-access"],
        }
        props["justification"] = {
            "type": "string",
            "description": "Required with sandbox_permissions: one sentence for the user explaining why this "
            "exact command needs the wider access.",
        }
    return {"type": "object", "properties": props, "required": ["command", "description"]}


GLOB_MAX_RESULTS = 100
GREP_MAX_MATCHES = 250


def glob_description(max_results: int = GLOB_MAX_RESULTS) -> str:
    return (
        "Find files whose paths match a glob pattern. Returns matching file paths — never directories — "
        "including hidden and ignored files (VCS metadata directories are excluded). "
        f"Up to {max_results} paths come back in modification-time order; a larger result returns the first "
        f"{max_results} paths in modification-time order, "
        "says so, and reports where the complete sorted list was saved. This tool does not enumerate directory entries."
    )


GLOB_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": 'Glob pattern to match file paths against (e.g. "**/*.ts", "src/**/*.test.js"). '
            'A pattern with no "/" matches the basename at any depth, so "*" and "*.ts" both search the whole '
            "tree; include a separator to anchor the depth.",
        },
        "path": {
            "type": "string",
            "description": "Directory to search in. Defaults to the session workspace; a relative path resolves "
            "against it.",
        },
    },
    "required": ["pattern"],
}


def grep_description(max_matches: int = GREP_MAX_MATCHES) -> str:
    return (
        "Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, "
        "grouped by file. "
        f"Returns the first {max_matches} matches inline; a capped result reports where the complete match list "
        "was saved. Use read on a matched file for surrounding context."
    )


GREP_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Regular expression to search for (ripgrep syntax)."},
        "path": {
            "type": "string",
            "description": "File or directory to search. Defaults to the session workspace; a relative path "
            "resolves against it.",
        },
        "include": {
            "type": "string",
            "description": 'One glob filter for which files to search (e.g. "*.ts", "*.{js,jsx}"). Not a list; '
            "negation is not supported.",
        },
    },
    "required": ["pattern"],
}


def fs_schema(name: str, *, escalation: bool) -> dict[str, Any]:
    base = {
        "read": (READ_DESCRIPTION, READ_PARAMETERS),
        "write": (WRITE_DESCRIPTION, WRITE_PARAMETERS),
        "edit": (EDIT_DESCRIPTION, EDIT_PARAMETERS),
    }[name]
    params = copy.deepcopy(base[1])
    if escalation and name != "read":
        params["properties"].update(copy.deepcopy(FS_ESCALATION_FIELDS))
    return {"name": name, "description": base[0], "parameters": params}
