"""The chat's first frame styles each widget once: Textual styles widgets as they mount and then restyled the
whole pushed screen when it resumed (the same rules over the same nodes, ~1 % of the instructions to the
chat's first frame, issue #29). Later resumes restyle as Textual decides."""

from __future__ import annotations

from textual import events
from textual.screen import Screen

from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.textual_compat import skip_first_resume_restyle
from tests.ui.conftest import wait_for


async def test_the_chat_is_not_restyled_whole_when_first_shown(monkeypatch):
    restyled: list[str] = []
    update_node_styles = Screen.update_node_styles

    def counting(self, animate: bool = True) -> None:  # noqa: ANN001
        restyled.append(type(self).__name__)
        update_node_styles(self, animate=animate)

    monkeypatch.setattr(Screen, "update_node_styles", counting)
    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.chat is not None and app.chat.is_current and app.chat.composer.has_focus)
        await pilot.pause()
        assert "ChatScreen" not in restyled  # styled as its widgets mounted, not again whole
        composer = app.chat.composer
        assert composer.styles.border_title_align == "right"  # the chat's own rules are applied
        later = events.ScreenResume()  # a later resume keeps Textual's choice
        skip_first_resume_restyle(app.chat, later)
        assert later.refresh_styles
