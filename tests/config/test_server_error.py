"""Issue 38, point 5: an unexpected exception on an API route answers a JSON 500, `{"detail":
…}` without the traceback or the exception's text, and is logged with its traceback; pages
keep their HTML 500 page (config/errors.py)."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from accounts import selectors
from config.errors import SERVER_ERROR

pytestmark = pytest.mark.django_db

SECRET = "relation accounts_apitoken is on fire"


@pytest.fixture
def failing(monkeypatch):
    def fail(user):
        raise RuntimeError(SECRET)

    monkeypatch.setattr(selectors, "tokens_for_user", fail)


@pytest.fixture
def signed_in(owner) -> Client:
    client = Client(raise_request_exception=False)  # answer as a server does, not re-raise
    client.force_login(owner)
    return client


def test_an_api_route_answers_a_json_500_and_logs_the_traceback(signed_in, failing, caplog):
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = signed_in.get("/api/tokens/", HTTP_ACCEPT="application/json")

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": SERVER_ERROR}
    assert SECRET not in response.content.decode()
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Internal Server Error: /api/tokens/"
    assert record.exc_info and str(record.exc_info[1]) == SECRET


def test_a_browser_on_an_api_route_gets_json_too(signed_in, failing):
    response = signed_in.get("/api/tokens/", HTTP_ACCEPT="text/html")
    assert response.status_code == 500
    assert response.json() == {"detail": SERVER_ERROR}


def test_a_page_keeps_its_html_500_page(signed_in, failing):
    response = signed_in.get("/account/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "Something went wrong" in page and SECRET not in page
