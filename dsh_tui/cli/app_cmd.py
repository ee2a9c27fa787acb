"""``dsh-tui`` with no command: the full-screen app (session browser, or chat when no browser).

``run_chat(args)`` is what ``dsh-tui run`` (without ``--headless``) calls: a new session in the
current directory (or ``--root``), streaming in the chat screen.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dsh_tui.llm.route import credential_hint, model_route  # noqa: F401 - the CLI's names for them

HELP = "open the app on the session browser"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", help="session root (default $DSH_HOME/sessions)")


def first_run_notice() -> str:
    """The notice of the first run that sends DeepSeek the anonymous id (which it creates), else ""."""
    from dsh_tui.config import load_settings
    from dsh_tui.llm import registry

    try:
        return registry.anonymous_id_notice(load_settings())
    except Exception:  # noqa: BLE001 - a notice must never stop the app
        return ""


def _startup_settings() -> tuple[Any, Any]:
    """(UiSettings for the app, the config Settings): read once, before the app is built. A settings file
    that cannot be read or fails its checks (``dsh_tui.config.check``: junk ``[keymap]``, nesting, ...) is a
    ``SettingsError``: one line, exit 1, before the terminal is taken. A broken provider table is not: the
    app opens and the status bar says why (``model_route``)."""
    from dsh_tui.config import load_settings
    from dsh_tui.ui.settings import UiSettings

    backend = load_settings()
    return UiSettings(backend), backend


def checked(app: Any) -> Any:
    """``app`` once its settings' ``ui.theme`` names a theme it has (else a one-line ``SettingsError``)."""
    from dsh_tui.config import SettingsError, settings_path
    from dsh_tui.config.check import check_theme

    try:
        check_theme(app.settings.ui.theme, app.available_themes)
    except SettingsError as err:
        raise SettingsError(f"{settings_path()}: {err}") from None
    return app


def _root(args: argparse.Namespace) -> Path:
    if getattr(args, "root", None):
        return Path(args.root)
    from dsh_tui.paths import default_sessions_root

    return default_sessions_root()


def _cwd(args: argparse.Namespace) -> Path:
    """``--cwd`` (must be a directory) or the current directory."""
    import os

    from dsh_tui.cli import require_text

    value = getattr(args, "cwd", None)
    prompt = getattr(args, "prompt", None)
    if prompt:
        require_text(prompt, "the prompt")
    if not value:
        path = Path.cwd()
    else:
        path = Path(value).expanduser()
        if not path.is_dir():
            from dsh_tui.session.errors import DshError

            raise DshError(f"--cwd is not a directory: {path}")
        path = path.resolve()
    require_text(str(path), f"the working directory {os.fsencode(path).decode('utf-8', 'backslashreplace')}")
    return path


def _chat_resolver(args: argparse.Namespace, cwd: Path) -> Any:
    """The route resolver of ``dsh-tui run`` (runs after the first paint, off the UI thread)."""

    def resolve() -> tuple[Any, str] | tuple[Any, str, str]:  # (factory, hint[, first-run notice])
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        if getattr(args, "replay", None):
            from dsh_tui.llm.replay import replay_provider

            provider, model = replay_provider(args.replay, cwd, getattr(args, "model", None))
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
        return (lambda bridge: open_harness(bridge, spec)), "", first_run_notice()

    return resolve


def run_chat(args: argparse.Namespace) -> int:
    """``dsh-tui run`` without ``--headless``: see ``chat_app``."""
    return run_and_hint(chat_app(args))


def run_and_hint(app: Any) -> int:
    """Run the app; once it has quit and the terminal is restored, print how to continue the session it
    had open (``dsh-tui resume ID``) on standard output."""
    from dsh_tui.cli import gc_paused

    with gc_paused():
        app.run_app()
    hint = app.resume_hint()
    if hint:
        print(hint, flush=True)
    return 0


def chat_app(args: argparse.Namespace) -> Any:
    """A new session in the chat screen (``dsh-tui run`` without ``--headless``): ``--cwd``, ``--root``,
    ``--preset``, ``--model``, ``--replay`` and the prompt are honoured. The chat paints first; the model
    route (provider, httpx) is resolved right after, in a thread; without a usable key the status bar
    says so from the first frame and nothing is resolved."""
    from dsh_tui.cli import require_root
    from dsh_tui.ui.app import DshApp

    cwd = _cwd(args)
    require_root(getattr(args, "root", None))
    replay = getattr(args, "replay", None)
    if replay and not Path(replay).is_file() and not (Path(replay) / "session.jsonl").is_file() \
            and not (Path(replay) / "replay.override.json").is_file():
        from dsh_tui.session.errors import DshError

        raise DshError(f"replay log not found: {replay}")
    settings, backend = _startup_settings()
    hint = "" if replay else credential_hint(backend)
    roots = [_root(args)]  # the browser (Ctrl+B) lists the root this session is written to
    if hint:  # nothing to resolve: no model can be called (the status bar says why from the first frame)
        return checked(DshApp(None, settings=settings, model_hint=hint, session_roots=roots))
    return checked(DshApp(None, settings=settings, resolve=_chat_resolver(args, cwd), session_roots=roots))


def _browser_resolver(args: argparse.Namespace) -> Any:
    def resolve() -> tuple[Any, str] | tuple[Any, str, str]:  # (factory, hint[, first-run notice])
        provider, model, hint = model_route()
        if provider is None:
            return None, hint
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        spec = HarnessSpec(root=_root(args), cwd=Path.cwd(), provider=provider, model=model)
        return (lambda bridge: open_harness(bridge, spec)), "", first_run_notice()

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
        return checked(DshApp(None, start="browser", session_roots=roots, settings=settings, model_hint=hint))
    return checked(DshApp(None, start="browser", session_roots=roots, settings=settings, resolve=_browser_resolver(args)))


def run(args: argparse.Namespace) -> int:
    return run_and_hint(browser_app(args))
