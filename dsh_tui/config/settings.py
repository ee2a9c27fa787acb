"""User settings (``settings.toml``) and credentials (``credentials.toml``).

Both live in ``platformdirs.user_config_dir("dsh-tui")`` (``$XDG_CONFIG_HOME/dsh-tui`` on Linux).
Settings are a nested TOML document read with ``tomllib`` and written back with a small serializer
for the shapes we use (tables, strings, numbers, booleans, arrays, inline tables). Other parts of the
app keep their own keys here (``ui.theme``, ``keymap.<binding-id>``, ``storage.backend`` ...) through
``Settings.get`` / ``Settings.set``; the model providers have typed accessors::

    [default]
    provider = "deepseek-official"
    model = "deepseek-v4-flash"
    reasoning_effort = "high"

    [providers.vllm]
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "VLLM_API_KEY"          # optional; a local server usually needs none
    thinking_format = "none"              # deepseek | openai | none
    [providers.vllm.models."Qwen/Qwen3-8B"]
    context_window = 32768
    max_tokens = 8192
    price_input = 0.0                     # USD per million tokens
    price_cache_hit = 0.0
    price_output = 0.0

The built-in provider ``deepseek-official`` always exists (``DEEPSEEK_API_KEY`` and optional
``DEEPSEEK_BASE_URL`` are enough, with no settings file at all); a ``[providers.deepseek-official]``
table overrides its fields. API keys are never stored in ``settings.toml``: they come from the
environment variable a provider names, or from ``credentials.toml``, which must be private (mode 0600)::

    DEEPSEEK_API_KEY = "sk-..."           # by environment-variable name
    [providers.my-gateway]
    api_key = "..."                       # or per provider
"""

from __future__ import annotations

import copy
import math
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from dsh_tui.session.errors import DshError

APP_NAME = "dsh-tui"
SETTINGS_FILE = "settings.toml"
CREDENTIALS_FILE = "credentials.toml"

DEEPSEEK_PROVIDER = "deepseek-official"
DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_KEY_ENV = "DEEPSEEK_API_KEY"
DEEPSEEK_BASE_URL_ENV = "DEEPSEEK_BASE_URL"
DEEPSEEK_MODELS = ("deepseek-v4-flash", "deepseek-v4-pro")
DEEPSEEK_CONTEXT_WINDOW = 1_000_000
DEEPSEEK_MAX_TOKENS = 256_000
THINKING_FORMATS = ("deepseek", "openai", "none")
EFFORTS = ("off", "low", "medium", "high", "max")


class SettingsError(DshError):
    """The settings or credentials file is unreadable or holds a value of the wrong shape."""


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def settings_path() -> Path:
    return config_dir() / SETTINGS_FILE


def credentials_path() -> Path:
    return config_dir() / CREDENTIALS_FILE


# --------------------------------------------------------------------------------------------------
# Typed provider settings


@dataclass(frozen=True)
class ModelSettings:
    id: str
    context_window: int | None = None
    max_tokens: int | None = None
    price_input: float | None = None  # USD per million uncached input tokens
    price_cache_hit: float | None = None  # USD per million cache-hit input tokens
    price_output: float | None = None  # USD per million output tokens


@dataclass(frozen=True)
class ProviderSettings:
    name: str
    base_url: str
    api_key_env: str | None  # None: no environment variable (credentials file or no authentication)
    thinking_format: str = "deepseek"
    thinking: str | None = None  # "enabled" | "disabled" | None (provider default)
    reasoning_effort: str | None = None  # this provider's default effort
    idle_timeout_s: float = 300.0
    default_context_window: int | None = None
    default_max_tokens: int | None = None
    models: dict[str, ModelSettings] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    builtin: bool = False
    headers: dict[str, str] = field(default_factory=dict)  # extra request headers (gateways)


def _builtin_deepseek() -> dict[str, Any]:
    models: dict[str, Any] = {m: {"context_window": DEEPSEEK_CONTEXT_WINDOW} for m in DEEPSEEK_MODELS}
    return {
        "base_url": os.environ.get(DEEPSEEK_BASE_URL_ENV) or DEEPSEEK_BASE_URL,
        "api_key_env": DEEPSEEK_KEY_ENV,
        "thinking_format": "deepseek",
        "default_context_window": DEEPSEEK_CONTEXT_WINDOW,
        "default_max_tokens": DEEPSEEK_MAX_TOKENS,
        "models": models,
        "label": "DeepSeek",
    }


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _opt(raw: dict[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and bool not in types:
        raise SettingsError(f"{where}.{key} must be {_type_words(types)}, not {value!r}")
    if not isinstance(value, types):
        raise SettingsError(f"{where}.{key} must be {_type_words(types)}, not {value!r}")
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and ((isinstance(value, float) and not math.isfinite(value)) or value < 0)
    ):
        raise SettingsError(f"{where}.{key} must be a non-negative finite number, not {value!r}")
    return value


def _type_words(types: tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table"}
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in types))


def _parse_provider(name: str, raw: dict[str, Any], builtin: bool) -> ProviderSettings:
    where = f"providers.{name}"
    if not isinstance(raw, dict):
        raise SettingsError(f"{where} must be a table")
    base_url = _opt(raw, "base_url", (str,), where)
    if not base_url:
        raise SettingsError(f"{where}.base_url is required (e.g. http://127.0.0.1:8000/v1)")
    if not re.match(r"^https?://", base_url):
        raise SettingsError(f"{where}.base_url must start with http:// or https://, not {base_url!r}")
    if "@" in re.sub(r"^https?://", "", base_url).split("/")[0]:
        # never echoed: the part before "@" is a credential
        origin = f" (from ${DEEPSEEK_BASE_URL_ENV})" if builtin and os.environ.get(DEEPSEEK_BASE_URL_ENV) else ""
        raise SettingsError(f"{where}.base_url{origin} must not hold credentials (user:key@host); put the key in "
                            f"api_key_env or {CREDENTIALS_FILE}")
    key_env = raw.get("api_key_env")
    if key_env is not None and not isinstance(key_env, str):
        raise SettingsError(f"{where}.api_key_env must be a string (an environment variable name)")
    host = re.sub(r"^https?://", "", base_url).split("/")[0]
    default_format = "deepseek" if builtin or host.endswith("deepseek.com") else "none"
    fmt = _opt(raw, "thinking_format", (str,), where) or default_format
    if fmt not in THINKING_FORMATS:
        raise SettingsError(
            f"{where}.thinking_format must be one of {', '.join(THINKING_FORMATS)}, not {fmt!r}"
        )
    thinking = _opt(raw, "thinking", (str,), where)
    if thinking is not None and thinking not in ("enabled", "disabled"):
        raise SettingsError(f'{where}.thinking must be "enabled" or "disabled", not {thinking!r}')
    effort = _opt(raw, "reasoning_effort", (str,), where)
    if effort is not None and effort not in EFFORTS:
        raise SettingsError(f"{where}.reasoning_effort must be one of {', '.join(EFFORTS)}, not {effort!r}")
    timeout = _opt(raw, "idle_timeout_s", (int, float), where)
    if timeout is not None and timeout <= 0:
        raise SettingsError(f"{where}.idle_timeout_s must be positive")
    models_raw = raw.get("models") or {}
    if isinstance(models_raw, list):  # models = ["a", "b"]
        models_raw = {str(m): {} for m in models_raw}
    if not isinstance(models_raw, dict):
        raise SettingsError(f"{where}.models must be a table of model ids")
    models: dict[str, ModelSettings] = {}
    for mid, mraw in models_raw.items():
        mwhere = f'{where}.models."{mid}"'
        if mraw is None or mraw is True:
            mraw = {}
        if not isinstance(mraw, dict):
            raise SettingsError(f"{mwhere} must be a table")
        for key in ("context_window", "max_tokens"):
            if mraw.get(key) is not None and _opt(mraw, key, (int,), mwhere) == 0:
                raise SettingsError(f"{mwhere}.{key} must be a positive integer, not 0")
        models[mid] = ModelSettings(
            id=mid,
            context_window=_opt(mraw, "context_window", (int,), mwhere),
            max_tokens=_opt(mraw, "max_tokens", (int,), mwhere),
            price_input=_num(_opt(mraw, "price_input", (int, float), mwhere)),
            price_cache_hit=_num(_opt(mraw, "price_cache_hit", (int, float), mwhere)),
            price_output=_num(_opt(mraw, "price_output", (int, float), mwhere)),
        )
    retry = raw.get("retry") or {}
    if not isinstance(retry, dict):
        raise SettingsError(f"{where}.retry must be a table")
    headers = raw.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", k)
        for k, v in headers.items()
    ):
        raise SettingsError(f"{where}.headers must be a table of header names to string values")
    for k, v in headers.items():
        if not re.fullmatch(r"[\t\x20-\x7e]*", v):  # HTTP/1.1 carries visible ASCII, spaces and tabs only
            raise SettingsError(f"{where}.headers.{k} must be printable ASCII text (no accents, emoji or line "
                                "breaks: an HTTP header cannot carry them)")
    for key in ("default_context_window", "default_max_tokens"):
        if raw.get(key) is not None and _opt(raw, key, (int,), where) == 0:
            raise SettingsError(f"{where}.{key} must be a positive integer, not 0")
    return ProviderSettings(
        name=name,
        base_url=base_url,
        api_key_env=key_env or None,
        thinking_format=fmt,
        thinking=thinking,
        reasoning_effort=effort,
        idle_timeout_s=float(timeout) if timeout is not None else 300.0,
        default_context_window=_opt(raw, "default_context_window", (int,), where),
        default_max_tokens=_opt(raw, "default_max_tokens", (int,), where),
        models=models,
        retry=dict(retry),
        label=_opt(raw, "label", (str,), where),
        builtin=builtin,
        headers=dict(headers),
    )


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


# --------------------------------------------------------------------------------------------------
# Settings


class Settings:
    """The user's settings document (``data``) plus the built-in defaults underneath it."""

    def __init__(self, data: dict[str, Any] | None = None, path: Path | None = None) -> None:
        self.data: dict[str, Any] = copy.deepcopy(data or {})
        self.path = path

    # -- generic access ----------------------------------------------------------------------------

    def get(self, key: str, default: Any = None) -> Any:
        """Value at a dotted key (``"ui.theme"``); the built-in provider defaults are visible too."""
        node: Any = self._merged_view() if key.split(".")[0] in ("providers", "default") else self.data
        for part in _split_key(key):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return copy.deepcopy(node) if isinstance(node, (dict, list)) else node

    def set(self, key: str, value: Any) -> None:
        """Set a dotted key; ``None`` removes it. Intermediate tables are created."""
        parts = _split_key(key)
        if value is None:
            self.unset(key)
            return
        _check_toml_value(value, key)
        node = self.data
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            elif not isinstance(nxt, dict):
                raise SettingsError(f"cannot set {key}: {'.'.join(parts[: i + 1])} is not a table")
            node = nxt
        node[parts[-1]] = copy.deepcopy(value)

    def unset(self, key: str) -> None:
        parts = _split_key(key)
        node = self.data
        for part in parts[:-1]:
            node = node.get(part)
            if not isinstance(node, dict):
                return
        node.pop(parts[-1], None)

    def as_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.data)

    def to_toml(self) -> str:
        return dumps_toml(self.data)

    # -- providers ---------------------------------------------------------------------------------

    def _merged_view(self) -> dict[str, Any]:
        user_providers = self.data.get("providers")
        if user_providers is not None and not isinstance(user_providers, dict):
            raise SettingsError("providers must be a table of provider tables")
        providers = dict(user_providers or {})
        deepseek_user = providers.get(DEEPSEEK_PROVIDER) or {}
        if not isinstance(deepseek_user, dict):
            raise SettingsError(f"providers.{DEEPSEEK_PROVIDER} must be a table")
        providers[DEEPSEEK_PROVIDER] = _merge(_builtin_deepseek(), deepseek_user)
        default = self.data.get("default") or {}
        if not isinstance(default, dict):
            raise SettingsError("default must be a table")
        view = dict(self.data)
        view["providers"] = providers
        view["default"] = _merge({"provider": DEEPSEEK_PROVIDER}, default)
        return view

    def providers(self) -> dict[str, ProviderSettings]:
        view = self._merged_view()["providers"]
        return {name: _parse_provider(name, raw, name == DEEPSEEK_PROVIDER) for name, raw in view.items()}

    def provider(self, name: str | None = None) -> ProviderSettings:
        name = name or self.default_provider
        view = self._merged_view()["providers"]
        if name not in view:
            known = ", ".join(sorted(view))
            raise SettingsError(
                f'unknown provider "{name}" (configured: {known}); add a [providers.{name}] table'
            )
        return _parse_provider(name, view[name], name == DEEPSEEK_PROVIDER)

    @property
    def default_provider(self) -> str:
        value = self.get("default.provider") or DEEPSEEK_PROVIDER
        if not isinstance(value, str):
            raise SettingsError("default.provider must be a string")
        return value

    @property
    def default_model(self) -> str | None:
        value = self.get("default.model")
        if value is not None and not isinstance(value, str):
            raise SettingsError("default.model must be a string")
        if value:
            return value
        if self.default_provider == DEEPSEEK_PROVIDER:
            return DEEPSEEK_MODELS[0]
        models = list(self.provider(self.default_provider).models)
        return models[0] if models else None

    @property
    def default_reasoning_effort(self) -> str | None:
        value = self.get("default.reasoning_effort")
        if value is not None and value not in EFFORTS:
            raise SettingsError(
                f"default.reasoning_effort must be one of {', '.join(EFFORTS)}, not {value!r}"
            )
        return value


def _split_key(key: str) -> list[str]:
    if not isinstance(key, str) or not key:
        raise SettingsError(f"invalid settings key {key!r}")
    parts = key.split(".")
    if any(not p for p in parts):
        raise SettingsError(f"invalid settings key {key!r}")
    return parts


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read the settings file; a missing file is empty settings, a broken one a ``SettingsError``."""
    p = Path(path) if path is not None else settings_path()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings({}, p)
    except (OSError, UnicodeDecodeError) as err:
        raise SettingsError(f"cannot read {p}: {err}") from err
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{p} is not valid TOML: {err}") from err
    return Settings(data, p)


def save_settings(settings: Settings, path: str | os.PathLike[str] | None = None) -> Path:
    """Write the settings atomically (temporary file + rename); returns the path written."""
    p = Path(path) if path is not None else (settings.path or settings_path())
    text = dumps_toml(settings.data)
    _atomic_write(p, text, mode=None)
    settings.path = p
    return p


def _atomic_write(p: Path, text: str, mode: int | None) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(tmp, flags, 0o600 if mode is not None else 0o644)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            fd = -1
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    finally:
        if fd != -1:
            os.close(fd)
    os.replace(tmp, p)


# --------------------------------------------------------------------------------------------------
# Credentials


def load_credentials(path: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The credentials file, or ``None`` when there is none. Refuses a file others can read."""
    p = Path(path) if path is not None else credentials_path()
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise SettingsError(f"cannot read {p}: {err}") from err
    if not stat.S_ISREG(st.st_mode):
        raise SettingsError(f"{p} is not a file (it is a {'directory' if stat.S_ISDIR(st.st_mode) else 'special file'});"
                            " the credentials file must be a TOML file with mode 0600")
    if os.name == "posix" and st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        raise SettingsError(
            f"refusing to read {p}: it holds API keys but its mode is {mode:04o}; run: chmod 600 {p}"
        )
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise SettingsError(f"cannot read {p}: {err}") from err
    _check_credentials(data, p)
    return data


def _check_credentials(data: dict[str, Any], p: Path) -> None:
    """Every value is a key string (by environment-variable name) or the ``providers`` table of
    ``[providers.NAME] api_key = "..."``: a wrong type is an error, not a key silently ignored."""
    for name, value in data.items():
        if name == "providers":
            if not isinstance(value, dict):
                raise SettingsError(f"{p}: providers must be a table of [providers.NAME] api_key = \"...\"")
            for prov, entry in value.items():
                if not isinstance(entry, dict):
                    raise SettingsError(f"{p}: providers.{prov} must be a table with api_key = \"...\"")
                if "api_key" in entry and not isinstance(entry["api_key"], str):
                    raise SettingsError(f"{p}: providers.{prov}.api_key must be a string (the key, in quotes)")
        elif not isinstance(value, str):
            raise SettingsError(f"{p}: {name} must be a string (the key, in quotes), not a {type(value).__name__}")


def save_credential(provider: str, api_key: str, path: str | os.PathLike[str] | None = None) -> Path:
    """Store ``api_key`` for ``provider`` in the credentials file (created with mode 0600)."""
    p = Path(path) if path is not None else credentials_path()
    data = load_credentials(p) or {}
    data.setdefault("providers", {}).setdefault(provider, {})["api_key"] = api_key
    _atomic_write(p, dumps_toml(data), mode=0o600)
    return p


def find_api_key(provider: ProviderSettings, path: str | os.PathLike[str] | None = None) -> str | None:
    """The key for ``provider``: its environment variable, else the credentials file; ``None`` if neither."""
    if provider.api_key_env:
        value = os.environ.get(provider.api_key_env)
        if value and value.strip():
            return value
    creds = load_credentials(path)
    if not creds:
        return None
    per = creds.get("providers", {})
    entry = per.get(provider.name) if isinstance(per, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("api_key"), str) and entry["api_key"].strip():
        return entry["api_key"]
    if provider.api_key_env:
        value = creds.get(provider.api_key_env)
        if isinstance(value, str) and value.strip():
            return value
    return None


def missing_key_message(provider: ProviderSettings) -> str:
    env = provider.api_key_env or f"{provider.name.upper().replace('-', '_')}_API_KEY"
    where = credentials_path()
    how = (
        f"export {env}=<your key>"
        if provider.api_key_env
        else f'set api_key_env = "{env}" in [providers.{provider.name}] and export {env}=<your key>'
    )
    return (
        f'no API key for provider "{provider.name}": {how}, '
        f'or add [providers.{provider.name}] api_key = "<your key>" to {where} (chmod 600)'
    )


# --------------------------------------------------------------------------------------------------
# A small TOML writer (the inverse of tomllib for plain data)

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _key(k: str) -> str:
    return k if _BARE_KEY.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            raise SettingsError("settings strings cannot contain lone surrogates")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items()) + "}"
    raise SettingsError(f"cannot store {type(v).__name__} in settings")


def _check_toml_value(v: Any, where: str) -> None:
    if v is None:
        raise SettingsError(f"{where}: settings cannot hold null values")
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                raise SettingsError(f"{where}: table keys must be strings")
            _check_toml_value(x, f"{where}.{k}")
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _check_toml_value(x, f"{where}[{i}]")
    elif not isinstance(v, (bool, int, float, str)):
        raise SettingsError(f"{where}: cannot store {type(v).__name__} in settings")


def dumps_toml(data: dict[str, Any]) -> str:
    """Serialize nested dicts of strings, numbers, booleans and arrays as TOML (tables for sub-dicts)."""
    _check_toml_value(data, "settings")
    lines: list[str] = []

    def table(node: dict[str, Any], path: list[str]) -> None:
        scalars = [(k, v) for k, v in node.items() if not isinstance(v, dict)]
        subtables = [(k, v) for k, v in node.items() if isinstance(v, dict)]
        if path and (scalars or not subtables):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_key(p) for p in path) + "]")
        for k, v in scalars:
            lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in subtables:
            table(v, [*path, k])

    table(data, [])
    return "\n".join(lines) + ("\n" if lines else "")
