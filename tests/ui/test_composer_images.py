"""Images in the composer, end to end: the app with the real harness and the real chat-completions provider
against the scripted server on 127.0.0.1. ``@blue.png``, a dropped path (``my\\ shot.png``, quoted, a
``file://`` URI) go with the prompt as image attachments; the transcript names each with its size; a
text-only model is refused before anything is sent, and the text stays in the composer."""

from __future__ import annotations

import base64

import pytest

from dsh_tui.config import Settings
from dsh_tui.extensions.images.prompt import find_images
from dsh_tui.llm.registry import build_provider
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.ui.conftest import items, submit, wait_for

PIL = pytest.importorskip("PIL.Image")


def test_find_images_reads_mentions_quotes_escapes_and_file_uris(tmp_path):
    for name in ("a.png", "my shot.png", "c.jpeg"):
        PIL.new("RGB", (4, 4)).save(tmp_path / name)
    (tmp_path / "notes.txt").write_text("x")
    text = (f"look @a.png and '{tmp_path}/my shot.png' then file://{tmp_path}/c.jpeg, "
            f"{tmp_path}/my\\ shot.png @missing.png notes.txt a.png.")
    assert find_images(text, tmp_path) == [tmp_path / "a.png", tmp_path / "my shot.png", tmp_path / "c.jpeg"]
    assert find_images('@"my shot.png"', tmp_path) == [tmp_path / "my shot.png"]
    assert find_images("no images here", tmp_path) == []


async def test_an_image_named_in_the_composer_goes_with_the_prompt(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-composer-images-0123456789")
    ws = tmp_path / "ws"
    ws.mkdir()
    PIL.new("RGB", (32, 20), (30, 90, 200)).save(ws / "blue.png")
    PIL.new("RGB", (10, 10), (250, 200, 0)).save(ws / "my shot.png")
    with ScriptServer() as srv:
        provider = build_provider(Settings({"providers": {"deepseek-official": {
            "base_url": srv.base_url, "models": {"vision": {"input_modalities": ["text", "image"]},
                                                 "plain": {}}}}}))
        spec = HarnessSpec(root=tmp_path / "sessions", cwd=ws, provider=provider, model="vision",
                           preset="full-access")
        app = DshApp(lambda bridge: open_harness(bridge, spec),
                     settings=UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": False}))
        usage = {"prompt_tokens": 3, "completion_tokens": 1}
        srv.push(sse_reply(chunk("blue"), chunk(finish="stop", usage=usage)),
                 sse_reply(chunk("yellow"), chunk(finish="stop", usage=usage)),
                 sse_reply(chunk("as text"), chunk(finish="stop", usage=usage)))
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                await wait_for(pilot, lambda: app.bridge.harness is not None)
                session = app.bridge.harness.session
                ends = lambda: sum(1 for e in session.events if e["type"] == "turn/end")  # noqa: E731
                await submit(pilot, "what is in @blue.png ?")
                await wait_for(pilot, lambda: ends() == 1, timeout=30)
                await submit(pilot, f"{ws}/my\\ shot.png and this")  # a file dropped on the terminal
                await wait_for(pilot, lambda: ends() == 2, timeout=30)
                await pilot.pause(0.1)
                users = [i.text for i in items(app, "user")]
                assert users[0] == "what is in @blue.png ?\n[blue.png, 32x20, " + users[0].split(", ")[-1]
                assert users[0].endswith(" B]")
                assert users[1].endswith("\n[my shot.png, 10x10, " + users[1].split(", ")[-1])
                # a text-only model: told before sending, nothing sent, the text stays
                app.bridge.harness.agent.config.model = "plain"
                n = len(srv.requests)
                await submit(pilot, "and @blue.png again")
                await pilot.pause(0.2)
                assert app.chat.composer.text == "and @blue.png again"
                note = str(app.chat.note.render())
                assert 'Not sent: model "plain" does not declare image input (blue.png).' in note
                assert len(srv.requests) == n and ends() == 2
                assert "Enter again sends the text without it." in note
                # Enter again: the text goes alone
                await submit(pilot, "and @blue.png again")
                await wait_for(pilot, lambda: ends() == 3, timeout=30)
                last = [m for m in srv.requests[-1]["body"]["messages"] if m["role"] == "user"]
                assert {"role": "user", "content": "and @blue.png again"} in last
                n = len(srv.requests)
                # an image over dsh's 20 MiB limit: told before sending too
                with open(ws / "huge.png", "wb") as fh:
                    fh.truncate(21 * 1024 * 1024)
                app.bridge.harness.agent.config.model = "vision"
                await submit(pilot, "and huge.png")
                await pilot.pause(0.2)
                assert "Not sent: huge.png is larger than 20 MiB" in str(app.chat.note.render())
                assert app.chat.composer.text == "and huge.png" and len(srv.requests) == n
                (ws / "fake.png").write_text("not an image")
                await submit(pilot, "and fake.png")
                await pilot.pause(0.2)
                assert "Not sent: fake.png is not a PNG, JPEG, WebP or GIF image." in str(app.chat.note.render())
                assert app.chat.composer.text == "and fake.png" and len(srv.requests) == n
        finally:
            await provider.aclose()
    first = [m for m in srv.requests[0]["body"]["messages"] if m["role"] == "user"][0]["content"]
    assert first[0] == {"type": "text", "text": "what is in @blue.png ?"}
    assert first[1]["text"].startswith('\nImage "blue.png" (sha256:') and "request preview 32x20px" in first[1]["text"]
    url = first[2]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == (ws / "blue.png").read_bytes()
    second = [m for m in srv.requests[1]["body"]["messages"] if m["role"] == "user"][-1]["content"]
    assert [p["type"] for p in second] == ["text", "text", "image_url"]


async def test_with_the_images_plugin_off_a_prompt_naming_an_image_goes_as_text(tmp_path, monkeypatch):
    from dsh_tui.config import settings_path

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-composer-images-0123456789")
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text("[plugins.images]\nenabled = false\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    PIL.new("RGB", (4, 4)).save(ws / "blue.png")
    with ScriptServer() as srv:
        provider = build_provider(Settings({"providers": {"deepseek-official": {
            "base_url": srv.base_url, "models": {"plain": {}}}}}))
        spec = HarnessSpec(root=tmp_path / "sessions", cwd=ws, provider=provider, model="plain", preset="full-access")
        app = DshApp(lambda bridge: open_harness(bridge, spec),
                     settings=UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": False}))
        srv.push(sse_reply(chunk("ok"), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})))
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                await wait_for(pilot, lambda: app.bridge.harness is not None)
                session = app.bridge.harness.session
                await submit(pilot, "what is in @blue.png ?")
                await wait_for(pilot, lambda: any(e["type"] == "turn/end" for e in session.events), timeout=30)
        finally:
            await provider.aclose()
        body = srv.requests[0]["body"]
    assert {"role": "user", "content": "what is in @blue.png ?"} in body["messages"]
    assert "read_image" not in {t["function"]["name"] for t in body["tools"]}
