"""What the model reads of a terminal tool's result (dsh's ``tool-terminal/render.ts``): the spawn, send, read and
list texts, each bounded to ``max_result_bytes`` with dsh's ``[output truncated]`` marker, byte for byte."""

from __future__ import annotations

TRUNCATED = "\n[output truncated]"


def _nbytes(text: str) -> int:
    return len(text.encode())


def _retain(text: str, max_bytes: int, kind: str) -> str:
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes] if kind == "head" else data[len(data) - max_bytes:]
    return cut.decode("utf-8", "ignore")


def bound_terminal_text(text: str, max_bytes: int) -> str:
    if _nbytes(text) <= max_bytes:
        return text
    if _nbytes(TRUNCATED) >= max_bytes:
        return _retain(TRUNCATED, max_bytes, "tail")
    return _retain(text, max_bytes - _nbytes(TRUNCATED), "head") + TRUNCATED


def _fit_with_suffix(content: str, suffix: str, max_bytes: int) -> str:
    if _nbytes(suffix) >= max_bytes:
        return _retain(suffix, max_bytes, "tail")
    return _retain(content, max_bytes - _nbytes(suffix), "tail") + suffix


def _fit_with_prefix(prefix: str, content: str, max_bytes: int) -> str:
    fixed = prefix + TRUNCATED
    if _nbytes(fixed) >= max_bytes:
        return _retain(fixed, max_bytes, "head")
    return prefix + _retain(content, max_bytes - _nbytes(fixed), "tail") + TRUNCATED


def _bound_body(content: str, metadata: str, upstream_truncated: bool, max_bytes: int) -> str:
    complete = content + metadata + (TRUNCATED if upstream_truncated else "")
    if _nbytes(complete) <= max_bytes:
        return complete
    return _fit_with_suffix(content, metadata + TRUNCATED, max_bytes)


def _status(status: dict) -> str:
    if status.get("kind") == "running":
        return "running"
    code = status.get("exitCode")
    sig = status.get("signal")
    return f"exited code={'null' if code is None else code} signal={'null' if sig is None else sig}"


def render_spawn(value: dict, max_bytes: int) -> str:
    label = value["sessionId"] if value.get("name") is None else f"{value['sessionId']} ({value['name']})"
    prefix = f"started terminal session {label} [type: {value['type']}]\n"
    motd = value.get("motd") or "(no startup output)"
    complete = prefix + motd
    return complete if _nbytes(complete) <= max_bytes else _fit_with_prefix(prefix, motd, max_bytes)


def render_send(value: dict, max_bytes: int) -> str:
    output = value.get("viewport") or "(no new output)"
    return _bound_body(output, f"\n[wait: {value['waitReason']}]\n[session: {_status(value['sessionStatus'])}]",
                       bool(value.get("truncated")), max_bytes)


def render_read(value: dict, max_bytes: int) -> str:
    output = value.get("text") or "(no retained output)"
    return _bound_body(output, f"\n[lines: {value['lineBegin']}-{value['lineEnd']} of {value['totalLines']}]",
                       bool(value.get("truncated")), max_bytes)


def render_list(sessions: list[dict], max_bytes: int) -> str:
    if not sessions:
        return "(no terminal sessions)"
    rows = []
    for s in sessions:
        nm = "" if s.get("name") is None else f" ({s['name']})"
        pid = "" if s.get("pid") is None else f" pid={s['pid']}"
        rows.append(f"{s['sessionId']}{nm} [{s['type']}] {_status(s['status'])}{pid}")
    return _bound_body("\n".join(rows), "", False, max_bytes)
