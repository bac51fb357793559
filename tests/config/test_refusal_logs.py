"""Issue 40: a refusal is one log line, with its reason and no traceback. Django's request
logger wrote each 403 as a warning with the exception's traceback, and Django's default
`django` console handler wrote it a second time beside the root's."""

from __future__ import annotations

import io
import logging

import pytest
from django.urls import reverse

from config.logs import OneLineRefusals

pytestmark = pytest.mark.django_db


@pytest.fixture
def console():
    """What the site's console handler (the root logger's, config/settings.py) writes."""
    (handler,) = [
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, OneLineRefusals) for f in h.filters)
    ]
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


def lines_about(stream: io.StringIO, path: str) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if path in line]


def test_a_403_is_one_line_with_its_reason(client, reviewed_dataset, reviewer, console):
    client.force_login(reviewer)
    url = reverse("dataset-edit", args=[reviewed_dataset.pk])
    assert client.get(url).status_code == 403
    (line,) = lines_about(console, url)
    assert "WARNING django.request Forbidden (Permission denied)" in line
    assert "needs the admin role" in line
    assert "Traceback" not in console.getvalue()


def test_a_404_is_one_line(client, owner, console):
    client.force_login(owner)
    assert client.get("/datasets/987654/").status_code == 404
    (line,) = lines_about(console, "/datasets/987654/")
    assert "Not Found" in line
    assert "Traceback" not in console.getvalue()


def test_a_server_error_keeps_its_traceback(console):
    logger = logging.getLogger("django.request")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.error("Internal Server Error: /x/", exc_info=True, extra={"status_code": 500})
    assert "Traceback" in console.getvalue() and "RuntimeError: boom" in console.getvalue()


def test_djangos_logger_writes_through_the_root_only():
    """No console handler of its own: a record of `django` is written once."""
    django_logger = logging.getLogger("django")
    assert not any(isinstance(h, logging.StreamHandler) for h in django_logger.handlers)
    assert django_logger.propagate
