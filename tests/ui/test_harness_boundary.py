"""The typed harness ↔ UI boundary (issue #28 item 2): the harness tells the UI things as dataclass messages
(``dsh_tui.harness_messages``), not string-tagged tuples; the approval outcome is a small typed value; the UI
reads the harness only through the ``SessionBackend`` protocol's thread-safe reads, never the agent or its session."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from dsh_tui import harness_messages as hm
from dsh_tui.llm import scripted
from dsh_tui.ui.bridge import BackendDefaults, SessionBackend
from tests.ui.conftest import scripted_app, submit, wait_for

UI = Path(__file__).resolve().parents[2] / "dsh_tui" / "ui"
# the harness itself reads its agent; the bridge subscribes to ``harness.session`` on the harness thread;
# the replay harness is its own session
OWNERS = {"harness.py", "bridge.py", "replay.py"}


def _reaches_past_the_protocol(node: ast.AST) -> str | None:
    """``x.agent``, ``getattr(x, "agent" | "session" | "writer" | "host")``, ``x.session.events``."""
    if isinstance(node, ast.Attribute) and node.attr == "agent":
        return ".agent"
    if isinstance(node, ast.Attribute) and node.attr == "events" and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "session":
        return ".session.events"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
            and node.args[1].value in ("agent", "session", "writer", "host"):
        return f'{node.func.id}(…, "{node.args[1].value}")'
    return None


def test_no_ui_code_reads_the_agent_or_its_session():
    found = []
    for path in sorted(UI.rglob("*.py")):
        if path.name in OWNERS and path.parent == UI:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = _reaches_past_the_protocol(node)
            if what:
                found.append(f"{path.relative_to(UI)}:{node.lineno}: {what}")
    assert found == []


def test_every_harness_the_ui_sees_implements_the_protocol():
    from dsh_tui.ui.harness import AgentHarness
    from dsh_tui.ui.replay import ReplayHarness
    from dsh_tui.ui.screens.subagent import ChildHarness

    members = [n for n in vars(SessionBackend) if not n.startswith("_")] + list(typing.get_type_hints(SessionBackend))
    for cls in (BackendDefaults, AgentHarness, ReplayHarness, ChildHarness):
        assert [m for m in members if not hasattr(cls, m)] == [], cls.__name__


def test_the_approval_outcome_is_a_typed_value_with_the_runtimes_wire_form():
    assert hm.ALLOW_ONCE.wire() == "allowed-once" and hm.ALLOW_ONCE.allowed
    assert hm.ALLOW_SESSION.wire() == {"outcome": "allowed-once", "scope": "session"}
    assert hm.REJECT.wire() == "rejected" and not hm.REJECT.allowed
    why = hm.ApprovalOutcome("rejected", reason="not there")
    assert why.wire() == {"outcome": "rejected", "reason": "not there"}


async def test_an_approval_reaches_the_ui_as_typed_messages_and_comes_back_as_an_outcome(tmp_path):
    (tmp_path / "ws").mkdir()
    call = scripted.call("c1", "bash", {"command": "echo hi > hi.txt", "description": "say hi"})
    app = scripted_app(tmp_path, [call, scripted.text("ok")], preset="workspace-write")
    seen: list = []
    decided: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        drain = app.bridge.drain

        def spy():
            events, messages = drain()
            seen.extend(messages)
            return events, messages

        app.bridge.drain = spy
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None and app.chat.approval.has_focus_within)
        request = app.chat.approval.request
        await pilot.press("s")
        await wait_for(pilot, lambda: any(e["type"] == "approval/decided" for e in app.bridge.harness.session.events))
        await wait_for(pilot, lambda: not app.chat.running)
        decided.append(request.future.result())
    kinds = typing.get_args(hm.HarnessMessage)
    assert seen and all(isinstance(m, kinds) for m in seen), seen
    asked = [m for m in seen if isinstance(m, hm.ApprovalAsked)]
    assert len(asked) == 1 and asked[0].request.tool == "bash" and asked[0].request.call_id == "c1"
    assert hm.StatusChanged("running") in seen and hm.StatusChanged("idle") in seen
    assert decided == [hm.ALLOW_SESSION]
    logged = [e["data"] for e in app.bridge.harness.session.events if e["type"] == "approval/decided"]
    assert [(d["outcome"], d.get("scope")) for d in logged] == [("allowed-once", "session")]


async def test_a_cancelled_turn_closes_its_waiting_approval_with_an_approval_closed_message(tmp_path):
    (tmp_path / "ws").mkdir()
    call = scripted.call("c1", "bash", {"command": "echo hi > hi.txt", "description": "say hi"})
    app = scripted_app(tmp_path, [call, scripted.text("ok")], preset="workspace-write")
    seen: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        drain = app.bridge.drain

        def spy():
            events, messages = drain()
            seen.extend(messages)
            return events, messages

        app.bridge.drain = spy
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        request = app.chat.approval.request
        await pilot.press("ctrl+c")  # cancels the running turn, which no longer waits for the answer: the panel
        # closes and the composer comes back (before, the panel stayed on a request nobody waited for)
        await wait_for(pilot, lambda: not app.chat.running)
        await wait_for(pilot, lambda: app.chat.approval.request is None and app.chat.composer.display)
        assert hm.ApprovalClosed(request) in seen and request.future.cancelled()
        assert not app.chat.approvals.pending and not (tmp_path / "ws" / "hi.txt").exists()


def test_no_class_is_named_harness_something():
    """Issue #28: the classes named ``Harness*`` are named for what they are. The UI's view of a session's
    agent is ``SessionBackend`` (``BackendDefaults`` its defaults; ``BackendFailed`` when it failed); the SDK's
    classes carry dsh's names (``DeepSeekHarness``, ``DeepSeekHarnessConfig``), the old names kept as deprecated
    aliases. ``HarnessError`` is dsh's name for the SDK's error and stays."""
    import dsh_tui
    from dsh_tui import sdk
    from dsh_tui.ui import bridge

    named = []
    for path in sorted((UI.parent).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.startswith("Harness") and node.name != "HarnessError":
                named.append(f"{path.relative_to(UI.parent)}: {node.name}")
    assert named == []
    assert not hasattr(bridge, "Harness") and not hasattr(bridge, "HarnessBase")
    assert not hasattr(hm, "HarnessFailed") and hm.BackendFailed("x").text == "x"
    assert (sdk.DeepSeekHarness.__name__, sdk.DeepSeekHarnessConfig.__name__) == ("DeepSeekHarness",
                                                                                  "DeepSeekHarnessConfig")
    assert dsh_tui.Harness is dsh_tui.DeepSeekHarness is sdk.Harness
    assert dsh_tui.HarnessConfig is dsh_tui.DeepSeekHarnessConfig is sdk.HarnessConfig
    assert dsh_tui.HarnessError is sdk.HarnessError
