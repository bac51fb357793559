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


def upload_max_bytes() -> int:
    """The largest file an import accepts (settings.IMPORT_MAX_BYTES, 20 MB by default)."""
    return int(getattr(settings, "IMPORT_MAX_BYTES", 20 * 1024 * 1024))


def as_context() -> dict[str, int]:
    """For templates: `maxlength="{{ limits.CRITERION_TEXT }}"`."""
    return {name: value for name, value in globals().items() if name.isupper()}


def context_processor(request: object) -> dict[str, dict[str, int]]:
    return {"limits": _CONTEXT}


_CONTEXT = as_context()
