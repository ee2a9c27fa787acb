"""On-disk layout of a JSONL session root (docs/format.md, "Layout").

``<root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd]`` and ``<root>/_no-cwd/...``
for a header without ``cwd``. Both encoders work on UTF-16 code units, exactly like dsh, so a
non-BMP character becomes two ``~XXXX`` surrogate escapes and lone surrogates survive.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dsh_tui.session.errors import DshError

NO_CWD_DIR = "_no-cwd"
TRANSCRIPT_STEM = "session"
SUFFIXES = {"zstd": ".jsonl.zstd", "none": ".jsonl"}
COMPRESSIONS = tuple(SUFFIXES)

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATORS = frozenset("/\\:")


class LayoutError(DshError):
    """A path, id or root that cannot hold a session the way dsh lays it out."""


def _code_units(s: str) -> list[int]:
    """UTF-16 code units of ``s`` (lone surrogates in a Python str are kept as themselves)."""
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units.append(0xD800 + (cp >> 10))
            units.append(0xDC00 + (cp & 0x3FF))
        else:
            units.append(cp)
    return units


def _escape(unit: int) -> str:
    return f"~{unit:04X}"


def encode_segment(raw: str) -> str:
    """dsh ``encodeSegment``: injective, traversal-safe single path segment."""
    if not raw:
        raise LayoutError("cannot encode an empty path segment")
    if raw == ".":
        return "~002E"
    if raw == "..":
        return "~002E~002E"
    if raw.isascii() and all(ch in _SAFE for ch in raw):
        return raw
    out = []
    for unit in _code_units(raw):
        ch = chr(unit)
        out.append(ch if unit < 0x80 and ch in _SAFE else _escape(unit))
    return "".join(out)


_ESCAPE_RE = re.compile(r"~([0-9A-F]{4})")


def decode_segment(seg: str) -> str:
    """Inverse of :func:`encode_segment` (surrogate pairs are re-joined into one character)."""
    units = []
    i = 0
    while i < len(seg):
        m = _ESCAPE_RE.match(seg, i)
        if m:
            units.append(int(m.group(1), 16))
            i = m.end()
        else:
            units.append(ord(seg[i]))
            i += 1
    data = b"".join(u.to_bytes(2, "little") for u in units)
    return data.decode("utf-16-le", errors="surrogatepass")


def project_key(cwd: str) -> str:
    """dsh ``projectKey``: readable, lossy, bounded directory name for a project path."""
    if not cwd:
        raise LayoutError("cannot encode an empty project path")
    out: list[str] = []
    separator_run = False
    for unit in _code_units(cwd):
        ch = chr(unit)
        if ch in _SEPARATORS:
            if not separator_run:
                out.append("-")
            separator_run = True
        elif unit < 0x80 and ch in _SAFE:
            out.append(ch)
            separator_run = False
        else:
            out.append(_escape(unit))
            separator_run = False
    readable = "".join(out).lstrip("-") or "root"
    return f"--{readable[:251]}--"


def suffix(compression: str) -> str:
    try:
        return SUFFIXES[compression]
    except KeyError:
        raise LayoutError(f"unknown compression {compression!r} (expected 'zstd' or 'none')") from None


def opposite(compression: str) -> str:
    return "none" if compression == "zstd" else "zstd"


def transcript_name(compression: str, version: int = 0) -> str:
    """``session.jsonl[.zstd]`` (format v0) or ``session.v<N>.jsonl[.zstd]`` (a later generation: dsh 0.2
    writes ``session.v4.jsonl.zstd``; docs/format.md, "Format v4")."""
    return TRANSCRIPT_STEM + (f".v{version}" if version else "") + suffix(compression)


#: the generations a session directory may hold, newest first (the newest present is the session's log)
GENERATIONS = (4, 0)
LOCK_NAME = "session.lock"


def project_dir(root: Path, cwd: str | None) -> Path:
    return Path(root) / (NO_CWD_DIR if cwd is None else project_key(cwd))


def session_dir(root: Path, cwd: str | None, session_id: str) -> Path:
    return project_dir(root, cwd) / encode_segment(session_id)


def log_path(root: Path, cwd: str | None, session_id: str, compression: str, version: int = 0) -> Path:
    return session_dir(root, cwd, session_id) / transcript_name(compression, version)


def same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b) and os.path.exists(b)
    except OSError:
        return False


def check_identity(path: Path, root: Path, header: dict, compression: str, expected_id: str | None = None) -> None:
    """The header's id + cwd must name the path the log was found at (case aliases via realpath)."""
    if expected_id is not None and header.get("id") != expected_id:
        raise LayoutError(
            f'corrupt session log "{path}": requested id "{expected_id}" does not match header id '
            f'"{header.get("id")}"'
        )
    try:
        version = header["version"] if header.get("version") in GENERATIONS else 0
        expected = log_path(root, header.get("cwd"), header["id"], compression, version)
    except (LayoutError, KeyError, TypeError) as err:
        raise LayoutError(f'corrupt session log "{path}": header id cannot name a storage path ({err})') from None
    if Path(path) != expected and not same_file(Path(path), expected):
        raise LayoutError(
            f'corrupt session log "{path}": header id "{header["id"]}" and cwd identify "{expected}"'
        )
