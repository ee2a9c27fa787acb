"""Reading an arbitrary log file: runtime form (raw or zstd) and the projected fixture form.

The dsh test fixtures are a *projection* of runtime logs (docs/format.md, "Fixtures"): the header
line is kept, body lines drop ``seq``/``time``/``seq0``/``time0`` and ids, paths and large texts are
replaced by placeholders (``{{sessionId}}``, ``{{cwd}}``, ``{{system}}`` ...). :func:`open_log_file`
restores seq as a running count and time as 0 (packed rows ``time0 = 0``).

Modes: ``strict`` reads only runtime logs and refuses placeholders; ``lenient`` accepts both forms and
tolerates placeholders (non-absolute ``{{cwd}}``, duplicated ``{{sessionId}}`` ids, headers without
``delegationDepth``/``version``); ``auto`` is lenient for a projected file and strict otherwise.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import DshError, SessionCorruptionError
from dsh_tui.store import jsonl, zstdframes

MODES = ("auto", "strict", "lenient")
PLACEHOLDER = re.compile(rb"\{\{[A-Za-z][A-Za-z0-9_:.\-]*(?::[^{}]*)?\}\}")


class LogFileError(DshError):
    """A log file that cannot be read; the message names the file and the reason."""


@dataclass
class LogFile:
    path: Path
    compression: str  # "none" | "zstd"
    projected: bool
    lenient: bool
    prefix: jsonl.StoredPrefix

    @property
    def header(self) -> dict[str, Any]:
        return self.prefix.header

    @property
    def events(self) -> list[dict[str, Any]]:
        """Stored logical events (packed rows expanded, seq/time synthesised when projected)."""
        return self.prefix.events

    @property
    def torn(self) -> jsonl.TornMarker | None:
        return self.prefix.torn


def open_log_file(path: Path | str, mode: str = "auto") -> LogFile:
    """Decode a log file of any form. Raises :class:`DshError` subclasses naming the file."""
    if mode not in MODES:
        raise LogFileError(f"unknown mode {mode!r} (expected one of {', '.join(MODES)})")
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        st = None  # read_stable below says why
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        # a device (/dev/full, /dev/zero), a FIFO or a socket: reading it may never end
        raise LogFileError(f"{path}: not a regular file")
    try:
        buf, revision = jsonl.read_stable(path)
    except FileNotFoundError:
        raise LogFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise LogFileError(f"{path}: is a directory, not a log file") from None
    except OSError as err:
        raise LogFileError(f"{path}: cannot read ({err.strerror or err})") from None
    compression = jsonl.detect_compression(buf)
    try:
        if mode == "strict":
            prefix = jsonl.scan_buffer(buf, compression, lenient=False, projected=None)
            if prefix.projected:
                raise LogFileError("a projected fixture (no seq/time); strict mode refuses it")
            if _has_placeholders_in(buf, compression):
                raise LogFileError("contains fixture placeholders ({{...}}); use the lenient mode")
            lenient = False
        else:
            # the first body line decides the form; the whole file is then held to it
            prefix = jsonl.scan_buffer(buf, compression, lenient=True, projected=None)
            lenient = True
            if mode == "auto" and not prefix.projected and not _has_placeholders_in(buf, compression):
                prefix.header = jsonl.parse_header_record(prefix.header_record, lenient=False)
                lenient = False
    except DshError as err:
        raise type(err)(f"{path}: {err}") from None
    prefix.path = path
    prefix.revision = revision
    return LogFile(path, compression, prefix.projected, lenient, prefix)


def _has_placeholders(data: bytes) -> bool:
    return PLACEHOLDER.search(data) is not None


def _has_placeholders_in(buf: bytes, compression: str) -> bool:
    if compression != "zstd":
        return _has_placeholders(buf)
    # a batch of frames at a time (frames hold whole lines, so a placeholder never spans two), not the whole
    # plaintext at once: 89 MB of it for a million events
    fs = zstdframes.scan_frames(buf)
    with memoryview(buf) as view:
        return any(_has_placeholders(plain) for plain in zstdframes.decode_frames(view, fs.frames))


def prepare_file(log: LogFile, *, validate: bool = True, keep_session: bool = True) -> jsonl.Prepared:
    """Legacy import, refusals, closers (in memory) and validation for an opened file (``keep_session=False``:
    validated the same way, no Session kept)."""
    try:
        return jsonl.prepare(log.prefix, lenient=log.lenient, validate=validate, keep_session=keep_session)
    except DshError as err:
        raise type(err)(f"{log.path}: {err}") from None


def imported_events(log: LogFile) -> list[dict[str, Any]]:
    """The logical events as dsh's load returns them (import applied, no closers), unvalidated."""
    from dsh_tui.session import legacy

    return legacy.import_legacy(log.events, log.header.get("id") or "")


def render_canonical(log: LogFile) -> bytes:
    """The file in dsh's canonical form: header line verbatim, body re-packed as one batch.

    For a projected fixture the body is projected again (seq/time/seq0/time0 dropped), so the output
    of a committed fixture is byte-identical to the file (dsh's fixture-layout guard)."""
    from dsh_tui.session import jsonutil, rows

    out = [log.prefix.header_record]
    for line in rows.pack_batch(log.events):
        if log.projected:
            drop = ("seq0", "time0") if line.get("type") in jsonl.ROW_TAGS else ("seq", "time")
            line = {k: v for k, v in line.items() if k not in drop}
        out.append(jsonutil.dumps_bytes(line))
        out.append(b"\n")
    return b"".join(out)


def check_summary(log: LogFile) -> dict[str, Any]:
    """The ``log check`` facts of a readable, valid file (raises when it is not valid)."""
    from dsh_tui.session.rows import plain_events

    prepared = prepare_file(log, keep_session=False)
    events = prepared.stored
    boundaries = [e.get("type") for e in plain_events(events)]  # never packed-row members: no row is expanded
    turns = boundaries.count("turn/start")
    steps = boundaries.count("step/start")
    out: dict[str, Any] = {
        "events": len(events),
        "turns": turns,
        "steps": steps,
        "open_turn": bool(prepared.closers),
    }
    if log.header.get("parentSession") is not None:
        out["parent"] = log.header["parentSession"]
    if log.header.get("seedLength") is not None:
        out["seed_length"] = log.header["seedLength"]
    if log.torn is not None:
        out["torn_bytes"] = log.prefix.file_size - log.torn.truncate_to
    if log.projected:
        out["projected"] = True
    return out


__all__ = ["LogFile", "LogFileError", "open_log_file", "prepare_file", "imported_events",
           "render_canonical", "check_summary", "SessionCorruptionError"]
