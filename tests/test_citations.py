"""Comments and docstrings cite only documents that are in the repository.

The harness rules the code relies on are in ``docs/runtime.md``, ``docs/extensions.md`` and
``docs/format.md``; a ``.py`` file under ``dsh_tui/`` must not cite a ``.md`` file that does not exist here,
use ``§`` section numbers, or cite the specifications outside the repository ("runtime spec",
"extensions spec", "session spec", "runtime-corrections"). A citation of a section,
``(docs/runtime.md, "Scheduler")``, must name a heading of that document.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# File names the code reads in a user's workspace or writes as data, not documents it cites.
DATA_NAMES = {"AGENTS.md", "CLAUDE.md", "AGENTS.local.md", "CLAUDE.local.md", "SKILL.md"}

MD_NAME = re.compile(r"(?<![\w.\\-])([A-Za-z0-9_][\w./-]*\.md)\b")
FORBIDDEN = re.compile(r"§|runtime[ -]spec|extensions[ -]spec|session[ -]spec|runtime-corrections", re.I)
SECTION = re.compile(r"(docs/[\w./-]+\.md),?\s+\"([^\"]+)\"")


def _headings(doc: Path) -> set[str]:
    """Markdown headings and run-in bold headings (``**Layout.** ...``) of ``doc``."""
    text = doc.read_text(encoding="utf-8")
    names = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
    names.update(m.rstrip(".") for m in re.findall(r"\*\*([^*\n]+)\*\*", text))
    return names


def problems(root: Path) -> list[str]:
    """Every bad citation in ``root/dsh_tui/**/*.py``, as ``path:line: why``."""
    found: list[str] = []
    for path in sorted((root / "dsh_tui").rglob("*.py")):
        rel = path.relative_to(root)
        text = path.read_text(encoding="utf-8")
        for lineno, line in enumerate(text.splitlines(), 1):
            m = FORBIDDEN.search(line)
            if m:
                found.append(f"{rel}:{lineno}: cites {m.group(0)!r}, a document outside the repository")
            for name in MD_NAME.findall(line):
                if name.rsplit("/", 1)[-1] in DATA_NAMES:
                    continue
                exists = (root / name).is_file() if "/" in name else (
                    (root / name).is_file() or (root / "docs" / name).is_file())
                if not exists:
                    found.append(f"{rel}:{lineno}: cites {name}, which is not in the repository")
        flat = " ".join(text.split())  # a citation may wrap over two lines
        for doc, heading in SECTION.findall(flat):
            target = root / doc
            if target.is_file() and heading not in _headings(target):
                found.append(f"{rel}: cites {doc}, \"{heading}\", which is not a heading of {doc}")
    return found


def test_dsh_tui_cites_only_documents_in_the_repository() -> None:
    assert problems(ROOT) == []


def test_the_check_catches_each_kind_of_bad_citation(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runtime.md").write_text("# Runtime\n\n## Scheduler\n", encoding="utf-8")
    pkg = tmp_path / "dsh_tui"
    pkg.mkdir()
    (pkg / "good.py").write_text(
        '"""The scheduler (docs/runtime.md, "Scheduler"); reads AGENTS.md and nested/SKILL.md."""\n',
        encoding="utf-8")
    assert problems(tmp_path) == []
    bad = {
        "a.py": '"""The scheduler (runtime spec 5.5)."""\n',
        "b.py": "# see extensions spec §4\n",
        "c.py": '"""Retry (corrections C14, runtime-corrections.md)."""\n',
        "d.py": "# as product.md's table says\n",
        "e.py": '"""See docs/missing.md."""\n',
        "f.py": '"""The pool (docs/runtime.md,\n"Parallel pool")."""\n',
        "g.py": "# Session spec 2.2 fold\n",
    }
    for name, text in bad.items():
        (pkg / name).write_text(text, encoding="utf-8")
    flagged = {line.split(":", 1)[0].rsplit("/", 1)[-1] for line in problems(tmp_path)}
    assert flagged == set(bad)
