"""Checks of a settings document that need no pydantic and no textual: nothing silently accepted.

``check_settings(data)`` runs when the file is read (``load_settings``): settings nested deeper than
``MAX_DEPTH`` levels, ``[keymap]`` entries naming no binding or no key, a non-boolean
``privacy.send_anonymous_user_id``, a ``models`` list that is not names, a ``ui.theme`` that is not a name, a
``ui.notify`` or ``[sandbox]`` value that is none of its choices.
The first problem is one ``SettingsError`` line naming the key (and the nearest valid name when there is
one). Provider tables are checked when a provider is used (``config/models.py``, ``llm/registry.py``);
the theme's existence by the app, which knows the themes (``check_theme``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsh_tui.config.base import NOTIFY_MODES, SettingsError
from dsh_tui.config.binding_ids import BINDING_IDS

MAX_DEPTH = 32  # tables and arrays inside each other; a settings file needs 4 or 5

# retry bounds: a million retries at zero delay is a denial of service on the user's own provider
MAX_RETRIES = 100
MAX_DELAY_MS = 600_000  # 10 minutes between two attempts at most
MIN_ALWAYS_DELAY_MS = 100  # mode = "always" retries forever: never faster than this
MAX_TOKEN_COUNT = 100_000_000  # context_window / max_tokens above this is a typo, not a model

MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")
KEY_NAMES = frozenset({
    "escape", "enter", "tab", "backspace", "delete", "insert", "home", "end", "pageup", "pagedown", "up", "down",
    "left", "right", "space", "return", "backtab", "circumflex_accent", *(f"f{i}" for i in range(1, 25)),
})


def check_depth(data: Any, where: str = "settings") -> None:
    """Refuse tables and arrays nested deeper than ``MAX_DEPTH`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= MAX_DEPTH:
            raise SettingsError(f"{where}: tables and arrays are nested deeper than {MAX_DEPTH} levels")
        stack.extend((c, depth + 1) for c in children)


def _near(name: str, choices: Iterable[str]) -> str:
    import difflib  # only when something is wrong

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def key_problem(key: str) -> str | None:
    """Why ``key`` (one key, Textual's spelling: ``ctrl+k``, ``f6``, ``shift+tab``, ``a``) is no key."""
    *mods, base = key.split("+")
    for m in mods:
        if m not in MODIFIERS:
            return f"unknown modifier {m!r}{_near(m, MODIFIERS)}"
    if not base:
        return "no key after the modifiers"
    if len(base) == 1 and base.isprintable():
        return None
    if base in KEY_NAMES:
        return None
    import unicodedata

    try:  # Textual names other characters by their Unicode name ("question_mark", "full_stop")
        unicodedata.lookup(base.replace("_", " ").upper())
        return None
    except KeyError:
        return f"unknown key {base!r}{_near(base, KEY_NAMES)}"


def check_keymap(table: Any, binding_ids: Iterable[str] = BINDING_IDS) -> None:
    """``[keymap]``: ``"binding.id" = "key[,key…]"``; the id must be a binding of the app."""
    if table is None:
        return
    if not isinstance(table, dict):
        raise SettingsError('keymap must be a table of binding ids to keys, e.g. [keymap] "chat.cards" = "f6"')
    ids = set(binding_ids)
    for name, keys in flatten(table).items():
        if name not in ids:
            raise SettingsError(f"keymap.{name} is not a binding id{_near(name, ids)}; docs/app.md lists them")
        if not isinstance(keys, str) or not keys.strip():
            raise SettingsError(f"keymap.{name} must be a string of keys, e.g. \"f6\" or \"ctrl+k,f6\"")
        for key in keys.split(","):
            problem = key_problem(key.strip())
            if problem:
                raise SettingsError(f"keymap.{name}: {problem}")


def flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"chat": {"cards": "ctrl+k"}} -> {"chat.cards": "ctrl+k"} (binding ids contain dots)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def check_theme(name: Any, themes: Iterable[str]) -> None:
    """``ui.theme`` names a theme the app has (the app passes its theme names)."""
    if name is None:
        return
    names = sorted(set(themes))
    if not isinstance(name, str) or name not in names:
        shown = name if isinstance(name, str) else repr(name)
        near = _near(str(name), names)
        raise SettingsError(f"ui.theme {shown!r} is not a theme{near}"
                            + ("" if near else f"; themes: {', '.join(names)}"))


def check_settings(data: dict[str, Any]) -> None:
    """The checks of a settings document that run when it is read (see the module text)."""
    check_depth(data)
    check_keymap(data.get("keymap"))
    privacy = data.get("privacy")
    if privacy is not None:
        if not isinstance(privacy, dict):
            raise SettingsError("privacy must be a table")
        for key in ("send_anonymous_user_id", "send_session_log", "send_plugin_packages"):
            value = privacy.get(key)
            if value is not None and not isinstance(value, bool):
                raise SettingsError(f"privacy.{key} must be true or false, not {value!r}")
    models = data.get("models")
    if models is not None and not (isinstance(models, list) and all(isinstance(m, str) and m for m in models)):
        raise SettingsError(f"models must be a list of model names, e.g. [\"deepseek-v4-pro\"], not {models!r}")
    ui = data.get("ui")
    if ui is not None:
        if not isinstance(ui, dict):
            raise SettingsError("ui must be a table")
        theme = ui.get("theme")
        if theme is not None and (not isinstance(theme, str) or not theme):
            raise SettingsError(f"ui.theme must be a theme name, not {theme!r}")
        notify = ui.get("notify")
        if notify is not None and notify not in NOTIFY_MODES:
            raise SettingsError(f"ui.notify must be one of {', '.join(NOTIFY_MODES)}, not {notify!r}")
    check_sandbox(data.get("sandbox"))


SANDBOX_MODES = ("auto", "bwrap", "off")


def check_sandbox(table: Any) -> None:
    """``[sandbox]``: ``mode`` (auto | bwrap | off), ``network`` (a boolean), ``writable`` / ``readable`` (lists
    of paths)."""
    if table is None:
        return
    if not isinstance(table, dict):
        raise SettingsError("sandbox must be a table")
    keys = ("mode", "network", "writable", "readable")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise SettingsError(f"sandbox.{unknown[0]} is not a sandbox setting{_near(unknown[0], keys)}")
    mode = table.get("mode")
    if mode is not None and mode not in SANDBOX_MODES:
        raise SettingsError(f"sandbox.mode must be one of {', '.join(SANDBOX_MODES)}, not {mode!r}")
    network = table.get("network")
    if network is not None and not isinstance(network, bool):
        raise SettingsError(f"sandbox.network must be true or false, not {network!r}")
    for key in ("writable", "readable"):
        value = table.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(p, str) and p for p in value)):
            raise SettingsError(f'sandbox.{key} must be a list of paths, e.g. ["~/.npm"], not {value!r}')


def check_retry(raw: dict[str, Any], where: str) -> None:
    """Bounds of a provider's ``[retry]`` table (types are checked by the caller)."""
    mode = raw.get("mode", "normal")
    retries = raw.get("max_retries")
    if isinstance(retries, int) and not isinstance(retries, bool) and retries > MAX_RETRIES:
        raise SettingsError(f"{where}.max_retries must be at most {MAX_RETRIES}, not {retries}")
    for key in ("initial_delay_ms", "max_delay_ms"):
        value = raw.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > MAX_DELAY_MS:
            raise SettingsError(f"{where}.{key} must be at most {MAX_DELAY_MS} (10 minutes), not {value}")
    initial, longest = raw.get("initial_delay_ms"), raw.get("max_delay_ms")
    if isinstance(initial, (int, float)) and isinstance(longest, (int, float)) and initial > longest:
        raise SettingsError(f"{where}.initial_delay_ms ({initial}) must not exceed max_delay_ms ({longest})")
    if mode == "always":
        for key in ("initial_delay_ms", "max_delay_ms"):
            value = raw.get(key)
            if isinstance(value, (int, float)) and value < MIN_ALWAYS_DELAY_MS:
                raise SettingsError(f'{where}.{key} must be at least {MIN_ALWAYS_DELAY_MS} with mode = "always" '
                                    f"(it retries without end), not {value}")
