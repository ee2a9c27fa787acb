"""Durable file primitives: revisions, stable reads, directory fsync, new files made whole (temp file +
``os.link`` + directory fsync, 0700/0600), fsynced appends rolled back on failure, truncation, and
``write_atomic``, the one whole-file replace used outside the stores too (settings, credentials, the fs
tools' writes, the UI's CSS cache)."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from dsh_tui.store.base import StoreError

DIR_MODE = 0o700
FILE_MODE = 0o600


def revision_of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def read_stable(path: Path) -> tuple[bytes, str]:
    """Read a file, retrying while its (dev, ino, size, mtime ns, ctime ns) identity changes."""
    while True:
        before = revision_of(os.stat(path))
        with open(path, "rb") as f:
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
