"""The UI's view of the user's settings (``dsh_tui.config``), with in-memory fallback.

Keys used by the UI: the ``[ui]`` and ``[chat]`` sections (typed: ``settings.ui.show_time``, ``settings.chat.enter_steers``;
``dsh_tui.config.base.UiSection`` / ``ChatSection``), ``keymap.<binding id>`` (e.g. ``keymap.chat.cards = "ctrl+k"``),
``models`` (names offered in the command palette) and ``model``.
"""

from __future__ import annotations

from typing import Any

from dsh_tui.config.base import ChatSection, UiSection


class UiSettings:
    """Reads and writes through ``dsh_tui.config.Settings`` when present, else keeps values in memory."""

    def __init__(self, backend: Any = None, values: dict[str, Any] | None = None) -> None:
        self._backend = backend
        self._values: dict[str, Any] = dict(values or {})

    @classmethod
    def load(cls) -> UiSettings:
        try:
            from dsh_tui.config import load_settings
        except ImportError:
            return cls()
        try:
            return cls(load_settings())
        except Exception:  # noqa: BLE001 - a broken settings file must not stop the app
            return cls()

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._values:
            return self._values[key]
        if self._backend is not None:
            try:
                value = self._backend.get(key)
            except Exception:  # noqa: BLE001 - unknown key
                value = None
            if value is not None:
                return value
        return default

    def set(self, key: str, value: Any) -> None:
        self._values[key] = value
        if self._backend is not None:
            try:
                self._backend.set(key, value)
                from dsh_tui.config import save_settings

                save_settings(self._backend)
            except Exception:  # noqa: BLE001 - read-only or broken settings: keep the value in memory
                pass

    @property
    def ui(self) -> UiSection:
        """The ``[ui]`` section, typed (built without pydantic: the first frame reads it)."""
        return UiSection.read(self.get)

    @property
    def chat(self) -> ChatSection:
        """The ``[chat]`` section, typed."""
        return ChatSection.read(self.get)

    def problems(self) -> list[str]:
        """What the typed settings tree says about the settings file (``dsh_tui.config.tree``): unknown keys
        and values of the wrong type, one line each (imports pydantic: call it after the first frame)."""
        problems = getattr(self._backend, "problems", None)
        if problems is None:
            return []
        try:
            return list(problems())
        except Exception:  # noqa: BLE001 - a notice must never stop the app
            return []

    def keymap(self) -> dict[str, str]:
        """Binding id -> keys, from ``keymap.*`` settings."""
        out: dict[str, str] = {}
        raw = self.get("keymap")
        if isinstance(raw, dict):
            out.update(_flatten(raw))
        for key, value in self._values.items():
            if key.startswith("keymap.") and isinstance(value, str):
                out[key[len("keymap."):]] = value
        return out

    def prices(self) -> dict[str, tuple[float, float, float]]:
        """Model -> (input, cache hit, output) USD per 1M tokens: defaults, then the providers' model
        tables in ``settings.toml``, then ``prices.<model> = {input, cache_read, output}``."""
        from dsh_tui.session.stats import DEFAULT_PRICES

        table = dict(DEFAULT_PRICES)
        # only a user's [providers.*] tables can carry prices (the built-in DeepSeek table has none): without
        # them the provider tables are not validated here, which would import pydantic before the first frame
        if self._backend is not None and self._backend.data.get("providers"):
            try:
                for provider in self._backend.providers().values():
                    for model_id, model in provider.models.items():
                        if model.price_input is not None and model.price_output is not None:
                            cached = model.price_cache_hit if model.price_cache_hit is not None else model.price_input
                            table[model_id] = (model.price_input, cached, model.price_output)
            except Exception:  # noqa: BLE001 - a broken providers table must not hide the app
                pass
        raw = self.get("prices")
        if isinstance(raw, dict):
            for model_id, p in raw.items():
                if isinstance(p, dict) and isinstance(p.get("input"), (int, float)) \
                        and isinstance(p.get("output"), (int, float)):
                    cache_read: Any = p.get("cache_read", p["input"])  # (float() refuses what is not a number)
                    table[str(model_id)] = (float(p["input"]), float(cache_read), float(p["output"]))
        return table

    def models(self) -> list[str]:
        models = self.get("models")
        return [str(m) for m in models] if isinstance(models, list) else []


def _flatten(table: dict[str, Any]) -> dict[str, str]:
    """The keymap table's string entries by binding id (``dsh_tui.config.check.flatten``: binding ids contain
    dots)."""
    from dsh_tui.config.check import flatten

    return {k: v for k, v in flatten(table).items() if isinstance(v, str)}
