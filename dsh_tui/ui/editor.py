"""The draft in the user's editor (Ctrl+G in the composer): ``$VISUAL``, else ``$EDITOR``, else ``vi``.

:func:`edit_text` is the round trip: the draft in a new temp file, the editor run on it (the caller has
suspended the app, so the editor owns the terminal), the file read back with its trailing newlines
trimmed, the file removed. A missing editor or a non-zero exit is a one-line ``problem`` and no text: the
caller keeps the draft.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class EditResult:
    text: str | None  # None: keep the draft (``problem`` says why)
    problem: str = ""


def editor_command(env: Mapping[str, str] | None = None) -> list[str]:
    """The editor to run, split as a shell would (``code --wait``, ``emacs -nw``)."""
    env = os.environ if env is None else env
    spec = (env.get("VISUAL") or "").strip() or (env.get("EDITOR") or "").strip() or "vi"
    return shlex.split(spec)


def edit_text(text: str, env: Mapping[str, str] | None = None) -> EditResult:
    """Open ``text`` in the editor and return what it saved (see the module docstring)."""
    try:
        argv = editor_command(env)
    except ValueError as err:  # unbalanced quotes in $VISUAL / $EDITOR
        return EditResult(None, f"Cannot read the editor command ({err}): the draft is unchanged.")
    if not argv:
        argv = ["vi"]
    fd, path = tempfile.mkstemp(prefix="dsh-tui-draft-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        try:
            code = subprocess.run([*argv, path], check=False).returncode
        except OSError as err:  # not found, not executable
            why = "not found" if isinstance(err, FileNotFoundError) else (err.strerror or str(err))
            return EditResult(None, f"Editor {argv[0]!r} {why} (set $VISUAL or $EDITOR): the draft is unchanged.")
        if code != 0:
            return EditResult(None, f"The editor exited with status {code}: the draft is unchanged.")
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as f:
                edited = f.read()
        except OSError as err:
            return EditResult(None, f"Cannot read the edited draft ({err.strerror or err}): it is unchanged.")
        return EditResult(edited.replace("\r\n", "\n").rstrip("\n"))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
