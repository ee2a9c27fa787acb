"""``dsh-tui log check|cat|messages|repair FILE`` — low-level tools over one log file.

Every form of log is accepted: raw JSONL, zstd frames and the projected fixture form (lenient).
Failures print one line naming the file and the reason and exit non-zero; never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from dsh_tui.session.errors import DshError

HELP = "low-level log tools: check, cat, messages, repair"


FILE_HELP = "a session log: raw JSONL, zstd-compressed (.zstd) or a projected fixture"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Low-level tools over one session log file (any form: raw JSONL, zstd frames, projected fixtures). "
        "On failure: exit 1 with one line naming the file (for check, its JSON row). See dsh-tui log ACTION --help."
    )
    sub = parser.add_subparsers(dest="log_command", metavar="ACTION", required=True)

    def action(name: str, text: str):
        return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")

    p = action("check", "validate files; one JSON line per file; exit 0 only if all are ok")
    p.add_argument("files", nargs="+", metavar="FILE", help=FILE_HELP)
    p.add_argument("--mode", choices=("auto", "strict", "lenient"), default="auto",
                   help="strict refuses projected fixtures and {{...}} placeholders; lenient accepts them; "
                        "auto (default) is strict unless the file is a projected fixture or has placeholders")
    p = action("cat", "the logical events as JSONL (packed rows expanded, legacy import applied)")
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--canonical", action="store_true",
                   help="re-render the file in dsh's canonical form (header verbatim, body re-packed)")
    p = action("messages", "derive_messages() as a JSON array")
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p = action("repair", "crash recovery in place: cut a torn tail, append closers")
    p.add_argument("file", metavar="FILE", help=FILE_HELP)


def run(args: argparse.Namespace) -> int:
    action = args.log_command
    if action == "check":
        return _check(args.files, args.mode)
    try:
        if action == "cat":
            return _cat(args.file, args.canonical)
        if action == "messages":
            return _messages(args.file)
        return _repair(args.file)
    except RecursionError:
        raise DshError(f"{args.file}: a record is nested too deeply to read (not a session log)") from None
    except (ValueError, TypeError, KeyError) as err:  # as check reports them: one line naming the file
        raise DshError(f"{args.file}: {type(err).__name__}: {' '.join(str(err).split())}") from None


def _write(data: bytes) -> None:
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def _check(files: list[str], mode: str) -> int:
    from dsh_tui.session import jsonutil
    from dsh_tui.session.errors import DshError
    from dsh_tui.store import fixture

    ok_all = True
    for name in files:
        row: dict = {"file": name, "ok": False, "events": 0, "turns": 0, "steps": 0, "open_turn": False,
                     "error": None}
        try:
            log = fixture.open_log_file(name, mode)
            row.update(fixture.check_summary(log))
            row["ok"] = _bad_name(name) is None
            row["error"] = _bad_name(name)
        except DshError as err:
            row["error"] = _one_line(err, name)
        except (ValueError, TypeError, KeyError, RecursionError) as err:  # defensive: never a traceback
            row["error"] = f"{name}: {type(err).__name__}: {err}"
        ok_all &= row["ok"]
        _write(jsonutil.dumps_bytes(row) + b"\n")
    return 0 if ok_all else 1


def _bad_name(name: str) -> str | None:
    """A session log (``session.jsonl[.zstd]``) whose path is not UTF-8 reads as a file, but ``sessions``,
    ``resume`` and ``fork`` list it as unreadable (the catalog and dsh key sessions by text): say so here too."""
    import os

    from dsh_tui.store.catalog import RAW_NAME, ZSTD_NAME

    path = os.path.abspath(name)
    if os.path.basename(path) not in (RAW_NAME, ZSTD_NAME):
        return None
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        return (f"{shown}: its file name is not valid UTF-8: sessions, resume and fork list it as unreadable "
                "(rename the directory to list and open it)")
    return None


def _one_line(err: BaseException, name: str) -> str:
    msg = " ".join(str(err).split())
    return msg if name in msg else f"{name}: {msg}"


def _cat(name: str, canonical: bool) -> int:
    from dsh_tui.session import jsonutil
    from dsh_tui.store import fixture

    log = fixture.open_log_file(name)
    if canonical:
        _write(fixture.render_canonical(log))
        return 0
    events = fixture.imported_events(log)
    out = sys.stdout.buffer
    buf: list[bytes] = []
    size = 0
    for ev in events:
        line = jsonutil.dumps_bytes(ev) + b"\n"
        buf.append(line)
        size += len(line)
        if size > 1 << 20:
            out.write(b"".join(buf))
            buf, size = [], 0
    out.write(b"".join(buf))
    out.flush()
    return 0


def _messages(name: str) -> int:
    from dsh_tui.session import jsonutil
    from dsh_tui.store import fixture

    log = fixture.open_log_file(name)
    prepared = fixture.prepare_file(log)
    messages = prepared.session.derive_messages()
    _write(jsonutil.dumps_bytes(messages) + b"\n")
    return 0


def _repair(name: str) -> int:
    """Repair under the session's lock (``session.lock`` beside the log, as every writer takes it): a log
    a live process is writing is refused with the message ``run`` gives, never appended to."""
    from pathlib import Path

    from dsh_tui.store import jsonl
    from dsh_tui.store.lock import LOCK_NAME, SessionLock

    path = Path(name)
    if not path.is_file():
        return _repair_locked(name)  # the reader says why (missing, a directory, a device ...)
    try:
        header = jsonl.read_header(path) or {}
    except (OSError, ValueError, RecursionError, DshError):
        header = {}
    found = header.get("id")
    sid = found if isinstance(found, str) else path.name
    with SessionLock(path.parent / LOCK_NAME, sid):
        return _repair_locked(name)


def _repair_locked(name: str) -> int:
    from dsh_tui.store import fixture, jsonl

    log = fixture.open_log_file(name)
    prepared = fixture.prepare_file(log)
    if log.projected and (log.torn is not None or prepared.closers):
        raise fixture.LogFileError(f"{name}: a projected fixture (no seq/time) cannot be repaired in place")
    torn = log.torn
    changed = jsonl.commit_repair(log.path, log.prefix, prepared)
    if not changed:
        print(f"{name}: healthy ({len(prepared.stored)} events); nothing to do")
        return 0
    parts = []
    if torn is not None:
        parts.append(f"cut a torn tail of {log.prefix.file_size - torn.truncate_to} bytes")
        if torn.recovered_events:
            parts.append(f"re-appended {len(torn.recovered_events)} recovered events")
    if prepared.closers:
        kinds = ", ".join(c["type"] for c in prepared.closers)
        parts.append(f"appended {len(prepared.closers)} closers ({kinds})")
    # verify: the repaired file must now load balanced
    again = fixture.prepare_file(fixture.open_log_file(name))
    if again.closers or fixture.open_log_file(name).torn is not None:
        raise fixture.LogFileError(f"{name}: repair did not produce a balanced log")
    print(f"{name}: repaired: " + "; ".join(parts) + f"; now {len(again.stored)} events")
    return 0
