"""Settings of the rewards service (docs/operations.md#the-rewards-service): the web
application's, serving only the reward routes and the health checks, through middleware
that runs on the event loop (a sync middleware would pass every request through Django's
one thread for sync code).

    uvicorn config.asgi_rewards:application --workers 2 --port 8001
"""

from __future__ import annotations

from config.settings import *  # noqa: F403

ROOT_URLCONF = "evaluation.rewards.service_urls"
# Token requests only (trainers): no sessions, messages, CSRF or pages here. The security
# headers and the input guard (body size, NUL characters) as on every route.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.SecurityHeadersMiddleware",
    "config.middleware.InputGuardMiddleware",
]

# Its connections named in pg_stat_activity (REWARDS_APPLICATION_NAME), apart from the web
# processes' and the workers': operators count them against max_connections, and the tests
# count only them. A copy: the web settings' dictionaries stay as they are.
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    _default = DATABASES["default"]  # noqa: F405
    _options = {**_default.get("OPTIONS", {}), "application_name": REWARDS_APPLICATION_NAME}  # noqa: F405
    DATABASES = {**DATABASES, "default": {**_default, "OPTIONS": _options}}  # noqa: F405
