"""One live writer per session across processes: an ``fcntl.flock`` lock file holding the owner's pid.

JSONL: ``<session dir>/session.lock`` beside the log; SQLite: ``<root>/sessions.locks/<id>.lock`` next to the
database (the store's ``lock_path(id)``). A second process gets ``SessionInUseError("session <id> is in use by
pid N")``. The lock dies with its process (SIGKILL included), so a crashed writer never leaves a stale lock.

Acquire uses the open-lock-verify pattern (after ``flock`` the path must still name the locked inode, else
retry), so release can unlink the file without a race against a concurrent acquirer.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

from dsh_tui.session.errors import DshError
from dsh_tui.store.layout import encode_segment

LOCK_NAME = "session.lock"


class SessionInUseError(DshError):
    """Another live writer (process) holds the session."""

    def __init__(self, session_id: str, pid: int | None) -> None:
        who = f"pid {pid}" if pid else "another process"
        super().__init__(f"session {session_id} is in use by {who}")
        self.session_id = session_id
        self.pid = pid


def lock_file_name(session_id: str) -> str:
    """A safe single path segment for an arbitrary id (dsh's encodeSegment rule, :func:`layout.encode_segment`)
    + ``.lock``; the empty id, which has no segment, is ``~``."""
    return (encode_segment(session_id) if session_id else "~") + ".lock"


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


class SessionLock:
    """An exclusive, non-blocking, process-scoped lock on one session."""

    def __init__(self, path: str | Path, session_id: str) -> None:
        self.path = Path(path)
        self.session_id = session_id
        self._fd: int | None = None
        self._made_dir = False

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> SessionLock:
        if self._fd is not None:
            return self
        parent = self.path.parent
        if not parent.is_dir():
            parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._made_dir = True
        for _ in range(50):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # the directory was removed by a releasing owner; recreate
                parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                raise SessionInUseError(self.session_id, pid) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # unlinked by a releasing owner between our open and flock: retry on the new file
                os.close(fd)
                continue
            # The pid is only a hint for "in use by pid N": a full disk or a file-size limit (EFBIG)
            # must not stop the lock, which is the flock itself.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            self._fd = fd
            return self
        raise DshError(f"could not acquire the lock for session {self.session_id}")

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(fd)
        if self._made_dir:
            with contextlib.suppress(OSError):
                os.rmdir(self.path.parent)  # only succeeds when empty (an unmaterialised session)

    def __enter__(self) -> SessionLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def holder(path: str | Path) -> int | None:
    """The pid holding the lock at ``path``, or None when nobody does (never blocks, never creates)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO named like a lock file opens at once ...
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # ... and is no lock
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def lock_path_for(store, session_id: str, header: dict | None = None) -> Path:
    """Where the lock of ``session_id`` in ``store`` lives: the store's ``lock_path(id)`` if it has one
    (SQLite), else ``session.lock`` in the JSONL session directory (``locate(header)``'s parent)."""
    fn = getattr(store, "lock_path", None)
    if fn is not None:
        return Path(fn(session_id))
    if header is None:
        finder = getattr(store, "find", None)  # JSONL: the stored log of this id, without listing the root
        found = finder(session_id) if finder is not None else None
        if found is not None:
            return Path(found).parent / LOCK_NAME
        header = find_header(store, session_id)
    return Path(store.locate(header)).parent / LOCK_NAME


def find_header(store, session_id: str) -> dict:
    finder = getattr(store, "header", None)
    if finder is not None:
        return finder(session_id)
    for h in store.list():
        if h.get("id") == session_id:
            return h
    raise DshError(f"session {session_id} not found")


def acquire(store, session_id: str, header: dict | None = None) -> SessionLock:
    return SessionLock(lock_path_for(store, session_id, header), session_id).acquire()


def in_use_by(store, session_id: str) -> int | None:
    """The pid of the live writer of ``session_id`` (for a browser's "open elsewhere"), or None."""
    try:
        return holder(lock_path_for(store, session_id))
    except DshError:
        return None
