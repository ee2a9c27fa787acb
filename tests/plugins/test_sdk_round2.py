"""Issue #30 (plugins round 2), items 2 and 6: a listener's error reaches the log as it was raised from the
sync ``Harness.run`` too, and plugins can be named by module as ``--plugin`` takes them."""

from __future__ import annotations

from typing import Any

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.session.content import tool_result_block


class Exploding:
    name = "exploding"

    def apply(self, ctx: Any, config: dict) -> None:
        async def bad(payload: dict, next_: Any = None) -> Any:
            raise ValueError("listener exploded")

        ctx.on("agent/request", bad)


def test_a_listener_error_from_sync_run_keeps_its_own_message(tmp_path):
    from dsh_tui import Harness

    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[Exploding()],
                 provider_instance=ScriptedProvider([scripted.text("hi")])) as harness:
        result = harness.run("hello")
    (end,) = [e for e in result.events if e["type"] == "turn/end"]
    # item 2: it was "...: no running event loop"; item 9: the plugin and the event are named
    assert end["data"]["reason"]["error"]["message"] == \
        "plugin exploding: listener for agent/request raised ValueError: listener exploded"


def test_a_plugin_named_by_module_is_loaded(tmp_path):
    from dsh_tui import Harness
    from tests.plugins import named_plugin

    named_plugin.SEEN.clear()
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=["tests.plugins.named_plugin"],
                 provider_instance=ScriptedProvider([scripted.text("hi")])) as harness:
        result = harness.run("hello")
    assert result.finish_reason == "completed" and named_plugin.SEEN == ["agent/request"]


class NoRender:
    name = "no-render"

    def apply(self, ctx: Any, config: dict) -> None:
        from dsh_tui.tools import ToolDefinition

        async def execute(args: Any, _ctx: Any) -> Any:
            return {"sum": args["a"] + args["b"]}

        ctx.tools.register(ToolDefinition(
            name="add", description="Add two numbers.",
            parameters={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                        "required": ["a", "b"]},
            execute=execute))


def test_a_tool_without_render_gets_its_value_as_text(tmp_path):
    """Item 3: ``render`` is optional (it was a raw TypeError at load)."""
    from dsh_tui import Harness

    provider = ScriptedProvider([scripted.call("c1", "add", {"a": 2, "b": 3}), scripted.text("5")])
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[NoRender()], strict_plugins=True,
                 provider_instance=provider) as harness:
        result = harness.run("add 2 and 3")
    (res,) = [e for e in result.events if e["type"] == "tool/result"]
    block = tool_result_block(res["data"]["message"])
    assert block["content"] == [{"type": "text", "text": '{"sum":5}'}] and not block.get("isError")


class Watcher:
    name = "watcher"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def apply(self, ctx: Any, config: dict) -> None:
        ctx.on("session/event", lambda payload: self.seen.append(payload["event"]["type"]))


def test_a_session_event_listener_sees_every_appended_event(tmp_path):
    """dsh's ``session/event``: a plugin observes every event appended to the log."""
    from dsh_tui import Harness

    watcher = Watcher()
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[watcher],
                 provider_instance=ScriptedProvider([scripted.text("hi")])) as harness:
        result = harness.run("hello")
    assert watcher.seen[-len(result.events):] == [e["type"] for e in result.events]
    assert "turn/end" in watcher.seen


def test_a_bad_preset_is_a_harness_error_at_construction(tmp_path):
    """Item 9: it was a ``DshError`` at ``run()``."""
    import pytest

    from dsh_tui import Harness
    from dsh_tui.sdk import HarnessError

    with pytest.raises(HarnessError, match="unknown preset 'yolo'"):
        Harness(cwd=tmp_path, preset="yolo")


class Answers:
    name = "answers"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def apply(self, ctx: Any, config: dict) -> None:
        async def answer(payload: dict, next_: Any) -> Any:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

        ctx.on("approval/request", answer)


def _asked_bash(tmp_path, plugin: Any) -> str:
    from dsh_tui import Harness

    provider = ScriptedProvider([scripted.call("c1", "bash", {"command": "echo hi", "description": "hi"}),
                                 scripted.text("done")])
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[plugin], provider_instance=provider) as h:
        result = h.run("run it")
    (res,) = [e for e in result.events if e["type"] == "tool/result"]
    return tool_result_block(res["data"]["message"])["content"][0]["text"]


def test_a_bad_approval_answer_is_named_to_the_model_not_no_channel(tmp_path):
    """Item 9: a listener's bad return value reached the model as "no approval channel is available"."""
    text = _asked_bash(tmp_path / "a", Answers("yes"))
    assert text.startswith('Error: tool "bash" requires approval, but an approval/request listener answered '
                           "'yes' (expected one of allowed-once, rejected, cancelled, unavailable)"), text
    text = _asked_bash(tmp_path / "b", Answers(RuntimeError("answer service down")))
    assert "the approval answer failed: plugin answers: listener for approval/request raised RuntimeError: " \
           "answer service down" in text, text


def test_a_typed_tool_takes_a_pydantic_model_and_returns_validation_errors_to_the_model(tmp_path):
    """A typed tool helper: the schema comes from the model (references inlined, Optional as a nullable
    type), arguments are validated by it and a bad one is the model's INVALID_ARGS error."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    from dsh_tui import Harness
    from dsh_tui.plugins import typed_tool
    from dsh_tui.runtime.schema import check_schema

    class Point(BaseModel):
        x: int
        y: int = 0

    class Move(BaseModel):
        model_config = ConfigDict(extra="forbid")
        to: Point = Field(description="where to go")
        label: str | None = None
        steps: int = Field(1, ge=1)

        @field_validator("label")
        @classmethod
        def _no_shouting(cls, v: str | None) -> str | None:
            if v is not None and v.isupper():
                raise ValueError("no shouting")
            return v

    async def move(args: Move, _tctx: Any) -> dict:
        return {"at": [args.to.x, args.to.y], "steps": args.steps}

    tool = typed_tool("move", "Move to a point.", Move, move)
    check_schema(tool.parameters)  # dsh's subset: it registers
    assert tool.parameters["additionalProperties"] is False
    assert tool.parameters["properties"]["to"]["properties"]["x"] == {"title": "X", "type": "integer"}
    assert tool.parameters["properties"]["label"]["type"] == ["string", "null"]

    class Mover:
        name = "mover"

        def apply(self, ctx: Any, config: dict) -> None:
            ctx.tools.register(tool)

    provider = ScriptedProvider([scripted.call("c1", "move", {"to": {"x": 2}, "steps": 3}),
                                 scripted.call("c2", "move", {"to": {"x": 1}, "label": "LOUD"}),
                                 scripted.text("done")])
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[Mover()], strict_plugins=True,
                 provider_instance=provider) as harness:
        result = harness.run("move twice")
    ok, bad = [e["data"] for e in result.events if e["type"] == "tool/result"]
    ok_block, bad_block = tool_result_block(ok["message"]), tool_result_block(bad["message"])
    assert ok_block["content"][0]["text"] == '{"at":[2,0],"steps":3}'
    assert bad_block["isError"] and bad["error"]["code"] == "INVALID_ARGS"
    assert "invalid arguments: label: Value error, no shouting" in bad_block["content"][0]["text"]


def test_the_documented_system_prompt_section_example_reaches_the_request(tmp_path):
    """Item 7: docs/plugins.md's `system-prompt/assemble` example, run as written."""
    from dsh_tui import Harness
    from dsh_tui.runtime.prompt import Section

    class HouseRules:
        name = "house-rules"

        def apply(self, ctx: Any, config: dict) -> None:
            async def assemble(payload: dict, next: Any) -> Any:  # noqa: A002 - the docs' name
                assembly = await next()
                assembly.sections.append(Section("house-rules", 900, "Answer in British English."))
                return assembly

            ctx.on("system-prompt/assemble", assemble)

    provider = ScriptedProvider([scripted.text("Righto.")])
    with Harness(cwd=tmp_path, session_root=tmp_path / "s", plugins=[HouseRules()], strict_plugins=True,
                 provider_instance=provider) as harness:
        result = harness.run("hello")
    # the system prompt: the request header's (format v0) or the log's system/message head (format v4)
    systems = [e["data"]["header"].get("system") for e in result.events if e["type"] == "request/header"]
    systems += [e["data"]["message"]["content"][0]["text"] for e in result.events if e["type"] == "system/message"]
    assert any(s and s.endswith("Answer in British English.") for s in systems), systems
