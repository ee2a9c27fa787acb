"""JSON text exactly as dsh (JavaScript ``JSON.stringify``) writes it, and the lossless-JSON rule.

* :func:`dumps` — compact (``,`` / ``:``), non-ASCII unescaped, lone surrogates as ``\\udXXX``, numbers
  formatted like JavaScript (``1e+21``, ``1e-7``, ``5`` for ``5.0``). dict insertion order is kept.
* :func:`loads` — strict JSON (no ``NaN``/``Infinity`` literals); orjson fast path, stdlib fallback for
  text orjson refuses but JavaScript accepts (lone surrogate escapes).
* :func:`check_lossless` — the append-time rule: null/bool/string/finite number except ``-0``/arrays/plain
  objects with string keys; integers must be safe (|n| <= 2**53 - 1) because JavaScript cannot hold more.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from .errors import DshError, SessionValidationError

MAX_SAFE_INTEGER = 2**53 - 1

_encode_str = json.encoder.encode_basestring  # C implementation when available; ensure_ascii=False flavour


def _array_default(obj: Any) -> Any:
    """Encoder hook: sequence views that declare ``__json_array__`` (``surface.MessagesView``) are arrays."""
    if getattr(obj, "__json_array__", False):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_c_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False,
                            default=_array_default).encode

# Every float token json emits is a number with "." or "e<sign>" that follows ":", ",", "[" (or starts the
# text) and precedes ",", "]", "}" (or ends it). One regex pass tells whether the text may contain a float
# (a string can match too, e.g. "a,1.5,b"; then we merely take the exact slow path).
_MAYBE_FLOAT = re.compile(r"(?:^|[:,\[])-?\d+(?:\.\d+(?:e[+-]\d+)?|e[+-]\d+)(?:$|[,\]}])")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def js_number(value: float) -> str:
    """Format a finite float exactly like JavaScript's ``Number.prototype.toString``."""
    if value == 0:
        return "0"
    if value != value or value in (math.inf, -math.inf):
        raise ValueError(f"{value!r} is not JSON")
    sign = "-" if value < 0 else ""
    r = repr(abs(value))  # shortest round-trip digits, same digit string JavaScript picks
    mant, _, exp = r.partition("e")
    whole, _, frac = mant.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    # decimal exponent n such that value = 0.digits * 10**n
    n = len(whole) + (int(exp) if exp else 0)
    if whole == "0":
        lead = len(frac) - len(frac.lstrip("0"))
        n = -lead + (int(exp) if exp else 0)
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = ("+" if e >= 0 else "-") + str(abs(e))
        out = (digits[0] + ("." + digits[1:] if k > 1 else "")) + "e" + es
    return sign + out


def _slow(obj: Any, parts: list[str]) -> None:
    if isinstance(obj, str):
        parts.append(_encode_str(obj))
    elif obj is None:
        parts.append("null")
    elif obj is True:
        parts.append("true")
    elif obj is False:
        parts.append("false")
    elif isinstance(obj, int):
        parts.append(int.__repr__(obj))
    elif isinstance(obj, float):
        parts.append(js_number(obj))
    elif isinstance(obj, dict):
        parts.append("{")
        first = True
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"keys must be str, not {type(k).__name__}")
            if not first:
                parts.append(",")
            first = False
            parts.append(_encode_str(k))
            parts.append(":")
            _slow(v, parts)
        parts.append("}")
    elif isinstance(obj, list | tuple):
        parts.append("[")
        for i, v in enumerate(obj):
            if i:
                parts.append(",")
            _slow(v, parts)
        parts.append("]")
    elif getattr(obj, "__json_array__", False):
        _slow(list(obj), parts)
    else:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _fix_surrogates(text: str) -> str:
    if _SURROGATE_PAIR.search(text):  # two separate code units JavaScript would read as one character
        text = _SURROGATE_PAIR.sub(
            lambda m: m.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le"), text
        )
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _plain_no_float(value: Any) -> bool:
    """True when ``value`` holds only str / int / bool / None / dict with str keys / list — no float, no
    subclass, nothing else. For such values orjson's compact output is byte-identical to ``JSON.stringify``
    (it refuses lone surrogates and integers beyond 64 bits by raising, which falls back to the exact path)."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            tv = type(v)
            if tv is str or tv is int or v is None or tv is bool:
                continue
            if (tv is dict or tv is list) and _plain_no_float(v):
                continue
            return False
        return True
    if t is list:
        for v in value:
            tv = type(v)
            if tv is str or tv is int or v is None or tv is bool:
                continue
            if (tv is dict or tv is list) and _plain_no_float(v):
                continue
            return False
        return True
    return t is str or t is int or value is None or t is bool


_orjson_dumps = orjson.dumps
_OrjsonError = orjson.JSONEncodeError


def dumps(obj: Any) -> str:
    """Compact JSON text identical to JavaScript ``JSON.stringify(obj)``."""
    if _plain_no_float(obj):
        try:
            return _orjson_dumps(obj).decode("utf-8")
        except _OrjsonError:
            pass  # lone surrogates, integers beyond 64 bits, nesting deeper than orjson allows
    return _dumps_exact(obj)


def _dumps_exact(obj: Any) -> str:
    """The reference encoder (stdlib C encoder + JavaScript number formatting + surrogate escapes)."""
    text = _c_dumps(obj)
    if _MAYBE_FLOAT.search(text):
        parts: list[str] = []
        _slow(obj, parts)
        text = "".join(parts)
    if _SURROGATE.search(text):
        text = _fix_surrogates(text)
    return text


def dumps_bytes(obj: Any) -> bytes:
    """:func:`dumps` encoded as UTF-8 (lone surrogates are escaped, so this never fails)."""
    if _plain_no_float(obj):
        try:
            return _orjson_dumps(obj)
        except _OrjsonError:
            pass
    return _dumps_exact(obj).encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_std_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def loads(text: str | bytes | bytearray | memoryview) -> Any:
    """Parse strict JSON text (``JSON.parse`` semantics; ``-0`` parses as int 0, ``-0.0`` as float)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).decode("utf-8")
        return _std_decoder.decode(text)


def _path_key(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


_INT_ONLY = {int}
_STR_ONLY = {str}


def _lossless_ok(value: Any) -> bool:
    """Fast path of :func:`check_lossless` (no path bookkeeping)."""
    t = type(value)
    if t is str or value is None or t is bool:
        return True
    if t is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            tv = type(v)
            if tv is str or v is None or tv is bool:
                continue
            if tv is int:
                if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
                    return False
                continue
            if not _lossless_ok(v):
                return False
        return True
    if t is list:
        if len(value) > 8:  # long homogeneous lists (sourceEventSeqs, token ids, strings) at C speed
            types = set(map(type, value))
            if types == _INT_ONLY:
                return min(value) >= -MAX_SAFE_INTEGER and max(value) <= MAX_SAFE_INTEGER
            if types == _STR_ONLY:
                return True
        for v in value:
            tv = type(v)
            if tv is str or v is None or tv is bool:
                continue
            if tv is int:
                if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
                    return False
                continue
            if not _lossless_ok(v):
                return False
        return True
    if t is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if t is float:
        return value == value and value not in (math.inf, -math.inf) and not (
            value == 0 and math.copysign(1.0, value) < 0)
    return False


def check_lossless(value: Any, where: str = "data") -> None:
    """Raise :class:`SessionValidationError` naming the path if ``value`` is not lossless JSON."""
    if _lossless_ok(value):
        return
    _check_lossless_slow(value, where)  # authoritative: raises with the path, or accepts subclasses


def _check_lossless_slow(value: Any, where: str) -> None:
    t = type(value)
    if t is str or value is None or t is bool:
        return
    if t is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return
        raise SessionValidationError(f"{where}: integer {value} is beyond 2^53 and not lossless JSON")
    if t is float:
        if value != value:
            raise SessionValidationError(f"{where}: NaN is not lossless JSON")
        if value in (math.inf, -math.inf):
            raise SessionValidationError(f"{where}: Infinity is not lossless JSON")
        if value == 0 and math.copysign(1.0, value) < 0:
            raise SessionValidationError(f"{where}: -0 is not lossless JSON")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if type(k) is not str:
                raise SessionValidationError(f"{where}: key {k!r} is not a string (not lossless JSON)")
            _check_lossless_slow(v, _path_key(where, k))
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            _check_lossless_slow(v, f"{where}[{i}]")
        return
    if isinstance(value, bool | int | float | str):  # subclasses (IntEnum, str enums ...)
        raise SessionValidationError(f"{where}: {t.__name__} is not a plain JSON value")
    raise SessionValidationError(f"{where}: {t.__name__} is not lossless JSON")


def _floats_ok(value: Any) -> bool:
    """True when no float anywhere in ``value`` is NaN, ±Infinity or -0 (path-free fast walk)."""
    t = type(value)
    if t is dict:
        value = value.values()
    elif t is not list:
        if t is float:
            return value == value and value not in (math.inf, -math.inf) and not (
                value == 0 and math.copysign(1.0, value) < 0)
        return True
    for v in value:
        tv = type(v)
        if tv is str or tv is int:
            continue  # (the common leaves first)
        if tv is dict:
            # one level inline: a call per nested object is most of a walk's cost (-9 % instructions on a log)
            for w in v.values():
                tw = type(w)
                if tw is str or tw is int:
                    continue
                if (tw is dict or tw is list or tw is float) and not _floats_ok(w):
                    return False
        elif (tv is list or tv is float) and not _floats_ok(v):
            return False
    return True



def find_bad_float(value: Any, where: str = "data") -> str | None:
    """The first float in ``value`` that is NaN, ±Infinity or -0 (the non-lossless values a JSON parser
    or a programmatic seed can hold), as ``"<path>: <what> is not lossless JSON"``; None when there is
    none."""
    if _floats_ok(value):
        return None
    return _find_bad_float(value, where)


def _find_bad_float(value: Any, where: str) -> str | None:
    t = type(value)
    if t is dict:
        for k, v in value.items():
            tv = type(v)
            if tv is dict or tv is list or tv is float:
                p = _find_bad_float(v, _path_key(where, k))
                if p is not None:
                    return p
        return None
    if t is list:
        for i, v in enumerate(value):
            tv = type(v)
            if tv is dict or tv is list or tv is float:
                p = _find_bad_float(v, f"{where}[{i}]")
                if p is not None:
                    return p
        return None
    if t is float:
        if value != value:
            return f"{where}: NaN is not lossless JSON"
        if value in (math.inf, -math.inf):
            return f"{where}: Infinity is not lossless JSON"
        if value == 0 and math.copysign(1.0, value) < 0:
            return f"{where}: -0 is not lossless JSON"
    return None


# -- model-written JSON (tool-call arguments): bounded nesting ----------------------------------------

MAX_ARGUMENT_DEPTH = 256  # deeper tool-call arguments are refused (INVALID_ARGS), never a RecursionError
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')


class NestedTooDeeply(DshError, ValueError):
    """JSON text nested deeper than allowed (a ``ValueError``: callers that fall back on bad JSON still do)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested more than {limit} levels deep")
        self.limit = limit


def json_depth(text: str) -> int:
    """The deepest array/object nesting of JSON ``text`` (strings skipped), in one linear pass."""
    if text.count("[") + text.count("{") <= 1:
        return text.count("[") + text.count("{")
    depth = deepest = 0
    for m in _JSON_TOKEN.finditer(text):
        c = m.group()[0]
        if c == "[" or c == "{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif c == "]" or c == "}":
            depth -= 1
    return deepest


def loads_bounded(text: str, max_depth: int = MAX_ARGUMENT_DEPTH) -> Any:
    """:func:`json.loads` of model-written JSON, refusing nesting deeper than ``max_depth`` with
    :class:`NestedTooDeeply` (Python's parser would raise ``RecursionError`` past ~1,000 levels)."""
    if text.count("[") + text.count("{") > max_depth and json_depth(text) > max_depth:
        raise NestedTooDeeply(max_depth)
    return json.loads(text)
