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
    assert ref["mediaType"] in ("image/png", "image/webp")  # a GIF is always re-encoded (dsh)
    assert attachments.object_path(ref).stat().st_mode & 0o777 == 0o600
