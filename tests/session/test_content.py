"""content_text: the one reader of message content blocks (transcript, timeline, catalog search text)."""

from __future__ import annotations

from dsh_tui.session.content import content_text
from dsh_tui.session.timeline import summarize
from dsh_tui.store.catalog.fold import _text_of

BLOCKS = [
    {"type": "reasoning", "text": "think"},
    {"type": "text", "text": "hello"},
    {"type": "text", "text": ""},
    {"type": "image", "attachment": {"name": "shot.png"}},
    {"type": "image"},
    {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"path":"a"}'},
    {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "inner"}]},
    {"type": "future-block"},
    "not a block",
]


def test_defaults_keep_text_reasoning_and_tool_results_only():
    assert content_text(BLOCKS) == "think\nhello\ninner"
    assert content_text(BLOCKS, reasoning=False) == "hello\ninner"
    assert content_text("text") == "" and content_text(None) == ""


def test_marks_name_images_and_unknown_blocks_and_calls_use_the_format():
    assert content_text(BLOCKS, sep=" ", marks=True, calls="{name}:{arguments}") == (
        'think hello [shot.png] [image] read:{"path":"a"} inner [future-block]')


def test_the_three_readers_agree_on_the_same_blocks():
    # the catalog's search text: tool calls as "name arguments", no images
    assert _text_of(BLOCKS) == 'think\nhello\nread {"path":"a"}\ninner'
    # the timeline inspector: one line, tool calls as arrows
    event = {"type": "assistant/message", "seq": 1, "data": {"message": {"content": BLOCKS}}}
    assert summarize(event) == 'think hello [shot.png] [image] → read({"path":"a"}) inner [future-block]'
