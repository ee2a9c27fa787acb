"""``AgentConfig``: what one ``Agent`` is built with (model, preset, prompt, tool, retry, compaction and spill
settings). Importable from ``dsh_tui.runtime.agent`` and ``dsh_tui.runtime`` as before."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass
class AgentConfig:
    provider: str = ""
    model: str = ""
    reasoning_effort: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    preset: str = "workspace-write"  # 'read-only' | 'workspace-write' | 'full-access'
    cwd: str | os.PathLike | None = None  # defaults to the session's cwd, else the process cwd
    workspace: str | os.PathLike | None = None  # defaults to cwd
    # System prompt: harness identity (order -100), persona (order 0), extra sections {name, order, text, complete?}.
    include_harness_identity: bool = True
    persona: str | None = None
    system_sections: list[dict] = field(default_factory=list)
    tool_guidance: bool = True  # dsh's per-tool guidance sections for the registered built-in tools
    # Runtime-context sections (list of {name, text}); None = cwd, platform, date, git branch.
    context_sections: list[dict] | None = None
    runtime_context: bool = True
    tool_order: list[str] | None = None
    max_parallel_tool_calls: int = 10
    context_window: int | None = None  # overrides the provider's ModelInfo
    # The request invariant (docs/runtime.md): the final request (after every llm/stream listener)
    # equals what the log
    # derives, and is frozen. On with DSH_TUI_CHECK_REQUESTS=1 (every test, --check-requests, the demo).
    check_requests: bool = field(default_factory=lambda: os.environ.get("DSH_TUI_CHECK_REQUESTS") == "1")
    retry: bool = True
    compaction: bool = True
    compaction_threshold_ratio: float = 0.8
    compaction_retain_ratio: float = 0.16
    compaction_max_tokens: int = 8192
    compaction_retries: int = 1
    max_overflow_retries: int = 1
    prune_threshold_chars: int = 8192
    max_inline_bytes: int | None = 50_000
    spill_dir: str | os.PathLike | None = None
    approval_policy: str = "ask"  # 'ask' consults answerers; 'never' rejects every approval request
    # a sandbox escalation (``sandbox_permissions``) is allowed without asking (``--allow-escalation``: headless)
    allow_escalation: bool = False
    tool_grace_s: float = 5.0  # a timed-out or cancelled body gets this long to stop before its task is cancelled

    def resolved_cwd(self) -> str | os.PathLike:
        """``cwd``, or the process's working directory where none is set (an ``Agent`` sets it when built)."""
        return self.cwd if self.cwd is not None else os.getcwd()
