"""The largest inputs the application accepts, one number for each kind of text, shared by
the page forms, the API serializers and the imports so that a value refused by one is
refused by all (docs/api.md#limits lists them).

Lengths count characters. Uploads and request bodies count bytes.
"""

from __future__ import annotations

from django.conf import settings

# Annotation
QUERY_TEXT = 10_000
REFERENCE_ANSWER = 100_000
CRITERION_TEXT = 2_000
CRITERION_NOTES = 5_000
CITATION_TITLE = 300  # the model's column
CITATION_URL = 500  # the model's column
DATASET_DESCRIPTION = 10_000

# Evaluation
ANSWER_TEXT = 100_000  # system answers, imported or posted, and perfect answers
REVIEW_NOTE = 2_000  # a reviewer's note on a label
ADJUDICATION_REASON = 2_000
EXTERNAL_ID = 200

# Requests and files
JSON_DEPTH = 32  # nesting of any JSON body or JSON line; real payloads need 4 or 5
ERRORS_LISTED = 50  # an error response lists this many problems, then counts the rest


def json_too_deep(text: str) -> bool:
    """Whether brackets nest deeper than JSON_DEPTH. Counting the opening brackets (at C
    speed) settles nearly every text: one with no more of them than the limit cannot nest
    deeper. Only the rest are walked character by character (json_depth), which costs
    about 60 s of CPU over a million 700-byte verdict lines."""
    if text.count("[") + text.count("{") <= JSON_DEPTH:
        return False
    return json_depth(text) > JSON_DEPTH


def json_depth(text: str) -> int:
    """How deep brackets nest in a JSON text, without parsing it (strings skipped), so that
    a hostile body cannot exhaust the parser's recursion (a RecursionError is a 500)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def has_nul(value: object) -> bool:
    """Whether a parsed JSON value holds a NUL character in any string or key: PostgreSQL
    stores none (a DataError, a 500), and no text of this application needs one."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_nul(v) for v in value)
    return False


def request_max_bytes() -> int:
    """The largest request body: an upload at its limit plus room for the other fields."""
    return upload_max_bytes() + 1024 * 1024


def upload_max_bytes() -> int:
    """The largest file an import accepts (settings.IMPORT_MAX_BYTES, 20 MB by default)."""
    return int(getattr(settings, "IMPORT_MAX_BYTES", 20 * 1024 * 1024))


def as_context() -> dict[str, int]:
    """For templates: `maxlength="{{ limits.CRITERION_TEXT }}"`."""
    return {name: value for name, value in globals().items() if name.isupper()}


def context_processor(request: object) -> dict[str, dict[str, int]]:
    return {"limits": _CONTEXT}


_CONTEXT = as_context()
