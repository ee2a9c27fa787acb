"""Files the harness reads on its own initiative are no door out of the workspace (issue 26, item 1).

A hostile repository in a temp dir: ``AGENTS.md -> /proc/self/environ``, ``CLAUDE.md -> /etc/passwd``,
``AGENTS.local.md -> a file outside``. A real ``dsh-tui run --headless --preset read-only`` subprocess talks to
a real HTTP server on 127.0.0.1; the secret in dsh-tui's environment reaches neither the log nor the request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_tui.extensions.instructions import InstructionsConfig, Workspace
from dsh_tui.store.fixture import open_log_file
from dsh_tui.tools import wsread

SECRET = "sk-wsfiles-planted-secret-6c1f0e"


def _settings(base_url: str) -> None:
    from dsh_tui.config import settings_path

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "{base_url}/v1"\n')


def _hostile_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").symlink_to("/proc/self/environ")
    (repo / "CLAUDE.md").symlink_to("/etc/passwd")
    (tmp_path / "outside.md").write_text("OUTSIDE-TEXT never to be read\n")
    (repo / "AGENTS.local.md").symlink_to(tmp_path / "outside.md")
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("Inside rule: use tabs.\n")
    (repo / "CLAUDE.local.md").symlink_to("docs/rules.md")  # a sibling inside the workspace: followed
    return repo


def test_wsread_rules(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "in.md").write_text("in")
    (ws / "link.md").symlink_to("in.md")
    (tmp_path / "out.md").write_text("out")
    (ws / "out.md").symlink_to(tmp_path / "out.md")
    (ws / "env").symlink_to("/proc/self/environ")
    os.mkfifo(ws / "fifo")
    (ws / "big.md").write_bytes(b"x" * 101)
    assert wsread.read(ws / "link.md", ws, 100) == b"in"
    assert wsread.read(ws / "missing.md", ws, 100) is None
    assert "outside the workspace" in wsread.read(ws / "out.md", ws, 100).reason
    assert wsread.read(tmp_path / "out.md", None, 100) == b"out"  # the user's own file (no workspace)
    assert "system file system" in wsread.read(ws / "env", None, 100).reason  # never, even for the user's own
    assert "not a regular file" in wsread.read(ws / "fifo", ws, 100).reason  # and it does not block
    assert "larger than 100 bytes" in wsread.read(ws / "big.md", ws, 100).reason


def test_instruction_symlinks_out_of_the_workspace_are_skipped(tmp_path):
    repo = _hostile_repo(tmp_path)
    ws = Workspace(repo, InstructionsConfig(), env={"DSH_HOME": str(tmp_path / "home")})
    sources = ws.baseline_sources()
    assert [(s.path, s.content) for s in sources] == [("CLAUDE.local.md", "Inside rule: use tabs.\n")]
    assert sorted(os.path.basename(s.path) for s in ws.skipped) == ["AGENTS.local.md", "AGENTS.md", "CLAUDE.md"]


def test_headless_read_only_run_in_a_hostile_repo_leaks_no_secret(tmp_path):
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc")
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    repo = _hostile_repo(tmp_path)
    root = tmp_path / "root"
    env = dict(os.environ, WSFILES_FAKE_KEY=SECRET)
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("hello"), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})))
        _settings(srv.base_url)
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "hi", "--preset", "read-only",
                            "--root", str(root)], cwd=repo, capture_output=True, text=True, timeout=120, env=env)
        requests = "\n".join(r["raw"].decode("utf-8", "replace") + json.dumps(r["headers"])
                             for r in srv.requests + srv.title_requests)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello\n"
    assert "Inside rule: use tabs." in requests  # the sibling inside the workspace is followed
    for leak in (SECRET, "WSFILES_FAKE_KEY", "root:x:0:0", "OUTSIDE-TEXT"):
        assert leak not in requests
    logs = list(root.rglob("session*.jsonl*"))
    assert len(logs) == 1
    for f in root.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes()
    events = open_log_file(logs[0]).events
    skipped = [e for e in events if e["type"] == "agent-instructions/skipped"]
    assert sorted(e["data"]["path"] for e in skipped) == ["AGENTS.local.md", "AGENTS.md", "CLAUDE.md"]
    assert all(e.get("ignorable") is True for e in skipped)  # dsh skips a type it does not know
    assert "dsh-tui: skipped instruction file AGENTS.md: points into a system file system" in p.stderr
    assert "Traceback" not in p.stderr


# -------------------------------------------------------------------------------------------------
# Hostile skills (issue 26, item 6): one bad skill is that skill's load error, never the turn's


def _skill(folder: Path, name: str, front: str = "", body: str = "Do it.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: the {name} skill\n{front}---\n{body}\n")
    return path


def _hostile_skills(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    skills = repo / ".dsh" / "skills"
    _skill(skills / "good", "good")
    _skill(skills / "deep", "deep", front="meta: " + "[" * 5000 + "]" * 5000 + "\n")
    big = _skill(skills / "huge", "huge")
    with open(big, "r+b") as fh:  # a 1.5 GB sparse file: reading it whole would take seconds and gigabytes
        fh.truncate(1536 * 1024 * 1024)
    (tmp_path / "secret").mkdir()
    _skill(tmp_path / "secret", "outside", body="OUTSIDE-SKILL-BODY")
    (skills / "outside").symlink_to(tmp_path / "secret")
    (skills / "env.md").symlink_to("/proc/self/environ")
    return repo


def test_discovery_skips_hostile_skills_with_a_reason_and_keeps_the_good_one(tmp_path, monkeypatch):
    from dsh_tui.extensions import skills as sk

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = _hostile_skills(tmp_path)
    skipped: list[tuple[str, str]] = []
    found = sk.discover(repo, env={}, skipped=skipped)
    assert [s.name for s in found] == ["good"]
    reasons = {Path(p).relative_to(repo).as_posix(): r for p, r in skipped}
    assert reasons[".dsh/skills/deep/SKILL.md"] == "front matter nested deeper than 64 levels"
    assert reasons[".dsh/skills/huge/SKILL.md"].startswith("larger than 1048576 bytes")
    assert reasons[".dsh/skills/outside/SKILL.md"].startswith("points outside the workspace")
    assert reasons[".dsh/skills/env.md"].startswith("points into a system file system")


def test_a_skill_is_parsed_once_while_it_is_unchanged(tmp_path, monkeypatch):
    from dsh_tui.extensions import skills as sk

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    path = _skill(repo / ".dsh" / "skills" / "one", "one", body="first")
    calls = []
    real = sk.parse_skill_text
    monkeypatch.setattr(sk, "parse_skill_text", lambda text: calls.append(1) or real(text))
    for _ in range(3):
        [skill] = sk.discover(repo, env={})
        assert skill.body() == "first"
    assert len(calls) == 1
    path.write_text(path.read_text().replace("first", "second, longer"))
    [skill] = sk.discover(repo, env={})
    assert skill.body() == "second, longer" and len(calls) == 2


def test_headless_turn_in_a_repo_with_hostile_skills_completes(tmp_path):
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    repo = _hostile_skills(tmp_path)
    root = tmp_path / "root"
    env = dict(os.environ, HOME=str(tmp_path / "home"), WSFILES_FAKE_KEY=SECRET)
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("hello"), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})))
        _settings(srv.base_url)
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "hi", "--preset", "read-only",
                            "--root", str(root)], cwd=repo, capture_output=True, text=True, timeout=120, env=env)
        requests = "\n".join(r["raw"].decode("utf-8", "replace") for r in srv.requests)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello\n"
    assert "- `good`: the good skill" in requests
    for leak in ("`deep`", "`huge`", "`outside`", SECRET):
        assert leak not in requests
    events = open_log_file(next(root.rglob("session*.jsonl*"))).events
    skipped = {e["data"]["path"]: e["data"]["reason"] for e in events if e["type"] == "skills/skipped"}
    assert set(skipped) == {".dsh/skills/deep/SKILL.md", ".dsh/skills/huge/SKILL.md",
                            ".dsh/skills/outside/SKILL.md", ".dsh/skills/env.md"}
    assert "dsh-tui: skipped skill .dsh/skills/deep/SKILL.md: front matter nested deeper than 64 levels" in p.stderr

    from dsh_tui.session.transcript import fold_transcript

    rows = [i.text for i in fold_transcript(None, events).items if i.kind == "divider"]
    assert "skipped skill .dsh/skills/deep/SKILL.md: front matter nested deeper than 64 levels" in rows


def test_the_at_file_index_offers_no_symlink_out_of_the_workspace(tmp_path):
    from dsh_tui.extensions.filerefs import PathIndex

    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("x")
    (ws / "out").symlink_to(tmp_path / "outside")
    (ws / "env").symlink_to("/proc/self/environ")
    (ws / "loop").symlink_to(".")  # inside: listed, not walked again
    (ws / "alias.py").symlink_to("src/a.py")
    index = PathIndex(ws).start()
    assert index.done.wait(10)
    assert sorted(index.entries) == ["alias.py", "loop/", "src/", "src/a.py"]


def test_git_head_and_ignore_files_are_not_read_from_proc_or_dev(tmp_path):
    from dsh_tui.runtime import prompt
    from dsh_tui.tools.search.ignore import _parse_ignore

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").symlink_to("/proc/self/environ")
    prompt._HEAD_CACHE.clear()
    assert prompt.git_branch(repo) is None  # main: "(detached at <the first 12 bytes of the environment>)"
    (repo / ".gitignore").symlink_to("/dev/zero")  # one endless line: the search would never start
    assert _parse_ignore(str(repo / ".gitignore")) == []
    (repo / ".ignore").write_text("*.log\r\n# c\n")
    assert len(_parse_ignore(str(repo / ".ignore"))) == 1
