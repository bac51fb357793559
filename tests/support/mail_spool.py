"""An email backend for worker processes under test: each message is appended, as one JSON
line, to the file that MAIL_SPOOL names, so that a test reads what another process sent
(Django's locmem outbox lives in the sender's memory)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.core.mail.backends.base import BaseEmailBackend

BACKEND = "tests.support.mail_spool.EmailBackend"


class EmailBackend(BaseEmailBackend):
    def send_messages(self, messages) -> int:
        with Path(os.environ["MAIL_SPOOL"]).open("a") as spool:
            for message in messages:
                spool.write(json.dumps({"to": message.to, "subject": message.subject}) + "\n")
        return len(messages)


def read(path: Path) -> list[dict]:
    """The messages sent so far."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]
