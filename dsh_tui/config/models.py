"""The typed provider settings as pydantic models: every field, its type, its default and its rule in
one place, and the one-line ``SettingsError`` a wrong value becomes (naming the key path, e.g.
``providers.vllm.models."m".context_window must be an integer, not 'big'``).

A provider table is validated when it is read (``Settings.provider`` / ``Settings.providers``), not when
the file is loaded: a broken ``[providers.x]`` table must not stop the parts of the app that never use it.
Unknown keys are kept and ignored, so a newer settings file still loads.
"""

from __future__ import annotations

import math
import os
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from dsh_tui.config.base import (  # noqa: F401 - re-exported
    APIS,
    CREDENTIALS_FILE,
    DEEPSEEK_BASE_URL,
    DEEPSEEK_BASE_URL_ENV,
    DEEPSEEK_CONTEXT_WINDOW,
    DEEPSEEK_KEY_ENV,
    DEEPSEEK_MAX_TOKENS,
    DEEPSEEK_MODELS,
    DEEPSEEK_PROVIDER,
    DEFAULT_EVENT_TIMEOUT_S,
    DEFAULT_IDLE_TIMEOUT_S,
    EFFORTS,
    THINKING_FORMATS,
    SettingsError,
    builtin_deepseek,
)
from dsh_tui.config.check import MAX_TOKEN_COUNT

_SCHEME = re.compile(r"^https?://")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")  # HTTP/1.1 carries visible ASCII, spaces and tabs only


def _fail(message: str) -> PydanticCustomError:
    """A validation failure whose text follows the key path as is (``<path> <message>``)."""
    return PydanticCustomError("settings", "{message}", {"message": message})


def _count(value: Any) -> Any:
    """Numbers are non-negative and finite (the integer / number type is checked by the field)."""
    if value is not None and (not math.isfinite(value) or value < 0):
        raise _fail(f"must be a non-negative finite number, not {value!r}")
    return value


def _positive(value: Any) -> Any:
    if value == 0:
        raise _fail("must be a positive integer, not 0")
    if value is not None and value > MAX_TOKEN_COUNT:
        raise _fail(f"must be at most {MAX_TOKEN_COUNT:_} tokens, not {value:_}")
    return value


def _one_of(choices: tuple[str, ...]):
    def check(value: Any) -> Any:
        if value is not None and value not in choices:
            raise _fail(f"must be one of {', '.join(choices)}, not {value!r}")
        return value

    return check


def _modalities(value: Any) -> Any:
    if value is not None and (not value or any(m not in ("text", "image") for m in value)
                              or len(set(value)) != len(value)):
        raise _fail(f'must list "text" and/or "image" once each, not {list(value)!r}')
    return value


PositiveCount = Annotated[int | None, AfterValidator(_count), AfterValidator(_positive)]
Price = Annotated[float | None, AfterValidator(_count)]  # USD per million tokens
Effort = Annotated[str | None, AfterValidator(_one_of(EFFORTS))]


class _Table(BaseModel):
    # strict: TOML already has types, so "5" is not 5 and true is not 1; extra keys are kept, unused
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", use_attribute_docstrings=True)


class ModelSettings(_Table):
    """``[providers.NAME.models."ID"]``: what is known about one model of a provider."""

    id: str
    """The model id (the table's name)."""
    context_window: PositiveCount = None
    """The model's context window, in tokens. Unset: the provider's ``default_context_window``."""
    max_tokens: PositiveCount = None
    """The output cap of one response, in tokens. Unset: the provider's ``default_max_tokens``."""
    price_input: Price = None
    """USD per million uncached input tokens."""
    price_cache_hit: Price = None
    """USD per million cache-hit input tokens. Unset: ``price_input``."""
    price_output: Price = None
    """USD per million output tokens."""
    input_modalities: Annotated[list[str] | None, AfterValidator(_modalities)] = None
    """``["text"]`` or ``["text", "image"]``: whether the model takes images (``read_image``, images in
    prompts)."""


def _models_table(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, list):  # models = ["a", "b"]
        bad = next((m for m in value if not isinstance(m, str) or not m), None)
        if bad is not None or not all(isinstance(m, str) for m in value):
            raise _fail(f"must be a list of model ids (strings) or a table of them, not {bad!r} in the list")
        value = {m: {} for m in value}
    if not isinstance(value, dict):
        raise _fail("must be a table of model ids")
    out = {}
    for mid, raw in value.items():
        if raw is None or raw is True:
            raw = {}
        out[mid] = {**raw, "id": mid} if isinstance(raw, dict) else raw
    return out


# set by dsh-tui on every request: a settings entry would send a second one (or replace the key's)
_MANAGED_HEADERS = ("authorization", "content-type", "content-length", "host", "transfer-encoding")


def _headers_table(value: Any) -> Any:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and _HEADER_NAME.fullmatch(k) for k, v in value.items()
    ):
        raise _fail("must be a table of header names to string values")
    seen: dict[str, str] = {}
    for k in value:
        low = k.lower()
        if low in ("authorization", "x-api-key"):
            raise _fail(f"cannot set {k}: dsh-tui sends the provider's key in it (from api_key_env or "
                        f"{CREDENTIALS_FILE}), and a second one would be sent")
        if low in _MANAGED_HEADERS or low.startswith("x-deepseek-harness-"):
            raise _fail(f"cannot set {k}: dsh-tui sets it on every request")
        if low in seen:
            raise _fail(f"names {seen[low]} and {k}: one header, two values (header names ignore case)")
        seen[low] = k
    return value


def _header_values(value: dict[str, str]) -> dict[str, str]:
    for k, v in value.items():
        if not _HEADER_VALUE.fullmatch(v):
            raise PydanticCustomError(
                "settings",
                "{message}",
                {"message": "must be printable ASCII text (no accents, emoji or line breaks: an HTTP header "
                            "cannot carry them)", "key": k},
            )
    return value


def _table_or_empty(value: Any) -> Any:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail("must be a table")
    return value


class ProviderSettings(_Table):
    """``[providers.NAME]``: one OpenAI-compatible route. ``name`` and ``builtin`` come from the caller."""

    name: str
    """The provider's name (the table's name)."""
    builtin: bool = False
    """Whether this is the built-in ``deepseek-official`` route (set by dsh-tui)."""
    base_url: str | None = Field(default=None, validate_default=True)
    """The API's base URL (``http://`` or ``https://``, no credentials in it), e.g. ``http://127.0.0.1:8000/v1``.
    Required."""
    api_key_env: str | None = None
    """The environment variable holding the API key. Unset: the key comes from ``credentials.toml`` (or none
    is sent)."""
    api: Annotated[str, AfterValidator(_one_of(APIS))] = "chat"
    """The wire: ``chat`` (OpenAI chat completions) or ``messages`` (the Anthropic Messages API)."""
    thinking_format: str | None = None
    """How reasoning is asked for and read: ``deepseek``, ``openai`` or ``none``. Unset: ``deepseek`` for
    DeepSeek's own API, else ``none``."""
    thinking: str | None = None
    """``enabled`` or ``disabled``: sent as is. Unset: the provider's default."""
    reasoning_effort: Effort = None
    """This provider's default reasoning effort (``off``, ``low``, ``medium``, ``high``, ``max``)."""
    idle_timeout_s: Annotated[float | None, AfterValidator(_count)] = DEFAULT_IDLE_TIMEOUT_S
    """Seconds without a byte from the server before a request fails."""
    event_timeout_s: Annotated[float | None, AfterValidator(_count)] = DEFAULT_EVENT_TIMEOUT_S
    """Seconds without a stream event (keep-alive comments only) before a stream ends."""
    models: Annotated[dict[str, ModelSettings], BeforeValidator(_models_table)] = Field(default_factory=dict)
    """The provider's models: ``[providers.NAME.models."ID"]`` tables (below), or a list of ids."""
    retry: Annotated[dict[str, Any], BeforeValidator(_table_or_empty)] = Field(default_factory=dict)
    """``[providers.NAME.retry]``: how failed requests are retried (docs/providers.md)."""
    headers: Annotated[dict[str, str], BeforeValidator(_headers_table), AfterValidator(_header_values)] = \
        Field(default_factory=dict)
    """Extra request headers (gateways), names to printable ASCII values; not the key's header."""
    default_context_window: PositiveCount = None
    """The context window of a model without its own ``context_window``, in tokens."""
    default_max_tokens: PositiveCount = None
    """The output cap of a model without its own ``max_tokens``, in tokens."""
    label: str | None = None
    """The provider's name as the app shows it."""

    @field_validator("base_url", mode="after")
    @classmethod
    def _base_url(cls, value: str | None, info: ValidationInfo) -> str:
        if not value:
            raise _fail("is required (e.g. http://127.0.0.1:8000/v1)")
        if not _SCHEME.match(value):
            raise _fail(f"must start with http:// or https://, not {value!r}")
        if "@" in _SCHEME.sub("", value).split("/")[0]:
            # never echoed: the part before "@" is a credential
            builtin = bool((info.context or {}).get("builtin"))
            origin = f"(from ${DEEPSEEK_BASE_URL_ENV}) " if builtin and os.environ.get(DEEPSEEK_BASE_URL_ENV) else ""
            raise _fail(f"{origin}must not hold credentials (user:key@host); put the key in api_key_env or "
                        f"{CREDENTIALS_FILE}")
        return value

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _key_env(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise _fail("must be a string (an environment variable name)")
        return value or None

    @field_validator("thinking", mode="after")
    @classmethod
    def _thinking(cls, value: str | None) -> str | None:
        if value is not None and value not in ("enabled", "disabled"):
            raise _fail(f'must be "enabled" or "disabled", not {value!r}')
        return value

    @field_validator("thinking_format", mode="after")
    @classmethod
    def _format(cls, value: str | None) -> str | None:
        return _one_of(THINKING_FORMATS)(value or None)

    @field_validator("idle_timeout_s", "event_timeout_s", mode="after")
    @classmethod
    def _timeout(cls, value: float | None, info: ValidationInfo) -> float:
        if value is None:
            return DEFAULT_IDLE_TIMEOUT_S if info.field_name == "idle_timeout_s" else DEFAULT_EVENT_TIMEOUT_S
        if value <= 0:
            raise _fail("must be positive")
        return value

    @model_validator(mode="after")
    def _default_format(self) -> ProviderSettings:
        if self.thinking_format is None:
            # DeepSeek's own API speaks the deepseek format; a generic gateway gets none unless told
            host = _SCHEME.sub("", self.base_url or "").split("/")[0]
            fmt = "deepseek" if self.builtin or host.endswith("deepseek.com") else "none"
            object.__setattr__(self, "thinking_format", fmt)
        return self


class StorageSettings(_Table):
    """``[storage]``: the session backend of a root without one yet (``jsonl`` | ``sqlite``) and the
    compression of new JSONL logs (``zstd`` | ``none``); ``dsh_tui.store.open`` checks the values."""

    backend: str | None = None
    """The session backend of a root without one yet: ``jsonl`` (the default) or ``sqlite``."""
    compression: str | None = None
    """The compression of new JSONL logs: ``zstd`` or ``none``."""
    format: str | None = None
    """The session format of new JSONL sessions: ``v4`` (dsh 0.2's, the default) or ``v0`` (dsh 0.1's;
    ``DSH_TUI_SESSION_FORMAT`` too)."""

    @field_validator("backend", "compression", mode="after")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("format", mode="after")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        if value and value not in ("v4", "v0"):
            raise ValueError(f'must be "v4" or "v0", not {value!r}')
        return value or None


def parse_storage(raw: Any) -> StorageSettings:
    if raw is None:
        return StorageSettings()
    if not isinstance(raw, dict):
        raise SettingsError("storage must be a table")
    try:
        return StorageSettings.model_validate(raw)
    except ValidationError as err:
        raise SettingsError(describe(err, "storage")) from None


def parse_provider(name: str, raw: Any, builtin: bool) -> ProviderSettings:
    """Validate one ``[providers.NAME]`` table; the first problem is a ``SettingsError`` naming its key."""
    where = f"providers.{name}"
    if not isinstance(raw, dict):
        raise SettingsError(f"{where} must be a table")
    try:
        return ProviderSettings.model_validate({**raw, "name": name, "builtin": builtin},
                                               context={"builtin": builtin})
    except ValidationError as err:
        raise SettingsError(describe(err, where)) from None


_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "an integer or a number",
    "bool_type": "true or false",
}
_TABLE_TYPES = ("dict_type", "model_type", "model_attributes_type")


def describe(err: ValidationError, where: str) -> str:
    """The first error of ``err`` as ``<where>.<key path> <what is wrong>`` (model ids quoted)."""
    first = err.errors(include_url=False)[0]
    path = where
    loc = list(first["loc"])
    parent = None
    for part in loc:
        path += f'."{part}"' if parent == "models" else f".{part}"
        parent = part
    kind = first["type"]
    if kind == "settings":
        key = (first.get("ctx") or {}).get("key")
        if key is not None:
            path += f".{key}"
        return f"{path} {first['msg']}"
    if kind in _TABLE_TYPES:
        return f"{path} must be a table"
    if kind in _TYPE_WORDS:
        return f"{path} must be {_TYPE_WORDS[kind]}, not {first['input']!r}"
    return f"{path}: {first['msg']}"
