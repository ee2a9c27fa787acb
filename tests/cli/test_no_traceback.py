"""Issue #15, "no traceback ever": every failure the attack found is one line on stderr (``dsh-tui: ...``)
and exit 1 (2 for usage), and a property-based guard over commands x bad ids x bad paths x bad environments.

In process (``dsh_tui.cli.main``) where possible; real subprocesses for what needs a process of its own: a
file-size limit (``RLIMIT_FSIZE``) and permission checks. The suite runs as root, whose permission bypass
would hide a chmod 000: those subprocesses drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from their
bounding set before exec (``prctl(PR_CAPBSET_DROP)``), so the kernel's permission checks really apply.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_tui.cli import main
from tests.store.test_catalog_support import make_header, user_turn, write_session

REPO = Path(__file__).resolve().parents[2]


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line(rc: int, err: str, codes=(1, 2)) -> None:
    assert rc in codes, (rc, err)
    assert err.count("\n") == 1 and err.startswith("dsh-tui: ") and "Traceback" not in err, err


def _drop_dac() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_sub(*argv, env=None, cwd=None, unprivileged=False, fsize=None) -> subprocess.CompletedProcess:
    def pre():
        if unprivileged:
            _drop_dac()
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([sys.executable, "-m", "dsh_tui", *[str(a) for a in argv]], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, **(env or {})), cwd=cwd or REPO,
                          preexec_fn=pre)


def unprivileged_works(tmp_path) -> bool:
    d = tmp_path / "probe"
    d.mkdir()
    d.chmod(0)
    p = subprocess.run([sys.executable, "-c", f"import os; os.listdir({str(d)!r})"], preexec_fn=_drop_dac,
                       capture_output=True)
    d.chmod(0o700)
    return p.returncode != 0


def tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")) if root.exists() else []:
        if p.is_file() and p.name != "session.lock":
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    write_session(r, make_header("aaaa-1", str(tmp_path)), user_turn(0, 1, "hello", "world"))
    write_session(r, make_header("aaaa-2", str(tmp_path)), user_turn(0, 1, "again", "there"))
    return r


# ---------------------------------------------------------------------------------------------------------
# the tracebacks of the issue, one by one


def test_export_to_an_unwritable_output_is_one_line(root, tmp_path, capsys):
    for target, why in ((tmp_path / "no" / "dir" / "x.md", "No such file or directory"),
                        (tmp_path, "it is a directory"), ("/dev/full", "No space left on device")):
        rc, _, err = cli(capsys, "export", "aaaa-1", "-o", target, "--root", root)
        assert_one_line(rc, err, (1,))
        assert f"cannot write {target}: {why}" in err


def test_a_non_utf8_session_directory_is_listed_as_unreadable(root, capsys):
    bad = root / "--proj--" / os.fsdecode(b"sess\xff")
    bad.mkdir(parents=True)
    (bad / "session.jsonl").write_text(
        '{"type":"session","version":0,"id":"badname","createdAt":1,"delegationDepth":0}\n')
    for extra in ((), ("--json",), ("--search", "hello"), ("--search", "hello", "--json")):
        rc, out, err = cli(capsys, "sessions", "--all", "--root", root, *extra)
        assert rc == 0 and err == "", err
        if not extra:
            assert "unreadable: its file name is not valid UTF-8" in out and "aaaa-1" in out
        if extra == ("--json",):
            assert "sess\\\\xff" in out
    rc, out, err = cli(capsys, "export", "aaaa-1", "--root", root)
    assert rc == 0 and "hello" in out


def test_dsh_home_or_cache_dir_naming_a_file(tmp_path, capsys, monkeypatch, root):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("DSH_HOME", str(a_file))
    rc, _, err = cli(capsys, "run", "--headless", "hi")
    assert_one_line(rc, err, (1,))
    assert "Not a directory" in err
    # the catalog is a cache: commands go on without it
    for cache in (str(a_file), "/proc/x"):
        monkeypatch.setenv("XDG_CACHE_HOME", cache)
        rc, out, err = cli(capsys, "sessions", "--all", "--root", root)
        assert rc == 0 and "aaaa-1" in out and "aaaa-2" in out, err
        rc, out, err = cli(capsys, "sessions", "--all", "--root", root, "--search", "again")
        assert rc == 0 and "aaaa-2" in out and "aaaa-1" not in out, err
        rc, out, err = cli(capsys, "export", "aaaa-2", "--root", root)
        assert rc == 0 and "again" in out


def test_garbage_sqlite_store_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")
    r = tmp_path / "r"
    r.mkdir()
    db = r / "sessions.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    db.chmod(0o600)
    rc, _, err = cli(capsys, "run", "--headless", "hi", "--root", r)
    assert_one_line(rc, err, (1,))
    assert str(db) in err and "not a database" in err


def test_deeply_nested_line_is_one_line_for_every_log_action(tmp_path, capsys):
    """A line of 100,000 nested ``[`` is an unparsable line like any other (Python's parser gives up on
    it with a RecursionError): inside the committed region (a later ``turn/end``) the log is corrupt,
    one line and exit 1 for every action, nothing written."""
    header = '{"type":"session","version":0,"id":"n1","createdAt":1,"delegationDepth":0}\n'
    path = tmp_path / "nest.jsonl"
    path.write_text(header + "[" * 100_000 + "\n"
                    + '{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    before = path.read_bytes()
    for action in ("cat", "messages", "repair"):
        rc, _, err = cli(capsys, "log", action, path)
        assert_one_line(rc, err, (1,))
        assert f"{path}: corrupt session log: unparsable committed event" in err
    rc, out, _ = cli(capsys, "log", "check", path)
    assert rc == 1 and '"ok":false' in out and "unparsable committed event" in out
    assert path.read_bytes() == before


def test_deeply_nested_last_line_is_a_torn_tail_everywhere(tmp_path, capsys):
    """The same line as the last one is a torn tail (dsh's read rule): ``log check``, ``cat``, the catalog
    and ``repair`` agree (``check`` used to report a RecursionError and the others refused the file while
    the catalog listed it as interrupted)."""
    root = tmp_path / "root"
    sdir = root / "_no-cwd" / "n1"
    sdir.mkdir(parents=True)
    path = sdir / "session.jsonl"
    header = '{"type":"session","version":0,"id":"n1","createdAt":1,"delegationDepth":0}\n'
    path.write_text(header + "[" * 100_000 + "\n")
    rc, out, err = cli(capsys, "log", "check", path)
    assert rc == 0 and '"ok":true' in out and '"torn_bytes":100001' in out, out + err
    rc, out, err = cli(capsys, "log", "cat", path)
    assert rc == 0 and out == "", err  # the committed prefix: no event
    rc, out, err = cli(capsys, "sessions", "--all", "--root", root, "--json")
    assert rc == 0 and '"reason": "torn tail: unparsable line 2"' in out, out + err
    rc, out, err = cli(capsys, "log", "repair", path)
    assert rc == 0 and "cut a torn tail of 100001 bytes" in out, err
    assert path.read_text() == header


def test_sessions_root_that_is_a_file_says_so(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("")
    for argv in (("sessions",), ("sessions", "--all"), ("resume", "x"), ("export", "x"), ("fork", "x")):
        rc, _, err = cli(capsys, *argv, "--root", f)
        assert_one_line(rc, err, (1,))
        assert "not a directory" in err


def test_a_dsh_home_that_is_a_file_says_so(tmp_path, capsys, monkeypatch):
    # the default root ($DSH_HOME/sessions) is always read: a file there listed "no sessions" (exit 0)
    f = tmp_path / "f"
    f.write_text("")
    monkeypatch.setenv("DSH_HOME", str(f))
    for argv in (("sessions",), ("sessions", "--all"), ("resume", "x"), ("export", "x"), ("fork", "x")):
        rc, _, err = cli(capsys, *argv)
        assert_one_line(rc, err, (1,))
        assert f"{f} is not a directory" in err and "DSH_HOME" in err


def test_fork_and_resume_resolve_ids_like_every_command(root, capsys, tmp_path):
    rc, _, err = cli(capsys, "fork", "aaaa", "--root", root)
    assert_one_line(rc, err, (1,))
    assert "ambiguous" in err
    assert "aaaa-1" in err and "aaaa-2" in err  # the candidates are listed (issue #26 item 22)
    rc, out, err = cli(capsys, "fork", "aaaa-1", "--root", root)
    assert rc == 0, err
    log = next(root.rglob("aaaa-2/session.jsonl"))
    rc, out, err = cli(capsys, "fork", log.parent, "--root", root)  # a session directory
    assert rc == 0, err
    loose = tmp_path / "loose.jsonl"
    loose.write_bytes(log.read_bytes())
    rc, _, err = cli(capsys, "fork", loose)
    assert_one_line(rc, err, (1,))
    assert "not a session log in a session root" in err
    rc, out, err = cli(capsys, "export", log, "--root", root)  # export takes the file too
    assert rc == 0 and "again" in out


def test_file_size_limits_never_give_a_traceback(root, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache-a")}
    p = run_sub("sessions", "--all", "--root", root, env=env, fsize=1)  # a fresh catalog cannot be written
    assert p.returncode == 0 and "aaaa-1" in p.stdout, p.stderr
    p = run_sub("log", "repair", next(root.rglob("aaaa-1/session.jsonl")), fsize=0)
    assert p.returncode == 0, p.stderr  # healthy: nothing to write; the lock needs no byte
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache-b"), "DEEPSEEK_API_KEY": "sk-test",
           "DEEPSEEK_BASE_URL": "http://127.0.0.1:9"}
    before = tree_digest(root)
    p = run_sub("run", "--headless", "hi", "--root", root, env=env, fsize=0)
    assert_one_line(p.returncode, p.stderr, (1,))
    assert tree_digest(root) == before
    # resume under a limit just above the log's size: a fresh catalog cannot be built on disk, the
    # resume's own appends fail; one line, and the committed log is never cut or rewritten
    log = next(root.rglob("aaaa-1/session.jsonl"))
    committed = log.read_bytes()
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache-c")
    p = run_sub("resume", "aaaa-1", "--root", root, "--headless", "hi", env=env, fsize=len(committed) + 200)
    assert_one_line(p.returncode, p.stderr, (1,))
    assert log.read_bytes()[: len(committed)] == committed


def test_unreadable_directories_without_the_permission_bypass(root, tmp_path):
    if not unprivileged_works(tmp_path):
        pytest.fail("cannot drop CAP_DAC_OVERRIDE here: the permission tests would not test anything")
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    locked = next(root.rglob("aaaa-2/session.jsonl"))
    locked.chmod(0)
    try:
        p = run_sub("fork", locked, "--root", root, env=cache, unprivileged=True)
        assert_one_line(p.returncode, p.stderr, (1,))
        assert p.stderr.endswith(" is unreadable: cannot read: Permission denied\n"), p.stderr  # no [Errno 13]
    finally:
        locked.chmod(0o644)
    # one unreadable session directory: listed with its reason, and every other session still works
    sdir = locked.parent
    sdir.chmod(0)
    try:
        p = run_sub("sessions", "--all", "--root", root, env=cache, unprivileged=True)
        assert p.returncode == 0, p.stderr
        assert "aaaa-1" in p.stdout and f"unreadable: cannot read {sdir}: Permission denied" in p.stdout
        p = run_sub("export", "aaaa-1", "--root", root, env=cache, unprivileged=True)
        assert p.returncode == 0 and "hello" in p.stdout, p.stderr
        p = run_sub("fork", "aaaa-1", "--root", root, env=cache, unprivileged=True)
        assert p.returncode == 0, p.stderr
    finally:
        sdir.chmod(0o755)
    # a root the process cannot read; a root below a read-only directory
    closed = tmp_path / "closed"
    closed.mkdir()
    closed.chmod(0)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    env = dict(cache, DEEPSEEK_API_KEY="sk-test", DEEPSEEK_BASE_URL="http://127.0.0.1:9")
    try:
        p = run_sub("sessions", "--root", closed, env=cache, unprivileged=True, cwd=tmp_path)
        assert p.returncode == 0 and f"unreadable: cannot read {closed}: Permission denied" in p.stdout, p
        for r in (closed, ro / "below"):
            p = run_sub("run", "--headless", "hi", "--root", r, env=env, unprivileged=True, cwd=tmp_path)
            assert_one_line(p.returncode, p.stderr, (1,))
            assert "Permission denied" in p.stderr
    finally:
        closed.chmod(0o755)
        ro.chmod(0o755)


# ---------------------------------------------------------------------------------------------------------
# the guard: commands x bad ids x bad paths x bad environments


def _bad_path(kind: str, tmp: Path) -> str:
    if kind == "missing":
        return str(tmp / "missing" / "x")
    if kind == "directory":
        return str(tmp)
    if kind == "file":
        f = tmp / "plain-file"
        f.write_text("not a log\n")
        return str(f)
    if kind == "non-utf8":
        return str(tmp / os.fsdecode(b"bad\xff"))
    if kind == "devfull":
        return "/dev/full"
    raise AssertionError(kind)


IDS = st.sampled_from(["", "a", "aaaa", "zzzz", "../x", "\udcff", "-", "aaaa-1/..", "x" * 300, "..", "."])
PATHS = st.sampled_from(["missing", "directory", "file", "non-utf8", "devfull"])
ENVS = st.sampled_from(["none", "dsh_home_file", "cache_file", "cache_proc", "config_file"])
COMMANDS = st.sampled_from(["resume", "fork", "export", "export-o", "sessions", "log-cat", "log-messages",
                            "log-repair", "log-check", "run", "resume-root"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=COMMANDS, ident=IDS, path_kind=PATHS, env_kind=ENVS)
def test_guard_never_a_traceback(root, tmp_path, capsys, monkeypatch, command, ident, path_kind, env_kind):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with monkeypatch.context() as m:
        m.setenv("DEEPSEEK_API_KEY", "sk-test")
        m.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")  # refused at once: nothing listens there
        if env_kind == "dsh_home_file":
            m.setenv("DSH_HOME", str(a_file))
        elif env_kind == "cache_file":
            m.setenv("XDG_CACHE_HOME", str(a_file))
        elif env_kind == "cache_proc":
            m.setenv("XDG_CACHE_HOME", "/proc/x")
        elif env_kind == "config_file":
            m.setenv("XDG_CONFIG_HOME", str(a_file))
        if command == "run" and path_kind not in ("file", "devfull"):
            path_kind = "file"  # a usable root would start a real turn (and retry a refused connection)
        bad = _bad_path(path_kind, scratch)
        argv = {
            "resume": ["resume", ident, "--root", root, "--headless", "hi"],
            "resume-root": ["resume", "aaaa-1", "--root", bad, "--headless", "hi"],
            "fork": ["fork", ident or bad, "--root", root],
            "export": ["export", ident, "--root", bad],
            "export-o": ["export", "aaaa-1", "--root", root, "-o", bad],
            "sessions": ["sessions", "--all", "--root", bad],
            "log-cat": ["log", "cat", bad],
            "log-messages": ["log", "messages", bad],
            "log-repair": ["log", "repair", bad],
            "log-check": ["log", "check", bad],
            "run": ["run", "--headless", "hi", "--root", bad],
        }[command]
        before = tree_digest(root)
        rc = main([str(a) for a in argv])
        out, err = capsys.readouterr()
    assert "Traceback" not in err
    if rc != 0:
        if command == "log-check":  # one JSON row per file on stdout, exit 1
            assert rc == 1 and '"ok":false' in out and err == ""
        else:
            assert_one_line(rc, err)
    if command != "fork" or rc != 0:  # only a successful fork writes (a new child; the parent never changes)
        assert tree_digest(root) == before
