"""The login page: Django's, with the single sign-on button when it is on."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        if settings.OIDC_ENABLED:
            context["sso_label"] = settings.OIDC_LOGIN_LABEL
        return context
