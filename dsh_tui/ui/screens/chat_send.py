"""The chat's send flow: Enter (or the steer key) on the composer's text — a slash command, a ``!command``,
a follow-up queued while a turn runs, a steer into it, or a prompt sent now; what cannot be sent says why
above the composer and stays there (no session yet, a read-only view, images the model does not take)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_tui.ui.bridge import SessionBackend
    from dsh_tui.ui.screens.chat import ChatScreen


class SendFlow:
    """Sends, queues or steers one chat screen's composer text (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.image_refused: str | None = None  # a prompt held back for its images: sent as text if sent again

    def send(self, text: str, mode: str) -> bool:
        """Hand ``text`` to the harness; False (and the reason above the composer) when it cannot be."""
        chat = self.chat
        bridge = chat.bridge
        harness = bridge.harness
        if harness is None:
            # starting: the harness thread runs, or the app still resolves the model route (a thread after
            # the first paint) and will start it
            starting = bridge.loop is not None or getattr(chat.app, "resolve", None) is not None
            if starting and bridge.start_error is None:
                chat.send_on_attach = True  # the session is starting: sent as soon as it is attached
                chat.say("Starting the session… your message is sent when it is ready.")
            else:
                chat.say(chat.model_hint or chat.status.info.notice or "No session is open.")
            return False
        if chat.read_only:
            if chat.resume is None:
                chat.say(harness.read_only_reason
                         or "This is a read-only view: resume the session from the browser (r) to continue.")
                return False
            problem = chat.resume(text)
            if problem:
                chat.say(problem)
            return False  # the text goes to the resumed chat; this view keeps it too
        attach = True
        problem = self.image_problem(harness, text)
        if problem:
            if self.image_refused != text:
                self.image_refused = text
                chat.say(f"{problem} Enter again sends the text without it.")
                return False  # told before sending: the text stays in the composer
            attach = False  # the same text again: sent as text only
        self.image_refused = None
        chat.say("")
        if chat.command_output.is_attached:
            chat.command_output.display = False
        chat.status.info.notice = ""
        bridge.send(text, mode, images=attach)
        if mode == "steer" and chat.running:
            chat.steering.steered(text)
        chat.transcript.back_to_bottom()  # follow what was just sent
        if mode == "followup" and not chat.running:
            chat.set_running(True)
            chat.status.set_phase("waiting")
        return True

    @staticmethod
    def image_problem(harness: SessionBackend, text: str) -> str:
        """Why the image files ``text`` names cannot be sent to the current model, or ""."""
        if not harness.live() or ("." not in text) or not harness.images_enabled():
            return ""
        from dsh_tui.extensions.images.prompt import find_images

        images = find_images(text, harness.cwd() or ".")
        if not images:
            return ""
        from dsh_tui.store.attachments import MAX_IMAGE_BYTES, sniff

        for path in images:  # what a stat and 12 bytes tell; decoding happens off the UI thread
            try:
                big = path.stat().st_size > MAX_IMAGE_BYTES
                with open(path, "rb") as fh:
                    kind = sniff(fh.read(12))
            except OSError:
                big, kind = False, None
            if big:
                return f"Not sent: {path.name} is larger than 20 MiB, the limit for one image."
            if kind is None:
                return f"Not sent: {path.name} is not a PNG, JPEG, WebP or GIF image."
        model, ok = harness.image_route()
        if ok:
            return ""
        names = ", ".join(p.name for p in images)
        return (f'Not sent: model "{model}" does not declare image input ({names}). Switch to an image-capable '
                f"model (/model), or")

    def submit(self, alternate: bool = False, submitted: str | None = None) -> None:
        """Enter (``alternate``: the steer key): send, queue or steer the composer's text.

        ``submitted``: the text when Enter was pressed; keys typed after it (in the same burst, before this
        runs) stay in the composer for the next message. The text leaves the composer only when it was
        sent or queued."""
        chat = self.chat
        composer = chat.composer
        whole = composer.text
        if submitted is None or not whole.startswith(submitted):
            submitted = whole
        rest = whole[len(submitted):]
        text = composer.expand_pastes(submitted).strip()  # collapsed pastes go whole
        if not text and not chat.read_only:
            return
        chat.completer.hide()
        if submitted.startswith("/") and chat.commands.run_command(submitted):
            return
        if submitted.startswith("!") and chat.commands.run_shell(text):
            return
        steer = chat.enter_steers != alternate
        if chat.running and not steer:
            composer.value = rest
            chat.steering.enqueue(text)
            return
        if self.send(text, "steer" if chat.running else "followup"):
            composer.value = rest
        elif chat.send_on_attach:
            # the session is starting: the message waits in the queue (the first goes when the session is
            # ready, the next ones as each turn ends) and the composer is free for the next one
            composer.value = rest
            chat.steering.enqueue(text)
