"""Prompts typed but not sent when the app quits (the queue, the composer's draft): kept per session.

Ctrl+Q with queued follow-ups used to exit without a word, the prompts in no log and no history. They are
written to ``<data dir>/pending/<session id>.json`` (the file 0600, the folder 0700: prompts are private),
and the next time the session is opened live (``dsh-tui resume``, the browser) they come back in the
composer, with a notice; the file is removed then.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path


def pending_path(session_id: str) -> Path:
    from dsh_tui.paths import data_dir

    return data_dir() / "pending" / (re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:200] + ".json")


def save(session_id: str, queued: list[str], draft: str = "") -> Path | None:
    """Keep ``queued`` (in order) and ``draft`` for ``session_id``; None when there is nothing to keep or
    the file could not be written (the app still quits)."""
    queued = [q for q in queued if q.strip()]
    if not queued and not draft.strip():
        return None
    path = pending_path(session_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"queued": queued, "draft": draft}, out, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError:
        return None
    return path


def take(session_id: str) -> tuple[list[str], str]:
    """The prompts kept for ``session_id`` (queued, draft), removing them; ([], "") when none."""
    path = pending_path(session_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()
    except (OSError, ValueError):
        return [], ""
    if not isinstance(data, dict):
        return [], ""
    queued = [q for q in data.get("queued") or [] if isinstance(q, str) and q.strip()]
    draft = data.get("draft")
    return queued, draft if isinstance(draft, str) else ""
