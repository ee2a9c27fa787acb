"""What the model reads of project instructions: the baseline, re-added and changed-file messages in dsh's exact
``<system-reminder>`` texts, cut to the ``maxBytes`` budget (whole files omitted, the last one truncated, with
dsh's marker)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from dsh_tui.extensions.instructions.workspace import Source, Workspace, _size, frame

KIND = "agent-instructions"
INTRO = ("The following workspace instructions may be relevant to your work. Use them as guidance when applicable. "
         "More specific instructions take precedence over broader ones. They do not override system, developer, "
         "or direct user instructions.")
SUPERSEDE = "This complete workspace instruction baseline replaces all earlier workspace instruction baselines."
NONE_ACTIVE = "No workspace instructions are currently active."
SHORT_INTRO = "Workspace instructions were omitted or truncated to fit the configured byte budget."
SET_TEXT = ("These instructions apply to work under `{dir}`. Use them as guidance when relevant; more specific "
            "instructions take precedence. They do not override system, developer, or direct user instructions.")
REPLACE_TEXT = ("This file changed after it was loaded. Use the following content instead of the previously loaded "
                "instructions from this file.")
REMOVE_TEXT = "The previously loaded instructions from this file no longer apply."


def _fit(blocks_for: Any, max_bytes: int) -> str | None:
    text = frame("\n\n".join(b for b in blocks_for if b))
    return text if _size(text) <= max_bytes else None


def _marker(max_bytes: int, omitted: list[str], truncated: tuple[str, int, int] | None) -> str:
    clauses = []
    if omitted:
        clauses.append("omitted " + ", ".join(omitted))
    if truncated is not None:
        clauses.append(f"truncated {truncated[0]} from {truncated[1]} to {truncated[2]} bytes")
    return f"Workspace instruction budget {max_bytes} bytes: " + "; ".join(clauses)


def _prefix(text: str, n: int) -> str:
    return text.encode("utf-8")[:max(0, n)].decode("utf-8", "ignore")


def render(sections: list[tuple[Source, str, str | None]], intro: str, max_bytes: int) -> tuple[str, list[Source]]:
    """The framed message of ``sections`` (``(source, head, content)``, broad to specific) under the
    byte budget, and the sources that survived (a file cut to 0 bytes is not loaded)."""
    if max_bytes <= 0:
        return "", []

    blocks = [h if c is None else h + "\n\n" + c for _, h, c in sections]
    text = _fit([intro] + blocks, max_bytes)
    if text is not None:
        return text, [s for s, _, _ in sections]
    for k in range(1, len(sections)):  # drop whole files from the broad end
        omitted = [s.path for s, _, _ in sections[:k]]
        text = _fit([_marker(max_bytes, omitted, None), intro] + blocks[k:], max_bytes)
        if text is not None:
            return text, [s for s, _, _ in sections[k:]]
    if not sections:
        return "", []
    omitted = [s.path for s, _, _ in sections[:-1]]
    last, head, content = sections[-1]
    if content is None:  # a removal cannot be cut
        text = frame(_marker(max_bytes, [s.path for s, _, _ in sections], None))
        return (text if _size(text) <= max_bytes else ""), []
    orig = _size(content)
    for this_intro in (intro, SHORT_INTRO):
        kept_bytes = orig
        # the marker's length depends on the kept size: settle it by iterating
        for _ in range(8):
            marker = _marker(max_bytes, omitted, (last.path, orig, kept_bytes))
            fixed = _size(frame("\n\n".join(b for b in [marker, this_intro, head + "\n\n"] if b)))
            room = max_bytes - fixed
            cut = _prefix(content, room)
            if _size(cut) == kept_bytes:
                break
            kept_bytes = _size(cut)
        marker = _marker(max_bytes, omitted, (last.path, orig, kept_bytes))
        if kept_bytes > 0:
            text = _fit([marker, this_intro, head + "\n\n" + _prefix(content, kept_bytes)], max_bytes)
            if text is not None:
                return text, [last]
    marker = _marker(max_bytes, [s.path for s, _, _ in sections], None)
    text = frame(marker)
    return (text if _size(text) <= max_bytes else ""), []


def baseline_sections(sources: list[Source]) -> list[tuple[Source, str, str | None]]:
    return [(s, f"Instructions from: {s.path}", s.content) for s in sources]


def change_sections(changes: list[tuple[str, Source]]) -> list[tuple[Source, str, str | None]]:
    """Each change's section: its source, heading and content (None for a removal)."""
    out: list[tuple[Source, str, str | None]] = []
    for action, s in changes:
        if action == "set":
            out.append((s, f"Additional instructions from: {s.path}\n\n" + SET_TEXT.format(dir=s.dir), s.content))
        elif action == "replace":
            out.append((s, f"Updated instructions from: {s.path}\n\n" + REPLACE_TEXT, s.content))
        else:
            out.append((s, f"Instructions removed: {s.path}\n\n" + REMOVE_TEXT, None))
    return out


def _change(action: str, s: Source) -> dict:
    c = {"action": action, "scope": s.scope, "path": s.path}
    if action != "remove":
        c["digest"] = s.digest
    return c


def _message(text: str, source: dict) -> dict:
    return {"content": [{"type": "text", "text": text}], "source": source, "role": "user", "id": str(uuid.uuid4())}


def baseline_message(ws: Workspace, sources: list[Source], *, superseding: bool = False,
                     removed: Sequence[Source] = ()) -> tuple[dict | None, list[Source]]:
    """The baseline ``user/message`` (None when there is nothing to say) and the sources it loads."""
    max_bytes = ws.config.maxBytes
    if max_bytes <= 0:
        return None, []
    if not sources and not superseding:
        return None, []
    intro = f"{SUPERSEDE} {INTRO}" if superseding else INTRO
    if sources:
        text, kept = render(baseline_sections(sources), intro, max_bytes)
    else:
        text, kept = frame(f"{SUPERSEDE} {NONE_ACTIVE}"), []
    if not text:
        return None, []
    changes = [_change("set", s) for s in kept] + [_change("remove", s) for s in removed]
    source = {"kind": KIND, "form": "instructions", "baseline": True, "baselineIdentity": ws.identity(),
              "changes": changes}
    return _message(text, source), kept


def readd_message(ws: Workspace, baseline: list[Source], dynamic: list[Source]) -> tuple[dict | None, list[Source]]:
    """After a compaction shadowed the baseline: one ``baseline: true`` message whose first block is the
    baseline (the baseline files) and whose second is the loaded deeper scopes ("Additional instructions"),
    as dsh composes it (its agent-instructions recording)."""
    if ws.config.maxBytes <= 0 or not (baseline or dynamic):
        return None, []
    blocks, kept = [], []
    if baseline:
        sections: list[tuple[Source, str, str | None]] = list(baseline_sections(baseline))
        text, kept_baseline = render(sections, INTRO, ws.config.maxBytes)
        if text:
            blocks.append(text)
            kept += kept_baseline
    if dynamic:
        text, kept_dynamic = render(change_sections([("set", s) for s in dynamic]), "", ws.config.maxBytes)
        if text:
            blocks.append(text)
            kept += kept_dynamic
    if not blocks:
        return None, []
    source = {"kind": KIND, "form": "instructions", "baseline": True, "baselineIdentity": ws.identity(),
              "changes": [_change("set", s) for s in kept]}
    message = _message(blocks[0], source)
    message["content"] += [{"type": "text", "text": b} for b in blocks[1:]]
    return message, kept


def changes_message(ws: Workspace, changes: list[tuple[str, Source]]) -> tuple[dict | None, list[tuple[str, Source]]]:
    """One dynamic message for ``changes`` (no intro) and the changes it carries."""
    if not changes or ws.config.maxBytes <= 0:
        return None, []
    text, kept_sources = render(change_sections(changes), "", ws.config.maxBytes)
    if not text:
        return None, []
    kept_ids = {id(s) for s in kept_sources}
    kept = [(a, s) for a, s in changes if id(s) in kept_ids or a == "remove"]
    source = {"kind": KIND, "form": "instructions", "changes": [_change(a, s) for a, s in kept]}
    return _message(text, source), kept
