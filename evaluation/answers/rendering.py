"""Answers are markdown written by systems under test: render them, then sanitise the HTML
with an allowlist, so nothing an answer contains can run in a reviewer's browser."""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

# CommonMark plus tables (answers compare figures in tables); raw HTML is not rendered.
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "ol": {"start"}}


# Answers rendered lately, by their text, in each process: the same answer is drawn on its
# page, its review page, its run's page and side by side, for each reviewer who opens it,
# and markdown-it is pure Python (about 3 ms a kilobyte on a slow machine of ours; the
# side by side API renders twenty answers a page). Keyed by the text itself, so an edited
# answer is a new entry and what comes out depends on nothing else. At most 128 entries of
# the largest answers (limits.ANSWER_TEXT, 100 kB, and their HTML) is ~30 MB a process;
# answers of a few kilobytes, well under 2 MB.
RENDERED_KEPT = 128


@lru_cache(maxsize=RENDERED_KEPT)
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
