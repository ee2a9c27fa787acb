"""A built-in plugin's options (its ``[plugins.<id>]`` table): the defaults completed, unknown keys refused,
integer options checked, each with the text the plugin's dsh package uses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dsh_tui.session.errors import DshError


def plugin_options(raw: Any, defaults: Mapping[str, Any], *, positive: Iterable[str] = (),
                   says: str = "a positive integer", shows_value: bool = False,
                   booleans: Iterable[str] = ()) -> dict[str, Any]:
    """``defaults`` updated by ``raw``; a key ``defaults`` lacks raises, as does an option of ``booleans``
    that is not true or false, or one of ``positive`` that is not an integer ≥ 1 ("KEY must be SAYS", with
    ", got VALUE" when ``shows_value``)."""
    cfg = dict(defaults)
    raw = dict(raw or {})
    unknown = set(raw) - set(defaults)
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected {', '.join(defaults)})")
    cfg.update(raw)
    for key in booleans:
        if not isinstance(cfg[key], bool):
            raise DshError(f"{key} must be true or false")
    for key in positive:
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DshError(f"{key} must be {says}" + (f", got {value!r}" if shows_value else ""))
    return cfg
