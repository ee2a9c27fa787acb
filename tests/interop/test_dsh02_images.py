"""``read_image`` through dsh 0.2 (the real ``dsh`` command from PyPI) and through dsh-tui on the Messages wire,
each against a scripted server on 127.0.0.1, with DeepSeek's image-capable ``deepseek-flash``: the request
after the call carries the same tool result — dsh's envelope text, its handle text and the image itself
(the same bytes; the handle names the stored copy under ``$DSH_HOME/attachments/v1``) — and both offer ``read_image`` with the same description and schema."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest

from tests.interop.test_dsh02_messages import KEY, dsh02  # noqa: F401 - the fixture
from tests.llm.sse_server import ScriptServer
from tests.llm.test_messages import text_reply, title, tool_reply
from tests.llm.test_provider_harness import _env

pytestmark = pytest.mark.interop
PIL = pytest.importorskip("PIL.Image")


def _run(cmd: list[str], tmp_path, name: str, settings: str | None, size: tuple[int, int] = (48, 32)) -> list[dict]:
    work = tmp_path / name / "ws"
    work.mkdir(parents=True)
    PIL.new("RGB", size, (200, 30, 30)).save(work / "red.png")
    env = _env(tmp_path / name, DEEPSEEK_API_KEY=KEY)
    if settings is not None:
        conf = tmp_path / name / "config" / "dsh-tui"
        conf.mkdir(parents=True)
        (conf / "settings.toml").write_text(settings)
    os.makedirs(env["DSH_HOME"], exist_ok=True)
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(tool_reply("toolu_i", "read_image", '{"file_path": "red.png"}'), text_reply("A red box."))
        env["DEEPSEEK_BASE_URL"] = server.base_url
        out = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().endswith("A red box."), out.stdout
        requests = list(server.requests)
    for r in requests:
        r["work"] = str(tmp_path / name)
    return requests


def test_read_image_sends_the_same_tool_result_as_dsh02(dsh02, tmp_path):  # noqa: F811
    prompt = "what is in red.png?"
    peer = _run([dsh02, "--profile", "headless", prompt], tmp_path, "dsh02", None)
    ours = _run([sys.executable, "-m", "dsh_tui", "run", "--headless", prompt], tmp_path, "dsh-tui",
                '[default]\nmodel = "deepseek-flash"\n[providers.deepseek-official]\napi = "messages"\n')
    tool = {t["name"]: t for t in ours[0]["body"]["tools"]}["read_image"]
    assert tool == {t["name"]: t for t in peer[0]["body"]["tools"]}["read_image"]

    def result(requests: list[dict]) -> list[dict]:
        last = requests[1]["body"]["messages"][-1]
        (block,) = [b for b in last["content"] if b["type"] == "tool_result"]
        work = requests[1]["work"]
        out = []
        for part in block["content"]:
            if part["type"] == "text":
                out.append({"type": "text", "text": part["text"].replace(work, "RUN")})
            else:
                out.append({**part, "source": {**part["source"], "data": base64.b64decode(part["source"]["data"])}})
        return out

    assert result(ours) == result(peer)


def test_a_large_image_gets_deepseeks_request_size_as_in_dsh02(dsh02, tmp_path):  # noqa: F811
    """1920x1080 fits the stored 2048x2048 budget but not DeepSeek's 1,024-token grid: both send a smaller request
    image of the same dimensions, named the same way (the encoders differ: sharp there, Pillow here)."""
    prompt = "what is in red.png?"
    peer = _run([dsh02, "--profile", "headless", prompt], tmp_path, "dsh02", None, (1920, 1080))
    ours = _run([sys.executable, "-m", "dsh_tui", "run", "--headless", prompt], tmp_path, "dsh-tui",
                '[default]\nmodel = "deepseek-flash"\n[providers.deepseek-official]\napi = "messages"\n', (1920, 1080))

    def parts(requests: list[dict]) -> tuple[list[str], tuple[int, int]]:
        last = requests[1]["body"]["messages"][-1]
        (block,) = [b for b in last["content"] if b["type"] == "tool_result"]
        texts = [p["text"].replace(requests[1]["work"], "RUN") for p in block["content"] if p["type"] == "text"]
        (image,) = [p for p in block["content"] if p["type"] == "image"]
        import io

        return texts, PIL.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size

    mine, theirs = parts(ours), parts(peer)
    assert mine == theirs
    assert "request preview 1708x961px" in mine[0][1]


def test_a_downscaled_read_is_described_as_dsh02_describes_it(dsh02, tmp_path):  # noqa: F811
    """4096x2048 is over the stored 2048x2048-pixel budget: both store 2896x1448 and tell the model how to map
    coordinates back (the encoded byte counts differ: sharp there, Pillow here)."""
    import re

    prompt = "what is in red.png?"
    peer = _run([dsh02, "--profile", "headless", prompt], tmp_path, "dsh02", None, (4096, 2048))
    ours = _run([sys.executable, "-m", "dsh_tui", "run", "--headless", prompt], tmp_path, "dsh-tui",
                '[default]\nmodel = "deepseek-flash"\n[providers.deepseek-official]\napi = "messages"\n', (4096, 2048))

    def envelope(requests: list[dict]) -> str:
        last = requests[1]["body"]["messages"][-1]
        (block,) = [b for b in last["content"] if b["type"] == "tool_result"]
        text = block["content"][0]["text"].replace(requests[1]["work"], "RUN")
        return re.sub(r"px, \d+ bytes", "px, N bytes", text)

    assert envelope(ours) == envelope(peer)
    assert "image/jpeg image, 2896x1448 px, N bytes (downscaled from 4096x2048 px; multiply coordinates by 1.41" \
        in envelope(ours)
