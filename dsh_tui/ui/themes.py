"""Project themes: TOML files in ``themes/`` (and the user's config dir), registered at start-up."""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

THEME_KEYS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground",
              "background", "surface", "panel", "boost")
DEFAULT_THEME = "dsh-dark"


# The package's own copy of the repository's ``themes/`` (shipped as package data, so a regular,
# non-editable install finds them too; tests/ui/test_themes.py keeps the two copies identical).
PACKAGE_THEMES = Path(__file__).resolve().parent / "theme_files"


def theme_dirs() -> list[Path]:
    """Bundled themes (the package copy, then the repository's ``themes/`` when run from a checkout,
    whose files win), then user themes (config dir ``themes/``, which win over both)."""
    here = Path(__file__).resolve()
    dirs = [PACKAGE_THEMES]
    checkout = here.parents[2]
    if (checkout / "pyproject.toml").is_file():  # a source checkout, not site-packages
        dirs.append(checkout / "themes")
    try:
        from dsh_tui import paths

        dirs.append(Path(paths.config_dir()) / "themes")
    except Exception:  # noqa: BLE001 - no paths module / no config dir: bundled themes only
        pass
    return [d for d in dirs if d.is_dir()]


def load_theme(path: Path) -> Theme:
    """One theme from a TOML file (keys as in ``textual.theme.Theme``)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    kwargs = {k: data[k] for k in THEME_KEYS if isinstance(data.get(k), str)}
    variables = data.get("variables") if isinstance(data.get("variables"), dict) else {}
    return Theme(name=str(data.get("name") or path.stem), dark=bool(data.get("dark", True)),
                 variables={str(k): str(v) for k, v in variables.items()}, **kwargs)


def load_themes() -> list[Theme]:
    """Every readable theme file; a broken file is skipped (and named by ``broken_themes``)."""
    seen: dict[str, Theme] = {}
    for directory in theme_dirs():
        for path in sorted(directory.glob("*.toml")):
            try:
                theme = load_theme(path)
            except (OSError, ValueError, TypeError):
                continue
            seen[theme.name] = theme
    return list(seen.values())
