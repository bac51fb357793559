"""Secrets kept out of the logs: the value of a credential-like query parameter in any URL a
log line holds is replaced before the line is written.

API tokens are read from the Authorization header only (accounts/authentication.py): a key
in the URL authenticates nobody. A client that puts one there anyway must not find it in the
access logs, which are kept longer and read by more people than the database. One function,
`redact_secrets`, does it for every writer of URLs: gunicorn's access log (its logger class,
config/gunicorn.py), Django's development server and any record through the console handler
(`RedactSecrets`, config/settings.py LOGGING). No Django import: gunicorn's master loads it.
"""

from __future__ import annotations

import logging
import re

# Query parameters whose value is a secret, matched whatever their case.
SECRET_PARAMETERS = ("token", "key", "access_token", "api_key")
REDACTED = "REDACTED"

# A parameter at the start of a query string (gunicorn's %(q)s) or after ? or & in a URL;
# its value runs to the next separator, or to the end of the URL in a log line.
_SECRET = re.compile(
    rf"(?:(?<=[?&])|^)((?:{'|'.join(SECRET_PARAMETERS)})=)[^&#\s\"']*", re.IGNORECASE
)


def redact_secrets(text: str) -> str:
    """`text` with the value of every `token=`, `key=`, `access_token=` and `api_key=` query
    parameter replaced: "GET /api/runs/?token=abc&page=2" → "…?token=REDACTED&page=2"."""
    if "=" not in text:
        return text
    return _SECRET.sub(rf"\g<1>{REDACTED}", text)


class OneLineRefusals(logging.Filter):
    """A refusal (a 4xx answer: PermissionDenied's 403, Http404's 404, a 400) is the app
    working as meant: Django's `django.request` logger writes it as a warning with the
    exception's traceback, which in a development log buries everything else. Written here
    as one line with the reason and no traceback: "Forbidden (Permission denied):
    /datasets/1/settings/: Your role on this dataset does not allow this…". Server errors
    (5xx) keep their traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if record.exc_info and isinstance(status, int) and 400 <= status < 500:
            reason = str(record.exc_info[1] or "").strip()
            message = record.getMessage()
            if reason and reason not in message:
                message = f"{message}: {' '.join(reason.split())}"
            record.msg, record.args = message, ()
            record.exc_info, record.exc_text = None, None
        return True


class RedactSecrets(logging.Filter):
    """A logging filter that redacts the record's message (never drops it). As a logger's
    filter it changes the record before any handler sees it; as a handler's, before that
    handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_secrets(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True
