"""Where project instructions come from (``AGENTS.md`` discovery; the package docstring has the rules): the
plugin's config (``InstructionsConfig``), one found file (``Source``) and the ``Workspace`` that probes the
home directory and every directory from the project root down to the cwd."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from dsh_tui.tools import wsread

HOME_SCOPE = "user-global"



class InstructionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    maxBytes: int = 65536  # noqa: N815 - dsh's config keys
    maxSourceBytes: int = 1048576  # noqa: N815
    projectRootMarkers: list[str] = [".git"]  # noqa: N815
    instructionFileCandidates: list[str] = ["AGENTS.md", "CLAUDE.md"]  # noqa: N815
    localInstructionFileCandidates: list[str] = ["AGENTS.local.md", "CLAUDE.local.md"]  # noqa: N815
    dshHome: str | None = None  # noqa: N815 - default: $DSH_HOME if non-blank, else ~/.dsh


@dataclass
class Source:
    """One instruction file: its scope (``<dir>\\0<name>``), display path, content and SHA-1."""

    scope: str
    path: str
    dir: str  # what a "set" names: the directory relative to the project root, or "user-global"
    content: str
    digest: str


def _valid(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()  # noqa: S324 - dsh's digest, not security


def escape(text: str) -> str:
    return text.replace("</system-reminder>", "<\\/system-reminder>")


def frame(body: str) -> str:
    return "<system-reminder>\n" + escape(body) + "\n</system-reminder>"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


class Workspace:
    """Where instructions come from for one cwd: the home file, the project root and the dirs to probe."""

    def __init__(self, cwd: str | os.PathLike, config: InstructionsConfig,
                 env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.config = config
        self.cwd = Path(os.path.abspath(cwd))
        home = config.dshHome if config.dshHome and config.dshHome.strip() else None
        dsh_home = env.get("DSH_HOME")
        if home is not None:
            self.home, self.home_display = Path(home), home.rstrip("/") + "/AGENTS.md"
        elif dsh_home and dsh_home.strip():
            self.home, self.home_display = Path(dsh_home), "$DSH_HOME/AGENTS.md"
        else:
            self.home, self.home_display = Path(os.path.expanduser("~")) / ".dsh", "~/.dsh/AGENTS.md"
        self.root = self._find_root()
        self.base = [n for n in config.instructionFileCandidates if _valid(n)]
        self.local = [n for n in config.localInstructionFileCandidates if _valid(n)]
        self.skipped: list[wsread.Skip] = []  # files found but not read (see dsh_tui.tools.wsread)

    def _find_root(self) -> Path:
        markers = [m for m in self.config.projectRootMarkers if m]
        cur = self.cwd
        while True:
            if any(os.path.lexists(cur / m) for m in markers):
                return cur
            if cur.parent == cur:
                return self.cwd
            cur = cur.parent

    def identity(self) -> str:
        rel = os.path.relpath(self.root, self.cwd)
        c = self.config
        return json.dumps({"projectRoot": "" if rel == "." else rel, "projectRootMarkers": c.projectRootMarkers,
                           "maxBytes": c.maxBytes, "maxSourceBytes": c.maxSourceBytes,
                           "instructionFileCandidates": c.instructionFileCandidates,
                           "localInstructionFileCandidates": c.localInstructionFileCandidates},
                          separators=(",", ":"), ensure_ascii=False)

    def baseline_dirs(self) -> list[str]:
        """The directories from the project root down to the cwd, root-relative (``.`` for the root)."""
        rel = os.path.relpath(self.cwd, self.root)
        if rel == ".":
            return ["."]
        parts = Path(rel).parts
        return ["."] + ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]

    def dirs_to(self, file_path: str) -> list[str]:
        """The directories strictly below the cwd down to ``file_path``'s (root-relative); none outside it."""
        target = Path(os.path.abspath(self.cwd / file_path.strip())).parent
        try:
            below = target.relative_to(self.cwd)
        except ValueError:
            return []
        if not below.parts:
            return []
        base = os.path.relpath(self.cwd, self.root)
        prefix = [] if base == "." else list(Path(base).parts)
        return ["/".join(prefix + list(below.parts[:i])) for i in range(1, len(below.parts) + 1)]

    def _read(self, path: Path, workspace: Path | None) -> str | None:
        """The file's text, or None: missing, or skipped (a symlink out of the workspace, a file under
        /proc, /sys or /dev, not a regular file, too big; recorded in ``self.skipped``)."""
        got = wsread.read_text(path, workspace, self.config.maxSourceBytes)
        if isinstance(got, wsread.Skip):
            if got not in self.skipped:
                self.skipped.append(got)
            return None
        return got

    def home_source(self) -> Source | None:
        content = self._read(self.home / "AGENTS.md", None)  # the user's own file: wherever it points
        if content is None:
            return None
        return Source(f"{HOME_SCOPE}\0AGENTS.md", self.home_display, HOME_SCOPE, content, sha1(content))

    def probe(self, rel_dir: str) -> list[Source]:
        """The kept instruction files of one directory (base candidates, then local ones, de-duplicated)."""
        where = self.root if rel_dir == "." else self.root / rel_dir
        out: list[Source] = []
        seen: set[str] = set()
        for name in self.base + self.local:
            content = self._read(where / name, self.root)
            if content is None:
                continue
            key = sha1(content.strip())
            if key in seen:
                continue
            seen.add(key)
            path = name if rel_dir == "." else f"{rel_dir}/{name}"
            out.append(Source(f"{rel_dir}\0{name}", path, os.path.dirname(path) or ".", content, sha1(content)))
        return out

    def probe_scope(self, scope: str) -> Source | None:
        rel_dir, _, name = scope.partition("\0")
        if rel_dir == HOME_SCOPE:
            return self.home_source()
        return next((s for s in self.probe(rel_dir) if s.scope == scope), None)

    def baseline_sources(self) -> list[Source]:
        out = []
        home = self.home_source()
        if home is not None:
            out.append(home)
        for d in self.baseline_dirs():
            out.extend(self.probe(d))
        return out
