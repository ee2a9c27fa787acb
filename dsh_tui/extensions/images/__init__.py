"""The ``images`` built-in plugin: dsh's ``read_image`` tool (``dsh_tui.tools.images``).

The tool is offered to every model (as dsh offers it); a model that does not take images (its
``input_modalities`` lack ``"image"``, see docs/providers.md) gets dsh's refusal when it calls it. Turn the
tool off with ``[plugins.images] enabled = false``, which also turns off image attachments in the user's
prompts (``prompt.py``; the app's harness checks it) (docs/tools.md, "Images").
"""

from __future__ import annotations

from typing import Any

from dsh_tui.session.errors import DshError

name = "images"
__all__ = ["apply", "name"]


def apply(ctx: Any, config: Any = None) -> None:
    from dsh_tui.tools.images import read_image_tool

    if config:
        raise DshError(f"unknown option(s) {', '.join(sorted(config))} (images takes none but enabled)")

    def route() -> tuple[str, bool]:
        info = ctx.agent.model_info()
        return ctx.agent.model, bool(info is not None and info.takes_images)

    ctx.tools.register(read_image_tool(route))
