"""The JSON-schema subset of tool parameters and argument violations
(docs/runtime.md, "Tool definitions and arguments").

Supported keywords: ``type``, ``oneOf``, ``properties``, ``required``, ``additionalProperties`` (bool),
``items``, ``enum``, ``const`` plus annotations. ``check_schema`` rejects anything else at registration.
"""

from __future__ import annotations

import json
import math
from typing import Any

from dsh_tui.session.errors import DshError

KEYWORDS = {"type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const"}
ANNOTATIONS = {"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
               "format", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern",
               "exclusiveMinimum", "exclusiveMaximum", "$schema"}
TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


class SchemaError(DshError):
    pass


def check_schema(schema: Any, where: str = "parameters") -> None:
    if not isinstance(schema, dict):
        raise SchemaError(f"{where}: schema must be an object")
    for key in schema:
        if key not in KEYWORDS and key not in ANNOTATIONS:
            raise SchemaError(f"{where}: unsupported schema keyword {key!r}")
    t = schema.get("type")
    if t is not None:
        for one in t if isinstance(t, list) else [t]:
            if one not in TYPES:
                raise SchemaError(f"{where}: unsupported type {one!r}")
    if "oneOf" in schema:
        branches = schema["oneOf"]
        if not isinstance(branches, list) or len(branches) < 2:
            raise SchemaError(f"{where}: oneOf needs at least two branches")
        for i, b in enumerate(branches):
            check_schema(b, f"{where}.oneOf[{i}]")
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        raise SchemaError(f"{where}: additionalProperties must be a boolean")


def _js(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _label(path: str) -> str:
    return path or "arguments"


def _type_ok(t: str, v: Any) -> str | None:
    """None when ``v`` has JSON type ``t``; else the violation suffix."""
    if t == "object":
        return None if isinstance(v, dict) else "must be an object"
    if t == "array":
        return None if isinstance(v, list) else "must be an array"
    if t == "string":
        return None if isinstance(v, str) else "must be a string"
    if t == "boolean":
        return None if isinstance(v, bool) else "must be a boolean"
    if t == "null":
        return None if v is None else "must be null"
    if t in ("number", "integer"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"must be {'a number' if t == 'number' else 'an integer'}"
        if isinstance(v, float) and not math.isfinite(v):
            return "must be a finite JSON number"
        if t == "integer" and isinstance(v, float) and not v.is_integer():
            return "must be an integer"
        return None
    return None


def violations(schema: dict, value: Any, path: str = "") -> list[str]:
    out: list[str] = []
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        errs = [_type_ok(one, value) for one in types]
        if all(e is not None for e in errs):
            return [f'"{_label(path)}" {errs[0]}']
    if "const" in schema and value != schema["const"]:
        out.append(f'"{_label(path)}" must be {_js(schema["const"])}')
    if "enum" in schema and not any(value == e and type(value) is type(e) or value == e for e in schema["enum"]):
        out.append(f'"{_label(path)}" must be one of {_js(schema["enum"])}')
    if "oneOf" in schema:
        matched = sum(1 for b in schema["oneOf"] if not violations(b, value, path))
        if matched != 1:
            out.append(f'"{_label(path)}" must match exactly one oneOf branch (matched {matched})')
    if isinstance(value, dict) and ("properties" in schema or "required" in schema or t == "object"):
        props = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                out.append(f'missing required property "{path + "." + name if path else name}"')
        for name, sub in props.items():
            if name in value:
                out.extend(violations(sub, value[name], f"{path}.{name}" if path else name))
        if schema.get("additionalProperties") is False:
            for name in value:
                if name not in props:
                    out.append(f'"{path + "." + name if path else name}" is not a declared property (additionalProperties: false)')
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out.extend(violations(schema["items"], item, f"{_label(path)}[{i}]"))
    return out
