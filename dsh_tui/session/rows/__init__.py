"""Packed chunk rows (docs/format.md, "Packed rows"): ``text-chunks`` / ``reasoning-chunks`` /
``tool-call-chunks`` storage lines.

:mod:`.codec` packs a batch into rows and expands rows into events; :mod:`.lazy` keeps loaded rows compact
(:class:`EventList`, :class:`PackedRun`); :mod:`.blocks` keeps a loaded v4 log's events as compressed lines
(:class:`RawBlock`). This package re-exports the public names.
"""

from __future__ import annotations

from .codec import (  # noqa: F401  (_build_row, _continues: tests check the packer's pieces)
    MIN_RUN,
    SQLITE_MAX_BYTES,
    SQLITE_MAX_MEMBERS,
    _build_row,
    _continues,
    classify,
    expand_line,
    expand_lines,
    expand_lines_with_runs,
    expand_row,
    is_packed_row,
    pack_batch,
    row_length,
    validate_row,
)
from .lazy import (  # noqa: F401
    BLOCK_EVENTS,
    EventList,
    PackedRun,
    RawBlock,
    events_of,
    lazy_row,
    plain_events,
    slot_event,
)
