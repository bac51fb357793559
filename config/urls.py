from __future__ import annotations

from csp.decorators import csp_update
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.views.login import LoginView
from annotation.views.datasets import home
from config.favicon import favicon
from config.health import healthz, livez
from evaluation import urls as evaluation_urls

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("livez", livez, name="livez"),
    path("favicon.ico", favicon, name="favicon"),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("", include("accounts.urls")),
    path("", include("annotation.urls")),
    path("", include("evaluation.urls")),
    path("", include("evaluation.datasets.urls")),
    path("api/", include(("evaluation.datasets.api_urls", "api-data"))),
    path("api/", include(("annotation.api.urls", "api"))),
    path("api/", include(("accounts.api_urls", "api-accounts"))),
    path("api/", include((evaluation_urls.api_urlpatterns, "api-evaluation"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its script as a file, so no inline script is needed; Swagger UI
    # still injects a <style> element, allowed on this page alone.
    path(
        "api/docs/",
        csp_update({"style-src": ["'unsafe-inline'"]})(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema")
        ),
        name="api-docs",
    ),
    path("admin/", admin.site.urls),
]
# Django's own answer to an uncaught exception, but JSON on /api/ paths (config/errors.py).
handler500 = "config.errors.server_error"

if settings.OIDC_ENABLED:
    # Single sign-on (accounts/sso.py): no such URL at all while it is off.
    urlpatterns.append(path("accounts/oidc/", include("accounts.sso_urls")))
