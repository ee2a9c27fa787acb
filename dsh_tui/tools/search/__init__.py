"""The ``glob`` and ``grep`` tools (dsh ``tool-fs-search``), implemented in-process.

dsh shells out to a packaged ripgrep; dsh-tui cannot assume ``rg`` exists, so both tools walk the
tree themselves in a worker thread with ripgrep's observable semantics:

- ``glob`` = ``rg --files --glob=<pattern> --sort=modified --no-ignore --hidden`` minus VCS dirs:
  files only (symlinks not followed), hidden and ignored files included, ascending mtime; a pattern
  without ``/`` matches the basename at any depth. Over 100 paths: the first 100 plus a footer with
  the spill locator.
- ``grep`` = ``rg --json --regexp=<pattern> [--glob=<include>]``: respects ``.gitignore`` (inside a
  git repository), ``.ignore`` and ``.rgignore``, skips hidden and binary files; matches grouped
  by file (files in path order), each line previewed to 2,000 UTF-8 bytes; over 250 matches the
  head plus a spill footer. Regexes are Python ``re`` (ripgrep's syntax for the common
  subset).

Output paths are shown the way ripgrep prints them (relative to the session cwd, or prefixed by the
given ``path``); absolute ones inside the cwd become cwd-relative.

Modules: :mod:`.globs` (glob syntax), :mod:`.ignore` (ignore files), :mod:`.walk` (the tree walk and
the blocking glob), :mod:`.grep` (the blocking grep), :mod:`.presentation` (what a result shows),
:mod:`.tools` (the tool definitions). This package re-exports the public names.
"""

from __future__ import annotations

from .globs import GlobRule, GlobSyntaxError, compile_glob
from .grep import GREP_MAX_LINE_BYTES, _grep_file, compile_rg_regex, validate_include  # noqa: F401
from .ignore import IGNORE_FILES, VCS_DIRS
from .presentation import (
    SEARCH_META_MAX_BYTES,
    format_grep_matches,
    glob_meta,
    grep_meta,
    preview_line,
    render_glob,
    render_grep,
)
from .tools import SEARCH_TIMEOUT_MS, glob_tool, grep_tool
from .walk import RAW_OUTPUT_MAX_BYTES, _Budget, _walk_files  # noqa: F401

__all__ = [
    "glob_tool", "grep_tool", "compile_glob", "GlobRule", "GlobSyntaxError", "compile_rg_regex", "validate_include",
    "preview_line", "format_grep_matches", "render_grep", "render_glob", "glob_meta", "grep_meta",
    "SEARCH_TIMEOUT_MS", "SEARCH_META_MAX_BYTES", "GREP_MAX_LINE_BYTES", "RAW_OUTPUT_MAX_BYTES",
    "IGNORE_FILES", "VCS_DIRS",
]
