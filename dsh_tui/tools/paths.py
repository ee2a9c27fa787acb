"""Path resolution and workspace confinement for the file tools.

A model path resolves against the session cwd exactly like Node's ``path.resolve`` (no symlink
resolution, ``..`` collapsed): that is the *display path* the model sees in every result. The
*real path* (symlinks resolved, or the nearest existing ancestor's real path plus the missing
suffix) is the file's identity for the read-before-write state and the confinement check.

Unless ``ctx.allow_outside`` (the full-access preset), a path whose real path leaves the workspace
root — through ``..``, an absolute path, or a symlink that points out — is refused with dsh's
sandbox-denial text, code ``FS_SANDBOX_DENIED``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dsh_tui.tools.base import ToolContext, ToolError
from dsh_tui.tools.common import SANDBOX_DENIED, SANDBOX_ESCALATION_HINT, SANDBOX_MODE, fs_error


@dataclass(frozen=True)
class Target:
    display_path: str
    real_path: str


def display_path(ctx: ToolContext, raw: str) -> str:
    """Node ``path.resolve(cwd, raw)``: absolute, ``.``/``..`` collapsed, no symlink resolution."""
    shown = os.path.normpath(os.path.join(str(ctx.cwd), raw))
    # POSIX normpath keeps exactly two leading slashes (three or more become one); Node keeps one
    return shown[1:] if shown.startswith("//") else shown


def inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def denial(subject: str = "operation", escalation: bool = False) -> ToolError:
    text = SANDBOX_DENIED.format(mode=SANDBOX_MODE)
    if escalation:
        text += "\n" + SANDBOX_ESCALATION_HINT.format(subject=subject)
    return fs_error(text, "FS_SANDBOX_DENIED")


def resolve_target(
    ctx: ToolContext, raw: str, *, subject: str = "operation", escalation: bool = False
) -> Target:
    """Resolve and confine one model path (blocking: call from a worker thread for slow filesystems)."""
    shown = display_path(ctx, raw)
    real = os.path.realpath(shown)
    if not os.path.exists(real):
        ancestor = os.path.dirname(real)
        while ancestor and not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
            ancestor = os.path.dirname(ancestor)
        if os.path.exists(ancestor) and not os.path.isdir(ancestor):
            raise fs_error(
                f'cannot resolve "{shown}": a parent path segment is not a directory', "FS_NOT_FOUND"
            )
    if not ctx.allow_outside:
        root = os.path.realpath(str(ctx.workspace))
        if not inside(root, real):
            raise denial(subject, escalation)
    return Target(shown, real)


def confine_dir(ctx: ToolContext, path: str, *, subject: str = "command", escalation: bool = False) -> str:
    """Confine a directory (bash workdir, search root); returns its display path."""
    return resolve_target(ctx, path, subject=subject, escalation=escalation).display_path
