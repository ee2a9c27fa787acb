"""The seed loader's fast paths (``Session._load_seed``: chunks, boundary events, plain types, inline envelope)
must accept exactly what the generic event-by-event path accepts, leave the same state, and let the generic
path name the same first error. Every case is run twice, with the fast paths on and off, and compared."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from dsh_tui.session import rows
from dsh_tui.session import seed as seed_mod
from dsh_tui.session.errors import DshError
from dsh_tui.session.log import Session, check_seed
from dsh_tui.store import jsonl
from tests.store.jsonl_helpers import fixture_events, header, session_logs

HDR = header()


def _state(s: Session) -> tuple:
    r = s._rel
    return (list(s.events), s.surface_nodes, s.replace_generation, r.open_turn, r.last_turn, r.open_step,
            r.last_step, sorted(r.step_calls), s._header_ev, s._context_ev, s._title, s._todos_ev, s._end_seed)


def _outcome(seed: Any, fast: bool, **kw: Any) -> tuple:
    old = seed_mod._SEED_FAST_PATHS
    seed_mod._SEED_FAST_PATHS = fast
    try:
        return ("ok", _state(Session(kw.pop("hdr", HDR), seed, clock=lambda: 1_800_000_000_000, **kw)))
    except DshError as err:
        return ("error", type(err).__name__, str(err))
    except (TypeError, KeyError, AttributeError, ValueError) as err:  # must not happen: a validator crashed
        return ("crash", type(err).__name__, str(err))
    finally:
        seed_mod._SEED_FAST_PATHS = old


def _same(seed_factory: Any, **kw: Any) -> tuple:
    fast = _outcome(seed_factory(), True, **kw)
    slow = _outcome(seed_factory(), False, **kw)
    assert fast == slow
    return fast


# ------------------------------------------------------------------------------------------ mutations

_VALUES = [-0.0, 1.0, 1.5, True, None, "1", 2**53, [], {}, {"z": -0.0}]


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every key/index path inside ``value`` (containers and leaves)."""
    out = []
    if type(value) is dict:
        for k, v in value.items():
            out.append((*path, k))
            out += _paths(v, (*path, k))
    elif type(value) is list:
        for i, v in enumerate(value):
            out.append((*path, i))
            out += _paths(v, (*path, i))
    return out


def _set(ev: dict, path: tuple, value: Any) -> None:
    target = ev
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value


def _delete(ev: dict, path: tuple) -> None:
    target = ev
    for k in path[:-1]:
        target = target[k]
    del target[path[-1]]


def _mutations(ev: dict) -> list[Any]:
    """Edits of one event: envelope fields, every data path set to odd values or removed, extra keys."""
    out: list[Any] = [
        lambda e: e.update(seq=e["seq"] + 1), lambda e: e.update(time=1.5), lambda e: e.update(time=2**53),
        lambda e: e.update(time=True), lambda e: e.update(type=""), lambda e: e.update(type=5),
        lambda e: e.update(ignorable=True), lambda e: e.update(ignorable=False), lambda e: e.update(extra=1),
        lambda e: e.pop("data"), lambda e: e.update(data=[]), lambda e: e.update(data=None),
        lambda e: e.update(surfaceOp="append"), lambda e: e.pop("surfaceOp", None),
        lambda e: e.update(sourceEventSeqs=[0]), lambda e: e.update(type="plugin/unknown"),
        lambda e: e["data"].update(x=-0.0), lambda e: e["data"].update(x=1),
    ]
    for path in _paths(ev["data"]):
        full = ("data", *path)
        out.append(lambda e, p=full: _delete(e, p))
        for v in _VALUES:
            out.append(lambda e, p=full, v=v: _set(e, p, copy.deepcopy(v)))
        out.append(lambda e, p=full: _set(e, p, _bump(e, p)))
    return out


def _bump(ev: dict, path: tuple) -> Any:
    target = ev
    for k in path:
        target = target[k]
    return target + 1 if type(target) is int else target


def _kind(ev: dict) -> tuple:
    d = ev["data"]
    return ev["type"], d["chunk"]["type"] if ev["type"] == "assistant/chunk" else None


@cache
def _mutated_seeds() -> list[tuple[str, list[dict]]]:
    """Edits of the first two events of every kind (chunk types apart) of a recorded tool round."""
    base = fixture_events("tool-call-turn")
    seen: dict[tuple, int] = {}
    out = []
    for i, ev in enumerate(base):
        seen[_kind(ev)] = seen.get(_kind(ev), 0) + 1
        if seen[_kind(ev)] > 2:
            continue
        for k, mutate in enumerate(_mutations(ev)):
            seed = copy.deepcopy(base)
            try:
                mutate(seed[i])
            except (KeyError, TypeError, IndexError, AttributeError):
                continue
            out.append((f"{i}-{ev['type']}-{k}", seed))
    return out



def test_the_mutation_set_reaches_every_fast_path_and_both_outcomes():
    base = fixture_events("tool-call-turn")
    types = {ev["type"] for ev in base}
    assert {"assistant/chunk", "step/start", "step/end", "turn/start", "turn/end", "tool/call",
            "agent/inbox/spliced", "user/message", "assistant/message", "tool/result"} <= types
    outcomes = [_outcome(copy.deepcopy(seed), True)[0] for _, seed in _mutated_seeds()[::7]]
    assert "ok" in outcomes and "error" in outcomes and "crash" not in outcomes
    assert len(_mutated_seeds()) > 1000


@pytest.mark.parametrize("check_relations", [True, False])
def test_every_single_event_edit_is_judged_alike_with_and_without_the_fast_paths(check_relations):
    # without the relation rules only the chunk and plain-type paths run: every third edit is enough
    for name, seed in _mutated_seeds()[:: 1 if check_relations else 3]:
        fast = _outcome(copy.deepcopy(seed), True, check_relations=check_relations)
        slow = _outcome(copy.deepcopy(seed), False, check_relations=check_relations)
        assert fast == slow, name
        assert fast[0] != "crash", (name, fast)


def test_every_recorded_log_loads_alike_compact_and_with_packed_runs():
    for path in session_logs():
        prefix = jsonl.scan_buffer(path.read_bytes(), None, lenient=True, projected=None)
        kw = {"hdr": prefix.header, "lenient": True}
        compact = _same(lambda prefix=prefix: prefix.events, **kw)  # an EventList with compact rows
        plain = _same(lambda prefix=prefix: list(prefix.events), **kw)
        assert compact == plain, path
        # a plain list seed with the spans of the rows it was expanded from
        lines = rows.pack_batch(list(prefix.events))
        expanded, runs = rows.expand_lines_with_runs(lines)
        assert _same(lambda expanded=expanded: expanded, packed_runs=runs, **kw) == plain, path


# ------------------------------------------------------------------------------------------ check_seed


def _checked(seed: Any, **kw: Any) -> tuple:
    """``log.check_seed``'s verdict in ``_outcome``'s form (no state: nothing is kept)."""
    try:
        check_seed(kw.pop("hdr", HDR), seed, **kw)
        return ("ok",)
    except DshError as err:
        return ("error", type(err).__name__, str(err))
    except (TypeError, KeyError, AttributeError, ValueError) as err:  # must not happen: a validator crashed
        return ("crash", type(err).__name__, str(err))


def _verdict(outcome: tuple) -> tuple:
    return outcome[:1] if outcome[0] == "ok" else outcome


def test_check_seed_judges_every_single_event_edit_as_the_session_does_and_leaves_the_seed_alone():
    for name, seed in _mutated_seeds():
        session = _outcome(copy.deepcopy(seed), True)
        mine = copy.deepcopy(seed)
        checked = _checked(mine)
        assert checked == _verdict(session), name
        assert mine == seed, name  # checked in place: the seed list is the log while it is checked, unchanged


def test_check_seed_judges_every_recorded_log_as_the_session_does_compact_plain_and_with_runs():
    verdicts = set()
    for path in session_logs():
        prefix = jsonl.scan_buffer(path.read_bytes(), None, lenient=True, projected=None)
        kw = {"hdr": prefix.header, "lenient": True}
        compact = prefix.events
        before = list(compact)
        expected = _verdict(_outcome(prefix.events, True, **kw))
        assert _checked(compact, **kw) == expected, path
        assert len(compact) == len(before) and list(compact) == before, path
        assert _checked(list(prefix.events), **kw) == expected, path
        expanded, runs = rows.expand_lines_with_runs(rows.pack_batch(before))
        assert _checked(expanded, packed_runs=runs, **kw) == expected, path
        verdicts.add(expected[0])
    assert verdicts == {"ok", "error"}  # the recordings include replay-only logs the validator refuses


def test_the_surface_appends_of_a_well_formed_log_take_the_fast_path(monkeypatch):
    """user/message, assistant/message and tool/result appends (5 or 6 envelope keys) are checked inline: the
    generic path's surface plan and payload check never run for them (they did before, once per message)."""
    from dsh_tui.session import surface

    base = fixture_events("tool-call-turn")
    assert {"user/message", "assistant/message", "tool/result"} <= {ev["type"] for ev in base}
    planned: list[str] = []
    real_plan = surface.SurfaceFold.plan

    def plan(self: Any, event: dict) -> Any:
        planned.append(event["type"])
        return real_plan(self, event)

    monkeypatch.setattr(surface.SurfaceFold, "plan", plan)
    surface_types = {"user/message", "assistant/message", "tool/result"}
    fast = _outcome(copy.deepcopy(base), True)
    assert fast[0] == "ok" and not surface_types & set(planned)  # (the appended session/end-seed is planned)
    assert _outcome(copy.deepcopy(base), False) == fast
    assert surface_types <= set(planned)
