"""Pure formatting for the ``lsp`` tool, as dsh's ``tool-lsp/src/render.ts`` has it: one-based cursor
arguments, locations grouped by file as ``path:line:character``, workspace-relative ``file:`` URIs, the
count and complete-result caps; and opencode's diagnostics block for ``write``/``edit`` results."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlparse

from dsh_tui.tools.base import ToolError

LSP_OPERATIONS = ("goToDefinition", "findReferences", "goToImplementation", "hover")
DEFAULT_MAX_LOCATIONS = 100
DEFAULT_MAX_RESULT_CHARS = 16_000


def parse_args(args: Any) -> tuple[str, str, int, int]:
    """(operation, file_path, zero-based line, zero-based character); dsh's ``parseLspArgs`` errors."""
    args = args if isinstance(args, dict) else {}
    operation = args.get("operation")
    if operation not in LSP_OPERATIONS:
        raise ToolError(f"operation must be one of {', '.join(LSP_OPERATIONS)}")
    file_path = args.get("file_path")
    if not isinstance(file_path, str) or not file_path.strip():
        raise ToolError("file_path must be a non-empty string")
    line = _one_based(args.get("line"), "line")
    character = _one_based(args.get("character"), "character")
    return operation, file_path, line - 1, character - 1


def _one_based(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 1:
        raise ToolError(f"{name} must be a positive integer (one-based)")
    return int(value)


def _bound(text: str, max_chars: int, label: str) -> str:
    # JS string lengths count UTF-16 code units; the texts here are almost always BMP, so len() is close.
    if len(text) <= max_chars:
        return text
    notice = f"\n… {label} truncated (limit {max_chars} characters)."
    if len(notice) >= max_chars:
        return notice[:max_chars]
    return text[: max_chars - len(notice)] + notice


def _file_path(uri: str) -> str | None:
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    return None if "\0" in path or not path else path


def render_uri(uri: str, workspace_uri: str) -> str:
    """A ``file:`` URI inside the workspace as a workspace-relative path, outside it as an absolute path;
    anything else verbatim."""
    if not uri.startswith("file:"):
        return uri
    target, workspace = _file_path(uri), _file_path(workspace_uri)
    if target is None or workspace is None:
        return uri
    relative = os.path.relpath(target, workspace)
    outside = relative == ".." or relative.startswith("../") or os.path.isabs(relative)
    return "." if relative == "." else target if outside else relative


def format_locations(locations: list[dict], workspace_uri: str, max_locations: int, max_result_chars: int) -> str:
    if not locations:
        return _bound("No results.", max_result_chars, "locations")
    shown = locations[:max_locations]
    omitted = len(locations) - len(shown)
    grouped: dict[str, list[str]] = {}
    for loc in shown:
        path = render_uri(loc["uri"], workspace_uri)
        start = loc["range"]["start"]
        grouped.setdefault(path, []).append(f"{path}:{start['line'] + 1}:{start['character'] + 1}")
    lines = [entry for entries in grouped.values() for entry in entries]
    if omitted > 0:
        lines.append(f"… {omitted} more location{'' if omitted == 1 else 's'} omitted (limit {max_locations}).")
    return _bound("\n".join(lines), max_result_chars, "locations")


def format_hover(hover: dict | None, max_result_chars: int) -> str:
    text = "No hover information." if hover is None else hover["contents"]
    return _bound(text, max_result_chars, "hover")


# -- normalization of the server's answers (dsh's lsp-stdio translate.ts) ------------------------------

def _is_pos(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(v.get(k), int) and not isinstance(v.get(k), bool) and v[k] >= 0
                                       for k in ("line", "character"))


def _is_range(v: Any) -> bool:
    return isinstance(v, dict) and _is_pos(v.get("start")) and _is_pos(v.get("end"))


def _range(r: dict) -> dict:
    return {"start": {"line": r["start"]["line"], "character": r["start"]["character"]},
            "end": {"line": r["end"]["line"], "character": r["end"]["character"]}}


def normalize_locations(payload: Any) -> list[dict]:
    from dsh_tui.extensions.lsp.client import LspError

    if payload is None:
        return []
    out = []
    for el in payload if isinstance(payload, list) else [payload]:
        if not isinstance(el, dict):
            raise LspError("LSP navigation result contained a non-object entry", "LSP_MALFORMED_RESPONSE")
        if isinstance(el.get("targetUri"), str) and _is_range(el.get("targetSelectionRange")):
            out.append({"uri": el["targetUri"], "range": _range(el["targetSelectionRange"])})
        elif isinstance(el.get("uri"), str) and _is_range(el.get("range")):
            out.append({"uri": el["uri"], "range": _range(el["range"])})
        else:
            raise LspError("LSP navigation result contained neither a Location nor a LocationLink",
                           "LSP_MALFORMED_RESPONSE")
    return out


def _marked(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("language"), str) and isinstance(v.get("value"), str):
        return f"```{v['language']}\n{v['value']}\n```"
    return None


def normalize_hover(payload: Any) -> dict | None:
    from dsh_tui.extensions.lsp.client import LspError

    def bad(msg: str) -> LspError:
        return LspError(msg, "LSP_MALFORMED_RESPONSE")

    if payload is None:
        return None
    if not isinstance(payload, dict):
        raise bad("LSP hover result was not an object")
    contents = payload.get("contents")
    if contents is None:
        raise bad("LSP hover result had no contents")
    if isinstance(contents, str):
        text = contents
    elif isinstance(contents, list):
        parts = [_marked(v) for v in contents]
        if any(p is None for p in parts):
            raise bad("LSP hover contents contained a malformed MarkedString")
        text = "\n\n".join(p for p in parts if p is not None)
    elif isinstance(contents, dict) and contents.get("kind") in ("markdown", "plaintext"):
        if not isinstance(contents.get("value"), str):
            raise bad("LSP hover MarkupContent value was not a string")
        text = contents["value"]
    elif (marked := _marked(contents)) is not None:
        text = marked
    else:
        raise bad("LSP hover contents were not MarkupContent, MarkedString, or an array")
    if text == "":
        return None
    rng = payload.get("range")
    if rng is None:
        return {"contents": text}
    if not _is_range(rng):
        raise bad("LSP hover result contained a malformed range")
    return {"contents": text, "range": _range(rng)}


# -- diagnostics after write/edit (opencode's block) ---------------------------------------------------

SEVERITY = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "HINT"}


def pretty_diagnostic(d: dict) -> str:
    start = ((d.get("range") or {}).get("start") or {})
    return (f"{SEVERITY.get(d.get('severity') or 1, 'ERROR')} [{int(start.get('line', 0)) + 1}:"
            f"{int(start.get('character', 0)) + 1}] {d.get('message', '')}")


def diagnostics_block(file_path: str, diagnostics: list[dict], limit: int) -> str | None:
    """opencode's "LSP errors detected in this file, please fix:" block of the file's errors (severity 1,
    or none given), at most ``limit``; None when there are none."""
    errors = [d for d in diagnostics if isinstance(d, dict) and (d.get("severity") or 1) == 1]
    if not errors:
        return None
    shown = errors[:limit]
    suffix = f"\n... and {len(errors) - limit} more" if len(errors) > limit else ""
    body = "\n".join(pretty_diagnostic(d) for d in shown)
    return (f'LSP errors detected in this file, please fix:\n<diagnostics file="{file_path}">\n{body}{suffix}\n'
            f"</diagnostics>")
