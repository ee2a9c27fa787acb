"""``read_image`` (the ``images`` built-in) end to end: ``dsh-tui run --headless`` as a real subprocess against
the scripted model server on 127.0.0.1; the model reads a PNG and the next request carries the image —
as ``image_url`` parts on chat completions, as an ``image`` block on the Messages wire — or, for a model
that does not take images, dsh's refusal."""

from __future__ import annotations

import base64
import io
import json

import pytest

from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.mcp.helpers import call_chunks, run_headless, tool_messages, write_settings

PIL = pytest.importorskip("PIL.Image")
USAGE = {"prompt_tokens": 3, "completion_tokens": 1}
VISION = '[providers.local.models.m]\ninput_modalities = ["text", "image"]\n'


def _png(path, size, colour=(200, 30, 30)) -> None:
    PIL.new("RGB", size, colour).save(path)


def _decoded(url: str):
    head, data = url.split(",", 1)
    assert head.startswith("data:image/") and head.endswith(";base64")
    return PIL.open(io.BytesIO(base64.b64decode(data)))


def _read_image_turn(tmp_path, settings: str, path: str = "red.png"):
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(("c1", "read_image", {"file_path": path})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("a red square"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv, settings)
        p = run_headless(tmp_path, "what is in red.png?")
        return p, srv.requests


def test_read_image_puts_the_png_in_front_of_the_model_on_chat_completions(tmp_path):
    _png(tmp_path / "red.png", (64, 48))
    p, requests = _read_image_turn(tmp_path, VISION)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "a red square\n"
    first = requests[0]["body"]
    spec = next(t["function"] for t in first["tools"] if t["function"]["name"] == "read_image")
    assert spec["description"] == ("Read a PNG/JPEG/WebP/GIF file and return the image itself. Large images are "
                                   "downscaled automatically; do not install image libraries or create thumbnails "
                                   "to inspect an image.")
    body = requests[1]["body"]
    tool = tool_messages(requests[1])["c1"]
    assert tool.startswith(f"<path>{tmp_path / 'red.png'}</path>\n<type>image</type>\n<content>\nimage/png image, "
                           "64x48 px, ")
    assert 'Image "red.png" (sha256:' in tool
    # dsh-llm-deepseek: the tool result's images follow the tool messages in one user message
    after = body["messages"][-1]
    assert after["role"] == "user"
    assert after["content"][0] == {"type": "text", "text": "Attached image(s) from tool result:"}
    image = after["content"][1]
    assert image["type"] == "image_url"
    got = _decoded(image["image_url"]["url"])
    assert got.size == (64, 48) and got.getpixel((5, 5))[:3] == (200, 30, 30)


def test_a_large_image_is_downscaled_and_the_envelope_says_how_to_map_coordinates(tmp_path):
    _png(tmp_path / "red.png", (4096, 2048))  # twice dsh's 2048x2048-pixel budget
    p, requests = _read_image_turn(tmp_path, VISION)
    assert p.returncode == 0, p.stderr
    tool = tool_messages(requests[1])["c1"]
    assert "image/jpeg image, 2896x1448 px, " in tool  # re-encoded as dsh 0.2 does: opaque, so JPEG
    assert "(downscaled from 4096x2048 px; multiply coordinates by 1.41 to locate features in the original file)" \
        in tool
    got = _decoded(requests[1]["body"]["messages"][-1]["content"][1]["image_url"]["url"])
    assert got.size == (2896, 1448)


def test_a_text_only_model_gets_dshs_refusal_and_no_image(tmp_path):
    _png(tmp_path / "red.png", (64, 48))
    p, requests = _read_image_turn(tmp_path, "")
    assert p.returncode == 0, p.stderr
    assert tool_messages(requests[1])["c1"] == (
        'Error: cannot read "red.png" as an image: model "m" does not declare image input; switch to an '
        "image-capable model to read images")
    assert "image_url" not in json.dumps(requests[1]["body"])


def test_read_image_refusals_by_extension_and_content(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "fake").write_text("not an image")
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(("c1", "read_image", {"file_path": "notes.txt"}),
                                        ("c2", "read_image", {"file_path": "fake"}),
                                        ("c3", "read_image", {"file_path": "missing.png"})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv, VISION)
        p = run_headless(tmp_path, "look")
        assert p.returncode == 0, p.stderr
        got = tool_messages(srv.requests[1])
    assert got["c1"] == ('Error: cannot read "notes.txt": the .txt extension does not declare a supported image '
                         "format; read_image accepts PNG/JPEG/WebP/GIF files, including extension-less files in "
                         "those formats")
    assert got["c2"] == (f'Error: cannot read "{tmp_path / "fake"}": the file content is not a supported image '
                         "format; read_image accepts PNG/JPEG/WebP/GIF")
    assert got["c3"].startswith(f'Error: cannot read "{tmp_path / "missing.png"}": not found')


def test_the_images_plugin_is_on_by_default_and_can_be_turned_off(tmp_path):
    for extra, offered in (("", True), ("[plugins.images]\nenabled = false\n", False)):
        with ScriptServer() as srv:
            srv.push(sse_reply(chunk("hi"), chunk(finish="stop", usage=USAGE)))
            write_settings(srv, VISION + extra)
            p = run_headless(tmp_path, "hi")
            assert p.returncode == 0, p.stderr
            names = [t["function"]["name"] for t in srv.requests[0]["body"]["tools"]]
        assert ("read_image" in names) is offered and "read" in names


async def test_read_image_on_the_messages_wire_sends_an_image_block(tmp_path, monkeypatch):
    """dsh 0.2's route: DeepSeek's ``deepseek-flash`` takes images (dsh's catalog); the tool result carries
    the handle text and the image inline (``source.type: base64``)."""
    import uuid

    from dsh_tui.config import Settings
    from dsh_tui.llm.registry import build_provider
    from dsh_tui.runtime import Agent, AgentConfig
    from dsh_tui.runtime.plugins import BUILTINS, Plugins, PluginSpec
    from dsh_tui.session.headers import make_header
    from dsh_tui.session.log import Session
    from tests.llm.test_messages import KEY, text_reply, tool_reply

    _png(tmp_path / "red.png", (40, 30))
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    with ScriptServer() as srv:
        srv.push(tool_reply("t1", "read_image", '{"file_path": "red.png"}'), text_reply("red"))
        provider = build_provider(Settings({"providers": {"deepseek-official": {
            "base_url": srv.base_url, "api": "messages"}}}))
        session = Session(make_header(str(uuid.uuid4()), cwd=str(tmp_path)))
        agent = Agent(session, provider, [], config=AgentConfig(provider="deepseek-official", model="deepseek-flash",
                                                                cwd=str(tmp_path), runtime_context=False),
                      plugins=Plugins([PluginSpec("images", "builtin", obj=BUILTINS["images"])]))
        try:
            agent.followup("look at red.png")
            await agent.wait_idle()
            await agent.dispose()
        finally:
            await provider.aclose()
        second = srv.requests[1]["body"]
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "t1"
    text, handle, image = result["content"]
    assert text["text"].startswith(f"<path>{tmp_path / 'red.png'}</path>\n<type>image</type>\n<content>\n"
                                   "image/png image, 40x30 px, ")
    assert handle["text"].startswith('Image "red.png" (sha256:') and "request preview 40x30px." in handle["text"]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    assert PIL.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size == (40, 30)
