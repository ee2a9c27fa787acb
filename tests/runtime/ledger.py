"""The state of each of dsh 0.1.1-rc.2's 126 recorded scenarios: replays here (and through which harness), or
the feature it needs. ``test_conformance.py::test_inventory`` prints it; ``docs/conformance.md`` records it.

The 126: every scenario of the corpus inventory (``tests/fixtures/dsh-inventory.tsv``, the session-format
reference's section 6.1) and the headless stream-json recordings it does not list, less
``packages/test-support/acp-snapshot/tests/fixtures`` (the snapshot harness's own unit-test fixtures, not
recordings of dsh). A scenario replays when one of the harnesses below runs it and compares everything that
harness defines against dsh's recording; each harness's own table says why it does not run the others:

- loop: ``tests/runtime/conformance.py`` (the driver and built-in plugins on the replayed model side; the
  loop's rows, calls, deterministic results, titles, instructions, injected notices);
- ACP: ``tests/cli/test_acp_conformance.py`` (a real ``dsh-tui acp`` against ``stdout.expected.jsonl``);
- JSON-RPC: ``tests/cli/test_jsonrpc_conformance.py`` (``dsh-tui --profile sdk`` against the notifications);
- stream-json: ``tests/cli/test_output_format.py`` (``run --headless --output-format stream-json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FIXTURES, INVENTORY

TOTAL = 126
HARNESS_FIXTURES = "packages/test-support/"
# Scenarios of the Web UI's browser lane: dsh's replay there drives a real Chromium and compares the
# accessibility trees it renders (``*.expected.md``); dsh-tui has no web UI.
WEB = "apps/web/"
WEB_NEEDS = "dsh's web UI (its browser replay compares the rendered accessibility trees, ui.expected.md)"


@dataclass(frozen=True)
class State:
    scenario: str
    harnesses: tuple[str, ...]  # the harnesses that replay it (empty: it does not)
    needs: str = ""  # what it needs, when it does not replay

    @property
    def replays(self) -> bool:
        return bool(self.harnesses)


def scenarios() -> list[str]:
    rows = {line.split("\t", 1)[0] for line in INVENTORY.read_text().splitlines() if line and line[0] != "#"}
    streams = {str(p.parent.relative_to(FIXTURES)) for p in FIXTURES.glob("examples/**/stream-json.expected.jsonl")}
    return sorted(r for r in rows | streams if not r.startswith(HARNESS_FIXTURES))


def _reasons() -> dict[str, dict[str, str | None]]:
    """Per harness: scenario -> None (replays) or the reason it does not."""
    from tests.cli import test_acp_conformance as acp
    from tests.cli import test_jsonrpc_conformance as jsonrpc
    from tests.cli import test_output_format as stream
    from tests.runtime import conformance as loop

    def key(d: Path) -> str:
        return str(d.relative_to(FIXTURES))

    out: dict[str, dict[str, str | None]] = {"loop": {}, "ACP": {}, "JSON-RPC": {}, "stream-json": {}}
    for d in loop.scenario_dirs():
        out["loop"][key(d)] = loop.applicability(d)
    for d in loop.headless_dirs():
        out["loop"][key(d)] = loop.headless_applicability(d)
    for d in loop.seeded_dirs():
        out["loop"][key(d)] = loop.seeded_applicability(d)
    out["loop"][key(loop.SETTLEMENT_DIR)] = None  # run_settlement
    for d in acp.SCENARIOS:
        out["ACP"][key(d)] = acp.acp_applicability(d)
    for name in jsonrpc.SCENARIOS:
        out["JSON-RPC"][key(jsonrpc.SNAPSHOTS / name)] = jsonrpc.NOT_APPLICABLE.get(name)
    for d in stream.HEADLESS_STREAMS:
        out["stream-json"][key(d)] = stream.STREAM_NOT_APPLICABLE.get(d.name)
    return out


def states() -> list[State]:
    reasons = _reasons()
    out = []
    for sid in scenarios():
        runs = tuple(h for h, table in reasons.items() if sid in table and table[sid] is None)
        if runs:
            out.append(State(sid, runs))
        elif not (FIXTURES / sid).is_dir():
            out.append(State(sid, (), "its recording is not in this corpus"))
        elif sid.startswith(WEB):
            out.append(State(sid, (), WEB_NEEDS))
        else:
            whys: dict[str, list[str]] = {}
            for h, table in reasons.items():
                if table.get(sid):
                    whys.setdefault(str(table[sid]), []).append(h)
            why = [w if len(whys) == 1 else f"{'/'.join(hs)}: {w}" for w, hs in whys.items()]
            out.append(State(sid, (), "; ".join(why) or "no harness runs it"))
    return out


def report(rows: list[State]) -> str:
    n = sum(r.replays for r in rows)
    lines = [f"conformance: {n} of {len(rows)} dsh scenarios replay"]
    for r in rows:
        lines.append(f"  {'replays' if r.replays else 'needs  '} {r.scenario} - "
                     + (", ".join(r.harnesses) if r.replays else r.needs))
    return "\n".join(lines)


DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
BEGIN, END = "<!-- ledger: begin -->", "<!-- ledger: end -->"


def markdown(rows: list[State]) -> str:
    """The docs' record of the states (between the ledger markers of docs/conformance.md)."""
    n = sum(r.replays for r in rows)
    lines = [BEGIN, f"**{n} of {len(rows)}** scenarios replay.", "", "| scenario | state |", "|---|---|"]
    for r in rows:
        state = "replays (" + ", ".join(r.harnesses) + ")" if r.replays else "needs: " + r.needs
        lines.append(f"| `{r.scenario}` | {state.replace('|', '/')} |")
    lines.append(END)
    return "\n".join(lines)


def documented() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(BEGIN):text.index(END) + len(END)]


if __name__ == "__main__":  # python -m tests.runtime.ledger: rewrite the record in docs/conformance.md
    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(text.replace(documented(), markdown(states())), encoding="utf-8")
    print(report(states()).splitlines()[0])
