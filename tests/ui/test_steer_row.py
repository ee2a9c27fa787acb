"""A steered message shows at once (issue #26.12): a pinned "steering: …" row above the composer and a count in
the status bar, until the next step takes it (then it is the transcript's user message)."""

from __future__ import annotations

import threading

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Gate
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text


async def test_a_steer_shows_at_once_until_the_next_step_takes_it(tmp_path):
    gate = threading.Event()
    app = scripted_app(tmp_path, [
        [Gate(gate), *scripted.text("first step's answer")],  # a step that ends only when the test says so
        scripted.text("steered answer"),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "work on it")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "also check the README", key="ctrl+s")
        await wait_for(pilot, lambda: "steering: also check the README" in screen_text(app))
        assert "1 steering" in app.chat.status.build().plain
        assert not [u for u in items(app, "user") if "README" in str(getattr(u, "text", ""))]
        gate.set()
        await wait_for(pilot, lambda: not app.chat.running)
        await pilot.pause(0.1)
        assert "steering:" not in screen_text(app)
        assert "steering" not in app.chat.status.build().plain
