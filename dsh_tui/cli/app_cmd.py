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


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _root(args: argparse.Namespace) -> Path:
    if getattr(args, "root", None):
        return Path(args.root)
    from dsh_tui.paths import default_sessions_root

    return default_sessions_root()


def run_chat(args: argparse.Namespace) -> int:
    """A new session in the chat screen (``dsh-tui run`` without ``--headless``)."""
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.harness import HarnessSpec, open_harness

    provider, model, hint = model_route(getattr(args, "model", None))
    prompt = getattr(args, "prompt", None)
    prompts = (prompt,) if isinstance(prompt, str) and prompt else ()
    if provider is None:
        app = DshApp(None, model_hint=hint)
    else:
        spec = HarnessSpec(root=_root(args), cwd=Path.cwd(), provider=provider, model=model, prompts=prompts,
                           resume_id=getattr(args, "resume_id", None))
        app = DshApp(lambda bridge: open_harness(bridge, spec))
    app.run()
    return 0


def run(args: argparse.Namespace) -> int:
    from dsh_tui.ui.app import DshApp

    provider, model, hint = model_route()
    roots = [args.root] if getattr(args, "root", None) else []
    if provider is None:
        app = DshApp(None, start="browser", model_hint=hint, session_roots=roots)
    else:
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        spec = HarnessSpec(root=_root(args), cwd=Path.cwd(), provider=provider, model=model)
        app = DshApp(lambda bridge: open_harness(bridge, spec), start="browser", session_roots=roots)
    app.run()
    return 0
