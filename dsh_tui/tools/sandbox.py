"""The OS sandbox for model-run commands (docs/sandbox.md): dsh's ``sandbox-local`` for ``bash``.

A ``Sandbox`` wraps a command's argv so that it runs confined (``confine``): under ``read-only`` the whole
filesystem is read-only; under ``workspace-write`` the workspace, its git directory (its ``hooks`` and
``config`` stay read-only: they run outside the sandbox later), a fresh temporary directory of the command's
own (``$TMPDIR``) and the user cache directory (dsh-tui's own cache stays read-only) are writable, plus the
``[sandbox] writable`` paths. Everywhere, ``$HOME`` secrets (``~/.ssh``, ``~/.aws``, dsh-tui's credentials
file, ...) are hidden (an empty read-only directory or file over them, unless ``[sandbox] readable``
names them), dsh-tui's settings stay read-only, there is no network unless ``[sandbox] network = true``, and
the command dies with its runner (``--die-with-parent``; its own PID namespace, so nothing it starts outlives
it). ``danger-full-access`` (the ``full-access`` preset, or an approved escalation) runs without a sandbox.

Backends: Linux ``bwrap`` (bubblewrap), probed once per process (``probe``); ``SeatbeltBackend`` is the seam
for macOS ``sandbox-exec`` (its profile is built, but it is not selected yet). Where no backend works,
``probe`` returns why, in one line, and the caller falls back to asking before each command — never a silent
unconfined run. The texts the model sees are dsh's (``escalation_*``, ``DENIAL``).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.tools.common import SANDBOX_DENIED, SANDBOX_ESCALATION_HINT

MODES = ("auto", "bwrap", "off")  # the ``[sandbox] mode`` setting
CONFINED = ("read-only", "workspace-write")  # dsh's confining sandbox modes
WIDER_MODES = {"read-only": ("workspace-write", "danger-full-access"), "workspace-write": ("danger-full-access",)}
ESCALATION_TARGETS = ("workspace-write", "danger-full-access")
DENIAL_SIGNATURES = ("read-only file system",)  # bwrap's read-only binds: EROFS
RUNNER_FAILURE_PREFIX = "bwrap: "
# dsh's runner-failure rules of a backend (sandbox-local's RUNNER_FAILURE_RULES): a nonzero exit (within
# ``allowed_exit_codes`` when given) with one stderr line, not an ``informational_lines`` one, that contains a
# ``fatal_signatures`` substring (case-insensitive) means the runner itself failed and the command did not run.
BWRAP_RUNNER_RULES: tuple[dict[str, Any], ...] = ({"fatal_signatures": (RUNNER_FAILURE_PREFIX,)},)
RUNNER_FAILED = ("[sandbox: the sandbox runner itself failed under {mode} mode — the command did not run; this is a "
                 "sandbox problem, not a command failure]")

# Hidden in every sandbox (relative to $HOME) when they exist: keys and tokens of common tools.
HOME_SECRETS = (
    ".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker", ".netrc", ".git-credentials", ".pypirc", ".npmrc",
    ".password-store", ".config/gcloud", ".config/gh", ".config/hub", ".cargo/credentials",
    ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json", ".dsh/credentials.json",
)


def escalation_args_problem(permissions: Any, justification: Any) -> str | None:
    """dsh's ``validateEscalationArgs``: ``sandbox_permissions`` and ``justification`` travel together."""
    if permissions is not None and justification is None:
        return "invalid escalation: sandbox_permissions requires a justification"
    if justification is not None and permissions is None:
        return "invalid escalation: justification is only valid together with sandbox_permissions"
    if justification is not None and (not isinstance(justification, str) or not justification.strip()):
        return "invalid justification: expected a non-empty sentence"
    return None


def not_wider_text(mode: str, effective: str) -> str:
    return f'sandbox escalation to "{mode}" is not strictly wider than this call\'s current "{effective}" mode'


def escalation_reason(mode: str, justification: str) -> str:
    """The ``approval/asked`` reason of an escalation (dsh's ``approveEscalation``)."""
    return f"escalate sandbox to {mode}: {justification}"


def escalation_outcome_text(outcome: str, mode: str, subject: str = "command") -> str:
    """The model-visible refusal of an escalation that was not allowed (dsh's texts)."""
    if outcome == "rejected":
        return f'the user rejected escalating this {subject} to "{mode}"'
    if outcome == "cancelled":
        return f'approval for escalating to "{mode}" was cancelled'
    return f'sandbox escalation to "{mode}" requires approval, but no approval channel is available'


def denial_markers(mode: str, escalation: bool) -> list[str]:
    out = [SANDBOX_DENIED.format(mode=mode)]
    if escalation:
        out.append(SANDBOX_ESCALATION_HINT.format(subject="command"))
    return out


def unavailable_text(mode: str, detail: str | None = None) -> str:
    """dsh's ``SandboxUnavailableError`` message (code ``SANDBOX_UNAVAILABLE``)."""
    return (f'sandbox mode "{mode}" is requested but no sandbox backend is usable on this host; refusing to run '
            "the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ensure "
            "sandbox-exec is usable (macOS), or ensure the ACL restricted-token runner can start (Windows) — "
            "otherwise switch the consumer to danger-full-access." + ("" if detail is None else
                                                                      f" Runner failure: {detail}"))


def denied(exit_code: int | None, stderr: str, signatures: tuple[str, ...] = DENIAL_SIGNATURES) -> bool:
    """A failed run whose stderr speaks the backend's denial dialect (dsh's ``classifyDenial``)."""
    if exit_code is None or exit_code == 0:
        return False
    low = stderr.lower()
    return any(sig.lower() in low for sig in signatures)


def runner_failure(exit_code: int | None, stderr: str,
                   rules: tuple[dict[str, Any], ...] = BWRAP_RUNNER_RULES) -> str | None:
    """The runner's own fatal line (the command never ran), or None (dsh's ``classifyRunnerFailure``)."""
    if exit_code is None or exit_code == 0:
        return None
    lines = re.split(r"\r?\n", stderr)
    for rule in rules:
        allowed = rule.get("allowed_exit_codes")
        if allowed is not None and exit_code not in allowed:
            continue
        informational = {line.lower() for line in rule.get("informational_lines", ())}
        fatal = [sig.lower() for sig in rule.get("fatal_signatures", ()) if sig.strip()]
        for line in lines:
            low = line.lower()
            if low not in informational and any(sig in low for sig in fatal):
                return line
    return None


def spawn_failure_text(argv0: str, err: OSError) -> str:
    """A spawn failure as dsh reports it (Node's ``String(error)``: ``Error: spawn <program> ENOENT``)."""
    return f"Error: spawn {argv0} {errno.errorcode.get(err.errno or 0, 'EUNKNOWN')}"


@dataclass(frozen=True)
class SandboxSettings:
    """``[sandbox]``: the backend choice, the network and extra paths."""

    mode: str = "auto"
    network: bool = False
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()


@dataclass
class Confined:
    """One confined command: the argv to spawn, the environment on top of the caller's, and the command's own
    temporary directory (removed by ``cleanup`` once the command is over)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    tmpdir: str | None = None
    mode: str = "workspace-write"
    # the backend's dialects: denial signatures and runner-failure rules (dsh's ConfinedArgv)
    denial_signatures: tuple[str, ...] = DENIAL_SIGNATURES
    runner_rules: tuple[dict[str, Any], ...] = BWRAP_RUNNER_RULES

    def cleanup(self) -> None:
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None


def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def _at(workspace: str, path: str) -> str:
    """A ``[sandbox]`` path: ``~`` expanded, relative to the workspace, symlinks resolved."""
    return _real(os.path.join(_real(workspace), os.path.expanduser(path)))


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def git_dirs(workspace: str) -> list[str]:
    """The git directories a workspace's commands write (``.git``, a worktree's own and common dir), found
    by reading ``.git`` files upward from the workspace (no ``git`` process)."""
    here = Path(workspace)
    for d in (here, *here.parents):
        dot = d / ".git"
        try:
            if dot.is_dir():
                return [str(dot.resolve())]
            if dot.is_file():
                text = dot.read_text(errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return []
                gitdir = Path(text[len("gitdir:"):].strip())
                gitdir = (d / gitdir) if not gitdir.is_absolute() else gitdir
                out = [str(gitdir.resolve())]
                common = gitdir / "commondir"
                if common.is_file():
                    cdir = Path(common.read_text(errors="replace").strip())
                    out.append(str(((gitdir / cdir) if not cdir.is_absolute() else cdir).resolve()))
                return out
        except OSError:
            return []
    return []


def own_paths() -> dict[str, str]:
    """dsh-tui's configuration, credentials and cache: never writable from a sandbox; credentials hidden."""
    from dsh_tui.paths import cache_dir, config_dir

    config = config_dir()
    return {"config": str(config), "credentials": str(config / "credentials.toml"), "cache": str(cache_dir())}


def empty_file() -> str:
    """An empty read-only file of ours, bound over a secret file (``/dev/null`` would be unreadable on a
    ``nodev`` mount: the command would see "permission denied" instead of an empty file)."""
    from dsh_tui.tools.common import private_dir

    path = private_dir("sandbox") / "empty"
    if not path.is_file() or path.stat().st_size:
        tmp = path.with_name(f"empty.{os.getpid()}")
        tmp.write_bytes(b"")
        tmp.chmod(0o444)
        os.replace(tmp, path)
    return str(path)


class BwrapBackend:
    """bubblewrap (Debian's ``bubblewrap``): read-only binds, a PID and network namespace."""

    name = "bwrap"

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def profile(self, *, mode: str, workspace: str, cwd: str, tmpdir: str | None, settings: SandboxSettings,
                home: str) -> list[str]:
        args = [self.binary, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
                "--die-with-parent", "--unshare-ipc"]
        if not settings.network:
            args.append("--unshare-net")
        own = own_paths()
        writable: list[str] = []
        if mode == "workspace-write":
            writable.append(_real(workspace))
            writable.extend(git_dirs(_real(workspace)))
            if tmpdir:
                writable.append(tmpdir)
            cache_home = _real(os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"))
            if os.path.isdir(cache_home):
                writable.append(cache_home)
            writable.extend(_at(workspace, p) for p in settings.writable)
        seen: set[str] = set()
        for path in writable:
            if path not in seen and os.path.exists(path):
                seen.add(path)
                args += ["--bind", path, path]
        # read-only again inside the writable roots: git hooks and config (they run outside the sandbox
        # later), dsh-tui's own settings and cache
        again: list[str] = []
        for gitdir in (g for g in seen if os.path.basename(g) == ".git" or "/.git/" in g + "/"):
            again += [os.path.join(gitdir, "hooks"), os.path.join(gitdir, "config")]
        again += [_real(own["config"]), _real(own["cache"])]
        for path in again:
            if os.path.exists(path) and any(_inside(root, path) for root in seen):
                args += ["--ro-bind", path, path]
        readable = {_at(workspace, p) for p in settings.readable}
        hidden = [_real(own["credentials"])] + [_real(os.path.join(home, rel)) for rel in HOME_SECRETS]
        done: set[str] = set()
        for path in hidden:
            if path in done or path in readable or not os.path.lexists(path):
                continue
            done.add(path)
            if os.path.isdir(path):
                args += ["--tmpfs", path, "--remount-ro", path]
            else:
                args += ["--ro-bind", empty_file(), path]
        args += ["--chdir", cwd]
        return args


class SeatbeltBackend:
    """The macOS seam (``sandbox-exec -p PROFILE``): the profile dsh's ``sandbox-local`` builds. Not selected
    yet (``probe`` picks it only on darwin once it is tested there)."""

    name = "sandbox-exec"

    def __init__(self, binary: str = "/usr/bin/sandbox-exec") -> None:
        self.binary = binary

    def profile(self, *, mode: str, workspace: str, cwd: str, tmpdir: str | None, settings: SandboxSettings,
                home: str) -> list[str]:
        def lit(p: str) -> str:
            return '"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"'

        forms = ["(version 1)", "(allow default)", "(deny file-write*)", '(allow file-write* (literal "/dev/null"))']
        if mode == "workspace-write":
            roots = [_real(workspace), *(x for x in [tmpdir] if x), *(_at(workspace, p) for p in settings.writable)]
            forms.append("(allow file-write* " + " ".join(f"(subpath {lit(r)})" for r in roots) + ")")
        if not settings.network:
            forms.append("(deny network*)")
        return [self.binary, "-p", " ".join(forms)]


class Sandbox:
    """A working backend plus the ``[sandbox]`` settings: ``confine`` wraps one command."""

    def __init__(self, backend: Any, settings: SandboxSettings) -> None:
        self.backend = backend
        self.settings = settings

    @property
    def name(self) -> str:
        return str(self.backend.name)

    def confine(self, argv: list[str], *, mode: str, workspace: str, cwd: str) -> Confined:
        """``argv`` wrapped for ``mode`` (``read-only`` or ``workspace-write``), with a fresh temp dir."""
        if mode not in CONFINED:
            raise ValueError(f"not a confining sandbox mode: {mode!r}")
        tmpdir = None
        env: dict[str, str] = {}
        if mode == "workspace-write":
            from dsh_tui.tools.common import private_dir

            try:
                tmpdir = tempfile.mkdtemp(prefix="cmd-", dir=private_dir("sandbox-tmp"))
            except OSError:
                tmpdir = None
            if tmpdir:
                env = {"TMPDIR": tmpdir, "TMP": tmpdir, "TEMP": tmpdir}
        home = os.path.expanduser("~")
        prefix = self.backend.profile(mode=mode, workspace=workspace, cwd=_real(cwd), tmpdir=tmpdir,
                                      settings=self.settings, home=home)
        return Confined(prefix + ["--", *argv], env=env, tmpdir=tmpdir, mode=mode,
                        denial_signatures=tuple(getattr(self.backend, "denial_signatures", DENIAL_SIGNATURES)),
                        runner_rules=tuple(getattr(self.backend, "runner_failure_rules", BWRAP_RUNNER_RULES)))


_PROBES: dict[tuple, str | None] = {}


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def probe_bwrap(binary: str, network: bool = False) -> str | None:
    """Run ``true`` under the read-only profile once; None when it works, else why not (one line)."""
    key = ("bwrap", binary, network)
    if key in _PROBES:
        return _PROBES[key]
    args = BwrapBackend(binary).profile(mode="read-only", workspace="/", cwd="/", tmpdir=None,
                                        settings=SandboxSettings(network=network), home="/nonexistent")
    try:
        done = subprocess.run([*args, "--", "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        problem = None if done.returncode == 0 else (
            (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit code {done.returncode}"])[-1])
    except (OSError, subprocess.SubprocessError) as err:
        problem = str(err) or type(err).__name__
    _PROBES[key] = problem
    return problem


def probe(settings: SandboxSettings) -> tuple[Sandbox | None, str | None]:
    """The sandbox ``settings`` ask for on this machine: (sandbox, None), (None, None) when ``mode = "off"``,
    or (None, the one line that says why there is none and what happens instead)."""
    if settings.mode == "off":
        return None, None
    fallback = "bash commands ask for approval as before"
    if sys.platform == "darwin" and settings.mode == "auto":
        return None, f"sandbox: sandbox-exec is not supported by dsh-tui yet; {fallback}"
    if not sys.platform.startswith("linux"):
        return None, f"sandbox: no sandbox backend for {sys.platform}; {fallback}"
    binary = find_bwrap()
    if binary is None:
        return None, f"sandbox: bubblewrap (bwrap) is not installed; {fallback} (install the bubblewrap package)"
    problem = probe_bwrap(binary, settings.network)
    if problem is not None:
        return None, f"sandbox: bubblewrap cannot create its namespaces here ({problem}); {fallback}"
    return Sandbox(BwrapBackend(binary), settings), None
