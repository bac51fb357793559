"""Issue 40: beside a new API token, a copy button and a request that works as it is: curl
with the key and the site's real GET /api/datasets/. A rewards-only token gets no such
request (it may not list datasets) but links to its datasets' Rewards pages."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def made(client, **fields) -> str:
    response = client.post(reverse("token-create"), {"name": "script", "scope": "read", **fields})
    assert response.status_code == 200
    return response.content.decode()


def test_a_new_token_comes_with_a_request_that_answers(client, owner, dataset, settings):
    settings.SITE_URL = ""
    client.force_login(owner)
    page = made(client)
    key = re.search(r'id="token-key" type="text" readonly value="([^"]+)"', page).group(1)
    request = html.unescape(re.search(r'<code id="token-request">([^<]+)</code>', page).group(1))
    assert request == f'curl -H "Authorization: Token {key}" http://testserver/api/datasets/'
    assert 'data-copy="token-key"' in page and 'data-copy="token-request"' in page
    # The request, as curl would send it, answers with the owner's dataset.
    header, url = re.match(r'curl -H "Authorization: ([^"]+)" (\S+)$', request).groups()
    response = APIClient().get(url, HTTP_AUTHORIZATION=header)
    assert response.status_code == 200
    assert [d["name"] for d in response.json()["results"]] == [dataset.name]


def test_the_request_names_site_url_when_it_is_set(client, owner, settings):
    settings.SITE_URL = "https://workbench.example.org"
    client.force_login(owner)
    page = made(client)
    assert "https://workbench.example.org/api/datasets/</code>" in page


def test_a_rewards_token_links_its_datasets_rewards_pages(client, owner, dataset):
    client.force_login(owner)
    page = made(client, scope="rewards", datasets=[dataset.pk])
    assert 'id="token-request"' not in page
    assert f'href="{reverse("dataset-rewards", args=[dataset.pk])}"' in page


def test_the_account_page_without_a_new_token_shows_no_key(client, owner):
    client.force_login(owner)
    page = client.get(reverse("account")).content.decode()
    assert "token-key" not in page and "token-request" not in page
