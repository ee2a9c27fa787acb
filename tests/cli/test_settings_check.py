"""Settings silently accepted no more (issue 37, item 12): each bad value is one line on stderr and exit 1
(a bad command-line value: exit 2), before a terminal is taken or a request is sent. Real subprocesses, a
real settings file in the test's isolated config dir, a real HTTP server on 127.0.0.1 where one is needed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from dsh_tui.config import settings_path


def dsh(*argv: str, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", *argv], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, DEEPSEEK_API_KEY="sk-test"), cwd=cwd,
                          stdin=subprocess.DEVNULL)


def write_settings(text: str) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def one_line(p: subprocess.CompletedProcess, code: int = 1) -> str:
    assert p.returncode == code, (p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("dsh-tui: "), p.stderr
    assert "Traceback" not in p.stderr
    return p.stderr.strip()


LOCAL = '[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\n'


@pytest.mark.parametrize(("settings", "expected"), [
    ("deep = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("deep = " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32 levels"),
    ('[keymap]\n"chat.cardz" = "f6"\n', "keymap.chat.cardz is not a binding id (did you mean chat.cards?)"),
    ('[keymap]\n"chat.cards" = "ctrl+kk"\n', "keymap.chat.cards: unknown key 'kk'"),
    ('[keymap]\n"chat.cards" = "crtl+k"\n', "keymap.chat.cards: unknown modifier 'crtl' (did you mean ctrl?)"),
    ('[keymap]\n"chat.cards" = 5\n', "keymap.chat.cards must be a string of keys"),
    ('[privacy]\nsend_anonymous_user_id = "maybe"\n', "privacy.send_anonymous_user_id must be true or false"),
    ("models = [1, 2]\n", "models must be a list of model names"),
])
def test_a_bad_settings_file_is_one_line_for_run_and_for_the_app(tmp_path, settings, expected):
    write_settings(settings + LOCAL)
    headless = one_line(dsh("run", "--headless", "hi", "--root", str(tmp_path / "r"), cwd=tmp_path))
    assert expected in headless and str(settings_path()) in headless
    app = one_line(dsh("--root", str(tmp_path / "r"), cwd=tmp_path))  # refused before the terminal is taken
    assert expected in app


def test_an_unknown_theme_is_refused_by_the_app_with_the_nearest_name(tmp_path):
    write_settings('[ui]\ntheme = "dsh-drak"\n' + LOCAL)
    line = one_line(dsh("--root", str(tmp_path / "r"), cwd=tmp_path))
    assert "ui.theme 'dsh-drak' is not a theme (did you mean dsh-dark?)" in line


@pytest.mark.parametrize(("table", "expected"), [
    ('headers = { Authorization = "Bearer other" }', "providers.local.headers cannot set Authorization"),
    ('headers = { X-A = "1", x-a = "2" }', "names X-A and x-a"),
    ('headers = { X-Api-Key = "sk" }', "providers.local.headers cannot set X-Api-Key"),
    ("models = [1, 2]", "providers.local.models must be a list of model ids"),
    ("default_max_tokens = 1_000_000_000_000_000", "must be at most 100_000_000 tokens"),
    ('models = { m = { max_tokens = 9_000_000_000 } }', "must be at most 100_000_000 tokens"),
    ("retry = { max_retries = 1_000_000, initial_delay_ms = 0 }", "retry.max_retries must be at most 100"),
    ('retry = { mode = "always", initial_delay_ms = 0 }', "must be at least 100 with mode = \"always\""),
    ("retry = { max_delay_ms = 100_000_000 }", "retry.max_delay_ms must be at most 600000"),
])
def test_a_bad_provider_table_is_refused_before_any_request(tmp_path, table, expected):
    from tests.llm.sse_server import ScriptServer

    with ScriptServer() as srv:
        write_settings(LOCAL.replace("http://127.0.0.1:9", srv.base_url) + table + "\n")
        line = one_line(dsh("run", "--headless", "hi", "--root", str(tmp_path / "r"), cwd=tmp_path))
        assert srv.requests == []
    assert expected in line


def test_a_settings_header_replaces_the_built_in_one_of_the_same_name():
    from dsh_tui.llm.openai.provider import OpenAICompatProvider

    p = OpenAICompatProvider("x", "http://127.0.0.1:9/v1", lambda: "k", {}, extra_headers={"User-Agent": "gw/1"})
    headers = p._headers("k", {})
    assert [k for k in headers if k.lower() == "user-agent"] == ["user-agent"] and headers["user-agent"] == "gw/1"
    assert [k for k in headers if k.lower() == "authorization"] == ["authorization"]


@pytest.mark.parametrize("pace", ["-1", "nan", "inf", "11", "fast"])
def test_demo_pace_outside_0_to_10_seconds_is_a_usage_error(pace):
    line = one_line(dsh("demo", "--pace", pace), code=2)
    assert "argument --pace: must be" in line


def test_export_to_a_pipe_nobody_reads_is_refused_at_once_and_one_with_a_reader_works(tmp_path):
    from tests.store.test_catalog_support import make_header, user_turn, write_session

    root = tmp_path / "r"
    write_session(root, make_header("exp-1", "/w"), user_turn(0, 1, "hello", "world"))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    line = one_line(dsh("export", "exp-1", "--root", str(root), "-o", str(fifo), timeout=30))
    assert "is a pipe that no process is reading" in line
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))  # noqa: SIM115
    reader.start()
    try:
        p = dsh("export", "exp-1", "--root", str(root), "-o", str(fifo), timeout=30)
    finally:
        if reader.is_alive():  # unblock the reader whatever happened
            with open(fifo, "wb"):
                pass
        reader.join(10)
    assert p.returncode == 0, p.stderr
    assert b"hello" in got[0]
