"""The session catalog: a derived SQLite index (WAL, FTS5) over every session log in the roots.

One module per concern; this package re-exports the public names (``from dsh_tui.store.catalog import
Catalog, SessionRow, ...`` keeps working):

* :mod:`.rows` -- :class:`SessionRow`, :class:`SearchHit`, the listed states;
* :mod:`.discover` -- roots, the session logs in them, file revisions, lock probes;
* :mod:`.reader` -- complete records of a log from a byte offset (raw or zstd), the header;
* :mod:`.fold` -- the incremental per-log fold (listing facts and searchable text) and the row it fills;
* :mod:`.db` -- the SQLite schema (``sessions``, FTS5 ``content``, ``snapshot``), table reads, row writes;
* :mod:`.snapshot` -- the listing snapshot a first paint loads (per root, the facts the list shows);
* :mod:`.search` -- full-text search of the ``content`` table;
* :mod:`.index` -- :class:`Catalog`: per-thread connections, the listing, scan, incremental index;
* :mod:`.filters` -- ordering, the instant filter, workspaces, FTS query text;
* :mod:`.actions` -- rename, fork, archive, trash, restore.
"""

from __future__ import annotations

from .actions import (  # noqa: F401
    ARCHIVE_DIR,
    BUCKET_STATES,
    TRASH_DIR,
    archive,
    bucket_rows,
    completed_turns,
    ended_turns,
    fork_at_turn,
    move_to_trash,
    numbered_title,
    prompt_title,
    rename,
    restore,
    store_for,
)
from .db import SCHEMA_VERSION  # noqa: F401
from .discover import (  # noqa: F401
    LOCK_PROBE_WINDOW,
    RAW_NAME,
    SQLITE_DB,
    ZSTD_NAME,
    default_db_path,
    default_roots,
    discover,
    jsonl_lock_held,
    resolve_roots,
)
from .filters import (  # noqa: F401
    filter_rows,
    fts_query,
    haystack,
    sort_rows,
    workspace_names,
    workspace_rows,
)
from .index import Catalog  # noqa: F401
from .reader import (  # noqa: F401  # noqa: F401  (tests spy on the readers)
    _iter_raw,
    _iter_zstd,
    read_log_header,
)
from .rows import (  # noqa: F401
    BLANK,
    BLOCKED,
    CANCELLED,
    COMPLETED,
    FAILED,
    INDEXING,
    INTERRUPTED,
    MAX_TOKENS,
    OPEN_ELSEWHERE,
    UNREADABLE,
    CatalogError,
    SearchHit,
    SessionRow,
    end_state,
    one_line,
)

# ui/app.py still calls the private name; store_for is the public one.
_store_for = store_for
