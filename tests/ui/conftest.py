"""UI test fixtures: deterministic environment, and an app driving the REAL harness with a scripted model."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings


@pytest.fixture(autouse=True)
def _deterministic_ui(monkeypatch):
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("COLORTERM", "truecolor")
    monkeypatch.delenv("NO_COLOR", raising=False)
    # a pilot presses keys the moment the panel shows: no grace period (its own tests set it back)
    from dsh_tui.ui.widgets import approval

    monkeypatch.setattr(approval, "GRACE_S", 0.0, raising=False)
    from dsh_tui.ui.widgets import question

    monkeypatch.setattr(question, "GRACE_S", 0.0, raising=False)


def scripted_app(tmp_path: Path, responses: list, *, preset: str = "full-access", show_time: bool = True,
                 prompts: tuple[str, ...] = (), **provider_kwargs) -> DshApp:
    """The app on a fresh root, a real Agent + tools + writer, and ``responses`` as the model."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    provider_kwargs.setdefault("retry_policy", RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    provider = ScriptedProvider(responses, name="mock", context_window=100_000, **provider_kwargs)
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=workspace, provider=provider, model="mock-model",
                       preset=preset, prompts=prompts)
    settings = UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": show_time})
    app = DshApp(lambda bridge: open_harness(bridge, spec), settings=settings)
    app.provider = provider  # type: ignore[attr-defined]
    return app


async def wait_for(pilot, predicate, timeout: float = 10.0) -> None:
    """Pump the app until ``predicate()`` holds (fails the test on timeout)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not reached in time")


def log_types(app) -> list[str]:
    return [e["type"] for e in app.bridge.harness.session.events]


def items(app, kind: str | None = None) -> list:
    return [i for i in app.chat.fold.items if kind is None or i.kind == kind]


async def submit(pilot, text: str, key: str = "enter") -> None:
    pilot.app.chat.composer.value = text
    await pilot.press(key)
    await asyncio.sleep(0)
