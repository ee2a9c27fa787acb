"""Assistant text as Rich Markdown: one shared markdown-it parser (imported on first use, with Pygments: off
the start-up path), and how much of a streaming answer is settled (``settled_blocks``) so that it is
rendered once and frozen while the rest keeps streaming."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

_MARKDOWN_CLASS: Any = None
_PARSER: Any = None


def _markdown_parser() -> Any:
    global _PARSER
    if _PARSER is None:
        from markdown_it import MarkdownIt

        _PARSER = MarkdownIt().enable("strikethrough").enable("table")
    return _PARSER


def settled_blocks(text: str) -> tuple[int, bool] | None:
    """How much of a growing Markdown text later text can no longer change, for freezing it.

    That is every top-level block before the last one that starts in the text's complete lines (the
    last block, and a partial last line, may still turn into something else: ``2`` becomes ``2. b``
    and continues a list, a line of ``===`` makes the paragraph above a heading), and the last one
    too when it is finished whatever follows (``_closed``: a code fence with its closing line is
    frozen, highlighted once, as soon as it closes). Returns
    ``(length, new_line)``: the length of that prefix (None when there is none) and whether Rich's
    Markdown, after its last block, puts a blank line before the next one (after every block but a
    rule); pass that to ``markdown(rest, after_block=...)`` so that the prefix and the rest rendered
    separately give the same lines as the whole text. Link reference definitions that arrive later
    are not applied to frozen text.
    """
    end = text.rfind("\n") + 1
    if end == 0:
        return None
    last_start = None
    before = None
    previous = None
    for token in _markdown_parser().parse(text[:end]):
        if token.level or token.nesting == -1 or token.map is None:
            continue
        last_start, before = token, previous
        previous = token
    if last_start is None:
        return None
    from rich.markdown import Markdown, UnknownElement

    if _closed(last_start, text, end):
        # the last block is finished too (nothing after it can change it): the whole of the complete lines
        return end, (Markdown.elements.get(last_start.type) or UnknownElement).new_line
    if before is None:
        return None
    offset = 0
    for _ in range(last_start.map[0]):
        offset = text.index("\n", offset) + 1
    return offset, (Markdown.elements.get(before.type) or UnknownElement).new_line


def _closed(block: Any, text: str, end: int) -> bool:
    """Whether the top-level block starting with ``block`` (the last one in ``text[:end]``, complete
    lines) is finished whatever follows: a paragraph a blank line ended, a heading, a rule, a code
    fence with its closing line. (A list, quote, table or indented code can still go on.)"""
    kind = block.type
    if kind in ("heading_open", "hr"):
        return True
    if kind == "paragraph_open":
        return block.map[1] < text.count("\n", 0, end)  # a (blank) line after it
    if kind == "fence":
        first, last = block.map
        if last - first < 2:
            return False
        closing = text[:end].split("\n")[last - 1].strip()
        return closing.startswith(block.markup) and closing.strip(block.markup[0]) == ""
    return False


def markdown(text: str, *, after_block: bool = False) -> RenderableType:
    """Rich Markdown, imported on first use (markdown-it and Pygments stay off the start-up path).

    Rich builds a new MarkdownIt parser per message, and a new parser compiles its rule chains on
    first use (~6 ms); one shared parser makes a message cost only its parse.

    ``after_block``: the text continues a Markdown text whose last block asks for a blank line before
    the next (``settled_blocks``): Rich then starts as it would after that block. It is told so by an
    empty HTML block in front (drawn as nothing, it leaves Rich's "new line" state set), so a list or
    quote at the start gets exactly the one blank line the whole rendering has, not two.
    """
    global _MARKDOWN_CLASS
    if _MARKDOWN_CLASS is None:
        from markdown_it.token import Token
        from rich.markdown import Markdown

        parser = _markdown_parser()

        class SharedParserMarkdown(Markdown):
            def __init__(self, markup: str, after_block: bool = False) -> None:
                self.markup = markup
                self.parsed = parser.parse(markup)
                if after_block:
                    self.parsed.insert(0, Token("html_block", "", 0, block=True, content=""))
                self.code_theme = "monokai"
                self.justify = None
                self.style = "none"
                self.hyperlinks = True
                self.inline_code_lexer = None
                self.inline_code_theme = "monokai"

        _MARKDOWN_CLASS = SharedParserMarkdown
    return _MARKDOWN_CLASS(text, after_block)


def render_assistant(text: str, interrupted: bool = False) -> RenderableType:
    body = markdown(text) if text else Text("")
    if not interrupted:
        return body
    return Group(body, Text("⏹ interrupted: the answer above is partial", style="yellow"))
