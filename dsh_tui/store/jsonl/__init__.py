"""JSONL session persistence in dsh's exact on-disk format (docs/format.md, "JSONL storage").

One module per layer, bottom up; this package re-exports the public names (``from dsh_tui.store.jsonl
import JsonlStore`` keeps working):

* :mod:`.codec` -- the header record and encoding events as lines or zstd batches;
* :mod:`.scanner` -- :class:`LineScanner`: incremental scanner over decoded plaintext that expands packed
  rows, checks seq contiguity and tells a torn tail from corruption;
* :mod:`.decode` -- a whole file (raw or zstd frames) -> :class:`StoredPrefix`;
* :mod:`dsh_tui.store.fsio` -- durable file primitives (new files made whole, fsynced appends, truncation);
* :mod:`.prepare` -- legacy import, refusals, crash closers, seed validation, in-place repair;
* :mod:`.store` -- :class:`JsonlStore`, the :class:`~dsh_tui.store.base.SessionStore` over a root directory.
"""

from __future__ import annotations

from dsh_tui.store import zstdframes  # noqa: F401
from dsh_tui.store.base import StoreError
from dsh_tui.store.fsio import append_bytes, read_stable, revision_of, truncate_file, write_new_file

from .codec import (
    HEADER_ORDER,
    MAX_SAFE,
    ROW_TAGS,
    encode_batch,
    encode_lines,
    encode_materialization,
    header_line,
    parse_header_record,
)
from .decode import (
    FREEZE_AFTER,
    RAW_SLICE,
    StoredPrefix,
    TornMarker,
    bulk_load,
    decode_raw_text,
    detect_compression,
    scan_buffer,
    scan_file,
)
from .prepare import Prepared, commit_repair, prepare, repair_file
from .scanner import LineScanner, _expand_row  # noqa: F401  (tests check the row expansion directly)
from .store import JsonlStore, read_header

__all__ = [
    "JsonlStore", "LineScanner", "StoredPrefix", "TornMarker", "Prepared", "StoreError",
    "scan_buffer", "scan_file", "prepare", "repair_file", "commit_repair", "read_header", "read_stable",
    "encode_batch", "encode_lines", "encode_materialization", "header_line", "parse_header_record",
    "append_bytes", "write_new_file", "truncate_file", "revision_of", "decode_raw_text",
    "detect_compression", "bulk_load", "FREEZE_AFTER", "RAW_SLICE", "ROW_TAGS", "HEADER_ORDER", "MAX_SAFE",
]
