"""The start-up budget (issue #29): the modules imported before the first frame, per way of starting the app,
may only be those recorded in ``startup_budget.json``.

Deterministic (no clock): a real app in a fresh process (``startup_probe.py``) stops at its first rendered
frame and lists what it imported. A change that puts a module on that path fails here with the module's
name and the module that imported it, so it can be imported where it is first needed instead (inside the
function, in a lazily applied built-in, in the harness thread after the paint). If the first frame really
needs it, record the budget again and say why in the commit:

    DSH_STARTUP_BUDGET=record .venv/bin/python -m pytest tests/ui/test_startup_budget.py

A module that is no longer imported is not a failure (someone deferred it); recording drops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUDGET = HERE / "startup_budget.json"
PROBE = HERE / "startup_probe.py"
CASES = {"DshApp": "DshApp(None).run()", "run": "dsh-tui run", "browser": "dsh-tui (the session browser)",
         "open": "a stored session of 8,000 events opened from the browser (the frame showing its latest turn)"}


def _environmental(name: str) -> bool:
    """Modules that depend on the machine, not on dsh-tui (locale codecs, the install's own hooks)."""
    top = name.split(".")[0]
    return top in ("encodings", "_distutils_hack", "sitecustomize", "usercustomize", "_virtualenv") \
        or top.startswith(("__editable__", "_sysconfigdata"))


def stored_session(home: Path) -> Path:
    """A log long enough to be opened tail first (more than the chat's TAIL_EVENTS), in a store under ``home``."""
    sys.path.insert(0, str(REPO))
    from dsh_tui.store.open import open_store
    from tests.ui.synthetic import long_session

    header, events = long_session(80, chunks_per_step=91)
    store = open_store(home / "sessions")
    store.create({**header, "id": "budget-open", "cwd": str(home)})
    store.append("budget-open", events)
    return next(p for p in (home / "sessions").rglob("*") if p.name.startswith("session.jsonl"))


def probe(case: str, home: Path) -> dict[str, list[str]]:
    """module -> [importer, thread] for every module imported before the first frame of ``case``.

    ``open``: only the UI thread's imports (the markdown prewarm's thread, a second after the empty app's
    first frame, may import before a slow open's frame or not: never a failure, as the set only shrinks)."""
    out = home / f"{case}.json"
    extra = [str(stored_session(home))] if case == "open" else []
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # no key: no route thread
    env.update({"PYTHONPATH": str(REPO), "DSH_HOME": str(home / "h"), "XDG_CONFIG_HOME": str(home / "c"),
                "XDG_CACHE_HOME": str(home / "k"), "XDG_DATA_HOME": str(home / "d"),
                "TEXTUAL_ANIMATIONS": "none"})
    proc = subprocess.run([sys.executable, str(PROBE), str(out), case, *extra], capture_output=True, text=True,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert out.exists(), f"the {case} probe stopped before its first frame:\n{proc.stderr[-3000:]}"
    return {k: v for k, v in json.loads(out.read_text()).items()
            if not _environmental(k) and (case != "open" or v[1] == "main")}


def over_budget(modules: dict[str, list[str]], allowed: set[str]) -> str:
    """The report of what ``modules`` has beyond ``allowed``: each module whose importer is within the budget
    (where to defer it) with the modules it pulled in; "" when nothing was added."""
    added = sorted(set(modules) - allowed)
    if not added:
        return ""
    added_set = set(added)

    def root(name: str) -> str:
        seen = set()
        while modules[name][0] in added_set and name not in seen:
            seen.add(name)
            name = modules[name][0]
        return name

    pulled: dict[str, list[str]] = {}
    for name in added:
        pulled.setdefault(root(name), []).append(name)
    lines = []
    for name, group in sorted(pulled.items(), key=lambda kv: -len(kv[1])):
        importer, thread = modules[name]
        where = f"imported by {importer}" + ("" if thread == "main" else f" in thread {thread}")
        more = [m for m in group if m != name]
        extra = f"; with {len(more)} more: {', '.join(more[:12])}{', ...' if len(more) > 12 else ''}" if more else ""
        lines.append(f"  {name}  ({where}{extra})")
    return "\n".join([f"{len(added)} module(s) beyond the budget:", *lines])


@pytest.mark.parametrize("case", list(CASES))
def test_the_first_frame_imports_only_the_budgeted_modules(case, tmp_path):
    modules = probe(case, tmp_path)
    if os.environ.get("DSH_STARTUP_BUDGET") == "record":
        budget = json.loads(BUDGET.read_text()) if BUDGET.exists() else {}
        budget[case] = sorted(modules)
        BUDGET.write_text(json.dumps(budget, indent=1, sort_keys=True) + "\n")
        return
    allowed = set(json.loads(BUDGET.read_text())[case])
    report = over_budget(modules, allowed)
    assert not report, (
        f"{CASES[case]}: {report}\nImport these where they are first needed (not at module level on the way to "
        f"the first frame), or, if the first frame needs them, re-record {BUDGET.name} "
        f"(DSH_STARTUP_BUDGET=record; see the module docstring)")


def test_the_report_names_each_added_module_with_its_importer():
    modules = {"textual": ["__main__", "main"], "dsh_tui.ui.app": ["__main__", "main"],
               "httpx": ["dsh_tui.ui.app", "main"], "httpx._client": ["httpx", "main"],
               "httpx._models": ["httpx._client", "main"], "json": ["dsh_tui.ui.app", "worker"]}
    report = over_budget(modules, {"textual", "dsh_tui.ui.app"})
    assert report.splitlines() == [
        "4 module(s) beyond the budget:",
        "  httpx  (imported by dsh_tui.ui.app; with 2 more: httpx._client, httpx._models)",
        "  json  (imported by dsh_tui.ui.app in thread worker)",
    ]
    assert over_budget(modules, set(modules)) == ""
    assert over_budget({"textual": ["__main__", "main"]}, {"textual", "gone"}) == ""  # a deferral passes
