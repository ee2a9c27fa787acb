"""The human transcript of a session, folded incrementally from its event log.

* :mod:`.items` -- the transcript rows (``UserItem``, ``StreamItem``, ``ToolItem`` ...), the plan strip
  (``PlanState``), change kinds and the words items show (turn-end reasons, context producers);
* :mod:`.fold` -- ``TranscriptFold``: events to item changes, live and cold alike; ``fold_transcript``,
  ``tail_start``;
* :mod:`.notices` -- the fold's handlers for what is beside the conversation (compaction, changed files,
  the fork/resume divider, skipped files);
* :mod:`.hunks` -- where a recorded edit's diff hunks start in the file lines the session has seen.

The package re-exports the names its callers (the chat screen, its widgets, the export, tests) import.
"""

from __future__ import annotations

from .fold import MIN_DECODE_MS, TranscriptFold, fold_transcript, tail_start  # noqa: F401
from .items import (  # noqa: F401
    ADD,
    BASH_TOOLS,
    EDIT_TOOLS,
    PLAN,
    READ_TOOLS,
    REMOVE,
    SEARCH_TOOLS,
    TODO_TOOLS,
    UPDATE,
    Change,
    CompactionItem,
    ContextItem,
    DividerItem,
    FooterItem,
    Item,
    PlanState,
    RetryItem,
    StreamItem,
    ToolItem,
    UserItem,
    context_producer,
    reason_text,
    tool_kind,
)
