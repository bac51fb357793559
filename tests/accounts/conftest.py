"""What the people tests share: the link in the last email, and a test client per person."""

from __future__ import annotations

import re

import pytest
from django.core import mail


def link_in(message) -> str:
    """The path of the invitation link in an email (the site part is SITE_URL)."""
    found = re.search(r"https?://[^/\s]+(/invitations/[^/\s]+/)", message.body)
    assert found, message.body
    return found.group(1)


@pytest.fixture
def last_link():
    def last() -> str:
        assert mail.outbox, "no email was sent"
        return link_in(mail.outbox[-1])

    return last
