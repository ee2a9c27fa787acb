"""Ignore files as ripgrep reads them: ``.rgignore``, ``.ignore`` and ``.gitignore`` (inside a git
repository), highest precedence first, one level per directory."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from dsh_tui.tools import wsread

from .globs import GlobRule, GlobSyntaxError, compile_glob

VCS_DIRS = frozenset({".git", ".svn", ".hg", ".bzr", ".jj", ".sl"})


IGNORE_FILES = (".rgignore", ".ignore", ".gitignore")  # highest precedence first
IGNORE_FILE_MAX_BYTES = 16 << 20




@dataclass
class _IgnoreLevel:
    base: str  # absolute path of the directory holding the ignore files
    files: list[list[GlobRule]] = field(default_factory=list)  # highest precedence first


def _parse_ignore(path: str) -> list[GlobRule]:
    rules: list[GlobRule] = []
    text = wsread.read_text(path, None, IGNORE_FILE_MAX_BYTES)  # never /dev/zero, a FIFO, a huge file
    if not isinstance(text, str):
        return rules
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        try:
            if line.startswith("\\#") or line.startswith("\\!"):
                rules.append(compile_glob(line[1:]))
            else:
                rules.append(compile_glob(line, allow_negation=True))
        except (GlobSyntaxError, re.error):
            continue  # ripgrep warns and skips a bad ignore pattern
    return rules


def _git_root(directory: str) -> str | None:
    cur = os.path.abspath(directory)
    while True:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _level(directory: str, git_root: str | None) -> _IgnoreLevel | None:
    level = _IgnoreLevel(directory)
    for name in IGNORE_FILES:
        if name == ".gitignore" and (
            git_root is None or not (directory + os.sep).startswith(git_root + os.sep)
        ):
            continue
        p = os.path.join(directory, name)
        if os.path.isfile(p):
            level.files.append(_parse_ignore(p))
    return level if level.files else None


def _ignored(levels: list[_IgnoreLevel], abs_path: str, is_dir: bool) -> bool:
    for level in reversed(levels):
        sub = abs_path[len(level.base.rstrip(os.sep)) + 1 :]
        for rules in level.files:
            for rule in reversed(rules):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(sub):
                    return not rule.negated
    return False
