"""The typed settings tree (issue #28 item 5): ``dsh_tui/config/tree.py`` and its consumers.

Typed fields and their defaults, unknown keys reported with their full path (never stopping anything), a value
of the wrong type as one line naming its key, a docstring on every field and docs/settings.md generated from
them, the first frame's ``[ui]`` / ``[chat]`` read without pydantic, and the ``jobs`` / ``subagents`` built-ins'
pydantic ``Config`` with their texts."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_tui.config import Settings, SettingsError, load_settings, settings_path
from dsh_tui.config.base import ChatSection, UiSection
from dsh_tui.ui.settings import UiSettings

REPO = Path(__file__).resolve().parents[1]


def write_settings(text: str) -> Path:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_an_empty_file_is_the_defaults_typed():
    tree = Settings().tree
    assert tree.ui.theme is None and tree.ui.show_time is True and tree.ui.cursor_blink is True
    assert tree.ui.notify == "auto" and tree.chat.enter_steers is False
    assert tree.default.provider == "deepseek-official" and tree.default.model is None
    assert tree.privacy.send_anonymous_user_id is True and tree.privacy.send_session_log is False
    assert tree.sandbox.mode == "auto" and tree.sandbox.network is False and tree.sandbox.writable == []
    assert tree.storage.backend is None and tree.models == [] and tree.prices == {} and tree.plugins == {}
    assert tree.lsp.timeout_ms == 60_000 and tree.mcp.servers == {}


def test_a_settings_file_reads_typed():
    write_settings('models = ["a", "b"]\n[ui]\ntheme = "dsh-dark"\nshow_time = false\nnotify = "bell"\n[chat]\nenter_steers = true\n'
                   '[sandbox]\nnetwork = true\nwritable = ["~/.npm"]\n[privacy]\nsend_anonymous_user_id = false\n'
                   '[prices."m"]\ninput = 1\noutput = 2.5\n[plugins.jobs]\nmax_concurrent_jobs = 4\n')
    settings = load_settings()
    tree = settings.tree
    assert (tree.ui.theme, tree.ui.show_time, tree.ui.notify, tree.chat.enter_steers) == ("dsh-dark", False, "bell", True)
    assert tree.sandbox.network is True and tree.sandbox.writable == ["~/.npm"]
    assert tree.privacy.send_anonymous_user_id is False
    assert (tree.prices["m"].input, tree.prices["m"].output, tree.prices["m"].cache_read) == (1, 2.5, None)
    assert tree.plugins["jobs"].model_extra == {"max_concurrent_jobs": 4}
    assert settings.section("sandbox") == tree.sandbox
    # the pydantic-free sections the first frame reads say the same
    assert settings.ui == UiSection(theme="dsh-dark", show_time=False, cursor_blink=True, notify="bell")
    assert UiSettings(settings).chat == ChatSection(enter_steers=True)
    assert settings.problems() == []


def test_the_first_frame_sections_are_the_trees_fields():
    """``config/base.py``'s dataclasses and the tree's strict models have the same fields and defaults."""
    from dsh_tui.config.tree import ChatTable, UiTable

    for dc, model in ((UiSection, UiTable), (ChatSection, ChatTable)):
        assert {f.name: f.default for f in dataclasses.fields(dc)} == \
            {name: field.default for name, field in model.model_fields.items()}


def test_in_memory_values_win_and_keep_the_apps_coercion():
    ui = UiSettings(Settings({"ui": {"show_time": 0, "cursor_blink": "yes"}}), values={"chat.enter_steers": 1})
    assert ui.ui.show_time is False and ui.ui.cursor_blink is True and ui.chat.enter_steers is True


def test_unknown_keys_are_reported_with_their_path_and_the_file_still_loads():
    write_settings('future = 1\n[ui]\nshow_time = true\nshwo_time = false\n'
                   '[providers.gw]\nbase_url = "http://127.0.0.1:9/v1"\nbase_urll = "x"\n'
                   '[providers.gw.retry]\nmax_retry = 3\n[providers.gw.models."m-1"]\ncontext_windw = 5\n'
                   '[prices."m"]\ninput = 1\noutput = 1\ncache_hit = 1\n[mcp.servers.a]\ncommand = "x"\n'
                   '[plugins.mine]\nmodule = "m"\nanything = 1\n[lsp.servers.py]\ncommand = "pylsp"\n')
    settings = load_settings()  # loads: unknown keys never stop anything
    assert settings.tree.ui.show_time is True
    assert settings.problems() == [
        "future is not a setting (ignored)",
        "ui.shwo_time is not a setting (ignored)",
        "providers.gw.base_urll is not a setting (ignored)",
        "providers.gw.retry.max_retry is not a setting (ignored)",
        'providers.gw.models."m-1".context_windw is not a setting (ignored)',
        'prices."m".cache_hit is not a setting (ignored)',
    ]
    assert UiSettings(settings).problems() == settings.problems()


@pytest.mark.parametrize("toml,message", [
    ('[ui]\nshow_time = "no"\n', "ui.show_time must be true or false, not 'no'"),
    ("[chat]\nenter_steers = 1\n", "chat.enter_steers must be true or false, not 1"),
    ("[lsp]\ntimeout_ms = \"1s\"\n", "lsp.timeout_ms must be an integer, not '1s'"),
    ('[prices."m"]\ninput = "cheap"\n', 'prices."m".input must be an integer or a number, not \'cheap\''),
    ('[default]\nreasoning_effort = "huge"\n',
     "default.reasoning_effort must be one of off, low, medium, high, max, not 'huge'"),
    ("[plugins.x]\nenabled = \"yes\"\n", "plugins.x.enabled must be true or false, not 'yes'"),
])
def test_a_wrong_type_is_one_line_naming_its_key(toml, message):
    write_settings(toml)
    settings = load_settings()
    with pytest.raises(SettingsError) as err:
        _ = settings.tree
    assert str(err.value) == message and "\n" not in str(err.value)
    assert settings.problems() == [message]  # said, not raised, by the app's notice


def test_the_checks_when_the_file_is_read_keep_their_texts():
    """config/check.py runs first, when the file is read, with its own texts (the tree says the same shape)."""
    write_settings("[ui]\ntheme = 5\n")
    with pytest.raises(SettingsError, match=r": ui.theme must be a theme name, not 5$"):
        load_settings()
    with pytest.raises(SettingsError, match=r"^ui must be a table$"):
        _ = Settings({"ui": 3}).tree


def test_a_section_is_validated_alone():
    settings = Settings({"ui": {"show_time": "no"}, "sandbox": {"network": True}})
    assert settings.section("sandbox").network is True
    with pytest.raises(SettingsError, match=r"^ui.show_time must be true or false, not 'no'$"):
        settings.section("ui")
    with pytest.raises(SettingsError, match="not a settings section"):
        settings.section("nope")


def _models():
    from pydantic import BaseModel

    from dsh_tui.config.tree import SettingsTree

    seen, todo = [], [SettingsTree]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for field in model.model_fields.values():
            for kind in (field.annotation, *getattr(field.annotation, "__args__", ())):
                if isinstance(kind, type) and issubclass(kind, BaseModel):
                    todo.append(kind)
    from dsh_tui.config.models import ModelSettings, ProviderSettings

    return [*seen, ProviderSettings, ModelSettings]


def test_every_field_has_a_docstring():
    missing = [f"{m.__name__}.{name}" for m in _models() for name, f in m.model_fields.items()
               if not (f.description or "").strip()]
    assert missing == []
    assert all((m.__doc__ or "").strip() for m in _models())


def test_docs_settings_is_the_generated_reference():
    """docs/settings.md lists every section and field (regenerate: python -m dsh_tui.config.reference)."""
    from dsh_tui.config.reference import reference
    from dsh_tui.config.tree import SettingsTree

    doc = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert doc == reference(), "docs/settings.md is stale: python -m dsh_tui.config.reference > docs/settings.md"
    for name, field in SettingsTree.model_fields.items():
        assert f"## `[{name}]`" in doc
        for sub in getattr(field.annotation, "model_fields", {}):
            assert f"`{name}.{sub}`" in doc


def test_the_first_frame_reads_ui_and_chat_without_pydantic(tmp_path):
    """pydantic (~45 ms) stays off the path to the first frame: the typed [ui]/[chat] need none."""
    code = ("import sys\nfrom dsh_tui.config import load_settings\nfrom dsh_tui.ui.settings import UiSettings\n"
            "s = UiSettings(load_settings())\nassert s.ui.show_time is False and s.chat.enter_steers is True\n"
            "assert s.ui.notify == 'off'\nassert 'pydantic' not in sys.modules, 'pydantic imported'\n"
            "s.problems()\nassert 'pydantic' in sys.modules\n")
    write_settings('[ui]\nshow_time = false\nnotify = "off"\n[chat]\nenter_steers = true\n')
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


# --------------------------------------------------------------------------------------------------
# The jobs and subagents built-ins' Config


def test_jobs_and_subagents_have_pydantic_configs_with_their_defaults():
    from pydantic import BaseModel

    from dsh_tui.extensions import jobs, subagents

    for module in (jobs, subagents):
        assert issubclass(module.Config, BaseModel)
        assert module.Config().model_dump() == module.DEFAULTS
        assert all((f.description or "").strip() for f in module.Config.model_fields.values())
    assert jobs._config({"max_concurrent_jobs": 2}).max_concurrent_jobs == 2
    assert subagents._config({"max_depth": "provider-managed"}).max_depth == "provider-managed"


@pytest.mark.parametrize("raw,message", [
    ({"wait_timeout_ms": 0}, "wait_timeout_ms must be a positive integer, got 0"),
    ({"max_concurrent_jobs": True}, "max_concurrent_jobs must be a positive integer, got True"),
    ({"wait_timeout_ms": 700_000}, "wait_timeout_ms (700000) exceeds max_wait_timeout_ms (600000)"),
    ({"wait_timeout_ms": 700_000, "completion_delivery": "loud"},
     "wait_timeout_ms (700000) exceeds max_wait_timeout_ms (600000)"),
    ({"completion_delivery": "loud"}, "completion_delivery must be \"wakeup\" or \"quiet\", got 'loud'"),
    ({"completion_delivery": "loud", "max_consecutive_wakes": 0}, "max_consecutive_wakes must be a positive "
                                                                  "integer, got 0"),
    ({"nope": 1}, "unknown option(s) nope (expected wait_timeout_ms, max_wait_timeout_ms, completion_delivery, "
                  "max_consecutive_wakes, max_concurrent_jobs)"),
])
def test_jobs_config_errors_keep_their_texts(raw, message):
    from dsh_tui.extensions import jobs
    from dsh_tui.session.errors import DshError

    with pytest.raises(DshError) as err:
        jobs._config(raw)
    assert str(err.value) == message


@pytest.mark.parametrize("raw,message", [
    ({"fork_background": 1}, "fork_background must be true or false"),
    ({"max_children": 0}, "max_children must be a positive integer, got 0"),
    ({"max_depth": -1}, 'max_depth must be a non-negative integer or "provider-managed", got -1'),
    ({"max_depth": True}, 'max_depth must be a non-negative integer or "provider-managed", got True'),
    ({"subagent_mode": "x"}, "subagent_mode must be \"one-shot\" or \"continuable\", got 'x'"),
    ({"fork_mode": "x", "max_tree_total": 0}, "max_tree_total must be a positive integer, got 0"),
    ({"max_depth": "x", "subagent_background": "y"}, "subagent_background must be true or false"),
    ({"x": 1}, "unknown option(s) x (expected max_depth, subagent_mode, fork_mode, fork_background, "
               "subagent_background, max_children, max_tree_live, max_tree_total)"),
])
def test_subagents_config_errors_keep_their_texts(raw, message):
    from dsh_tui.extensions import subagents
    from dsh_tui.session.errors import DshError

    with pytest.raises(DshError) as err:
        subagents._config(raw)
    assert str(err.value) == message
