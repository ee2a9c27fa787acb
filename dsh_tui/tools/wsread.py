"""Reading a file the harness opens on its own initiative (instruction files, skills, ignore files, the git
HEAD, the ``@`` completion index): never a door out of the workspace.

A repository is not trusted. Its ``AGENTS.md`` may be a symlink to ``/proc/self/environ`` (dsh-tui's own
environment, the API key included) or to ``/etc/passwd``; such a file would reach the session log and the
model request without any tool call. The rule (docs/extensions.md, "Files read without a tool call"):

- a path is followed (symlinks included) only if its real path is a *regular file* inside the workspace
  (dsh follows an instruction symlink to a sibling file inside the workspace);
- with ``workspace=None`` (the user's own files: ``~/.dsh/AGENTS.md``, user skill folders) the target may be
  anywhere the user put it, but still a regular file;
- anything under ``/proc``, ``/sys`` or ``/dev``, anything not a regular file (a FIFO would block, a device
  never ends) and anything larger than ``max_bytes`` is skipped.

A skipped file is not an error: :func:`read` returns a :class:`Skip` with a one-line reason that the caller
records (``agent-instructions/skipped``, ``skills/skipped``) and shows to the user. A missing file is
``None``, silently (most candidates do not exist).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

SPECIAL_ROOTS = ("/proc", "/sys", "/dev")



def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``fd`` from where it stands, read in 1 MiB pieces (a caller that passes its cap
    plus one learns whether the file is over it)."""
    parts: list[bytes] = []
    left = limit
    while left > 0:
        data = os.read(fd, min(left, 1 << 20))
        if not data:
            break
        parts.append(data)
        left -= len(data)
    return b"".join(parts)

@dataclass(frozen=True)
class Skip:
    """A file that exists but is not read: ``path`` as the caller named it, ``reason`` one line."""

    path: str
    reason: str


def inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _special(real: str) -> bool:
    return any(inside(r, real) for r in SPECIAL_ROOTS)


def check(path: str | os.PathLike[str], workspace: str | os.PathLike[str] | None,
          max_bytes: int | None = None) -> tuple[str, os.stat_result] | Skip | None:
    """``(real path, stat)`` of a file that may be read, a :class:`Skip`, or None when nothing is there."""
    shown = os.fspath(path)
    try:
        os.lstat(shown)
    except (OSError, ValueError):
        return None
    real = os.path.realpath(shown)
    if _special(real):
        return Skip(shown, f"points into a system file system ({real})")
    if workspace is not None:
        root = os.path.realpath(os.fspath(workspace))
        if not inside(root, real):
            return Skip(shown, f"points outside the workspace ({real})")
    try:
        st = os.stat(real)
    except (OSError, ValueError):
        return None  # a dangling symlink: nothing there
    if not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            return None  # a directory where a file is probed: not there
        return Skip(shown, "not a regular file")
    if max_bytes is not None and st.st_size > max_bytes:
        return Skip(shown, f"larger than {max_bytes} bytes ({st.st_size} bytes)")
    return real, st


def read(path: str | os.PathLike[str], workspace: str | os.PathLike[str] | None,
         max_bytes: int) -> bytes | Skip | None:
    """The bytes of ``path`` under the rule above (at most ``max_bytes``), a :class:`Skip`, or None."""
    found = check(path, workspace, max_bytes)
    if not isinstance(found, tuple):
        return found
    real, st = found
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError:
        return Skip(os.fspath(path), "changed while it was opened") if os.path.lexists(real) else None
    try:
        now = os.fstat(fd)
        # the file opened is the one checked (a symlink swapped in between is not followed)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return Skip(os.fspath(path), "changed while it was opened")
        data = read_at_most(fd, max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    raw = data
    if len(raw) > max_bytes:
        return Skip(os.fspath(path), f"larger than {max_bytes} bytes")
    return raw


def read_text(path: str | os.PathLike[str], workspace: str | os.PathLike[str] | None,
              max_bytes: int) -> str | Skip | None:
    """:func:`read`, decoded as UTF-8 (invalid bytes replaced)."""
    raw = read(path, workspace, max_bytes)
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def may_follow(path: str | os.PathLike[str], workspace: str | os.PathLike[str]) -> bool:
    """Whether a directory entry (a symlink to a folder, say) stays inside ``workspace`` and out of
    ``/proc``, ``/sys``, ``/dev`` once resolved."""
    real = os.path.realpath(os.fspath(path))
    return not _special(real) and inside(os.path.realpath(os.fspath(workspace)), real)
