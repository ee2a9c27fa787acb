"""The ``todo_write`` tool (dsh ``tool-todo``): replaces the whole list and appends ``todo/write``."""

from __future__ import annotations

from typing import Any

from dsh_tui.tools.base import ToolContext, ToolDefinition
from dsh_tui.tools.common import plain_error

STATUSES = ("pending", "in_progress", "completed")


def _todos(args: Any) -> list[dict[str, str]]:
    if not isinstance(args, dict) or not isinstance(args.get("todos"), list):
        raise plain_error("todos must be an array")
    out = []
    for i, item in enumerate(args["todos"]):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise plain_error(f"todos[{i}].content must be a string")
        if item.get("status") not in STATUSES:
            raise plain_error(f"todos[{i}].status must be one of pending, in_progress, completed")
        out.append({"content": item["content"], "status": item["status"]})
    return out


def summary(todos: list[dict[str, Any]]) -> str:
    counts = {s: sum(1 for t in todos if t.get("status") == s) for s in STATUSES}
    return (
        f"Updated todo list: {counts['pending']} pending, {counts['in_progress']} in progress, "
        f"{counts['completed']} completed."
    )


def todo_write_tool(schema: dict[str, Any]) -> ToolDefinition:
    async def execute(args: Any, ctx: ToolContext) -> Any:
        todos = _todos(args)
        if ctx.emit_event is not None:
            ctx.emit_event("todo/write", {"todos": todos})
        return {"todos": todos}

    return ToolDefinition(
        name="todo_write",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=lambda args, value: [{"type": "text", "text": summary(value["todos"])}],
        presentation_meta=None,
        is_concurrency_safe=None,
        access="read",
    )
