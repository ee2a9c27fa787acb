"""todo_write: whole-list replacement, the todo/write event and the summary text."""

from __future__ import annotations

from tests.tools.harness import Bench


async def test_todo_write_emits_event_and_summarises(tmp_path):
    bench = Bench(tmp_path)
    todos = [
        {"content": "read the code", "status": "in_progress"},
        {"content": "watch the background build", "status": "in_progress"},
        {"content": "write the fix", "status": "pending"},
    ]
    out = await bench.run("todo_write", {"todos": todos})
    assert out.text == "Updated todo list: 1 pending, 2 in progress, 0 completed."
    assert out.meta is None
    assert bench.events == [("todo/write", {"todos": todos})]
    out = await bench.run("todo_write", {"todos": [{"content": "done", "status": "completed"}]})
    assert out.text == "Updated todo list: 0 pending, 0 in progress, 1 completed."
    assert bench.events[-1] == ("todo/write", {"todos": [{"content": "done", "status": "completed"}]})
    out = await bench.run("todo_write", {"todos": []})
    assert out.text == "Updated todo list: 0 pending, 0 in progress, 0 completed."
    assert bench.events[-1] == ("todo/write", {"todos": []})


async def test_todo_write_rejects_bad_items_without_an_event(tmp_path):
    bench = Bench(tmp_path)
    out = await bench.run("todo_write", {"todos": [{"content": "x", "status": "blocked"}]})
    assert (
        out.is_error and out.text == "Error: todos[0].status must be one of pending, in_progress, completed"
    )
    assert bench.events == []
