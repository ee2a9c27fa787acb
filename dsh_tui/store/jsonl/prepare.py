"""Preparing a stored prefix for use (docs/format.md, "Legacy import" to "Crash closers"): legacy import,
refusals, crash closers, seed validation; repairing a torn file in place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import (
    DshError,
    SessionCorruptionError,
    SessionFormatUnsupportedError,
)
from dsh_tui.store.base import StoreError
from dsh_tui.store.fsio import append_bytes, read_stable, truncate_file

from .codec import encode_batch
from .decode import StoredPrefix, bulk_load, scan_buffer


@dataclass
class Prepared:
    header: dict[str, Any]
    stored: list[dict[str, Any]]  # after legacy import
    closers: list[dict[str, Any]]
    session: Any = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.stored + self.closers if self.closers else self.stored


def prepare(prefix: StoredPrefix, *, session_id: str | None = None, lenient: bool = False,
            validate: bool = True, clock: Any = None, keep_session: bool = True) -> Prepared:
    """Legacy import and refusals, crash closers, seed validation (by constructing a Session, with ``clock``; with
    ``keep_session=False`` the events are checked the same way but no Session is kept: ``session`` is None)."""
    sid = session_id or prefix.header.get("id") or ""
    with bulk_load():
        return _prepare(prefix, sid, lenient, validate, clock, keep_session)




def _looks(prefix: StoredPrefix) -> tuple[Sequence[int], Sequence[int]]:
    """The positions the legacy import and the refusals look at: as the scanner noted them, else computed."""
    if prefix.looks is not None:
        return prefix.looks
    from dsh_tui.session import legacy

    notable = legacy.notable_positions(prefix.events)
    return notable, notable


def _prepare(prefix: StoredPrefix, sid: str, lenient: bool, validate: bool, clock: Any = None,
             keep_session: bool = True) -> Prepared:
    from dsh_tui.session import legacy, repair

    try:
        v4 = prefix.header.get("version") == 4
        if v4:  # format v4 has no legacy shapes; its vocabulary is checked by the Session (docs/format.md)
            events = prefix.events
        else:
            to_import, to_refuse = _looks(prefix)
            events = legacy.import_legacy(prefix.events, sid, to_import)
            legacy.check_refusals(events, str(prefix.path) if prefix.path is not None else "session log",
                                  to_refuse)
        try:
            closers = (repair.interrupted_turn_closers_v4(events, sid) if v4
                       else repair.interrupted_turn_closers(events))
        except (KeyError, TypeError, AttributeError):
            if validate:  # a malformed event in the open turn: validation names it when it can
                _construct(prefix.header, events, lenient=lenient, packed_runs=prefix.runs, keep=False)
            raise
        prepared = Prepared(prefix.header, events, closers)
        if validate:
            # legacy import keeps every index (it rewrites turn/message events in place, never chunks), so
            # the scanner's packed-row spans still point at the same decoded members
            # (the scanner's float verdicts hold for its own event objects: not after an import replaced some)
            checked = prefix.floats_checked if events is prefix.events else None
            prepared.session = _construct(prefix.header, prepared.events, lenient=lenient, packed_runs=prefix.runs,
                                          clock=clock, keep=keep_session, floats_checked=checked)
        return prepared
    except (SessionFormatUnsupportedError, SessionCorruptionError):
        raise
    except (DshError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise SessionCorruptionError(f'stored session "{sid}" failed validation: {err}') from None


def _construct(header: dict[str, Any], events: list[dict[str, Any]], *, lenient: bool,
               packed_runs: list[tuple[int, int]] | None = None, clock: Any = None, keep: bool = True,
               floats_checked: Sequence[int] | None = None) -> Any:
    """The validated Session of ``events``; with ``keep=False`` only the validation (None)."""
    from dsh_tui.session.log import Session, check_seed

    if not keep:
        return check_seed(header, events, lenient=lenient, packed_runs=packed_runs, floats_checked=floats_checked)
    return Session(header, events, lenient=lenient, packed_runs=packed_runs, clock=clock,
                   floats_checked=floats_checked)


def repair_file(path: Path, *, lenient: bool = False) -> tuple[StoredPrefix, Prepared]:
    """Crash recovery of one file in place: cut a torn tail, append recovered events +
    closers as one batch (zstd: one frame). A healthy file is not touched. Returns what was found
    *before* the repair."""
    buf, revision = read_stable(path)
    prefix = scan_buffer(buf, None, lenient=lenient, projected=None if lenient else False)
    prefix.path = Path(path)
    prefix.revision = revision
    if prefix.projected:
        raise StoreError(f"{path}: a projected fixture (no seq/time) cannot be repaired in place")
    prepared = prepare(prefix, lenient=lenient)
    commit_repair(Path(path), prefix, prepared)
    return prefix, prepared


def commit_repair(path: Path, prefix: StoredPrefix, prepared: Prepared) -> bool:
    tail = (prefix.torn.recovered_events if prefix.torn else []) + prepared.closers
    if prefix.torn is None and not tail:
        return False
    if prefix.torn is not None:
        truncate_file(path, prefix.torn.truncate_to)
    if tail:
        append_bytes(path, encode_batch(tail, prefix.compression))
    return True
