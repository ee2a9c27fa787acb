"""The ``subagents`` built-in's options (``[plugins.subagents]``): its pydantic ``Config``, with the texts the
hand-written checks had (``dsh_tui.runtime.options.validate_options``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationInfo

from dsh_tui.runtime.options import boolean, option_error, positive_int, validate_options

DEFAULTS: dict[str, Any] = {"max_depth": 3, "subagent_mode": "continuable", "fork_mode": "one-shot",
                            "fork_background": False, "subagent_background": True,
                            "max_children": 8, "max_tree_live": 32, "max_tree_total": 256}
#: The fan-out caps (dsh has none but depth): live children per agent, live subagents in a session tree
#: (a root agent and everything below it, in this process), subagents a tree opens in all.
CAPS = ("max_children", "max_tree_live", "max_tree_total")


def _max_depth(value: Any) -> Any:
    if value != "provider-managed" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise option_error(f'max_depth must be a non-negative integer or "provider-managed", got {value!r}')
    return value


def _mode(value: Any, info: ValidationInfo) -> Any:
    if value not in ("one-shot", "continuable"):
        raise option_error(f'{info.field_name} must be "one-shot" or "continuable", got {value!r}')
    return value


_Bool = Annotated[bool, BeforeValidator(boolean)]
_Cap = Annotated[int, BeforeValidator(positive_int)]
_Mode = Annotated[Literal["one-shot", "continuable"], BeforeValidator(_mode)]


class Config(BaseModel):
    """``[plugins.subagents]``: the subagent tools. Fields are checked in this order (the first problem is
    the one reported)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    fork_background: _Bool = False
    """``subagent_fork`` runs in the background (a job) instead of waiting."""
    subagent_background: _Bool = True
    """``subagent`` runs in the background by default (the model may still ask it to wait)."""
    max_children: _Cap = 8
    """Live children of one agent at most."""
    max_tree_live: _Cap = 32
    """Live subagents in one session tree (a root agent and everything below it) at most."""
    max_tree_total: _Cap = 256
    """Subagents one session tree opens in all, at most."""
    max_depth: Annotated[int | Literal["provider-managed"], BeforeValidator(_max_depth)] = 3
    """How deep children may nest (0: no children), or ``"provider-managed"`` (no limit here)."""
    subagent_mode: _Mode = "continuable"
    """``continuable`` (a child that can be sent more messages) or ``one-shot`` for ``subagent``."""
    fork_mode: _Mode = "one-shot"
    """``one-shot`` or ``continuable`` for ``subagent_fork``."""


def parse(raw: Any) -> Config:
    """The ``[plugins.subagents]`` table validated; the first problem is a one-line ``DshError``."""
    return validate_options(Config, raw, DEFAULTS)
