"""Slash commands in the chat: run on the harness thread, their output above the composer, actions (new,
fork, export, MCP panel) carried out here.

``CommandRunner`` is the chat screen's controller for them (``chat.commands``); the screen's handlers of
``CommandFinished`` / ``ShellFinished`` (posted from the harness thread) hand the results back to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen

# the built-in command names: a read-only view says that they need a live session
_KNOWN_COMMANDS = {"compact", "model", "permission", "title", "new", "fork", "export", "skills", "plugins", "mcp",
                   "help", "retry", "undo", "diff"}


class CommandOutput(VerticalScroll, can_focus=False):
    """A command's output above the composer: at most half the screen, scrolled (wheel, scrollbar) when
    longer, so the end of a long ``/help`` or ``/plugins`` stays reachable at 80x24. Never takes the focus
    from the composer."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.body = Static("", markup=False)

    def compose(self) -> Any:
        yield self.body

    def on_mount(self) -> None:
        # the first output arrives as the box is mounted, before its body's Mount: Textual drops the
        # layout request of a widget not mounted yet, and the body kept one row (the box never scrolled)
        self.body.refresh(layout=True)

    def update(self, text: str) -> None:
        self.body.update(text)
        self.scroll_home(animate=False, immediate=True)


class CommandFinished(Message):
    """A slash command's result (posted from the harness thread)."""

    def __init__(self, text: str, result: Any) -> None:
        super().__init__()
        self.text = text
        self.result = result


class ShellFinished(Message):
    """A ``!command``'s result (posted from the harness thread)."""

    def __init__(self, command: str, result: Any) -> None:
        super().__init__()
        self.command = command
        self.result = result


class CommandRunner:
    """Slash commands and ``!commands`` of one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat

    # -- slash commands ----------------------------------------------------------------------------
    def registry(self) -> Any:
        """The live session's command registry (None: no session, or a read-only view)."""
        harness = self.chat.bridge.harness
        return harness.commands() if harness is not None else None

    def run_command(self, text: str) -> bool:
        """Run ``text`` if it starts with a registered ``/command`` (True: it did, or it was refused and said
        why); False: the text is a prompt."""
        commands = self.registry()
        if commands is None or commands.match(text) is None:
            if self.chat.read_only and text.split(maxsplit=1)[0][1:] in _KNOWN_COMMANDS:
                self.chat.say("Commands need a live session: resume this one first (Enter on a prompt, or r in the "
                         "browser).")
                return True
            return self._refuse_unknown(text, commands)
        future = self.chat.bridge.call(lambda h: h.run_command(text))
        if future is None:
            self.chat.say("No session is open.")
            return True
        self.chat.composer.value = ""
        self.chat.say("")
        self.show_output(f"{text.split(maxsplit=1)[0]} …", error=False)
        screen = self.chat

        def done(fut: Any) -> None:  # on the harness thread: must not wait for the UI (post, never call)
            try:
                result = fut.result()
            except Exception as err:  # noqa: BLE001 - the bridge reports it as a notice too
                result = err
            screen.post_message(CommandFinished(text, result))

        future.add_done_callback(done)
        return True

    def run_shell(self, text: str) -> bool:
        """``!command``: run it as the user and show its output above the composer; the model gets both with
        the next prompt (``dsh_tui.runtime.shellmode``). True: handled (run, or refused with the reason)."""
        command = text[1:].strip()
        if not command:
            return False
        if self.chat.read_only or self.chat.bridge.harness is None or not self.chat.bridge.harness.live():
            self.chat.say("! runs a command in a live session: resume this one first.")
            return True
        future = self.chat.bridge.call(lambda h: h.shell(command))
        if future is None:
            self.chat.say("No session is open.")
            return True
        self.chat.composer.value = ""
        self.chat.say("")
        self.show_output(f"$ {command} …", error=False)
        screen = self.chat

        def done(fut: Any) -> None:  # on the harness thread: post, never call
            try:
                result = fut.result()
            except Exception as err:  # noqa: BLE001 - the bridge reports it as a notice too
                result = err
            screen.post_message(ShellFinished(command, result))

        future.add_done_callback(done)
        return True

    def shell_done(self, command: str, result: Any) -> None:
        if result is None or isinstance(result, BaseException):
            self.show_output(f"$ {command} failed: {result or 'see the notice'}", error=True)
            return
        self.show_output(result.display() + "\n(the model gets this with your next message)",
                          error=bool(result.exit_code) or result.timed_out)

    def _refuse_unknown(self, text: str, commands: Any) -> bool:
        """``/name`` that is neither a command nor a skill: say so and suggest the nearest names, never send it
        to the model (True). False: not a ``/name`` at all, or a skill's (the text is a prompt)."""
        import difflib

        from dsh_tui.runtime.commands import parse

        parsed = parse(text)
        if parsed is None or commands is None:
            return False
        skills = [name for name, _help in self.chat.completer.read_skills()]
        if parsed[0] in skills:
            return False
        names = [c.name for c in commands.sorted()] + skills
        near = difflib.get_close_matches(parsed[0], names, n=2, cutoff=0.6)
        hint = f" Did you mean {' or '.join('/' + n for n in near)}?" if near else " /help lists the commands."
        self.show_output(f"Unknown command /{parsed[0]}.{hint} (Not sent: start the line with a space to send "
                          "it as text.)", error=True)
        return True

    def show_output(self, text: str, *, error: bool) -> None:
        """A command's output, above the composer (UI text: never sent to the model). Esc or the next
        send hides it."""
        self.chat.ensure_mounted(self.chat.command_output)
        self.chat.command_output.update(text)
        self.chat.command_output.set_class(error, "-error")
        self.chat.command_output.display = bool(text)

    def command_done(self, text: str, result: Any) -> None:
        if result is None or isinstance(result, BaseException):
            self.show_output(f"{text.split(maxsplit=1)[0]} failed: {result or 'see the notice'}", error=True)
            return
        action = result.action or {}
        kind = action.get("kind")
        if kind == "mcp" and hasattr(self.chat.app, "action_mcp"):  # the panel shows the servers live
            self.show_output("", error=False)
            self.chat.app.action_mcp()
            return
        self.show_output(result.text, error=result.kind == "error")
        if kind == "undo":
            from dsh_tui.ui.screens.undo import confirm_undo

            confirm_undo(self.chat, result.text, action)
        elif kind == "export":
            self._export(action.get("format", "md"))
        elif kind in ("new", "fork") and hasattr(self.chat.app, "open_from_command"):
            self._open_from_command(self.chat.bridge.harness, action)

    def _open_from_command(self, harness: Any, action: dict[str, Any]) -> None:
        app: Any = self.chat.app  # the DshApp
        problem = app.open_from_command(harness, action)
        if problem:
            self.show_output(problem, error=True)

    def _export(self, fmt: str) -> None:
        from pathlib import Path

        from dsh_tui.export import default_filename, to_html, to_markdown

        harness = self.chat.bridge.harness
        if harness is None:
            return
        cwd = Path(harness.cwd() or ".")
        path = cwd / default_filename(harness.session_id() or "session", fmt)
        render = to_markdown if fmt == "md" else to_html
        try:
            path.write_text(render(harness.header() or {}, harness.events()), encoding="utf-8")
        except OSError as err:
            self.show_output(f"Export failed: {err}", error=True)
            return
        self.show_output(f"Exported to {path}", error=False)
