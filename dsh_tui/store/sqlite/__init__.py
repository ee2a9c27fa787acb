"""SQLite session backend: dsh schema 17 (docs/format.md, "SQLite storage"), byte-compatible rows, same
interface as the JSONL store.

One module per concern; this package re-exports the public names (``from dsh_tui.store.sqlite import
SqliteSessionStore`` keeps working):

* :mod:`.schema` -- the exact schema, pragmas, application id and user version; open, create, verify;
* :mod:`.codec` -- the row codec (compact JSON / zstd ``data``, varint seq lists, packed rows) and headers;
* :mod:`.store` -- :class:`SqliteSessionStore`.
"""

from __future__ import annotations

from .codec import (  # noqa: F401
    PACK_MAX_BYTES,
    PACK_MAX_MEMBERS,
    PACKED_TAGS,
    TEXT_LIMIT,
    ZSTD_LEVEL,
    decode_data,
    decode_row,
    decode_seqs,
    encode_data,
    encode_line,
    encode_seqs,
    encode_varint,
    header_to_row,
    row_last_seq,
    row_to_header,
)
from .schema import (  # noqa: F401
    APPLICATION_ID,
    BUSY_TIMEOUT_MS,
    DB_FILENAME,
    LOCK_DIRNAME,
    REFERENCE_SCHEMA,
    SCHEMA_SQL,
    SCHEMA_STATEMENTS,
    USER_VERSION,
    SqliteStoreError,
    connect,
    normalize_sql,
    verify_schema,
    verify_schema_quick,
)
from .store import SqliteSessionStore  # noqa: F401
