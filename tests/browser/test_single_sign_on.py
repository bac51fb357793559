"""Single sign-on in a real browser: the button on the login page, the provider (a loopback
OpenID Connect provider), and back signed in."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_accessibility import serious_violations
from tests.support.oidc_provider import OidcProvider, signed_on

pytestmark = pytest.mark.browser


def test_a_member_signs_in_with_the_button(page, settings, dataset, collaborator):
    with OidcProvider() as provider, signed_on(settings, provider):
        provider.person["email"] = collaborator.email.upper()
        page.goto("/accounts/login/")
        assert not serious_violations(page)
        page.get_by_role("link", name="Sign in with Stub").click()
        expect(page.get_by_role("link", name=dataset.name)).to_be_visible()
        assert provider.token_requests == 1


def test_a_refusal_is_said_on_the_login_page(page, settings, collaborator):
    collaborator.is_active = False
    collaborator.save()
    with OidcProvider() as provider, signed_on(settings, provider):
        provider.person["email"] = collaborator.email
        page.goto("/accounts/login/")
        page.get_by_role("link", name="Sign in with Stub").click()
        expect(page.get_by_text("This account is deactivated.")).to_be_visible()
        expect(page.get_by_label("Username")).to_be_visible()
