"""A tool whose parameters are a pydantic model (issue #30, "a typed tool helper"):

    from pydantic import BaseModel, Field
    from dsh_tui.plugins import typed_tool

    class Add(BaseModel):
        a: int = Field(description="the first number")
        b: int = 0

    async def add(args: Add, tctx) -> dict:
        return {"sum": args.a + args.b}

    ctx.tools.register(typed_tool("add", "Add two numbers.", Add, add))

The JSON schema the model sees is generated from the model and brought into dsh's subset of JSON Schema
(references inlined, ``anyOf`` as ``oneOf``, keywords dsh does not check dropped); the arguments are validated
by the model itself, and a validation error is the model's error result (``Error: invalid arguments: ...``,
``INVALID_ARGS``), as dsh reports invalid arguments. ``execute`` gets the model instance.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsh_tui.tools.base import ToolDefinition, ToolError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

_KEEP = {"type", "properties", "required", "items", "enum", "const", "description", "title", "default", "examples",
         "format", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern",
         "exclusiveMinimum", "exclusiveMaximum", "deprecated"}


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The tool parameters of a pydantic model, in dsh's schema subset."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def conv(node: Any, seen: tuple[str, ...] = ()) -> Any:
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            if name in seen:
                raise ToolError(f"typed tool: the model {name} refers to itself; recursive parameters are not supported")
            merged = {**defs.get(name, {}), **{k: v for k, v in node.items() if k != "$ref"}}
            return conv(merged, (*seen, name))
        if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
            rest = {k: v for k, v in node.items() if k != "allOf"}
            return conv({**node["allOf"][0], **rest}, seen)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {name: conv(sub, seen) for name, sub in value.items()}
            elif key == "items":
                out[key] = conv(value, seen)
            elif key in ("anyOf", "oneOf"):
                branches = [conv(b, seen) for b in value]
                types = [b.get("type") for b in branches]
                if len(branches) == 2 and "null" in types and all(isinstance(t, str) for t in types) and \
                        all(set(b) <= {"type"} for b in branches if b.get("type") == "null"):
                    other = branches[types.index(next(t for t in types if t != "null"))]
                    out.update({k: v for k, v in other.items() if k != "type"})
                    out["type"] = [other["type"], "null"]
                else:
                    out["oneOf"] = branches
            elif key == "additionalProperties":
                out[key] = value if isinstance(value, bool) else True  # a typed mapping: the model checks it
            elif key in _KEEP:
                out[key] = value
        return out

    schema = conv(raw)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    if model.model_config.get("extra") == "forbid":
        schema["additionalProperties"] = False
    return schema


def _invalid(err: ValidationError) -> str:
    first = err.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
    return f"invalid arguments: {where}: {first.get('msg', 'invalid')}"


def typed_tool(name: str, description: str, model: type[BaseModel], execute: Callable[..., Any], *,
               render: Callable[[Any, Any], list[dict[str, Any]]] | None = None, access: str = "read",
               timeout_ms: int | None = None) -> ToolDefinition:
    """A ``ToolDefinition`` whose parameters come from the pydantic ``model`` and whose ``execute(args, tctx)``
    receives a validated instance of it (sync or async)."""
    from pydantic import ValidationError

    parameters = schema_of(model)

    async def run(args: Any, tctx: Any) -> Any:
        try:
            instance = model.model_validate(args)
        except ValidationError as err:
            raise ToolError(_invalid(err), code="INVALID_ARGS", name="ToolArgsError") from None
        out = execute(instance, tctx)
        return await out if inspect.isawaitable(out) else out

    return ToolDefinition(name=name, description=description, parameters=parameters, execute=run, render=render,
                          access=access, timeout_ms=timeout_ms)
