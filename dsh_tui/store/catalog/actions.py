"""Session actions the browser offers: rename, fork with a numbered title, archive, trash, restore."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from dsh_tui.store.fsio import open_regular

from .discover import _is_sqlite_path, _revision, discover
from .fold import _Fold, _text_of
from .reader import _iter_raw, _iter_zstd, _known_types, _parse_header, _Unreadable
from .rows import UNREADABLE, CatalogError, SessionRow, _apply_header, one_line

# ---------------------------------------------------------------------------------------------
# Session actions the browser offers (rename, fork with a numbered title, archive, trash, restore)

TRASH_DIR = ".trash"
ARCHIVE_DIR = ".archive"


def store_for(row: SessionRow):
    from dsh_tui.store.open import open_store

    if _is_sqlite_path(row.path):
        return open_store(row.root, backend="sqlite")
    return open_store(row.root, backend="jsonl", compression="zstd" if row.path.endswith(".zstd") else "none")


def _append_standalone(store, session_id: str, etype: str, data: dict) -> dict:
    """Append one standalone (plugin) event to a stored session under its lock."""
    import time as _time

    from dsh_tui.store import lock as locks

    with locks.acquire(store, session_id):
        res = store.load(session_id)
        event = {"type": etype, "seq": len(res.events), "time": int(_time.time() * 1000), "data": data}
        store.append(session_id, [event])
    return event


def rename(row: SessionRow, title: str) -> dict:
    """Retitle a session: a ``session/title`` event with source ``{kind:'user'}`` (it pins the title),
    normalized as dsh does (escapes and invisible characters removed, 80 bytes)."""
    from dsh_tui.session.titles import user_title_data

    try:
        data = user_title_data(title)
    except ValueError as err:
        raise CatalogError(str(err)) from None
    if row.id is None:
        raise CatalogError("an unreadable session cannot be renamed")
    return _append_standalone(store_for(row), row.id, "session/title", data)


def completed_turns(row: SessionRow) -> list[tuple[int, str]]:
    """(turn, first user text) of every completed turn: the fork picker's choices."""
    return [(turn, text) for turn, text, _kind in ended_turns(row)]


def ended_turns(row: SessionRow) -> list[tuple[int, str, str]]:
    """(turn, first user text, how it ended: "completed", "aborted", "error", …) of every ended turn a fork
    can follow (the fork picker marks the ones that did not complete)."""
    if row.id is None:
        return []
    res = store_for(row).inspect(row.id)
    out: list[tuple[int, str, str]] = []
    prompt: dict[int, str] = {}
    turn = 0
    for e in res.events[: len(res.events) - len(res.closers)]:
        t = e.get("type")
        d = e.get("data") or {}
        if t == "turn/start":
            turn = d.get("turn", turn + 1)
        elif t == "user/message" and (d.get("source") or {}).get("kind") == "user" and turn not in prompt:
            prompt[turn] = _text_of(d.get("content"), reasoning=False).replace("\n", " ")[:80]
        elif t == "turn/end" and (d.get("reason") or {}).get("kind") != "interrupted":
            out.append((d.get("turn", turn), prompt.get(d.get("turn", turn), ""),
                        str((d.get("reason") or {}).get("kind") or "completed")))
    return out


def prompt_title(prompt: str) -> str:
    """dsh's fallback title of a prompt: its first 5 words, at most 40 UTF-8 bytes (no ellipsis)."""
    words = " ".join(one_line(prompt).split(" ")[:5])
    cut = words.encode()[:40].decode("utf-8", "ignore")
    return cut.rstrip()


def numbered_title(base: str, taken: Iterable[str | None]) -> str:
    """``base (N)`` with the smallest N >= 1 not already used."""
    used = {t for t in taken if t}
    n = 1
    while f"{base} ({n})" in used:
        n += 1
    return f"{base} ({n})"


def fork_at_turn(row: SessionRow, turn: int, *, taken_titles: Iterable[str | None] = ()) -> str:
    """Fork ``row`` after ``turn`` (lifecycle.fork; the parent file is never written) and title the
    child "<parent title> (N)". Returns the child id."""
    from dsh_tui.store.lifecycle import fork

    if row.id is None:
        raise CatalogError("an unreadable session cannot be forked")
    store = store_for(row)
    header = fork(store, row.id, at_turn=turn)
    base = row.title or prompt_title(row.prompt or "") or row.id
    _append_standalone(store, header["id"], "session/title",
                       {"title": numbered_title(base, taken_titles), "messageSeqs": [], "source": {"kind": "user"}})
    return header["id"]


def _move(row_path: str, root: str, bucket: str, sid: str | None = None) -> Path:
    if _is_sqlite_path(row_path):
        raise CatalogError("archive and trash move session directories; a SQLite root has none")
    sess_dir = Path(row_path).parent
    rel = sess_dir.relative_to(root)
    dest = Path(root) / bucket / rel
    if dest.exists():
        import time as _time

        dest = dest.with_name(f"{dest.name}~{int(_time.time() * 1000)}")
    lock_file = sess_dir / "session.lock"
    if lock_file.exists():
        from dsh_tui.store.lock import SessionInUseError, holder

        pid = holder(lock_file)
        if pid is not None:  # the refusal ``run`` gives for a held session
            raise CatalogError(str(SessionInUseError(sid or sess_dir.name, pid if pid > 0 else None)))
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.rename(sess_dir, dest)
    return dest


def move_to_trash(row: SessionRow) -> Path:
    """Move the whole session directory to ``<root>/.trash/`` (restorable; nothing is deleted)."""
    return _move(row.path, row.root, TRASH_DIR, row.id)


def archive(row: SessionRow) -> Path:
    """Move the session directory to ``<root>/.archive/`` (out of the list, kept as is)."""
    return _move(row.path, row.root, ARCHIVE_DIR, row.id)


BUCKET_STATES = {TRASH_DIR: "in trash", ARCHIVE_DIR: "archived"}
_BUCKET_READ = 8 << 20  # bytes of a trashed log read for its title, prompt and turns


def bucket_rows(root: str | os.PathLike, bucket: str = TRASH_DIR) -> list[SessionRow]:
    """Rows of the sessions in a root's trash (or archive): header, title, first prompt and turns from
    the first few MiB of each log (the index does not cover these folders); state "in trash"/"archived"."""
    base = Path(root) / bucket
    rows = []
    known = _known_types()
    for path, st in discover(base):
        row = SessionRow(path=path, root=str(base), revision=_revision(st), size=st.st_size)
        try:
            with open_regular(path) as f:
                it = _iter_zstd(f, 0) if path.endswith(".zstd") else _iter_raw(f, 0)
                line, _ = next(it, (None, 0))
                if line is None:
                    raise _Unreadable("no complete header line")
                header = _parse_header(line)
                fold = _Fold(None, header, known)
                for line, end in it:
                    fold.line(line)
                    if end > _BUCKET_READ or fold.s["problem"] is not None:
                        break
            _apply_header(row, header)
            s = fold.s
            row.title, row.title_source, row.prompt = s["title"], s["title_source"], s["prompt"]
            row.turns, row.fork_turn = s["turns"], s["fork_turn"]
            row.tokens_in, row.tokens_out, row.tokens_cache = s["tin"], s["tout"], s["tcache"]
            row.updated_at = s["updated_at"]
            row.state = BUCKET_STATES.get(bucket, bucket.lstrip("."))
        except (_Unreadable, OSError) as err:
            row.state, row.reason = UNREADABLE, str(err)
            row.updated_at = row.created_at
        row.indexed = True
        rows.append(row)
    return rows


def restore(row: SessionRow) -> Path:
    """Move a trashed/archived session back to its place under the root."""
    sess_dir = Path(row.path).parent
    bucket = Path(row.root)
    root = bucket.parent
    rel = sess_dir.relative_to(bucket)
    stem, _, stamp = rel.name.rpartition("~")
    name = stem if stem and stamp.isdigit() and len(stamp) >= 10 else rel.name  # drop a clash suffix
    dest = root / rel.parent / name
    if dest.exists():
        raise CatalogError(f"cannot restore: {dest} already exists")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.rename(sess_dir, dest)
    return dest
