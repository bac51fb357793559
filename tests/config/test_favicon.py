"""/favicon.ico answers on every page instead of a 404 (issue 15): a redirect to the static
icon, which exists, and a link to it in the base layout."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_favicon_redirects_to_an_icon_that_exists(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert "img/favicon" in response["Location"] and response["Location"].endswith(".ico")
    assert "max-age=86400" in response["Cache-Control"]
    found = finders.find("img/favicon.ico")
    assert found is not None
    with open(found, "rb") as icon:
        assert icon.read(4) == b"\x00\x00\x01\x00"  # an ICO header
    assert client.post("/favicon.ico").status_code == 405


def test_pages_link_the_icon(client):
    page = client.get("/accounts/login/").content.decode()
    assert 'rel="icon"' in page and "img/favicon.svg" in page
