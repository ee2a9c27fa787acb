"""``dsh-tui demo``: the offline tour on a temporary root; no API key, no network."""

from __future__ import annotations

import argparse

HELP = "offline tour on a temporary root; needs no API key and no network"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pace", type=_pace, default=0.02,
                        help="seconds between streamed pieces of the scripted model, 0 to 10 (default 0.02)")
    parser.add_argument("--root", help="keep the demo's sessions and workspace here instead of a temp dir")
    from dsh_tui.cli import add_plugin_arguments

    add_plugin_arguments(parser)


MAX_PACE = 10.0


def _pace(text: str) -> float:
    """``--pace``: a finite number of seconds from 0 to ``MAX_PACE`` (argparse makes a refusal one line, exit 2)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds from 0 to {MAX_PACE:g}, not {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_PACE:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_PACE:g} seconds, not {text}")
    return value


def run(args: argparse.Namespace) -> int:
    import os
    import tempfile
    from pathlib import Path

    from dsh_tui.demo import DEMO_MODEL, DEMO_PROMPTS, demo_provider, new_workspace
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.harness import HarnessSpec, open_harness

    os.environ["DSH_TUI_CHECK_REQUESTS"] = "1"  # the demo checks every request against its log
    base = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="dsh-tui-demo-"))
    try:
        workspace = new_workspace(base)  # never written over: a fresh workspace, workspace-2, ...
    except OSError as err:
        from dsh_tui.session.errors import DshError

        raise DshError(f"cannot create the demo workspace in {base}: {err.strerror or err}") from err
    spec = HarnessSpec(root=base / "sessions", cwd=workspace, provider=demo_provider(workspace, args.pace),
                       model=DEMO_MODEL, preset="full-access", prompts=DEMO_PROMPTS)
    from dsh_tui.cli import gc_paused

    with gc_paused():
        DshApp(lambda bridge: open_harness(bridge, spec), session_roots=[spec.root]).run_app()
    print(reopen_text(base, workspace))
    return 0


def reopen_text(base, workspace=None) -> str:
    """What the demo prints when it ends: where it left everything and the command that browses it."""
    import shlex

    sessions = shlex.quote(str(base / "sessions"))
    if workspace is not None and workspace.name != "workspace":
        return (f"dsh-tui demo: the session log is in {base / 'sessions'}, the workspace in {workspace}\n"
                f"Reopen its sessions with: dsh-tui --root {sessions}")
    return (f"dsh-tui demo: the session log and workspace are in {base}\n"
            f"Reopen its sessions with: dsh-tui --root {sessions}")
