"""Example plugin: at the first step of every turn, add a context message (e.g. team conventions).

    [plugins.context-inject]
    text = "Answer in British English."
    # or: file = "NOTES.md"   (read at every turn, relative to the session's working directory)
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, model_validator

from dsh_tui.plugins import Context, user_message

name = "context-inject"


class Config(BaseModel):
    text: str = ""
    file: str = ""

    @model_validator(mode="after")
    def _one_source(self) -> Config:
        if not self.text and not self.file:
            raise ValueError("set text or file")
        return self


def apply(ctx: Context, config: Config) -> None:
    def context_text() -> str:
        if config.file:
            path = Path(ctx.agent.config["cwd"]) / config.file
            return path.read_text(encoding="utf-8") if path.is_file() else ""
        return config.text

    async def pre_step(payload, next):
        decision = await next()  # the built-in decision: claimed prompt + runtime context
        if payload["step"] != 1 or not isinstance(decision, dict) or decision.get("kind") != "enter":
            return decision
        text = context_text()
        if not text:
            return decision
        note = user_message(f"<context source=\"{name}\">\n{text}\n</context>",
                            source={"kind": "plugin", "plugin": name})
        return {**decision, "messages": [*decision["messages"], note]}

    ctx.on("agent/pre-step", pre_step)
