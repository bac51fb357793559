"""The single sign-on URLs, included by config/urls.py only when OIDC_ENABLED. The callback
is the redirect URI registered at the provider: SITE/accounts/oidc/callback/."""

from __future__ import annotations

from django.urls import path

from accounts.sso import SsoCallbackView, SsoLoginView

urlpatterns = [
    path("login/", SsoLoginView.as_view(), name="oidc-login"),
    path("callback/", SsoCallbackView.as_view(), name="oidc-callback"),
]
