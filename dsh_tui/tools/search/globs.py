"""Glob syntax with ripgrep's semantics: alternatives, character classes, ``**``, anchoring (a pattern
without ``/`` matches the basename at any depth), negation in ignore files."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dsh_tui.session.errors import DshError
from dsh_tui.tools.common import search_error


def _split_alternatives(body: str) -> list[str]:
    parts, depth, cur, i = [], 0, "", 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur += body[i : i + 2]
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            i += 1
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return parts


class GlobSyntaxError(DshError, ValueError):
    """A glob ripgrep's globset would refuse (the message is globset's)."""


def _glob_body(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        ch = pat[i]
        if ch == "*":
            if pat.startswith("**", i):
                before_ok = i == 0 or pat[i - 1] == "/"
                after = pat[i + 2 : i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and after == "":
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i + 1
            if j < n and pat[j] in "!^":
                j += 1
            if j < n and pat[j] == "]":
                j += 1
            while j < n and pat[j] != "]":
                j += 1
            if j >= n:
                raise GlobSyntaxError("unclosed character class; missing ']'")
            else:
                inner = pat[i + 1 : j]
                neg = inner[:1] in ("!", "^")
                if neg:
                    inner = inner[1:]
                inner = inner.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^' if neg else ''}{inner}]")
                i = j
        elif ch == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if pat[j] == "\\":
                    j += 2
                    continue
                depth += {"{": 1, "}": -1}.get(pat[j], 0)
                j += 1
            if depth:
                raise GlobSyntaxError("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
            else:
                alts = _split_alternatives(pat[i + 1 : j - 1])
                out.append("(?:" + "|".join(_glob_body(a) for a in alts) + ")")
                i = j
                continue
        elif ch == "}":
            raise GlobSyntaxError("unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)")
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class GlobRule:
    regex: re.Pattern[str]
    negated: bool = False
    dir_only: bool = False


def compile_glob(pattern: str, *, allow_negation: bool = False) -> GlobRule:
    """A gitignore-style glob matched against a ``/``-separated path relative to its base."""
    negated = False
    if allow_negation and pattern.startswith("!"):
        negated, pattern = True, pattern[1:]
    dir_only = pattern.endswith("/") and len(pattern) > 1
    if dir_only:
        pattern = pattern.rstrip("/")
    anchored = "/" in pattern
    if pattern.startswith("/"):
        pattern = pattern[1:]
    body = _glob_body(pattern)
    prefix = "" if anchored else "(?:.*/)?"
    return GlobRule(re.compile(f"^{prefix}{body}$", re.DOTALL), negated, dir_only)


def _compile_user_glob(tool: str, pattern: str) -> GlobRule:
    try:
        return compile_glob(pattern)
    except (GlobSyntaxError, re.error) as exc:
        raise search_error(
            f"{tool} pattern rejected by ripgrep: rg: error parsing glob '{pattern}': {exc}",
            "SEARCH_INVALID_PATTERN",
        ) from None
