"""Tail-first opening of a stored session: ``dsh_tui.store.tail.read_tail`` against the real store's
files (raw and zstd, several frames), and ``DshApp.open_session``: tail painted first, then the full
load confirms it (same items as a cold fold of the whole log), repairs are shown, corruption is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

import dsh_tui.ui.screens.chat_stream as chat_mod
from dsh_tui.session.transcript import TranscriptFold
from dsh_tui.store.catalog import SessionRow
from dsh_tui.store.open import open_store
from dsh_tui.store.tail import read_tail
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from tests.ui.conftest import wait_for
from tests.ui.synthetic import long_session

SID = "tail-test"


def _write(root: Path, events: list[dict], compression: str, batch: int = 997, sid: str = SID) -> Path:
    header, _ = long_session(1, chunks_per_step=1)
    header = {**header, "id": sid, "cwd": str(root)}
    store = open_store(root, backend="jsonl", compression=compression)
    store.create(header)
    for i in range(0, len(events), batch):  # many appends: many zstd frames / many raw writes
        store.append(sid, events[i:i + batch])
    path = store.find(sid)
    assert path is not None
    return path


def _value(item, name: str) -> str:
    value = getattr(item, name)
    if name == "parts":  # streamed text: chunks may be joined or not, the text is what counts
        value = "".join(value)
    return repr(value)


def _signature(items) -> list[tuple]:
    return [(type(i).__name__, tuple((name, _value(i, name)) for name in i.FIELDS
                                     if name != "version" and not name.startswith("_"))) for i in items]


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_tail_is_the_end_of_the_full_load_from_a_turn_start(tmp_path, compression):
    _header, events = long_session(300, chunks_per_step=30)
    path = _write(tmp_path, events, compression)
    full = open_store(tmp_path, backend="jsonl", compression=compression).inspect(SID)
    tail = read_tail(path, 1_000)
    assert tail is not None and not tail.complete and tail.header == full.header
    assert tail.events[0]["type"] == "turn/start"
    assert 1_000 <= len(tail.events) < 1_000 + 200  # no more than one turn beyond what was asked
    assert tail.events == full.events[tail.first_seq:]
    # the turn/start is the last one at or before len - 1000: none between it and that point
    assert not any(e["type"] == "turn/start" for e in full.events[tail.first_seq + 1:len(full.events) - 999])


def test_short_log_is_read_whole_and_marked_complete(tmp_path):
    _header, events = long_session(6, chunks_per_step=3)
    path = _write(tmp_path, events, "none")
    tail = read_tail(path, 1_000)
    assert tail is not None and tail.complete and tail.first_seq == 0 and tail.events == events


def test_a_torn_last_line_is_left_to_the_full_load(tmp_path):
    _header, events = long_session(100, chunks_per_step=10)
    path = _write(tmp_path, events, "none")
    with open(path, "ab") as f:
        f.write(b'{"type":"assistant/chunk","seq":')  # a crash mid-write
    tail = read_tail(path, 300)
    assert tail is not None and tail.events[-1] == events[-1]


def test_not_a_current_session_log_gives_none(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"type":"message","role":"user"}\n{"type":"message","role":"assistant"}\n')
    assert read_tail(path, 10) is None
    path.write_bytes(b"\x28\xb5\x2f\xfdgarbage")
    assert read_tail(path, 10) is None


def _app() -> DshApp:
    return DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}))


def _row(path: Path, root: Path, sid: str = SID) -> SessionRow:
    return SessionRow(path=str(path), root=str(root), revision="", id=sid)


@pytest.mark.parametrize("compression", ["zstd", "none"])
async def test_open_session_paints_the_tail_then_folds_the_full_log_in(tmp_path, monkeypatch, compression):
    monkeypatch.setattr(chat_mod, "TAIL_EVENTS", 500)
    header, events = long_session(200, chunks_per_step=20)
    path = _write(tmp_path, events, compression)
    full = open_store(tmp_path, backend="jsonl", compression=compression).inspect(SID)
    app = _app()
    seen: list[tuple[int, bool]] = []
    attach = chat_mod.StreamPump.attach_session

    def recording(self, event):  # what the first attach showed, as it happened (a poll can come too late)
        attach(self, event)
        seen.append((len(event.get("events") or []), self.chat.loading_head))

    monkeypatch.setattr(chat_mod.StreamPump, "attach_session", recording)
    async with app.run_test(size=(100, 30)) as pilot:
        app.open_session(_row(path, tmp_path))
        await wait_for(pilot, lambda: app.chat is not None and app.chat.attached)
        chat = app.chat
        await wait_for(pilot, lambda: not chat.loading_head)
        cold = TranscriptFold(full.header)
        for event in full.events:
            cold.apply(event)
        assert _signature(chat.fold.items) == _signature(cold.items)  # live == reopened
        assert app.bridge.harness.session.events == full.events
    count, loading = seen[0]
    assert loading and count < len(events)  # the first thing attached was the tail


async def test_an_interrupted_log_shows_the_full_loads_closers_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_mod, "TAIL_EVENTS", 300)
    _header, events = long_session(120, chunks_per_step=10)
    cut = max(i for i, e in enumerate(events) if e["type"] == "turn/end")
    path = _write(tmp_path, events[:cut - 3], "none")  # the last turn never ended
    full = open_store(tmp_path, backend="jsonl", compression="none").inspect(SID)
    assert full.closers
    app = _app()
    notes: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        app.open_session(_row(path, tmp_path))
        await wait_for(pilot, lambda: app.chat is not None and app.chat.attached and not app.chat.loading_head)
        cold = TranscriptFold(full.header)
        for event in full.events:
            cold.apply(event)
        assert _signature(app.chat.fold.items) == _signature(cold.items)
        await wait_for(pilot, lambda: any("not closed cleanly" in n for n in notes))


async def test_a_corrupt_log_keeps_the_tail_and_says_the_log_is_damaged(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_mod, "TAIL_EVENTS", 300)
    _header, events = long_session(120, chunks_per_step=10)
    path = _write(tmp_path, events, "none")
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"type":"assistant/chunk","seq":"not a number"}'  # damage the old part only
    path.write_bytes(b"\n".join(lines))
    app = _app()
    notes: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        app.open_session(_row(path, tmp_path))
        await wait_for(pilot, lambda: any(n.startswith("Cannot open") for n in notes))
        chat = app.chat
        assert chat is not None and chat.fold.items and not chat.loading_head
        assert "damaged" in chat.status.info.notice


async def test_a_second_open_is_not_overwritten_by_the_first_ones_full_load(tmp_path, monkeypatch):
    """The first session's full load is held back until the second session is fully shown, so its late
    result really arrives after the second open; it must be dropped."""
    import threading

    from dsh_tui.store import catalog

    monkeypatch.setattr(chat_mod, "TAIL_EVENTS", 300)
    _h, first = long_session(300, chunks_per_step=20)
    _h, second = long_session(90, chunks_per_step=12)
    path_a = _write(tmp_path, first, "zstd", sid="first")
    path_b = _write(tmp_path, second, "zstd", sid="second")
    full_b = open_store(tmp_path, backend="jsonl", compression="zstd").inspect("second")
    release, first_loaded = threading.Event(), threading.Event()
    real_store_for = catalog._store_for

    class HeldStore:
        def __init__(self, store):
            self._store = store

        def inspect(self, sid):
            if sid != "first":
                return self._store.inspect(sid)
            assert release.wait(30)
            try:
                return self._store.inspect(sid)
            finally:
                first_loaded.set()

    monkeypatch.setattr(catalog, "_store_for", lambda row: HeldStore(real_store_for(row)))
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        app.open_session(_row(path_a, tmp_path, "first"))
        await wait_for(pilot, lambda: app.chat is not None and app.chat.attached
                       and app.bridge.harness is not None and app.bridge.harness.session.id == "first")
        app.open_session(_row(path_b, tmp_path, "second"))
        await wait_for(pilot, lambda: app.chat is not None and app.chat.attached and not app.chat.loading_head
                       and app.bridge.harness is not None and app.bridge.harness.session.id == "second")
        release.set()  # now the first open's full load completes, late
        await wait_for(pilot, first_loaded.is_set)
        await pilot.pause(0.5)  # let its call_from_thread callbacks run
        cold = TranscriptFold(full_b.header)
        for event in full_b.events:
            cold.apply(event)
        assert app.bridge.harness.session.id == "second"
        assert app.bridge.harness.session.events == full_b.events
        assert _signature(app.chat.fold.items) == _signature(cold.items)


async def test_a_chat_pushed_before_the_stored_one_and_mounted_after_it_does_not_take_its_session(tmp_path):
    """The app's first chat (no harness) and a stored session's chat pushed before that first chat mounted
    (a short tail read is that fast): the first chat's mount drained the shared bridge and took the session,
    and the chat on screen never showed it (1 open in 6 hung). Each chat has its own bridge now."""
    from dsh_tui.ui.replay import ReplayHarness

    header, events = long_session(4, chunks_per_step=3)
    app = DshApp(None, start="none", settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        async def factory(_bridge):
            return ReplayHarness(header, events, preload_turns=1 << 30)

        first = app.open_chat(None)
        stored = app.open_chat(factory)  # pushed before ``first`` has mounted
        assert first.bridge is not stored.bridge
        await wait_for(pilot, lambda: stored.attached)
        assert not first.attached and len(stored.fold.items) > 1
