"""Slash commands, skills and ``@file`` completion in the composer (issue #18), on the real app and harness with a
scripted model. Driven by hand in tmux as well (see the issue)."""

from __future__ import annotations

import pytest

from dsh_tui.extensions.filerefs import SECTION_TEXT
from dsh_tui.llm import scripted
from tests.ui.conftest import log_types, scripted_app, wait_for
from tests.ui.screen_text import screen_text


@pytest.fixture(autouse=True)
def _no_user_skills(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home" / ".dsh"))
    monkeypatch.setenv("DSH_AGENTS_HOME", str(tmp_path / "home" / ".agents"))


def _footers(app) -> int:
    return sum(1 for i in app.chat.fold.items if i.kind == "footer")


def _events(app, kind: str) -> list[dict]:
    return [e for e in app.bridge.harness.session.events if e["type"] == kind]


async def _type(pilot, text: str) -> None:
    for ch in text:
        await pilot.press(ch)
    await pilot.pause()


def _opened(app, previous) -> bool:
    """A new chat replaced ``previous``, is composed and has its session."""
    return app.chat is not previous and hasattr(app.chat, "composer") and app.chat.attached \
        and app.bridge.harness is not None


def _labels(app) -> list[str]:
    return [c.label for c in app.chat.completion.candidates] if app.chat.completion.shown else []


async def test_slash_at_column_0_lists_every_command_with_its_help_and_tab_completes(tmp_path):
    skills = tmp_path / "ws" / ".dsh" / "skills" / "deploy"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it\n---\nShip.\n")
    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _type(pilot, "/")
        assert _labels(app) == ["/compact", "/diff", "/export", "/fork", "/goal", "/help", "/hooks", "/mcp", "/model",
                                "/new", "/permission", "/plan", "/plugins", "/retry", "/skills", "/title", "/undo",
                                "/deploy"]
        text = screen_text(app)
        assert "/compact" in text and "Summarize the history so far to free context" in text
        await _type(pilot, "ti")
        assert _labels(app) == ["/title"]
        await pilot.press("tab")
        assert app.chat.composer.value == "/title "
        assert not app.chat.completion.shown
        await pilot.press("escape")
        app.chat.composer.value = "x /"  # not at column 0: no list
        await pilot.pause()
        assert _labels(app) == []


async def test_running_title_and_compact_from_the_composer(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("first answer " * 60), scripted.text("second answer " * 60),
                                  scripted.text("Summary."), scripted.text("after")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        for n, prompt in enumerate(("first question " * 40, "second question " * 40), 1):
            app.chat.composer.value = prompt
            await pilot.press("enter")
            await wait_for(pilot, lambda n=n: _footers(app) == n)
        await _type(pilot, "/title Fix the parser")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(_events(app, "command/done")) == 1)
        await pilot.pause()
        title = _events(app, "session/title")[-1]["data"]
        assert title == {"title": "Fix the parser", "messageSeqs": [], "source": {"kind": "user"}}
        assert "Title: Fix the parser" in screen_text(app)
        assert app.chat.composer.value == ""
        await _type(pilot, "/compact")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(_events(app, "command/done")) == 2)
        await pilot.pause()
        done = _events(app, "command/done")[-1]["data"]
        summary = _events(app, "compaction/summary")[-1]
        assert done["kind"] == "success" and done["sourceEventSeq"] == summary["seq"]
        assert done["text"] in screen_text(app) and done["text"].startswith("Compacted ")
        assert [e["data"]["name"] for e in _events(app, "command/run")] == ["title", "compact"]
        # the next turn's request: no command text reached the model
        app.chat.composer.value = "third"
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 3)
        sent = str(app.bridge.harness.session.messages_view())
        assert "Fix the parser" not in sent and "Compacted" not in sent
        assert "command/run" in log_types(app)


async def test_at_completion_quotes_a_path_with_spaces_and_the_mention_stays_text(tmp_path):
    docs = tmp_path / "ws" / "my docs"
    docs.mkdir(parents=True)
    (docs / "read me.txt").write_text("hello\n")
    (tmp_path / "ws" / "node_modules").mkdir()
    (tmp_path / "ws" / "node_modules" / "my-lib.js").write_text("x")
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _type(pilot, "see @my")
        await wait_for(pilot, lambda: _labels(app) == ["my docs/", "my docs/read me.txt"])
        await pilot.press("tab")
        assert app.chat.composer.value == 'see @"my docs/'  # a directory keeps the quote open
        await pilot.pause()
        assert _labels(app) == ["my docs/read me.txt"]
        await pilot.press("down", "tab")
        assert app.chat.composer.value == 'see @"my docs/read me.txt" '
        await _type(pilot, "please")
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        user = [e["data"] for e in _events(app, "user/message") if e["data"]["source"]["kind"] == "user"]
        assert user[0]["content"] == [{"type": "text", "text": 'see @"my docs/read me.txt" please'}]
        assert SECTION_TEXT in app.bridge.harness.session.request_header()["system"]  # v4: the system/message


async def test_a_skill_named_in_the_prompt_is_put_in_the_conversation(tmp_path):
    skills = tmp_path / "ws" / ".agents" / "skills" / "deploy"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it\n---\nShip carefully.\n")
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _type(pilot, "/dep")
        assert _labels(app) == ["/deploy"]
        await pilot.press("tab")
        await _type(pilot, "now")
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        kinds = [e["data"]["source"]["kind"] for e in _events(app, "user/message")]
        assert kinds[0] == "user" and kinds[-2:] == ["skill-catalog", "skill-invocation"]
        assert "Ship carefully." in _events(app, "user/message")[-1]["data"]["content"][0]["text"]
        assert not _events(app, "command/run")  # a skill is not a command


async def test_fork_and_new_open_the_new_session_in_the_chat(tmp_path):
    """/fork 1 opens the forked child resumed, /new a fresh session, on the same provider (the closing
    harness hands it over). The harness thread never waits for the UI (that deadlocked for 20 s)."""
    app = scripted_app(tmp_path, [scripted.text("ok"), scripted.text("in the child")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.chat.composer.value = "hi"
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        first, parent, old = app.chat, app.bridge.harness.session.id, app.bridge.harness
        app.chat.composer.value = "/fork 1"
        await pilot.press("enter")
        await wait_for(pilot, lambda: _opened(app, first))
        assert old.writer._closed and old._closed  # the parent was flushed and closed, its lock released
        child = app.bridge.harness.session
        assert child.header["parentSession"] == parent and child.id != parent
        app.chat.composer.value = "go on"
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(i.kind == "assistant" and i.text == "in the child"
                                          for i in app.chat.fold.items))
        second = app.chat
        app.chat.composer.value = "/new"
        await pilot.press("enter")
        await wait_for(pilot, lambda: _opened(app, second))
        fresh = app.bridge.harness.session
        assert fresh.id not in (parent, child.id) and "parentSession" not in fresh.header
        assert not any(e["type"] == "user/message" for e in fresh.events)


async def test_a_long_command_output_scrolls_at_80x24(tmp_path):
    """/help is taller than the output box at 80x24 (half the screen): the box scrolls (wheel, or arrows once
    clicked) so its last lines can be seen; before, the rest was cut off with no sign of it."""
    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _type(pilot, "/help")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(_events(app, "command/done")) == 1)
        await pilot.pause()
        box = app.chat.command_output
        assert "Commands (output is for you" in screen_text(app)
        assert "/title <text> — Set this session's title" not in screen_text(app)  # below the fold
        await wait_for(pilot, lambda: box.max_scroll_y > 0)  # laid out one refresh after the text came
        box.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert "/title <text> — Set this session's title" in screen_text(app)
        assert app.focused is app.chat.composer  # showing the output did not take the focus
        await pilot.press("escape")
        assert not box.display


async def test_export_writes_the_session_with_its_title_to_the_cwd(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("the answer")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.chat.composer.value = "hello there"
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await _type(pilot, "/title Exported one")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(_events(app, "command/done")) == 1)
        sid = app.bridge.harness.session.id
        for fmt in ("md", "html"):
            await _type(pilot, f"/export {fmt}")
            await pilot.press("enter")
            path = tmp_path / "ws" / f"{sid}.{fmt}"
            await wait_for(pilot, path.exists)
            await wait_for(pilot, lambda fmt=fmt: "Exported to" in screen_text(app) and f".{fmt}" in screen_text(app))
            text = path.read_text()
            assert "Exported one" in text and "the answer" in text
        assert (tmp_path / "ws" / f"{sid}.md").read_text().startswith("# Exported one\n")


async def test_an_unknown_slash_command_is_refused_with_the_nearest_and_never_sent(tmp_path):
    """Issue #26 item 19: ``/nosuchcmd`` (or a typo of a command) was sent to the model as a prompt. It is
    refused above the composer with the nearest names; a skill's ``/name`` still goes to the model."""
    skills = tmp_path / "ws" / ".agents" / "skills" / "deploy"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it\n---\nShip carefully.\n")
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.chat.composer.value = "/compcat now"
        await pilot.press("enter")
        await pilot.pause()
        assert "Unknown command /compcat. Did you mean /compact?" in screen_text(app)
        app.chat.composer.value = "/nosuchcmd"
        await pilot.press("enter")
        await pilot.pause()
        assert "Unknown command /nosuchcmd." in screen_text(app)
        app.chat.composer.value = "/deplyo"
        await pilot.press("enter")
        await pilot.pause()
        assert "Did you mean /deploy" in screen_text(app)
        assert not _events(app, "user/message") and _footers(app) == 0  # nothing reached the model
        assert app.chat.composer.value == "/deplyo"  # kept to be corrected
        app.chat.composer.value = "/deploy now"
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _events(app, "user/message")[0]["data"]["content"][0]["text"] == "/deploy now"


async def test_enter_after_a_burst_runs_what_was_typed_not_a_stale_completion(tmp_path):
    """Keys arriving together (a paste-fast typist, a pty burst): ``/undo`` + Enter reached Enter while the list
    still showed the matches of ``/`` (its refresh runs after the composer's Changed message), and Enter
    inserted the highlighted ``/compact``: the list is brought up to date before it takes a key."""
    from textual import events

    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _type(pilot, "/")
        assert _labels(app)[0] == "/compact"
        for ch in "undo":
            app.post_message(events.Key(ch, ch))
        app.post_message(events.Key("tab", None))
        await pilot.pause()
        await pilot.pause()
        assert app.chat.composer.value == "/undo "
