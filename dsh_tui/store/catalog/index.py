"""The session catalog: a derived SQLite index (WAL, FTS5) over every session log in the roots.

The catalog never decides what is visible. :meth:`Catalog.scan` walks the roots on disk and returns
one :class:`SessionRow` per log file it finds; rows whose file revision is unchanged come from the
index, the others are built from the header alone and flagged ``indexed=False`` until
:meth:`Catalog.index` reads them. An unreadable log is a row with its reason. Deleting the database
loses nothing: the next scan rebuilds it from the files.

Indexing is incremental: the byte offset of the last complete line (raw) or frame (zstd) and a
small fold state are kept per file, so a grown log is read from where the index stopped and an
unchanged revision (``dev:ino:size:mtimeNs:ctimeNs``) is not read at all.

Threads: a :class:`Catalog` opens one SQLite connection per thread, so a UI thread can scan while a
worker indexes.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from dsh_tui.session.errors import DshError, SessionCorruptionError

RAW_NAME = "session.jsonl"
SQLITE_DB = "sessions.sqlite"  # dsh's SQLite backend (store/sqlite.py) when present in a root
ZSTD_NAME = "session.jsonl.zstd"
SCHEMA_VERSION = 5  # 5: + first prompt, fork turn, end-reason states (older indexes are rebuilt)
_CHUNK = 1 << 16
_SID_SHIFT = 32  # FTS rowid = sid << 32 | n, so one session's text is a rowid range.
_MAX_TEXT = 20_000  # characters of one event kept for content search
_BATCH_SECONDS = 0.1
LOCK_PROBE_WINDOW = 24 * 3600  # seconds
_CHUNK_PREFIX = b'{"type":"assistant/chunk","seq":'
_LISTING_HEADERS = 256  # new session dirs whose header the first-paint listing reads itself
_SNAPSHOT_FORMAT = 2


# States shown by the browser and `dsh-tui sessions`.
COMPLETED = "completed"
INTERRUPTED = "interrupted"
OPEN_ELSEWHERE = "open elsewhere"
UNREADABLE = "unreadable"
BLANK = "blank"
FAILED = "failed"  # the last turn ended with an error (turn/end reason ``error``)
CANCELLED = "cancelled"  # the last turn was aborted (by the user, a parent, a hook, disposal)
BLOCKED = "blocked"
MAX_TOKENS = "max tokens"  # the last turn hit the output cap
INDEXING = "indexing…"  # a session directory on disk the index has not seen yet (listing only)


_END_STATES = {"completed": COMPLETED, "error": FAILED, "aborted": CANCELLED, "blocked": BLOCKED,
               "max-tokens": MAX_TOKENS, "interrupted": INTERRUPTED}
_PROMPT_CHARS = 200  # of the first prompt kept for the list (it is cut to the column anyway)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def end_state(kind: str | None) -> str:
    """The listed state of a session whose last turn ended with reason ``kind`` (an unknown kind, which
    dsh keeps, is shown as it is)."""
    if kind is None:
        return COMPLETED
    return _END_STATES.get(kind, kind)


def one_line(text: str) -> str:
    """``text`` on one line: whitespace runs collapsed to a space, control and invisible characters dropped."""
    return _CONTROL.sub("", " ".join(text.split()))


class CatalogError(DshError):
    """The catalog cannot do what was asked (a session id that is not in the roots, ...)."""


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass(slots=True)
class SessionRow:
    """One session log as the browser lists it. ``id`` is ``None`` only when the header is unreadable."""

    path: str
    root: str
    revision: str
    id: str | None = None
    cwd: str | None = None
    title: str | None = None
    title_source: str | None = None
    prompt: str | None = None  # the first human prompt, on one line (the title until one is written)
    fork_turn: int | None = None  # a fork child: the last turn of its seed ("after turn N")
    created_at: int = 0
    updated_at: int = 0
    last_time: int = 0
    turns: int = 0
    steps: int = 0
    events: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cache: int = 0
    tokens_reasoning: int = 0
    state: str = INTERRUPTED
    reason: str | None = None
    parent: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    size: int = 0
    indexed: bool = False
    children: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out + self.tokens_cache

    @property
    def is_subagent(self) -> bool:
        return self.origin == "subagent"

    @property
    def display_title(self) -> str | None:
        """What a list shows: the log's title, else the first prompt."""
        return self.title or self.prompt

    @property
    def is_fork(self) -> bool:
        return bool(self.parent) and not self.is_subagent

    def to_json(self) -> dict:
        d = asdict(self)
        d["parent"] = self.parent
        d["tokens"] = self.tokens
        return d


@dataclass
class SearchHit:
    """A content-search match: the session, the event seq it came from, and a snippet."""

    path: str
    id: str | None
    seq: int
    kind: str
    snippet: str  # the matched words in [brackets] (plain text output)
    text: str = ""  # the same snippet without marks
    marks: tuple[tuple[int, int], ...] = ()  # (start, end) of each matched word in ``text``


_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"  # snippet() markers; the same characters in a log's text are dropped
_SNIPPET_CONTROL = re.compile(
    r"[\x00\x01\x04-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def _marked(snippet: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(plain text on one line, match ranges) of an FTS snippet marked with ``_MARK_OPEN``/``_MARK_CLOSE``."""
    snippet = _SNIPPET_CONTROL.sub("", re.sub(r"\s+", " ", snippet))
    out: list[str] = []
    marks: list[tuple[int, int]] = []
    n = 0
    start = None
    for part in re.split("([\x02\x03])", snippet):
        if part == _MARK_OPEN:
            start = n
        elif part == _MARK_CLOSE:
            if start is not None and n > start:
                marks.append((start, n))
            start = None
        else:
            out.append(part)
            n += len(part)
    return "".join(out), tuple(marks)


# ---------------------------------------------------------------------------------------------
# Roots and discovery


def default_roots() -> list[Path]:
    """dsh's session root: ``$DSH_HOME/sessions`` (``~/.dsh/sessions``)."""
    from dsh_tui.paths import default_sessions_root

    return [default_sessions_root()]


def resolve_roots(extra: Iterable[str | os.PathLike] | None = None, *, include_default: bool = True) -> list[Path]:
    roots = default_roots() if include_default else []
    for r in extra or ():
        p = Path(r).expanduser().absolute()
        if p not in roots:
            roots.append(p)
    return roots


def default_db_path() -> Path:
    from dsh_tui.paths import cache_dir

    return cache_dir() / "catalog.sqlite"


def _has_sqlite(root) -> bool:
    """The root holds dsh's SQLite store (False when the root cannot even be searched)."""
    try:
        return os.path.isfile(os.path.join(root, SQLITE_DB))
    except (OSError, ValueError):
        return False


def _is_sqlite_path(path: str) -> bool:
    return "#" in path and path.rsplit("#", 1)[0].endswith(os.sep + SQLITE_DB)


_SQLITE_STORES: dict[tuple[str, int], Any] = {}


def _sqlite_store(root: Path):
    """One SqliteSessionStore per (root, thread): its connection is guarded by its own lock."""
    from dsh_tui.store.sqlite import SqliteSessionStore

    key = (str(root), threading.get_ident())
    store = _SQLITE_STORES.get(key)
    if store is None:
        store = _SQLITE_STORES[key] = SqliteSessionStore(root)
    return store


def _revision_mtime(revision: str) -> int:
    try:
        return int(revision.split(":")[3])
    except (IndexError, ValueError):
        return 0


def _revision(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _session_dirs(projects: list[os.DirEntry], unreadable: list[tuple[str, OSError]] | None = None
                  ) -> Iterator[tuple[str, os.DirEntry]]:
    """``(project name, session dir entry)`` for every session directory under a JSONL root's listed
    entries (dot directories and ``_trash`` skipped; an unreadable project is skipped, and added to
    ``unreadable`` with its error when a list is given)."""
    for proj in projects:
        if not proj.is_dir(follow_symlinks=False) or proj.name.startswith(".") or proj.name == "_trash":
            continue
        try:
            sessions = list(os.scandir(proj.path))
        except OSError as err:
            if unreadable is not None:
                unreadable.append((proj.path, err))
            continue
        pname = proj.name
        for sess in sessions:
            if sess.is_dir(follow_symlinks=False):
                yield pname, sess


def discover(root: Path, unreadable: list[tuple[str, OSError]] | None = None
             ) -> Iterator[tuple[str, os.stat_result]]:
    """Every ``<root>/<project>/<session>/session.jsonl[.zstd]`` with its stat. A directory that cannot
    be read (a project, or a session directory whose log cannot be looked at) is added to
    ``unreadable`` with its error when a list is given: nothing on disk is hidden."""
    try:
        projects = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as err:
        if unreadable is not None:
            unreadable.append((str(root), err))
        return
    names = (ZSTD_NAME, RAW_NAME)
    for _, sess in _session_dirs(projects, unreadable):
        denied = None
        for name in names:
            p = sess.path + os.sep + name
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue
            except OSError as err:
                denied = err
                continue
            if name != names[0]:
                names = (name, names[0])  # one root, one encoding: try the one just seen first
            yield p, st
            break
        else:
            if denied is not None and unreadable is not None:
                unreadable.append((sess.path, denied))


# ---------------------------------------------------------------------------------------------
# Reading a log: complete records only, from a byte offset


def _iter_raw(f, offset: int) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end offset) for every complete line at or after ``offset``."""
    f.seek(offset)
    pos = offset
    buf = b""
    while True:
        chunk = f.read(_CHUNK * 16)
        if not chunk:
            return
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            pos += nl + 1 - start
            yield buf[start:nl], pos
            start = nl + 1
        buf = buf[start:]


def _iter_zstd(f, offset: int) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end-of-frame offset) for lines of every complete frame at or after ``offset``.

    A line's offset is the end of its frame only for the frame's last line, else the frame start,
    so stopping after any yielded line never skips part of a frame."""
    import zstandard  # indexing only: kept off the browser's first paint

    dctx = zstandard.ZstdDecompressor()
    f.seek(offset)
    frame_start = offset
    pending = b""
    while True:
        dobj = dctx.decompressobj()
        out = []
        fed = 0
        data = pending
        pending = b""
        while True:
            if not data:
                data = f.read(_CHUNK)
                if not data:
                    return  # EOF inside a frame (torn) or clean EOF: nothing more complete
            fed += len(data)
            try:
                out.append(dobj.decompress(data))
            except zstandard.ZstdError as err:
                raise _Unreadable(f"zstd frame at byte {frame_start} does not decode: {err}") from None
            data = b""
            if dobj.eof:
                pending = dobj.unused_data
                break
        frame_end = frame_start + fed - len(pending)
        text = b"".join(out)
        lines = text.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            raise _Unreadable(f"zstd frame at byte {frame_start} ends inside a record")
        for i, line in enumerate(lines):
            yield line, (frame_end if i == len(lines) - 1 else frame_start)
        frame_start = frame_end


class _Unreadable(Exception):
    pass


def read_header(path: str) -> dict:
    """Only the header record (first line; zstd: first frame). Raises ``_Unreadable``."""
    with open(path, "rb") as f:
        it = _iter_zstd(f, 0) if path.endswith(".zstd") else _iter_raw(f, 0)
        for line, _ in it:
            return _parse_header(line)
    raise _Unreadable("no complete header line")


def _loads(raw: bytes):
    """orjson, else the session reader's own parser: a lone surrogate escape (``"\\udcff"``) is valid
    in a dsh log (JavaScript writes one) though orjson refuses it; the catalog (a display cache)
    keeps such characters as U+FFFD so every value it stores is valid UTF-8."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    from dsh_tui.session import jsonutil

    return _no_surrogates(jsonutil.loads(raw))


def _no_surrogates(value):
    if isinstance(value, str):
        return value if _utf8_name(value) else "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _parse_header(line: bytes) -> dict:
    try:
        h = _loads(line)
    except (ValueError, RecursionError):
        raise _Unreadable("first line is not JSON") from None
    if not isinstance(h, dict) or h.get("type") != "session":
        raise _Unreadable("first line is not a session header")
    v = h.get("version", 0)
    if isinstance(v, int) and v > 0:
        raise _Unreadable(f"written by a newer harness (format version {v}); upgrade dsh-tui")
    if isinstance(v, int) and v < 0:
        raise _Unreadable(f"format version {v} has no upgrade path")
    if not isinstance(h.get("id"), str) or not h["id"]:
        raise _Unreadable("header has no id")
    return h


def _known_types() -> frozenset[str] | None:
    try:
        from dsh_tui.session.events import KNOWN_EVENT_TYPES
    except ImportError:
        return None
    return frozenset(KNOWN_EVENT_TYPES)


def _expand(obj: dict) -> list[dict]:
    """Expand a packed chunk row into its ``assistant/chunk`` members (a plain event -> [event])."""
    if "seq0" not in obj:
        return [obj]
    from dsh_tui.session.rows import expand_line  # indexing only: kept off the browser's first paint

    return expand_line(obj)


# ---------------------------------------------------------------------------------------------
# The per-log fold (incremental; its state is stored in the index)


def _text_of(blocks, *, reasoning: bool = True) -> str:
    parts = []
    if not isinstance(blocks, list):
        return ""
    for b in blocks:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text" or (reasoning and t == "reasoning"):
            parts.append(str(b.get("text", "")))
        elif t == "tool-call":
            parts.append(f"{b.get('name', '')} {b.get('arguments', '')}")
        elif t == "tool-result":
            parts.append(_text_of(b.get("content")))
    return "\n".join(p for p in parts if p)


class _Fold:
    """Listing facts of one log, folded event by event. ``state`` is a plain dict (stored as JSON)."""

    FIELDS = {
        "next_seq": 0, "line": 1, "open_turn": None, "open_step": None, "turns": 0, "steps": 0,
        "title": None, "title_source": None, "prompt": None, "last_turn": None, "last_end": None,
        "fork_turn": None, "updated_at": 0, "last_time": 0,
        "tin": 0, "tout": 0, "tcache": 0, "treason": 0, "step_usage": False,
        "preset": None, "problem": None, "problem_line": None, "corrupt": None,
    }

    def __init__(self, state: dict | None, header: dict, known: frozenset[str] | None) -> None:
        self.s = dict(self.FIELDS)
        if state:
            self.s.update(state)
        else:
            ca = header.get("createdAt")
            self.s["updated_at"] = ca if isinstance(ca, int) else 0
        self.known = known
        self.texts: list[tuple[int, str, str]] = []

    def line(self, raw: bytes) -> None:
        s = self.s
        s["line"] += 1
        if s["problem"] is not None:
            # Past the first problem: only look for a committed turn/end (=> corruption).
            if s["corrupt"] is None and b'"turn/end"' in raw:
                s["corrupt"] = s["problem"]
            return
        if raw.startswith(_CHUNK_PREFIX) and b'"usage"' not in raw and raw.endswith(b"}"):
            # Fast path for the bulk of a log (dsh writes type, seq first): a streamed delta only
            # advances the seq; nothing in it is listed or searched.
            end = raw.find(b",", len(_CHUNK_PREFIX))
            digits = raw[len(_CHUNK_PREFIX):end]
            if digits.isdigit() and int(digits) == s["next_seq"]:
                s["next_seq"] += 1
                return
        try:
            obj = _loads(raw)
        except (ValueError, RecursionError):
            s["problem"] = f"unparsable line {s['line']}"
            return
        if not isinstance(obj, dict):
            s["problem"] = f"line {s['line']} is not an event"
            return
        try:
            events = _expand(obj)
        except (KeyError, TypeError, IndexError, SessionCorruptionError):
            s["problem"] = f"malformed packed row at line {s['line']}"
            return
        for ev in events:
            seq = ev.get("seq")
            if seq != s["next_seq"]:
                s["problem"] = f"seq gap at line {s['line']} (expected {s['next_seq']}, got {seq})"
                return
            t = ev.get("type")
            if self.known is not None and t not in self.known and ev.get("ignorable") is not True:
                s["problem"] = f"written by a newer harness (unknown event type {t!r} at line {s['line']})"
                s["corrupt"] = s["problem"]
                return
            s["next_seq"] += 1
            self.event(ev)

    def event(self, ev: dict) -> None:
        s = self.s
        t = ev.get("type")
        d = ev.get("data") if isinstance(ev.get("data"), dict) else {}
        seq = ev["seq"]
        time = ev.get("time") if isinstance(ev.get("time"), int) else 0
        s["last_time"] = max(s["last_time"], time)
        if t == "assistant/chunk":
            chunk = d.get("chunk") or {}
            if chunk.get("type") == "usage":
                self._usage(chunk.get("usage"))
                s["step_usage"] = True
            return
        if t == "turn/start":
            s["open_turn"] = d.get("turn")
            s["turns"] += 1
        elif t == "turn/end":
            s["open_turn"] = None
            s["open_step"] = None
            s["last_turn"] = d.get("turn")
            reason = d.get("reason")
            kind = reason.get("kind") if isinstance(reason, dict) else reason
            s["last_end"] = kind if isinstance(kind, str) else None
        elif t == "step/start":
            s["open_step"] = d.get("step")
            s["steps"] += 1
            s["step_usage"] = False
        elif t == "step/end":
            s["open_step"] = None
        elif t == "user/message":
            src = d.get("source") or {}
            text = _text_of(d.get("content"))
            if src.get("kind") == "user":
                s["updated_at"] = max(s["updated_at"], time)
                self._text(seq, "user", text)
                if s["prompt"] is None:
                    s["prompt"] = one_line(_text_of(d.get("content"), reasoning=False))[:_PROMPT_CHARS] or None
            elif src.get("kind") == "tool":
                self._text(seq, "tool", text)
            else:
                self._text(seq, "context", text)
        elif t == "assistant/message":
            msg = d.get("message") or {}
            self._text(seq, "assistant", _text_of(msg.get("content")))
            if not s["step_usage"] and isinstance(d.get("usage"), dict):
                self._usage(d["usage"])
        elif t == "tool/call":
            self._text(seq, "tool-call", f"{d.get('name', '')} {d.get('arguments', '')}")
        elif t == "tool/result":
            msg = d.get("message") or {}
            self._text(seq, "tool", _text_of(msg.get("content")))
        elif t == "session/title":
            if isinstance(d.get("title"), str):
                s["title"] = d["title"]
                s["title_source"] = (d.get("source") or {}).get("kind")
        elif t == "session/end-seed":
            if s["fork_turn"] is None and isinstance(s["last_turn"], int):
                s["fork_turn"] = s["last_turn"]
        elif t == "agent-preset/selected":
            s["preset"] = d.get("agentPreset")

    def _usage(self, u) -> None:
        if not isinstance(u, dict):
            return
        s = self.s
        s["tin"] += _int(u.get("inputTokens"))
        s["tout"] += _int(u.get("outputTokens"))
        s["tcache"] += _int(u.get("cacheReadTokens")) + _int(u.get("cacheWriteTokens"))
        s["treason"] += _int(u.get("reasoningTokens"))

    def _text(self, seq: int, kind: str, text: str) -> None:
        if text:
            text = text[:_MAX_TEXT]
            if "\x02" in text or "\x03" in text:  # the search snippet's markers
                text = text.replace("\x02", "").replace("\x03", "")
            self.texts.append((seq, kind, text))


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


# ---------------------------------------------------------------------------------------------
# The catalog


_COLUMNS = [
    "path", "root", "revision", "id", "cwd", "title", "title_source", "prompt", "fork_turn", "created_at",
    "updated_at",
    "last_time", "turns", "steps", "events", "tokens_in", "tokens_out", "tokens_cache",
    "tokens_reasoning", "state", "reason", "parent", "seed_length", "origin", "delegation_depth",
    "agent_preset", "size",
]


class Catalog:
    """The derived index. ``roots`` are session roots (dsh layout); ``db_path`` the SQLite file."""

    def __init__(self, roots: Iterable[str | os.PathLike] | None = None, db_path: str | os.PathLike | None = None,
                 *, lock_probe: Callable[[str], bool] | None = None) -> None:
        self.roots = [Path(r) for r in (roots if roots is not None else default_roots())]
        self.db_path = Path(db_path) if db_path is not None else default_db_path()
        self._local = threading.local()
        self._known = _known_types()
        self._lock_probe = lock_probe if lock_probe is not None else _default_lock_probe()
        self._write_lock = threading.Lock()
        self._dirty = False  # the index changed since the listing snapshot was written

    # -- connection ---------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection; reopened (and the schema recreated) if the file was deleted."""
        loc = self._local
        conn = getattr(loc, "conn", None)
        ident = _file_ident(self.db_path)
        if conn is not None and ident == getattr(loc, "ident", None) and ident is not None:
            return conn
        if conn is not None and getattr(loc, "memory", False):
            return conn  # the on-disk catalog could not be used: this run goes on in memory
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._open()
            except sqlite3.DatabaseError:
                # A damaged catalog is only a cache: start a new one (the logs are the truth).
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(str(self.db_path) + suffix)
                conn = self._open()
        except (OSError, sqlite3.Error) as err:
            return self._use_memory(err)
        loc.conn = conn
        loc.ident = _file_ident(self.db_path)
        return conn

    def _use_memory(self, err: BaseException | None = None) -> sqlite3.Connection:
        """The catalog is a cache: when its file cannot be created, opened or written (a read-only or
        full disk, a file-size limit, ``XDG_CACHE_HOME`` naming a file ...) this thread goes on with an
        empty index in memory, rebuilt from the logs. ``self.cache_problem`` says why."""
        loc = self._local
        old = getattr(loc, "conn", None)
        if old is not None:
            with contextlib.suppress(sqlite3.Error):
                old.close()
        self.cache_problem = f"{self.db_path}: {getattr(err, 'strerror', None) or err}" if err else "in memory"
        conn = self._open(":memory:")
        loc.conn, loc.ident, loc.memory = conn, None, True
        return conn

    @property
    def in_memory(self) -> bool:
        return bool(getattr(self._local, "memory", False))

    def _open(self, where: str | os.PathLike | None = None) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path if where is None else where, timeout=10, check_same_thread=False, isolation_level=None)
        try:
            # Plain sqlite3 pragmas: sqlite_utils.Database() loads setuptools entry points (~100 ms),
            # which alone would blow the warm-open budget.
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._ensure_schema(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        (ver,) = conn.execute("PRAGMA user_version").fetchone()
        if ver == SCHEMA_VERSION:
            return
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                (ver,) = conn.execute("PRAGMA user_version").fetchone()
                if ver != SCHEMA_VERSION:
                    conn.execute("DROP TABLE IF EXISTS sessions")
                    conn.execute("DROP TABLE IF EXISTS content")
                    conn.execute("DROP TABLE IF EXISTS snapshot")
                    conn.execute("CREATE TABLE snapshot (root TEXT PRIMARY KEY, data BLOB)")
                    cols = ",\n".join(
                        f"{c} {'INTEGER' if c in _INT_COLS else 'TEXT'}" for c in _COLUMNS if c != "path"
                    )
                    conn.execute(
                        f"CREATE TABLE sessions (sid INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, {cols},"
                        " fold TEXT, header TEXT, offset INTEGER, ident TEXT)"
                    )
                    conn.execute("CREATE INDEX sessions_id ON sessions(id)")
                    conn.execute(
                        "CREATE VIRTUAL TABLE content USING fts5(text, seq UNINDEXED, kind UNINDEXED,"
                        " tokenize='unicode61 remove_diacritics 2')"
                    )
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- listing ------------------------------------------------------------------------------

    def listing(self) -> list[SessionRow]:
        """First-paint rows, cheap: the session directories on disk now (one ``scandir`` per project,
        no stat of a log, which proves what exists) joined with the index's listing snapshot (the
        facts the list shows; the rest stays zero and ``revision`` empty until :meth:`scan`).

        A directory the snapshot does not know is still listed: from its header when there are few
        such (``indexed=False``), else as a placeholder in state :data:`INDEXING`. Facts may be stale
        (a grown log, a log file deleted inside a kept directory) until :meth:`scan` revalidates the
        revisions; a deleted directory is never listed."""
        # ~20k objects allocated in a burst: collector passes over the whole (UI) heap on the way
        # cost more than the listing itself, and nothing here makes a reference cycle.
        gc_on = gc.isenabled()
        gc.disable()
        try:
            return self._listing()
        finally:
            if gc_on:
                gc.enable()

    def _listing(self) -> list[SessionRow]:
        try:
            conn = self._conn()
            snaps = dict(conn.execute("SELECT root, data FROM snapshot").fetchall())
        except sqlite3.Error:
            conn, snaps = None, {}
        rows: list[SessionRow] = []
        seen: set[str] = set()
        new: list[tuple[str, str]] = []  # (session dir, root) not in the snapshot
        recent_ns = (time.time() - LOCK_PROBE_WINDOW) * 1e9
        probe = self._lock_probe
        for root in self.roots:
            rroot = str(root)
            if _has_sqlite(root):
                if conn is not None:
                    self._scan_sqlite(Path(root), self._index_rows(conn), rows, seen)
                continue
            snap = _load_snapshot(snaps.get(rroot))
            if not snap and snaps.get(rroot):
                self._dirty = True  # unusable (another format, damaged): the next save replaces it
            try:
                projects = list(os.scandir(root))
            except OSError:
                continue
            append = rows.append
            for pname, sess in _session_dirs(projects):
                rec = snap.get(pname + "/" + sess.name)
                if rec is None:
                    new.append((sess.path, rroot))
                    continue
                row = SessionRow(sess.path + os.sep + rec[0], rroot, *rec[1:-1], 0, None, 0, True)
                append(row)
                if probe is not None and (rec[-1] >= recent_ns or row.state == INTERRUPTED) and row.id \
                        and row.state != UNREADABLE:
                    with contextlib.suppress(OSError):
                        if probe(row.path):
                            row.state = OPEN_ELSEWHERE
        if len(new) <= _LISTING_HEADERS:
            for sess_dir, rroot in new:
                for name in (RAW_NAME, ZSTD_NAME):
                    path = sess_dir + os.sep + name
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    row = self._header_row(path, rroot, _revision(st), st.st_size, None)
                    rows.append(row)
                    self._post_process([row])  # its lock (and an empty children list)
                    break
        else:
            rows += [SessionRow(path=d + os.sep + RAW_NAME, root=r, revision="", state=INDEXING) for d, r in new]
        # lineage (the rows are new: their children lists are empty)
        children = [r for r in rows if r.parent]
        if children:
            by_id = {r.id: r for r in rows if r.id}
            for r in children:
                if r.parent in by_id:
                    by_id[r.parent].children.append(r.id)
        return rows

    def _index_rows(self, conn: sqlite3.Connection) -> dict[str, list]:
        # One JSON value for the whole table: sqlite3 releases the GIL on every row step, and 10k
        # hand-offs with a busy UI thread cost more than building and parsing one string.
        (blob,) = conn.execute(f"SELECT json_group_array(json_array({', '.join(_COLUMNS)})) FROM sessions").fetchone()
        return {r[0]: r for r in orjson.loads(blob)}

    def save_snapshot(self, *, force: bool = False) -> None:
        """Write the listing snapshot (per root: ``project/session`` -> the facts the list shows)
        when the index changed since the last one, or when a root has none."""
        conn = self._conn()
        have = {r[0] for r in conn.execute("SELECT root FROM snapshot")}
        roots = [str(r) for r in self.roots if not _has_sqlite(r)]
        if not (force or self._dirty or any(r not in have for r in roots)):
            return
        self._dirty = False
        cols = ", ".join(_SNAPSHOT_COLUMNS)
        (blob,) = conn.execute(f"SELECT json_group_array(json_array({cols})) FROM sessions").fetchone()
        strings: dict[str, str] = {}  # one object per repeated string (cwd, state, ...): marshal refs
        per_root: dict[str, dict[str, tuple]] = {r: {} for r in roots}
        for (path, revision, id_, cwd, title, prompt, fork_turn, updated, turns, tin, tout, tcache, state, reason,
             parent, seed_length, origin) in orjson.loads(blob):
            for r in roots:
                if path.startswith(r + os.sep):
                    parts = path[len(r) + 1:].split(os.sep)
                    if len(parts) == 3:
                        sv = strings.setdefault
                        # SessionRow's positional fields from ``revision`` on, then the log's mtime
                        per_root[r][parts[0] + "/" + parts[1]] = (
                            sv(parts[2], parts[2]), "", id_, sv(cwd, cwd) if cwd else cwd, title, None, prompt,
                            fork_turn, 0, updated,
                            0, turns, 0, 0, tin, tout, tcache, 0, sv(state, state), reason, parent, seed_length,
                            sv(origin, origin) if origin else origin, _revision_mtime(revision or ""))
                    break
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for r, snap in per_root.items():
                    conn.execute("INSERT OR REPLACE INTO snapshot (root, data) VALUES (?, ?)",
                                 (r, marshal.dumps((_SNAPSHOT_FORMAT, _SNAPSHOT_FIELDS, snap))))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def scan(self) -> list[SessionRow]:
        """Rows for every log on disk now. Indexed facts where the revision is unchanged; header-only
        rows (``indexed=False``) for new or changed logs; rows of logs gone from disk are dropped."""
        try:
            return self._scan()
        except sqlite3.Error as err:
            if self.in_memory:
                raise
            self._use_memory(err)
            return self._scan()

    def _scan(self) -> list[SessionRow]:
        conn = self._conn()
        known = self._index_rows(conn)
        rows: list[SessionRow] = []
        seen: set[str] = set()
        for root in self.roots:
            rroot = str(root)
            if _has_sqlite(root):
                self._scan_sqlite(Path(root), known, rows, seen)
                continue
            denied: list[tuple[str, OSError]] = []
            for path, st in discover(root, denied):
                if path in seen:
                    continue
                seen.add(path)
                rev = _revision(st)
                if not _utf8_name(path):
                    rows.append(_bad_name_row(path, rroot, rev, st.st_size))
                    continue
                rec = known.get(path)
                if rec is not None and rec[2] == rev:
                    row = SessionRow(*rec, True)  # _COLUMNS is the dataclass's field order
                    row.root = rroot
                else:
                    row = self._header_row(path, rroot, rev, st.st_size, rec)
                rows.append(row)
            for path, err in denied:
                if path not in seen:
                    seen.add(path)
                    rows.append(SessionRow(path=path, root=rroot, revision="", state=UNREADABLE, indexed=True,
                                           reason=f"cannot read {_shown(path)}: {err.strerror or err}"))
        gone = [p for p in known if p not in seen and self._under_roots(p)]
        if gone:
            self._forget(conn, gone)
        self._post_process(rows)
        return rows

    def _scan_sqlite(self, root: Path, known: dict, rows: list[SessionRow], seen: set[str]) -> None:
        """A root holding dsh's SQLite store: one row per stored session (``<db>#<id>`` as its path)."""
        try:
            snapshots = _sqlite_store(root).list_snapshots()
        except Exception as err:  # noqa: BLE001 - the whole store is unreadable: one row says why
            path = str(root / SQLITE_DB)
            seen.add(path)
            rows.append(SessionRow(path=path, root=str(root), revision="", state=UNREADABLE,
                                   reason=f"SQLite store: {err}", indexed=True))
            return
        for snap in snapshots:
            sid = snap.header.get("id")
            path = f"{root / SQLITE_DB}#{sid}"
            seen.add(path)
            rec = known.get(path)
            if rec is not None and rec[2] == snap.revision:
                row = SessionRow(*rec, True)
            else:
                row = SessionRow(*rec, False) if rec is not None else SessionRow(path=path, root=str(root),
                                                                                 revision=snap.revision)
                row.revision = snap.revision
                if rec is None:
                    _apply_header(row, snap.header)
                    row.updated_at = row.created_at
            row.root = str(root)
            rows.append(row)

    def _index_sqlite(self, row: SessionRow, conn: sqlite3.Connection) -> SessionRow:
        """Index a session of a SQLite root: events past the indexed seq while its incarnation holds."""
        root = Path(row.root)
        sid = row.path.rsplit("#", 1)[1]
        rec = conn.execute("SELECT sid, fold, header, offset, ident FROM sessions WHERE path=?", (row.path,)).fetchone()
        ident = row.revision.rsplit(":revision:", 1)[0]  # store + incarnation: same history, maybe grown
        fold_state = header = None
        start = 0
        if rec is not None and rec[4] == ident and rec[1]:
            fold_state, header, start = orjson.loads(rec[1]), orjson.loads(rec[2]), rec[3] or 0
        try:
            store = _sqlite_store(root)
            if header is None:
                header = next(s.header for s in store.list_snapshots() if s.header.get("id") == sid)
                start = 0
            events = store.read_from(sid, start)
        except Exception as err:  # noqa: BLE001 - an unreadable session is a row with its reason
            self._store_unreadable(conn, row, rec, str(err) or type(err).__name__, ident)
            return row
        fold = _Fold(fold_state, header, self._known)
        for ev in events:
            if ev.get("seq") != fold.s["next_seq"]:
                fold.s["problem"] = fold.s["corrupt"] = f"seq gap at seq {ev.get('seq')} (expected {fold.s['next_seq']})"
                break
            fold.s["next_seq"] += 1
            fold.event(ev)
        self._finish_row(row, header, fold)
        self._store(conn, row, rec[0] if rec else None, fold.s, header, fold.s["next_seq"], ident, fold.texts,
                    keep_content=start > 0)
        return row

    def _under_roots(self, path: str) -> bool:
        return any(path.startswith(str(r) + os.sep) for r in self.roots)

    def _header_row(self, path: str, root: str, rev: str, size: int, rec) -> SessionRow:
        if rec is not None:
            # Known but changed: keep the old facts on display until re-indexed.
            row = SessionRow(*rec, False)
            row.revision, row.size, row.root = rev, size, root
            return row
        row = SessionRow(path=path, root=root, revision=rev, size=size)
        try:
            h = read_header(path)
        except (_Unreadable, OSError) as err:
            row.state, row.reason = UNREADABLE, str(err)
            return row
        _apply_header(row, h)
        row.updated_at = row.created_at
        return row

    def _post_process(self, rows: list[SessionRow]) -> None:
        by_id = {r.id: r for r in rows if r.id}
        for r in rows:
            r.children = []
        # A live writer elsewhere is probed only where one is plausible (an open turn, or a log written
        # in the last LOCK_PROBE_WINDOW): one stat per session would dominate a warm scan of 10k logs.
        # Resume, rename and delete always check the lock themselves.
        recent_ns = (time.time() - LOCK_PROBE_WINDOW) * 1e9
        for r in rows:
            if r.parent and r.parent in by_id:
                by_id[r.parent].children.append(r.id)
            if r.state == UNREADABLE or self._lock_probe is None or not r.id:
                continue
            if r.state != INTERRUPTED and _revision_mtime(r.revision) < recent_ns:
                continue
            try:
                if self._lock_probe(r.path):
                    r.state = OPEN_ELSEWHERE
            except OSError:
                pass

    def _forget(self, conn: sqlite3.Connection, paths: list[str]) -> None:
        self._dirty = True
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for p in paths:
                    r = conn.execute("SELECT sid FROM sessions WHERE path=?", (p,)).fetchone()
                    if r:
                        self._drop_content(conn, r[0])
                        conn.execute("DELETE FROM sessions WHERE sid=?", (r[0],))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    @staticmethod
    def _drop_content(conn: sqlite3.Connection, sid: int) -> None:
        lo = sid << _SID_SHIFT
        conn.execute("DELETE FROM content WHERE rowid >= ? AND rowid < ?", (lo, lo + (1 << _SID_SHIFT)))

    # -- indexing -----------------------------------------------------------------------------

    def index(self, rows: Iterable[SessionRow], *, progress: Callable[[int, int, SessionRow], None] | None = None,
              cancel: threading.Event | None = None) -> list[SessionRow]:
        """Index every row with ``indexed=False`` (in place) and return them."""
        todo = [r for r in rows if not r.indexed]
        i = 0
        while i < len(todo):
            if cancel is not None and cancel.is_set():
                break
            conn = self._conn()
            start = i
            deadline = time.monotonic() + _BATCH_SECONDS
            # Many logs per transaction: one commit per ~0.1 s of work instead of one per log.
            with self._write_lock:
                conn.execute("BEGIN IMMEDIATE")
                self._local.batch = True
                try:
                    while i < len(todo) and (i == start or time.monotonic() < deadline):
                        self.index_one(todo[i], conn=conn)
                        i += 1
                    conn.execute("COMMIT")
                except BaseException:
                    _rollback(conn)
                    raise
                finally:
                    self._local.batch = False
            if progress is not None:
                for k in range(start, i):
                    progress(k + 1, len(todo), todo[k])
        return todo

    def refresh(self) -> list[SessionRow]:
        """Scan and index everything that changed; the rows are complete on return. When the catalog
        file cannot be written (full disk, I/O error, read-only), everything is indexed in memory."""
        try:
            rows = self.scan()
            self.index(rows)
        except sqlite3.Error as err:
            if self.in_memory:
                raise
            self._use_memory(err)
            rows = self.scan()
            self.index(rows)
        self._post_process(rows)
        return rows

    def index_one(self, row: SessionRow, *, conn: sqlite3.Connection | None = None) -> SessionRow:
        if not _utf8_name(row.path):  # the index holds text: such a path cannot be a key in it
            row.state, row.reason, row.indexed = UNREADABLE, _BAD_NAME, True
            return row
        conn = conn if conn is not None else self._conn()
        if _is_sqlite_path(row.path):
            return self._index_sqlite(row, conn)
        rec = conn.execute(
            "SELECT sid, fold, header, offset, ident, revision FROM sessions WHERE path=?", (row.path,)
        ).fetchone()
        try:
            st = os.stat(row.path)
        except OSError as err:
            row.state, row.reason, row.indexed = UNREADABLE, f"cannot stat: {err.strerror}", True
            return row
        ident = f"{st.st_dev}:{st.st_ino}"
        fold_state = header = None
        offset = 0
        if rec is not None and rec[4] == ident and rec[3] is not None and rec[3] <= st.st_size and rec[1]:
            fold_state, header, offset = orjson.loads(rec[1]), orjson.loads(rec[2]), rec[3]
            if fold_state.get("problem") is not None or fold_state.get("sig") != _tail_sig(row.path, offset):
                fold_state = header = None
                offset = 0
        grown = offset > 0
        texts: list[tuple[int, str, str]] = []
        row.revision, row.size = _revision(st), st.st_size
        try:
            with open(row.path, "rb") as f:
                it = _iter_zstd(f, offset) if row.path.endswith(".zstd") else _iter_raw(f, offset)
                if header is None:
                    line, offset = next(it, (None, 0))
                    if line is None:
                        raise _Unreadable("no complete header line")
                    header = _parse_header(line)
                fold = _Fold(fold_state, header, self._known)
                for line, end in it:
                    fold.line(line)
                    if fold.s["problem"] is None:
                        offset = end
                texts = fold.texts
        except _Unreadable as err:
            self._store_unreadable(conn, row, rec, str(err), ident)
            return row
        except OSError as err:
            self._store_unreadable(conn, row, rec, f"cannot read: {err.strerror or err}", ident)
            return row
        fold.s["sig"] = _tail_sig(row.path, offset)
        self._finish_row(row, header, fold)
        self._store(conn, row, rec[0] if rec else None, fold.s, header, offset, ident, texts, keep_content=grown)
        return row

    def _finish_row(self, row: SessionRow, header: dict, fold: _Fold) -> None:
        _apply_header(row, header)
        s = fold.s
        row.title, row.title_source = s["title"], s["title_source"]
        row.prompt, row.fork_turn = s["prompt"], s["fork_turn"]
        row.updated_at, row.last_time = s["updated_at"], s["last_time"]
        row.turns, row.steps, row.events = s["turns"], s["steps"], s["next_seq"]
        row.tokens_in, row.tokens_out, row.tokens_cache, row.tokens_reasoning = (
            s["tin"], s["tout"], s["tcache"], s["treason"])
        if s["preset"]:
            row.agent_preset = s["preset"]
        if s["corrupt"]:
            row.state, row.reason = UNREADABLE, s["corrupt"]
        elif s["problem"]:
            row.state, row.reason = INTERRUPTED, f"torn tail: {s['problem']}"
        elif s["open_turn"] is not None:
            row.state, row.reason = INTERRUPTED, f"turn {s['open_turn']} is open"
        elif s["turns"] == 0:
            row.state, row.reason = BLANK, None
        else:
            row.state, row.reason = end_state(s["last_end"]), None
        row.indexed = True

    def _store_unreadable(self, conn, row: SessionRow, rec, reason: str, ident: str) -> None:
        row.state, row.reason, row.indexed = UNREADABLE, reason, True
        self._store(conn, row, rec[0] if rec else None, None, None, None, ident, [], keep_content=False)

    def _store(self, conn, row: SessionRow, sid: int | None, fold: dict | None, header: dict | None,
               offset: int | None, ident: str, texts: list[tuple[int, str, str]], *, keep_content: bool) -> None:
        self._dirty = True
        values = [getattr(row, c) for c in _COLUMNS]
        extra = [orjson.dumps(fold).decode() if fold is not None else None,
                 orjson.dumps(header).decode() if header is not None else None, offset, ident]
        if getattr(self._local, "batch", False):
            self._write(conn, row, sid, values, extra, texts, keep_content)
            return
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._write(conn, row, sid, values, extra, texts, keep_content)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def _write(self, conn, row: SessionRow, sid: int | None, values: list, extra: list,
               texts: list[tuple[int, str, str]], keep_content: bool) -> None:
        if sid is None:
            # A concurrent indexer may have inserted it meanwhile.
            r = conn.execute("SELECT sid FROM sessions WHERE path=?", (row.path,)).fetchone()
            sid = r[0] if r else None
        if sid is None:
            cols = _COLUMNS + ["fold", "header", "offset", "ident"]
            cur = conn.execute(
                f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                values + extra,
            )
            sid = cur.lastrowid
            base = 0
        else:
            sets = ", ".join(f"{c}=?" for c in _COLUMNS + ["fold", "header", "offset", "ident"])
            conn.execute(f"UPDATE sessions SET {sets} WHERE sid=?", values + extra + [sid])
            if not keep_content:
                self._drop_content(conn, sid)
                base = 0
            else:
                lo = sid << _SID_SHIFT
                (mx,) = conn.execute(
                    "SELECT max(rowid) FROM content WHERE rowid >= ? AND rowid < ?",
                    (lo, lo + (1 << _SID_SHIFT)),
                ).fetchone()
                base = (mx - lo + 1) if mx is not None else 0
        lo = sid << _SID_SHIFT
        conn.executemany(
            "INSERT INTO content (rowid, text, seq, kind) VALUES (?, ?, ?, ?)",
            [(lo + base + i, text, seq, kind) for i, (seq, kind, text) in enumerate(texts)],
        )

    # -- search and lookup --------------------------------------------------------------------

    def search(self, text: str, *, limit: int = 200, paths: Iterable[str] | None = None) -> list[SearchHit]:
        """Full-text search over messages and tool output; each hit names the event seq it came from."""
        query = fts_query(text)
        if not query:
            return []
        conn = self._conn()
        try:
            cur = conn.execute(
                "SELECT c.rowid >> 32, c.seq, c.kind, snippet(content, 0, char(2), char(3), '…', 10)"
                " FROM content c WHERE content MATCH ? ORDER BY rank LIMIT ?",
                (query, limit if paths is None else limit * 20),
            )
            hits = cur.fetchall()
        except sqlite3.OperationalError:
            return []
        sids = {h[0] for h in hits}
        info = {}
        if sids:
            q = f"SELECT sid, path, id FROM sessions WHERE sid IN ({', '.join('?' * len(sids))})"
            info = {r[0]: (r[1], r[2]) for r in conn.execute(q, list(sids))}
        allowed = set(paths) if paths is not None else None
        out = []
        for sid, seq, kind, snip in hits:
            if sid not in info:
                continue
            path, sid_id = info[sid]
            if allowed is not None and path not in allowed:
                continue
            text, marks = _marked(snip)
            bracketed, at = [], 0
            for a, b in marks:
                bracketed += [text[at:a], "[", text[a:b], "]"]
                at = b
            bracketed.append(text[at:])
            out.append(SearchHit(path=path, id=sid_id, seq=int(seq), kind=kind, snippet="".join(bracketed), text=text,
                                 marks=marks))
            if len(out) >= limit:
                break
        return out

    def find(self, rows: list[SessionRow], ident: str) -> SessionRow:
        """A row by exact id, else by unique id prefix."""
        exact = [r for r in rows if r.id == ident]
        if exact:
            return exact[0]
        pref = [r for r in rows if r.id and r.id.startswith(ident)]
        if len(pref) == 1:
            return pref[0]
        if len(pref) > 1:
            raise CatalogError(f"session id {ident!r} is ambiguous ({len(pref)} sessions start with it)")
        raise CatalogError(f"no session {ident!r} in {', '.join(str(r) for r in self.roots)}")


_SNAPSHOT_COLUMNS = ["path", "revision", "id", "cwd", "title", "prompt", "fork_turn", "updated_at", "turns", "tokens_in", "tokens_out",
                     "tokens_cache", "state", "reason", "parent", "seed_length", "origin"]
# The SessionRow fields a snapshot entry fills, in order (after the log's file name; then its mtime).
_SNAPSHOT_FIELDS = ("revision", "id", "cwd", "title", "title_source", "prompt", "fork_turn", "created_at", "updated_at", "last_time",
                    "turns", "steps", "events", "tokens_in", "tokens_out", "tokens_cache", "tokens_reasoning",
                    "state", "reason", "parent", "seed_length", "origin")


_BAD_NAME = "its file name is not valid UTF-8 (rename the directory to list and open it)"


def _utf8_name(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    """A path for a message: undecodable bytes escaped (``\\xff``), never a lone surrogate."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _bad_name_row(path: str, root: str, rev: str, size: int) -> SessionRow:
    row = SessionRow(path=path, root=root, revision=rev, size=size, state=UNREADABLE, reason=_BAD_NAME,
                     indexed=True)
    with contextlib.suppress(_Unreadable, OSError):
        _apply_header(row, read_header(path))
    return row


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite has already rolled back after some I/O errors
    (``disk I/O error``, a full disk), and a second ROLLBACK would hide the real error."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _load_snapshot(data: bytes | None) -> dict[str, tuple]:
    """``project/session`` -> (log file name, *SessionRow fields, mtime ns); empty when absent or of
    another format."""
    if not data:
        return {}
    try:
        fmt, cols, snap = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if fmt != _SNAPSHOT_FORMAT or cols != _SNAPSHOT_FIELDS or not isinstance(snap, dict):
        return {}
    return snap


_INT_COLS = {"created_at", "updated_at", "last_time", "turns", "steps", "events", "tokens_in", "tokens_out",
             "tokens_cache", "tokens_reasoning", "seed_length", "delegation_depth", "size", "fork_turn"}


def _apply_header(row: SessionRow, h: dict) -> None:
    row.id = h.get("id")
    row.cwd = h.get("cwd") if isinstance(h.get("cwd"), str) else None
    ca = h.get("createdAt")
    row.created_at = ca if isinstance(ca, int) else 0
    row.parent = h.get("parentSession") if isinstance(h.get("parentSession"), str) else None
    sl = h.get("seedLength")
    row.seed_length = sl if isinstance(sl, int) else None
    row.origin = h.get("origin") if isinstance(h.get("origin"), str) else None
    dd = h.get("delegationDepth")
    row.delegation_depth = dd if isinstance(dd, int) else 0
    row.agent_preset = h.get("agentPreset") if isinstance(h.get("agentPreset"), str) else None


def _tail_sig(path: str, offset: int) -> str:
    """The 64 bytes before ``offset``: a cheap check that the indexed prefix was not rewritten."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, offset - 64))
            return f.read(min(64, offset)).hex()
    except OSError:
        return ""


def _file_ident(p: Path) -> str | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str:
    """User text -> an FTS5 query: every word must occur, the last one as a prefix."""
    words = _WORD.findall(text)
    if not words:
        return ""
    parts = [f'"{w}"' for w in words[:-1]] + [f'"{words[-1]}"*']
    return " ".join(parts)


def jsonl_lock_held(log_path: str) -> bool:
    """A live writer holds ``<session dir>/session.lock`` (the durability engineer's lock); for a
    SQLite root, ``<root>/sessions.locks/<id>.lock``."""
    if _is_sqlite_path(log_path):
        from dsh_tui.store.lock import lock_file_name

        db, sid = log_path.rsplit("#", 1)
        lock_file = os.path.join(os.path.dirname(db), "sessions.locks", lock_file_name(sid))
    else:
        lock_file = os.path.join(os.path.dirname(log_path), "session.lock")
    if not os.path.exists(lock_file):
        return False
    from dsh_tui.store.lock import holder

    return holder(lock_file) is not None


def _default_lock_probe() -> Callable[[str], bool] | None:
    return jsonl_lock_held


# ---------------------------------------------------------------------------------------------
# Helpers used by the browser and the CLI


def sort_rows(rows: list[SessionRow]) -> list[SessionRow]:
    """Most recent activity first (dsh's ``updatedAt`` rule), ties by id."""
    return sorted(rows, key=lambda r: (-(r.updated_at or 0), r.id or r.path))


def filter_rows(rows: list[SessionRow], text: str) -> list[SessionRow]:
    """Rows whose title, workspace or id contain every word of ``text`` (case-insensitive)."""
    words = text.lower().split()
    if not words:
        return rows
    return [r for r in rows if all(w in haystack(r) for w in words)]


def haystack(row: SessionRow) -> str:
    """What the instant filter matches: title, first prompt, workspace, id and path, lower-cased."""
    return f"{row.title or ''}\n{row.prompt or ''}\n{row.cwd or ''}\n{row.id or ''}\n{row.path}".lower()


def workspace_names(cwd: str) -> frozenset[str]:
    """The spellings of a workspace a header's cwd may use: as given and with symlinks resolved."""
    names = {cwd}
    with contextlib.suppress(OSError):
        names.add(os.path.realpath(cwd))
    return frozenset(names)


def in_workspace(row: SessionRow, cwd: str) -> bool:
    return row.cwd is not None and bool(workspace_rows([row], cwd))


def workspace_rows(rows: Iterable[SessionRow], cwd: str) -> list[SessionRow]:
    """The rows of workspace ``cwd``; a header cwd spelled through a symlink counts too (one
    realpath per distinct cwd, not per row)."""
    names = workspace_names(cwd)
    resolved: dict[str, bool] = {}
    out = []
    for r in rows:
        c = r.cwd
        if c is None:
            continue
        hit = resolved.get(c)
        if hit is None:
            hit = c in names
            if not hit:
                with contextlib.suppress(OSError):
                    hit = os.path.realpath(c) in names
            resolved[c] = hit
        if hit:
            out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# Session actions the browser offers (rename, fork with a numbered title, archive, trash, restore)

TRASH_DIR = ".trash"
ARCHIVE_DIR = ".archive"


def _store_for(row: SessionRow):
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
    """Retitle a session: a ``session/title`` event with source ``{kind:'user'}`` (it pins the title)."""
    title = title.strip()
    if not title:
        raise CatalogError("a title cannot be empty")
    if row.id is None:
        raise CatalogError("an unreadable session cannot be renamed")
    return _append_standalone(_store_for(row), row.id, "session/title",
                              {"title": title, "messageSeqs": [], "source": {"kind": "user"}})


def completed_turns(row: SessionRow) -> list[tuple[int, str]]:
    """(turn, first user text) of every completed turn: the fork picker's choices."""
    if row.id is None:
        return []
    res = _store_for(row).inspect(row.id)
    out: list[tuple[int, str]] = []
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
            out.append((d.get("turn", turn), prompt.get(d.get("turn", turn), "")))
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
    store = _store_for(row)
    header = fork(store, row.id, at_turn=turn)
    base = row.title or prompt_title(row.prompt or "") or row.id
    _append_standalone(store, header["id"], "session/title",
                       {"title": numbered_title(base, taken_titles), "messageSeqs": [], "source": {"kind": "user"}})
    return header["id"]


def _move(row_path: str, root: str, bucket: str) -> Path:
    if _is_sqlite_path(row_path):
        raise CatalogError("archive and trash move session directories; a SQLite root has none")
    sess_dir = Path(row_path).parent
    rel = sess_dir.relative_to(root)
    dest = Path(root) / bucket / rel
    if dest.exists():
        import time as _time

        dest = dest.with_name(f"{dest.name}~{int(_time.time() * 1000)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    lock_file = sess_dir / "session.lock"
    if lock_file.exists():
        from dsh_tui.store.lock import holder

        pid = holder(lock_file)
        if pid is not None:
            raise CatalogError(f"session is open in another process (pid {pid}); close it first")
    os.rename(sess_dir, dest)
    return dest


def move_to_trash(row: SessionRow) -> Path:
    """Move the whole session directory to ``<root>/.trash/`` (restorable; nothing is deleted)."""
    return _move(row.path, row.root, TRASH_DIR)


def archive(row: SessionRow) -> Path:
    """Move the session directory to ``<root>/.archive/`` (out of the list, kept as is)."""
    return _move(row.path, row.root, ARCHIVE_DIR)


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
            with open(path, "rb") as f:
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
    os.rename(sess_dir, dest)
    return dest
