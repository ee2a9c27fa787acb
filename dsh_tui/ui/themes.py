"""Themes: the bundled TOML files in ``theme_files/`` (package data) and the user's config dir ``themes/``,
registered at start-up; and ``CachedStylesheet``, the app's stylesheet with its parsed rules kept between runs."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

from textual.theme import Theme

from dsh_tui.ui.textual_compat import HookedStylesheet

THEME_KEYS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground",
              "background", "surface", "panel", "boost")
DEFAULT_THEME = "dsh-dark"


# The bundled themes: package data, the one source of truth (a checkout and an install read the same files).
PACKAGE_THEMES = Path(__file__).resolve().parent / "theme_files"


def theme_dirs() -> list[Path]:
    """Bundled themes, then user themes (config dir ``themes/``, whose files win)."""
    dirs = [PACKAGE_THEMES]
    try:
        from dsh_tui import paths

        dirs.append(Path(paths.config_dir()) / "themes")
    except Exception:  # noqa: BLE001 - no paths module / no config dir: bundled themes only
        pass
    return [d for d in dirs if d.is_dir()]


def load_theme(path: Path, data: dict[str, Any] | None = None) -> Theme:
    """One theme from a TOML file (keys as in ``textual.theme.Theme``); ``data``: the file already parsed."""
    if data is None:
        import tomllib  # (load_themes keeps parsed files in its cache: most start-ups never import it)

        data = tomllib.loads(path.read_text(encoding="utf-8"))
    kwargs = {k: data[k] for k in THEME_KEYS if isinstance(data.get(k), str)}
    variables = data.get("variables")
    variables = variables if isinstance(variables, dict) else {}
    return Theme(name=str(data.get("name") or path.stem), dark=bool(data.get("dark", True)),
                 variables={str(k): str(v) for k, v in variables.items()}, **kwargs)


def load_themes(cache: Path | None = None) -> list[Theme]:
    """Every readable theme file; a broken file is skipped (and named by ``broken_themes``).

    ``cache``: a file keeping the parsed TOML of each theme file by path, size and mtime between runs
    (importing ``tomllib`` and parsing the bundled files is ~2 ms of every start-up); a changed file is
    parsed again, an unreadable cache ignored. New entries are written by ``save_theme_cache``."""
    files = [path for directory in theme_dirs() for path in sorted(directory.glob("*.toml"))]
    stamps: dict[str, tuple[int, int]] = {}
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        stamps[str(path)] = (st.st_size, st.st_mtime_ns)
    cached: dict[str, Any] = {}
    if cache is not None:
        try:
            loaded = pickle.loads(cache.read_bytes())
            if isinstance(loaded, dict):
                cached = loaded
        except Exception:  # noqa: BLE001 - missing, unreadable or foreign: parse afresh
            cached = {}
    fresh: dict[str, Any] = {}
    seen: dict[str, Theme] = {}
    for path in files:
        stamp = stamps.get(str(path))
        entry = cached.get(str(path))
        data = entry[1] if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == stamp \
            and isinstance(entry[1], dict) else None
        try:
            if data is None:
                import tomllib

                data = tomllib.loads(path.read_text(encoding="utf-8"))
            theme = load_theme(path, data)
        except (OSError, ValueError, TypeError):
            continue
        if stamp is not None:
            fresh[str(path)] = (stamp, data)
        seen[theme.name] = theme
    global _unsaved
    _unsaved = (cache, fresh) if cache is not None and fresh != cached else None
    return list(seen.values())


_unsaved: tuple[Path, dict[str, Any]] | None = None  # parsed theme files not in the cache yet


def save_theme_cache() -> None:
    """Write what ``load_themes`` parsed afresh into its cache (the app calls it after the first frame)."""
    global _unsaved
    if _unsaved is None:
        return
    (cache, fresh), _unsaved = _unsaved, None
    try:
        from dsh_tui.store.fsio import write_atomic

        write_atomic(cache, pickle.dumps(fresh, protocol=pickle.HIGHEST_PROTOCOL), fsync=False)
    except Exception:  # noqa: BLE001 - a cache: parsed again next time
        pass


# -- parsed CSS, kept between runs ---------------------------------------------------------------------
class CachedStylesheet(HookedStylesheet):
    """A Textual ``Stylesheet`` whose parsed rules are kept in a file between runs.

    Tokenizing and parsing the default CSS of the app, its screens and widgets is 25-40 ms of every
    start-up (the App's own CSS alone ~10 ms); unpickling the same rules is ~1-2 ms. An entry's key is
    the CSS text, where it was read from, its parse options, the CSS variables (the theme) and the
    Textual installation, so any change parses afresh. Only rules that parsed without errors are kept; an
    unreadable or foreign cache file is ignored (and replaced). ``save()`` writes new entries."""

    VERSION = 1

    def __init__(self, *, variables: dict[str, str] | None = None, path: Path | None = None) -> None:
        super().__init__(variables=variables)
        self.cache_path = path
        self._entries: dict[bytes, bytes] | None = None  # key -> pickled rules, loaded on first use
        self._used: set[bytes] = set()
        self._dirty = False
        self._variables_key = b""

    def set_variables(self, variables: dict[str, str]) -> None:
        super().set_variables(variables)
        self._variables_key = b""

    def _key(self, css: str, read_from: Any, is_default_rules: bool, tie_breaker: int, scope: str) -> bytes:
        try:  # hashlib's import loads OpenSSL (~1.5 ms): blake2b is built in
            from _blake2 import blake2b
        except ImportError:  # pragma: no cover - an interpreter without it
            from hashlib import blake2b

        if not self._variables_key:
            self._variables_key = blake2b(
                repr((self.VERSION, _textual_stamp(), sorted(self.variables.items()))).encode(),
                digest_size=16).digest()
        return blake2b(self._variables_key + repr((css, read_from, is_default_rules, tie_breaker,
                                                            scope)).encode(), digest_size=16).digest()

    def _load(self) -> dict[bytes, bytes]:
        if self._entries is None:
            self._entries = {}
            if self.cache_path is not None:
                try:
                    data = pickle.loads(self.cache_path.read_bytes())
                except Exception:  # noqa: BLE001 - missing, unreadable or foreign: parse afresh
                    data = None
                if isinstance(data, dict) and data.get("version") == self.VERSION \
                        and isinstance(data.get("entries"), dict):
                    self._entries = data["entries"]
        return self._entries

    def parse_rules(self, css: str, read_from: Any, is_default_rules: bool, tie_breaker: int,
                    scope: str) -> list[Any]:
        if self.cache_path is None:
            return super().parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        memo = (css, read_from, is_default_rules, tie_breaker, scope)
        try:
            return self.memo[memo]
        except KeyError:
            pass
        key = self._key(*memo)
        blob = self._load().get(key)
        rules = None
        if blob is not None:
            try:
                rules = pickle.loads(blob)
            except Exception:  # noqa: BLE001 - a damaged entry: parse it again
                rules = None
        if rules is None:
            rules = super().parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
            if not any(rule.errors for rule in rules):
                try:
                    self._load()[key] = pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL)
                    self._dirty = True
                except Exception:  # noqa: BLE001 - not picklable: just not cached
                    pass
        else:
            self.memo[memo] = rules
        self._used.add(key)
        return rules

    def save(self, limit: int = 400) -> bool:
        """Write the cache file if rules were parsed this run (atomically; errors ignored)."""
        if not self._dirty or self.cache_path is None or self._entries is None:
            return False
        entries = self._entries
        if len(entries) > limit:  # keep what this run used
            entries = {k: v for k, v in entries.items() if k in self._used}
        from dsh_tui.store.fsio import write_atomic

        try:
            # a cache: no fsync (a lost file is parsed again next time)
            write_atomic(self.cache_path, pickle.dumps({"version": self.VERSION, "entries": entries},
                                                       protocol=pickle.HIGHEST_PROTOCOL), fsync=False)
        except OSError:
            return False
        self._dirty = False
        return True


def _textual_stamp() -> tuple:
    """Which Textual parsed the rules: its CSS modules' paths, sizes and mtimes (another version or a
    reinstall changes them; ``textual.__version__`` would import importlib.metadata, ~20 ms)."""
    import textual.css.model
    import textual.css.parse
    import textual.css.styles

    out = []
    for module in (textual.css.parse, textual.css.styles, textual.css.model):
        path = str(module.__file__)  # (a module loaded from a file: never None here)
        st = os.stat(path)
        out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(out)


def css_cache_path() -> Path | None:
    """``<cache dir>/textual-css.pickle`` (None when there is no cache dir)."""
    try:
        from dsh_tui import paths

        return Path(paths.cache_dir()) / "textual-css.pickle"
    except Exception:  # noqa: BLE001
        return None
