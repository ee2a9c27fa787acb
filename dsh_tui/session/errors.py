"""Error types shared by every layer. Every error a user can see carries a clear one-line message."""

from __future__ import annotations


class DshError(Exception):
    """Base for every expected failure: the CLI prints ``str(err)`` on one line, no traceback."""


class UsageError(DshError):
    """The command line or its input cannot be used as given (the CLI exits 2, as for a usage error)."""

    exit_code = 2


class SessionFormatUnsupportedError(DshError):
    """The log is valid but uses a format this reader refuses (newer version, unknown required type)."""


class SessionCorruptionError(DshError):
    """The committed region of a log is damaged or fails validation."""


class SessionValidationError(DshError):
    """An append (or a seed) breaks a session rule; nothing was changed."""

    def __init__(self, message: str, code: str = "INVALID_EVENT") -> None:
        super().__init__(message)
        self.code = code
