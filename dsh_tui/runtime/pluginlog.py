"""Where a plugin's ``ctx.log`` goes (docs/plugins.md, "The context"): every record to
``<cache>/logs/plugins.log`` (private, redacted); WARNING and above of a user plugin also as one line on stderr
(the command line) or through ``notify(level, text)`` (the app: a notice). Built-in plugins' records stay in
the file (they report through their own channels)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

LOGGER = "dsh_tui.plugins"


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _builtin_ids() -> tuple[str, ...]:
    from dsh_tui.runtime.plugins import BUILTIN_IDS

    return BUILTIN_IDS


def _user_record(record: logging.LogRecord) -> bool:
    return not record.name.startswith(LOGGER + ".") or \
        record.name.removeprefix(LOGGER + ".").split(".")[0] not in _builtin_ids()


def line(record: logging.LogRecord) -> str:
    """``dsh-tui: plugin <id>: <message>`` on one line, redacted."""
    from dsh_tui.llm.redact import redact

    plugin = record.name.removeprefix(LOGGER + ".")
    return one_line(redact(f"dsh-tui: plugin {plugin}: {record.getMessage()}"))


class _PluginFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return line(record)


class _Redacting(logging.Formatter):
    """Every line (message and traceback) passes ``redact``: a key a plugin logs never reaches the file."""

    def format(self, record: logging.LogRecord) -> str:
        from dsh_tui.llm.redact import redact

        return redact(super().format(record))


class NoticeHandler(logging.Handler):
    """A user plugin's WARNING and above as ``notify(levelno, "plugin <id>: <message>")`` (the app)."""

    def __init__(self, notify: Callable[[int, str], None]) -> None:
        super().__init__(logging.WARNING)
        self.notify = notify
        self.addFilter(_user_record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.notify(record.levelno, line(record).removeprefix("dsh-tui: "))
        except Exception:  # noqa: BLE001 - a closed app: the file has it
            pass


def route_plugin_logs(*, to_stderr: bool) -> None:
    """Everything to ``<cache>/logs/plugins.log`` (private), and WARNING and above also to stderr, one line
    each, when no full-screen app owns it (once per process)."""
    from dsh_tui.paths import cache_dir

    logger = logging.getLogger(LOGGER)
    logs = cache_dir() / "logs"
    routed = getattr(logger, "_dsh_routed", None)  # (the file's folder, whether stderr has a handler)
    if routed is not None and routed[0] == logs and (routed[1] or not to_stderr):
        return
    logger.setLevel(logging.DEBUG)
    if to_stderr:  # the command line: these handlers alone (the app leaves the rest of logging as it is)
        logger.propagate = False
    if routed is None or routed[0] != logs:  # first time, or the cache directory moved (tests)
        for old in [h for h in logger.handlers if getattr(h, "_dsh_file", False)]:
            logger.removeHandler(old)
            old.close()
        try:
            os.makedirs(logs, mode=0o700, exist_ok=True)
            fd = os.open(logs / "plugins.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace"))
            handler.setFormatter(_Redacting("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            handler._dsh_file = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
        except OSError:
            pass  # no cache directory: stderr (or the notices) still get the warnings
    has_stderr = bool(routed and routed[1]) or to_stderr
    logger._dsh_routed = (logs, has_stderr)  # type: ignore[attr-defined]
    if to_stderr and not (routed and routed[1]):
        err = logging.StreamHandler(sys.stderr)
        err.setLevel(logging.WARNING)
        err.setFormatter(_PluginFormatter())
        err.addFilter(_user_record)
        logger.addHandler(err)


def add_notices(notify: Callable[[int, str], None]) -> Callable[[], None]:
    """The app: the file (``route_plugin_logs``) and a user plugin's warnings as notices; returns the undo."""
    route_plugin_logs(to_stderr=False)
    logger = logging.getLogger(LOGGER)
    handler = NoticeHandler(notify)
    logger.addHandler(handler)
    return lambda: logger.removeHandler(handler)
