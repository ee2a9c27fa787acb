"""The snapshot store: the workspace's files before and after each turn, in a git object store of our own.

One store per workspace, under ``<data dir>/snapshots/<hash of the workspace path>/`` (never the user's
``.git``): a git directory used with ``GIT_DIR``/``GIT_WORK_TREE`` pointed at the workspace, as opencode's
snapshots do. A snapshot is ``git add --all`` into the store's own index (only files whose stat changed are
read again, so a second snapshot of 10k files costs a few tens of milliseconds; docs/performance.md) and
``git write-tree``: a tree of the tracked and untracked-not-ignored files (the workspace's ``.gitignore``
files apply; the user's git config and attributes do not: no filters, no line-ending conversion, so a
restore puts back the exact bytes). Content is addressed by hash, so an unchanged file costs nothing twice.

Files larger than ``max_file_bytes`` are skipped (listed in the store's ``info/exclude``) and named in the
snapshot's ``skipped``: a restore never touches them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import DshError

MAX_FILE_BYTES = 4 * 1024 * 1024
#: A workspace with more files than this (after ignores) is not snapshotted (the home folder by mistake).
MAX_FILES = 100_000
#: dsh's git environment for its snapshots (GIT_CONFIG_COUNT=0 ...), plus: no user/system config (filters,
#: fsmonitor, hooks) and no optional locks on the user's repository.
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE",
                 "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CEILING_DIRECTORIES", "GIT_COMMON_DIR",
                 "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")
#: git attributes that would change bytes on their way into the store: all unset for every path.
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class SnapshotError(DshError):
    """git is missing or failed; the message is one line."""


@dataclass
class Snapshot:
    tree: str
    skipped: list[str] = field(default_factory=list)


@dataclass
class Change:
    """One path that differs between two trees: its blob ids and modes on each side (None: absent)."""

    path: str
    before: str | None
    after: str | None
    before_mode: str | None = None
    after_mode: str | None = None
    added: int = 0
    deleted: int = 0
    binary: bool = False

    @property
    def status(self) -> str:
        return "added" if self.before is None else "deleted" if self.after is None else "modified"


def default_base() -> Path:
    from dsh_tui.paths import data_dir

    return data_dir() / "snapshots"


def blob_id(data: bytes) -> str:
    """git's blob id of ``data`` (sha1 of ``blob <size>\\0`` + data)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's object id, not security


def current_blob(path: Path) -> str | None:
    """The blob id of what is at ``path`` now (a symlink: of its target text), None when nothing is there
    or it is not a file."""
    try:
        if path.is_symlink():
            return blob_id(os.fsencode(os.readlink(path)))
        if not path.is_file():
            return None
        return blob_id(path.read_bytes())
    except OSError:
        return None


class SnapshotStore:
    def __init__(self, workspace: str | os.PathLike, base: str | os.PathLike | None = None, *,
                 max_file_bytes: int = MAX_FILE_BYTES, max_files: int = MAX_FILES) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.max_files = max_files
        key = hashlib.sha256(str(self.workspace).encode()).hexdigest()[:20]
        self.git_dir = Path(os.path.abspath(base if base is not None else default_base())) / key
        self.max_file_bytes = max_file_bytes
        self._env: dict[str, str] | None = None

    # -- git ------------------------------------------------------------------------------------------
    def _git_env(self) -> dict[str, str]:
        if self._env is None:
            env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
            env.update(GIT_DIR=str(self.git_dir), GIT_WORK_TREE=str(self.workspace), GIT_CONFIG_NOSYSTEM="1",
                       GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
            self._env = env
        return self._env

    def git(self, *args: str, input: bytes | None = None, check: bool = True, full: bool = False) -> Any:  # noqa: A002
        try:
            out = subprocess.run(["git", "-c", "core.fsmonitor=false", "-c", "advice.addEmbeddedRepo=false",
                                  "-c", "core.quotePath=false", *args],
                                 cwd=self.workspace, env=self._git_env(), input=input, capture_output=True,
                                 timeout=120)
        except FileNotFoundError:
            raise SnapshotError("git is not installed: file changes are not recorded") from None
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SnapshotError(f"git {args[0]}: {err}") from None
        if check and out.returncode != 0:
            text = out.stderr.decode(errors="replace").strip().splitlines()
            raise SnapshotError(f"git {args[0]} failed: {text[-1] if text else out.returncode}")
        return out if full else out.stdout

    def ensure(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        env = {k: v for k, v in self._git_env().items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
        try:
            subprocess.run(["git", "init", "-q", "--bare", str(self.git_dir)], env=env, capture_output=True,
                           check=True, timeout=60)
        except FileNotFoundError:
            raise SnapshotError("git is not installed: file changes are not recorded") from None
        except (OSError, subprocess.SubprocessError) as err:
            raise SnapshotError(f"git init: {err}") from None
        for key, value in (("core.bare", "false"), ("core.autocrlf", "false"), ("core.untrackedCache", "true"),
                           ("core.fileMode", "true"), ("gc.auto", "0"), ("core.symlinks", "true"),
                           ("core.splitIndex", "true")):  # each snapshot rewrites a small index, not all of it
            self.git("config", key, value)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
        (info / "exclude").write_text("", encoding="utf-8")
        self.git("update-index", "--untracked-cache", check=False)  # later walks skip unchanged folders
        (self.git_dir / "workspace").write_text(str(self.workspace) + "\n", encoding="utf-8")

    # -- snapshots -------------------------------------------------------------------------------------
    def _size(self, rel: str) -> int:
        try:
            st = os.lstat(self.workspace / rel)
        except OSError:
            return -1
        return 0 if stat.S_ISLNK(st.st_mode) else st.st_size

    def _pending(self) -> list[str]:
        """One walk of the workspace: the paths new, modified or deleted since the store's index."""
        out = self.git("ls-files", "-z", "--others", "--modified", "--deleted", "--exclude-standard")
        return list(dict.fromkeys(os.fsdecode(p) for p in out.split(b"\0") if p))

    def _skip_large(self, paths: list[str]) -> tuple[list[str], list[str]]:
        """(paths to take, skipped): a file over the limit is skipped and listed in the store's exclude file,
        a listed one that shrank (or went away) comes back."""
        listed_path = self.git_dir / "info" / "skipped"
        try:
            listed = [p for p in listed_path.read_text(encoding="utf-8").split("\0") if p]
        except OSError:
            listed = []
        keep = [p for p in listed if self._size(p) > self.max_file_bytes]
        back = [p for p in listed if p not in keep]
        take = []
        for rel in paths:
            if rel in keep:
                continue
            if self._size(rel) > self.max_file_bytes:
                keep.append(rel)
            else:
                take.append(rel)
        if keep != listed:
            listed_path.write_text("\0".join(keep), encoding="utf-8")
            (self.git_dir / "info" / "exclude").write_text(
                "".join("/" + _escape(p) + "\n" for p in keep), encoding="utf-8")
            take.extend(p for p in back if self._size(p) >= 0)
            gone = [p for p in keep if p not in listed]
            if gone:  # a tracked file that grew past the limit leaves the index (and so later trees)
                self.git("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone)
        return take, keep

    def snapshot(self) -> Snapshot:
        """The workspace now, as a tree in the store (kept by a ref until pruned: ``maintain``)."""
        if self.workspace in (Path(os.path.realpath(Path.home())), Path(self.workspace.anchor)):
            raise SnapshotError(f"{self.workspace} is the home folder or /: start in a project folder")
        with _lock_for(self.git_dir):
            self.ensure()
            pending = self._pending()
            if len(pending) > self.max_files:
                raise SnapshotError(f"{self.workspace} has more than {self.max_files} files (not ignored): not "
                                    "snapshotted, file changes are not recorded")
            take, skipped = self._skip_large(pending)
            if take:
                # core.bigFileThreshold=1: many new blobs stream into one pack instead of a loose file each
                # (a first snapshot of 10k files: ~1-2 s instead of ~5 s)
                data = b"".join(os.fsencode(p) + b"\0" for p in take)
                bulk = ("-c", "core.bigFileThreshold=1") if len(take) > 64 else ()  # a few: loose is cheaper
                for attempt in range(5):
                    out = self.git(*bulk, "update-index", "--add", "--remove", "-z", "--stdin", input=data,
                                   check=False, full=True)
                    if out.returncode == 0:
                        break
                    if b"index.lock" not in out.stderr:  # a path update-index refuses (a nested repository,
                        self.git("-c", "core.bigFileThreshold=1", "add", "--all", "--ignore-errors", "--", ".",
                                 check=False)  # an unreadable file): add skips what it cannot take
                        break
                    time.sleep(0.05 * (attempt + 1))  # another process's snapshot of this workspace
            tree = self.git("write-tree").decode().strip()
            refs = self.git_dir / "refs" / "snapshots"
            refs.mkdir(parents=True, exist_ok=True)
            (refs / f"{time.time_ns()}-{tree[:12]}").write_text(tree + "\n", encoding="ascii")
            return Snapshot(tree, skipped)

    def maintain(self, max_bytes: int = 1 << 30, max_packs: int = 40) -> None:
        """Keep the store bounded: with more than ``max_packs`` packs, repack; above ``max_bytes``, forget the
        oldest half of the snapshots first (an undo that needs one of them then says it is gone)."""
        with _lock_for(self.git_dir):
            packs = list((self.git_dir / "objects" / "pack").glob("*.pack"))
            size = sum(p.stat().st_size for p in packs)
            if len(packs) <= max_packs and size <= max_bytes:
                return
            if size > max_bytes:
                refs = sorted((self.git_dir / "refs" / "snapshots").glob("*"))
                for ref in refs[: len(refs) // 2]:
                    ref.unlink(missing_ok=True)
                self.git("repack", "-a", "-d", "-q")
                self.git("prune", "--expire=now")
            else:
                self.git("repack", "-a", "-d", "-q", "--keep-unreachable")

    def changes(self, before: str, after: str) -> list[Change]:
        """The paths that differ between two trees, in git's order, with line counts."""
        if before == after:
            return []
        raw = self.git("diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", before or _EMPTY_TREE,
                       after or _EMPTY_TREE)
        parts = raw.split(b"\0")
        out: dict[str, Change] = {}
        order: list[str] = []
        i = 0
        while i < len(parts):
            part = parts[i]
            if part.startswith(b":"):
                fields = part[1:].split(b" ")
                path = os.fsdecode(parts[i + 1])
                mode_a, mode_b, oid_a, oid_b = (f.decode() for f in fields[:4])
                null = "0" * len(oid_a)
                out[path] = Change(path, None if oid_a == null else oid_a, None if oid_b == null else oid_b,
                                   None if mode_a == "000000" else mode_a, None if mode_b == "000000" else mode_b)
                order.append(path)
                i += 2
            elif part:
                fields = part.split(b"\t", 2)
                if len(fields) == 3:
                    path = os.fsdecode(fields[2])
                    ch = out.get(path)
                    if ch is not None:
                        if fields[0] == b"-":
                            ch.binary = True
                        else:
                            ch.added, ch.deleted = int(fields[0]), int(fields[1])
                i += 1
            else:
                i += 1
        return [out[p] for p in order]

    def blob(self, oid: str) -> bytes:
        return self.git("cat-file", "blob", oid)

    def write_blob(self, data: bytes) -> str:
        """Keep ``data`` in the store (a loose object, written here: no git process), referenced so that
        maintenance keeps it; returns its blob id."""
        self.ensure()
        oid = blob_id(data)
        path = self.git_dir / "objects" / oid[:2] / oid[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"tmp-{os.getpid()}-{threading.get_ident()}")
            tmp.write_bytes(zlib.compress(b"blob %d\0" % len(data) + data, 1))
            os.replace(tmp, path)
        ref = self.git_dir / "refs" / "captures" / oid
        if not ref.exists():
            ref.parent.mkdir(parents=True, exist_ok=True)
            ref.write_text(oid + "\n", encoding="ascii")
        return oid

    def has(self, oid: str) -> bool:
        """Whether the store holds the object ``oid``."""
        try:
            return subprocess.run(["git", "cat-file", "-e", oid], cwd=self.workspace, env=self._git_env(),
                                  capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    # -- restore ---------------------------------------------------------------------------------------
    def restore(self, rel: str, oid: str | None, mode: str | None) -> None:
        """Put ``rel`` back to the blob ``oid`` (None: remove it; empty parent folders go too)."""
        path = self.workspace / rel
        if oid is None:
            try:
                if path.is_symlink() or path.is_file():
                    path.unlink()
            except FileNotFoundError:
                pass
            parent = path.parent
            while parent != self.workspace and self.workspace in parent.parents:
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent
            return
        data = self.blob(oid)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            if path.is_dir() and not path.is_symlink():
                raise SnapshotError(f"{rel} is now a folder: not replaced")
            path.unlink()
        if mode == "120000":
            os.symlink(os.fsdecode(data), path)
            return
        tmp = path.with_name(f".{path.name}.dsh-undo.{os.getpid()}")
        with open(tmp, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o755 if mode == "100755" else 0o644)
        os.replace(tmp, path)


_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(git_dir: Path) -> threading.Lock:
    """One lock per store in this process: two agents on one workspace never race on its index."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(git_dir, threading.Lock())


def _escape(rel: str) -> str:
    """A path as a literal gitignore pattern."""
    out = []
    for ch in rel:
        if ch in "\\*?[!# ":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)
