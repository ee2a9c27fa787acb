"""Durable file primitives: revisions, stable reads, directory fsync, new files made whole (temp file +
``os.link`` + directory fsync, 0700/0600), fsynced appends rolled back on failure, truncation, and
``write_atomic``, the one whole-file replace used outside the stores too (settings, credentials, the fs
tools' writes, the UI's CSS cache).

Also the rules every reader of a log follows (docs/storage.md, "Limits and hostile files"):
:func:`open_regular` (regular files only, opened without blocking, sparse files refused) and
:class:`LineSplitter` (linear line splitting, one line of at most :data:`MAX_LINE_BYTES` held); and the
private-file helpers for whatever holds session content: :func:`private_dir` (0700),
:func:`private_file` and :func:`write_private` (0600)."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from dsh_tui.session.errors import DshError
from dsh_tui.store.base import StoreError

DIR_MODE = 0o700
FILE_MODE = 0o600


def revision_of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def read_stable(path: Path) -> tuple[bytes, str]:
    """Read a file, retrying while its (dev, ino, size, mtime ns, ctime ns) identity changes."""
    while True:
        before = revision_of(os.stat(path))
        with open_regular(path) as f:
            data = f.read()
        after = revision_of(os.stat(path))
        if before == after:
            return data, after


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mkdir_durable(path: Path) -> None:
    """mkdir -p with mode 0700, fsyncing the parent of every directory created."""
    missing = []
    p = Path(path)
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            pass
        fsync_dir(d.parent)
    if not Path(path).is_dir():
        raise StoreError(f"{path} exists but is not a directory")


def write_new_file(final: Path, content: bytes) -> None:
    """Publish a new file atomically: ``<final>.<12 hex>.tmp`` (O_EXCL, 0600), fsync, ``link`` (never
    clobbers), fsync the directory, unlink the temp file."""
    _mkdir_durable(final.parent)
    tmp = final.with_name(f"{final.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    linked = False
    try:
        try:
            view = memoryview(content)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, final)
        except FileExistsError:
            raise StoreError(f"refusing to materialize {final}: a log already exists on disk") from None
        linked = True
        fsync_dir(final.parent)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            if not linked:
                raise


def append_bytes(path: Path, data: bytes) -> None:
    """Append + fsync; on any write/sync error truncate back to the previous size, fsync, re-raise."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, before)
                os.fsync(fd)
            except OSError as rollback:
                raise StoreError(f"failed to roll back append to {path}: {rollback}") from rollback
            raise
    finally:
        os.close(fd)


def truncate_file(path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, create_only: bool = False,
                 fsync: bool = True) -> None:
    """Replace (or, ``create_only``, create) the file at ``path`` with ``data`` in one step: a temporary
    file in the same directory (made as needed), written and fsynced, given ``mode`` (default: 0666 less
    the umask), then renamed over ``path`` or, ``create_only``, linked to it (``FileExistsError`` if it
    exists). A reader sees the old file or the new one, never a part; the temporary file never outlives
    a failure. ``fsync=False`` for a cache that may be lost."""
    real = os.fspath(path)
    directory = os.path.dirname(real) or "."
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp, mode)
        if create_only:
            os.link(temp, real)
            os.unlink(temp)
        else:
            os.replace(temp, real)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------------------------
# Hostile files: readers open regular files only, never block, and hold one line of bounded length

MAX_LINE_BYTES = 536_870_888  # dsh's longest line: V8's longest string (0x1fffffe8); dsh cannot read a longer one
SPARSE_MIN_SIZE = 16 << 20  # a file this large with under 1/16 of it allocated, and a hole, is sparse
_SPARSE_RATIO = 16


class NotRegularFileError(DshError, OSError):
    """A path a reader refuses: a FIFO, a device, a socket, a directory or a sparse file. ``strerror``
    is the reason in words ("a FIFO (named pipe), not a regular file"); any ``except OSError`` that
    prints ``err.strerror`` names it."""


def _kind(mode: int) -> str:
    import stat

    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a plain file"


def is_sparse(fd: int, st: os.stat_result) -> bool:
    """A large file with holes: most of its size never written (``st_blocks`` far below ``st_size``) and a
    hole found by ``SEEK_HOLE``. A session log is only ever appended to, so it has no holes; a sparse
    "log" is zeros that would read slowly into one endless line. (A file a compressing file system
    stores small has no hole: it is not taken for sparse.)"""
    if st.st_size < SPARSE_MIN_SIZE or st.st_blocks * 512 * _SPARSE_RATIO >= st.st_size:
        return False
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return True
    try:
        return os.lseek(fd, 0, seek_hole) < st.st_size
    except OSError:
        return True
    finally:
        os.lseek(fd, 0, os.SEEK_SET)


def open_regular(path: str | os.PathLike[str], *, sparse_ok: bool = False):
    """Open ``path`` for binary reading only if it is a regular file (symlinks followed), without
    blocking: opened ``O_NONBLOCK`` (a FIFO with no writer opens at once), then ``fstat`` decides.
    Raises :class:`NotRegularFileError` for a FIFO, device, socket, directory or (unless ``sparse_ok``)
    a sparse file; other ``OSError`` as ``open`` would."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise NotRegularFileError(21, "a directory, not a regular file", os.fspath(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(22, f"{_kind(st.st_mode)}, not a regular file", os.fspath(path))
        if not sparse_ok and is_sparse(fd, st):
            raise NotRegularFileError(
                22, f"a sparse file ({st.st_size:,} bytes, {st.st_blocks * 512:,} of them on disk), not a session log",
                os.fspath(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class LineSplitter:
    """Split a byte stream into lines in linear time, holding one line of at most ``cap`` bytes.

    ``feed(chunk)`` returns the complete lines the chunk ends (without their ``\\n``); a line split
    over many chunks is joined once, when its end arrives (never ``buf + chunk`` per chunk, which is
    quadratic in the line's length). Two kinds of line are not kept while they grow, so memory stays
    bounded whatever the input (a zstd bomb of zeros, a 3 GB line):

    * a line longer than ``cap`` comes out as :data:`OVERLONG` (dsh cannot read it either: its reader
      fails to make the string, and treats the line as unparsable);
    * a line that cannot be JSON text (its first byte is not ``{``, ``[``, a quote or white space: zeros,
      garbage) comes out as :data:`JUNK`.

    Only these two markers' lengths are not their lines' own. ``pos`` is the stream offset of the end of
    what was fed, ``pending`` the length of the unfinished last line, ``first_end`` (after a ``feed`` that
    returned lines) the stream offset just after the first of them."""

    JUNK = b"\x00"
    OVERLONG = b"\x00\x01"
    _STARTS = frozenset(b'{["\t\r ')

    __slots__ = ("cap", "_frags", "_size", "_drop", "pos", "first_end")

    def __init__(self, cap: int = MAX_LINE_BYTES, pos: int = 0) -> None:
        self.cap = cap
        self._frags: list[bytes] = []
        self._size = 0  # bytes of the unfinished line
        self._drop: bytes | None = None  # the marker the unfinished line will come out as
        self.pos = pos
        self.first_end = pos

    @property
    def pending(self) -> int:
        return self._size

    def _grow(self, part: bytes) -> None:
        if not part:
            return
        if self._size == 0 and part[0] not in self._STARTS:
            self._drop = self.JUNK
        self._size += len(part)
        if self._drop is None and self._size > self.cap:
            self._drop = self.OVERLONG
            self._frags = []
        if self._drop is None:
            self._frags.append(part)

    def skip(self, chunk: bytes) -> None:
        """Take ``chunk`` without returning the lines it ends (their count is ``chunk.count(b"\\n")``)."""
        self.pos += len(chunk)
        nl = chunk.rfind(b"\n")
        if nl < 0:
            self._grow(chunk)
            return
        self._frags = []
        self._size = 0
        self._drop = None
        self._grow(chunk[nl + 1:])

    def feed(self, chunk: bytes) -> list[bytes]:
        base = self.pos
        self.pos += len(chunk)
        nl = chunk.find(b"\n")
        if nl < 0:
            self._grow(chunk)
            return []
        if self._size:
            self._grow(chunk[:nl])
            first = self._drop if self._drop is not None else b"".join(self._frags)
            self._frags = []
            self._size = 0
            self._drop = None
        else:
            first = chunk[:nl]
        self.first_end = base + nl + 1
        lines = chunk[nl + 1:].split(b"\n")
        tail = lines.pop()
        lines.insert(0, first)
        if len(chunk) - len(tail) > self.cap and max(map(len, lines)) > self.cap:
            lines = [self.OVERLONG if len(x) > self.cap else x for x in lines]
        self._grow(tail)
        return lines


# ---------------------------------------------------------------------------------------------
# Private files: whatever holds session content (the catalog, exports, clipboard files) is the user's alone


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` (and missing parents) a directory only the user can enter: created 0700, an existing
    one owned by the user has group/other bits removed. Raises ``PermissionError`` when it (or the symlink
    naming it) belongs to another user, ``NotADirectoryError`` when it is not a directory: nothing private
    is put there. Returns ``path``."""
    import stat

    p = Path(path)
    try:
        os.mkdir(p, DIR_MODE)
    except FileNotFoundError:
        p.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, DIR_MODE)
    except FileExistsError:
        pass
    uid = os.geteuid()
    link = os.lstat(p)
    st = os.stat(p)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(20, "not a directory", str(p))
    if link.st_uid != uid or st.st_uid != uid:
        raise PermissionError(1, f"owned by uid {st.st_uid if st.st_uid != uid else link.st_uid}, not by this user",
                              str(p))
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(p, stat.S_IMODE(st.st_mode) & ~0o077 | 0o700)
    return p


def private_file(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` a file only the user can read: created empty 0600 if missing (never through a
    dangling symlink), an existing one owned by the user made 0600. Its directory is not changed."""
    import stat

    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
        os.close(fd)
        return p
    except FileExistsError:
        pass
    st = os.stat(p)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(p, stat.S_IMODE(st.st_mode) & ~0o077)
    return p


def write_private(path: str | os.PathLike[str], data: bytes, *, create_only: bool = False,
                  fsync: bool = True) -> None:
    """:func:`write_atomic` with mode 0600: a reader sees the old file or the whole new one, and only the user."""
    write_atomic(path, data, mode=FILE_MODE, create_only=create_only, fsync=fsync)
