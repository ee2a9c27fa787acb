"""A model server on 127.0.0.1 that scripts ``bash`` calls, for the sandbox tests of the CLI, the SDK and the app.

A user prompt ``CMD <json>`` gets one ``bash`` call with those arguments; after the tool result the answer is
``RESULT: <the result text>``; anything else (a title request too) gets an echo.
"""

from __future__ import annotations

import json
from typing import Any

from tests.llm.sse_server import chunk, tool_call
from tests.ui.browser_support import ModelServer

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def cmd_prompt(command: str, **extra: Any) -> str:
    return "CMD " + json.dumps({"command": command, "description": "run it", **extra})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


class BashServer(ModelServer):
    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return [chunk("RESULT: " + _text(last.get("content")), role="assistant"), chunk(finish="stop"),
                    chunk(no_choices=True, usage=USAGE)]
        said = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
        found = [line for line in said.splitlines() if line.startswith("CMD ")]
        if last.get("role") == "user" and found:
            call = tool_call(0, id=f"call_{len(found)}", name="bash", args=found[-1][4:])
            return [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls"),
                    chunk(no_choices=True, usage=USAGE)]
        return [chunk("echo", role="assistant"), chunk(finish="stop"), chunk(no_choices=True, usage=USAGE)]
