"""Where the settings and credentials files live, and reading and writing them.

Reads use ``tomllib`` (plain dicts). Writes go through ``tomlkit``: the file on disk is parsed as a
document, only the keys whose values differ from the settings are changed, added or removed, and the
result is written atomically. The user's comments, key order, layout and any table the app does not
know survive a save of the theme, a key binding or the model.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from dsh_tui.config.base import CREDENTIALS_FILE, SettingsError

APP_NAME = "dsh-tui"
SETTINGS_FILE = "settings.toml"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def settings_path() -> Path:
    return config_dir() / SETTINGS_FILE


def credentials_path() -> Path:
    return config_dir() / CREDENTIALS_FILE


def _reason(err: Exception) -> str:
    """An OSError's reason in the system's words (no ``[Errno N]`` and file name: the message names it)."""
    return (err.strerror if isinstance(err, OSError) else None) or str(err)


def read_settings_file(p: Path) -> dict[str, Any]:
    """The settings document at ``p`` (``{}`` when there is no file); a broken one is a ``SettingsError``."""
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        raise SettingsError(f"cannot read {p}: {_reason(err)}") from err
    import tomllib  # here, not at module level: without a settings file start-up never needs it

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{p} is not valid TOML: {err}") from err
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise SettingsError(f"{p}: tables and arrays are nested too deeply") from None
    from dsh_tui.config.check import check_settings

    try:
        check_settings(data)
    except SettingsError as err:
        raise SettingsError(f"{p}: {err}") from None
    return data


def write_toml(p: Path, data: dict[str, Any], *, mode: int | None = None) -> None:
    """Make the TOML file at ``p`` hold exactly ``data``, keeping what it can of the file already there
    (comments, order, formatting); ``mode`` 0600 for a private file (else 0644)."""
    import tomlkit  # only when saving (~10 ms to import; not on the start-up path)

    check_toml_value(data, "settings")
    try:
        doc = tomlkit.parse(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        doc = tomlkit.document()
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError):
        doc = tomlkit.document()  # unreadable or not TOML: written afresh, as before
    _sync(doc, data)
    text = tomlkit.dumps(doc)
    import tomllib

    from dsh_tui.store.fsio import write_atomic  # writes only: not on the way to the first frame

    if not _same(tomllib.loads(text), data):  # a layout tomlkit cannot edit in place: write it plainly
        text = dumps_toml(data)
    write_atomic(p, text.encode("utf-8"), mode=0o644 if mode is None else mode)


def _sync(container: Any, data: Mapping[str, Any]) -> None:
    """Edit the tomlkit ``container`` in place until its plain value equals ``data``."""
    for key in [k for k in container if k not in data]:
        del container[key]
    for key, value in data.items():
        if key in container:
            current = container[key]
            if isinstance(value, dict) and isinstance(current, dict):
                _sync(current, value)
                continue
            plain = current.unwrap() if hasattr(current, "unwrap") else current
            if _same(plain, value):
                continue
        container[key] = value


def _same(a: Any, b: Any) -> bool:
    """Equal as TOML values: types too (``1`` is not ``1.0`` nor ``true``), ``-0.0`` is not ``0.0``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def dumps_toml(data: dict[str, Any]) -> str:
    """``data`` as a new TOML document (tables for sub-dicts)."""
    import tomlkit

    check_toml_value(data, "settings")
    return tomlkit.dumps(data)


def check_toml_value(v: Any, where: str) -> None:
    """Refuse what TOML cannot hold: nulls, non-string keys, lone surrogates, other types."""
    if v is None:
        raise SettingsError(f"{where}: settings cannot hold null values")
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                raise SettingsError(f"{where}: table keys must be strings")
            _check_text(k)
            check_toml_value(x, f"{where}.{k}")
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            check_toml_value(x, f"{where}[{i}]")
    elif isinstance(v, str):
        _check_text(v)
    elif not isinstance(v, (bool, int, float)):
        raise SettingsError(f"{where}: cannot store {type(v).__name__} in settings")


def _check_text(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError("settings strings cannot contain lone surrogates") from None


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
        raise SettingsError(f"cannot read {p}: {_reason(err)}") from err
    if not stat.S_ISREG(st.st_mode):
        raise SettingsError(f"{p} is not a file (it is a {'directory' if stat.S_ISDIR(st.st_mode) else 'special file'});"
                            " the credentials file must be a TOML file with mode 0600")
    if os.name == "posix" and st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        raise SettingsError(
            f"refusing to read {p}: it holds API keys but its mode is {mode:04o}; run: chmod 600 {p}"
        )
    import tomllib

    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise SettingsError(f"cannot read {p}: {_reason(err)}") from err
    _check_credentials(data, p)
    return data


def _toml_kind(value: Any) -> str:
    """What a TOML value is, in words (``5`` is "an integer", not Python's "a int")."""
    kinds = {bool: "a boolean", int: "an integer", float: "a number", list: "an array", dict: "a table"}
    return next((w for t, w in kinds.items() if isinstance(value, t)), "a date or time")


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
            raise SettingsError(f"{p}: {name} must be a string (the key, in quotes), not {_toml_kind(value)}")


def save_credential(provider: str, api_key: str, path: str | os.PathLike[str] | None = None) -> Path:
    """Store ``api_key`` for ``provider`` in the credentials file (created with mode 0600)."""
    p = Path(path) if path is not None else credentials_path()
    data = load_credentials(p) or {}
    data.setdefault("providers", {}).setdefault(provider, {})["api_key"] = api_key
    write_toml(p, data, mode=0o600)
    return p
