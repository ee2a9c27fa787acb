"""The scanner's hot loop works out the committed byte offset and the line number where it stops (not per line,
issue #29): garbage on any line of a log, fed whole or in small slices, is reported at that line, and a torn
tail is cut exactly where the last good line ends."""

from __future__ import annotations

import pytest

from dsh_tui.session.errors import SessionCorruptionError
from dsh_tui.store import jsonl
from dsh_tui.store.jsonl.scanner import LineScanner
from tests.store.jsonl_helpers import fixture_events, header, write_log


def _log(tmp_path) -> bytes:
    store = jsonl.JsonlStore(tmp_path / "raw", "none")
    return write_log(store, header(), fixture_events("tool-call-turn"), [13]).read_bytes()


def _scan(data: bytes, piece: int) -> LineScanner:
    first = data.index(b"\n") + 1
    scanner = LineScanner(data[:first])
    for k in range(first, len(data), piece):
        scanner.write(data[k : k + piece])
    scanner.finish()
    return scanner


@pytest.mark.parametrize("piece", [1 << 20, 997, 61])
def test_garbage_on_any_line_is_reported_at_that_line_or_cut_where_the_good_lines_end(tmp_path, piece):
    data = _log(tmp_path)
    lines = data.split(b"\n")[:-1]  # the header, then the body's lines
    last_turn_end = max(i for i, line in enumerate(lines) if b'"turn/end"' in line)
    for victim in range(1, len(lines)):
        mod = list(lines)
        mod[victim] = b'{"type":'
        buf = b"\n".join(mod) + b"\n"
        if victim < last_turn_end:
            with pytest.raises(SessionCorruptionError, match=f"unparsable committed event at line {victim}$"):
                _scan(buf, piece)
        else:
            scanner = _scan(buf, piece)
            assert scanner.committed_bytes == sum(len(x) + 1 for x in mod[:victim]), victim
            assert scanner.line_no == len(mod) - 1, victim
    whole = _scan(data, piece)
    assert whole.committed_bytes == len(data) and whole.line_no == len(lines) - 1
