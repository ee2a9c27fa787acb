"""Snapshot tests of the chat screen's states (same states as ``python -m dsh_tui.ui.screenshots``).

Deterministic by construction: frozen session/agent/status clocks, a fresh directory per run (removed
after it) shown as a fixed path of the same length (``screenshots.state_dir``/``masked``: the pictures do
not depend on TMPDIR and parallel runs share nothing), fixed theme, animations off, no cursor blink, isolated config
dirs (tests/conftest.py).
"""

from __future__ import annotations

import shutil

import pytest

from dsh_tui.ui.screenshots import STATES, build_app, masked, run_before, shown_dir, state_dir

DESCRIPTIONS = {
    "chat-idle": "a finished turn: prompt, collapsed thinking row, answer, turn footer, idle status bar",
    "chat-streaming": "an answer mid-stream (Markdown with a code block), status bar 'responding'",
    "tool-cards": "collapsed tool cards: read ×2, bash with a red 'exit 1' pill, edit '+2 −1', glob",
    "tool-cards-expanded": "the same cards expanded: read lines, bash output, the edit diff",
    "approval": "the approval panel in place of the composer: bash command, reason, Allow once / for the session / Reject / Reject with reason",
    "error-notice": "a failed turn: footer 'Failed: AUTH: …' and the status bar notice (no toast repeating them)",
    "retry": "the muted 'Retrying model request (1/5) in 1 s' row and the recovered answer",
    "chat-80x24": "tool cards at 80×24",
    "search": "Ctrl+F 'beta', Enter once: '4 of 5' in the search bar (the read's output counts too), matches yellow, the current one"
              " orange in the bash card's output, the card shown expanded",
}


@pytest.fixture
def run_dir():
    made = []

    def make(state):
        base = state_dir(state)
        made.append(base)
        return base

    yield make
    for base in made:
        shutil.rmtree(base.parent, ignore_errors=True)


@pytest.mark.parametrize("name", list(STATES))
def test_chat_state_snapshot(name, snap_compare, run_dir):
    """You should see the state described in DESCRIPTIONS[name]."""
    state = STATES[name]
    base = run_dir(state)
    app = masked(build_app(state, base), str(base), shown_dir(state))
    assert snap_compare(app, terminal_size=state.size, run_before=run_before(state))


def test_run_dirs_are_private_and_shown_as_one_fixed_path(monkeypatch, tmp_path):
    state = STATES["tool-cards-expanded"]
    shown = shown_dir(state)
    a, b = state_dir(state), state_dir(state)
    try:
        assert a != b and a.is_dir() and b.is_dir()
        assert len(str(a)) == len(str(b)) == len(shown)
    finally:
        shutil.rmtree(a.parent)
        shutil.rmtree(b.parent)
    # a long TMPDIR: the path still has the shown length (falls back to /tmp)
    deep = tmp_path / ("t" * 60)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    c = state_dir(state)
    try:
        assert len(str(c)) == len(shown) and not str(c).startswith(str(deep))
    finally:
        shutil.rmtree(c.parent)
