"""The typed settings tree's problems (unknown keys with their path, a value of the wrong type) are said once, in
a *Settings* notice after the app's first frame; the app opens as it always did (issue #28 item 5)."""

from __future__ import annotations

from dsh_tui.config import load_settings, settings_path
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from tests.ui.conftest import wait_for


async def test_unknown_keys_and_a_wrong_type_are_said_once_and_nothing_stops():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[ui]\ntheme = "dsh-dark"\nshow_time = "no"\nshwo_time = false\n[futurex]\non = true\n',
                    encoding="utf-8")
    app = DshApp(None, resolve=lambda: (None, ""), settings=UiSettings(load_settings()))
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: any(n.title == "Settings" for n in app._notifications), 30)
        await pilot.pause(0.2)
        (notice,) = [n for n in app._notifications if n.title == "Settings"]
        assert notice.message.splitlines() == ["ui.show_time must be true or false, not 'no'",
                                               "ui.shwo_time is not a setting (ignored)",
                                               "futurex is not a setting (ignored)"]
        assert notice.severity == "warning"
        assert app.theme == "dsh-dark" and app.chat is not None  # the app opened on its settings
        assert app.chat.state.show_time is True  # as before: the value is read as the app always read it
