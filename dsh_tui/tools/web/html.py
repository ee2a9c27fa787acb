"""``web_fetch``'s HTML to Markdown (``markdownify``; scripts, styles and hidden elements dropped), and dsh's
lexical depth check that lets pages nested deeper than ``MAX_CONVERSION_DEPTH`` elements pass through raw."""

from __future__ import annotations

import re
from typing import Any

MAX_CONVERSION_DEPTH = 512
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})
_RAW_TEXT = ("script", "style", "noscript")


def exceeds_depth(html: str) -> bool:
    """dsh's lexical check: does the element stack pass ``MAX_CONVERSION_DEPTH``? (over-counts when unsure)"""
    lower = html.lower()
    stack: list[str] = []
    offset = 0
    in_comment = False
    n = len(html)
    while offset < n:
        start = html.find("<", offset)
        if in_comment:
            end = html.find("-->", offset)
            if end != -1 and (start == -1 or end < start):
                in_comment = False
                offset = end + 3
                continue
        if start == -1:
            break
        if not in_comment and html.startswith("<!--", start):
            in_comment = True
            offset = start + 4
            continue
        cursor = start + 1
        closing = cursor < n and html[cursor] == "/"
        if closing:
            cursor += 1
        name_start = cursor
        while cursor < n and (html[cursor].isalnum() or html[cursor] == "-") and html[cursor].isascii():
            cursor += 1
        if cursor == name_start or not html[name_start].isalpha():
            offset = start + 1
            continue
        name = lower[name_start:cursor]
        quote = None
        while cursor < n:
            ch = html[cursor]
            cursor += 1
            if quote is not None:
                if ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == ">":
                break
        if html[cursor - 1] != ">":
            break
        if closing:
            if not in_comment and stack and stack[-1] == name:
                stack.pop()
        else:
            last = cursor - 2
            while last >= 0 and html[last].isspace():
                last -= 1
            if name not in _VOID and html[last] != "/":
                stack.append(name)
                if len(stack) > MAX_CONVERSION_DEPTH:
                    return True
                if not in_comment and name in _RAW_TEXT:
                    end = lower.find(f"</{name}", cursor)
                    if end == -1:
                        break
                    offset = end
                    continue
        offset = cursor
    return False


def _hidden(tag: Any) -> bool:
    if tag.name in ("script", "style", "noscript", "template", "iframe", "object", "embed"):
        return True
    attrs = tag.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if tag.name == "input" and str(attrs.get("type", "")).lower() == "hidden":
        return True
    for declaration in str(attrs.get("style", "")).split(";"):
        prop, sep, value = declaration.partition(":")
        if not sep:
            continue
        prop = prop.strip().lower()
        value = re.sub(r"\s*!important\s*$", "", value.strip().lower())
        if (prop == "display" and value == "none") or (prop == "visibility" and value in ("hidden", "collapse")):
            return True
    return False


def html_to_markdown(html: str) -> str:
    """HTML as Markdown (ATX headings, fenced code, ``-`` bullets; non-visible content dropped)."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_hidden):
        tag.decompose()
    converter = MarkdownConverter(heading_style="ATX", code_language="", bullets="-", escape_underscores=False,
                                  escape_asterisks=False)
    text = converter.convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
