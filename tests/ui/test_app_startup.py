"""Start-up (issue #6): what must be on the first frame, and the start-up bench's frame bookkeeping."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import pytest

from dsh_tui.cli.app_cmd import browser_app, chat_app, credential_hint, model_route
from dsh_tui.config import Settings, load_settings
from dsh_tui.llm import registry
from tests.ui.conftest import wait_for

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_ui_long.py"


def _chat_args(tmp_path, **kw) -> argparse.Namespace:
    base = dict(prompt=None, headless=False, cwd=None, root=str(tmp_path / "root"), replay=None,
                preset="workspace-write", model=None)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.mark.parametrize("case", ["no key", "key in env", "unknown provider", "provider without key env"])
def test_credential_hint_follows_the_registry_rule(case, monkeypatch):
    """The config-only check (no httpx) says the same as registry.credential_problem, in model_route's words."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    settings = Settings()
    if case == "key in env":
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-real")
    elif case == "unknown provider":
        settings.set("default.provider", "nowhere")
    elif case == "provider without key env":
        settings.set("default.provider", "local")
        settings.set("providers.local.base_url", "http://127.0.0.1:9/v1")
        settings.set("default.model", "m")
    problem = registry.credential_problem(settings)
    hint = credential_hint(settings)
    if problem is None:
        assert hint == ""
    else:
        assert hint == " ".join(f"No model configured: {problem} (or try `dsh-tui demo`)".split())
    assert (hint == "") == (case in ("key in env", "provider without key env"))


def test_credential_hint_is_model_routes_hint(monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    assert credential_hint(load_settings()) == model_route()[2] != ""
    assert credential_hint(None) == ""  # an unreadable settings file: model_route (in the thread) says why


async def test_run_without_a_key_shows_the_hint_from_the_first_frame(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    app = chat_app(_chat_args(tmp_path))
    assert app.resolve is None  # nothing left to resolve in a thread
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "DEEPSEEK_API_KEY" in app.chat.status.model_hint
        assert "DEEPSEEK_API_KEY" in str(app.chat.status.render())
        assert app.bridge.harness is None


async def test_run_with_a_key_resolves_the_route_after_the_first_paint(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-real")
    app = chat_app(_chat_args(tmp_path))
    assert app.resolve is not None
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.resolve is None, 20)  # _route_ready ran
        assert app.harness_factory is not None and app.model_hint == ""
        assert app.chat.status.model_hint == ""


async def test_browser_shows_its_footer_keys_with_the_filter_focused(tmp_path, monkeypatch):
    """The footer (one widget) draws the keys of the focused widget from its first render: the filter's
    (typing keys hidden), then the list's; a click on a key presses it; the notice is said once."""
    from dsh_tui.ui.screens.browser import KeysFooter

    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    renders: list[str] = []
    original = KeysFooter.render

    def render(self):
        text = original(self)
        renders.append(text.plain)
        return text

    monkeypatch.setattr(KeysFooter, "render", render)
    app = browser_app(argparse.Namespace(app_roots=[], root=None))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.2)
        footer = app.screen.query_one(KeysFooter)
        assert renders[0] == renders[-1]  # the first render already had the final keys
        first = renders[0]
        assert first.startswith(" ↓ List  tab All workspaces  ^f Search content  ") and "Resume" not in first
        assert first.endswith("▏^p palette ") and len(first) == 120
        assert [d for _b, _e, d, _p in footer.keys()[0]][:3] == ["List", "All workspaces", "Search content"]
        await pilot.press("down")  # the list takes the focus: Resume, Fork, ... are no longer typed text
        await wait_for(pilot, lambda: "Resume" in renders[-1])
        n = len(renders)
        app.screen.refresh_bindings()  # published again, same keys: no repaint
        await pilot.pause(0.2)
        assert len(renders) == n
        await pilot.hover(KeysFooter, offset=(1, 0))  # the key under the mouse is highlighted
        await wait_for(pilot, lambda: footer._hover == 0)
        # a click on "Filter" presses "/": the filter takes the focus
        x = renders[-1].index("Filter")
        assert app.screen.focused is app.screen.list
        await pilot.click(KeysFooter, offset=(x + 2, 0))
        await wait_for(pilot, lambda: app.screen.focused is app.screen.query_one("#filter"))
        # the no-model notice is still said once
        assert [n.title for n in app._notifications] == ["No model configured"]


async def test_browser_shows_the_no_model_notice_on_its_first_frame(tmp_path, monkeypatch):
    """The notice known before the app runs is mounted with the browser (Textual's notify() mounts its
    toast a few frames later), and it is still said once."""
    from dsh_tui.ui.app import DshApp

    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    frames: list[str] = []
    original = DshApp._display

    def display(self, screen, renderable):
        original(self, screen, renderable)
        if renderable is not None:
            frames.append(renderable.render_segments(self.console))

    monkeypatch.setattr(DshApp, "_display", display)
    app = browser_app(argparse.Namespace(app_roots=[], root=None))
    assert app.model_hint
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: len(frames) >= 1)
        await pilot.pause(0.3)
        assert "No model configured" in frames[0] and "DEEPSEEK_API_KEY" in frames[0]
        assert [n.title for n in app._notifications] == ["No model configured"]
        assert len(app.screen.query("Toast")) == 1


def test_bench_frame_log_finds_the_complete_frame():
    """The start-up bench's 'complete' is the first frame after which the screen's text stays as it ends."""
    spec = importlib.util.spec_from_file_location("bench_ui_long_frames", BENCH)
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_ui_long_frames"] = bench
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.modules.pop("bench_ui_long_frames", None)

    class Frame:
        def __init__(self, text: str) -> None:
            self.text = text

        def render_segments(self, _console) -> str:
            return self.text

    class FakeApp:
        console = None

    log = bench.FrameLog(0.0)
    log.add(FakeApp, Frame("\x1b[1;1Hhello\x1b[40;1H\x1b[1mbottom"))  # full screen minus the footer
    log.add(FakeApp, Frame("\x1b[1;1H\x1b[7mhello"))  # a style change only
    log.add(FakeApp, Frame("\x1b[40;1Hbottom keys"))  # the footer arrives
    log.add(FakeApp, Frame("\x1b[2;1H"))  # nothing written
    log.add(FakeApp, None)
    out = log.result()
    assert out["frames"] == 4 and out["complete_frame"] == 3
    assert out["first_paint"] <= out["complete"]


@pytest.mark.parametrize("theme", ["dsh-light", "dsh-dark", "nord"])
async def test_the_start_theme_is_styled_without_a_restyle(theme, monkeypatch):
    """The saved theme is applied before the first parse (no queued refresh_css) and looks as if set later."""
    from textual.color import Color

    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.settings import UiSettings

    refreshes: list[bool] = []
    original = DshApp.refresh_css

    def refresh_css(self, animate: bool = True) -> None:
        refreshes.append(animate)
        original(self, animate)

    monkeypatch.setattr(DshApp, "refresh_css", refresh_css)
    app = DshApp(None, settings=UiSettings(values={"ui.theme": theme}))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert refreshes == []
        current = app.get_theme(theme)
        assert app.theme == theme and app.has_class(f"-theme-{theme}")
        assert app.has_class("-dark-mode") == current.dark and app.has_class("-light-mode") != current.dark
        assert app.theme_variables["background"].lower() == current.background.lower()
        assert app.screen.styles.background == Color.parse(current.background)
        assert app.chat.status.styles.background == Color.parse(app.theme_variables["panel"])
        assert app.settings.get("ui.theme") == theme
        app.theme = "textual-dark" if theme != "textual-dark" else "dsh-light"  # switching later still works
        await pilot.pause()
        assert refreshes and app.screen.styles.background == Color.parse(app.theme_variables["background"])
        assert app.settings.get("ui.theme") == app.theme


def _gc_probe(seen: dict[str, object], collections: list[int]):
    """A DshApp that records, at mount and after its first frame, whether the cyclic GC runs and what
    collections happened; ``gc_counter`` is the ``gc.callbacks`` hook feeding ``collections``."""
    import gc

    from dsh_tui.ui.app import DshApp

    class Probe(DshApp):
        def on_mount(self) -> None:  # DshApp.on_mount runs too
            seen["at_mount"] = gc.isenabled()
            seen["collections_at_mount"] = list(collections)
            self.probe_started = time.monotonic()
            self.set_interval(0.05, self.check)

        def check(self) -> None:
            # the first frame is painted at once but, on a loaded machine, not within a fixed delay: wait
            # for the paint (``_first_frame`` clears ``gc_paused``), giving up after 20 s
            if self.gc_paused and time.monotonic() - self.probe_started < 20:
                return
            seen["after_first_frame"] = gc.isenabled()
            seen["frozen"] = gc.get_freeze_count()
            self.exit()

    def gc_counter(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    return Probe, gc_counter


def test_the_cli_pauses_the_gc_until_the_first_frame():
    """``gc_paused`` + ``run_app``: no collection during the start-up, the GC back on after the first frame."""
    import gc

    from textual.app import App

    from dsh_tui.cli import gc_paused
    from dsh_tui.ui.settings import UiSettings

    seen: dict[str, object] = {}
    collections: list[int] = []
    Probe, counter = _gc_probe(seen, collections)

    class HeadlessProbe(Probe):
        def run(self, **_kw):  # noqa: ANN001, ANN202 - headless, as a terminal-less test needs
            return App.run(self, headless=True, size=(80, 24))

    assert gc.isenabled()
    gc.callbacks.append(counter)
    try:
        with gc_paused():
            app = HeadlessProbe(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
            app.run_app()
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(counter)
        gc.unfreeze()
    assert seen["at_mount"] is False and seen["after_first_frame"] is True and seen["frozen"] > 0
    assert seen["collections_at_mount"] == []  # building the app and its first screen: no GC pass
    assert app.gc_paused is False


def test_the_app_pauses_the_gc_until_its_first_frame_without_the_cli():
    """``DshApp.run()`` alone (a chat screen opened by code, not the command line) pauses the GC too."""
    import gc

    from dsh_tui.ui.settings import UiSettings

    seen: dict[str, object] = {}
    collections: list[int] = []
    Probe, counter = _gc_probe(seen, collections)

    assert gc.isenabled()
    app = Probe(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    gc.callbacks.append(counter)
    try:
        app.run(headless=True, size=(80, 24))
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(counter)
        gc.unfreeze()
    assert seen["at_mount"] is False and seen["after_first_frame"] is True and seen["frozen"] > 0
    assert seen["collections_at_mount"] == []
    assert app.gc_paused is False


async def _screenshot(app, size=(100, 30), before=None) -> str:
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        if before is not None:
            await before(app, pilot)
        return app.export_screenshot()


@pytest.mark.parametrize("which", ["chat", "browser", "light theme"])
async def test_a_warm_css_cache_paints_the_same_without_parsing(which, monkeypatch):
    """Second start: every rule comes from the cache file (no CSS parsed) and the screen is identical."""
    import textual.css.stylesheet as stylesheet_module

    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.settings import UiSettings
    from dsh_tui.ui.themes import css_cache_path

    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    parsed: list[str] = []
    original = stylesheet_module.parse

    def counting(scope, css, read_from, *args, **kwargs):
        parsed.append(str(read_from))
        return original(scope, css, read_from, *args, **kwargs)

    monkeypatch.setattr(stylesheet_module, "parse", counting)

    def make():
        if which == "browser":
            return browser_app(argparse.Namespace(app_roots=[], root=None))
        theme = "dsh-light" if which == "light theme" else "dsh-dark"
        return DshApp(None, settings=UiSettings(values={"ui.theme": theme}))

    async def approval_and_palette_theme(app, pilot):
        if which == "light theme":  # a theme switch re-parses everything (not cached) and still looks right
            app.theme = "dsh-dark"
            await pilot.pause(0.1)
            app.theme = "dsh-light"
            await pilot.pause(0.1)

    assert not css_cache_path().exists()
    cold = await _screenshot(make(), before=approval_and_palette_theme)
    assert css_cache_path().exists() and parsed
    parsed.clear()
    warm = await _screenshot(make(), before=approval_and_palette_theme)
    if which != "light theme":
        assert parsed == []
    assert warm == cold


def test_the_css_cache_keys_on_variables_and_ignores_a_damaged_file(tmp_path):
    from textual.app import App
    from textual.widgets import Input

    from dsh_tui.ui.themes import CachedStylesheet

    app = App()
    dark = app.get_css_variables()
    app.theme = "textual-light"
    light = app.get_css_variables()
    path = tmp_path / "css.pickle"
    where = ("input.py", "Input.DEFAULT_CSS")
    a = CachedStylesheet(variables=dark, path=path)
    fresh = a._parse_rules(Input.DEFAULT_CSS, where, True)
    assert a.save() and path.exists()
    b = CachedStylesheet(variables=dark, path=path)
    cached = b._parse_rules(Input.DEFAULT_CSS, where, True)
    assert [r.css for r in cached] == [r.css for r in fresh] and not b.save()  # nothing new to write
    c = CachedStylesheet(variables=light, path=path)
    other = c._parse_rules(Input.DEFAULT_CSS, where, True)
    assert [r.css for r in other] != [r.css for r in fresh]  # another theme: parsed with its variables
    path.write_bytes(b"not a pickle")
    d = CachedStylesheet(variables=dark, path=path)
    assert [r.css for r in d._parse_rules(Input.DEFAULT_CSS, where, True)] == [r.css for r in fresh]
    assert d.save() and path.read_bytes() != b"not a pickle"


def test_the_command_line_builds_without_the_editable_install_hook():
    """A regular install has no editable finder, which imports importlib.util as a side effect; the
    parser (every command's arguments) must not rely on it. ``-S``: no site, no .pth hooks."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    code = ("import sys; assert 'importlib.util' not in sys.modules; from dsh_tui.cli import build_parser; "
            "print(sorted(build_parser()._subparsers._group_actions[0].choices))")
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "'run'" in out.stdout and "'sessions'" in out.stdout


# (argv, what the command line means, written out by hand: a subset of the namespace, or "error")
PARSES = [
    ([], {"app_roots": [], "command": None}),
    (["run"], {"command": "run", "prompt": None, "preset": "workspace-write", "headless": False, "app_roots": []}),
    (["run", "hi", "--preset", "full-access"], {"command": "run", "prompt": "hi", "preset": "full-access"}),
    (["--root", "run"], {"app_roots": ["run"], "command": None}),  # "run" is the --root value, not a command
    (["--root", "a", "--root", "b"], {"app_roots": ["a", "b"], "command": None}),
    (["sessions", "--search", "run"], {"command": "sessions", "search": "run", "all": False, "json": False}),
    (["log", "check", "x.jsonl"], {"command": "log", "log_command": "check", "files": ["x.jsonl"], "mode": "auto"}),
    (["export", "abc", "--format", "md"], {"command": "export", "session": "abc", "format": "md", "output": None}),
    (["run", "--preset", "bogus"], "error"),
    (["export", "abc", "--format", "pdf"], "error"),
    (["sessions", "--nope"], "error"),
]


@pytest.mark.parametrize(("argv", "meaning"), PARSES, ids=[" ".join(a) or "-" for a, _ in PARSES])
def test_parse_args_equals_the_full_parser(argv, meaning, capsys):
    from dsh_tui.cli import build_parser, parse_args

    try:
        expected = vars(build_parser().parse_args(argv))
    except SystemExit:
        expected = "error"
    try:
        got = vars(parse_args(argv))
    except SystemExit:
        got = "error"
    assert got == expected
    # both parsers could be wrong the same way: the meaning is independent of either
    if meaning == "error":
        assert got == "error"
    else:
        assert got != "error" and {k: got.get(k, "<missing>") for k in meaning} == meaning


@pytest.mark.parametrize(("argv", "code", "stream", "needle"), [
    (["--help"], 0, "out", "usage: dsh-tui"),
    (["run", "-h"], 0, "out", "--preset"),
    (["bogus"], 2, "err", "invalid choice: 'bogus'"),
    (["run", "--nope"], 2, "err", "unrecognized arguments: --nope"),
    (["--version"], 0, "out", "dsh-tui"),
])
def test_parse_args_help_and_errors_are_the_full_parsers(argv, code, stream, needle, capsys):
    from dsh_tui.cli import build_parser, parse_args

    with pytest.raises(SystemExit) as full:
        build_parser().parse_args(argv)
    expected = capsys.readouterr()
    with pytest.raises(SystemExit) as fast:
        parse_args(argv)
    got = capsys.readouterr()
    assert (fast.value.code, got.out, got.err) == (full.value.code, expected.out, expected.err)
    # independent of both parsers: the exit code and what the user reads
    assert fast.value.code == code and needle in getattr(got, stream)
    assert (got.err if stream == "out" else got.out) == ""
    if argv == ["bogus"]:
        assert "choose from" in got.err and "'sessions'" in got.err  # every command listed


async def test_resume_paints_before_the_route_and_then_resumes_the_session(tmp_path, monkeypatch):
    """``dsh-tui resume`` (TUI): with a key the app is built without a provider (resolved after the first
    paint, in a thread) and the harness then resumes the very session; without one nothing opens and the
    error is model_route's."""
    from dsh_tui.cli.resume_cmd import find_session, resume_app
    from dsh_tui.session.errors import DshError
    from tests.store.test_catalog_support import make_header, user_turn, write_session

    root = tmp_path / "r"
    write_session(root, make_header("s1", str(tmp_path)), user_turn(0, 1, "hello", "world"))
    row = find_session("s1", False, [str(root)], str(tmp_path))
    args = argparse.Namespace(session="s1", last=False, headless=None, model=None, root=[str(root)])
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(DshError) as err:
        resume_app(args, row)
    assert str(err.value) == model_route()[2] and "DEEPSEEK_API_KEY" in str(err.value)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-real")
    app = resume_app(args, row)
    assert app.resolve is not None and app.harness_factory is None
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, 20)
        session = app.bridge.harness.session
        assert session.id == "s1"
        await wait_for(pilot, lambda: any(i.kind == "assistant" for i in app.chat.fold.items), 20)
        assert [i.text for i in app.chat.fold.items if i.kind == "assistant"] == ["world"]
        assert session.events[-1]["type"] == "session/end-seed"


@pytest.mark.parametrize("argv", [None, ["run"], []], ids=["DshApp", "dsh-tui run", "dsh-tui"])
def test_the_first_frame_imports_neither_pydantic_nor_the_runtime(tmp_path, argv):
    """The chat's first frame needs the settings' [ui] and [keymap] only: pydantic (the provider tables'
    validation, ~45 ms to import) and the runtime package (the agent, imported with the harness after the
    first paint) stay out of it. A real app in a fresh process, stopped at its first rendered frame."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    code = (
        "import os, sys\n"
        "from dsh_tui.ui.app import DshApp\n"
        "shown = DshApp._display\n"
        "def _display(self, screen, renderable):\n"
        "    shown(self, screen, renderable)\n"
        "    if renderable is not None:\n"
        "        bad = sorted(m for m in sys.modules if m == 'pydantic' or m == 'dsh_tui.runtime'\n"
        "                     or m.startswith('dsh_tui.runtime.'))\n"
        f"        open({str(tmp_path / 'imported.txt')!r}, 'w').write('IMPORTED ' + repr(bad))\n"
        "        os._exit(0)\n"
        "DshApp._display = _display\n"
        + ("DshApp(None).run(headless=True, size=(100, 30))\n" if argv is None else
           f"sys.argv = ['dsh-tui', *{argv!r}]\nfrom dsh_tui.cli import main\nmain()\n"))
    env = {**os.environ, "PYTHONPATH": str(repo), "DSH_HOME": str(tmp_path / "h"),
           "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_CACHE_HOME": str(tmp_path / "k"),
           "XDG_DATA_HOME": str(tmp_path / "d"), "TEXTUAL_ANIMATIONS": "none"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    result = tmp_path / "imported.txt"
    assert result.exists(), out.stderr[-2000:]
    assert result.read_text() == "IMPORTED []"


async def test_the_terminal_poll_builds_nothing_before_the_agent_has_a_terminal(tmp_path, monkeypatch):
    """The chat polls for agent terminals every 0.25 s; before there is one, the poll must not build the
    terminal slot (importing its module): on a slow first frame that import landed before the paint and
    put ``chat_terminal`` beyond the start-up budget of a stored session's open."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    app = chat_app(_chat_args(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.chat._poll_terminals()
        assert app.chat.built("terminal") is None
