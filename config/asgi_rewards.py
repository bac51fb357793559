"""The rewards service's ASGI application (config.settings_rewards; docs/operations.md)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_rewards")
application = get_asgi_application()
