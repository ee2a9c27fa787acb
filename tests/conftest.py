"""Test fixtures: paths to the recorded dsh logs in tests/fixtures and isolated user directories."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import pytest
from hypothesis import settings

# No wall-clock limit on any property test (Hypothesis' default 200 ms deadline fails on a loaded machine).
settings.register_profile("dsh-tui", deadline=None)
settings.load_profile("dsh-tui")

REPO = Path(__file__).resolve().parents[1]

# A suite started in the background (nohup, `cmd &` in a script, some CI runners) inherits SIGHUP and SIGINT
# ignored, and so would every dsh-tui the tests start: it keeps a signal it was started ignoring ignored (as
# nohup asks), and the signal tests would wait for nothing. The tests run as from a terminal.
for _sig, _handler in ((signal.SIGHUP, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, _handler)
# Everything the tests read lives in this repository: a fresh clone passes its own suite.
FIXTURES = REPO / "tests" / "fixtures" / "dsh"  # the recorded dsh logs (MIT, see its LICENSE)
INVENTORY = REPO / "tests" / "fixtures" / "dsh-inventory.tsv"  # the corpus inventory: scenario, files, tags
INTEROP = REPO / "tests" / "interop" / "peer"  # the dsh persistence peer: package.json, lock and .mjs scripts


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """No test reads or writes the real ~/.dsh, config or cache directories."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("DSH_TUI_CHECK_REQUESTS", "1")  # every request checked against the log, in every test
    # The OS sandbox (on by default where bubblewrap works) changes what the model is offered and whether a
    # command asks: the suite runs without it, the same on every machine; the sandbox's own tests turn it on
    # (tests/tools/test_sandbox.py, tests/cli/test_sandbox_cli.py).
    monkeypatch.setenv("DSH_TUI_SANDBOX", "off")
    # pytest-xdist's workers carry COLUMNS=80 and LINES=24; an app started in a pseudo-terminal of another size
    # would take those over the terminal's own and draw off-screen
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    # The built-in DeepSeek route speaks the Messages wire by default (as dsh 0.2); the suite's scripted
    # servers mostly speak chat completions, so tests select that wire unless they ask otherwise
    # (``use_messages_default`` below; subprocesses inherit it with the rest of the environment).
    monkeypatch.setenv("DSH_TUI_DEEPSEEK_API", "chat")
    # New sessions in the default format (v4, dsh 0.2's), whatever the caller's environment says; a test about
    # format v0 asks for it (``session_format_v0`` below)
    monkeypatch.delenv("DSH_TUI_SESSION_FORMAT", raising=False)
    # the command line, run in-process by a test, routes plugin and MCP logs to their own handlers alone
    # (propagate off, for the rest of the process): each test starts with them reaching the root (caplog) again
    routed = {name: logging.getLogger(name).propagate for name in ("dsh_tui.plugins", "dsh_tui.plugins.mcp", "mcp")}
    yield
    for name, propagate in routed.items():
        logging.getLogger(name).propagate = propagate
    from dsh_tui.llm.redact import forget_secrets

    forget_secrets()  # the redaction registry is per process: a test's keys stay in that test


@pytest.fixture
def session_format_v0(monkeypatch):
    """New sessions in format v0 (dsh 0.1's, ``[storage] format = "v0"``), subprocesses too: for tests about v0
    itself, tests comparing a new session with a dsh 0.1 recording event by event, and the dsh 0.1 peer (it
    reads only v0). Use it by name (``pytestmark = pytest.mark.usefixtures("session_format_v0")`` for a module);
    the suite's default is the product's (v4)."""
    monkeypatch.setenv("DSH_TUI_SESSION_FORMAT", "v0")


@pytest.fixture
def use_messages_default(monkeypatch):
    """The built-in route as a user gets it with no settings: the Messages wire (dsh 0.2's default)."""
    monkeypatch.delenv("DSH_TUI_DEEPSEEK_API", raising=False)
