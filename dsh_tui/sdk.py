"""The Python SDK, in the shape of dsh's ``deepseek_harness``: a script written for dsh's SDK moves by
changing one import.

    from dsh_tui import DeepSeekHarness

    with DeepSeekHarness(model="deepseek-v4-flash", cwd=ws, session_root=root, plugins=[my_plugin]) as h:
        result = h.run("fix the failing tests")            # a new session
        again = h.run("now add a test", session_id=result.session_id)   # continues it
    print(result.final_response, result.finish_reason, result.session_id, len(result.events))

The agent runs in-process through the same agent host as ``dsh-tui run`` (same store, tools, plugins,
request invariant); sessions are ordinary dsh sessions under ``session_root``. ``arun`` is the ``async``
twin; ``on_event(event)`` sees every session event of the run as it is appended.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import DshError


class HarnessError(DshError):
    """A run could not start or finish (bad configuration, unknown session, a closed harness)."""


@dataclass
class DeepSeekHarnessConfig:
    """dsh's ``DeepSeekHarnessConfig`` fields that apply in-process (``None`` = the default)."""

    provider: str = "deepseek-official"
    model: str = "deepseek-v4-flash"
    max_tokens: int | None = None
    cwd: str | os.PathLike | None = None  # -> the current directory
    session_root: str | os.PathLike | None = None  # -> $DSH_SESSION_ROOT, else $DSH_HOME/sessions
    base_url: str | None = None  # -> DEEPSEEK_BASE_URL / the provider's settings
    api_key: str | None = None  # -> DEEPSEEK_API_KEY / the credentials file
    preset: str = "workspace-write"
    reasoning_effort: str | None = None
    # plugin objects, modules, or module names ("package.module", as --plugin takes them), loaded after the
    # settings' and entry points' plugins
    plugins: Sequence[Any] = ()
    strict_plugins: bool = False
    trust: bool = False  # trust ``cwd`` (remembered): its project plugins (.dsh-tui/plugins/) load
    env: dict[str, str] = field(default_factory=dict)  # accepted for dsh compatibility (no child process)
    provider_instance: Any = None  # a ready ``dsh_tui.llm`` Provider (tests, custom transports)
    # the OS sandbox for commands (docs/sandbox.md): "auto" | "bwrap" | "off"; None = the settings' [sandbox]
    sandbox: str | None = None
    allow_escalation: bool = False  # an escalation out of the sandbox runs without asking (else refused)


@dataclass
class RunResult:
    """What one ``run`` produced, with dsh's meanings: ``events`` are the session events this run
    appended; ``final_response`` the joined text of its last ``assistant/message`` ("" if none);
    ``finish_reason`` the kind of its last ``turn/end`` reason (None if no turn ended)."""

    session_id: str
    final_response: str
    finish_reason: str | None
    events: list[dict]
    session_root: str
    notifications: list[dict] = field(default_factory=list)
    # the sandbox the run's commands ran in ("bwrap"), or None; ``sandbox_note`` says why not where one was asked
    sandbox: str | None = None
    sandbox_note: str | None = None


class DeepSeekHarness:
    """See the module docstring. Not thread-safe; one run at a time."""

    def __init__(self, config: DeepSeekHarnessConfig | None = None, **kw: Any) -> None:
        if config is not None and kw:
            raise HarnessError("give either a DeepSeekHarnessConfig or keyword arguments, not both")
        try:
            self.config = config or DeepSeekHarnessConfig(**kw)
        except TypeError as err:
            raise HarnessError(str(err)) from None
        from dsh_tui.runtime.approval import PRESETS

        if self.config.preset not in PRESETS:  # said here, not at the first run()
            raise HarnessError(f"unknown preset {self.config.preset!r} (expected one of {', '.join(PRESETS)})")
        if self.config.sandbox not in (None, "auto", "bwrap", "off"):
            raise HarnessError(f"unknown sandbox mode {self.config.sandbox!r} (expected one of auto, bwrap, off)")
        self._provider: Any = None
        self._closed = False

    # ---- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> DeepSeekHarness:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> DeepSeekHarness:
        return self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def start(self) -> DeepSeekHarness:
        """Resolve the provider (lazily called by ``run``)."""
        if self._closed:
            raise HarnessError("the harness is closed")
        if self._provider is None:
            self._provider = self.config.provider_instance or self._build_provider()
        return self

    def close(self) -> None:
        if self._provider is not None and not self._closed:
            asyncio.run(self.aclose())
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True
        provider, self._provider = self._provider, None
        if provider is not None and self.config.provider_instance is None:
            from dsh_tui.runtime.host import close_provider

            await close_provider(provider)

    @property
    def session_root(self) -> Path:
        from dsh_tui.paths import default_sessions_root

        root = self.config.session_root or os.environ.get("DSH_SESSION_ROOT")
        return Path(root) if root else default_sessions_root()

    def _build_provider(self) -> Any:
        from dsh_tui.config import load_settings
        from dsh_tui.llm import registry

        cfg = self.config
        settings = load_settings()
        name = cfg.provider
        if cfg.base_url:
            settings.set(f"providers.{name}.base_url", cfg.base_url)
        if cfg.api_key is None:
            problem = registry.credential_problem(settings, name)
            if problem:
                raise HarnessError(problem.splitlines()[0])
        provider = registry.build_provider(settings, name)
        if cfg.api_key is not None:
            key = cfg.api_key
            provider.api_key_resolver = lambda: key
        return provider

    # ---- runs -----------------------------------------------------------------------------------
    def run(self, input: str | list, *, session_id: str | None = None,  # noqa: A002 - dsh's name
            on_event: Callable[[dict], Any] | None = None) -> RunResult:
        """Run one prompt to idle in a new session, or in ``session_id`` (continued)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # no loop: the usual case. (Run outside this handler: an error raised in the run would
            # otherwise carry "no running event loop" as its context, and that text reached the log.)
        else:
            raise HarnessError("run() was called inside an event loop: use `await harness.arun(...)`")
        return asyncio.run(self.arun(input, session_id=session_id, on_event=on_event))

    async def arun(self, input: str | list, *, session_id: str | None = None,  # noqa: A002
                   on_event: Callable[[dict], Any] | None = None) -> RunResult:
        from dsh_tui.runtime.host import AgentHost, HostSpec

        self.start()
        cfg = self.config
        root = self.session_root
        # a plugin given by name ("package.module", as --plugin takes it) is imported like --plugin's
        modules = tuple(p for p in cfg.plugins if isinstance(p, str))
        spec = HostSpec(root=root, cwd=Path(cfg.cwd).resolve() if cfg.cwd else (None if session_id else Path.cwd()),
                        provider=self._provider, model=cfg.model, reasoning_effort=cfg.reasoning_effort,
                        preset=cfg.preset, resume_id=session_id, plugins=modules or None,
                        plugin_objects=tuple(p for p in cfg.plugins if not isinstance(p, str)),
                        strict_plugins=cfg.strict_plugins, close_provider=False, sandbox=cfg.sandbox,
                        allow_escalation=cfg.allow_escalation, trust=cfg.trust or None,
                        agent_options={"max_tokens": cfg.max_tokens} if cfg.max_tokens else {})
        try:
            host = await AgentHost.open(spec)
        except DshError as err:
            from dsh_tui.runtime.plugins import PluginError

            if isinstance(err, (HarnessError, PluginError, OSError)) or not session_id:
                raise
            raise HarnessError(f"cannot continue session {session_id}: {err}") from err  # unknown, locked, ...
        if host.sandbox_note:
            import warnings

            from dsh_tui.runtime.sandboxing import say_once

            say_once(host.sandbox_note, lambda note: warnings.warn(note, RuntimeWarning, stacklevel=3))
        start = len(host.session.events)
        off = None
        if on_event is not None:
            def observe(_session: Any, event: dict) -> None:
                on_event(event)

            off = host.session.subscribe(observe)
        try:
            await host.run_turn(input if isinstance(input, str) else list(input))
        finally:
            if off is not None:
                off()
            await host.close()
        events = list(host.session.events[start:])
        final, reason = "", None
        for e in events:
            if e["type"] == "assistant/message":
                final = "".join(b.get("text", "") for b in e["data"]["message"].get("content", [])
                                if b.get("type") == "text")
            elif e["type"] == "turn/end":
                kind = (e["data"].get("reason") or {}).get("kind")
                reason = kind if isinstance(kind, str) else None
        return RunResult(host.session.header["id"], final, reason, events, str(root),
                         sandbox=getattr(host.sandbox, "name", None), sandbox_note=host.sandbox_note)


# Deprecated aliases (the names before issue #28; kept so that existing scripts run): ``Harness`` is
# ``DeepSeekHarness``, and ``HarnessConfig`` is ``DeepSeekHarnessConfig`` (dsh's SDK gives ``HarnessConfig`` to
# its JSON-RPC client's settings, a different thing). ``HarnessError`` keeps its name: it is dsh's.
Harness = DeepSeekHarness
HarnessConfig = DeepSeekHarnessConfig
