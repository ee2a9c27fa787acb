"""How a step's failure is carried: a request that breaks the request invariant (``RequestInvariantError``), a
terminal provider failure (``FailureError``, the finish chunk's ``LlmFailure``), and ``to_failure``: any
error as the ``{message, code}`` dict ``agent/error`` and ``turn/end`` record."""

from __future__ import annotations

from typing import cast

from dsh_tui.llm.protocol import UNKNOWN, LlmError, LlmFailure
from dsh_tui.session.errors import DshError


class RequestInvariantError(DshError):
    """The request about to go to the model is not what the log records
    (docs/runtime.md, "The request invariant"): a listener
    changed it. Not retried: the turn ends with this error."""

    code = "REQUEST_INVARIANT"


class FailureError(LlmError):
    """A terminal provider failure carrying the exact ``LlmFailure`` dict of the finish chunk."""

    def __init__(self, failure: dict) -> None:
        super().__init__(str(failure.get("message", "")), str(failure.get("code", UNKNOWN)))
        self.failure_dict = dict(failure)

    def failure(self) -> LlmFailure:
        return cast("LlmFailure", dict(self.failure_dict))  # as recorded: dsh's keys, kept verbatim


def error_chain(err: BaseException) -> str:
    parts = []
    seen = set()
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur) or type(cur).__name__
        parts.append(text)
        cur = cur.__cause__ or cur.__context__
    return ": ".join(parts)


def to_failure(err: BaseException) -> LlmFailure:
    if isinstance(err, LlmError):
        return err.failure()
    if isinstance(err, RequestInvariantError):
        return {"message": str(err), "code": err.code}
    return {"message": error_chain(err), "code": UNKNOWN}
