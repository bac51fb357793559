"""Answers are markdown written by systems under test: render them, then sanitise the HTML
with an allowlist, so nothing an answer contains can run in a reviewer's browser."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

# CommonMark plus tables (answers compare figures in tables); raw HTML is not rendered.
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "ol": {"start"}}


def render_answer(markdown: str) -> str:
    """Safe HTML for a markdown answer (links get rel="noopener noreferrer nofollow")."""
    html = _markdown.render(markdown)
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
