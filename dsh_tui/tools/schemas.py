"""Model-facing schemas of the built-in tools, exactly as dsh 0.2 sends them.

The texts are dsh 0.2.1rc2's (``tests/fixtures/dsh02-request.headless.json``, its first headless request,
is the reference; ``tests/tools/test_dsh02_tool_schemas.py`` compares): ``glob``/``grep`` follow dsh's
``tool-fs-search`` definitions with the shipped caps (100 paths, no over-cap sampling, 250 matches).
Without a sandbox dsh advertises neither ``sandbox_permissions`` nor ``justification``; without background
jobs ``run_in_background`` is not advertised.
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
        "file_path": {"type": "string", "description": "Path to write, resolved by the filesystem backend. Provide "
                      "`file_path` before `content` in the arguments."},
        "content": {"type": "string", "description": "Full UTF-8 text content to write."},
    },
    "required": ["file_path", "content"],
}

EDIT_DESCRIPTION = "Edit an existing UTF-8 text file by replacing literal text."
EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path to edit, resolved by the filesystem backend. Provide "
                      "`file_path` before `old_string` and `new_string` in the arguments."},
        "old_string": {"type": "string", "description": "Literal text to replace."},
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

def sandbox_permissions_description(subject: str) -> str:
    """dsh 0.2's ``sandboxPermissionsDescription`` (``subject``: "command" or "operation")."""
    return (f"The narrowest wider sandbox mode for a one-shot retry of the exact {subject} the sandbox just denied; "
            "the retry asks the user for approval.")


_LANGUAGE = " Use the language of the user\u2019s current request."
FS_ESCALATION_FIELDS: dict[str, Any] = {
    "sandbox_permissions": {
        "type": "string",
        "description": sandbox_permissions_description("operation"),
        "enum": ["workspace-write", "danger-full-access"],
    },
    "justification": {
        "type": "string",
        "description": "Required with sandbox_permissions: one sentence for the user explaining why this exact "
        "file operation needs the wider access." + _LANGUAGE,
    },
}

TODO_WRITE_DESCRIPTION = (
    "Record and update a task list to plan multi-step work and show progress; skip it for trivial single-step "
    "tasks. Add one todo per concrete step before you start. While work remains, keep the todos being worked on "
    "`in_progress`, several only when work runs in parallel. Mark each todo `completed` as soon as it is done."
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

BASH_DESCRIPTION = (
    "Execute a bash command (`bash -c`) and return its stdout/stderr. Each call runs in a fresh shell; pass "
    "`workdir` instead of using `cd`. Managed `$DSH_*` variables expose current harness environment facts. Long "
    "output is truncated to its tail; the full output is saved to a file whose path is reported when available. "
    "Provide `description` before `command` in the arguments. Before any delete or move, verify that the resolved "
    "absolute target path is the intended one; never run it against a computed path you have not checked. An "
    "unset variable expands to an empty string, so guard variables in such paths with `${VAR:?}`. Commands may "
    "run under a file sandbox; a blocked file operation is reported as `[sandbox: file access denied under <mode> "
    "mode]`, a policy denial: do not retry another way."
)


def bash_description(*, background: bool = True, escalation: bool = False) -> str:
    """dsh 0.2's ``bashDescription()``: one text whatever the sandbox and jobs (the arguments are kept for
    callers)."""
    return BASH_DESCRIPTION


def bash_parameters(*, background: bool, escalation: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "description": {
            "type": "string",
            "description": "Clear, concise description of what this command does in active voice, 5-10 words "
            '(shown in the UI). Examples: "ls" → "List files in current directory"; "git status" → '
            '"Show working tree status"; "npm install" → "Install package dependencies".',
        },
        "command": {"type": "string", "description": "The bash command to execute."},
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
            "description": sandbox_permissions_description("command"),
            "enum": ["workspace-write", "danger-full-access"],
        }
        props["justification"] = {
            "type": "string",
            "description": "Required with sandbox_permissions: one sentence for the user explaining why this "
            "exact command needs the wider access." + _LANGUAGE,
        }
    return {"type": "object", "properties": props, "required": ["description", "command"]}


GLOB_MAX_RESULTS = 100
GREP_MAX_MATCHES = 250


def glob_description(max_results: int = GLOB_MAX_RESULTS, sample_over_cap: bool = False) -> str:
    over_cap = "is sampled across top-level entries" if sample_over_cap else "keeps the first paths"
    return (
        "Find files, not directories, whose paths match a glob pattern, including hidden and ignored files. "
        f"Returns up to {max_results} paths in modification-time order; a larger result {over_cap} "
        "and reports where the complete list was saved."
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
        f"grouped by file. Returns up to {max_matches} matches; a larger result reports where the complete match "
        "list was saved."
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
