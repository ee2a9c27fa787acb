"""The request serializers with image blocks: a text-only route gets dsh's stand-in text (history kept when the
model changes), an image-capable one the stored image; an image whose stored object is gone degrades to the
stand-in instead of failing the request."""

from __future__ import annotations

import pytest

from dsh_tui.llm.messages.serialize import serialize_request as messages_request
from dsh_tui.llm.openai.serialize import serialize_request as chat_request
from dsh_tui.store import attachments

PIL = pytest.importorskip("PIL.Image")


def _history(ref: dict) -> dict:
    return {"config": {"model": "m"}, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "attachment": ref}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a square"}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]}]}


def _ref(tmp_path) -> dict:
    path = tmp_path / "sq.png"
    PIL.new("RGB", (10, 10), (1, 2, 3)).save(path)
    return attachments.save_image(path.read_bytes(), "image/png", "sq.png")


def test_a_text_only_route_sees_dshs_stand_in(tmp_path):
    ref = _ref(tmp_path)
    stand_in = f"[image omitted because this model accepts text only; attachment sha256:{ref['attachmentId'][7:15]}]"
    chat = chat_request(_history(ref))
    assert chat["messages"][0] == {"role": "user", "content": "look" + stand_in}
    msgs = messages_request(_history(ref))
    assert msgs["messages"][0]["content"] == [{"type": "text", "text": "look"}, {"type": "text", "text": stand_in}]


def test_an_image_route_gets_the_stored_image_and_a_lost_object_degrades(tmp_path):
    ref = _ref(tmp_path)

    def resolve(r):
        try:
            return attachments.request_image(r)
        except attachments.AttachmentError:
            return None

    chat = chat_request(_history(ref), images=resolve)
    parts = chat["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "image_url"]
    assert 'Normalized copy (read-only; may be resized or re-encoded): "' in parts[1]["text"]
    attachments.object_path(ref).unlink()
    chat = chat_request(_history(ref), images=resolve)
    assert chat["messages"][0]["content"].startswith("look[image omitted because this model accepts text only")
    msgs = messages_request(_history(ref), images=resolve)
    assert msgs["messages"][0]["content"][1]["text"].startswith("[image omitted because this model accepts text only")


def test_admission_refuses_what_dsh_refuses(tmp_path):
    with pytest.raises(attachments.AttachmentError) as err:
        attachments.save_image(b"not an image", "image/png")
    assert err.value.code == "INVALID_IMAGE"
    path = tmp_path / "a.jpg"
    PIL.new("RGB", (4, 4)).save(path, "PNG")
    with pytest.raises(attachments.AttachmentError) as err:
        attachments.save_image(path.read_bytes(), "image/jpeg")
    assert err.value.code == "IMAGE_TYPE_MISMATCH"
    wide = tmp_path / "wide.png"
    PIL.new("L", (9000, 1)).save(wide)
    with pytest.raises(attachments.AttachmentError) as err:
        attachments.save_image(wide.read_bytes(), "image/png")
    assert err.value.code == "IMAGE_DIMENSION_TOO_LARGE"
    gif = tmp_path / "a.gif"
    PIL.new("P", (5, 5)).save(gif)
    ref = attachments.save_image(gif.read_bytes(), "image/gif", "a.gif")
    assert ref["mediaType"] == "image/jpeg"  # a GIF is always re-encoded (dsh 0.2: JPEG unless transparent)
    assert attachments.object_path(ref).stat().st_mode & 0o777 == 0o600


def test_offload_counts_whole_quanta_of_the_oldest():
    mib = 1024 * 1024
    assert attachments.offload_count([mib] * 20) == 0
    assert attachments.offload_count([mib] * 21) == 10  # 1 MiB over: a 10 MiB step of the oldest
    assert attachments.offload_count([15 * mib, 10 * mib]) == 1
    assert attachments.offload_count([1] * 601) == 20  # one image over 600: a step of 20


async def test_the_oldest_images_are_left_out_when_a_request_passes_the_inline_budget(tmp_path, monkeypatch):
    """Three read images, a budget for about two: the oldest becomes dsh's offloaded text, the newer two go."""
    from dsh_tui.config import Settings
    from dsh_tui.llm.registry import build_provider
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-offload-0123456789abcdef")
    refs = []
    for i in range(3):
        path = tmp_path / f"i{i}.png"
        PIL.new("RGB", (10, 10), (i, i, i)).save(path)
        refs.append(attachments.save_image(path.read_bytes(), "image/png", path.name))
    newest_two = sum((r["bytes"] + 2) // 3 * 4 for r in refs[1:])  # base64
    monkeypatch.setattr(attachments, "MAX_INLINE_REQUEST_BYTES", newest_two)
    monkeypatch.setattr(attachments, "INLINE_OFFLOAD_QUANTUM", 1)
    messages = [{"role": "user", "content": [{"type": "text", "text": "see"},
                                             *({"type": "image", "attachment": r} for r in refs)]}]
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("ok"), chunk(finish="stop", usage={"prompt_tokens": 1, "completion_tokens": 1})))
        provider = build_provider(Settings({"providers": {"deepseek-official": {
            "base_url": srv.base_url, "models": {"v": {"input_modalities": ["text", "image"]}}}}}))
        try:
            async for _ in provider.stream({"config": {"provider": "deepseek-official", "model": "v"},
                                            "messages": messages}):
                pass
        finally:
            await provider.aclose()
        parts = srv.requests[0]["body"]["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "text", "image_url", "text", "image_url"]
    assert parts[1]["text"].startswith('[image omitted to fit request image limits; "i0.png" (sha256:')
    assert parts[1]["text"].endswith("Copy to a writable path ending in .png before editing.]")
