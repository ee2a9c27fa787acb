"""What the search tools show: ``grep`` matches grouped by file with previewed lines, ``glob`` paths,
the spill footers, and the capped metadata recorded with a result."""

from __future__ import annotations

import json
from typing import Any

from dsh_tui.tools.common import SPILL_RETRIEVAL_HINT, head_utf8

from .grep import GREP_MAX_LINE_BYTES

SEARCH_META_MAX_BYTES = 65_536


def preview_line(line: str, max_bytes: int = GREP_MAX_LINE_BYTES) -> str:
    kept, truncated = head_utf8(line, max_bytes)
    return f"{kept} (line truncated)" if truncated else kept


def format_grep_matches(matches: list[dict[str, Any]]) -> str:
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in matches:
        groups.setdefault(m["path"], []).append(m)
    return "\n\n".join(
        path + "\n" + "\n".join(f"Line {m['lineNumber']}: {m['line']}" for m in group)
        for path, group in groups.items()
    )


def _noun(count: int) -> str:
    return "match" if count == 1 else "matches"


def render_grep(value: dict[str, Any], max_matches: int) -> str:
    matches = value["matches"]
    seen = len(matches)
    if seen == 0:
        return "No matches found"
    kept = [{**m, "line": preview_line(m["line"])} for m in matches[:max_matches]]
    body = format_grep_matches(kept)
    if seen <= max_matches:
        return f"Found {seen} {_noun(seen)}\n\n{body}"
    locator = value.get("spill")
    recovery = (
        f"Full grep result stored at: {locator}. {SPILL_RETRIEVAL_HINT}"
        if locator
        else "The complete result could not be saved; narrow pattern, path, or include to see more."
    )
    return f"Found {len(kept)} of {seen} matches\n\n{body}\n\n({recovery})"


def _top_level(path: str, root: str) -> str:
    """The first segment of ``path`` below the search ``root`` (both display paths)."""
    rel = path
    if root not in (".", "") and (path == root or path.startswith(root.rstrip("/") + "/")):
        rel = path[len(root.rstrip("/")):]
    rel = rel.lstrip("/")
    return rel.split("/", 1)[0]


def sample_across_top_level(paths: list[str], max_items: int, root: str = ".") -> tuple[list[str], int, int]:
    """dsh's ``sampleAcrossTopLevel``: an over-cap page taken round-robin across the result's top-level entries
    (each gets a slot before any gets a second; order within and across groups follows ``paths``), grouped
    by entry. Returns the page, how many top-level entries it shows and how many there are."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(_top_level(path, root), []).append(path)
    taken: dict[str, list[str]] = {}
    count, depth = 0, 0
    active = list(groups)
    while active and count < max_items:
        following = []
        for key in active:
            if count >= max_items:
                break
            count += 1
            taken.setdefault(key, []).append(groups[key][depth])
            if depth + 1 < len(groups[key]):
                following.append(key)
        active, depth = following, depth + 1
    return [p for items in taken.values() for p in items], len(taken), len(groups)


def glob_page(value: dict[str, Any], max_results: int, sample: bool = False) -> tuple[list[str], str]:
    """The paths an over-cap result shows and the basis its footer states (dsh's ``renderGlobPaths``)."""
    paths = value["paths"]
    if not sample:
        return paths[:max_results], "."
    page, shown, total = sample_across_top_level(paths, max_results, value.get("root") or ".")
    if total == len(paths):  # a flat result: its sample is the modification-time head
        return page, "."
    basis = (f", sampled across {shown} of the {total} top-level entries this pattern matched instead of taken "
             "in modification-time order.")
    return page, basis + (" Narrow path to inspect a specific subtree." if shown < total else "")


def render_glob(value: dict[str, Any], max_results: int, sample: bool = False) -> str:
    paths = value["paths"]
    if not paths:
        return "No files found"
    if len(paths) <= max_results:
        return "\n".join(paths)
    page, basis = glob_page(value, max_results, sample)
    locator = value.get("spill")
    recovery = (
        f"Full sorted result stored at: {locator}. {SPILL_RETRIEVAL_HINT}"
        if locator
        else "The complete result could not be saved; narrow pattern or path to see more."
    )
    return "\n".join(page) + f"\n\n(Showing {len(page)} of {len(paths)} paths{basis} {recovery})"


def _meta_bytes(meta: dict[str, Any]) -> int:
    return len(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _cap_meta(meta: dict[str, Any], key: str) -> dict[str, Any]:
    if _meta_bytes(meta) <= SEARCH_META_MAX_BYTES:
        return meta
    items = list(meta[key])
    while len(items) > 1 and _meta_bytes({**meta, key: items, "truncated": True}) > SEARCH_META_MAX_BYTES:
        items.pop()
    return {**meta, key: items, "truncated": True}


def glob_meta(value: dict[str, Any], max_results: int, sample: bool = False) -> dict[str, Any]:
    paths = value["paths"]
    meta = {
        "shape": "paths",
        "paths": glob_page(value, max_results, sample)[0] if len(paths) > max_results else paths,
        "truncated": len(paths) > max_results,
        "total": len(paths),
    }
    return _cap_meta(meta, "paths")


def grep_meta(value: dict[str, Any], max_matches: int) -> dict[str, Any]:
    matches = value["matches"]
    files: dict[str, list[dict[str, Any]]] = {}
    for m in matches[:max_matches]:
        files.setdefault(m["path"], []).append(
            {"lineNumber": m["lineNumber"], "line": preview_line(m["line"])}
        )
    meta = {
        "shape": "matches",
        "files": [{"path": p, "matches": ms} for p, ms in files.items()],
        "truncated": len(matches) > max_matches,
        "total": len(matches),
    }
    return _cap_meta(meta, "files")
