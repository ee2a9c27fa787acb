"""The transcript's notices beside the conversation, folded by :class:`~.fold.TranscriptFold`: compaction rows,
the files a turn changed (its footer, dsh's ``workspace/changes`` row, an undo), where a session left its
parent or was resumed (the end-seed divider), and workspace files the harness skipped.

Each handler takes the fold as its first argument, as the fold's own ``_on_*`` methods do; the fold's
dispatch table names them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_tui.session.content import content_text

from .items import CompactionItem, DividerItem, FooterItem

if TYPE_CHECKING:
    from .fold import TranscriptFold


def on_compaction(self: TranscriptFold, event, data, seq, out) -> None:
    cid = str(data.get("compactionId") or "")
    etype = event.get("type")
    item = self._compactions.get(cid)
    if etype == "compaction/start" or item is None:
        item = CompactionItem(f"c{seq}", "compaction", seq, self.turn)
        self._compactions[cid] = item
        self._add(item, out)
    if etype == "compaction/summary":
        seqs = data.get("shadowedSeqs")
        item.messages = len(seqs) if isinstance(seqs, list) else 0
        item.tokens = data.get("shadowedTokenCount") or 0
        summary = data.get("summary")
        item.summary = content_text(summary, marks=True) if isinstance(summary, list) else str(summary or "")
        item.state = "done"
    elif etype == "compaction/prune":
        seqs = data.get("shadowedSeqs")
        item.messages = len(seqs) if isinstance(seqs, list) else 0
        item.tokens = data.get("shadowedTokenCount") or 0
        item.state = "done"
    elif etype == "compaction/end":
        if data.get("error"):
            item.state, item.error = "error", str(data.get("error"))
        elif item.state == "running":
            item.state = "done"
        # the failed attempt that triggered compaction is not part of the answer
        self._discard_attempt(out)
    self._update(item, out)


def footer_of(self: TranscriptFold, turn: Any) -> FooterItem | None:
    """The footer item of ``turn`` (the latest one), if shown."""
    for item in reversed(self.items):
        if isinstance(item, FooterItem) and item.turn == turn:
            return item
    return None

def on_workspace_changes(self: TranscriptFold, event, data, seq, out) -> None:
    """The files a turn changed (the ``workspace-changes`` plugin's event; recorded just before the turn's
    end, or after it for a cancelled turn): shown in its footer."""
    files = [f for f in data.get("files") or [] if isinstance(f, dict)]
    total = data.get("total") if isinstance(data.get("total"), int) else len(files)
    turn = data.get("turn")
    self._turn_files[turn] = (files, total)
    footer = footer_of(self, turn)
    if footer is not None:
        footer.files, footer.files_total, footer.undone = files, total, False
        self._update(footer, out)

def on_workspace_undo(self: TranscriptFold, event, data, seq, out) -> None:
    for turn in data.get("turns") or []:
        footer = footer_of(self, turn)
        if footer is not None and footer.files:
            footer.undone = True
            self._update(footer, out)


def on_end_seed(self: TranscriptFold, event, data, seq, out) -> None:
    if seq == 0:
        return  # an empty seed: nothing above to divide from
    parent = self.header.get("parentSession")
    seed_length = self.header.get("seedLength")
    if parent and self.header.get("version") == 4 and self.header.get("isSeeded"):
        # format v4 has no seedLength: the cut is the end-seed {inherited: true}; one before it is the
        # parent's own (its resume), one after it this session's resume
        seed_length = seq + 1 if isinstance(data, dict) and data.get("inherited") is True else None
        if seed_length is None:
            seed_length = -1 if self._v4_cut_seen else seq + 2
        else:
            self._v4_cut_seen = True
    if parent and isinstance(seed_length, int) and seq < seed_length - 1:
        # an end-seed inside the copied prefix is the parent's own (a fork of a fork, a resumed parent):
        # it is not where this session left its parent
        text = f"forked or resumed here in the history of {parent}"
    elif parent and self.header.get("origin") == "subagent" and (seed_length is None or seq <= seed_length):
        text = f"subagent of {parent}" + (" (forked from its conversation here)" if seed_length else "")
    elif parent and (seed_length is None or seq <= seed_length):
        text = f"forked from {parent} here"
    else:
        text = "resumed here"
    self._add(DividerItem(f"d{seq}", "divider", seq, self.turn, text=text), out)

def on_dsh_workspace_changes(self: TranscriptFold, event, data, seq, out) -> None:
    """dsh 0.2's ``workspace/changes`` (a turn's changed files, ``WorkspaceChangesSummary``): kept as the
    turn's changed files and shown as one row."""
    files = [f for f in data.get("files") or [] if isinstance(f, dict)]
    turn = data.get("turn", self.turn)
    self.changed_files[turn] = [str(f.get("display") or f.get("path") or "") for f in files]
    shown = ", ".join(f"{f.get('display') or f.get('path')} (+{f.get('added', 0)} −{f.get('deleted', 0)})"
                      for f in files[:8]) + (" …" if len(files) > 8 else "")
    n = data.get("total", len(files))
    if not files:
        return
    self._add(DividerItem(f"w{seq}", "divider", seq, self.turn,
                          text=f"turn {turn} changed {n} file{'s' if n != 1 else ''}: {shown}"), out)

def on_skipped(self: TranscriptFold, event, data, seq, out) -> None:
    """A workspace file the harness found but did not read (``agent-instructions/skipped``,
    ``skills/skipped``): one quiet row, so the user knows the repository tried."""
    what = "skill" if event.get("type") == "skills/skipped" else "instructions"
    text = f"skipped {what} {data.get('path')}: {data.get('reason')}"
    self._add(DividerItem(f"d{seq}", "divider", seq, self.turn, text=text), out)
