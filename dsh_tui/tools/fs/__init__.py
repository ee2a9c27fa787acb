"""The ``read``, ``write`` and ``edit`` tools (dsh ``tool-fs`` + ``fs-local`` + ``fs-observation-policy``).

Model-visible strings are dsh's, exactly (docs/tools.md). The read-before-write policy
lives in ``ctx.state['fs.observed']``: real path -> ``{"kind": "present", "version"}`` or
``{"kind": "absent"}``. A read (or a successful write/edit) records the file's version
(``dev:ino:size:mtimeNs:ctimeNs``, as dsh); ``write`` over an unseen existing file and ``edit`` of
an unseen file are refused, and both refuse when the file changed since it was seen.
All file work runs in a worker thread; the event loop never blocks.

``common`` holds the observation state and what the three share, ``read`` the read window, ``diff`` the hunk
diffs of a change, ``change`` the write and edit tools.
"""

from __future__ import annotations

from dsh_tui.tools.fs.change import (
    edit_tool,
    format_edit_output,
    format_write_output,
    parse_edit_args,
    parse_write_args,
    write_tool,
)
from dsh_tui.tools.fs.common import NOT_OBSERVED_REMEDY, STALE_REMEDY, STATE_KEY, version_of
from dsh_tui.tools.fs.diff import DIFF_BASIS_MAX_BYTES, DIFF_CONTEXT, compute_hunk_diffs, diff_counts
from dsh_tui.tools.fs.read import (
    BINARY_SAMPLE_BYTES,
    LANG_BY_EXTENSION,
    READ_CHUNK_BYTES,
    READ_LIMIT,
    READ_MAX_BYTES,
    READ_MAX_LINE_LENGTH,
    _Window,
    format_read_output,
    lang_from_path,
    parse_read_args,
    read_tool,
)

__all__ = [
    "BINARY_SAMPLE_BYTES", "DIFF_BASIS_MAX_BYTES", "DIFF_CONTEXT", "LANG_BY_EXTENSION", "NOT_OBSERVED_REMEDY",
    "READ_CHUNK_BYTES", "READ_LIMIT", "READ_MAX_BYTES", "READ_MAX_LINE_LENGTH", "STALE_REMEDY", "STATE_KEY", "_Window",
    "compute_hunk_diffs", "diff_counts", "edit_tool", "format_edit_output", "format_read_output",
    "format_write_output", "lang_from_path", "parse_edit_args", "parse_read_args", "parse_write_args", "read_tool",
    "version_of", "write_tool",
]
