"""The settings reference (``docs/settings.md``), generated from the typed settings tree's field docstrings
(``config/tree.py``) and the provider models (``config/models.py``)::

    python -m dsh_tui.config.reference > docs/settings.md

A test keeps the file equal to this output, so every section and field is documented.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from dsh_tui.config.models import ModelSettings, ProviderSettings
from dsh_tui.config.tree import RETRY_KEYS, PluginTable, PriceSection, SettingsTree

HEAD = """# Settings reference

`~/.config/dsh-tui/settings.toml` (`$XDG_CONFIG_HOME/dsh-tui/settings.toml`), every table and key. Generated from
the typed settings tree (`dsh_tui/config/tree.py`: `python -m dsh_tui.config.reference > docs/settings.md`).

A value of the wrong type is one line naming its key. A key the app does not know never stops it (a newer
settings file still loads): the app lists the unknown keys, with their path, once in a *Settings* notice after it
opens. API keys never go here: see [providers.md](providers.md).
"""


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a) for a in args if a is not type(None)) + (
            " (optional)" if type(None) in args else "")
    if origin is typing.Literal:
        return " | ".join(f"`{a!r}`".replace("'", '"') for a in args)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin in (list, tuple):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
        return "" if isinstance(value, BaseModel) else f"`{value!r}`".replace("'", '"')
    if field.default is PydanticUndefined or field.default is None:
        return ""
    if isinstance(field.default, bool):
        return f"`{str(field.default).lower()}`"
    return f"`{field.default!r}`".replace("'", '"')


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("``", "`").replace("|", "\\|")


def _table(model: type[BaseModel], prefix: str, skip: tuple[str, ...] = ()) -> list[str]:
    lines = ["| key | type | default | what it is |", "| --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        lines.append(f"| `{prefix}{name}` | {_cell(_type(field.annotation))} | {_default(field)} "
                     f"| {_cell(field.description)} |")
    return lines


def reference() -> str:
    """The settings reference as Markdown."""
    out = [HEAD]
    for name, field in SettingsTree.model_fields.items():
        out.append(f"## `[{name}]`\n")
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            out.append(_cell(kind.__doc__ or field.description) + "\n")
            out += _table(kind, f"{name}.")
            out.append("")
            continue
        out.append(_cell(field.description) + "\n")
        if name == "providers":
            out.append(_cell(ProviderSettings.__doc__) + " The built-in `deepseek-official` (and `anthropic`) "
                       "routes exist without a table; a table of that name overrides their fields.\n")
            out += _table(ProviderSettings, "providers.NAME.", skip=("name", "builtin"))
            out.append("\n" + _cell(ModelSettings.__doc__) + "\n")
            out += _table(ModelSettings, 'providers.NAME.models."ID".', skip=("id",))
            out.append(f"\n`providers.NAME.retry` keys: {', '.join(f'`{k}`' for k in RETRY_KEYS)} "
                       "([providers.md](providers.md)).")
        elif name == "prices":
            out.append(_cell(PriceSection.__doc__) + "\n")
            out += _table(PriceSection, 'prices."MODEL".')
        elif name == "plugins":
            out.append(_cell(PluginTable.__doc__) + "\n")
            out += _table(PluginTable, "plugins.ID.")
        else:
            out.append(f"Type: {_cell(_type(kind))}.")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(reference(), end="")
