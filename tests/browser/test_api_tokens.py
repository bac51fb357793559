"""Issue 28's must-show for tokens, in a real browser and then as curl would: a member
makes a read-only token on the account page, copies the key shown once, and uses it from
outside the browser (plain HTTP, no cookie): it reads the API, it is refused a write, and
once revoked on the page it reads nothing. axe-core finds nothing serious on the page."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.browser.test_accessibility import serious_violations

pytestmark = pytest.mark.browser


def call(url: str, key: str, *, method: str = "GET", body: dict | None = None):
    """One request as `curl -H "Authorization: Token <key>"` sends it: (status, JSON)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Token {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"null")


def test_a_read_only_token_made_on_the_page_reads_and_cannot_write(
    page, collaborator, dataset, live_server
):
    log_in(page, collaborator.username)
    page.get_by_role("link", name="Account").click()
    form = page.locator("#token-form")
    form.get_by_label("Name").fill("notebook on my laptop")
    form.get_by_label("Scope").select_option("read")
    form.get_by_role("button", name="Make token").click()
    key = page.get_by_label("Key").input_value()
    assert key.startswith("cwb_")
    expect(page.locator("#token-list")).to_contain_text("notebook on my laptop")
    assert serious_violations(page) == []

    api = f"{live_server.url}/api/datasets/"
    status, listed = call(api, key)
    assert status == 200
    assert [d["name"] for d in listed["results"]] == [dataset.name]
    status, refused = call(api, key, method="POST", body={"name": "Made by a read-only key"})
    assert status == 403 and "read-only" in refused["detail"]

    page.reload()  # the key is shown once: gone from the page
    expect(page.get_by_label("Key")).to_have_count(0)
    page.get_by_role("button", name="Revoke the token notebook on my laptop").click()
    expect(page.locator("#token-list")).to_have_count(0)
    status, _ = call(api, key)
    assert status in (401, 403)
