"""``dsh-tui`` with no command: the full-screen app (session browser, or chat when no browser).

``run_chat(args)`` is what ``dsh-tui run`` (without ``--headless``) calls: a new session in the
current directory (or ``--root``), streaming in the chat screen.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

HELP = "open the app on the session browser"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", help="session root (default $DSH_HOME/sessions)")


def model_route(model: str | None = None) -> tuple[Any, str, str]:
    """(provider, model, hint): the configured model route, or (None, "", how to configure one)."""
    from dsh_tui.config import load_settings
    from dsh_tui.llm import registry

    try:
        settings = load_settings()
        problem = registry.credential_problem(settings)
        if problem is not None:
            return None, "", _one_line(f"No model configured: {problem} (or try `dsh-tui demo`)")
        provider = registry.build_provider(settings)
        name = model or registry.default_route(settings)[1]
    except Exception as err:  # noqa: BLE001 - shown in the status bar; the app still opens
        return None, "", _one_line(f"No model configured: {err}")
    return provider, name, ""


def credential_hint(settings: Any) -> str:
    """The "no model configured" hint when the default provider has no usable key, else "".

    Settings and credentials only (no provider, no httpx: ~1 ms), so the hint is on the first frame;
    the same words as ``model_route``. ``settings`` None: the settings file could not be read (its
    error is then reported by ``model_route`` in the thread)."""
    if settings is None:
        return ""
    from dsh_tui.config import SettingsError, find_api_key, missing_key_message

    # the rule of dsh_tui.llm.registry.credential_problem (which imports the provider and httpx);
    # tests/ui/test_app_startup.py checks both give the same answer
    try:
        ps = settings.provider(None)
        key = find_api_key(ps)
    except SettingsError as err:
        problem: str | None = str(err)
    else:
        problem = missing_key_message(ps) if key is None and ps.api_key_env is not None else None
    if problem is None:
        return ""
    return _one_line(f"No model configured: {problem} (or try `dsh-tui demo`)")


def _startup_settings() -> tuple[Any, Any]:
    """(UiSettings for the app, the config Settings or None): read once, before the app is built."""
    from dsh_tui.config import load_settings
    from dsh_tui.ui.settings import UiSettings

    try:
        backend = load_settings()
    except Exception:  # noqa: BLE001 - a broken settings file must not stop the app (model_route says why)
        return UiSettings(), None
    return UiSettings(backend), backend


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _root(args: argparse.Namespace) -> Path:
    if getattr(args, "root", None):
        return Path(args.root)
    from dsh_tui.paths import default_sessions_root

    return default_sessions_root()


def _cwd(args: argparse.Namespace) -> Path:
    """``--cwd`` (must be a directory) or the current directory."""
    value = getattr(args, "cwd", None)
    if not value:
        return Path.cwd()
    path = Path(value).expanduser()
    if not path.is_dir():
        from dsh_tui.session.errors import DshError

        raise DshError(f"--cwd is not a directory: {path}")
    return path.resolve()


def _chat_resolver(args: argparse.Namespace, cwd: Path) -> Any:
    """The route resolver of ``dsh-tui run`` (runs after the first paint, off the UI thread)."""

    def resolve() -> tuple[Any, str]:
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        if getattr(args, "replay", None):
            from dsh_tui.cli.run_cmd import _provider

            provider, model = _provider(args, cwd)
            hint = ""
        else:
            provider, model, hint = model_route(getattr(args, "model", None))
        if provider is None:
            return None, hint
        prompt = getattr(args, "prompt", None)
        spec = HarnessSpec(root=_root(args), cwd=cwd, provider=provider, model=model,
                           preset=getattr(args, "preset", None) or "workspace-write",
                           prompts=(prompt,) if isinstance(prompt, str) and prompt else (),
                           resume_id=getattr(args, "resume_id", None))
        return (lambda bridge: open_harness(bridge, spec)), ""

    return resolve


def run_chat(args: argparse.Namespace) -> int:
    """``dsh-tui run`` without ``--headless``: see ``chat_app``."""
    from dsh_tui.cli import gc_paused

    with gc_paused():
        chat_app(args).run_app()
    return 0


def chat_app(args: argparse.Namespace) -> Any:
    """A new session in the chat screen (``dsh-tui run`` without ``--headless``): ``--cwd``, ``--root``,
    ``--preset``, ``--model``, ``--replay`` and the prompt are honoured. The chat paints first; the model
    route (provider, httpx) is resolved right after, in a thread; without a usable key the status bar
    says so from the first frame and nothing is resolved."""
    from dsh_tui.ui.app import DshApp

    cwd = _cwd(args)
    replay = getattr(args, "replay", None)
    if replay and not Path(replay).is_file():
        from dsh_tui.session.errors import DshError

        raise DshError(f"replay log not found: {replay}")
    settings, backend = _startup_settings()
    hint = "" if replay else credential_hint(backend)
    roots = [_root(args)]  # the browser (Ctrl+B) lists the root this session is written to
    if hint:  # nothing to resolve: no model can be called (the status bar says why from the first frame)
        return DshApp(None, settings=settings, model_hint=hint, session_roots=roots)
    return DshApp(None, settings=settings, resolve=_chat_resolver(args, cwd), session_roots=roots)


def _browser_resolver(args: argparse.Namespace) -> Any:
    def resolve() -> tuple[Any, str]:
        provider, model, hint = model_route()
        if provider is None:
            return None, hint
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        spec = HarnessSpec(root=_root(args), cwd=Path.cwd(), provider=provider, model=model)
        return (lambda bridge: open_harness(bridge, spec)), ""

    return resolve


def browser_app(args: argparse.Namespace) -> Any:
    """The app of ``dsh-tui`` with no command: the session browser over the default root and ``--root``s."""
    from dsh_tui.ui.app import DshApp

    roots = [Path(r) for r in getattr(args, "app_roots", None) or []]
    if getattr(args, "root", None):
        roots.append(Path(args.root))
    settings, backend = _startup_settings()
    hint = credential_hint(backend)
    if hint:  # said once by a notice; nothing to resolve
        return DshApp(None, start="browser", session_roots=roots, settings=settings, model_hint=hint)
    return DshApp(None, start="browser", session_roots=roots, settings=settings, resolve=_browser_resolver(args))


def run(args: argparse.Namespace) -> int:
    from dsh_tui.cli import gc_paused

    with gc_paused():
        browser_app(args).run_app()
    return 0
