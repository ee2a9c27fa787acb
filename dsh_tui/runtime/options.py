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


# --------------------------------------------------------------------------------------------------
# A built-in's pydantic ``Config`` (``jobs``, ``subagents``) with the texts ``plugin_options`` gives: the
# field validators below raise one-line messages, and ``validate_options`` turns the first into a
# ``DshError``. pydantic is imported by the plugin that defines a ``Config`` (when it is applied), not here.


def option_error(message: str) -> Exception:
    """A validation failure whose text is ``message`` as is."""
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("option", "{message}", {"message": message})


def positive_int(value: Any, info: Any) -> Any:
    """An integer ≥ 1 (``KEY must be a positive integer, got VALUE``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise option_error(f"{info.field_name} must be a positive integer, got {value!r}")
    return value


def boolean(value: Any, info: Any) -> Any:
    """True or false (``KEY must be true or false``)."""
    if not isinstance(value, bool):
        raise option_error(f"{info.field_name} must be true or false")
    return value


def validate_options(schema: Any, raw: Any, expected: Iterable[str]) -> Any:
    """``schema`` (a pydantic model) validated from ``raw`` (the ``[plugins.<id>]`` table): an unknown key,
    then the first invalid option, is a one-line ``DshError`` (``expected``: the option names, as listed)."""
    raw = dict(raw or {})
    unknown = set(raw) - set(schema.model_fields)
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected {', '.join(expected)})")
    from pydantic import ValidationError

    try:
        return schema.model_validate(raw)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DshError(first["msg"] if first["type"] == "option" else f"{where}: {first['msg']}") from None
