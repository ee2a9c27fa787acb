"""``dsh_tui.session.terminal``: its patterns are compiled on first use and ``needs_cleaning`` skips them for
printable text (#29: the module is on the way to the first frame); what it finds is unchanged."""

from __future__ import annotations

import re
import subprocess
import sys

from dsh_tui.session.terminal import for_terminal, needs_cleaning

# the pattern ``needs_cleaning`` used before: C0 controls but \t and \n, DEL, C1 controls, UTF-16 surrogates
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def test_needs_cleaning_agrees_with_the_pattern_for_every_code_point():
    for code in range(0x110000):
        ch = chr(code)
        assert needs_cleaning(f"a{ch}b") == (UNSAFE.search(ch) is not None), hex(code)
    assert not needs_cleaning("") and not needs_cleaning("tab\there") and needs_cleaning("nl\n\x1b")


def test_for_terminal_still_removes_sequences_and_mends_surrogates():
    assert for_terminal("a\x1b]52;c;eA==\x07b\r\nc\x1b[2Jd\x9b1;2He") == "ab\ncde"
    assert for_terminal("\ud83d\ude00 \ud800") == "\U0001f600 \ufffd"


def test_importing_the_module_compiles_no_pattern():
    code = ("import re, sys; compiled = []; real = re.compile\n"
            "re.compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)\n"
            "import dsh_tui.session.terminal as t\n"
            "assert compiled == [], compiled\n"
            "assert not t.needs_cleaning('printable text, tabs aside'); assert compiled == [], compiled\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
