"""Markdown formats: which ones a criterion asks for, and which ones an answer contains.

Only what Markdown (and the HTML LLMs sometimes emit) makes unambiguous is recognised:
a pipe table with its separator row, **bold** or __bold__, "- " / "* " / "+ " bullets,
"#" headings, and "1." / "1)" numbered lists. A line that is entirely bold is *not* a
heading, and indentation alone is not a list. Code blocks are ignored: a "# comment" in a
Python snippet is not a heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORMATS = ("table", "bold", "bullets", "headings", "numbered_list")


@dataclass(frozen=True)
class FormatRequest:
    name: str  # one of FORMATS
    wanted: bool  # False for "Does not use a table."


# What a criterion says to ask for a format. Case-insensitive.
_REQUESTS: dict[str, re.Pattern[str]] = {
    "table": re.compile(r"\btables?\b|\btabular\b|\btabulat\w*", re.IGNORECASE),
    "bold": re.compile(r"\bbold(?:face|ed)?\b", re.IGNORECASE),
    "bullets": re.compile(r"\bbullet(?:s|ed|[\s-]*points?)?\b|\bunordered\s+list", re.IGNORECASE),
    "headings": re.compile(
        r"\b(?:sub)?headings?\b|\b(?:sub)?headers?\b(?!\s+(?:rows?|cells?|columns?))"
        r"|\bsection\s+titles?\b",
        re.IGNORECASE,
    ),
    "numbered_list": re.compile(r"\bnumbered\b|\bordered\s+lists?\b|\benumerat\w*", re.IGNORECASE),
}
# A negation shortly before the format word: "does not use a table", "without bullet points".
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|avoids?|avoiding|instead\s+of)\b(?:\W+\w+){0,3}\W*$",
    re.IGNORECASE,
)

_FENCED_CODE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]+`")

# A table: a line holding a "|", then a separator row of dashes (colons for alignment)
# holding at least one "|": "|---|:--:|", "--- | ---".
_TABLE = re.compile(
    r"^[^\n|]*\|[^\n]*\n[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$",
    re.MULTILINE,
)
_TABLE_SEPARATOR_PIPE = re.compile(r"\n[^\n]*\|")
_HTML_TABLE = re.compile(r"<table\b", re.IGNORECASE)
# Bold spans are bounded (200 characters, no "*" or "_" inside) so that a long line of
# unmatched "**" is scanned once, not once per opening marker.
_BOLD = re.compile(
    r"\*\*(?=[^\s*])[^\n*]{0,200}?(?<=[^\s*])\*\*"
    r"|(?<!\w)__(?=[^\s_])[^\n_]{0,200}?(?<=[^\s_])__(?!\w)"
    r"|<(?:b|strong)>",
    re.IGNORECASE,
)
# A bullet: a marker, a space, and not a thematic break ("- - -", "* * *").
_BULLET = re.compile(r"^[ \t]*[-*+•▪◦‣][ \t]+(?![-*_ \t]*$)\S", re.MULTILINE)
_HTML_BULLETS = re.compile(r"<ul\b", re.IGNORECASE)
_HEADING = re.compile(
    r"^[ \t]{0,3}#{1,6}[ \t]+\S"  # ATX: "## Risks"
    r"|^[ \t]{0,3}[^\s#>|*+\-\d][^\n]*\n[ \t]{0,3}(?:=+|-+)[ \t]*$"  # setext: text, then ===
    r"|<h[1-6]\b",
    re.MULTILINE | re.IGNORECASE,
)
_NUMBERED = re.compile(r"^[ \t]*\d{1,3}[.)][ \t]+\S|<ol\b", re.MULTILINE | re.IGNORECASE)

# How a format is named in a rationale: (when present, when absent, what is looked for).
_DESCRIPTIONS = {
    "table": ("a Markdown table", "no Markdown table", "cells separated by '|' over a |---| row"),
    "bold": ("bold text", "no bold text", "**bold** or __bold__"),
    "bullets": ("bullet points", "no bullet points", "lines starting with '- ', '* ' or '+ '"),
    "headings": ("headings", "no headings", "lines starting with '#'"),
    "numbered_list": ("a numbered list", "no numbered list", "lines starting with '1.' or '1)'"),
}


def describe(name: str, *, present: bool) -> str:
    """ "a Markdown table" or "no Markdown table (cells separated by …)", for rationales."""
    with_it, without_it, hint = _DESCRIPTIONS[name]
    return with_it if present else f"{without_it} ({hint})"


def requested_formats(criterion: str) -> tuple[FormatRequest, ...]:
    """The formats a criterion asks for (or forbids), in the order of FORMATS."""
    requests = []
    for name, pattern in _REQUESTS.items():
        match = pattern.search(criterion)
        if match:
            negated = _NEGATION.search(criterion, max(0, match.start() - 60), match.start())
            requests.append(FormatRequest(name, wanted=negated is None))
    return tuple(requests)


def present_formats(answer: str) -> frozenset[str]:
    """The formats a Markdown answer contains, code blocks aside."""
    text = _INLINE_CODE.sub("", _FENCED_CODE.sub("", answer))
    found = set()
    if _has_table(text) or _HTML_TABLE.search(text):
        found.add("table")
    if _BOLD.search(text):
        found.add("bold")
    if _BULLET.search(text) or _HTML_BULLETS.search(text):
        found.add("bullets")
    if _HEADING.search(text):
        found.add("headings")
    if _NUMBERED.search(text):
        found.add("numbered_list")
    return frozenset(found)


def _has_table(text: str) -> bool:
    if "|" not in text or "-" not in text:
        return False
    # The separator row must hold a "|" itself, or "a | b\n---" would pass for a table.
    return any(_TABLE_SEPARATOR_PIPE.search(m.group(0)) for m in _TABLE.finditer(text))
