"""Snapshot tests of the chat screen's states (same states as ``python -m dsh_tui.ui.screenshots``).

Deterministic by construction: frozen session/agent/status clocks, fixed per-state paths, fixed
theme, animations off, no cursor blink, isolated config dirs (tests/conftest.py).
"""

from __future__ import annotations

import pytest

from dsh_tui.ui.screenshots import STATES, build_app, run_before, state_dir

DESCRIPTIONS = {
    "chat-idle": "a finished turn: prompt, collapsed thinking row, answer, turn footer, idle status bar",
    "chat-streaming": "an answer mid-stream (Markdown with a code block), status bar 'responding'",
    "tool-cards": "collapsed tool cards: read ×2, bash with a red 'exit 1' pill, edit '+2 −1', glob",
    "tool-cards-expanded": "the same cards expanded: read lines, bash output, the edit diff",
    "approval": "the approval panel in place of the composer: bash command, reason, Allow once / Reject",
    "error-notice": "a failed turn: footer 'Failed: AUTH: …', error toast, status bar notice",
    "retry": "the muted 'Retrying model request (1/5) in 1 s' row and the recovered answer",
    "chat-80x24": "tool cards at 80×24",
}


@pytest.mark.parametrize("name", list(STATES))
def test_chat_state_snapshot(name, snap_compare):
    """You should see the state described in DESCRIPTIONS[name]."""
    state = STATES[name]
    app = build_app(state, state_dir(state))
    assert snap_compare(app, terminal_size=state.size, run_before=run_before(state))
